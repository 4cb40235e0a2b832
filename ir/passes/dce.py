"""Dead-code elimination that keeps side effects (torch.fx's `eliminate_dead_code`).

A node is kept when something reads it or when it is impure (`Node.is_impure`: placeholders,
the output, in-place ops named `<op>_`, nodes marked `meta["side_effect"]`). Imports only `ir`.
"""

from __future__ import annotations

from ..graph import Graph


def graph_of(module) -> Graph:
    """The Graph of a Graph or GraphModule; TypeError for anything else."""
    if isinstance(module, Graph):
        return module
    graph = getattr(module, "graph", None)
    if not isinstance(graph, Graph):
        raise TypeError(f"expected an ir.Graph or ir.GraphModule, got {type(module).__name__}")
    return graph


def dce(module) -> int:
    """Remove every node whose value nobody reads and that has no side effect, repeatedly
    (a chain of dead nodes goes at once); returns how many nodes were removed."""
    return graph_of(module).eliminate_dead_code()
