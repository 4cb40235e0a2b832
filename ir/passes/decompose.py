"""Decomposition of composite ops into primitives, through each op's registry `decomp`.

The decomposition runs against a recording `OpNamespace` (the symbolic tracer's), with proxies
of the composite's operands (so `x.shape` works), inserting the primitives just before the
composite node; nested composites are expanded as they are met. The new nodes inherit the
composite's `source` and grad mode. Imports only `ir`.
"""

from __future__ import annotations

from ..graph import Node
from ..opdef import OpDef, OpNamespace
from ..tracer import Proxy, Tracer
from .dce import graph_of


def decompose(module, ops=None) -> int:
    """Replace every composite node (an OpDef with a `decomp`; only those in `ops`, names or
    OpDefs, when given) by its primitives; returns how many composite nodes were expanded.

    Raises TypeError when a decomposition returns several values (a multi-output composite
    cannot be a single node's value) and TraceError when the operands' meta is unknown.
    """
    graph = graph_of(module)
    wanted = None if ops is None else {o.name if isinstance(o, OpDef) else o for o in ops}

    def selected(op: OpDef) -> bool:
        return op.decomp is not None and (wanted is None or op.name in wanted)

    count = 0
    for node in list(graph.nodes):
        if node.op == "call_function" and selected(node.target):
            _expand(graph, node, selected)
            count += 1
    return count


def _expand(graph, node: Node, selected) -> None:
    tracer = Tracer(graph, source=node.meta.get("source"))
    created: list[Node] = []

    def apply(op, inputs, attrs):
        if selected(op):
            metas = tuple(x.node.val if isinstance(x, Proxy) else x for x in inputs)
            return op.decomp(ns, *inputs, **op.canonical_attrs(metas, attrs))
        p = tracer.record(op, inputs, attrs)
        created.append(p.node)
        return p

    ns = OpNamespace(apply)
    operands = tuple(tracer.proxy(a) if isinstance(a, Node) else a for a in node.args)
    with graph.inserting_before(node):
        out = node.target.decomp(ns, *operands, **node.kwargs)
    multi = isinstance(out, (tuple, list))
    if not multi:
        for n in created:
            if "grad_enabled" in node.meta:
                n.meta["grad_enabled"] = node.meta["grad_enabled"]
        node.replace_all_uses_with(out.node if isinstance(out, Proxy) else out)
        graph.erase_node(node)
    for n in reversed(created):  # primitives the decomposition computed but did not use
        if not n.users and not n._erased:
            graph.erase_node(n)
    if multi:
        raise TypeError(f"cannot decompose %{node.name}: {node.target.name} returns "
                        f"{len(out)} values, a graph node holds one")
