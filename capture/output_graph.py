"""The state one capture builds, shared by the top frame and every frame inlined into it.

`OutputGraph` holds the `ir.Graph` being recorded, the `GuardSet`, the graph inputs (one
placeholder per tensor the code reads, in first-read order, each with the source it is fetched
from on every call) and the symbolic grad mode. `wrap(value, source)` is the variable builder:
it turns a Python value read from the frame (argument, global, attribute, closure cell) into a
tracker and adds the guards that protect it (Dynamo's `VariableBuilder`). Touches `eager`'s
types, `ir.Graph`, and `capture`.
"""

from __future__ import annotations

import functools
import types
from collections import OrderedDict
from collections.abc import Mapping

from eager import Tensor, device
from eager.extra_settings import layout, memory_format
from eager.grad_mode import is_grad_enabled
from ir import Graph
from ir.dtypes import DType

from . import autocast, dict_objects, dynamic, pycalls
from .guards import GuardSet, is_literal
from .sideeffects import SideEffects
from .transform import GradRestore, ResumeIter
from .variables import (
    BuiltinVariable,
    ConstantVariable,
    DictVariable,
    FunctionVariable,
    GradModeExitVariable,
    IteratorVariable,
    ListVariable,
    ModuleVariable,
    OpFunctionVariable,
    TensorVariable,
    TupleVariable,
    UnknownVariable,
    UserObjectVariable,
    VariableTracker,
)


