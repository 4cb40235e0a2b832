"""`MyFn.apply(*args)` of a user's `autograd.Function` subclass inside a captured function:
no graph break (Dynamo's autograd.Function speculation gives 1 graph, 0 breaks).

`forward` is inlined under no_grad with a traced `ctx` (a `NewObjectVariable`): its ops are
graph nodes; `ctx.save_for_backward`, `mark_non_differentiable`, `needs_input_grad`,
attribute stores (tensors and constants) and `forward(*args)` + `setup_context(ctx, inputs,
output)` are modelled. When eager would record (grad mode on, a tensor argument requires
grad), each differentiable output is tied to one token (`ir/ops/custom_function.py`) whose
backward calls the user's `backward` with a ctx of eager's own class (`saved_tensors`,
`needs_input_grad`, the attributes set in forward), through `FunctionNode.apply`: its
gradient checks, `sum_to_shape`, dtype casts, `once_differentiable` and materialized zero
gradients are eager's, so gradients equal eager's. The backward runs eagerly when the graph's
backward runs (whatever it does: prints, numpy, data-dependent code), inside the compiled
backward graph; Dynamo traces it into a graph where it can.

Named breaks at the call (the call then runs eagerly, as before): a break inside `forward`,
keyword arguments, `mark_dirty` (in-place forwards), `set_materialize_grads(False)`, complex
outputs, a `ctx` attribute that is neither a tensor nor a constant, symbolic sizes (a dynamic
entry recaptures static). Touches `eager` (the ctx class, wrapping arrays), `ir`, `capture`.
"""

from __future__ import annotations

from eager import Tensor
from eager.autograd.engine import NAMESPACES
from eager.autograd.function import Function, _backward_class
from ir import REGISTRY
from ir import dtypes as D
from ir.ops import custom_function as ops

from .objects import NewObjectVariable, store_attr
from .pycalls import _const_data, _is_const_data
from .variables import ConstantVariable, FunctionVariable, TensorVariable, TupleVariable

APPLY = Function.apply.__func__
_METHODS = {"save_for_backward": "_to_save", "save_for_forward": "_to_save_fw",
            "mark_dirty": "_dirty", "mark_non_differentiable": "_non_diff"}
_RESERVED = {"needs_input_grad", "materialize_grads", "set_materialize_grads", *_METHODS,
             *_METHODS.values()}


class _Ctx:
    """The class a traced ctx reports (its methods are `CtxMethodVariable`s)."""


class CtxMethodVariable(NewObjectVariable):
    """`ctx.save_for_backward` and kin, bound to the traced ctx `obj`."""

    def __init__(self, obj, name: str):
        super().__init__(_Ctx)
        self.obj, self.name = obj, name

    def describe(self) -> str:
        return f"ctx.{self.name}"

    def call(self, tx, args: list, kwargs: dict):
        if kwargs:
            raise tx.unsupported(f"ctx.{self.name} with keyword arguments")
        if self.name == "set_materialize_grads":
            store_attr(tx, self.obj, "materialize_grads", args[0], raw=True)
        else:
            store_attr(tx, self.obj, _METHODS[self.name], TupleVariable(list(args)), raw=True)
        return ConstantVariable(None)


def _make_ctx(needs: tuple) -> NewObjectVariable:
    ctx = NewObjectVariable(_Ctx)
    ctx.attrs["needs_input_grad"] = ConstantVariable(needs)
    ctx.attrs["materialize_grads"] = ConstantVariable(True)
    for name in [*_METHODS, "set_materialize_grads"]:
        ctx.attrs[name] = CtxMethodVariable(ctx, name)
    return ctx


def apply_rule(tx, cls_var, args: list, kwargs: dict):
    """The tracker of `cls.apply(*args)` (module doc)."""
    from .breaks import GraphBreak
    from .calls import call_function

    cls = cls_var.value
    if getattr(cls_var, "source", None) is not None:
        tx.out.guards.identity(cls_var.source, cls, cls.__name__)
    if kwargs:
        raise tx.unsupported(f"{cls.__name__}.apply with keyword arguments")
    if cls.backward is Function.backward and cls.vjp is not Function.vjp:
        cls.backward = cls.vjp  # (as eager's apply)
    recording = tx.out.grad_enabled and any(
        isinstance(a, TensorVariable) and a.requires_grad for a in args)
    needs = tuple(recording and isinstance(a, TensorVariable) and a.requires_grad
                  for a in args)
    ctx = _make_ctx(needs)
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = False
    try:
        if cls.setup_context is not Function.setup_context:
            out = call_function(tx, FunctionVariable(cls.forward, None), list(args), {})
            call_function(tx, FunctionVariable(cls.setup_context, None),
                          [ctx, TupleVariable(list(args)), out], {})
        else:
            out = call_function(tx, FunctionVariable(cls.forward, None), [ctx, *args], {})
    except GraphBreak as gb:
        raise tx.unsupported(f"autograd.Function {cls.__name__}.forward: "
                             f"{gb.reason.reason}") from None
    finally:
        tx.out.grad_enabled = prev
    if not recording:
        return out
    return _tie_outputs(tx, cls, ctx, list(args), out)


