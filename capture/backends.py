"""Backends: how a captured `ir.Graph` becomes something that runs, and the two ways to run it.

`compile_graph(graph, backend)` returns a `CompiledGraph`-like callable (arrays in, tuple of
arrays out, `dump(stage)`, `kernels`): codegen's (`codegen.compile_graph`: "llvm", "cuda", and
"eager", the IR interpreter behind the same interface). `run_with_autograd` runs a graph
through eager ops instead, so that when inputs require grad the gradients are eager's exactly.
Touches `codegen` (one function), `eager`.
"""

from __future__ import annotations

import codegen
from eager import dispatch
from eager.grad_mode import set_grad_enabled
from ir import Graph
from ir.autodiff import composites
from ir.graph import map_arg

BACKENDS = ("auto", "eager", "llvm", "cuda")


def resolve(backend, device: str):
    """The concrete backend name for "auto" (by the inputs' device)."""
    if backend == "auto":
        return "cuda" if str(device).startswith("cuda") else "llvm"
    return backend


def compile_graph(graph: Graph, backend, device: str = "cpu"):
    """Compile `graph` with `backend` (a name or a callable `graph -> callable`).

    Raises whatever the backend raises; the caller falls back to eager.
    """
    if callable(backend):
        return backend(graph)
    return codegen.compile_graph(graph, backend=resolve(backend, device))


def run_with_autograd(graph: Graph, inputs: tuple) -> tuple:
    """Run `graph` on eager Tensors through `eager.dispatch.apply`, recording autograd history
    (each node under the grad mode it was captured in). The result of a composite's
    decomposition is the composite applied whole (`ir.autodiff.composites`), so that eager
    records it as it records the plain call (one node with its own backward where it has one)."""
    env = {}
    it = iter(inputs)
    for node in graph.nodes:
        if node.op == "placeholder":
            env[node] = next(it)
        elif node.op == "output":
            return tuple(map_arg(node.args[0], env.__getitem__))
        else:
            marks = composites(node)
            op, args, attrs = marks[0] if marks else (node.target, node.args, node.kwargs)
            args = map_arg(args, env.__getitem__)
            with set_grad_enabled(node.meta.get("grad_enabled", True)):
                env[node] = dispatch.apply(op, args, dict(attrs))
    raise RuntimeError("graph has no output node")
