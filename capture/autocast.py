"""Autocast regions under capture: `with eager.autocast(...)` is understood symbolically and
the cast policy becomes graph nodes.

Design (as `with eager.no_grad():`, and Dynamo's `AutocastModeVariable`): the graph under
construction carries an autocast *state* (`out.autocast`: None, or ((device type, dtype name),
...) of the enabled device types; the key `eager.amp.policy.state_key` computes from the
thread's real state). It starts as the state at call time, which the entry's guards check.

- `eager.autocast(...)` / `eager.amp.autocast(...)` called with constant arguments makes the
  real region object at capture time (its own checks and warnings); `BEFORE_WITH` on it (or on
  an autocast object read from the frame, guarded by identity, as in the decorator form)
  switches the state and pushes an `AutocastExitVariable` whose call switches it back.
- While the state is on, `calls.record` hands each op to `record`: the op's name goes through
  eager's own rule (`policy.decide`, the op lists of `eager/amp/policy.py`); a listed op gets
  its eligible operands cast by `cast` nodes (the registry op `Tensor.to(dtype)` records, so
  backward casts the gradient back), then is recorded with autocast excluded (its
  decomposition's ops are not cast again, PyTorch's ExcludeDispatchKeyGuard); an op not listed
  falls through and its decomposition's ops meet the policy one by one, as eagerly.
  Python-level functions wearing `policy.autocast_function` (conv, losses, layer_norm) get
  the same treatment around their inlined body (`function_rule`); the decorator form
  (`@eager.autocast(...)` on a function) inlines its wrapper (`with self: return f(...)`).
- The casts are ordinary elementwise nodes, so codegen fuses them with the ops around them.
- A graph break inside a region: the break's continuation first enters, for real, the regions
  the graph entered and has not left (`enter_pending`), so the breaking instruction runs
  under the region; the rebuilt `__exit__` on the stack is an `AutocastRestore` (the region's
  real `__exit__`). A resume function that calls such an exit switches its own state back and
  leaves the region for real after its graph (a side effect: `AutocastRestore.exited = True`,
  replayed with the others), so a break inside a region costs one break, as in Dynamo.
- `eager.is_autocast_enabled` / `get_autocast_dtype` of an enabled device fold to constants.

Touches `eager.amp` and `capture`.
"""

from __future__ import annotations

from eager.amp import policy
from eager.amp.autocast_mode import autocast as REGION
from ir import dtypes as D

from . import dynamic
from .variables import (
    ConstantVariable,
    FunctionVariable,
    SequenceVariable,
    TensorVariable,
    UserObjectVariable,
    VariableTracker,
)

_DEVICES = ("cpu", "cuda")


class AutocastVariable(VariableTracker):
    """An `eager.autocast` region object (made at capture time, or read from the frame)."""

    def __init__(self, value, source: str | None = None):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return repr(self.value)


class AutocastExitVariable(VariableTracker):
    """The bound `__exit__` BEFORE_WITH pushes for a region: calling it restores `prev` (the
    state before the region). `here`: the region was entered in this graph (else the exit is
    a rebuilt `AutocastRestore` of an earlier graph: its call is a break)."""

    def __init__(self, region, prev, here: bool, source: str | None = None):
        self.region, self.prev, self.here, self.source = region, prev, here, source

    def describe(self) -> str:
        return f"exit of {self.region!r}"


class AutocastRestore:
    """The rebuilt `__exit__` of a region a graph break cut through: the region's real exit
    (it was entered for real by the break's continuation, `enter_pending`)."""

    __slots__ = ("prev", "region")

    def __init__(self, region, prev):
        self.region, self.prev = region, prev

    def __call__(self, *exc):
        self.region.__exit__(*(exc or (None, None, None)))
        return False

    @property
    def exited(self) -> bool:
        return False

    @exited.setter
    def exited(self, value) -> None:
        """Set by a later graph that left the region (a side effect replayed after it)."""
        self.region.__exit__(None, None, None)


# ---------------------------------------------------------------- state


def init(out) -> None:
    """The autocast state of a new graph: the thread's, which its guards check."""
    out.autocast = out.initial_autocast = policy.state_key()
    out.autocast_excluded = False
    out.autocast_enters = []  # regions this graph entered and has not left (in order)
    out.autocast_casts = {}  # (node, dtype, grad mode) -> its cast: one per value