def _tie_outputs(tx, cls, ctx, args: list, out):
    """Each differentiable output of `out` tied to the token of this call (module doc)."""
    single = not isinstance(out, TupleVariable)
    outs = [out] if single else list(out.items)
    attrs = ctx.attrs
    if "_dirty" in attrs:
        raise tx.unsupported(f"autograd.Function {cls.__name__}: ctx.mark_dirty (an in-place "
                             "forward)")
    if not (attrs["materialize_grads"].is_constant() and attrs["materialize_grads"].value):
        raise tx.unsupported(f"autograd.Function {cls.__name__}: "
                             "ctx.set_materialize_grads(False)")
    non_diff = {id(t) for t in getattr(attrs.get("_non_diff"), "items", ())}
    diff = [i for i, o in enumerate(outs) if isinstance(o, TensorVariable)
            and id(o) not in non_diff and o.meta.dtype.category >= D.FLOATING]
    wrt = [a for a in args if isinstance(a, TensorVariable) and a.requires_grad]
    operands, saved_at, tensor_attrs, const_attrs = _backward_operands(tx, cls, ctx, wrt)
    tensors = [o for o in outs if isinstance(o, TensorVariable)] + operands
    if any(o.meta.dtype.is_complex for o in tensors):
        raise tx.unsupported(f"autograd.Function {cls.__name__}: complex tensors")
    if any(not all(type(s) is int for s in t.meta.shape) for t in tensors) or \
            any(getattr(t, "shadow", None) is not None for t in tensors):
        from .dynamic import Specialize

        raise Specialize(None)
    if not diff:
        return out
    offsets, size = {}, 0
    for i in diff:
        offsets[i] = size
        size += ops._numel(outs[i].meta.shape)
    run = _RunBackward(
        cls, needs=tuple(isinstance(a, TensorVariable) and a.requires_grad for a in args),
        in_meta=[(tuple(a.meta.shape), a.meta.dtype) if isinstance(a, TensorVariable)
                 else None for a in args],
        outs_meta=[(tuple(o.meta.shape), o.meta.dtype) if isinstance(o, TensorVariable)
                   else None for o in outs],
        diff=[(i, offsets[i]) for i in diff], saved_at=saved_at, tensor_attrs=tensor_attrs,
        const_attrs=const_attrs,
        wrt_args=[i for i, a in enumerate(args) if isinstance(a, TensorVariable)
                  and a.requires_grad])
    from .recording import record

    key = ops.register(run, tx.out.graph)
    token = record(tx, REGISTRY["_autograd_fn_"], tuple(wrt + operands),
                   {"key": key, "size": size, "n_wrt": len(wrt)})
    for i in diff:
        outs[i] = record(tx, REGISTRY["_autograd_fn_out"], (outs[i], token),
                         {"key": key, "offset": offsets[i]})
    return outs[0] if single else TupleVariable(outs)


def _backward_operands(tx, cls, ctx, wrt: list):
    """The tensors the user's backward reads (saved, stored on ctx) as token operands after
    `wrt`: (operands, saved_at, {attr: operand index}, {attr: constant})."""
    operands, saved_at, tensor_attrs, const_attrs = [], [], {}, {}

    def index_of(t) -> int:
        operands.append(t)
        return len(wrt) + len(operands) - 1

    for t in getattr(ctx.attrs.get("_to_save"), "items", ()):
        if isinstance(t, TensorVariable):
            saved_at.append(index_of(t))
        elif t.is_constant() and t.value is None:
            saved_at.append(None)
        else:
            raise TypeError("save_for_backward can only save variables, but argument "
                            f"{len(saved_at)} is of type {t.python_type().__name__}")
    for name, v in ctx.attrs.items():
        if name in _RESERVED:
            continue
        if isinstance(v, TensorVariable):
            tensor_attrs[name] = index_of(v)
        elif _is_const_data(v):
            const_attrs[name] = _const_data(v)
        else:
            raise tx.unsupported(f"autograd.Function {cls.__name__}: ctx.{name} holds "
                                 f"{v.describe()} (capture carries tensors and constants "
                                 "to the backward)")
    return operands, saved_at, tensor_attrs, const_attrs


class _RunBackward:
    """What `_autograd_fn_backward_` calls: the user's backward on eager Tensors through
    eager's `FunctionNode.apply`, the input gradients packed as one float64 vector."""

    def __init__(self, cls, **spec):
        self.cls = cls
        self.__dict__.update(spec)

    def __call__(self, g, *xs):
        import numpy as np

        cls = self.cls
        ctx = _backward_class(cls)(cls, len(self.needs))
        ctx.needs_input_grad = self.needs
        ctx.next_functions = tuple((True, 0) if n else (None, 0) for n in self.needs)
        ctx._in_meta = self.in_meta
        ctx.num_outputs, ctx._outs = len(self.outs_meta), self.outs_meta
        ctx._to_save = tuple(None if k is None else Tensor._make(xs[k]) for k in self.saved_at)
        for name, k in self.tensor_attrs.items():
            setattr(ctx, name, Tensor._make(xs[k]))
        for name, v in self.const_attrs.items():
            setattr(ctx, name, v)
        grads = [None if m is None else Tensor._make(np.zeros(m[0], m[1].np))
                 for m in self.outs_meta]
        for i, off in self.diff:
            shape, dtype = self.outs_meta[i]
            n = ops._numel(shape)
            grads[i] = Tensor._make(np.asarray(g[off:off + n]).reshape(shape).astype(dtype.np))
        res = ctx.apply(grads if len(grads) > 1 else grads[0], NAMESPACES[False])
        parts = []
        self.present = tuple(res[i] is not None for i in self.wrt_args)  # (`ops.holds`)
        for i in self.wrt_args:
            shape = self.in_meta[i][0]
            gi = res[i]
            parts.append(np.zeros(ops._numel(shape)) if gi is None else
                         np.asarray(gi.numpy(), np.float64).reshape(-1))
        return np.concatenate(parts) if parts else np.zeros(0)
