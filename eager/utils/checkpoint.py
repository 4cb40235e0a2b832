"""Activation checkpointing (`torch.utils.checkpoint`): `checkpoint(fn, *args)` keeps only
`fn`'s inputs and outputs, and runs `fn` again in backward to get the gradients, trading
compute for memory; `checkpoint_sequential` does it segment by segment for a Sequential.
Semantics: torch/utils/checkpoint.py (PyTorch 2.x).

Both of PyTorch's variants are here:
- `use_reentrant=False` (recommended): `fn` runs once with grad recording, which finds the
  tensors its result depends on (its tensor arguments, and the leaves it reaches, such as a
  module's parameters); that graph is dropped and one autograd node stands for the region. Its
  backward re-runs `fn` on detached copies of the arguments and returns the gradients of the
  arguments and of those leaves, so parameters get gradients also when no argument requires
  grad. (Non-leaf tensors that require grad should reach `fn` as arguments.)
- `use_reentrant=True`: `fn` runs under no_grad; backward re-runs it and calls
  `autograd.backward` inside the backward pass (gradients reach parameters only when some
  argument requires grad, as in PyTorch).
With `preserve_rng_state` (default) the recomputation sees the CPU generator as the forward
did, so dropout draws the same mask; it runs under the autocast regions the forward ran in.
Imports `eager` modules only.
"""

from __future__ import annotations

import warnings

from .. import grad_mode
from .. import random as _random
from ..amp import autocast_mode as _amp
from ..autograd import backward as _backward
from ..autograd import grad as _grad
from ..autograd.function import Function
from ..tensor import Tensor

__all__ = ["checkpoint", "checkpoint_sequential"]

_WARN_REENTRANT = (
    "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
    "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
    "exception. use_reentrant=False is recommended, but if you need to preserve the current "
    "default behavior, you can pass use_reentrant=True. Refer to docs for more details on the "
    "differences between the two variants.")


def _detach_args(args):
    """Tensor arguments as new leaves (requires_grad as the originals), others as they are."""
    return tuple(a.detach().requires_grad_(a.requires_grad) if isinstance(a, Tensor) else a
                 for a in args)


def _flatten(out):
    """(tensors of `out`, rebuild(tensors) -> an object shaped as `out`)."""
    if isinstance(out, Tensor):
        return [out], lambda ts: ts[0]
    if isinstance(out, (tuple, list)):
        idx = [i for i, o in enumerate(out) if isinstance(o, Tensor)]

        def rebuild(ts):
            items = list(out)
            for i, t in zip(idx, ts):
                items[i] = t
            return type(out)(items) if not hasattr(out, "_fields") else type(out)(*items)

        return [out[i] for i in idx], rebuild
    return [], lambda ts: out


def _autocast_state() -> list:
    """The autocast regions in force (per device type), to re-enter when recomputing (as
    PyTorch's checkpoint does: the recomputed ops get the forward's dtypes)."""
    return [(d, _amp.is_autocast_enabled(d), _amp.get_autocast_dtype(d),
             _amp.is_autocast_cache_enabled()) for d in ("cpu", "cuda")]


class _Autocasts:
    """Enter the regions `_autocast_state()` saw (only the enabled ones)."""

    def __init__(self, state):
        self.regions = [_amp.autocast(d, dtype=dt, enabled=True, cache_enabled=c)
                        for d, on, dt, c in state if on]

    def __enter__(self):
        for r in self.regions:
            r.__enter__()

    def __exit__(self, *exc):
        for r in reversed(self.regions):
            r.__exit__(*exc)


