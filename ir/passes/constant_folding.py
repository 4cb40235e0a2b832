"""Constant folding: a call_function node whose inputs are all constants (get_attr values of the
GraphModule, or nodes already folded) is computed once at compile time and replaced by a new
`get_attr` constant (torch.fx.experimental.const_fold, in small). Values that require grad
(parameters being trained) are not constants. Imports only `ir`.
"""

from __future__ import annotations

from ..execute import array_meta
from ..graph import Node, map_arg
from ..interpreter import Interpreter
from .dce import graph_of


def fold_constants(module) -> int:
    """Fold in place; returns how many call_function nodes were computed at compile time.

    `module`: a GraphModule (or a Graph owned by one: the folded values are stored as its
    attributes `_folded_<node name>`). Raises TypeError for a graph without a GraphModule.
    """
    graph = graph_of(module)
    gm = graph.owning_module
    if gm is None:
        raise TypeError("fold_constants needs a GraphModule to hold the folded values; "
                        "wrap the graph with ir.GraphModule(attrs, graph)")
    interp = Interpreter(gm)
    consts: dict[Node, object] = {}
    folded: list[Node] = []
    for node in graph.nodes:
        if node.op == "get_attr":
            value = gm.get_attr(node.target)
            if not getattr(value, "requires_grad", False):
                consts[node] = interp.get_attr(node.target, (), {})
        elif node.op == "call_function" and not node.is_impure() and node.all_input_nodes \
                and all(a in consts for a in node.all_input_nodes):
            interp.current_node = node
            consts[node] = interp.call_function(node.target, map_arg(node.args, consts.get),
                                                map_arg(node.kwargs, consts.get))
            folded.append(node)
    done = set(folded)
    read_before = {n.target for n in consts if n.op == "get_attr"}
    for node in folded:
        if all(u in done for u in node.users):
            continue
        name = f"_folded_{node.name}"
        while gm.has_attr(name):
            name += "_"
        gm.set_attr(name, consts[node])
        with graph.inserting_before(node):
            const = graph.get_attr(name, array_meta(consts[node]))
        if "source" in node.meta:
            const.meta["source"] = node.meta["source"]
        node.replace_all_uses_with(const)
    graph.eliminate_dead_code()
    still_read = {n.target for n in graph.find_nodes("get_attr")}
    for name in read_before - still_read:
        gm.del_attr(name)
    return len(folded)
