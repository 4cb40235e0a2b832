"""Forward-mode AD: dual tensors (PyTorch's `torch.autograd.forward_ad`).

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)
        jvp = forward_ad.unpack_dual(y).tangent     # J_f(primal) @ tangent

A dual tensor carries its tangent in the Tensor slot `_fw_grad`. While a level is open, a
dispatch post-hook computes the tangent of every primitive op's output whose operands carry
tangents: with the op's registry `jvp` rule when it has one; views apply the same view to the
tangent (so a view's tangent is a view of its base's tangent); otherwise the jvp is derived from
the registry backward rule by the double-vjp trick: the rule is linear in the output gradient
u, so for s(u) = Re sum_i <t_i, vjp_i(u)>, ds/du = J t (complex inputs included, with PyTorch's
conjugate Wirtinger convention). Composites propagate through their decompositions.
In-place ops move the result's tangent into the tensor written. Tangents are cleared when the
level exits. Only one level at a time, as in PyTorch.

Touches Tensor's `_fw_grad` slot and `eager.DISPATCH.POST_HOOKS` (only while a level is open).
"""

from __future__ import annotations

import weakref
from collections import namedtuple
from types import SimpleNamespace

import numpy as np

from ir.opdef import sum_to_shape

from .. import grad_mode
from ..tensor import Tensor
from .engine import grad

_LEVEL: list = []  # the open level (at most one)
_DUALS: dict = {}  # id -> weakref of the tensors holding a tangent (cleared on exit)
_BUSY = [False]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])


def enter_dual_level() -> int:
    """Open a forward-AD level (RuntimeError when one is already open: nesting unsupported)."""
    if _LEVEL:
        raise RuntimeError("Nested forward mode AD is not supported at the moment")
    _LEVEL.append(0)
    if _jvp_hook not in DISPATCH.POST_HOOKS:
        DISPATCH.POST_HOOKS.append(_jvp_hook)
    return 0


def exit_dual_level(*, level=None) -> None:
    """Close the level: every tangent made inside is dropped."""
    if not _LEVEL:
        raise RuntimeError("Trying to exit a forward AD level that was not the last one that "
                           "was created. This is not supported.")
    _LEVEL.clear()
    for ref in list(_DUALS.values()):
        t = ref()
        if t is not None:
            t._fw_grad = None
    _DUALS.clear()
    if _jvp_hook in DISPATCH.POST_HOOKS:
        DISPATCH.POST_HOOKS.remove(_jvp_hook)


class dual_level:
    """Context manager opening a forward-AD level (`torch.autograd.forward_ad.dual_level`)."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()
        return False


def set_tangent(t: Tensor, tangent: Tensor) -> None:
    t._fw_grad = tangent
    key = id(t)
    _DUALS[key] = weakref.ref(t, lambda _: _DUALS.pop(key, None))


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A view of `tensor` carrying `tangent` (same shape; both floating point or complex).

    RuntimeError outside a level or for a shape mismatch, ValueError for integer dtypes
    (PyTorch's messages)."""
    if not _LEVEL:
        raise RuntimeError("Trying to create a dual Tensor for forward AD but no level exists, "
                           "make sure to enter_dual_level() first.")
    if tensor.dtype.category < 2:
        raise ValueError(f"Expected primal to be floating point or complex, but got: "
                         f"eager.{tensor.dtype.name}")
    if tangent.dtype.category < 2:
        raise ValueError(f"Expected tangent to be floating point or complex, but got: "
                         f"eager.{tangent.dtype.name}")
    if tuple(tangent.shape) != tuple(tensor.shape):
        raise RuntimeError("Trying to set a forward gradient that has a different size than "
                           "that of the original Tensor, this is not supported. Tensor is of "
                           f"size {list(tensor.shape)} while the given forward gradient is of "
                           f"size {list(tangent.shape)}.")
    dual = _alias(tensor)
    set_tangent(dual, tangent)
    return dual


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    """(primal, tangent): the primal is a view of `tensor` without tangent; the tangent is
    None for a tensor without one."""
    tangent = tensor._fw_grad if _LEVEL else None
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    return UnpackedDualTensor(_alias(tensor), tangent)