class _RngFork:
    """Run a block with the CPU generator set to `state`, restoring the current one after
    (torch.random.fork_rng)."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            self.saved = _random.get_rng_state()
            _random.set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            _random.set_rng_state(self.saved)


def _leaves_reached(outputs, exclude_ids: set) -> list:
    """Leaf tensors requiring grad on which `outputs` depend (AccumulateGrad nodes), except
    those whose id is in `exclude_ids`, in first-reached order."""
    found, seen, stack = [], set(), [t.grad_fn for t in outputs if t.grad_fn is not None]
    for t in outputs:  # an output that is itself a leaf (fn returned a parameter)
        if t.requires_grad and t.grad_fn is None and id(t) not in exclude_ids:
            found.append(t)
            exclude_ids.add(id(t))
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        var = getattr(node, "variable", None)
        if var is not None:
            if id(var) not in exclude_ids:
                exclude_ids.add(id(var))
                found.append(var)
            continue
        for nxt, _ in getattr(node, "next_functions", ()) or ():
            if nxt is not None:
                stack.append(nxt)
    return found


class _Recompute(Function):
    """The node standing for a checkpointed region (use_reentrant=False). apply(state,
    *tensors): `tensors` are the region's tensor arguments then the leaves it reached; the
    outputs are `state["outputs"]`, detached."""

    @staticmethod
    def forward(ctx, state, *tensors):
        ctx.state = state
        outs = state.pop("outputs")
        return tuple(o.detach() for o in outs)

    @staticmethod
    def backward(ctx, *grads):
        st = ctx.state
        args = _detach_args(st["args"])
        with _RngFork(st["rng"]), grad_mode.enable_grad(), _Autocasts(st["autocast"]), \
                st["recompute_ctx"]:
            out = st["fn"](*args, **st["kwargs"])
        outs, _ = _flatten(out)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if g is not None and isinstance(o, Tensor) and o.requires_grad]
        arg_tensors = [a for a in args if isinstance(a, Tensor)]
        wrt = arg_tensors + st["leaves"]
        need = [w for w in wrt if w.requires_grad]
        got = {}
        if pairs and need:
            res = _grad([o for o, _ in pairs], need, [g for _, g in pairs],
                        allow_unused=True)
            got = {id(w): r for w, r in zip(need, res)}
        return (None,) + tuple(got.get(id(w)) for w in wrt)


class _Nothing:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return None


def _checkpoint_non_reentrant(function, preserve_rng_state, args, kwargs, contexts):
    """The use_reentrant=False variant; `contexts`: context_fn()'s (forward, recompute)."""
    rng = _random.get_rng_state() if preserve_rng_state else None
    dargs = _detach_args(args)
    with grad_mode.enable_grad(), contexts[0]:
        out = function(*dargs, **kwargs)
    outs, rebuild = _flatten(out)
    arg_tensors = [a for a in args if isinstance(a, Tensor)]
    exclude = {id(a) for a in dargs if isinstance(a, Tensor)}
    leaves = _leaves_reached([o for o in outs if o.requires_grad], exclude)
    if not outs or not (leaves or any(a.requires_grad for a in arg_tensors)):
        return out  # nothing to differentiate: the forward's result as it is
    state = {"fn": function, "args": args, "kwargs": kwargs, "rng": rng, "leaves": leaves,
             "outputs": outs, "recompute_ctx": contexts[1], "autocast": _autocast_state()}
    new = _Recompute.apply(state, *arg_tensors, *leaves)
    new = new if isinstance(new, tuple) else (new,)
    for o, n in zip(outs, new):  # outputs that did not depend on anything stay constants
        if not o.requires_grad:
            n.requires_grad_(False)
    return rebuild(list(new))


class _Reentrant(Function):
    """PyTorch's reentrant CheckpointFunction: forward under no_grad; backward recomputes and
    runs `autograd.backward` on the recomputed region."""

    @staticmethod
    def forward(ctx, function, preserve_rng_state, *args):
        ctx.function, ctx.args = function, args
        ctx.rng = _random.get_rng_state() if preserve_rng_state else None
        ctx.autocast = _autocast_state()
        return function(*args)

    @staticmethod
    def backward(ctx, *grads):
        args = _detach_args(ctx.args)
        with _RngFork(ctx.rng), grad_mode.enable_grad(), _Autocasts(ctx.autocast):
            out = ctx.function(*args)
        outs, _ = _flatten(out)
        pairs = [(o, g) for o, g in zip(outs, grads)
                 if g is not None and isinstance(o, Tensor) and o.requires_grad]
        if not pairs:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is "
                               "not necessary")
        _backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None) + tuple(a.grad if isinstance(a, Tensor) else None for a in args)


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default",
               debug=False, preserve_rng_state=True, **kwargs):
    """`function(*args, **kwargs)` without keeping its intermediate tensors: they are computed
    again during backward (`torch.utils.checkpoint.checkpoint`).

    Returns what `function` returns (a Tensor, or a tuple/list holding Tensors). With
    `use_reentrant=None` PyTorch's warning is given and the reentrant variant runs (PyTorch's
    current default); `use_reentrant=False` is recommended. ValueError for keyword arguments,
    `context_fn` or `debug` with the reentrant variant (PyTorch's restrictions).
    """
    if use_reentrant is None:
        warnings.warn(_WARN_REENTRANT, stacklevel=2)
        use_reentrant = True
    if use_reentrant:
        if context_fn is not None or debug:
            raise ValueError("Passing `context_fn` or `debug` is only supported when "
                             "use_reentrant=False.")
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        if not grad_mode.is_grad_enabled():
            return function(*args)
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None",
                          stacklevel=2)
        return _Reentrant.apply(function, preserve_rng_state, *args)
    if not grad_mode.is_grad_enabled():
        return function(*args, **kwargs)
    contexts = context_fn() if context_fn is not None else (_Nothing(), _Nothing())
    return _checkpoint_non_reentrant(function, preserve_rng_state, args, kwargs, contexts)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run `functions` (a Sequential or a list of modules/functions) on `input` in `segments`
    chunks, checkpointing every chunk but the last (`torch.utils.checkpoint.
    checkpoint_sequential`). `preserve_rng_state` may be passed as a keyword."""
    if use_reentrant is None:
        warnings.warn(_WARN_REENTRANT.replace("checkpoint:", "checkpoint.checkpoint_sequential:"),
                      stacklevel=2)
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    if hasattr(functions, "children") and callable(functions.children):
        functions = list(functions.children())

    def run_function(start, end, functions):
        def forward(x):
            for j in range(start, end + 1):
                x = functions[j](x)
            return x
        return forward

    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input,
                           use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)
