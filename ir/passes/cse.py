"""Common-subexpression elimination: a node computing what an earlier node computes (same op,
same inputs, same attributes, same grad mode) is replaced by the earlier one. Constants compare
by type and value (`add(x, 1)` and `add(x, 1.0)` differ in dtype; so do 0.0 and -0.0).
Impure nodes are never merged. Imports only `ir`.
"""

from __future__ import annotations

from ..graph import Node
from .dce import graph_of


class _Unhashable(Exception):
    pass


def freeze(v):
    """A hashable key for an argument: Nodes by identity, numbers by (type, repr)."""
    if isinstance(v, Node):
        return ("node", v)
    if isinstance(v, (bool, int, float, complex)):
        return (type(v).__name__, repr(v))
    if isinstance(v, tuple):
        return ("tuple",) + tuple(freeze(x) for x in v)
    if isinstance(v, list):
        return ("list",) + tuple(freeze(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, freeze(x)) for k, x in sorted(v.items()))
    try:
        hash(v)
    except TypeError:
        raise _Unhashable from None
    return ("obj", type(v).__name__, v)


def cse(module, grad_mode: bool = True) -> int:
    """Merge repeated computations in place; returns how many nodes were removed. With
    `grad_mode` False, nodes recorded under different grad modes merge too (a graph that is
    only executed, never differentiated again: the values are equal)."""
    graph = graph_of(module)
    seen: dict = {}
    removed = 0
    for node in graph.nodes:
        if node.op not in ("call_function", "get_attr") or node.is_impure():
            continue
        try:
            key = (node.op, node.target if node.op == "get_attr" else id(node.target),
                   freeze(node.args), freeze(node.kwargs),
                   node.meta.get("grad_enabled") if grad_mode else None)
        except _Unhashable:
            continue
        first = seen.get(key)
        if first is None:
            seen[key] = node
            continue
        node.replace_all_uses_with(first)
        graph.erase_node(node)
        removed += 1
    return removed
