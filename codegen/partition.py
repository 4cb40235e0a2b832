"""Fusion partition: which graph nodes become one fused kernel, and in what order steps run.

Inductor's scheduler in miniature (see CODEGEN.md, "Merge kernels"): every call_function node
starts as its own candidate in a networkx DiGraph of candidates, with an iteration space (full
shape, reduced dims); a producer->consumer pair is merged when the spaces are compatible (equal
pointwise shapes; an elementwise prologue into a reduction; an elementwise epilogue over the
full or per-row shape of a keepdim reduction: a row kernel; reductions over the same dims) and
no other path joins them (merging would create a cycle, checked with `nx.has_path`); this
repeats to a fixed point and the candidates are emitted in topological order. Nodes are never
duplicated across kernels (no recompute blow-up). Nodes that are not fused (matmul, views,
library reductions, complex or bfloat16 values) become `LibraryCall` steps. Every boundary
between steps keeps the reason it exists, for `dump("fusion")`. Sees only `ir` graphs; imports
only `ir`, networkx and `codegen.kernel`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from ir.graph import Node
from ir.opdef import is_number

from .kernel import keep_shape, reduced_dims


@dataclass(eq=False)
class FusionGroup:
    """Connected nodes run as one kernel over the full iteration `shape`.

    `rdims`: the reduced dimensions of `shape` (empty for a pointwise group); nodes have the
    full shape, or the per-row (keepdim) shape of a reduction group, or are reductions over
    `rdims`. `nodes` are in graph (topological) order; `stored` maps each node whose value
    leaves the group (a graph output, or read by a node outside the group) to why it is
    stored; the rest stay in registers. `inputs` are the values the kernel loads.
    """

    id: int
    nodes: list
    shape: tuple
    rdims: tuple = ()
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


def supported_dtype(dtype, device: str = "cpu") -> bool:
    """Dtypes the kernels compute: bool, (u)int8-64, float16, bfloat16 (computed in float32,
    rounded per op), float32, float64."""
    try:
        k, size = dtype.np.kind, dtype.np.itemsize
    except AttributeError:
        return False
    if dtype.name == "bfloat16":
        return True
    return (k == "b" or (k in "iu" and size in (1, 2, 4, 8)) or
            (k == "f" and size in (2, 4, 8)))


def _meta_ok(m, device: str = "cpu") -> bool:
    """A value of a supported dtype on `device` ("cpu", or "cuda" for any "cuda:N")."""
    return (m is not None and str(m.device).partition(":")[0] == device
            and supported_dtype(m.dtype, device))


def fusible(node: Node, device: str = "cpu") -> bool:
    """An elementwise node with a scalar formula, or a reduction codegen knows how to
    combine (sum, prod, amax, amin), over supported dtypes of `device` ("cpu" or "cuda") and
    real Python numbers."""
    op = node.target
    if node.op != "call_function" or not _meta_ok(node.meta.get("val"), device):
        return False
    if op.kind == "reduction":
        if op.reduce is None or len(node.args) != 1:
            return False
        src = node.args[0]
        if not isinstance(src, Node) or not _meta_ok(src.meta.get("val"), device):
            return False
        dims = reduced_dims(node)
        if dims is None or node.kwargs.get("dtype") not in (None, node.meta["val"].dtype):
            return False
        shape = src.meta["val"].shape
        if not shape:  # a 0-d source: no reduction loop to order its users after it
            return False
        # amax/amin of an empty dim raise in eager: leave them to the library call
        return not (op.name in ("amax", "amin") and any(shape[d] == 0 for d in dims))
    if op.kind != "elementwise" or op.scalar is None:
        return False
    for a in node.args:
        if isinstance(a, Node):
            if not _meta_ok(a.meta.get("val"), device):
                return False
        elif not is_number(a) or isinstance(a, complex):
            return False
    return True


def _library_reason(node: Node) -> str:
    op = node.target
    if op.kind == "matmul":
        return f"{op.name}: library call"
    if op.kind == "reduction":
        src = node.args[0] if node.args else None
        if isinstance(src, Node) and src.meta.get("val") is not None and \
                not src.meta["val"].shape:
            return f"{op.name}: reduction of a 0-d tensor, library call"
        return f"{op.name}: reduction codegen does not combine, library call"
    if op.kind == "view":
        return f"{op.name}: view, run by numpy (no copy)"
    if op.kind == "composite":
        return f"{op.name}: composite, run by its decomposition"
    if op.kind == "elementwise":
        return f"{op.name}: elementwise but not fusible (no scalar formula or unsupported dtype)"
    return f"{op.name}: {op.kind}, library call"


def _shape(node: Node) -> tuple:
    return tuple(node.meta["val"].shape)


def _space(node: Node) -> tuple:
    """(full shape, reduced dims) of a lone fusible node."""
    if node.target.kind == "reduction":
        return _shape(node.args[0]), reduced_dims(node)
    return _shape(node), ()


def _keepdim_ok(r: Node, shape: tuple) -> bool:
    """A reduction's value can be read in-group only in its keepdim form."""
    return len(_shape(r)) == len(shape)