def _after(prev, region):
    d = dict(prev or ())
    if region._enabled:
        d[region.device] = region.fast_dtype.name
    else:
        d.pop(region.device, None)
    return tuple((k, d[k]) for k in _DEVICES if k in d) or None


def is_region(value) -> bool:
    return isinstance(value, REGION)


def region_of(tx, ctx):
    """The AutocastVariable for a `with` target, or None. An autocast object read from the
    frame (a closure cell, a global) is guarded by identity."""
    if isinstance(ctx, AutocastVariable):
        return ctx
    value = getattr(ctx, "value", None)
    if isinstance(ctx, UserObjectVariable) and is_region(value):
        if ctx.source is not None:
            tx.out.guards.identity(ctx.source, value, "autocast")
        return AutocastVariable(value, ctx.source)
    return None


def enter(tx, ctx: AutocastVariable):
    """BEFORE_WITH on a region: (its exit tracker, the `as` value)."""
    out = tx.out
    exit_var = AutocastExitVariable(ctx.value, out.autocast, True)
    out.autocast = _after(out.autocast, ctx.value)
    out.autocast_enters.append(ctx.value)
    return exit_var, ctx


def leave(tx, fn: AutocastExitVariable) -> VariableTracker:
    """A call of a region's exit."""
    out = tx.out
    if not fn.here:  # entered for real before this graph: left for real after it
        restore = fn.restore
        out.side_effects._record(("attr", id(restore), "exited"),
                                 ("attr", fn, "exited", ConstantVariable(True), restore))
    elif out.autocast_enters and out.autocast_enters[-1] is fn.region:
        out.autocast_enters.pop()
    out.autocast = fn.prev
    return ConstantVariable(None)


def runtime_value(v):
    """The object a graph break's continuation rebuilds for tracker `v`, or None."""
    if isinstance(v, AutocastVariable):
        return v.value
    if isinstance(v, AutocastExitVariable):
        return AutocastRestore(v.region, v.prev)
    return None


def wrap_restore(out, value, source: str):
    """The tracker of a rebuilt exit read by a resume function (guarded)."""
    g = out.guards
    g.type_is(source, value)
    g.identity(f"{source}.region", value.region, "autocast")
    g.add(f"{source}.prev == {value.prev!r}")
    var = AutocastExitVariable(value.region, value.prev, False, source)
    var.restore = value
    return var


def enter_pending(regions) -> None:
    """At a graph break: enter, for real, the regions the graph entered and had not left."""
    for r in regions:
        r.__enter__()


# ---------------------------------------------------------------- calls


def make_region(tx, args: list, kwargs: dict, cls=REGION) -> AutocastVariable:
    """`eager.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)` with
    constant arguments: the real object, made now (its errors and warnings are eager's)."""
    vals = []
    for v in list(args) + list(kwargs.values()):
        if not v.is_constant():
            raise tx.unsupported(f"autocast() with a non-constant argument ({v.describe()})")
        vals.append(v.value)
    n = len(args)
    return AutocastVariable(cls(*vals[:n], **dict(zip(kwargs, vals[n:]))))


def _device(meta) -> str:
    return str(meta.device).split(":")[0]


def _eligible(x, dev: str) -> bool:
    if not isinstance(x, TensorVariable):
        return False
    dt = x.meta.dtype
    return dt.is_floating_point and dt is not D.float64 and _device(x.meta) == dev


def _first_device(items):
    for x in items:
        if isinstance(x, TensorVariable):
            return _device(x.meta)
        if isinstance(x, SequenceVariable):
            d = _first_device(x.items)
            if d is not None:
                return d
    return None


def _dtypes(items, dev):
    for x in items:
        if isinstance(x, SequenceVariable):
            yield from _dtypes(x.items, dev)
        elif _eligible(x, dev):
            yield x.meta.dtype


def _cast(tx, x, to, dev, top: bool = True):
    """`x` in dtype `to` when eligible (one cast node per value, dtype and grad mode)."""
    from eager.dispatch import FUNCTIONS

    from . import calls

    if isinstance(x, SequenceVariable):
        return type(x)([_cast(tx, v, to, dev, top) for v in x.items])
    if not _eligible(x, dev) or x.meta.dtype is to:
        return x
    out = tx.out
    key = (x.node, to, out.grad_enabled)
    hit = out.autocast_casts.get(key)
    if hit is None:
        hit = calls.record(tx, FUNCTIONS["cast"].__wick_op__, (x,), {"dtype": to}, top)
        out.autocast_casts[key] = hit
    return hit


