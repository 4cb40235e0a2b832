"""A proxy-based symbolic tracer (torch.fx.symbolic_trace), and the recording `OpNamespace`.

`symbolic_trace(fn, *specs)` calls `fn` once with `Proxy` objects in place of tensors; every
registry op applied to a proxy (a Python operator or method, from the registry's `dunders` and
`method` fields, or `F.<op>(...)` of the namespace passed as a parameter named `F`) becomes a
`call_function` node. numpy arrays that `fn` closes over become `get_attr` constants. Python
control flow that depends on tensor data cannot be traced (TraceError), as in torch.fx.
`ir` cannot import `eager`, so `eager` functions do not accept proxies: trace functions written
against `F` and Python operators/methods. Decompositions (`ir.passes.decompose`) use the same
recording namespace. Imports only `ir`.
"""

from __future__ import annotations

import inspect
import os
import sys

import numpy as np

from .dtypes import from_numpy
from .graph import Graph, Node, op_meta
from .opdef import REGISTRY, MetaView, OpDef, OpNamespace, TensorMeta, is_number

CALLER = object()  # Tracer(source=CALLER): each node's source is its caller's file:line
_IR_DIR = os.path.dirname(os.path.abspath(__file__))
_SKIP = (_IR_DIR, os.path.join(_IR_DIR, "passes"), os.path.join(_IR_DIR, "ops"))


class TraceError(RuntimeError):
    """Something symbolic tracing cannot record (data-dependent control flow, an unknown
    shape, an operand that is neither a proxy, an array nor a number)."""


class Proxy(MetaView):
    """A traced tensor: `node` is the graph node that will compute it. Supports the registry's
    dunders and methods, and `.shape`/`.dtype`/`.ndim`/`.size()`/`.dim()` when the node's meta
    is known (from `specs`)."""

    __slots__ = ("node", "tracer")
    __hash__ = object.__hash__

    def __init__(self, node: Node, tracer: Tracer):
        self.node = node
        self.tracer = tracer

    @property
    def meta(self) -> TensorMeta:
        val = self.node.val
        if val is None:
            raise TraceError(f"the metadata (shape, dtype) of %{self.node.name} is unknown "
                             "while tracing: pass TensorMeta specs (or example arrays) to "
                             "symbolic_trace")
        return val

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def _data_dependent(self, *_):
        raise TraceError(f"symbolic tracing cannot read the data of %{self.node.name} "
                         "(control flow or conversions that depend on tensor values)")

    __bool__ = __int__ = __float__ = __index__ = __iter__ = _data_dependent

    def __getattr__(self, name: str):
        base = name.removesuffix("_")
        op = REGISTRY.get(base)
        if op is None or not op.method:
            for o in REGISTRY.values():
                if base in o.aliases and o.method:
                    op = o
                    break
            else:
                raise AttributeError(f"'Proxy' object has no attribute {name!r}")
        if name != base:
            raise TraceError(f"in-place method {name}() is not supported by symbolic_trace")

        def method(*args, **kwargs):
            return self.tracer.namespace.__getattr__(op.name)(self, *args, **kwargs)

        method.__name__ = name
        return method

    def __repr__(self) -> str:
        return f"Proxy(%{self.node.name})"


def _make_dunder(op: OpDef, dunder: str):
    reflected = dunder.startswith("__r") and dunder != "__rshift__"
    if op.nin == 1:
        def unary(self):
            return self.tracer.record(op, (self,), op.bind((self,), {})[1])

        return unary

    def binary(self, other):
        if not (isinstance(other, (Proxy, np.ndarray)) or is_number(other)):
            return NotImplemented
        inputs, attrs = op.bind((other, self) if reflected else (self, other), {})
        return self.tracer.record(op, inputs, attrs)

    binary.__name__ = dunder
    return binary


def install_dunders() -> None:
    """Give `Proxy` every dunder declared in the registry (idempotent)."""
    for op in REGISTRY.values():
        for d in op.dunders:
            if getattr(Proxy.__dict__.get(d), "__wick_op__", None) is not op:
                fn = _make_dunder(op, d)
                fn.__wick_op__ = op
                setattr(Proxy, d, fn)


