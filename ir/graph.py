"""An FX-like graph IR: a `Graph` is an ordered list of `Node`s.

`Node.op` is one of `placeholder` (a graph input), `call_function` (target: a registry
`OpDef`), `output` (args[0]: the tuple of returned values). `args` hold Nodes and Python
constants; `kwargs` hold the op's attributes; `meta["val"]` is the output's `TensorMeta` and
`meta["source"]` the user's "file:line" that produced it. Printing follows torch.fx's text form,
shortened. Imports only `ir`.
"""

from __future__ import annotations

from typing import Any, Iterator

from .opdef import OpDef, TensorMeta


class Node:
    """One value of the graph. `users` maps each Node that reads this one to None (FX style)."""

    __slots__ = ("graph", "name", "op", "target", "args", "kwargs", "meta", "users")

    def __init__(self, graph, name, op, target, args=(), kwargs=None, meta=None):
        self.graph = graph
        self.name = name
        self.op = op
        self.target = target
        self.args = tuple(args)
        self.kwargs = dict(kwargs or {})
        self.meta = dict(meta or {})
        self.users: dict[Node, None] = {}
        for a in self.all_input_nodes:
            a.users[self] = None

    @property
    def all_input_nodes(self) -> list:
        out = []
        map_arg((self.args, tuple(self.kwargs.values())), lambda n: out.append(n) or n)
        return out

    @property
    def val(self) -> TensorMeta | None:
        return self.meta.get("val")

    def replace_all_uses_with(self, new: "Node") -> None:
        for user in list(self.users):
            user.args = map_arg(user.args, lambda n: new if n is self else n)
            user.kwargs = map_arg(user.kwargs, lambda n: new if n is self else n)
            new.users[user] = None
        self.users.clear()

    def format(self) -> str:
        """One line of the graph's text form."""
        if self.op == "placeholder":
            return f"%{self.name} : {self.val} = placeholder"
        if self.op == "output":
            return f"return {_fmt(self.args[0])}"
        op: OpDef = self.target
        args = [_fmt(a) for a in self.args]
        defaults = op.signature.parameters
        for k, v in self.kwargs.items():
            d = defaults[k].default if k in defaults else object()
            if not (v is d or v == d) or isinstance(v, bool) != isinstance(d, bool):
                args.append(f"{k}={_fmt(v)}")
        line = f"%{self.name} : {self.val} = {op.name}({', '.join(args)})"
        src = self.meta.get("source")
        return f"{line:<60}  # {src}" if src else line

    def __repr__(self) -> str:
        return f"%{self.name}"


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


class Graph:
    """An ordered list of Nodes with unique readable names (`add`, `add_1`, ...)."""

    def __init__(self, name: str = "graph"):
        self.name = name
        self.nodes: list[Node] = []
        self._names: dict[str, int] = {}

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def _unique(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base) or "v"
        if base[0].isdigit():
            base = "_" + base
        n = self._names.get(base)
        self._names[base] = 0 if n is None else n + 1
        return base if n is None else f"{base}_{n + 1}"

    def create_node(self, op, target, args=(), kwargs=None, name=None, meta=None) -> Node:
        base = name or (target.name if isinstance(target, OpDef) else str(target))
        node = Node(self, self._unique(base), op, target, args, kwargs, meta)
        self.nodes.append(node)
        return node

    def placeholder(self, name: str, val: TensorMeta) -> Node:
        return self.create_node("placeholder", name, name=name, meta={"val": val})

    def call_function(self, op: OpDef, args, kwargs, val=None, source=None) -> Node:
        meta = {"val": val}
        if source:
            meta["source"] = source
        return self.create_node("call_function", op, args, kwargs, meta=meta)

    def call_op(self, op: OpDef, args: tuple, kwargs: dict | None = None, source=None) -> Node:
        """Bind a user-style call of `op` (Nodes or numbers as operands), canonicalise its
        attributes and record it with its output meta (raises as eager would on bad input)."""
        inputs, attrs = op.bind(tuple(args), dict(kwargs or {}))
        metas = tuple(a.val if isinstance(a, Node) else a for a in inputs)
        attrs = op.canonical_attrs(metas, attrs)
        return self.call_function(op, inputs, attrs, val=op.meta(metas, attrs), source=source)

    def output(self, values: tuple) -> Node:
        return self.create_node("output", "output", (tuple(values),), name="output")

    @property
    def placeholders(self) -> list[Node]:
        return [n for n in self.nodes if n.op == "placeholder"]

    @property
    def output_node(self) -> Node:
        return next(n for n in reversed(self.nodes) if n.op == "output")

    def erase_node(self, node: Node) -> None:
        if node.users:
            raise RuntimeError(f"cannot erase %{node.name}: it still has users {list(node.users)}")
        for a in node.all_input_nodes:
            a.users.pop(node, None)
        self.nodes.remove(node)

    def eliminate_dead_code(self) -> int:
        """Remove call_function nodes whose value nobody reads; returns how many were removed."""
        removed = 0
        for node in reversed(list(self.nodes)):
            if node.op == "call_function" and not node.users:
                self.erase_node(node)
                removed += 1
        return removed

    def __str__(self) -> str:
        params = ", ".join(f"{n.name}: {n.val}" for n in self.placeholders)
        lines = [f"{self.name}({params}):"]
        lines += ["    " + n.format() for n in self.nodes if n.op != "placeholder"]
        return "\n".join(lines)

    def __len__(self) -> int:
        return len(self.nodes)
