"""Templates: how to rebuild a captured frame's values as Python values on every call.

`Templater` turns trackers into *templates*: how to rebuild each value on every call from the
graph's outputs (`("graph", k)`), the fetched inputs (`("input", i)`), objects read from the
frame by their source (`("source", i)`), or constants; lists, dicts, iterators and cells keep
their identity however often the code references them. `rebuild` evaluates a template for one
call. `GradRestore` and `ResumeIter` are the rebuilt `with eager.no_grad()` exit and `for`
iterator that a graph break cut through. Used by the break continuations (`transform.py`,
which re-exports these names), the compiled entry (`compiler.py`) and side effects.
"""

from __future__ import annotations

import collections
import functools
import types

from eager import grad_mode

from . import aliases, autocast, autograd_grad, inference, objects, symints, writeback
from .resume import CannotResume
from .variables import (
    CellVariable,
    ConstantMethodVariable,
    ConstantVariable,
    ContainerMethodVariable,
    DictVariable,
    FunctionVariable,
    GradModeExitVariable,
    GradModeVariable,
    IteratorVariable,
    NestedFunctionVariable,
    NullVariable,
    NumpyOfVariable,
    ObjectVariable,
    OpFunctionVariable,
    PartialVariable,
    SequenceVariable,
    SetVariable,
    SymBoolVariable,
    TensorMethodVariable,
    TensorVariable,
)


class Templater:
    """Collects graph outputs and sources while turning trackers into templates."""

    def __init__(self, out):
        self.out = out
        self.outputs: list = []
        self.sources: list[str] = []
        self.memo: dict[int, tuple] = {}
        self.alias_intermediates = False  # views of graph values too (`aliases.py`)

    def graph_output(self, v: TensorVariable) -> tuple:
        mutated = writeback.final_template(self, v)  # an input written back after the graph
        if mutated is not None:
            return mutated
        if v.node.op == "placeholder" and v.source in self.out.input_sources:
            return ("input", self.out.input_sources.index(v.source))
        view = aliases.view_template(self, v.node)  # an eager view of its base, rebuilt
        if view is not None:
            return view
        if v.node not in self.outputs:
            self.outputs.append(v.node)
        return ("graph", self.outputs.index(v.node))

    def source(self, src: str) -> tuple:
        if src not in self.sources:
            self.sources.append(src)
        return ("source", self.sources.index(src))

    def t(self, v) -> tuple:
        if isinstance(v, TensorVariable):
            if getattr(v, "frame_leaf", False):  # `requires_grad_()` in the frame: a leaf
                return ("leaf", inference.template(self, v, self.graph_output(v)))
            if v.requires_grad and getattr(self.out, "frame_leaves", None):
                autograd_grad.check_leaves_out(self.out, v)
            return inference.template(self, v, self.graph_output(v))
        if isinstance(v, ConstantVariable):
            if type(v).__name__ == "SymSizeVariable":  # `return out, out.shape[0]`
                return symints.size_template(self, v)
            if type(v).__name__ == "SymNumberVariable" and v.source is not None:
                return self.source(v.source)  # a dynamic number argument: read on each call
            if type(v).__name__ == "SymNumberVariable" and v.input is not None:
                # computed in the graph (`count += 1` of a dynamic number): its 0-d value
                return ("num", type(v.number), self.graph_output(v.input))
            return ("const", v.value)
        if isinstance(v, NullVariable):
            return ("null",)
        if isinstance(v, SetVariable):
            return ("set", [self.t(x) for x in v.items])
        if getattr(v, "namedtuple", None) is not None:
            return ("namedtuple", v.namedtuple, [self.t(x) for x in v.items])
        if isinstance(v, DictVariable) or isinstance(v, SequenceVariable) and \
                v.kind is not tuple:
            if v.source is not None:  # the caller's own list/dict: the same object, by source
                return self.source(v.source)
            # a list/dict built by the code: one object however often it is referenced
            items = {k: self.t(x) for k, x in v.items.items()} \
                if isinstance(v, DictVariable) else [self.t(x) for x in v.items]
            kind = ("odict" if v.ordered else "dict") if isinstance(v, DictVariable) \
                else v.kind.__name__
            if getattr(v, "default_factory", None) is not None:
                return ("ddict", items, id(v), self.t(v.default_factory))
            return (kind, items, id(v))
        if isinstance(v, SequenceVariable):
            return (v.kind.__name__, [self.t(x) for x in v.items])
        if isinstance(v, IteratorVariable):  # one iterator however often referenced
            return ("iter", [self.t(x) for x in v.items[v.index:]], id(v))
        if isinstance(v, SymBoolVariable):
            return ("bool", self.t(v.tensor), v.negate)
        if isinstance(v, GradModeExitVariable):
            return ("const", _restore_grad(v.prev))
        region = autocast.runtime_value(v)
        if region is not None:
            return self.source(v.source) if v.source is not None else ("const", region)
        if isinstance(v, GradModeVariable) and v.prev is None:
            return ("const", grad_mode.no_grad() if not v.mode else grad_mode.enable_grad())
        if isinstance(v, (FunctionVariable, OpFunctionVariable)) and v.self_var is not None:
            return ("method", ("const", v.value), self.t(v.self_var))
        if isinstance(v, (TensorMethodVariable,)):
            return ("getattr", self.t(v.tensor), v.name)
        if isinstance(v, ContainerMethodVariable):
            return ("getattr", self.t(v.obj), v.name)
        if isinstance(v, ConstantMethodVariable):
            return ("const", v.bound)
        if isinstance(v, NumpyOfVariable):
            return ("numpy", self.t(v.tensor))
        if isinstance(v, ObjectVariable):
            return self.source(v.source) if v.source is not None else ("const", v.value)
        if isinstance(v, CellVariable):
            key = id(v)
            if key not in self.memo:
                self.memo[key] = ("cell", key, None if v.value is CellVariable.EMPTY
                                  else self.t(v.value))
            return self.memo[key]
        if isinstance(v, NestedFunctionVariable):
            return ("makefn", v.code, v.f_globals, [self.t(d) for d in v.defaults],
                    {k: self.t(d) for k, d in v.kwdefaults.items()},
                    [self.t(c) for c in v.closure], v.qualname)
        if isinstance(v, PartialVariable):
            return ("partial", self.t(v.fn), [self.t(a) for a in v.args],
                    {k: self.t(a) for k, a in v.kwargs.items()})
        if isinstance(v, objects.NewObjectVariable):
            return objects.template(self, v)
        raise CannotResume(f"cannot rebuild {v.describe()} after a graph break")


