"""`capture.explain(fn)(*args)`: what capture made of one call, as data and as text.

Aggregates the compiled function and every function compiled on its behalf (resume functions,
callees that broke while inlined): graphs (non-empty ones), graph breaks with their stable id,
file:line, source line, reason and hint, guards per cache entry, recompile reasons and
per-stage compile times (capture = bytecode to graph, backend = codegen, guards = building the
guard closure). `ExplainOutput.__str__` is the report `wick explain` prints. Touches `capture`.
"""

from __future__ import annotations


class ExplainOutput:
    """The report of one explained call (PyTorch's `torch._dynamo.explain` output)."""

    def __init__(self, compiled, result):
        self.result = result
        self.name = compiled.name
        functions = list(compiled.all_functions())
        entries = [(cf, e) for cf in functions for e in cf.entries]
        self.graphs = [e.graph for _, e in entries if e.graph is not None and
                       any(n.op == "call_function" for n in e.graph.nodes)]
        self.graph_count = len(self.graphs)
        self.break_reasons = [r for cf in functions for r in cf.break_reasons]
        self.graph_break_count = len(self.break_reasons)
        self.ops_per_graph = [[n.target.name for n in g.nodes if n.op == "call_function"]
                              for g in self.graphs]
        self.guards = [e.guards_text for _, e in entries]
        self.entries = [(cf.name, e.mode) for cf, e in entries]
        self.recompile_reasons = [r for cf in functions for r in cf.recompile_reasons]
        self.compile_times = [dict(e.times) for _, e in entries]
        self.compile_ms = [e.compile_ms for _, e in entries if e.graph is not None and
                           any(n.op == "call_function" for n in e.graph.nodes)]
        self.functions = [cf.name for cf in functions]

    def __str__(self) -> str:
        lines = [f"explain({self.name}): {self.graph_count} graph(s), "
                 + f"{self.graph_break_count} graph break(s)"]
        for i, (ops, ms) in enumerate(zip(self.ops_per_graph, self.compile_ms)):
            lines.append(f"  graph {i}: {len(ops)} ops ({', '.join(ops)}), compiled in "
                         + f"{ms:.2f} ms")
        for r in self.break_reasons:
            lines.append(f"  graph break [{r.id}] at {r.filename}:{r.lineno} "
                         f"({r.instruction}): {r.reason}")
            lines.append(f"    {r.source_line}")
            lines.append(f"    hint: {r.hint}")
        for r in self.recompile_reasons:
            lines.append(f"  recompile: {r}")
        for (name, mode), times in zip(self.entries, self.compile_times):
            stages = ", ".join(f"{k[:-3]} {v:.2f} ms" for k, v in times.items())
            lines.append(f"  entry of {name} ({mode}): {stages}")
        return "\n".join(lines)

    __repr__ = __str__