class Tracer:
    """Records registry ops applied to proxies into `graph`; `namespace` is the recording
    `OpNamespace` (`F`). `source`: a fixed "file:line" (or None) for every node; by default
    the line of the caller outside `ir`."""

    def __init__(self, graph: Graph, source=CALLER):
        self.graph = graph
        self.attrs: dict[str, object] = {}
        self.source = source
        self.namespace = OpNamespace(self.record)
        self._consts: dict[int, Node] = {}

    def proxy(self, node: Node) -> Proxy:
        return Proxy(node, self)

    def _location(self) -> str | None:
        if self.source is not CALLER:
            return self.source
        f = sys._getframe(2)
        while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) in _SKIP:
            f = f.f_back
        return None if f is None else f"{os.path.basename(f.f_code.co_filename)}:{f.f_lineno}"

    def _operand(self, op: OpDef, i: int, x):
        if isinstance(x, Proxy):
            if x.tracer is not self:
                raise TraceError(f"{op.name}(): operand {op.operand_name(i)} is a proxy of "
                                 "another trace")
            return x.node
        if isinstance(x, Node):
            return x
        if isinstance(x, np.generic):
            x = x.item()
        if is_number(x):
            return x
        if isinstance(x, np.ndarray):
            return self.constant(x)
        raise TraceError(f"{op.name}(): argument '{op.operand_name(i)}' must be a traced "
                         f"tensor, an array or a number, not {type(x).__name__}")

    def constant(self, array: np.ndarray) -> Node:
        """A get_attr node for a numpy array the traced function closes over."""
        node = self._consts.get(id(array))
        if node is None:
            name = f"_tensor_constant{len(self._consts)}"
            with self.graph.inserting_before(self._first_non_input()):
                node = self.graph.get_attr(name, TensorMeta(array.shape,
                                                            from_numpy(array.dtype)))
            self.attrs[name] = array
            self._consts[id(array)] = node
        return node

    def _first_non_input(self):
        return next((n for n in self.graph.nodes if n.op not in ("placeholder", "get_attr")),
                    None) or self.graph._root

    def record(self, op: OpDef, inputs: tuple, attrs: dict):
        """Record `op` on bound operands/attributes; returns the result's Proxy (a tuple of
        them for a composite with several outputs, recorded as its decomposition)."""
        args = tuple(self._operand(op, i, x) for i, x in enumerate(inputs))
        if not any(isinstance(a, Node) for a in args):
            raise TraceError(f"{op.name}(): no traced tensor among its operands")
        src = self._location()
        if all(a.val is not None for a in args if isinstance(a, Node)):
            if op.decomp is not None:
                metas = tuple(a.val if isinstance(a, Node) else a for a in args)
                attrs = op.canonical_attrs(metas, attrs)
                if isinstance(op_meta(op, metas, attrs), tuple):  # several outputs: inline
                    operands = tuple(Proxy(a, self) if isinstance(a, Node) else a for a in args)
                    return op.decomp(self.namespace, *operands, **attrs)
            node = self.graph.call_bound(op, args, attrs, source=src)
        else:  # shapes unknown: attributes stay as bound
            node = self.graph.call_function(op, args, attrs, source=src)
        return Proxy(node, self)


def _as_spec(x) -> TensorMeta | None:
    if x is None or isinstance(x, TensorMeta):
        return x
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        dtype = x.dtype if not isinstance(x.dtype, np.dtype) else from_numpy(x.dtype)
        return TensorMeta(tuple(x.shape), dtype, getattr(x, "device", "cpu")
                          if isinstance(getattr(x, "device", "cpu"), str) else "cpu")
    raise TypeError(f"symbolic_trace: a spec must be a TensorMeta or an array, not "
                    f"{type(x).__name__}")


def _flatten(v) -> list:
    if isinstance(v, (tuple, list)):
        return [y for x in v for y in _flatten(x)]
    return [v]


def symbolic_trace(fn, *specs, name: str | None = None):
    """Trace `fn` into a `GraphModule` (torch.fx.symbolic_trace).

    A parameter named `F` receives the recording `OpNamespace`; every other parameter is a
    placeholder. `specs` (one per placeholder: TensorMeta, or an array whose shape/dtype are
    taken) give the nodes their meta and canonical attributes; without them nodes have no
    `meta["val"]` (enough for `replace_pattern`). `fn` returns a proxy or (nested) tuples/lists
    of proxies and numbers; the graph's output is always one flat tuple. Raises TraceError for
    data-dependent control flow and TypeError for a spec count that does not fit.
    """
    from .graph_module import GraphModule

    install_dunders()
    params = list(inspect.signature(fn).parameters)
    tensor_params = [p for p in params if p != "F"]
    if specs and len(specs) != len(tensor_params):
        raise TypeError(f"symbolic_trace({fn.__name__}): {len(tensor_params)} tensor "
                        f"parameter(s) ({', '.join(tensor_params)}), got {len(specs)} spec(s)")
    graph = Graph(name or getattr(fn, "__name__", "graph"))
    tracer = Tracer(graph)
    call_args = []
    it = iter(specs)
    for p in params:
        if p == "F":
            call_args.append(tracer.namespace)
        else:
            spec = _as_spec(next(it)) if specs else None
            call_args.append(tracer.proxy(graph.placeholder(p, spec)))
    values = []
    for v in _flatten(fn(*call_args)):
        if isinstance(v, Proxy):
            values.append(v.node)
        elif is_number(v):
            values.append(v)
        else:
            raise TraceError(f"symbolic_trace({graph.name}): cannot return "
                             f"{type(v).__name__}; return proxies or numbers")
    graph.output(tuple(values))
    return GraphModule(tracer.attrs, graph)


install_dunders()
