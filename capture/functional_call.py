"""`torch.func.functional_call(module, params, args, kwargs)` in the graph.

Dynamo traces torch.func's reparametrization; here the module's call is inlined with its
attribute reads of the named parameters and buffers answered by the given tensors
(`SideEffects.overrides`, set for this call only: nothing is written to the module, so there is
nothing to undo or replay after the graph). Ties follow eager's `_with_ties` (one tensor given
for one name of a tied parameter replaces all its names). A break inside the call ends the
graph at the user's call, which then runs as eager runs it (the real swap, restored after).
Semantics: `eager.nn.utils.stateless`, PyTorch's `torch.func.functional_call`.
"""

from __future__ import annotations

import inspect

from eager.func import functional_call
from eager.nn.module import Module
from eager.nn.utils import stateless

from .variables import (
    ConstantVariable,
    DictVariable,
    SequenceVariable,
    TupleVariable,
    UserObjectVariable,
)

_SIGNATURE = inspect.signature(functional_call)


def _constant(tx, fn, var, what: str):
    if not isinstance(var, ConstantVariable):
        raise tx.unsupported(f"functional_call with a non-constant {what}")
    return var.value


def _values(tx, dicts) -> dict:
    """{dotted name: tensor tracker} of the dict (or sequence of dicts) the code passed."""
    parts = dicts.items if isinstance(dicts, SequenceVariable) else [dicts]
    merged: dict = {}
    for d in parts:
        if not isinstance(d, DictVariable) or not all(isinstance(k, str) for k in d.items):
            raise tx.unsupported("functional_call with parameters that are not a dict of names")
        if set(merged) & set(d.items):  # (eager raises its ValueError)
            raise tx.unsupported("functional_call with a name in several dicts")
        merged.update(d.items)
    return merged


def functional_call_rule(tx, fn, args, kwargs):
    """The module's call inlined with the given parameters and buffers in place of its own."""
    from .calls import call_function

    try:
        bound = _SIGNATURE.bind(*args, **kwargs)
    except TypeError:
        raise tx.unsupported("functional_call with arguments that do not bind") from None
    a = bound.arguments
    module = a["module"]
    if not isinstance(module, UserObjectVariable) or not isinstance(module.value, Module) or \
            module.source is None:
        raise tx.unsupported("functional_call of something that is not a module argument")
    values = _values(tx, a["parameter_and_buffer_dicts"])
    if _constant(tx, fn, a.get("tie_weights", ConstantVariable(True)), "tie_weights"):
        values = stateless._with_ties(module.value, values)
    known = {n for n, _ in module.value.named_parameters(remove_duplicate=False)} | \
        {n for n, _ in module.value.named_buffers(remove_duplicate=False)}
    if _constant(tx, fn, a.get("strict", ConstantVariable(False)), "strict") and \
            set(values) != known:  # (eager raises the missing/unexpected keys)
        raise tx.unsupported("functional_call(strict=True) with keys that do not match")
    call_args = a.get("args", ConstantVariable(()))
    call_args = call_args.items if isinstance(call_args, TupleVariable) else \
        [] if isinstance(call_args, ConstantVariable) and call_args.value in ((), None) \
        else [call_args]
    call_kwargs = a.get("kwargs", ConstantVariable(None))
    if isinstance(call_kwargs, DictVariable):
        call_kwargs = dict(call_kwargs.items)
    elif isinstance(call_kwargs, ConstantVariable) and not call_kwargs.value:
        call_kwargs = {}
    else:
        raise tx.unsupported("functional_call with kwargs that are not a dict")
    overrides = tx.out.side_effects.overrides
    saved = []
    for name, value in values.items():
        prefix, _, attr = name.rpartition(".")
        try:
            owner = module.value.get_submodule(prefix) if prefix else module.value
        except AttributeError:
            raise tx.unsupported(f"functional_call with an unknown submodule in {name!r}") \
                from None
        key = (id(owner), attr)
        saved.append((key, overrides.get(key)))
        overrides[key] = value
    try:
        return call_function(tx, module, list(call_args), call_kwargs)
    finally:
        for key, old in reversed(saved):
            if old is None:
                overrides.pop(key, None)
            else:
                overrides[key] = old


def register(table: dict, keep: list) -> None:
    """Enter the rule in capture's vocabulary table (`vocabulary._table`)."""
    keep.append(functional_call)
    table[id(functional_call)] = ("eager.func.functional_call", functional_call_rule)
