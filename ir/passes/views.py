"""Drop views that change nothing: a reshape/view/expand/broadcast_to to its operand's own shape
and dtype is the operand itself (no node, no library call).

A peephole both backward mechanisms run on what a backward rule recorded: AOT backward graphs
(`ir.autodiff.build_backward`) and eager's per-node backward plans (`eager/autograd/plans.py`).
Imports only `ir`.
"""

from __future__ import annotations

from ..graph import Graph, Node
from .dce import graph_of

NOOP_WHEN_SHAPE_KEPT = frozenset({"reshape", "view", "expand", "broadcast_to"})


def _kept(node: Node) -> bool:
    if node.op != "call_function" or getattr(node.target, "name", None) not in \
            NOOP_WHEN_SHAPE_KEPT or not node.args or not isinstance(node.args[0], Node):
        return False
    src, out = node.args[0].meta.get("val"), node.meta.get("val")
    return src is not None and out is not None and tuple(src.shape) == tuple(out.shape) and \
        src.dtype is out.dtype


def drop_noop_views(module) -> int:
    """Replace every view of an operand to its own shape and dtype by the operand (then erase
    it); returns how many nodes went."""
    graph: Graph = graph_of(module)
    gone = 0
    for node in list(graph.nodes):
        if _kept(node):
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
            gone += 1
    return gone
