"""`out=` of an eager registry function in the graph (`torch.matmul(a, b, out=c)`, the tensor
tutorial's `torch.mul(t, t, out=z)`): the result computed as without `out=`, then written
into the caller's tensor as an in-place copy (a fresh value rebound to `out`, a graph input
written back after the graph), as eager's `out_arg.write_out` writes it. Dynamo does the same
(an out= call is the functional op plus a copy into `out`).

What eager does differently stays a named break (eager then runs it, raising or warning as it
does): an `out` of another shape (eager resizes it, with a deprecation warning when it was not
empty), a result dtype `out` cannot hold (RuntimeError), an input or `out` that requires grad
while grad mode is on (RuntimeError), `out=` a tuple, and functions PyTorch gives no `out=`.
Touches `eager.dispatch` (which functions take out=), `capture`.
"""

from __future__ import annotations

from eager.dispatch import has_out
from ir import dtypes as D

from . import eager_rules
from .recording import call_op, inplace
from .variables import ConstantVariable, TensorVariable


def call_with_out(tx, fn, args: list, kwargs: dict):
    """The tracker of `fn(*args, **kwargs)` for a registry function `fn` called with `out=`."""
    kwargs = dict(kwargs)
    out = kwargs.pop("out")
    if isinstance(out, ConstantVariable) and out.value is None:
        return call_op(tx, fn, args, kwargs)
    if fn.inplace or fn.self_var is not None or not has_out(fn.op):
        return call_op(tx, fn, args, {**kwargs, "out": out})  # eager's own TypeError/break
    if not isinstance(out, TensorVariable):
        raise tx.unsupported("out= that is not one tensor")
    result = call_op(tx, fn, args, kwargs)
    if not isinstance(result, TensorVariable):
        raise tx.unsupported(f"out= of {fn.op.name}, which returns several tensors")
    if tx.out.grad_enabled and (result.requires_grad or out.requires_grad):
        raise tx.unsupported("out= with a tensor that requires grad (eager raises)")
    if tuple(result.meta.shape) != tuple(out.meta.shape):
        raise tx.unsupported("out= of another shape (eager resizes it)")
    if result.meta.dtype is not out.meta.dtype and \
            not D.can_cast(result.meta.dtype, out.meta.dtype):
        raise tx.unsupported("out= of a dtype the result cannot be cast to (eager raises)")
    return inplace(tx, out, lambda: eager_rules._filled_like(tx, out, result))
