"""The AOT-autograd bridge: a compiled forward graph wrapped as one autograd node whose backward
is itself a compiled graph (PyTorch's `aot_autograd`, in miniature).

`aot_function(graph, compile_graph)` returns an `AOTGraph`: called with eager Tensors (one per
placeholder), it runs the compiled forward (a copy of the graph that also returns the values
the backward needs) inside an `eager.autograd.Function`, so the outputs get one grad_fn; that
node's backward runs the compiled backward graph built by `ir.autodiff.build_backward` (fused
like any graph). Plans are built once per pattern of inputs requiring grad. Without grad mode
or with no input requiring grad it runs the plain compiled graph. Gradients equal eager's
(same registry rules); double backward through it (create_graph=True) is not supported: the
backward raises. Imports `eager`, `ir` and (through `compile_graph`) codegen.
"""

from __future__ import annotations

import numpy as np

from eager import grad_mode
from eager.autograd import Function
from eager.tensor import Tensor
from ir.autodiff import build_backward, copy_graph, decompose
from ir.graph import Node


class _Plan:
    """The compiled forward (outputs + saved values) and backward graphs for one `wrt`."""

    def __init__(self, graph, wrt: tuple, compile_graph):
        self.wrt = wrt
        graph = decompose(graph)
        self.bwd_graph, saved = build_backward(graph, list(wrt))
        outs = tuple(graph.output_node.args[0])
        self.fwd_graph, _ = copy_graph(graph, name=graph.name + "_forward",
                                       extra_outputs=saved)
        fwd = self.fwd_graph
        self.n_out = len(outs)
        self.out_metas = [o.meta["val"] for o in outs]
        self.fwd = compile_graph(fwd)
        self.bwd = compile_graph(self.bwd_graph)


class _AOT(Function):
    @staticmethod
    def forward(ctx, plan, *inputs):
        res = plan.fwd(*[t._data for t in inputs])
        ctx.plan = plan
        ctx.saved_arrays = res[plan.n_out:]
        outs = tuple(Tensor._make(np.asarray(a)) for a in res[:plan.n_out])
        nd = [o for o in outs if o.dtype.category < 2]
        if nd:
            ctx.mark_non_differentiable(*nd)
        return outs

    @staticmethod
    def backward(ctx, *grads):
        if grad_mode.is_grad_enabled():
            raise RuntimeError("double backward through a compiled graph is not supported "
                               "(create_graph=True); compile without requires_grad inputs")
        plan = ctx.plan
        garrays = []
        for g, m in zip(grads, plan.out_metas):
            garrays.append(np.zeros(m.shape, m.dtype.np) if g is None else
                           np.ascontiguousarray(g._data, dtype=m.dtype.np).reshape(m.shape))
        res = iter(plan.bwd(*ctx.saved_arrays, *garrays))
        out = [None]
        for w in plan.wrt:
            r = next(res) if w else None
            out.append(Tensor._make(r) if isinstance(r, np.ndarray) else None)
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

    def __call__(self, *inputs) -> tuple:
        wrt = tuple(isinstance(t, Tensor) and t.requires_grad for t in inputs)
        if not grad_mode.is_grad_enabled() or not any(wrt):
            if self.plain is None:
                self.plain = self.compile_graph(self.graph)
            res = self.plain(*[t._data if isinstance(t, Tensor) else t for t in inputs])
            return tuple(Tensor._make(np.asarray(a)) if isinstance(a, np.ndarray) else a
                         for a in res)
        plan = self.plans.get(wrt)
        if plan is None:
            plan = self.plans[wrt] = _Plan(self.graph, wrt, self.compile_graph)
        return _AOT.apply(plan, *inputs)


def supported(graph) -> bool:
    """Graphs the bridge handles: every output a tensor Node and every node differentiable
    or not on a gradient path (the backward builder raises otherwise), and every op recorded with
    grad mode on (a `no_grad` region inside the graph keeps the eager-autograd path)."""
    return (all(isinstance(o, Node) for o in graph.output_node.args[0])
            and all(n.meta.get("grad_enabled", True) for n in graph.nodes
                    if n.op == "call_function"))


def aot_function(graph, compile_graph):
    """`AOTGraph(graph, compile_graph)`, or None when the graph is not `supported` (the caller
    then runs it through eager ops)."""
    return AOTGraph(graph, compile_graph) if supported(graph) else None
