"""An FX-like graph IR: a `Graph` is a doubly linked list of `Node`s.

`Node.op` is one of `placeholder` (a graph input), `get_attr` (a constant or parameter held by
the owning `GraphModule`, target: its qualified name), `call_function` (target: a registry
`OpDef`), `output` (args[0]: the tuple of returned values). `args` hold Nodes and Python
constants; `kwargs` hold the op's attributes; `meta["val"]` is the output's `TensorMeta` and
`meta["source"]` the user's "file:line" that produced it. Printing follows torch.fx's text form,
shortened. Checking (`lint`), tables, export (networkx, DOT, JSON) live beside this file and are
reached through `Graph` methods. Imports only `ir`.
"""

from __future__ import annotations

import contextlib
import keyword
from collections.abc import Iterator
from typing import Any

from .opdef import OpDef, OpNamespace, TensorMeta

OPS = ("placeholder", "get_attr", "call_function", "output")


class Node:
    """One value of the graph (torch.fx.Node). `users` maps each Node that reads this one to
    None (FX style); setting `args`/`kwargs` keeps every `users` dict up to date."""

    __slots__ = (
        "_args",
        "_erased",
        "_kwargs",
        "_next",
        "_prev",
        "graph",
        "meta",
        "name",
        "op",
        "target",
        "users",
    )

    def __init__(self, graph, name, op, target, args=(), kwargs=None, meta=None):
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.meta = dict(meta or {})
        self.users: dict[Node, None] = {}
        self._prev = self._next = self
        self._erased = False
        self._args: tuple = ()
        self._kwargs: dict = {}
        self._set_inputs(tuple(args), dict(kwargs or {}))

    # ---- inputs

    @property
    def args(self) -> tuple:
        return self._args

    @args.setter
    def args(self, value) -> None:
        self._set_inputs(tuple(value), self._kwargs)

    @property
    def kwargs(self) -> dict:
        return self._kwargs

    @kwargs.setter
    def kwargs(self, value) -> None:
        self._set_inputs(self._args, dict(value))

    def _set_inputs(self, args: tuple, kwargs: dict) -> None:
        for a in self.all_input_nodes:
            a.users.pop(self, None)
        self._args, self._kwargs = args, kwargs
        for a in self.all_input_nodes:
            a.users[self] = None
        if self.graph is not None:
            self.graph._version += 1

    @property
    def all_input_nodes(self) -> list:
        """The Nodes this node reads, in argument order, without repeats."""
        out: dict[Node, None] = {}
        map_arg((self._args, tuple(self._kwargs.values())), lambda n: out.setdefault(n) or n)
        return list(out)

    def replace_input_with(self, old: Node, new) -> None:
        """Read `new` (a Node or a constant) wherever this node reads `old`."""
        fn = lambda n: new if n is old else n
        self._set_inputs(map_arg(self._args, fn), map_arg(self._kwargs, fn))

    def replace_all_uses_with(self, new) -> list:
        """Make every user of this node read `new` instead; returns the users changed."""
        users = list(self.users)
        for user in users:
            user.replace_input_with(self, new)
        return users

    # ---- order

    @property
    def prev(self) -> Node:
        return self._prev

    @property
    def next(self) -> Node:
        return self._next

    def _unlink(self) -> None:
        self._prev._next, self._next._prev = self._next, self._prev
        self._prev = self._next = self

    def prepend(self, x: Node) -> None:
        """Move node `x` (of the same graph) to just before this node (torch.fx semantics)."""
        if x is self:
            return
        x._unlink()
        p = self._prev
        p._next, x._prev, x._next, self._prev = x, p, self, x
        self.graph._version += 1

    def append(self, x: Node) -> None:
        """Move node `x` to just after this node."""
        self._next.prepend(x)

    # ---- meta

    @property
    def val(self) -> TensorMeta | None:
        return self.meta.get("val")

    def is_impure(self) -> bool:
        """Whether the node has an effect besides its value (dead-code elimination keeps it):
        placeholders and the output, in-place ops (an OpDef named `<op>_`, PyTorch's naming)
        and nodes marked `meta["side_effect"]`."""
        if self.op in ("placeholder", "output") or self.meta.get("side_effect"):
            return True
        return self.op == "call_function" and getattr(self.target, "name", "").endswith("_")

    def format(self) -> str:
        """One line of the graph's text form."""
        if self.op == "placeholder":
            return f"%{self.name} : {self.val} = placeholder"
        if self.op == "output":
            return f"return {_fmt(self.args[0])}"
        if self.op == "get_attr":
            return f"%{self.name} : {self.val} = get_attr[{self.target}]"
        op = self.target
        args = [_fmt(a) for a in self.args] + [f"{k}={_fmt(v)}"
                                               for k, v in non_default_kwargs(self).items()]
        line = f"%{self.name} : {self.val} = {getattr(op, 'name', op)}({', '.join(args)})"
        src = self.meta.get("source")
        return f"{line:<60}  # {src}" if src else line

    def __repr__(self) -> str:
        return f"%{self.name}"


