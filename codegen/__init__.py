"""codegen: turns an `ir.Graph` into a callable of fused kernels and library calls.

`compile_graph(graph, backend)` is the one entry point the capture layer uses. The "llvm"
backend partitions the graph into fusion groups (`codegen.partition`), lowers each to a
`Kernel` (`codegen.kernel`), prints it as LLVM IR (`codegen.llvm`), optimises and JIT-compiles
it (`codegen.jit`) and wires the plan as a `CompiledGraph` (`codegen.compiled`); what it does not
fuse runs through `ir.interpreter` on numpy. The "cuda" backend (`codegen.cuda_compiled`) uses
the same partition and kernel IR, prints CUDA C (`codegen.cuda_render`, `codegen.cuda`) and
launches it through cupy (imported on the first call only). The "eager" backend runs
`ir.Interpreter`.
codegen imports only `ir` (never `eager`, never `capture`): it sees graphs and numpy arrays.
"""

from __future__ import annotations

from .compiled import STAGES, CompiledGraph, EagerGraph
from .kernel import Kernel
from .partition import FusionGroup, LibraryCall, Partition, partition

BACKENDS = ("llvm", "cuda", "eager")


def compile_graph(graph, backend: str = "llvm"):
    """Compile `graph` (an `ir.Graph` whose nodes carry `meta["val"]`) for `backend`.

    Returns a `CompiledGraph` ("llvm"), a `CudaGraph` ("cuda": arrays are cupy arrays) or an
    `EagerGraph` ("eager") with the same interface:
    `graph`, `kernels`, `steps`, `__call__(*arrays) -> tuple`, `dump(stage)`. Raises ValueError
    for an unknown backend.
    """
    if backend == "llvm":
        return CompiledGraph(graph)
    if backend == "eager":
        return EagerGraph(graph)
    if backend == "cuda":
        from .cuda_compiled import CudaGraph

        return CudaGraph(graph)
    raise ValueError(f"unknown codegen backend {backend!r}; expected one of {BACKENDS}")


__all__ = [
    "BACKENDS", "STAGES", "CompiledGraph", "EagerGraph", "FusionGroup", "Kernel", "LibraryCall",
    "Partition", "compile_graph", "partition",
]