class OutputGraph:
    """What a captured call produces, shared by the top frame and every inlined frame."""

    def __init__(self, fn, dynamic_dims: dict | None = None, resumable: bool = True):
        self.fn = fn
        self.graph = Graph(fn.__name__)
        self.guards = GuardSet(fn)
        self.input_sources: list[str] = []
        self.by_source: dict[str, VariableTracker] = {}
        self.grad_enabled = self.initial_grad_enabled = is_grad_enabled()
        autocast.init(self)  # the autocast state (`capture/autocast.py`)
        self.instructions = 0
        self.resumable = resumable
        self.tape: list = []  # user-level op calls, replayed per shape by dynamic entries
        self.dynamic_dims = dynamic_dims or {}  # source -> dims to capture symbolically
        self.dynamic_inputs: dict = {}  # (source, dim) -> size at capture, of dynamic dims
        self.tensor_shapes: dict[str, tuple] = {}  # source -> shape of every tensor input
        self.shadow_tx = dynamic.ShadowTx(self)
        self.dynamic_numbers: set = set()  # int/float arguments fed as 0-d inputs
        self.values: dict = {}  # source -> the tensor read at capture (`writeback.py`)
        self.writebacks: dict = {}  # source -> tracker of a mutated input (its final value)
        self.mutated: dict = {}  # placeholder node of a mutated input -> its tracker
        self.alias_writes: dict = {}  # source -> "data"/"detach": written through such aliases
        self.aliases: dict = {}  # source -> the `.data` / `detach()` trackers of that input
        self.alias_leaf: dict = {}  # source -> the input's tracker before those writes
        self.alias_grad_nodes: set = set()  # their straight-through nodes (`writeback`)
        self.side_effects = SideEffects(self)  # Python mutations replayed after the graph
        self.containers_by_id: dict = {}  # id(list/dict read) -> (it, its one tracker)

    def globals_name(self, f_globals: dict) -> str:
        if f_globals is self.fn.__globals__:
            return self.guards.G
        return self.guards.name_for(f_globals, "G_" + str(f_globals.get("__name__", "mod")))

    def wrap(self, value, source: str) -> VariableTracker:
        """The tracker for `value` read from `source`, adding the guards that protect it."""
        known = self.by_source.get(source)
        if known is not None:
            return known
        if type(value) in (list, dict, OrderedDict) or isinstance(value, Tensor):
            # one tracker per object (mutations; a parameter read as `self.fc.weight` and
            # through `named_parameters()` is one graph input)
            seen = self.containers_by_id.get(id(value))
            if seen is not None and seen[0] is value:
                self.guards.add(f"{source} is {seen[1].source}")
                self.by_source[source] = seen[1]
                return seen[1]
        var = self._wrap(value, source)
        self.by_source[source] = var
        if type(value) in (list, dict, OrderedDict) or isinstance(value, Tensor):
            self.containers_by_id[id(value)] = (value, var)
        return var

    def _wrap(self, value, source: str) -> VariableTracker:
        """A fresh tracker for `value` (not read before): by its kind, each kind's guards."""
        if isinstance(value, Tensor):
            return self._wrap_tensor(value, source)
        var = self._wrap_data(value, source)
        if var is None:
            var = self._wrap_resumed(value, source)
        if var is None:
            var = self._wrap_callable(value, source)
        if var is not None:
            return var
        self.guards.type_is(source, value)
        if type(value).__module__ == "builtins" or not hasattr(value, "__dict__") or \
                type(value).__module__.split(".")[0] == "numpy":
            return UnknownVariable(value, source)
        var = UserObjectVariable(value, source)
        if dict_objects.dict_base(type(value), read=True) is not None:  # a ModelOutput
            var.cls = type(value)  # its items read raw (`dict.copy`: no user code), lazily
            raw = f"{self.guards.name_for(dict.copy, '___dict_copy')}({source})"
            var.mapping = LazyDictVariable(self, dict.copy(value), raw)
        return var

    def _wrap_tensor(self, value: Tensor, source: str) -> TensorVariable:
        """A graph input (placeholder) guarded on its metadata; dynamic dims get a shadow."""
        g = self.guards
        meta = value.meta
        every = () if type(value).__name__ == "Parameter" else \
            self.dynamic_dims.get("*", ())  # (dynamic=True: parameters static, as torch's)
        dims = {d for d in self.dynamic_dims.get(source, every) if d < len(meta.shape)
                and meta.shape[d] > 1}
        g.tensor(source, value, dims)
        name = "".join(c if c.isalnum() else "_" for c in source).strip("_")
        node = self.graph.placeholder(name.replace("__", "_") or "input", meta)
        self.input_sources.append(source)
        self.tensor_shapes[source] = tuple(meta.shape)
        self.values[source] = value
        var = TensorVariable(node, meta, value.requires_grad, source)
        if dims:
            for d in dims:
                self.dynamic_inputs[(source, d)] = meta.shape[d]
            pmeta = dynamic.perturbed(meta, dims)
            var.shadow = TensorVariable(self.shadow_tx.out.graph.placeholder(name, pmeta),
                                        pmeta, value.requires_grad)
        return var

    def _wrap_data(self, value, source: str) -> VariableTracker | None:
        """Numbers, literals, dtypes/devices, tuples, dicts and lists (None: another kind)."""
        g = self.guards
        if type(value) in (int, float) and source in self.dynamic_numbers:
            g.type_is(source, value)  # the value is a graph input (`dynamic.SymNumberVariable`)
            if type(value) is int:  # int64 arithmetic in the graph is Python's in this range
                g.add(f"-{1 << 31} <= {source} < {1 << 31}")
            return dynamic.SymNumberVariable(self, value, source)
        if type(value) is not list and is_literal(value) or type(value) is float:
            # (inf/nan too: `x.masked_fill(m, _NEG_INF)`; the guard names the value)
            g.constant(source, value)
            return ConstantVariable(value, source)
        if isinstance(value, (DType, device, memory_format, layout)) or value is Ellipsis:
            # (`zeros_like(p, memory_format=torch.preserve_format)`: a guarded constant)
            g.identity(source, value, getattr(value, "name", "___c"))
            return ConstantVariable(value, source)
        if isinstance(value, tuple) and type(value) is not tuple:  # Size, named tuples
            if is_literal(tuple(value)):
                g.type_is(source, value)
                g.add(f"tuple({source}) == {tuple(value)!r}")
                return ConstantVariable(value, source)
            if not hasattr(type(value), "_fields"):
                g.type_is(source, value)
                return UnknownVariable(value, source)
        if isinstance(value, tuple):
            g.length(source, value)
            var = TupleVariable([self.wrap(v, f"{source}[{i}]") for i, v in enumerate(value)],
                                source)
            if type(value) is not tuple:
                g.type_is(source, value)
                var.namedtuple = type(value)  # keeps its type when rebuilt
            return var
        if type(value) in (dict, OrderedDict) and all(type(k) in (str, int) for k in value):
            # (an OrderedDict too: a module's hook tables; its truth value and len() guard
            # the length, iteration the key list)
            g.type_is(source, value)  # keys and values are guarded as they are read
            return LazyDictVariable(self, value, source)
        if type(value) is list:
            g.length(source, value)
            return ListVariable([self.wrap(v, f"{source}[{i}]") for i, v in enumerate(value)],
                                source)
        return None

    def _wrap_resumed(self, value, source: str) -> VariableTracker | None:
        """The rebuilt state a graph break left for its resume function: a loop's iterator, an
        autocast or grad-mode exit (None: another kind)."""
        g = self.guards
        if type(value) is ResumeIter:  # a loop's iterator after a break: its items known
            g.type_is(source, value)
            g.add(f"{source}.pos == {value.pos} and len({source}.items) == {len(value.items)}")
            return IteratorVariable([self.wrap(v, f"{source}.items[{i}]")
                                     for i, v in enumerate(value.items)], value.pos)
        if type(value) is autocast.AutocastRestore:
            return autocast.wrap_restore(self, value, source)
        if type(value) is GradRestore:
            g.type_is(source, value)
            g.add(f"{source}.prev is {value.prev}")
            return GradModeExitVariable(value.prev)
        return None

    def _wrap_callable(self, value, source: str) -> VariableTracker | None:
        """Modules, registry functions, compiled and plain functions, methods, builtins,
        classes and partials, each guarded by identity (None: another kind)."""
        g = self.guards
        name = getattr(value, "__name__", "___c")
        if isinstance(value, types.ModuleType):
            g.identity(source, value, name)
            return ModuleVariable(value, source)
        if hasattr(value, "__wick_op__") and callable(value) and \
                not isinstance(value, types.MethodType):  # (a bound `x.masked_fill`: below)
            g.identity(source, value, name)
            return OpFunctionVariable(value, source)
        if getattr(value, "__wick_compiled__", None) is not None:
            g.identity(source, value, name)
            if not isinstance(value.__wrapped__, types.FunctionType):  # a method, partial...
                return self.wrap(value.__wrapped__, f"{source}.__wrapped__")
            return FunctionVariable(value.__wrapped__, source)
        if isinstance(value, types.FunctionType):
            g.identity(source, value, name)
            return FunctionVariable(value, source)
        if isinstance(value, types.MethodType):
            g.identity(f"{source}.__func__", value.__func__, name)
            self_var = self.wrap(value.__self__, f"{source}.__self__")
            if hasattr(value.__func__, "__wick_op__"):
                return OpFunctionVariable(value.__func__, source, self_var)
            if isinstance(value.__func__, types.FunctionType):
                return FunctionVariable(value.__func__, source, self_var)
            return UnknownVariable(value, source)
        if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType)) or \
                type(value) is type and value in pycalls.PURE_BUILTINS:
            g.identity(source, value, name)
            return BuiltinVariable(value, source)
        if isinstance(value, type):
            g.identity(source, value, name)
            return UserObjectVariable(value, source)
        if type(value) is functools.partial:  # its parts are read (and guarded) at call time
            from .variables import PartialVariable

            g.type_is(source, value)
            g.add(f"len({source}.args) == {len(value.args)}")
            g.add(f"list({source}.keywords) == {list(value.keywords)!r}")
            return PartialVariable(
                self.wrap(value.func, f"{source}.func"),
                [self.wrap(a, f"{source}.args[{i}]") for i, a in enumerate(value.args)],
                {k: self.wrap(v, f"{source}.keywords[{k!r}]") for k, v in value.keywords.items()},
                source)
        return None