class DynamicShapeError(RuntimeError):
    """An op whose output shape depends on tensor data (`OpDef.dynamic_shape`: nonzero,
    unique...), met where only metas are known: it has no static meta (capture breaks the
    graph before such an op)."""


def op_meta(op: OpDef, metas: tuple, attrs: dict):
    """The output TensorMeta of `op` on operand metas (TensorMeta or numbers) and canonical
    attributes: the registry's shape/dtype rules, or for a composite without a shape rule its
    decomposition evaluated on metas. Raises as eager would for operands that do not fit, and
    DynamicShapeError for a data-dependent shape."""
    if op.dynamic_shape:
        raise DynamicShapeError(f"{op.name}(): the output shape depends on the data; it has "
                                "no static meta")
    if op.decomp is not None and op.shape is None:
        def apply(o, inputs, a):
            return op_meta(o, inputs, o.canonical_attrs(inputs, a))

        return op.decomp(OpNamespace(apply), *metas, **attrs)
    return op.meta(metas, attrs)


def non_default_kwargs(node: Node) -> dict:
    """The attributes of a call_function node that differ from the op's defaults (printing)."""
    op = node.target
    if not isinstance(op, OpDef):
        return dict(node.kwargs)
    defaults = op.signature.parameters
    out = {}
    for k, v in node.kwargs.items():
        d = defaults[k].default if k in defaults else object()
        if not (v is d or _equal(v, d)) or isinstance(v, bool) != isinstance(d, bool):
            out[k] = v
    return out


def _equal(a, b) -> bool:
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # arrays and other objects without a truth value
        return False


