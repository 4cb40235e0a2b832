"""The AOT-autograd bridge: a compiled forward graph wrapped as one autograd node whose backward
is itself a compiled graph (PyTorch's `aot_autograd`, in miniature).

`aot_function(graph, compile_graph)` returns an `AOTGraph`: called with eager Tensors (one per
placeholder), it runs the compiled forward (a copy of the graph that also returns the values
the backward needs) inside an `eager.autograd.Function`, so the outputs get one grad_fn; that
node's backward runs the compiled backward graph built by `ir.autodiff.build_backward` (fused
like any graph). Plans are built once per pattern of inputs requiring grad; a cache entry's
hits build their node with one generated function per plan (`direct_function`). Without
grad mode or with no input requiring grad it runs the plain compiled graph. Gradients equal
eager's (same registry rules; a composite eager records as one node, softmax say, is
differentiated by its `eager_backward` as in eager: `ir.autodiff.whole_rule`). A backward
under create_graph=True (a gradient penalty's `autograd.grad(..., create_graph=True)`)
recomputes the graph from its inputs through eager ops and differentiates that, so the
gradient has eager's own history (double backward works as in eager; PyTorch's aot_autograd
raises there). Imports `eager`, `ir` and (through `compile_graph`) codegen.
"""

from __future__ import annotations

import numpy as np

from eager import grad_mode
from eager.autograd import Function, engine, forward_ad
from eager.autograd.function import FREED, FunctionNode
from eager.autograd.hooks import meta_of
from eager.autograd.nodes import NO_EDGE, edge_of, grad_accumulator
from eager.tensor import Tensor
from ir.autodiff import build_backward, copy_graph, decompose, grad_paths
from ir.graph import Node
from ir.ops import custom_function
from ir.passes import cse

from . import backends


class _Plan:
    """The compiled forward (outputs + saved values) and backward graphs for one `wrt`.

    `differentiable[i]`: output i requires grad in eager (it lies on a path from a `wrt` input
    through differentiable ops, and is float or complex). Backward graphs are built per pattern
    of outputs that received a gradient (`backward_for`), reading a subset of the saved values.
    """

    def __init__(self, graph, wrt: tuple, compile_graph):
        self.wrt = wrt
        self.source = graph  # (recomputed through eager ops for a double backward)
        self.graph = graph = decompose(graph)
        self.compile_graph = compile_graph
        outs = tuple(graph.output_node.args[0])
        needs = grad_paths(graph, wrt)
        self.differentiable = tuple(o in needs and o.meta["val"].dtype.category >= 2
                                    for o in outs)
        bwd_graph, self.saved = build_backward(graph, list(wrt), self.differentiable)
        self.fwd_graph, _ = copy_graph(graph, name=graph.name + "_forward",
                                       extra_outputs=self.saved)
        # (the forward is only executed: a value computed twice - a training batch norm's
        # statistics for its output and its running statistics - is computed once)
        cse(self.fwd_graph, grad_mode=False)
        self.n_out = len(outs)
        self.out_metas = [o.meta["val"] for o in outs]
        # (for `_apply_direct`: what `Function.apply` derives per call)
        self.needs_input_grad = (False, *wrt)
        self.diff_index = [i for i, d in enumerate(self.differentiable) if d]
        places = {n: i for i, n in enumerate(graph.placeholders)}
        outputs = {n: i for i, n in enumerate(outs)}
        # where each saved value comes from: ("input", i), ("output", i) or ("extra", j)
        self.saved_from = [("input", places[n]) if n in places else
                           ("output", outputs[n]) if n in outputs else ("extra", j)
                           for j, n in enumerate(self.saved)]
        # (`_DirectNode._lz`: per saved value, its group - 0 extra, 1 input, 2 output - and
        # its position there: an extra's in the forward's results after the outputs)
        counts = [0, 0, 0]
        self.saved_at = []
        for kind, i in self.saved_from:
            g = {"extra": 0, "input": 1, "output": 2}[kind]
            self.saved_at.append((g, i if g == 0 else counts[g]))
            counts[g] += 1
        self.fwd = compile_graph(self.fwd_graph)
        self.in_meta = self.outs_meta = None  # (shape, dtype) lists, from the first call
        self.bwds: dict = {}
        self.presence: dict = {}  # seeded -> per wrt gradient, when it exists (or None)
        self.bwd_graph = self._add_backward(self.differentiable, bwd_graph, self.saved)
        self.bwd = self.bwds[self.differentiable][0]  # (every differentiable output seeded)

    def _add_backward(self, seeded, bwd_graph, saved):
        index = {n: j for j, n in enumerate(self.saved)}
        self.presence[seeded] = getattr(bwd_graph, "grad_presence", None)
        cse(bwd_graph, grad_mode=False)
        self.bwds[seeded] = (self.compile_graph(bwd_graph), [index[n] for n in saved])
        return bwd_graph

    def backward_for(self, seeded: tuple):
        """(compiled backward, indices of the saved values it reads) when the outputs
        `seeded` (bools) received a gradient."""
        got = self.bwds.get(seeded)
        if got is None:
            bwd_graph, saved = build_backward(self.graph, list(self.wrt), seeded)
            self._add_backward(seeded, bwd_graph, saved)
            got = self.bwds[seeded]
        return got