class LazyItems(Mapping):
    """The items of a dict read from the frame (a global table, an attribute), wrapped and
    guarded only as the code reads them (Dynamo's lazy dict guards): `d[k]` and `d.get(k)` guard
    `k in d` and the value read (`d[k] is fn`), a missing key `k not in d`, `len(d)` the length,
    and only iterating (or copying, mutating) guards the whole key list and wraps every value.
    A dict of hundreds of entries read at one key costs two guard terms, not hundreds."""

    def __init__(self, og: OutputGraph, value: dict, source: str):
        self._og, self._value, self._source = og, value, source
        self._read: dict = {}  # key -> tracker of the values read so far
        self._all: dict | None = None  # every item, once the code iterated the dict

    def _guard(self, term: str) -> None:
        self._og.guards.add(term)

    def materialize(self) -> dict:
        """Every item wrapped, under a guard on the whole key list."""
        if self._all is None:
            value, source = self._value, self._source
            self._guard(f"list({source}) == {list(value)!r}")
            self._all = {k: self._read[k] if k in self._read else
                         self._og.wrap(v, f"{source}[{k!r}]") for k, v in value.items()}
        return self._all

    def known(self) -> list:
        """The trackers wrapped so far (what a snapshot must save; nothing else was read)."""
        return list((self._all if self._all is not None else self._read).values())

    def __getitem__(self, key):
        if self._all is not None:
            return self._all[key]
        got = self._read.get(key) if type(key) in (str, int) else None
        if got is not None:
            return got
        if type(key) not in (str, int):
            return self.materialize()[key]
        if key not in self._value:
            self._guard(f"{key!r} not in {self._source}")
            raise KeyError(key)
        self._guard(f"{key!r} in {self._source}")
        got = self._read[key] = self._og.wrap(self._value[key], f"{self._source}[{key!r}]")
        return got

    def __contains__(self, key) -> bool:
        if self._all is not None or type(key) not in (str, int):
            return key in self.materialize()
        found = key in self._value
        self._guard(f"{key!r} {'in' if found else 'not in'} {self._source}")
        return found

    def __len__(self) -> int:
        if self._all is not None:
            return len(self._all)
        self._guard(f"len({self._source}) == {len(self._value)}")
        return len(self._value)

    def __iter__(self):
        return iter(self.materialize())

    # mutation (refused by capture for a dict it did not build) works on the full items
    def __setitem__(self, key, v) -> None:
        self.materialize()[key] = v

    def __delitem__(self, key) -> None:
        del self.materialize()[key]

    def pop(self, *args):
        return self.materialize().pop(*args)

    def setdefault(self, *args):
        return self.materialize().setdefault(*args)

    def update(self, *args, **kwargs) -> None:
        self.materialize().update(*args, **kwargs)


class LazyDictVariable(DictVariable):
    """A `dict` read from a source whose `items` are a `LazyItems`: guarded on what is read."""

    ordered = False  # (DictVariable's fields for dicts the code made: a read one is neither)
    default_factory = None

    def __init__(self, og: OutputGraph, value: dict, source: str):
        self._items: dict | LazyItems = LazyItems(og, value, source)
        self.source = source

    @property
    def items(self):
        return self._items

    @items.setter
    def items(self, value) -> None:  # a snapshot's restore, or code replacing the items
        self._items = value

    def describe(self) -> str:
        return type(self._items._value).__name__ if isinstance(self._items, LazyItems) \
            else "dict"