def _policy(tx, name: str, items, has_dtype: bool):
    """(device, kind, dtype) of eager's rule for `name` under the graph's state, or None."""
    out = tx.out
    if out.autocast is None or out.autocast_excluded:
        return None
    dev = _first_device(items)
    low = dict(out.autocast).get(dev)
    if low is None:
        return None
    hit = policy.decide(name, dev, D.to_dtype(low), has_dtype, lambda: _dtypes(items, dev))
    return None if hit is None else (dev, *hit)


def _excluded(tx, thunk):
    out = tx.out
    prev = out.autocast_excluded
    out.autocast_excluded = True
    try:
        return thunk()
    finally:
        out.autocast_excluded = prev


def record(tx, op, inputs: tuple, attrs: dict, top: bool):
    """`calls.record` of `op` under an enabled state: the casts and the op (see the module
    doc), or None when the policy does not list it."""
    from . import calls

    got = _policy(tx, op.name, inputs, attrs.get("dtype") is not None)
    if got is None:
        return None
    dev, kind, to = got
    if to is not None:
        cast = _excluded(tx, lambda: tuple(_cast(tx, x, to, dev, top) for x in inputs))
        if not top and cast != inputs and getattr(tx.out, "dynamic_dims", None):
            # a cast inside a decomposition is not on the op tape that dynamic entries replay
            # per shape (without the policy): keep this capture static
            raise dynamic.Specialize(None)
        inputs = cast
    if kind == policy.LOWER_EMULATED:  # low-precision operands, a float32 kernel
        inputs = _excluded(tx, lambda: tuple(_cast(tx, x, D.float32, dev, top)
                                             for x in inputs))
        result = _excluded(tx, lambda: calls.record(tx, op, inputs, attrs, top))
        return _excluded(tx, lambda: _cast(tx, result, to, dev, top))
    return _excluded(tx, lambda: calls.record(tx, op, inputs, attrs, top))


def _const_dtype(v) -> bool:
    return v is not None and not (isinstance(v, ConstantVariable) and v.value is None)


def function_rule(tx, fn, args: list, kwargs: dict):
    """A call of an `autocast_function` wrapper (conv2d, mse_loss, ...): the wrapped
    composition inlined, its tensor arguments cast by the policy and its body excluded."""
    from . import calls

    name, inner = fn.__wick_autocast__
    target = FunctionVariable(inner)
    got = _policy(tx, name, list(args) + list(kwargs.values()),
                  _const_dtype(kwargs.get("dtype")))
    if got is None:
        return calls.call_eager(tx, target, args, kwargs)
    dev, _, to = got
    if to is not None:
        args = _excluded(tx, lambda: [_cast(tx, a, to, dev) for a in args])
        kwargs = _excluded(tx, lambda: {k: _cast(tx, v, to, dev) for k, v in kwargs.items()})
    return _excluded(tx, lambda: calls.call_eager(tx, target, args, kwargs))


def decorator_rule(tx, fn, args: list, kwargs: dict):
    """A call of a function decorated by `@eager.autocast(...)`: its wrapper inlined."""
    from . import calls

    return calls.inline(tx, FunctionVariable(fn), args, kwargs)


def query_rule(tx, fn, args: list, kwargs: dict):
    """`is_autocast_enabled(device_type)` / `get_autocast_dtype(device_type)` of the graph's
    state (a constant); else the call is a break."""
    from . import vocabulary

    if tx.out.autocast_excluded or not all(v.is_constant() for v in args) or kwargs:
        raise vocabulary.no_graph_form(tx, fn, "arguments that are not constants")
    dev = args[0].value if args else "cuda"
    if not isinstance(dev, str):
        raise vocabulary.no_graph_form(tx, fn, "a device type that is not a str")
    low = dict(tx.out.autocast or ()).get(dev)
    if fn.__name__ == "is_autocast_enabled":
        return ConstantVariable(low is not None)
    if low is None:
        raise vocabulary.no_graph_form(tx, fn, "the dtype of a disabled device type")
    return ConstantVariable(D.to_dtype(low))


QUERIES = ("is_autocast_enabled", "get_autocast_dtype")


def rule_for(fn):
    """The capture rule of an eager function made by `eager.amp` (wrappers), or None."""
    if getattr(fn, "__wick_autocast__", None) is not None:
        return function_rule
    if getattr(fn, "__wick_autocast_region__", False):
        return decorator_rule
    return None