class GradRestore:
    """The rebuilt `__exit__` of a `with eager.no_grad():` block a graph break cut through:
    calling it restores the previous grad mode (capture models it as GradModeExitVariable)."""

    def __init__(self, prev: bool):
        self.prev = prev

    def __call__(self, *exc):
        grad_mode._set(self.prev)
        return False


class ResumeIter:
    """The rebuilt iterator of a `for` loop a graph break cut through (the items left): the
    resume function's capture reads it as known items (`OutputGraph.wrap`), so the loop goes
    on unrolled in its graph instead of breaking on an unknown iterator."""

    __slots__ = ("items", "pos")

    def __init__(self, items):
        self.items, self.pos = tuple(items), 0

    def __iter__(self):
        return self

    def __next__(self):
        i = self.pos
        if i >= len(self.items):
            raise StopIteration
        self.pos = i + 1
        return self.items[i]

    def __length_hint__(self) -> int:
        return len(self.items) - self.pos


def _restore_grad(prev: bool):
    return GradRestore(prev)


def rebuild(t: tuple, outs, inputs, objs, cells=None):
    """The value of template `t` for one call."""
    kind = t[0]
    if kind == "graph":
        return outs[t[1]]
    if kind == "const":
        return t[1]
    if kind == "input":
        return inputs[t[1]]
    if kind == "source":
        return objs[t[1]]
    if kind == "null":
        return None  # a NULL stack slot: the resume function's prologue pushes it
    if kind == "leaf":  # (made a leaf requiring grad by `requires_grad_()` in the frame)
        value = rebuild(t[1], outs, inputs, objs, cells)
        return value if value.requires_grad else value.requires_grad_()
    if kind == "num":  # a dynamic number computed in the graph (0-d int64/float64)
        return t[1](rebuild(t[2], outs, inputs, objs)._data)
    cells = {} if cells is None else cells
    r = functools.partial(rebuild, outs=outs, inputs=inputs, objs=objs, cells=cells)
    if kind in ("sizeof", "sizeop"):  # a dynamic size: from this call's tensors
        return symints.rebuild_size(t, r)
    if kind == "newobj":
        return objects.rebuild(t, r, cells)
    if kind == "inference":
        return inference.rebuild(r(t[1]))
    if len(t) > 2 and kind in ("list", "set", "dict", "odict") and t[2] in cells:
        return cells[t[2]]  # the same list/dict the code referenced from several places
    if kind == "ddict":  # a defaultdict the code made
        if t[2] not in cells:
            cells[t[2]] = collections.defaultdict(r(t[3]), {k: r(x) for k, x in t[1].items()})
        return cells[t[2]]
    if kind in ("tuple", "list", "set"):
        items = [r(x) for x in t[1]]
        out = tuple(items) if kind == "tuple" else set(items) if kind == "set" else items
    elif kind in ("dict", "odict"):
        out = {k: r(x) for k, x in t[1].items()}
        out = collections.OrderedDict(out) if kind == "odict" else out
    if kind in ("tuple", "list", "set", "dict", "odict"):
        if len(t) > 2:
            cells[t[2]] = out
        return out
    if kind == "namedtuple":
        return t[1](*[r(x) for x in t[2]])
    if kind == "iter":
        if len(t) > 2 and t[2] in cells:
            return cells[t[2]]
        it = ResumeIter([r(x) for x in t[1]])
        if len(t) > 2:
            cells[t[2]] = it
        return it
    if kind == "bool":
        return bool(r(t[1])) != t[2]
    if kind == "method":
        return types.MethodType(r(t[1]), r(t[2]))
    if kind == "getattr":
        return getattr(r(t[1]), t[2])
    if kind == "numpy":
        return r(t[1]).numpy()
    if kind == "cell":
        if t[1] not in cells:
            cells[t[1]] = types.CellType() if t[2] is None else types.CellType(r(t[2]))
        return cells[t[1]]
    if kind == "makefn":
        _, code, g, defaults, kwdefaults, closure, qualname = t
        fn = types.FunctionType(code, g, code.co_name, tuple(r(d) for d in defaults) or None,
                                tuple(r(c) for c in closure) or None)
        fn.__kwdefaults__ = {k: r(d) for k, d in kwdefaults.items()} or None
        fn.__qualname__ = qualname
        return fn
    if kind == "callee":
        return r(t[1])
    if kind == "view":
        return aliases.rebuild_view(t, r)
    if kind == "partial":
        return functools.partial(r(t[1]), *[r(a) for a in t[2]],
                                 **{k: r(a) for k, a in t[3].items()})
    raise CannotResume(f"unknown template {kind}")
