"""Tensor gradient hooks as graph ops: `t.register_hook(fn)` on an intermediate of a captured
function (gradient scaling, clipping, logging), as Dynamo compiles it into the backward.

- `_grad_hook(input, key)`: the identity (a copy); its backward is `_run_grad_hook_`;
- `_run_grad_hook_(grad, key)`: calls the callable registered as `key` (`register`) on the
  gradient array and returns its result (the hook's replacement, or the gradient itself). The
  trailing underscore makes it impure (kept by dead-code elimination, never merged by CSE).

Key 0 is no hook (the identity: the op's sample inputs). The registered callable takes and
returns an array of the gradient's shape and dtype (capture wraps the user's hook, which sees
and returns Tensors: `capture/grad_hooks.py`). Library calls, never fused (kind "indexing").
Imports nothing of wick's outside `ir`.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from .declare import FLOATS
from .indexing import arr, declare

HOOKS: dict = {}  # key -> array -> array (while the graph owning it lives)
_ids = itertools.count(1)


def register(fn, owner=None) -> int:
    """A key for `fn` (array -> array) usable as the `key` attribute of these ops; dropped
    when `owner` (the graph using it) is collected."""
    key = next(_ids)
    HOOKS[key] = fn
    if owner is not None:
        weakref.finalize(owner, HOOKS.pop, key, None)
    return key


def _run(xp, g, key):
    fn = HOOKS.get(key)
    if fn is None:
        return g
    out = fn(g)
    if out is None:
        return g
    if getattr(out, "shape", None) != g.shape:
        raise RuntimeError(f"hook returned a gradient of shape {list(np.shape(out))}, expected "
                           f"{list(g.shape)}")
    return out.astype(g.dtype, copy=False)


def _samples(rng, dt):
    yield (arr(rng, (2, 3), dt),), {"key": 0}


declare(
    "_grad_hook", "indexing", "input, key=0", method=False,
    shape=lambda s, key=0: s, impl=lambda xp, x, key=0: xp.array(x, copy=True),
    backward=lambda F, g, out, x, key=0: (F._run_grad_hook_(g, key=key),),
    jvp=lambda F, tangents, out, x, key=0: tangents[0],  # (forward mode: no hook, as eager)
    ref=lambda x, key=0: np.array(x), sample_inputs=_samples, test_dtypes=FLOATS,
)

declare(
    "_run_grad_hook_", "indexing", "grad, key=0", method=False,
    shape=lambda s, key=0: s, impl=_run,
    ref=lambda g, key=0: np.array(g), sample_inputs=_samples, test_dtypes=FLOATS,
)
