"""`torch.autograd.grad(outputs, inputs, ...)` inside a captured function, computed in the
graph: Newton iterations and gradient penalties on a tensor made with `requires_grad_()` in
the frame, and what `eager.func.grad`/`vmap(grad(f))` do inside (inlined compositions).

- `t.requires_grad_()` on a tensor the graph made that does not require grad (a leaf, as
  eagerly): its tracker requires grad from here on (logged: a break undoes it) and is marked a
  *frame leaf*; wherever it leaves the graph (returned, live at a break) the rebuilt tensor is
  a leaf requiring grad again (`templates.py`, `"leaf"`). A tensor computed from it that
  leaves the graph and has no graph input among its differentiable ancestors cannot be
  rebuilt requiring grad (`check_leaves_out`): the frame runs eagerly.
- `autograd.grad(outputs, inputs, grad_outputs, create_graph, allow_unused,
  materialize_grads)`: reverse-mode differentiation of the recorded graph from `outputs` back
  to `inputs` (any trackers requiring grad: frame leaves, parameters, intermediates), with the
  registry's backward rules (`ir.autodiff`'s, composites by eager's whole rule), each gradient
  op recorded as a graph node; under `create_graph=True` they are recorded with grad mode on,
  so the gradient is differentiable again (a penalty's `loss.backward()` reaches the weights
  through it, as eagerly); else under no_grad.

Named breaks (eager then runs the call, raising its own errors): non-constant flags,
`is_grads_batched`, an output that does not require grad, an implicit gradient of an output
that is not one element, an input not reached without `allow_unused`, inputs or outputs that
are not tensors, dynamic-shape entries (the gradient ops' attributes are concrete: the
entry recaptures static). Touches `ir.autodiff`, `capture`.
"""

from __future__ import annotations

import inspect

from ir import REGISTRY, OpNamespace
from ir.autodiff import backprop_node, sum_grads

from .dynamic import Specialize
from .variables import ConstantVariable, SequenceVariable, TensorVariable, TupleVariable


def requires_grad_rule(tx, fn, args: list, kwargs: dict):
    """`Tensor.requires_grad_(t, requires_grad=True)` (module doc)."""
    from .vocabulary import no_graph_form

    bound = _bind(fn, args, kwargs)
    t, flag = bound["self"], bound.get("requires_grad", ConstantVariable(True))
    if not isinstance(t, TensorVariable) or not flag.is_constant():
        raise no_graph_form(tx, fn, "arguments capture does not model")
    if bool(flag.value) == t.requires_grad:
        return t
    if not flag.value or t.node.op != "call_function" or \
            not t.meta.dtype.is_floating_point:
        raise no_graph_form(tx, fn, "a graph input, requires_grad_(False), or an integer "
                                    "tensor")
    t.requires_grad, t.frame_leaf = True, True
    leaves = tx.out.__dict__.setdefault("frame_leaves", set())
    leaves.add(t.node)

    def undo():
        t.requires_grad, t.frame_leaf = False, False
        leaves.discard(t.node)

    tx.out.side_effects.undo.append(undo)
    return t


def check_leaves_out(out, v) -> None:
    """Raise CannotResume when tensor tracker `v`, leaving the graph, requires grad only
    through frame leaves (no graph input among its differentiable ancestors): the compiled
    graph's autograd starts at its inputs, so it would come back not requiring grad."""
    from .resume import CannotResume

    seen, stack, leaf = set(), [v.node], False
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        if n.op == "placeholder":
            return
        if n in out.frame_leaves:
            leaf = True
            continue
        if n.op == "call_function" and n.meta.get("grad_enabled", True) and \
                n.target.differentiable:
            stack.extend(n.all_input_nodes)
    if leaf:
        raise CannotResume("a tensor computed from a requires_grad_() leaf of the frame "
                           "leaves the graph")


def _bind(fn, args, kwargs) -> dict:
    return dict(inspect.signature(fn).bind(*args, **kwargs).arguments)


def _tensors(v) -> list | None:
    items = v.items if isinstance(v, SequenceVariable) else [v]
    return items if all(isinstance(x, TensorVariable) for x in items) else None


def grad_rule(tx, fn, args: list, kwargs: dict):
    """`eager.autograd.grad(...)` (module doc)."""
    from .vocabulary import no_graph_form

    b = _bind(fn, args, kwargs)
    flags = {k: b.get(k, ConstantVariable(d)) for k, d in (
        ("create_graph", False), ("allow_unused", None), ("is_grads_batched", False),
        ("materialize_grads", False))}
    if not all(v.is_constant() for v in flags.values()) or flags["is_grads_batched"].value:
        raise no_graph_form(tx, fn, "flags that are not constants, or is_grads_batched")
    create, unused = bool(flags["create_graph"].value), flags["allow_unused"].value
    materialize = bool(flags["materialize_grads"].value)
    unused = materialize if unused is None else unused
    outs, ins = _tensors(b["outputs"]), _tensors(b["inputs"])
    gouts = b.get("grad_outputs", ConstantVariable(None))
    gouts = [None] * len(outs or ()) if gouts.is_constant() and gouts.value is None \
        else _tensors(gouts)
    if outs is None or ins is None or gouts is None or len(gouts) != len(outs) or not ins or \
            not all(o.requires_grad for o in outs) or \
            not all(x.requires_grad for x in ins) or \
            any(g is None and _numel(o) != 1 for o, g in zip(outs, gouts)):
        raise no_graph_form(tx, fn, "arguments eager refuses or capture does not model")
    if any(getattr(t, "shadow", None) is not None for t in outs + ins):
        raise Specialize(None)
    grads = _backprop(tx, outs, gouts, ins, create)
    if any(g is None for g in grads) and not unused:
        raise no_graph_form(tx, fn, "an input the outputs do not depend on")
    if materialize:
        grads = [g if g is not None else _zeros(tx, x) for g, x in zip(grads, ins)]
    return TupleVariable([ConstantVariable(None) if g is None else g for g in grads])


