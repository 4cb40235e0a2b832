"""Python side effects of a captured frame, functionalized: recorded while tracing, replayed
after the graph (TorchDynamo's `SideEffects`, in miniature).

What is recorded instead of breaking the graph:
- attribute stores `obj.attr = v` / `obj.attr += 1` on objects read from the frame (modules,
  plain objects, dataclass configs, objects reached through globals) whose class sets
  attributes plainly (`object.__setattr__`, or eager's `Module.__setattr__` for a plain
  attribute or a buffer); `p.grad = None` / a same-shaped tensor on a tensor input;
  `global n; n += 1` (STORE_GLOBAL). Later reads in the frame see the stored tracker.
- mutation of lists and dicts read from the frame (arguments, attributes, globals):
  `append/extend/insert/pop/clear/remove`, `lst[i] = v`, `del lst[i]`, `d[k] = v`,
  `update/pop/setdefault/clear`, `del d[k]`: the tracker's items are changed in place.

After the graph ran (and in-place tensor write-backs were applied), `apply` replays them on the
real objects, before any eager code (a break's continuation, the caller) runs: every new value
is computed first (tensors are graph outputs, numbers computed in the graph are converted back
to `int`/`float`, lists/dicts the code built are made once however often referenced), then the
mutated containers are rewritten in place (`lst[:] = items`, `d.clear(); d.update(items)`: the
caller's object keeps its identity), then the stores are made in the order of their first
store (`setattr`, so `Module.__setattr__`'s bookkeeping runs as eagerly).

Guards: identity relations the trace relied on. A container or an object read through two
sources that were the same object at capture is one tracker (`OutputGraph.wrap`) and the
sources are guarded `is`; a mutated container, and an object whose attribute was stored, is
guarded `is not` every other source of its type whose aliasing would make a read stale.
Numbers: an int/float attribute (or global) that changes every call (`self.steps += 1`) is an
automatic-dynamic number (`dynamic.SymNumberVariable`): the first capture guards its value,
the second, after that guard failed, takes it as a 0-d graph input, so `+= 1` is computed in
the graph and stored back as an int: 2 cache entries, not one per value (torch 2.13
recompiles on every value of such a module attribute). A value read as Python (a branch, a
shape) specialises it again, as for arguments.

A snapshot of the top frame records `checkpoint()`; a graph break `restore()`s the log to it,
so what the breaking instruction (or an inlined callee that broke) recorded is dropped: it runs
eagerly. The log also holds what a snapshot of the stack and locals cannot reach: tensor
trackers rebound by in-place ops (`rebind`, with their write-backs) and the items of lists and
dicts the code built, wherever they are held (an attribute, a global, a container); a break
in a loop restores all of it to the loop head, where the eagerly run loop starts. Anything not modelled exactly stays a named graph break. Touches `capture`, `eager`'s
Module type.
"""

from __future__ import annotations

import inspect
import types

from .variables import (
    ConstantVariable,
    DictVariable,
    ListVariable,
    ModuleVariable,
    ObjectVariable,
    TensorVariable,
    UserObjectVariable,
)

MISSING = object()


