"""`GraphModule`: a Graph plus the attributes its `get_attr` nodes read, printed as Python.

As torch.fx.GraphModule: `.code` is the graph as a Python module calling `eager` functions
(`import eager` is part of the generated text, so `ir` itself never imports `eager`); calling
the GraphModule runs that code (inputs and outputs are `eager.Tensor`s); each line's comment is
the user's file:line. The code is regenerated whenever the graph changed. Imports only `ir`.
"""

from __future__ import annotations

import itertools
import keyword
import linecache
import math
from types import SimpleNamespace

import numpy as np

from .dtypes import DType
from .graph import Graph, Node, non_default_kwargs
from .opdef import OpDef, is_number

_RESERVED = {"self", "eager", "math", "complex", "slice"}  # names the generated code uses
_counter = itertools.count()


class GraphModule:
    """`GraphModule(root, graph, class_name="GraphModule")`.

    `root`: a dict mapping qualified names ("w", "layer.weight") to values (numpy arrays, eager
    Tensors, numbers), or an object whose attributes are read, for every `get_attr` target of
    `graph`. Raises AttributeError naming a target that `root` does not have.
    """

    def __init__(self, root, graph: Graph, class_name: str = "GraphModule"):
        self.__dict__["_attrs"] = {}
        self.class_name = class_name
        self._graph = graph
        self._compiled_version = None
        self._forward = None
        graph.owning_module = self
        for node in graph.find_nodes("get_attr"):
            self.set_attr(node.target, _lookup(root, node.target))

    # ---- attributes

    def has_attr(self, qualified_name: str) -> bool:
        return qualified_name in self._attrs

    def get_attr(self, qualified_name: str):
        try:
            return self._attrs[qualified_name]
        except KeyError:
            raise AttributeError(f"GraphModule has no attribute {qualified_name!r}") from None

    def set_attr(self, qualified_name: str, value) -> None:
        """Store `value` under `qualified_name`, readable as `self.a.b` by the generated code."""
        if not all(p.isidentifier() for p in qualified_name.split(".")):
            raise ValueError(f"attribute name {qualified_name!r} is not a dotted identifier")
        self._attrs[qualified_name] = value
        obj, *path, last = [self] + qualified_name.split(".")
        for p in path:
            nxt = obj.__dict__.get(p)
            if nxt is None:
                nxt = SimpleNamespace()
                obj.__dict__[p] = nxt
            obj = nxt
        obj.__dict__[last] = value

    def del_attr(self, qualified_name: str) -> None:
        self._attrs.pop(qualified_name, None)
        obj, *path, last = [self] + qualified_name.split(".")
        for p in path:
            obj = obj.__dict__.get(p)
        obj.__dict__.pop(last, None)

    @property
    def attrs(self) -> dict:
        """Qualified name -> value of every attribute the graph may read."""
        return dict(self._attrs)

    # ---- graph and code

    @property
    def graph(self) -> Graph:
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        self._graph = g
        g.owning_module = self
        self._compiled_version = None

    @property
    def code(self) -> str:
        """Python source of the module: `import eager` and `def forward(self, <inputs>)`."""
        return python_code(self._graph)

    def recompile(self):
        """Generate and compile `.code` (done on demand whenever the graph changed)."""
        src = self.code
        filename = f"<wick-graph-{next(_counter)}>"
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        namespace: dict = {"__name__": f"wick_graph_{self._graph.name}"}
        exec(compile(src, filename, "exec"), namespace)  # noqa: S102  (code we generated)
        self._forward = namespace["forward"]
        self._compiled_version = self._graph._version
        return self._forward

    def forward(self, *args):
        if self._compiled_version != self._graph._version:
            self.recompile()
        return self._forward(self, *args)

    def __call__(self, *args):
        return self.forward(*args)

    def print_readable(self) -> str:
        print(self.code)
        return self.code

    def to_json(self) -> str:
        from .serialize import to_json

        return to_json(self)

    @staticmethod
    def from_json(text: str) -> GraphModule:
        from .serialize import module_from_json

        return module_from_json(text)

    def __str__(self) -> str:
        return self.code

    def __repr__(self) -> str:
        return f"<{self.class_name} {self._graph.name}: {len(self._graph)} nodes>"


def _lookup(root, qualified_name: str):
    if isinstance(root, dict):
        if qualified_name in root:
            return root[qualified_name]
        raise AttributeError(f"GraphModule root has no attribute {qualified_name!r}")
    obj = root
    for p in qualified_name.split("."):
        if not hasattr(obj, p):
            raise AttributeError(f"GraphModule root has no attribute {qualified_name!r}")
        obj = getattr(obj, p)
    return obj


# ---------------------------------------------------------------- code generation


def python_code(graph: Graph) -> str:
    """The graph as Python source calling `eager` functions (torch.fx's `graph.python_code`).

    Operands are positional, attributes keywords (only those that differ from the op's
    default); variadic ops get their operands as a list; `get_attr` values go through
    `eager.as_tensor`. Raises TypeError for a constant that has no Python literal.
    """
    names: dict[Node, str] = {}
    used = set(_RESERVED)

    def name_of(node: Node) -> str:
        base = node.name
        if keyword.iskeyword(base) or base in used:
            base += "_"
        n, cand = 0, base
        while cand in used:
            n += 1
            cand = f"{base}{n}"
        used.add(cand)
        names[node] = cand
        return cand

    def value(v) -> str:
        return literal(v, names)

    params = [name_of(n) for n in graph.placeholders]
    body = []
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            body.append(f"return {value(node.args[0])}")
            continue
        src = node.meta.get("source")
        if node.op == "get_attr":
            line = f"{name_of(node)} = eager.as_tensor(self.{node.target})"
        else:
            op: OpDef = node.target
            operands = [value(a) for a in node.args]
            if op.variadic:
                operands = ["[" + ", ".join(operands) + "]"]
            attrs = [f"{k}={value(v)}" for k, v in non_default_kwargs(node).items()]
            line = f"{name_of(node)} = eager.{op.name}({', '.join(operands + attrs)})"
        body.append(f"{line}  # {src}" if src else line)
    header = f"def forward({', '.join(['self'] + params)}):"
    doc = f'    """{graph.name}: generated from an ir.Graph by ir.graph_module."""'
    imports = ["import math", ""] if any("math." in b for b in body) else []
    return "\n".join(imports + ["import eager", "", "", header, doc]
                     + ["    " + b for b in body]) + "\n"


def literal(v, names: dict | None = None) -> str:
    """Python source for an argument: constants (numbers, strings, dtypes, tuples...) and, in
    `names`, Nodes (by variable name)."""
    if isinstance(v, Node) and names is not None:
        return names[v]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, float):
        if math.isnan(v):
            return "math.nan"
        if math.isinf(v):
            return "math.inf" if v > 0 else "-math.inf"
        return repr(v)
    if isinstance(v, complex):
        return f"complex({literal(v.real)}, {literal(v.imag)})"
    if is_number(v) or v is None or isinstance(v, str) or v is Ellipsis:
        return repr(v)
    if isinstance(v, DType):
        return f"eager.{v.name}"
    if isinstance(v, tuple):
        inner = ", ".join(literal(x, names) for x in v)
        return f"({inner},)" if len(v) == 1 else f"({inner})"
    if isinstance(v, list):
        return "[" + ", ".join(literal(x, names) for x in v) + "]"
    if isinstance(v, slice):
        return f"slice({literal(v.start)}, {literal(v.stop)}, {literal(v.step)})"
    raise TypeError(f"cannot write constant {v!r} of type {type(v).__name__} as Python source")