def _numel(t) -> int:
    n = 1
    for s in t.meta.shape:
        n *= s
    return n


def _zeros(tx, like):
    from .recording import record

    return record(tx, REGISTRY["new_zeros"], (like, tuple(like.meta.shape)),
                  {"dtype": like.meta.dtype})


def _backprop(tx, outs, gouts, ins, create: bool) -> list:
    """The gradients of `outs` (seeded by `gouts`, ones where None) with respect to `ins`,
    recorded as graph nodes (None where no path)."""
    from .recording import record

    graph = tx.out.graph
    leaves = {x.node for x in ins}
    needs = set(leaves)
    nodes = list(graph.nodes)
    for n in nodes:
        if n.op == "call_function" and n not in leaves and n.target.differentiable and \
                n.meta.get("grad_enabled", True) and \
                any(a in needs for a in n.all_input_nodes) and _floating(n):
            needs.add(n)
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = create
    try:
        F = OpNamespace(lambda op, inputs, attrs: record(tx, op, inputs, attrs))
        trackers: dict = {}

        def fv(n):
            if n not in trackers:
                trackers[n] = TensorVariable(n, n.meta["val"], create and n in needs)
            return trackers[n]

        grads: dict = {}
        for o, g in zip(outs, gouts):
            if o.node in needs:
                seed = g if g is not None else F.add(
                    F.new_zeros(o, tuple(o.meta.shape), dtype=o.meta.dtype), 1)
                grads.setdefault(o.node, []).append(seed)
        for n in reversed(nodes):
            if n in leaves or n not in grads or n not in needs:
                continue
            backprop_node(F, n, sum_grads(F, grads.pop(n)), fv, needs, grads)
        return [sum_grads(F, grads[x.node]) if grads.get(x.node) else None for x in ins]
    finally:
        tx.out.grad_enabled = prev


def _floating(n) -> bool:
    v = n.meta.get("val")
    return getattr(v, "dtype", None) is not None and v.dtype.category >= 2


def jacobian_rule(tx, fn, args: list, kwargs: dict):
    """`autograd.functional.jacobian(func, x)` (what `torch.func.jacrev`/`jacfwd` call) for one
    tensor input and one tensor output: `func` inlined on a frame leaf copy of `x` under grad
    mode (a view of `x` when `create_graph` and `x` requires grad: the Jacobian stays
    differentiable), then one recorded reverse pass per output element (as eager's), stacked to
    `output.shape + x.shape`. Other forms stay a named break."""
    from .calls import call_function, get_attr
    from .recording import record
    from .vocabulary import no_graph_form

    b = _bind(fn, args, kwargs)
    func, x = b["func"], b["inputs"]
    flags = [b.get(k, ConstantVariable(d)) for k, d in (
        ("create_graph", False), ("strict", False), ("strategy", "reverse-mode"))]
    if not isinstance(x, TensorVariable) or not all(f.is_constant() for f in flags) or \
            flags[1].value or not x.meta.dtype.is_floating_point or \
            getattr(x, "shadow", None) is not None:
        raise no_graph_form(tx, fn, "several inputs, strict=True, or a non-float input")
    create = bool(flags[0].value)
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = True
    try:
        if create and x.requires_grad:  # (eager's `_prepare`: still connected to x)
            xd = call_function(tx, get_attr(tx, x, "view_as"), [x], {})
        else:
            xd = call_function(tx, get_attr(tx, x, "detach"), [], {})
            xd = requires_grad_rule(tx, _REQUIRES_GRAD, [xd], {})
        out = call_function(tx, func, [xd], {})
    finally:
        tx.out.grad_enabled = prev
    if not isinstance(out, TensorVariable) or not out.requires_grad or \
            getattr(out, "shadow", None) is not None:
        raise no_graph_form(tx, fn, "an output that is not one tensor depending on the input")
    n, rows = _numel(out), []
    flat = record(tx, REGISTRY["reshape"], (out,), {"shape": (n,)})
    for k in range(n):
        o_k = record(tx, REGISTRY["select"], (flat,), {"dim": 0, "index": k})
        (g,) = _backprop(tx, [o_k], [None], [xd], create)
        rows.append(g if g is not None else _zeros(tx, x))
    jac = record(tx, REGISTRY["stack"], tuple(rows), {"dim": 0})
    return record(tx, REGISTRY["reshape"], (jac,),
                  {"shape": tuple(out.meta.shape) + tuple(x.meta.shape)})


def _requires_grad():
    from eager import Tensor

    return Tensor.requires_grad_


_REQUIRES_GRAD = _requires_grad()