class SideEffects:
    """The side-effect log of one capture (`OutputGraph.side_effects`)."""

    def __init__(self, out):
        self.out = out
        self.stores: dict = {}  # key -> (kind, target tracker or globals, name, value, obj)
        self.containers: dict = {}  # id(tracker) -> sourced list/dict tracker mutated
        self.undo: list = []  # callables restoring the log to an earlier point
        self.read_names: dict = {}  # id(obj) -> (obj, source, {attribute names read})
        # (id(obj), name) -> the tracker a read of obj.name gives while a call runs with it in
        # place of the object's own (`functional_call`): no store, nothing replayed
        self.overrides: dict = {}
        self.deferred: set = set()  # ids of objects a deferred call changes (`defer_call`)

    # ---- checkpoints (a graph break drops what its instruction recorded)

    def checkpoint(self) -> int:
        return len(self.undo)

    def restore(self, cp: int) -> None:
        while len(self.undo) > cp:
            self.undo.pop()()

    # ---- tensors changed in place

    def rebind(self, var, result, requires_grad: bool, source: str | None = None) -> None:
        """Point tensor tracker `var` at `result`'s value: an in-place op (`t += 1`,
        `t[i] = v`), whose tensor keeps its identity. `source`: `var` is that graph input,
        written back after the graph (`writeback.inplace_input`). Logged: a break restores
        the tracker's old value and write-back wherever the tracker is held (a cell, an
        attribute, a global, a container), not only on the frame's stack and locals (the
        `Snapshot`), so a loop run eagerly from its head does not repeat an update the
        graph already wrote back."""
        out = self.out
        old = (var.node, var.meta, var.requires_grad, var.shadow)
        new_mut = source is not None and var.node not in out.mutated
        old_wb = out.writebacks.get(source, MISSING) if source is not None else MISSING
        if source is not None:
            out.mutated.setdefault(var.node, var)
            out.writebacks[source] = var
        var.node, var.meta, var.shadow = result.node, result.meta, result.shadow
        var.requires_grad = requires_grad

        def undo():
            var.node, var.meta, var.requires_grad, var.shadow = old
            if new_mut:
                out.mutated.pop(old[0], None)
            if source is not None:
                if old_wb is MISSING:
                    out.writebacks.pop(source, None)
                else:
                    out.writebacks[source] = old_wb

        self.undo.append(undo)

    # ---- attributes

    def _record(self, key, rec) -> None:
        prev = self.stores.get(key, MISSING)
        self.stores[key] = rec

        def undo():
            if prev is MISSING:
                del self.stores[key]
            else:
                self.stores[key] = prev

        self.undo.append(undo)

    def defer_call(self, target, name: str, changes: tuple, args: tuple = ()) -> None:
        """`target.name(*args)` (a scheduler's `step()`, `x.register_hook(fn)` on an input)
        run after the graph, with the stores, in program order (`args`: plain values, the
        same on every call of the entry); the objects in `changes` (the scheduler, its
        optimizer) become opaque for the rest of the frame: a later attribute read of one
        breaks the graph there (`load_attr`), so it runs after the call."""
        key = ("call", id(getattr(target, "value", target)), name)
        prev = self.stores.get(key)
        calls = [args] if prev is None else prev[3] + [args]
        self._record(key, ("call", target, name, calls, getattr(target, "value", None)))
        added = [id(o) for o in changes if id(o) not in self.deferred]
        self.deferred.update(added)
        self.undo.append(lambda: self.deferred.difference_update(added))

    def load_attr(self, tx, obj, name):
        """The tracker stored into `obj.name` in this frame (or standing in for it), or None;
        a graph break at `tx`'s instruction when a deferred call changed `obj`."""
        if self.deferred and id(obj) in self.deferred:
            raise tx.unsupported(
                f"{type(obj).__name__}.{name} read after a deferred scheduler step in the same "
                "frame (the step runs here, after the graph)")
        if self.overrides:
            over = self.overrides.get((id(obj), name))
            if over is not None:
                return over
        rec = self.stores.get(("attr", id(obj), name))
        return None if rec is None else rec[3]

    def note_read(self, var, name: str) -> None:
        """An attribute read of a user object (aliasing guards of `finish`)."""
        got = self.read_names.get(id(var.value))
        if got is None:
            got = self.read_names[id(var.value)] = (var.value, var.source, set())
        got[2].add(name)

    def load_global(self, f_globals: dict, name: str):
        rec = self.stores.get(("global", id(f_globals), name))
        return None if rec is None else rec[3]

    # ---- containers

    def mutate(self, tx, obj) -> None:
        """About to mutate list/dict tracker `obj`. A sourced one (the caller's) is replayed
        after the graph; a fresh one (built by the code) is only logged, so a break restores
        its items wherever it is held (`o.items = []` then `o.items.append(i)` in a loop that
        runs eagerly from its head)."""
        if obj.source is None:
            if isinstance(obj, (ListVariable, DictVariable)) and \
                    type(obj.items) in (list, dict):
                saved = type(obj.items)(obj.items)
                self.undo.append(lambda: setattr(obj, "items", saved))
            return
        if not isinstance(obj, (ListVariable, DictVariable)):
            raise tx.unsupported(f"mutation of {obj.describe()} read from {obj.source}")
        items = obj.items
        if hasattr(items, "materialize"):  # a lazily read dict: guard its whole key list
            items = dict(items.materialize())
            obj.items = items
        saved = dict(items) if isinstance(obj, DictVariable) else list(items)
        was = id(obj) in self.containers
        self.containers[id(obj)] = obj

        def undo():
            obj.items = saved
            if not was:
                self.containers.pop(id(obj), None)

        self.undo.append(undo)

    # ---- at the end of a capture

    def finish(self, templater) -> list:
        """The effect templates to `apply` after the graph, and their guards."""
        effects = []

        def t(v):
            if type(v).__name__ == "SymNumberVariable" and v.source is None and \
                    v.input is not None:  # a dynamic number computed in the graph
                return ("num", type(v.number), templater.graph_output(v.input))
            return templater.t(v)

        for c in self.containers.values():
            if isinstance(c, DictVariable):
                effects.append(("dict", t(c), {k: t(v) for k, v in c.items.items()}))
            else:
                effects.append(("list", t(c), [t(v) for v in c.items]))
        for kind, target, name, value, _ in self.stores.values():
            if kind == "global":
                effects.append(("global", target, name, t(value)))
            elif kind == "call":
                effects.append(("call", t(target), name, value))
            else:
                effects.append(("attr", t(target), name, t(value)))
        if effects:
            self._alias_guards()
        return effects

    def _alias_guards(self) -> None:
        g = self.out.guards
        known = list(self.out.containers_by_id.values())
        value_of = {id(var): val for val, var in known}
        for c in self.containers.values():
            cv = value_of.get(id(c))
            for other, var in known:
                if var is not c and cv is not None and type(other) is type(cv):
                    g.add(f"{c.source} is not {var.source}")
        stored: dict = {}
        for kind, target, name, _, obj in self.stores.values():
            if kind == "attr" and isinstance(target, UserObjectVariable):
                stored.setdefault(id(obj), (obj, target.source, set()))[2].add(name)
        seen = list(self.read_names.values())
        for obj, src, names in stored.values():
            for other, osrc, onames in seen + list(stored.values()):
                if osrc is None or src is None or osrc == src or type(other) is not type(obj):
                    continue
                if names & (onames | stored.get(id(other), (0, 0, set()))[2]):
                    g.add(f"{src} is {osrc}" if other is obj else f"{src} is not {osrc}")


