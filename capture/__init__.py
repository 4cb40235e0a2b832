"""capture: `@compile` captures a Python function's bytecode into a guarded, cached graph.

Public API (PyTorch's `torch.compile` / `torch._dynamo` names and semantics):

- `compile(fn=None, *, backend="auto", fullgraph=False, dynamic=None)`: a wrapper that, on each
  call, checks the guards of its cache entries, runs the hit, or captures `fn` for these
  arguments (symbolic bytecode interpretation into an `ir.Graph`), compiles the graph with the
  backend ("auto": llvm on the CPU; "eager": the IR interpreter; "llvm"; "cuda"; or a callable
  `graph -> callable`) and caches it. A graph break runs the call eagerly (resume functions come
  later); `fullgraph=True` raises `Unsupported` instead.
- `explain(fn)(*args, **kwargs)`: graphs, ops and graph-break reasons of one call.
- `reset()`: clears every cache. `graph_break()`: forces a graph break where it is called.
  `disable(fn)`: `fn` always runs eagerly, also when called from compiled code.
- `registry.COMPILED`: every compiled function's artifacts (for `wick dump`).

Module map: `symbolic` (the interpreter), `calls` (calls, attributes, operators), `variables`
(trackers), `guards`, `compiler` (cache entries), `backends`, `cli` (`wick dump`).
Imports `eager`, `ir`, and `codegen` (lazily); only `eager.compile` imports capture.
"""

from __future__ import annotations

import functools

from . import config, registry
from .backends import BACKENDS
from .compiler import CompiledFunction
from .symbolic import BreakReason, GraphBreak, Unsupported  # noqa: F401

__all__ = ["compile", "explain", "reset", "graph_break", "disable", "Unsupported",
           "BreakReason", "ExplainOutput", "registry", "config"]


def compile(fn=None, *, backend="auto", fullgraph=False, dynamic=None):  # noqa: A001
    """Compile `fn` (usable as `@compile`, `@compile(backend="eager")`, `compile(fn)`).

    Raises ValueError for an unknown backend name. `dynamic` is accepted for PyTorch
    compatibility; every shape is static in this version.
    """
    if not (callable(backend) or backend in BACKENDS):
        raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS} or a "
                         "callable")
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph,
                                 dynamic=dynamic)
    if getattr(fn, "__wick_compiled__", None) is not None:
        fn = fn.__wrapped__
    if not hasattr(fn, "__code__"):
        raise TypeError(f"capture.compile expects a Python function, got {type(fn).__name__}")
    compiled = CompiledFunction(fn, backend, fullgraph, dynamic)
    if getattr(fn, "__wick_disable__", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return compiled(*args, **kwargs)

    wrapper.__wick_compiled__ = compiled
    return wrapper


def reset() -> None:
    """Forget every captured entry of every compiled function (and the dump registry)."""
    for cf in registry.COMPILED:
        cf.clear()
    registry.COMPILED.clear()


def graph_break() -> None:
    """Inside a compiled function: end capture here (the call runs eagerly). Eagerly: no-op."""


graph_break.__wick_graph_break__ = True


def disable(fn=None):
    """Mark `fn` to always run eagerly: compiling it returns it unchanged, and a call to it
    from compiled code is a graph break."""
    if fn is None:
        return disable
    if getattr(fn, "__wick_compiled__", None) is not None:
        fn = fn.__wrapped__

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)

    wrapper.__wick_disable__ = True
    return wrapper


class ExplainOutput:
    """What `explain(fn)(*args)` found: graphs, graph breaks and their reasons, ops per graph."""

    def __init__(self, compiled: CompiledFunction, result):
        self.result = result
        entries = compiled.entries
        self.graphs = [e.graph for e in entries if e.graph is not None]
        self.graph_count = len(self.graphs)
        self.break_reasons = list(compiled.break_reasons)
        self.graph_break_count = len(self.break_reasons)
        self.ops_per_graph = [[n.target.name for n in g.nodes if n.op == "call_function"]
                              for g in self.graphs]
        self.guards = [e.guards_text for e in entries]
        self.compile_ms = [e.compile_ms for e in entries]
        self.name = compiled.name

    def __str__(self) -> str:
        lines = [f"explain({self.name}): {self.graph_count} graph(s), "
                 f"{self.graph_break_count} graph break(s)"]
        for i, (ops, ms) in enumerate(zip(self.ops_per_graph, self.compile_ms)):
            lines.append(f"  graph {i}: {len(ops)} ops ({', '.join(ops)}), "
                         f"captured in {ms:.1f} ms")
        for i, r in enumerate(self.break_reasons):
            lines.append(f"  break {i}: {r.reason}")
            lines.append(f"    at {r.filename}:{r.lineno} ({r.instruction}): {r.source_line}")
        return "\n".join(lines)

    __repr__ = __str__


def explain(fn, backend="eager"):
    """`explain(fn)(*args, **kwargs)` captures and runs one call on a private cache and
    returns an `ExplainOutput`; compiled functions' caches are left untouched."""
    if getattr(fn, "__wick_compiled__", None) is not None:
        fn = fn.__wrapped__

    def run(*args, **kwargs):
        compiled = CompiledFunction(fn, backend, register=False)
        result = compiled(*args, **kwargs)
        return ExplainOutput(compiled, result)

    return run