class _AOT(Function):
    @staticmethod
    def forward(ctx, plan, *inputs):
        res = plan.fwd(*[t._data for t in inputs])
        ctx.plan = plan
        ctx._ins = inputs
        outs = tuple(Tensor._make(np.asarray(a)) for a in res[:plan.n_out])
        nd = [o for o, d in zip(outs, plan.differentiable) if not d]
        if nd:
            ctx.mark_non_differentiable(*nd)
        # saved as eager saves them: inputs and outputs as the tensors themselves (version
        # checked), freed by the engine after backward() unless retain_graph=True
        extra = res[plan.n_out:]
        ctx.save_for_backward(*[inputs[i] if kind == "input" else outs[i] if kind == "output"
                                else Tensor._make(np.asarray(extra[i]))
                                for kind, i in plan.saved_from])
        ctx.set_materialize_grads(False)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        if grad_mode.is_grad_enabled():
            return _backward_with_graph(ctx, grads)
        plan = ctx.plan
        seeded = tuple(g is not None and d for g, d in zip(grads, plan.differentiable))
        if not any(seeded):
            ctx.saved_tensors  # noqa: B018 (RuntimeError once freed, as eager)
            return (None,) * (1 + len(plan.wrt))
        done = getattr(ctx, "_done", None)  # outputs whose path a pass freed (see release)
        if done is not None and any(s and d for s, d in zip(seeded, done)):
            raise RuntimeError(FREED)
        seen = getattr(ctx, "_seen", None)
        ctx._seen = seeded if seen is None else tuple(a or b for a, b in zip(seen, seeded))
        bwd, reads = plan.backward_for(seeded)
        arrays = _saved_arrays(ctx, reads)  # RuntimeError once freed or modified, as eager
        garrays = []
        for g, m, s in zip(grads, plan.out_metas, seeded):
            garrays.append(np.zeros(m.shape, m.dtype.np) if not s else
                           np.ascontiguousarray(g._data, dtype=m.dtype.np).reshape(m.shape))
        res = iter(bwd(*arrays, *garrays))
        out = [None]
        for w in plan.wrt:
            r = next(res) if w else None
            out.append(Tensor._make(np.asarray(r)) if r is not None else None)
        presence = plan.presence.get(seeded)
        if presence is not None:  # (a user's Function backward returned None: eager's None)
            got = iter(presence)
            out = [None, *[o if not w or (c := next(got)) is None or custom_function.holds(c)
                           else None for o, w in zip(out[1:], plan.wrt)]]
        return tuple(out)