# ---------------------------------------------------------------- recording


def _plain_setattr(tx, obj, name: str, value) -> str | None:
    """Why `obj.name = value` cannot be recorded (None when it is a plain store)."""
    from eager.nn.module import Module, Parameter

    cls = type(obj)
    if isinstance(obj, (type, types.ModuleType)):
        return "a class or module attribute"
    setter = getattr(cls, "__setattr__", None)
    if isinstance(obj, Module):
        if setter is not Module.__setattr__:
            return "a module class with its own __setattr__"
        d = obj.__dict__
        if name in d.get("_parameters", ()) or name in d.get("_modules", ()):
            return f"{name!r} is a registered parameter or submodule"
        if isinstance(value, UserObjectVariable) and isinstance(value.value, Module):
            return "assigning a module registers it"
        if isinstance(value, TensorVariable) and value.source is not None and \
                isinstance(tx.out.values.get(value.source), Parameter):
            return "assigning a Parameter registers it"
        if name in d.get("_buffers", ()) and not (
                isinstance(value, TensorVariable) or
                (isinstance(value, ConstantVariable) and value.value is None)):
            return f"{name!r} is a buffer (a tensor or None is expected)"
    elif setter is not object.__setattr__:
        return f"{cls.__name__} has its own __setattr__"
    attr = inspect.getattr_static(cls, name, None)
    if attr is not None and hasattr(type(attr), "__set__") and \
            not isinstance(attr, types.MemberDescriptorType):
        return f"{cls.__name__}.{name} is a descriptor (a property setter runs user code)"
    if not hasattr(obj, "__dict__") and not isinstance(attr, types.MemberDescriptorType):
        return f"{cls.__name__} has no attribute {name!r} slot"
    return None


def _check_value(tx, value) -> None:
    """The stored value must be rebuildable after the graph (a dry run of its template)."""
    from .resume import CannotResume
    from .transform import Templater

    if type(value).__name__ == "SymNumberVariable":
        return  # (a graph input, or computed in the graph: `finish`)
    try:
        Templater(tx.out).t(value)
    except CannotResume:
        raise tx.unsupported(f"storing {value.describe()} (capture cannot rebuild it after "
                             "the graph)") from None


