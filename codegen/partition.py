"""Fusion partition: which graph nodes become one fused kernel, and in what order steps run.

Inductor's scheduler in miniature (see CODEGEN.md, "Merge kernels"): every call_function node
starts as its own candidate in a networkx DiGraph of candidates; a producer->consumer pair of
elementwise candidates with the same output shape is merged when no other path joins them
(merging would create a cycle, checked with `nx.has_path`); this repeats to a fixed point and
the candidates are emitted in `nx.topological_sort` order. Nodes that are not fused (reductions,
matmul, views, composites) become `LibraryCall` steps. Every boundary between steps keeps the
reason it exists, for `dump("fusion")`. Sees only `ir` graphs; imports only `ir` and networkx.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from ir.dtypes import ALL as SUPPORTED_DTYPES
from ir.graph import Node
from ir.opdef import is_number


@dataclass(eq=False)
class FusionGroup:
    """Connected elementwise nodes of one output `shape`, run as one kernel.

    `nodes` are in graph (topological) order; `stored` maps each node whose value leaves the
    group (a graph output, or read by a node outside the group) to why it is stored; the rest
    stay in registers. `inputs` are the values the kernel loads.
    """

    id: int
    nodes: list
    shape: tuple
    stored: dict = field(default_factory=dict)
    inputs: list = field(default_factory=list)


@dataclass(eq=False)
class LibraryCall:
    """A node run through `ir.interpreter` on numpy arrays (matmul, reductions, views...)."""

    id: int
    node: Node
    reason: str


@dataclass
class Partition:
    """The execution plan: `steps` in order, and the `boundaries` between them.

    `boundaries` holds (producer, consumer, reason) for every edge of the graph that crosses
    two steps.
    """

    graph: object
    steps: list
    boundaries: list

    def format(self) -> str:
        """Every step with its nodes, what it stores and loads, and why each boundary exists."""
        incoming: dict = {}
        for p, c, why in self.boundaries:
            incoming.setdefault(c, []).append((p, why))
        nk = sum(isinstance(s, FusionGroup) for s in self.steps)
        nl = len(self.steps) - nk
        lines = [f"fusion plan of {self.graph.name}: {nk} fused kernel(s), {nl} library call(s)"]
        for step in self.steps:
            if isinstance(step, LibraryCall):
                n = step.node
                lines.append(f"step {step.id}: library call %{n.name} = {n.target.name}  "
                             f"({step.reason})  -> {n.meta['val']}")
                nodes = [n]
            else:
                shape = ", ".join(map(str, step.shape))
                lines.append(f"step {step.id}: fused kernel over ({shape}), "
                             f"{len(step.nodes)} node(s)")
                for n in step.nodes:
                    why = step.stored.get(n)
                    keep = f"stored: {why}" if why else "in registers"
                    lines.append(f"    %{n.name} = {n.target.name}  -> {n.meta['val']}  [{keep}]")
                loads = ", ".join(f"%{n.name} {n.meta['val']}" for n in step.inputs)
                lines.append(f"    loads: {loads or '-'}")
                nodes = step.nodes
            for n in nodes:
                for p, why in incoming.get(n, ()):
                    lines.append(f"    boundary %{p.name} -> %{n.name}: {why}")
        return "\n".join(lines)


def fusible(node: Node) -> bool:
    """An elementwise node with a scalar formula over supported CPU dtypes and numbers."""
    op = node.target
    if op.kind != "elementwise" or op.scalar is None:
        return False
    val = node.meta.get("val")
    if val is None or val.device != "cpu" or val.dtype not in SUPPORTED_DTYPES:
        return False
    for a in node.args:
        if isinstance(a, Node):
            m = a.meta.get("val")
            if m is None or m.dtype not in SUPPORTED_DTYPES:
                return False
        elif not is_number(a) or isinstance(a, complex):
            return False
    return True


def _library_reason(node: Node) -> str:
    op = node.target
    if op.kind == "matmul":
        return f"{op.name}: library call"
    if op.kind == "reduction":
        return f"{op.name}: reduction, library call (reduction fusion comes later)"
    if op.kind == "view":
        return f"{op.name}: view, run by numpy"
    if op.kind == "composite":
        return f"{op.name}: composite, run by its decomposition"
    if op.kind == "elementwise":
        return f"{op.name}: elementwise but not fusible (no scalar formula or unsupported dtype)"
    return f"{op.name}: {op.kind}, library call"


def _shape(node: Node) -> tuple:
    return tuple(node.meta["val"].shape)


def partition(graph) -> Partition:
    """Partition `graph` (an `ir.Graph`) into fusion groups and library calls."""
    calls = [n for n in graph.nodes if n.op == "call_function"]
    order = {n: i for i, n in enumerate(graph.nodes)}
    ok = {n: fusible(n) for n in calls}

    # one candidate per call_function node; an edge per producer -> consumer dependency
    cand = nx.DiGraph()
    members = {i: [n] for i, n in enumerate(calls)}
    group_of = {n: i for i, n in enumerate(calls)}
    for i, n in enumerate(calls):
        cand.add_node(i)
        for a in n.all_input_nodes:
            if a in group_of:
                cand.add_edge(group_of[a], i)

    def shape_of(g):
        return _shape(members[g][0])

    def mergeable(u, v) -> bool:
        return ok[members[u][0]] and ok[members[v][0]] and shape_of(u) == shape_of(v)

    def creates_cycle(u, v):
        """Another path u -> ... -> v: merging u and v would make a cycle through it."""
        for s in cand.successors(u):
            if s != v and nx.has_path(cand, s, v):
                return s
        return None

    changed = True
    while changed:
        changed = False
        for u, v in sorted(cand.edges, key=lambda e: (order[members[e[0]][0]],
                                                      order[members[e[1]][0]])):
            if not (cand.has_node(u) and cand.has_node(v) and cand.has_edge(u, v)):
                continue
            if not mergeable(u, v) or creates_cycle(u, v) is not None:
                continue
            nx.contracted_nodes(cand, u, v, self_loops=False, copy=False)
            members[u] = sorted(members[u] + members.pop(v), key=order.__getitem__)
            for n in members[u]:
                group_of[n] = u
            changed = True

    first = {g: order[members[g][0]] for g in cand.nodes}
    steps, step_of = [], {}
    for g in nx.lexicographical_topological_sort(cand, key=first.__getitem__):
        nodes = members[g]
        if ok[nodes[0]]:
            step = FusionGroup(len(steps), nodes, shape_of(g))
        else:
            step = LibraryCall(len(steps), nodes[0], _library_reason(nodes[0]))
        for n in nodes:
            step_of[n] = step
        steps.append(step)

    outputs = set(_output_nodes(graph))
    for step in steps:
        if not isinstance(step, FusionGroup):
            continue
        inside = set(step.nodes)
        for n in step.nodes:
            outside = [u for u in n.users if u.op != "output" and u not in inside]
            if n in outputs:
                step.stored[n] = "graph output"
            elif outside:
                step.stored[n] = "read by " + ", ".join(f"%{u.name}" for u in outside)
            for a in n.args:
                if isinstance(a, Node) and a not in inside and a not in step.inputs:
                    step.inputs.append(a)

    boundaries = []
    for n in calls:
        for a in n.all_input_nodes:
            if a.op == "placeholder":
                continue
            if step_of[a] is not step_of[n]:
                boundaries.append((a, n, _boundary_reason(a, n, ok, cand, group_of,
                                                          members, creates_cycle)))
    return Partition(graph, steps, boundaries)


def _output_nodes(graph) -> list:
    out = []

    def walk(v):
        if isinstance(v, Node):
            out.append(v)
        elif isinstance(v, (tuple, list)):
            for x in v:
                walk(x)

    walk(graph.output_node.args[0])
    return out


def _boundary_reason(p, c, ok, cand, group_of, members, creates_cycle) -> str:
    if not ok[p]:
        return _library_reason(p)
    if not ok[c]:
        return _library_reason(c)
    if _shape(p) != _shape(c):
        return f"shape {_shape(c)} != {_shape(p)}"
    via = creates_cycle(group_of[p], group_of[c])
    if via is not None:
        return f"merging would create a cycle through %{members[via][0].name}"
    return "not merged"