class AOTGraph:
    """A graph compiled forward and backward; call with eager Tensors, get a tuple of Tensors.

    `plans[wrt]` holds the compiled forward/backward pair per pattern of inputs requiring grad
    (`.fwd_graph`, `.bwd_graph`, `.fwd`, `.bwd`: dumps and kernels of each).
    """

    def __init__(self, graph, compile_graph):
        self.graph = graph
        self.compile_graph = compile_graph
        self.plain = None
        self.plans: dict = {}
        self.inplace: list = []   # (input, output) write-backs a forward may store in place

    def _alias(self, compiled, plan=None) -> None:
        """Let `compiled` (the plain graph or `plan`'s forward) store the `inplace` outputs
        into their inputs' arrays (`codegen.inplace`), except an input or output the
        backward saves (its saved value must stay the one the forward saw)."""
        alias = getattr(compiled, "alias_inputs", None)
        if not self.inplace or alias is None:
            return
        saved = set(plan.saved_from) if plan is not None else set()
        alias([(i, k) for i, k in self.inplace
               if ("input", i) not in saved and ("output", k) not in saved])

    def fixed_call(self):
        """The call for one cache entry, whose guards fix the inputs' shapes, dtypes and
        `requires_grad` and the grad mode: the first call finds the plan, later ones go
        straight to `_apply_direct` (unless anomaly mode or forward AD ask for the general
        `Function.apply`)."""
        found = []

        def call(*inputs):
            if found:
                if (engine._CHECKS or forward_ad._LEVEL) and not _direct_ok(inputs):
                    return self(*inputs)
                return found[0](*inputs)
            out = self(*inputs)
            wrt = tuple(isinstance(t, Tensor) and t.requires_grad for t in inputs)
            plan = self.plans.get(wrt) if any(wrt) else None
            if plan is not None and plan.in_meta is not None:
                found.append(direct_function(plan))
            return out

        call.found = found  # (a hit calls `found[0]` itself when no check is on: hits.py)
        return call

    def __call__(self, *inputs) -> tuple:
        wrt = tuple(isinstance(t, Tensor) and t.requires_grad for t in inputs)
        if not any(wrt):
            if self.plain is None:
                self.plain = self.compile_graph(self.graph)
                self._alias(self.plain)
            res = self.plain(*[t._data if isinstance(t, Tensor) else t for t in inputs])
            return tuple(Tensor._make(np.asarray(a)) if isinstance(a, np.ndarray) else a
                         for a in res)
        plan = self.plans.get(wrt)
        if plan is None:
            plan = self.plans[wrt] = _Plan(self.graph, wrt, self.compile_graph)
            self._alias(plan.fwd, plan)
        if not (engine._CHECKS or forward_ad._LEVEL) or _direct_ok(inputs):
            return _apply_direct(plan, inputs)
        # every node was recorded with grad mode on (`supported`), whatever the mode at the
        # call (a resume function may start inside a `no_grad` block its graph leaves)
        with grad_mode.enable_grad():
            return _AOT.apply(plan, *inputs)


def _backward_with_graph(ctx, grads) -> tuple:
    """The backward under create_graph=True: the graph recomputed from the node's inputs
    through eager ops (`backends.run_with_autograd`) and differentiated by eager's engine with
    create_graph=True, so the gradients carry eager's history. Raises as eager's when the saved
    values were freed or modified in place."""
    plan = ctx.plan
    _saved_reads(ctx, range(len(plan.saved)))  # RuntimeError once freed or modified
    inputs = ctx._ins
    with grad_mode.enable_grad():
        outs = backends.run_with_autograd(plan.source, inputs)
    pairs = [(o, g) for o, g, d in zip(outs, grads, plan.differentiable)
             if d and g is not None and o.requires_grad]
    wrt = [t for t, w in zip(inputs, plan.wrt) if w]
    got = iter(engine.grad([o for o, _ in pairs], wrt, [g for _, g in pairs],
                           retain_graph=True, create_graph=True, allow_unused=True)
               if pairs else [None] * len(wrt))
    return (None, *[next(got) if w else None for w in plan.wrt])


