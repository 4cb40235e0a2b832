"""Checking and tabulating a `Graph`: `Graph.lint()` and `Graph.print_tabular()`.

`lint` is torch.fx's `Graph.lint`: use-def links both ways, topological order, node kinds and
targets, and the meta every later stage relies on (`meta["val"]`); it reports every problem with
the node it was found on. Imports only `ir`.
"""

from __future__ import annotations

from .graph import OPS, Graph, Node, _fmt, map_arg
from .opdef import REGISTRY, OpDef, TensorMeta


class GraphLintError(RuntimeError):
    """A malformed graph. `problems` lists (node name, problem) pairs, in graph order."""

    def __init__(self, graph_name: str, problems: list):
        self.problems = problems
        lines = "\n".join(f"  %{n}: {p}" for n, p in problems)
        super().__init__(f"graph {graph_name!r} is malformed ({len(problems)} problem(s)):\n"
                         f"{lines}")


def lint(graph: Graph) -> None:
    """Raise `GraphLintError` listing every problem found; return None for a sound graph."""
    problems: list = []
    seen: set[Node] = set()
    names: set[str] = set()
    outputs = []
    module = graph.owning_module
    for node in graph.nodes:
        bad = lambda msg, n=node: problems.append((n.name, msg))
        if node.graph is not graph:
            bad("belongs to another graph")
        if node.name in names:
            bad("name used by an earlier node")
        names.add(node.name)
        if node.op not in OPS:
            bad(f"unknown op {node.op!r} (expected one of {', '.join(OPS)})")
            continue
        for a in _inputs(node):
            if a.graph is not graph or a._erased:
                bad(f"reads %{a.name}, which is not a node of this graph")
            elif a not in seen:
                bad(f"reads %{a.name} before it is defined (not in topological order)")
            if node not in a.users:
                bad(f"reads %{a.name} but is missing from %{a.name}.users")
        for u in node.users:
            if u.graph is not graph or u._erased:
                bad(f"users lists %{u.name}, which is not a node of this graph")
            elif node not in _inputs(u):
                bad(f"users lists %{u.name}, which does not read it")
        if node.op == "call_function":
            op = node.target
            if not isinstance(op, OpDef):
                bad(f"call_function target {op!r} is not an OpDef")
            elif REGISTRY.get(op.name) is not op:
                bad(f"call_function target {op.name!r} is not the registry's op of that name")
        elif node.op == "get_attr":
            if not isinstance(node.target, str) or not node.target:
                bad(f"get_attr target {node.target!r} is not an attribute name")
            elif module is not None and not module.has_attr(node.target):
                bad(f"get_attr target {node.target!r} is not an attribute of the GraphModule")
        elif node.op == "output":
            outputs.append(node)
            if len(node.args) != 1 or not isinstance(node.args[0], tuple):
                bad("output args must be one tuple of returned values")
        if node.op != "output" and not isinstance(node.val, TensorMeta):
            bad(f"meta['val'] is {node.val!r}, expected a TensorMeta")
        seen.add(node)
    if len(outputs) != 1:
        problems.append((graph.name, f"expected exactly one output node, found {len(outputs)}"))
    elif graph._root._prev is not outputs[0]:
        problems.append((outputs[0].name, "the output node is not the last node"))
    if problems:
        raise GraphLintError(graph.name, problems)


def _inputs(node: Node) -> list:
    out: list = []
    map_arg((node.args, tuple(node.kwargs.values())), lambda n: out.append(n) or n)
    return out


def tabular(graph: Graph) -> str:
    """The nodes as a plain-text table (torch.fx's print_tabular, without `tabulate`)."""
    head = ("opcode", "name", "target", "args", "kwargs", "val", "source")
    rows = [head]
    for n in graph.nodes:
        target = getattr(n.target, "name", n.target)
        rows.append((n.op, n.name, str(target), _fmt(n.args), _kwargs(n.kwargs),
                     str(n.val) if n.val is not None else "", n.meta.get("source", "")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _kwargs(kw: dict) -> str:
    return "{" + ", ".join(f"{k}: {_fmt(v)}" for k, v in kw.items()) + "}"