def _alias(t: Tensor) -> Tensor:
    """A view of `t` (same data, version counter and history)."""
    if t.requires_grad and grad_mode.is_grad_enabled():
        out = ALIAS[0].apply(t)
    else:
        out = Tensor._make(t._data)
        out._vc, out._base = t._vc, (t._base if t._base is not None else t)
    out._fw_grad = None
    return out


# The identity Function (`function.Alias`: a view whose gradient and tangent pass through),
# registered by function.py, which builds on this module.
ALIAS: list = [None]

# eager.dispatch's pieces forward AD works through, registered by dispatch when it is imported
# (dispatch builds on eager.autograd): its recording namespace `F`, `apply(op, inputs, attrs)`
# and `POST_HOOKS`, the hooks every eagerly run primitive op calls.
DISPATCH = SimpleNamespace(F=None, apply=None, POST_HOOKS=None)


# ---------------------------------------------------------------- propagation


def _jvp_hook(op, inputs, attrs, out) -> None:
    if _BUSY[0]:
        return
    tangents = tuple(x._fw_grad if isinstance(x, Tensor) else None for x in inputs)
    if all(t is None for t in tangents) or not isinstance(out, Tensor):
        return
    if out.dtype.category < 2 or op.backward is None and op.jvp is None:
        return
    _BUSY[0] = True
    try:
        with grad_mode.no_grad():
            t = _tangent(op, inputs, attrs, out, tangents)
    finally:
        _BUSY[0] = False
    if t is not None:
        if t.dtype is not out.dtype:
            F = DISPATCH.F
            t = F.real(t) if t.dtype.is_complex and not out.dtype.is_complex else t
            t = F.cast(t, out.dtype) if t.dtype is not out.dtype else t
        set_tangent(out, t)


def _tangent(op, inputs, attrs, out, tangents):
    F = DISPATCH.F
    if op.jvp is not None:
        return op.jvp(F, tangents, out.detach(), *_detached(inputs), **attrs)
    if op.kind == "view" and len(inputs) == 1:
        return DISPATCH.apply(op, (tangents[0],), attrs)
    return derived_jvp(op, inputs, attrs, out, tangents)


def _detached(inputs):
    return tuple(x.detach() if isinstance(x, Tensor) else x for x in inputs)


def derived_jvp(op, inputs, attrs, out, tangents):
    """J t from the backward rule: d/du Re sum_i <t_i, vjp_i(u)> at u = 0 (the rule is linear
    in u), by one reverse pass through the rule's recorded ops."""
    F = DISPATCH.F
    arr = out._data
    u = Tensor._make(np.zeros(arr.shape, arr.dtype) if type(arr) is np.ndarray else arr * 0,
                     requires_grad=True)
    ins = _detached(inputs)
    with grad_mode.enable_grad():
        grads = op.backward(F, u, out.detach(), *ins, **attrs)
        s = None
        for x, gx, t in zip(ins, grads, tangents):
            if t is None or not isinstance(gx, Tensor) or not gx.requires_grad:
                continue
            gx = sum_to_shape(F, gx, tuple(x.shape))
            if gx.dtype.is_complex:  # Re<t, gx> on real coordinates: only real ops' rules
                tc = t if t.dtype.is_complex else F.cast(t, gx.dtype)
                term = F.sum(F.add(F.mul(F.real(tc).detach(), F.real(gx)),
                                   F.mul(F.imag(tc).detach(), F.imag(gx))))
            elif t.dtype.is_complex:
                term = F.sum(F.mul(F.real(t), gx))
            else:
                term = F.sum(F.mul(t, gx))
            s = term if s is None else F.add(s, term)
    if s is None:
        return Tensor._make(np.zeros(arr.shape, arr.dtype))
    (jt,) = grad(s, u, allow_unused=True, materialize_grads=True)
    return jt


def inplace_tangent(target: Tensor, result: Tensor) -> None:
    """After `target` received `result`'s values in place: it also takes its tangent (written
    into its existing tangent, so that views of the tangent see it)."""
    t = result._fw_grad
    if t is None:
        if target._fw_grad is not None:  # overwritten by a value without tangent
            target._fw_grad._data[...] = 0
        return
    if target._fw_grad is not None and target._fw_grad._data.flags.writeable:
        target._fw_grad._data[...] = t._data
    else:
        set_tangent(target, t)