def _saved_arrays(ctx, reads) -> list:
    """The arrays of the saved entries at `reads`, version-checked; a saved graph temporary
    is an array with a private version counter (`("o", (array, [0], False), 0, 0)`, as eager
    stores a node's own outputs): no Tensor is made for it in the forward or here. Errors
    (freed, modified in place) come from `_saved_reads`, as eager's."""
    lz = getattr(ctx, "_lz", None)
    if lz is not None:  # (a `_DirectNode` nobody made read its list)
        extras, ins, versions, outs = lz
        at = ctx.plan.saved_at
        out = []
        for j in reads:
            g, q = at[j]
            if g == 0:
                a = extras[q]
                out.append(a if type(a) is np.ndarray else np.asarray(a))
                continue
            if g == 1:
                t = ins[q]
                if t._vc[0] != versions[q]:
                    break
                out.append(t._data)
                continue
            kind, t, version, _ = outs[q]
            data, vc = (t[0], t[1]) if kind == "o" else (t._data, t._vc)
            if vc[0] != version:
                break
            out.append(data)
        else:
            return out
        return [t._data for t in _saved_reads(ctx, reads)]
    saved = getattr(ctx, "_saved", None)
    if saved is None:
        return [t._data for t in _saved_reads(ctx, reads)]
    out = []
    for j in reads:
        kind, t, version, _ = saved[j]
        data, vc = (t[0], t[1]) if kind == "o" else (t._data, t._vc)
        if vc[0] != version:
            return [t._data for t in _saved_reads(ctx, reads)]
        out.append(data)
    return out


def _saved_reads(ctx, reads) -> tuple:
    """`ctx.saved_tensors`, checking and unpacking only the entries at `reads` (the others
    None): the backward of some outputs reads a subset of what the graph saved, and eager's
    version check concerns only the values a pass uses (an optimizer step may have updated the
    weights that only another output's path saved)."""
    saved = getattr(ctx, "_saved", None)
    if saved is None:
        return ctx.saved_tensors
    wanted = set(reads)
    ctx._saved = [e if j in wanted else None for j, e in enumerate(saved)]
    try:
        return ctx.saved_tensors
    finally:
        ctx._saved = saved


class _AOTNodeBase(FunctionNode):
    """The node of a compiled graph: its saved values are freed after a backward pass only
    once every differentiable output has had a gradient. One graph may hold what eager keeps
    as separate nodes (a GAN step: `d_loss` from `D(G(z).detach())` and `fake = G(z)` in one
    graph); a first `d_loss.backward()` must leave `fake`'s path usable, as eager does."""

    def release(self) -> None:
        seen = getattr(self, "_seen", None)
        if seen is not None and not all(s or not d for s, d in
                                        zip(seen, self.plan.differentiable)):
            self._done = seen  # a second pass through these outputs raises, as eager's
            return
        FunctionNode.release(self)


_AOT._node_class = _AOTNodeBase  # `Function.apply` (anomaly mode, inference checks) too


class _DirectNode(_AOTNodeBase):
    """The node a hit's generated builder makes (`direct_function`): it keeps what its saved
    entries need as `_lz` = (the graph's extra outputs, the saved input tensors, their
    versions at the forward, the saved outputs' entries) - four tuples instead of one
    entry (two tuples and a version list) per saved value - and `_saved`, eager's list, is
    made from them when anything reads it (`saved_tensors`, a version error, `release`).
    The backward reads the arrays from `_lz` directly (`_saved_arrays`)."""

    _lz = None
    _sv = None

    @property
    def _saved(self):
        lz = self._lz
        if lz is not None:
            extras, ins, versions, outs = lz
            got = []
            for group, q in self.plan.saved_at:
                if group == 0:
                    a = extras[q]
                    got.append(("o", (a if type(a) is np.ndarray else np.asarray(a), [0],
                                      False), 0, 0))
                elif group == 1:
                    got.append(("t", ins[q], versions[q], 0))
                else:
                    got.append(outs[q])
            self._lz, self._sv = None, got
        return self._sv

    @_saved.setter
    def _saved(self, value):
        self._lz, self._sv = None, value


