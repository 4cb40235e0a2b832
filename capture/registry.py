"""The record of every function compiled in this process, for `wick dump` and `explain`.

`COMPILED` lists each `CompiledFunction` that captured at least once (in first-capture order);
its entries hold the artifacts: guards text, graph, compiled graph (fusion/kernels/llvm dumps),
break reasons, recompile reasons. `reset()` in `capture/__init__.py` clears it. Touches nothing
else.
"""

from __future__ import annotations

COMPILED: list = []


def note(compiled_function) -> None:
    """Add a CompiledFunction to the registry (once)."""
    if not any(cf is compiled_function for cf in COMPILED):
        COMPILED.append(compiled_function)
