"""A user's `autograd.Function` inside a captured graph: its forward is ordinary graph ops
recorded under no_grad, and these three ops give its outputs a gradient that the user's own
`backward` computes when the graph's backward runs (as Dynamo's autograd.Function
speculation; `capture/autograd_functions.py` records them).

- `_autograd_fn_(tensors, key, size, n_wrt)`: the *token*, a float64 vector of `size` zeros
  whose operands are the `n_wrt` inputs that require grad followed by the tensors the backward reads (saved
  tensors, tensors stored on `ctx`); its backward is one `_autograd_fn_backward_` call;
- `_autograd_fn_out(input, token, key, offset)`: `input` (one output of the forward, a copy)
  tied to the token: its gradient lands, flattened as float64, at `offset` of the token's
  gradient (the outputs' gradients packed in one vector, zeros where none arrived: the user's
  backward sees them materialized, as eager's default);
- `_autograd_fn_backward_(tensors, key, size)`: operands the token's gradient and the token's
  operands; calls the function registered as `key` (`register`) on arrays, which runs the
  user's backward and returns the input gradients packed in one float64 vector of `size`
  (trailing underscore: impure, never merged or dropped). An input the user's backward gave
  None has zeros there; the graph's caller makes its gradient None as eager's (`holds`).

Key 0 is no function: the token's gradient is zeros, `_autograd_fn_out` is the identity in
value and gradient (the ops' samples). Library calls, never fused (kind "indexing"). Keys are
owned by the graph that uses them (`register(fn, owner)`: freed with it). Imports nothing of
wick's outside `ir`.
"""

from __future__ import annotations

import itertools
import weakref

import numpy as np

from .. import dtypes as D
from .declare import FLOATS
from .indexing import arr, declare

FUNCTIONS: dict = {}  # key -> (arrays...) -> float64 vector, while the owning graph lives
_ids = itertools.count(1)


def register(fn, owner=None) -> int:
    """A key for `fn` usable as these ops' `key`; freed when `owner` (a graph) is collected."""
    key = next(_ids)
    FUNCTIONS[key] = fn
    if owner is not None:
        weakref.finalize(owner, FUNCTIONS.pop, key, None)
    return key


def holds(cond) -> bool:
    """Whether a gradient that `ir.autodiff.build_backward` marked with `cond` (a frozenset of
    conjunctions of atoms (key, i)) exists after the backward ran: some conjunction whose
    Functions' last backward each returned a gradient for input i (`fn.present`, a tuple of
    bools that the function registered as `key` sets on every call; absent: all present)."""
    for conj in cond:
        for key, i in conj:
            present = getattr(FUNCTIONS.get(key), "present", None)
            if present is not None and not present[i]:
                break
        else:
            return True
    return False


def _numel(shape) -> int:
    return int(np.prod(tuple(shape), dtype=np.int64))


def _token_impl(xp, *xs, key=0, size=0, n_wrt=0):
    return xp.zeros((size,), np.float64)


def _token_backward(F, g, out, *xs, key=0, size=0, n_wrt=0):
    if key == 0:
        return (None,) * len(xs)
    wrt = xs[:n_wrt]
    pg = F._autograd_fn_backward_([g, *xs], key=key, size=sum(_numel(x.shape) for x in wrt))
    grads, start = [], 0
    for x in wrt:
        n = _numel(x.shape)
        grads.append(F.cast(F.reshape(F.narrow(pg, 0, start, n), tuple(x.shape)), x.dtype))
        start += n
    return tuple(grads) + (None,) * (len(xs) - len(grads))


def _out_backward(F, g, out, x, token, key=0, offset=0):
    if key == 0:
        return g, None
    n = _numel(g.shape)
    flat = F.reshape(F.cast(g, D.float64), (n,))
    return None, F.pad(flat, (offset, int(token.shape[0]) - offset - n))


def _backward_impl(xp, g, *xs, key=0, size=0):
    fn = FUNCTIONS.get(key)
    if fn is None:
        return xp.zeros((size,), np.float64)
    return np.asarray(fn(g, *xs), np.float64).reshape(size)


def _samples(rng, dt):
    yield (arr(rng, (2, 3), dt), arr(rng, (3,), dt)), {"key": 0, "size": 4}


def _token_samples(rng, dt):
    yield (arr(rng, (2, 3), dt), arr(rng, (3,), dt)), {"key": 0, "size": 4, "n_wrt": 1}


def _out_samples(rng, dt):
    yield (arr(rng, (2, 3), dt), np.zeros(6)), {"key": 0, "offset": 0}


declare(
    "_autograd_fn_", "indexing", "tensors, key=0, size=0, n_wrt=0", variadic=True,
    method=False, fixed=D.float64, scalar_ok=False,
    shape=lambda *s, key=0, size=0, n_wrt=0: (size,), impl=_token_impl,
    backward=_token_backward, ref=lambda *xs, key=0, size=0, n_wrt=0: np.zeros((size,)),
    sample_inputs=_token_samples,
    test_dtypes=FLOATS,
)

declare(
    "_autograd_fn_out", "indexing", "input, token, key=0, offset=0", 2, method=False,
    scalar_ok=False, shape=lambda s, t, key=0, offset=0: s,
    impl=lambda xp, x, t, key=0, offset=0: xp.array(x, copy=True), backward=_out_backward,
    ref=lambda x, t, key=0, offset=0: np.array(x), sample_inputs=_out_samples,
    test_dtypes=FLOATS,
)

declare(
    "_autograd_fn_backward_", "indexing", "tensors, key=0, size=0", variadic=True,
    method=False, fixed=D.float64, scalar_ok=False, shape=lambda *s, key=0, size=0: (size,),
    impl=_backward_impl, ref=lambda *xs, key=0, size=0: np.zeros((size,)),
    sample_inputs=_samples, test_dtypes=FLOATS,
)
