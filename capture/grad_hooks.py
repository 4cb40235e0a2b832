"""`t.register_hook(fn)` on an intermediate tensor of a captured function (a gradient scaled,
clipped or logged in `forward`), compiled into the graph as Dynamo does: no graph break.

The tracker of `t` is rebound to `_grad_hook(t, key)` (`ir/ops/grad_hooks.py`), the identity
whose backward calls the hook on the gradient: every later use of `t` goes through it, so the
hook sees `t`'s whole gradient (the sum over its uses) once, when the graph's backward runs,
and its result replaces that gradient, as eager's tensor pre-hook. Side effects of the hook
(logging, appending to a list) happen then, as eagerly. On a graph input (an argument, a
parameter: its hook outlives the call, and every call adds one, as eagerly) the registration
itself is a side effect replayed after the graph (`SideEffects.defer_call`, as Dynamo's
`register_hook` side effect): the real tensor gets the hook before any backward can run.

The hook must be the same on every call the entry admits: a function or a method read from the
frame with a source (guarded by identity), or a function the code makes (`lambda g: g * 0.5`,
a nested `def`) whose defaults and closure cells are constants or guarded objects (rebuilt once
at capture). Graph breaks (eager registers the hook, as before): an intermediate tensor
already used by the graph (earlier uses would bypass the hook), grad mode off or a tensor that does not require grad (eager raises), or a
hook capture cannot rebuild. The handle returned is opaque (any use of it breaks).
Touches `eager` (wraps gradient arrays as Tensors for the hook), `ir`, `capture`.
"""

from __future__ import annotations

import types

from ir import REGISTRY
from ir.ops import grad_hooks as ops

from .variables import (
    ConstantVariable,
    FunctionVariable,
    NestedFunctionVariable,
    TensorVariable,
    UnknownVariable,
)


def register_hook(tx, fn, args: list, kwargs: dict):
    """The capture rule of `Tensor.register_hook(hook)` (module doc)."""
    from .recording import record
    from .vocabulary import no_graph_form

    if len(args) + len(kwargs) != 2 or not isinstance(args[0], TensorVariable):
        raise no_graph_form(tx, fn, "arguments capture does not model")
    t, hook = args[0], (args[1] if len(args) > 1 else kwargs.get("hook"))
    if hook is None:
        raise no_graph_form(tx, fn, "arguments capture does not model")
    node = t.node
    if not (t.requires_grad and tx.out.grad_enabled):
        raise no_graph_form(tx, fn, "a tensor that does not require grad (eager raises)")
    call = _hook_value(hook)
    if call is None:
        raise no_graph_form(tx, fn, f"a hook capture cannot rebuild ({hook.describe()})")
    if node.op == "placeholder" and t.source is not None and \
            tx.out.by_source.get(t.source) is t:  # an argument, a parameter: after the graph
        tx.out.side_effects.defer_call(t, "register_hook", (), (call,))
        return UnknownVariable(None, None)
    if node.op != "call_function" or node.users:
        raise no_graph_form(tx, fn, "a tensor the graph already used, or one it made")
    key = ops.register(_on_arrays(call), tx.out.graph)
    hooked = record(tx, REGISTRY["_grad_hook"], (t,), {"key": key})
    tx.out.side_effects.rebind(t, hooked, True)
    return UnknownVariable(None, None)


def _on_arrays(call):
    """The hook on gradient arrays (what `_run_grad_hook_` calls): Tensors in and out."""
    from eager import Tensor

    def run(g):
        out = call(Tensor._make(g))
        return None if out is None else out.detach().numpy()

    return run


def _hook_value(hook):
    """The Python callable of `hook`'s tracker, the same on every call the entry admits, or
    None (module doc)."""
    if isinstance(hook, FunctionVariable) and (hook.source is not None or
                                               hook.self_var is not None):
        if hook.self_var is None:
            return hook.value
        owner = _value(hook.self_var)  # `self._clip_grad`: read off the guarded object
        return None if owner is None else types.MethodType(hook.value, owner.value)
    if isinstance(hook, NestedFunctionVariable):
        defaults = [_value(d) for d in hook.defaults]
        kwdefaults = {k: _value(v) for k, v in hook.kwdefaults.items()}
        cells = [_value(getattr(c, "value", None)) for c in hook.closure]
        if any(v is None for v in defaults + cells + list(kwdefaults.values())):
            return None
        f = types.FunctionType(hook.code, hook.f_globals, hook.code.co_name,
                               tuple(v.value for v in defaults) or None,
                               tuple(types.CellType(v.value) for v in cells) or None)
        f.__kwdefaults__ = {k: v.value for k, v in kwdefaults.items()} or None
        return f
    return None


class _Held:
    def __init__(self, value):
        self.value = value


def _value(v):
    """A constant's value, or a guarded object read from the frame (a module, an object with a
    source), wrapped in `_Held`; None for anything else."""
    if isinstance(v, ConstantVariable):
        return _Held(v.value)
    if getattr(v, "source", None) is not None and hasattr(v, "value") and \
            not isinstance(v, TensorVariable):
        return _Held(v.value)
    return None