def _direct_ok(inputs) -> bool:
    """Whether a call may build its node directly although `engine._CHECKS` or forward AD is
    on: only when every check reads just the inputs (inference tensors: once inference mode
    was used in the process, its check stays on), which then runs here; anomaly mode and
    forward AD take `Function.apply`."""
    if forward_ad._LEVEL or not all(getattr(f, "inputs_only", False) for f in engine._CHECKS):
        return False
    for f in engine._CHECKS:
        f(None, inputs)
    return True


def _apply_direct(plan: _Plan, inputs: tuple) -> tuple:
    """`_AOT.apply(plan, *inputs)` without the generality of `Function.apply`, for the common
    case (no anomaly mode or inference checks in `engine._CHECKS`, no forward-AD level): the
    same `FunctionNode` with the same edges, saved entries and output metadata, built from the
    plan's precomputed patterns. Any difference from `Function.apply`'s result is a bug (the
    parity tests compare both)."""
    res = plan.fwd(*[t._data for t in inputs])
    ctx = _AOTNodeBase(_AOT, 1 + len(inputs))
    wrt = plan.wrt
    ctx.needs_input_grad = plan.needs_input_grad
    ctx.next_functions = (NO_EDGE, *[edge_of(t) if w else NO_EDGE for t, w in zip(inputs, wrt)])
    in_meta = plan.in_meta  # (the guards of the entry fix the inputs' shapes and dtypes)
    if in_meta is None:
        in_meta = plan.in_meta = [None, *[(t._data.shape, t.dtype) for t in inputs]]
    ctx._in_meta = in_meta
    ctx.plan = plan
    ctx._ins = inputs
    ctx.materialize_grads = False
    n = plan.n_out
    outs = tuple([Tensor._make(np.asarray(a)) for a in res[:n]])
    ctx.num_outputs = n
    outs_meta = plan.outs_meta
    if outs_meta is None:
        outs_meta = plan.outs_meta = [(o._data.shape, o.dtype) for o in outs]
    ctx._outs = outs_meta
    for i in plan.diff_index:
        o = outs[i]
        o.requires_grad, o.grad_fn = True, ctx
        if i:
            meta_of(o).output_nr = i
    if n:
        ctx.out_version = 0  # (fresh outputs)
    saved = []
    for kind, i in plan.saved_from:
        if kind == "input":
            t = inputs[i]
            saved.append(("t", t, t._vc[0], 0))
        elif kind == "output":
            t = outs[i]
            if plan.differentiable[i]:  # an output: no reference cycle
                saved.append(("o", (t._data, t._vc, True), t._vc[0], i))
            else:
                saved.append(("t", t, t._vc[0], 0))
        else:
            saved.append(("o", (np.asarray(res[n + i]), [0], False), 0, 0))
    ctx._saved = saved
    ctx._to_save = ()
    return outs