def partition(graph, device: str = "cpu") -> Partition:
    """Partition `graph` (an `ir.Graph`) into fusion groups and library calls; only values on
    `device` ("cpu" for the llvm backend, "cuda" for the cuda backend) are fused.

    Merge rules (CODEGEN.md): equal pointwise shapes; an elementwise prologue into a
    reduction (same full shape, or per-row values); an elementwise epilogue over the full or
    per-row shape of a reduction (a row kernel); two reductions over the same shape and dims;
    never through library calls, across cycles or mismatched iteration spaces.
    """
    calls = [n for n in graph.nodes if n.op == "call_function"]
    order = {n: i for i, n in enumerate(graph.nodes)}
    ok = {n: fusible(n, device) for n in calls}
    c = _Candidates(calls, order, ok)
    c.merge()
    steps, step_of = _steps(c, ok)
    _mark_stored(graph, steps)
    boundaries = []
    for n in calls:
        for a in n.all_input_nodes:
            if a.op == "placeholder":
                continue
            if step_of[a] is not step_of[n]:
                boundaries.append((a, n, _boundary_reason(a, n, ok, c.group_of, c.members,
                                                          c.space, c.creates_cycle)))
    return Partition(graph, steps, boundaries)


class _Candidates:
    """The fusion candidates of one graph: a networkx DiGraph of candidate ids, each with its
    member nodes (graph order) and iteration space (None: not fusible)."""

    def __init__(self, calls: list, order: dict, ok: dict):
        self.order = order
        self.cand = nx.DiGraph()
        self.members = {i: [n] for i, n in enumerate(calls)}
        self.group_of = {n: i for i, n in enumerate(calls)}
        self.space = {i: _space(n) if ok[n] else None for i, n in enumerate(calls)}
        for i, n in enumerate(calls):
            self.cand.add_node(i)
            for a in n.all_input_nodes:
                if a in self.group_of:
                    self.cand.add_edge(self.group_of[a], i)

    def merged_space(self, u, v):
        """The space of u + v, or None when they cannot share a kernel."""
        space, members = self.space, self.members
        su, sv = space[u], space[v]
        if su is None or sv is None:
            return None
        (shu, ru), (shv, rv) = su, sv
        if ru and rv:
            full = su if su == sv else None
        elif not ru and not rv:
            full = su if shu == shv else None
        else:
            shape, rd = su if ru else sv
            other = members[v] if ru else members[u]
            keep = keep_shape(shape, rd)
            fits = all(_shape(n) in (shape, keep) for n in other)
            full = (shape, rd) if fits else None
        if full is None:
            return None
        inside = set(members[u]) | set(members[v])
        for n in inside:
            if (n.target.kind == "reduction" and any(c in inside for c in n.users)
                    and not _keepdim_ok(n, full[0])):
                return None
        return full

    def creates_cycle(self, u, v):
        """Another path u -> ... -> v: merging u and v would make a cycle through it."""
        cand = self.cand
        for s in cand.successors(u):
            if s != v and nx.has_path(cand, s, v):
                return s
        return None

    def merge(self) -> None:
        """Merge producer->consumer pairs to a fixed point, in graph order."""
        cand, members, order = self.cand, self.members, self.order
        space, group_of = self.space, self.group_of
        changed = True
        while changed:
            changed = False
            for u, v in sorted(cand.edges, key=lambda e: (order[members[e[0]][0]],
                                                          order[members[e[1]][0]])):
                if not (cand.has_node(u) and cand.has_node(v) and cand.has_edge(u, v)):
                    continue
                sp = self.merged_space(u, v)
                if sp is None or self.creates_cycle(u, v) is not None:
                    continue
                nx.contracted_nodes(cand, u, v, self_loops=False, copy=False)
                members[u] = sorted(members[u] + members.pop(v), key=order.__getitem__)
                space[u] = sp
                del space[v]
                for n in members[u]:
                    group_of[n] = u
                changed = True


def _steps(c: _Candidates, ok: dict) -> tuple[list, dict]:
    """The merged candidates as steps in topological order (ties by first node), and the step
    of each node."""
    order, members, space, cand = c.order, c.members, c.space, c.cand
    first = {g: order[members[g][0]] for g in cand.nodes}
    steps, step_of = [], {}
    for g in nx.lexicographical_topological_sort(cand, key=first.__getitem__):
        nodes = members[g]
        if ok[nodes[0]]:
            shape, rd = space[g]
            step = FusionGroup(len(steps), nodes, shape, rd)
        else:
            step = LibraryCall(len(steps), nodes[0], _library_reason(nodes[0]))
        for n in nodes:
            step_of[n] = step
        steps.append(step)
    return steps, step_of


def _mark_stored(graph, steps: list) -> None:
    """Each fusion group's stored values (with why) and the values it loads."""
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
            for a in n.all_input_nodes:
                if a not in inside and a not in step.inputs:
                    step.inputs.append(a)


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


def _fmt_space(sp) -> str:
    shape, rd = sp
    return f"{shape} reduced over {rd}" if rd else f"shape {shape}"


def _boundary_reason(p, c, ok, group_of, members, space, creates_cycle) -> str:
    if not ok[p]:
        return _library_reason(p)
    if not ok[c]:
        return _library_reason(c)
    via = creates_cycle(group_of[p], group_of[c])
    if via is not None:
        return f"merging would create a cycle through %{members[via][0].name}"
    sp, sc = space[group_of[p]], space[group_of[c]]
    if sp != sc:
        if p.target.kind == "reduction" and not _keepdim_ok(p, _space(p)[0]):
            return f"%{p.name} is a reduction without keepdim: not fused with its readers"
        return f"iteration spaces differ: {_fmt_space(sc)} vs {_fmt_space(sp)}"
    return "not merged"