def _fmt(v) -> str:
    if isinstance(v, Node):
        return f"%{v.name}"
    if isinstance(v, tuple):
        inner = ", ".join(_fmt(x) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(_fmt(x) for x in v) + "]"
    return repr(v)


def map_arg(a: Any, fn) -> Any:
    """Apply `fn` to every Node inside nested tuples/lists/dicts `a` (torch.fx.map_arg)."""
    if isinstance(a, Node):
        return fn(a)
    if isinstance(a, tuple):
        return tuple(map_arg(x, fn) for x in a)
    if isinstance(a, list):
        return [map_arg(x, fn) for x in a]
    if isinstance(a, dict):
        return {k: map_arg(v, fn) for k, v in a.items()}
    return a


class NodeList:
    """The ordered view `graph.nodes`: iterable (forward and reversed), sized, indexable.
    Iteration tolerates erasing the current node (as in torch.fx)."""

    __slots__ = ("_root",)

    def __init__(self, root: Node):
        self._root = root

    def __iter__(self) -> Iterator[Node]:
        return self._walk("_next")

    def __reversed__(self) -> Iterator[Node]:
        return self._walk("_prev")

    def _walk(self, step: str) -> Iterator[Node]:
        root = self._root
        cur = getattr(root, step)
        while cur is not root:
            nxt = getattr(cur, step)
            if not cur._erased:
                yield cur
            cur = nxt

    def __len__(self) -> int:
        return self._root.graph._len

    def __bool__(self) -> bool:
        return self._root._next is not self._root

    def __getitem__(self, i):
        return list(self)[i]

    def __contains__(self, node) -> bool:
        return isinstance(node, Node) and node.graph is self._root.graph and not node._erased

    def __repr__(self) -> str:
        return repr(list(self))


class Graph:
    """A doubly linked list of Nodes with unique readable names (`add`, `add_1`, ...).

    New nodes go at the insertion point: the end by default, or where `inserting_before(n)` /
    `inserting_after(n)` put it. `owning_module` is the `GraphModule` holding the values of
    `get_attr` nodes, if any.
    """

    def __init__(self, name: str = "graph"):
        self.name = name
        self._root = Node(None, "_root", "root", None)
        self._root.graph = self
        self._insert = self._root  # new nodes go just before this node
        self._used: set[str] = set()
        self._counts: dict[str, int] = {}
        self._len = 0
        self._version = 0
        self.owning_module = None

    @property
    def nodes(self) -> NodeList:
        return NodeList(self._root)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def __len__(self) -> int:
        return self._len

    # ---- names

    def _unique(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        if base[0].isdigit():
            base = "_" + base
        if keyword.iskeyword(base):
            base += "_"
        name, n = base, self._counts.get(base, 0)
        while name in self._used:
            n += 1
            name = f"{base}_{n}"
        self._counts[base] = n
        self._used.add(name)
        return name

    # ---- building

    @contextlib.contextmanager
    def inserting_before(self, node: Node | None = None):
        """New nodes go just before `node` (None: at the start) inside the `with` block."""
        old = self._insert
        self._insert = node if node is not None else self._root._next
        try:
            yield
        finally:
            self._insert = old

    @contextlib.contextmanager
    def inserting_after(self, node: Node | None = None):
        """New nodes go just after `node` (None: at the end), in order, inside the block."""
        old = self._insert
        self._insert = node._next if node is not None else self._root
        try:
            yield
        finally:
            self._insert = old

    def create_node(self, op, target, args=(), kwargs=None, name=None, meta=None) -> Node:
        """Create a node at the insertion point. Raises ValueError for an unknown `op`."""
        if op not in OPS:
            raise ValueError(f"unknown node op {op!r}; expected one of {', '.join(OPS)}")
        base = name or (target.name if isinstance(target, OpDef) else str(target))
        node = Node(self, self._unique(base), op, target, args, kwargs, meta)
        self._insert.prepend(node)
        self._len += 1
        return node

    def placeholder(self, name: str, val: TensorMeta | None = None) -> Node:
        return self.create_node("placeholder", name, name=name, meta={"val": val})

    def get_attr(self, qualified_name: str, val: TensorMeta | None = None) -> Node:
        """A node reading attribute `qualified_name` ("w", "layer.weight") of the owning
        GraphModule (a constant or parameter array)."""
        return self.create_node("get_attr", qualified_name,
                                name=qualified_name.replace(".", "_"), meta={"val": val})

    def call_function(self, op: OpDef, args, kwargs, val=None, source=None) -> Node:
        meta = {"val": val}
        if source:
            meta["source"] = source
        return self.create_node("call_function", op, args, kwargs, meta=meta)

    def call_op(self, op: OpDef, args: tuple, kwargs: dict | None = None, source=None) -> Node:
        """Bind a user-style call of `op` (Nodes or numbers as operands), canonicalise its
        attributes and record it with its output meta (raises as eager would on bad input)."""
        inputs, attrs = op.bind(tuple(args), dict(kwargs or {}))
        return self.call_bound(op, inputs, attrs, source=source)

    def call_bound(self, op: OpDef, inputs: tuple, attrs: dict, source=None) -> Node:
        """Record `op` on already bound operands and attributes (every Node operand must carry
        `meta["val"]`): attributes canonicalised, output meta from the registry rules."""
        metas = tuple(a.val if isinstance(a, Node) else a for a in inputs)
        attrs = op.canonical_attrs(metas, attrs)
        val = op_meta(op, metas, attrs)
        if isinstance(val, tuple):
            raise TypeError(f"{op.name} returns {len(val)} values and a node holds one: record "
                            "its decomposition (ir.symbolic_trace does)")
        return self.call_function(op, tuple(inputs), attrs, val=val, source=source)

    def output(self, values: tuple) -> Node:
        return self.create_node("output", "output", (tuple(values),), name="output")

    def node_copy(self, node: Node, arg_transform=lambda n: n) -> Node:
        """Copy `node` (of any graph) here, mapping its input Nodes through `arg_transform`."""
        args = map_arg(node.args, arg_transform)
        kwargs = map_arg(node.kwargs, arg_transform)
        return self.create_node(node.op, node.target, args, kwargs, name=node.name,
                                meta=dict(node.meta))

    def copy(self) -> tuple[Graph, dict]:
        """A copy of this graph and the map from old nodes to new ones."""
        g = Graph(self.name)
        env: dict[Node, Node] = {}
        for n in self.nodes:
            env[n] = g.node_copy(n, env.__getitem__)
        return g, env

    # ---- reading

    @property
    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "placeholder"]

    @property
    def output_node(self) -> Node:
        return next(n for n in reversed(self.nodes) if n.op == "output")

    def find_nodes(self, op: str, target=None) -> list[Node]:
        return [n for n in self.nodes if n.op == op and (target is None or n.target is target)]

    # ---- editing

    def erase_node(self, node: Node) -> None:
        """Remove `node`; raises RuntimeError when other nodes still read it."""
        if node.graph is not self or node._erased:
            raise RuntimeError(f"cannot erase %{node.name}: it is not a node of graph "
                               f"{self.name!r}")
        if node.users:
            raise RuntimeError(f"cannot erase %{node.name}: it still has users {list(node.users)}")
        for a in node.all_input_nodes:
            a.users.pop(node, None)
        if self._insert is node:
            self._insert = node._next
        node._prev._next, node._next._prev = node._next, node._prev  # iterators may still step
        node._erased = True
        self._len -= 1
        self._version += 1

    def eliminate_dead_code(self) -> int:
        """Remove nodes whose value nobody reads, keeping side effects (`Node.is_impure`);
        returns how many were removed."""
        removed = 0
        for node in reversed(self.nodes):
            if not node.users and not node.is_impure():
                self.erase_node(node)
                removed += 1
        return removed

    # ---- checking, printing, export (implemented in sibling modules)

    def lint(self) -> None:
        """Check use-def links, topological order, targets and meta; raises `GraphLintError`
        (a RuntimeError) naming each bad node and its problem."""
        from .lint import lint

        lint(self)

    def tabular(self) -> str:
        """A plain-text table of the nodes: opcode, name, target, args, kwargs, meta, source."""
        from .lint import tabular

        return tabular(self)

    def print_tabular(self, file=None) -> None:
        print(self.tabular(), file=file)

    def to_networkx(self):
        """A `networkx.DiGraph`: one vertex per node name (attributes: op, target, meta...),
        one edge per use (input -> user)."""
        from .drawing import to_networkx

        return to_networkx(self)

    def to_dot(self, groups: dict | None = None) -> str:
        """Graphviz DOT text; `groups` maps node names to fusion-group ids (colours)."""
        from .drawing import to_dot

        return to_dot(self, groups)

    def to_json(self) -> str:
        from .serialize import to_json

        return to_json(self)

    @staticmethod
    def from_json(text: str) -> Graph:
        """The Graph saved by `to_json`; raises `GraphFormatError` (ValueError) for unknown ops,
        dtypes or a corrupt file."""
        from .serialize import graph_from_json

        return graph_from_json(text)

    def __str__(self) -> str:
        params = ", ".join(f"{n.name}: {n.val}" for n in self.placeholders)
        lines = [f"{self.name}({params}):"]
        lines += ["    " + n.format() for n in self.nodes if n.op != "placeholder"]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {self._len} nodes>"
