"""`eager._dynamo` (`torch._dynamo`, private in PyTorch but called by its tutorials and
scripts: `torch._dynamo.reset()`, `torch._dynamo.explain(fn)(*args)`,
`torch._dynamo.graph_break()`, `torch._dynamo.disable`): the same helpers as
`eager.compiler`, delegating to `capture` on first use (`ir <- eager <- capture`).
"""

from __future__ import annotations

from .compiler import disable, reset

__all__ = ["disable", "explain", "graph_break", "reset"]


def explain(fn, *args, **kwargs):
    """`torch._dynamo.explain(fn)(*args)`: the graphs, breaks and reasons of one call
    (`capture.explain`; also `explain(fn, *args)`, the older form)."""
    import capture  # lazy: capture imports eager (ir <- eager <- capture)

    run = capture.explain(fn)
    return run(*args, **kwargs) if args or kwargs else run


def graph_break() -> None:
    """Inside a compiled function: end the graph here (a no-op when run eagerly)."""


graph_break.__wick_graph_break__ = True  # (capture's marker, as capture.graph_break)
