"""A small subgraph rewriter (torch.fx.subgraph_rewriter.replace_pattern).

The pattern and the replacement are Python functions traced by `ir.symbolic_trace` (written
with operators/methods on their tensor parameters, or against `F`); the pattern's parameters
match any value (a node or a constant), the same parameter the same value. Attributes are
compared after canonicalisation against the matched node's operands (`sum(x, dim=-1)` matches
`sum(%t, dim=(1,))` on a 2-d `%t`). A match whose inner nodes are read outside the match is
skipped. Imports only `ir`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..graph import Graph, Node
from .cse import _Unhashable, freeze
from .dce import graph_of


@dataclass
class Match:
    """`anchor`: the graph node matched by the pattern's returned node; `nodes_map`: pattern
    node -> graph node; `bindings`: the graph value bound to each pattern parameter."""

    anchor: Node
    nodes_map: dict = field(default_factory=dict)
    bindings: list = field(default_factory=list)


def _trace(fn) -> Graph:
    from ..graph_module import GraphModule
    from ..tracer import symbolic_trace

    if isinstance(fn, GraphModule):
        return fn.graph
    if isinstance(fn, Graph):
        return fn
    return symbolic_trace(fn).graph


def _returned(graph: Graph, what: str):
    outs = graph.output_node.args[0]
    if len(outs) != 1:
        raise ValueError(f"replace_pattern: the {what} must return exactly one value, "
                         f"got {len(outs)}")
    return outs[0]


def _same_const(a, b) -> bool:
    try:
        return freeze(a) == freeze(b)
    except _Unhashable:
        return False


def _match(pn, gv, m: Match, binds: dict) -> bool:
    if isinstance(pn, Node) and pn.op == "placeholder":
        if pn in binds:
            bound = binds[pn]
            return bound is gv if isinstance(bound, Node) else _same_const(bound, gv)
        binds[pn] = gv
        return True
    if not isinstance(pn, Node):
        return not isinstance(gv, Node) and _same_const(pn, gv)
    if pn.op != "call_function" or not isinstance(gv, Node) or gv.op != "call_function" \
            or gv.target is not pn.target or len(pn.args) != len(gv.args):
        return False
    if pn in m.nodes_map:
        return m.nodes_map[pn] is gv
    if gv in m.nodes_map.values():
        return False
    metas = tuple(a.val if isinstance(a, Node) else a for a in gv.args)
    try:
        want = pn.target.canonical_attrs(metas, dict(pn.kwargs))
    except (TypeError, ValueError, IndexError, RuntimeError):  # attrs do not fit these operands
        return False
    if set(want) != set(gv.kwargs) or not all(_same_const(want[k], gv.kwargs[k]) for k in want):
        return False
    m.nodes_map[pn] = gv
    return all(_match(pa, ga, m, binds) for pa, ga in zip(pn.args, gv.args))


def replace_pattern(module, pattern, replacement) -> list:
    """Replace every non-overlapping occurrence of `pattern` in `module` (a GraphModule or
    Graph) by `replacement`, in graph order; returns the list of `Match`es replaced.

    Both functions take the same number of tensor parameters and return one value. Raises
    ValueError otherwise.
    """
    graph = graph_of(module)
    pat, rep = _trace(pattern), _trace(replacement)
    if pat.find_nodes("get_attr") or rep.find_nodes("get_attr"):
        raise ValueError("replace_pattern: patterns cannot hold array constants (get_attr)")
    pat_ph, rep_ph = pat.placeholders, rep.placeholders
    if len(pat_ph) != len(rep_ph):
        raise ValueError(f"replace_pattern: the pattern has {len(pat_ph)} parameter(s), the "
                         f"replacement {len(rep_ph)}")
    anchor = _returned(pat, "pattern")
    rep_out = _returned(rep, "replacement")
    if not isinstance(anchor, Node) or anchor.op != "call_function":
        raise ValueError("replace_pattern: the pattern must return the result of an op")
    matches = []
    for node in list(graph.nodes):
        if node._erased or node.op != "call_function" or node.target is not anchor.target:
            continue
        m, binds = Match(node), {}
        if not _match(anchor, node, m, binds):
            continue
        inside = set(m.nodes_map.values())
        if any(u not in inside for n in inside if n is not node for u in n.users):
            continue
        m.bindings = [binds.get(p) for p in pat_ph]
        _substitute(graph, m, rep, rep_ph, rep_out)
        matches.append(m)
    return matches


def _substitute(graph: Graph, m: Match, rep: Graph, rep_ph: list, rep_out) -> None:
    env: dict = dict(zip(rep_ph, m.bindings))
    src = m.anchor.meta.get("source")
    grad = m.anchor.meta.get("grad_enabled")
    with graph.inserting_before(m.anchor):
        for rn in rep.nodes:
            if rn.op != "call_function":
                continue
            args = tuple(env[a] if isinstance(a, Node) else a for a in rn.args)
            node = graph.call_bound(rn.target, args, dict(rn.kwargs), source=src)
            if grad is not None:
                node.meta["grad_enabled"] = grad
            env[rn] = node
    m.anchor.replace_all_uses_with(env[rep_out] if isinstance(rep_out, Node) else rep_out)
    pending = list(m.nodes_map.values())
    while pending:
        n = next((n for n in pending if not n.users), None)
        if n is None:
            break
        graph.erase_node(n)
        pending.remove(n)
