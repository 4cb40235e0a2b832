"""`capture.explain(fn)(*args)`: what capture made of one call, as data and as text.

Aggregates the compiled function and every function compiled on its behalf (resume functions,
callees that broke while inlined): graphs (non-empty ones), graph breaks with their stable id,
file:line, source line, reason and hint, guards per cache entry, recompile reasons and
per-stage compile times (capture = bytecode to graph, backend = codegen, guards = building the
guard closure). `ExplainOutput.__str__` is the report `wick explain` prints. Touches `capture`.

Counts are PyTorch's (`torch._dynamo.explain`, torch/_dynamo/eval_frame.py): `graph_count` is
the number of graphs compiled during the call, in every frame (the function, its resume
functions, callees compiled as their own frames), a graph counting when it has an op;
`graph_break_count` is `graph_count - 1`, the places where one graph ended and another began
(0, not torch's -1, when nothing was compiled). A break whose continuation compiles nothing more (a
`print` at the end) does not add to it, and a break inside a callee is not counted again at
its callers: only the graphs are. `break_reasons` keeps one record per frame that a break ended
(a callee's break appears in the callee's frame and at the caller's call, as in torch's list);
`unique_break_reasons` lists each break site once.

Where wick keeps one graph and Dynamo knowingly does not, `dynamo_graph_count` and
`dynamo_graph_break_count` give the counts under Dynamo's rules, for comparing with torch's:
torch.optim's `step()` runs between two explicit `torch._dynamo.graph_break()` calls
(`_use_grad` in torch/optim/optimizer.py: the step is an inference graph of its own), so Dynamo
compiles the ops before a step, the step, and the ops after it as separate graphs, where wick
records an `opt.step()` (`optim_forms`) in the graph around it. A training step `logits =
model(x); loss = ...; loss.backward(); opt.step(); return (logits.argmax(-1) == y).float().mean()`
is 2 graphs / 1 break in wick and 3 / 2 under torch.compile (the metrics a graph of their own).
Views of inputs that wick rebuilds after the graph (`aliases`: `return x.t()`, a
`loss.detach()` after the step) are ops of a graph for Dynamo: a frame that only returns one
is 0 graphs in wick and 1 under torch.compile.
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
        self.graph_break_count = max(self.graph_count - 1, 0)
        self.dynamo_graph_count = sum(_dynamo_graphs(e.graph, e.template) for _, e in entries
                                      if e.graph is not None)
        self.dynamo_graph_break_count = max(self.dynamo_graph_count - 1, 0)
        seen: dict = {}
        for r in self.break_reasons:
            seen.setdefault(r.id, r)
        self.unique_break_reasons = list(seen.values())
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
        for r in self.unique_break_reasons:
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


def _dynamo_graphs(graph, template) -> int:
    """How many graphs Dynamo would make of an entry's `graph`: its ops split at the bounds of
    each optimizer step recorded in it (nodes marked `optimizer_step`), non-empty runs
    counted; views wick rebuilds after the graph (`aliases`) are graph ops for Dynamo, so they
    count as a run of their own when no run of ordinary ops ends the graph."""
    runs, last = 0, object()
    for n in graph.nodes:
        if n.op != "call_function":
            continue
        key = n.meta.get("optimizer_step")
        if key != last:
            runs, last = runs + 1, key
    if last is not None and _has_view(template):  # (no ops, or a step last)
        runs += 1
    return runs


def _has_view(t) -> bool:
    if isinstance(t, tuple) and t[:1] == ("view",):
        return True
    if isinstance(t, (tuple, list)):
        return any(_has_view(x) for x in t)
    if isinstance(t, dict):
        return any(_has_view(x) for x in t.values())
    return False