def store_attr(tx, obj, name: str, value) -> None:
    """STORE_ATTR: record `obj.name = value`, or raise the graph break naming why not."""
    se = tx.out.side_effects
    if isinstance(obj, TensorVariable):
        _store_grad(tx, obj, name, value)
        return
    from .objects import NewObjectVariable, store_attr as store_new

    if isinstance(obj, NewObjectVariable):  # an object the code made: its own dict
        store_new(tx, obj, name, value)
        return
    if not isinstance(obj, UserObjectVariable) or isinstance(obj, ModuleVariable) or \
            obj.source is None:
        raise tx.unsupported(f"mutation of Python state (STORE_ATTR {name} on "
                             f"{obj.describe()})")
    why = _plain_setattr(tx, obj.value, name, value)
    if why is not None:
        raise tx.unsupported(f"mutation of Python state ({obj.describe()}.{name} = ...: {why})")
    _check_value(tx, value)
    se._record(("attr", id(obj.value), name), ("attr", obj, name, value, obj.value))


def _store_grad(tx, t, name: str, value) -> None:
    out = tx.out
    src = t.source
    if name == "data":
        from .writeback import store_data

        store_data(tx, t, value)
        return
    if name != "grad" or src is None or src not in out.input_sources or \
            out.by_source.get(src) is not t or src not in out.values:
        raise tx.unsupported(f"setting Tensor attribute {name!r} (only .grad of an input)")
    if isinstance(value, ConstantVariable) and value.value is None:
        pass
    elif isinstance(value, TensorVariable) and value.meta.shape == t.meta.shape and \
            value.meta.dtype is t.meta.dtype:
        _check_value(tx, value)
    else:
        raise tx.unsupported("setting .grad to a value of another shape or dtype")
    real = out.values[src]
    out.side_effects._record(("attr", id(real), "grad"), ("attr", t, "grad", value, real))


def load_grad(tx, t):
    """`t.grad` of a tensor input: the stored tracker, else the input's grad (guarded)."""
    out = tx.out
    src = t.source
    if src is None or src not in out.values or out.by_source.get(src) is not t:
        return None
    real = out.values[src]
    got = out.side_effects.load_attr(tx, real, "grad")
    if got is not None:
        return got
    return out.wrap(real.grad, f"{src}.grad")


def store_global(tx, name: str, value) -> None:
    """STORE_GLOBAL: record `global name; name = value`."""
    _check_value(tx, value)
    g = tx.f_globals
    tx.out.side_effects._record(("global", id(g), name), ("global", g, name, value, g))


def store_cell(tx, cell, name: str, value) -> None:
    """STORE_DEREF into a real closure cell (`nonlocal running; running = 0.9 * running + m`
    in the compiled function or an inlined callee): recorded as `cell.cell_contents = value`
    after the graph, later loads in the frame see `value` (Dynamo's side effects on cells)."""
    if not isinstance(cell, types.CellType):
        raise tx.unsupported(f"mutation of a closure variable ({name}) of the compiled function")
    _check_value(tx, value)
    tx.out.side_effects._record(("attr", id(cell), "cell_contents"),
                                ("attr", ObjectVariable(cell), "cell_contents", value, cell))


# ---------------------------------------------------------------- after the graph


def apply(effects, rebuild_one) -> None:
    """Replay `effects` (from `finish`): every value first, then containers, then stores.
    `rebuild_one(template)` evaluates a template for this call (sharing one memo)."""
    r = rebuild_one
    done = []
    for e in effects:
        kind = e[0]
        if kind == "list":
            done.append((kind, r(e[1]), [r(x) for x in e[2]]))
        elif kind == "dict":
            done.append((kind, r(e[1]), {k: r(x) for k, x in e[2].items()}))
        elif kind in ("global", "call"):
            done.append((kind, e[1] if kind == "global" else r(e[1]), e[2], e[3] if
                         kind == "call" else r(e[3])))
        else:
            done.append((kind, r(e[1]), e[2], r(e[3])))
    for e in done:
        kind = e[0]
        if kind == "list":
            e[1][:] = e[2]
        elif kind == "dict":
            e[1].clear()
            e[1].update(e[2])
        elif kind == "global":
            e[1][e[2]] = e[3]
        elif kind == "call":
            for args in e[3]:
                getattr(e[1], e[2])(*args)
        else:
            setattr(e[1], e[2], e[3])


def zero_grad_rule(tx, fn, args, kwargs):
    """`opt.zero_grad()` (eager's `Optimizer.zero_grad`): its code is inlined, so that each
    `p.grad = None` is a recorded store; a break inside is named at the user's call."""
    from . import calls, vocabulary
    from .breaks import GraphBreak
    from .variables import FunctionVariable

    try:
        return calls.inline(tx, FunctionVariable(fn), args, kwargs)
    except GraphBreak as gb:
        raise vocabulary.no_graph_form(tx, fn, gb.reason.reason) from None
