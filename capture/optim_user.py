"""A user's own optimizer (`class Lion(torch.optim.Optimizer)` with its `step`) in the graph,
as Dynamo inlines one: `opt.step()` reaches eager's hook wrapper of the subclass's `step`
(`Optimizer.__init_subclass__`), whose rule here guards that no step hooks are registered and
inlines the user's `step` itself (its `@torch.no_grad()` too), then records `_opt_called` as
the wrapper does. Inside it, `self.state[p]` (a defaultdict keyed by the parameter) is read
by `state_entry`: an existing entry is the state dict at source `opt.state[<p>]` (its tensors
graph inputs, updated in place and written back); a missing one (the first step) is a new dict
the code fills (`len(state) == 0`, `state["exp_avg"] = torch.zeros_like(p)`), stored into
`opt.state[p]` after the graph, as the defaultdict would have. Each is guarded on whether `p`
is in the state. Other uses of the state (iteration, `del`) stay breaks.
"""

from __future__ import annotations

import inspect
from collections import defaultdict

from .variables import (
    ConstantVariable,
    DictVariable,
    FunctionVariable,
    ListVariable,
    ObjectVariable,
    TensorVariable,
    TupleVariable,
    UserObjectVariable,
    VariableTracker,
)


class _StateInsert:
    """The target of the recorded side effect that inserts new per-parameter state: setting
    any attribute to a list of (state defaultdict, parameter, dict) runs `state[p].update(d)`
    for each, in the order the code made them."""

    def __setattr__(self, name, value):
        for state, p, d in value:
            state[p].update(d)


_INSERT = _StateInsert()


def hooked_step(value):
    """True for eager's hook wrapper of a user-written `step` (not wick's own optimizers)."""
    from . import vocabulary

    if not getattr(value, "_hooked", False) or getattr(value, "__wrapped__", None) is None:
        return False
    return not vocabulary.is_internal(inspect.unwrap(value))  # (past `@torch.no_grad()`)


def hooked_step_rule(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """`opt.step(...)` of a user subclass: the user's step inlined (see the module)."""
    from .calls import call_function
    from .sideeffects import store_attr

    opt = args[0] if args else None
    if not isinstance(opt, UserObjectVariable) or opt.source is None:
        raise tx.unsupported(f"{fn.__qualname__} of an optimizer capture does not see")
    g, src = tx.out.guards, opt.source
    g.add(f"not {src}.__dict__.get('_optimizer_step_pre_hooks')")
    g.add(f"not {src}.__dict__.get('_optimizer_step_post_hooks')")
    g.add(f"not {src}.__dict__.get('_in_step')")
    result = call_function(tx, FunctionVariable(fn.__wrapped__, None), args, kwargs)
    store_attr(tx, opt, "_opt_called", ConstantVariable(True))
    return result


def state_entry(tx, obj, key) -> VariableTracker | None:
    """`opt.state[p]` for a parameter `p` (see the module), else None."""
    if not isinstance(key, TensorVariable) or not isinstance(obj, ObjectVariable):
        return None  # (reading `.value` of a dynamic size specialises it: `x.shape[1]`)
    state = obj.value
    if not (type(state) is defaultdict and
            state.default_factory is dict and obj.source is not None and
            isinstance(key, TensorVariable) and key.source is not None):
        return None
    p = tx.out.values.get(key.source)
    if p is None:
        return None
    made = tx.out.__dict__.setdefault("optim_state_made", {})
    hit = made.get((obj.source, key.source))
    if hit is not None:
        return hit
    g = tx.out.guards
    if p in state:
        g.add(f"{key.source} in {obj.source}")
        return tx.out.wrap(state[p], f"{obj.source}[{key.source}]")
    g.add(f"{key.source} not in {obj.source}")
    entry = DictVariable({})
    made[(obj.source, key.source)] = entry
    se = tx.out.side_effects
    writer = UserObjectVariable(_INSERT, None)
    name = f"state_{len(se.stores)}"
    se._record(("attr", id(_INSERT), name),
               ("attr", writer, name, ListVariable([TupleVariable([obj, key, entry])]),
                _INSERT))
    return entry