def direct_function(plan: _Plan):
    """`_apply_direct` specialised for one plan whose first call fixed its input and output
    metadata, as one generated function of the input Tensors (a cache entry's guards fix
    their shapes, dtypes and requires_grad): the node is an instance of a per-plan subclass
    of `FunctionNode` whose class attributes hold what every call shares (`_cls`, `plan`,
    `needs_input_grad`, input/output metadata), outputs are made in line, saved entries are
    four tuples (`_DirectNode`). The same node state as `_apply_direct` once `_saved` is read
    (the parity tests compare)."""
    node_cls = type("_AOTNode", (_DirectNode,), {
        "_cls": _AOT, "plan": plan, "needs_input_grad": plan.needs_input_grad,
        "_in_meta": plan.in_meta, "_outs": plan.outs_meta, "num_outputs": plan.n_out,
        "materialize_grads": False, "_released": False, "_to_save": ()})
    m, n = len(plan.wrt), plan.n_out
    ins = [f"i{k}" for k in range(m)]
    edges = "".join(  # (a leaf's edge in line: its live AccumulateGrad, else `acc` makes it)
        f"(_a if (_m := i{k}._backward_hooks) is not None and (_w := _m.acc) is not None "
        f"and (_a := _w()) is not None else acc(i{k}), 0) "
        f"if i{k}.grad_fn is None and i{k}.requires_grad else edge_of(i{k}), "
        if w else "NO_EDGE, " for k, w in enumerate(plan.wrt))
    lines = [f"def direct({', '.join(ins)}):",
             f"    res = fwd({''.join(f'i{k}._data, ' for k in range(m))})",
             "    ctx = new(Node)", "    ctx._hk = None",
             f"    ctx._ins = ({''.join(f'i{k}, ' for k in range(m))})",
             f"    ctx.next_functions = (NO_EDGE, {edges})"]
    for i in range(n):
        diff = plan.differentiable[i]
        lines += [f"    a = res[{i}]", f"    o{i} = new(Tensor)",
                  f"    o{i}._data = a if type(a) is ndarray else asarray(a)",
                  f"    o{i}.requires_grad = {diff}",
                  f"    o{i}.grad_fn = {'ctx' if diff else 'None'}",
                  f"    o{i}._retains_grad = False",
                  f"    o{i}.grad = o{i}._base = o{i}._fw_grad = o{i}._backward_hooks = None",
                  f"    o{i}._vc = [0]"]
        if diff and i:
            lines.append(f"    meta_of(o{i}).output_nr = {i}")
    lines.append(f"    ctx.out_version = {0 if n else None}")
    ins_saved, outs_saved = [], []
    for kind, i in plan.saved_from:
        if kind == "input":
            ins_saved.append(i)
        elif kind == "output" and plan.differentiable[i]:
            outs_saved.append(f"('o', (o{i}._data, o{i}._vc, True), 0, {i}), ")
        elif kind == "output":
            outs_saved.append(f"('t', o{i}, 0, 0), ")
    lines.append(f"    ctx._lz = (res[{n}:], ({''.join(f'i{i}, ' for i in ins_saved)}), "
                 f"({''.join(f'i{i}._vc[0], ' for i in ins_saved)}), "
                 f"({''.join(outs_saved)}))")
    lines.append(f"    return ({''.join(f'o{i}, ' for i in range(n))})")
    ns = {"fwd": getattr(plan.fwd, "run_unchecked", plan.fwd), "new": object.__new__,
          "Node": node_cls, "Tensor": Tensor, "NO_EDGE": NO_EDGE, "edge_of": edge_of,
          "acc": grad_accumulator,
          "ndarray": np.ndarray, "asarray": np.asarray, "meta_of": meta_of}
    exec(compile("\n".join(lines) + "\n", "<aot direct>", "exec"), ns)  # noqa: S102
    return ns["direct"]


def supported(graph) -> bool:
    """Graphs the bridge handles: every output a tensor Node and every node differentiable
    or not on a gradient path (the backward builder raises otherwise). Ops recorded under
    `no_grad` (BatchNorm's running statistics, an optimizer-style update) end gradient paths
    (`grad_paths` reads each node's `grad_enabled`), as eager records no history for them."""
    return all(isinstance(o, Node) for o in graph.output_node.args[0])


def aot_function(graph, compile_graph):
    """`AOTGraph(graph, compile_graph)`, or None when the graph is not `supported` (the caller
    then runs it through eager ops)."""
    return AOTGraph(graph, compile_graph) if supported(graph) else None
