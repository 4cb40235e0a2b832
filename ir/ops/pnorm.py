"""The p-norm reduction `norm(input, p='fro', dim=None, keepdim=False, dtype=None)` (torch.norm's
vector case, `linalg.vector_norm`'s kernel): p = 0, 1, 2, inf, -inf or any float, over the given
dims; complex input gives a real norm. A primitive reduction declared with
`reductions.reduction` (numpy's kernel, one BLAS dot for the whole-tensor 2-norm), its backward
PyTorch's norm_backward (zero where the norm or, for p < 1, the entry is zero). Matrix norms are
`ir/ops/norms.py`'s composites. Imports only `ir` and numpy.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from .elementwise import FLOATING, FLOATS, Promo, _title
from .reductions import _all_if_empty, _axis, _keep, _reduce_attrs, reduction


def _norm_attrs(inputs, attrs):
    p = attrs["p"]
    if p == "fro" or p is None:
        p = 2
    if isinstance(p, str):
        raise NotImplementedError(f"norm(): p='{p}' (a matrix norm) is not supported; use "
                                  "eager.linalg.matrix_norm")
    dt = inputs[0].dtype if attrs.get("dtype") is None else D.to_dtype(attrs["dtype"])
    if dt.category < FLOATING:
        raise RuntimeError("linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {_title(dt)}")
    attrs["p"] = float(p)
    return _reduce_attrs(inputs, attrs)


def _norm_promo(base, attrs):
    out = attrs.get("dtype") or base
    real = out.to_real() if hasattr(out, "to_real") else out
    return out, real


def _norm_impl(xp, x, p, dim, keepdim, dtype=None):
    if p == 2 and len(dim) == x.ndim and not keepdim and x.dtype.kind == "f" and \
            x.flags.c_contiguous:
        flat = x.reshape(-1)
        return xp.sqrt(xp.dot(flat, flat))  # one BLAS pass, as numpy.linalg.norm
    a = xp.abs(x)
    if p == 2:
        return xp.sqrt(xp.sum(a * a, axis=dim, keepdims=keepdim))
    if p == math.inf:
        return xp.amax(a, axis=dim, keepdims=keepdim)
    if p == -math.inf:
        return xp.amin(a, axis=dim, keepdims=keepdim)
    if p == 0:
        return xp.sum(a != 0, axis=dim, keepdims=keepdim).astype(a.dtype)
    if p == 1:
        return xp.sum(a, axis=dim, keepdims=keepdim)
    return xp.sum(a**p, axis=dim, keepdims=keepdim) ** (1.0 / p)


def _norm_backward(F, g, out, x, p, dim, keepdim, dtype=None):
    gk, ok = _keep(F, g, x, dim, keepdim), _keep(F, out, x, dim, keepdim)
    if p == 0:
        return (F.mul(F.mul(x, 0.0), gk),)
    if p == 1:
        return (F.mul(gk, F.sign(x)),)
    if math.isinf(p):
        mask = F.eq(F.abs(x), ok)
        count = F.sum(mask, dim, keepdim=True)
        return (F.where(mask, F.div(F.mul(gk, F.sign(x)), count), 0.0),)
    if p == 2:
        return (F.where(F.eq(ok, 0), 0.0, F.div(F.mul(x, gk), ok)),)
    if p < 1:  # PyTorch's norm_backward: 0 at the zero entries (|x|**(p-1) is inf there)
        scale = F.where(F.eq(x, 0), 0.0, F.mul(F.sign(x), F.pow(F.abs(x), p - 1)))
        return (F.mul(F.mul(scale, gk), F.pow(ok, 1 - p)),)
    if p < 2:  # sign(x) |x|**(p-1): 0 at the zero entries, where x |x|**(p-2) is 0 * inf
        scale = F.mul(F.sign(x), F.pow(F.abs(x), p - 1))
    else:
        scale = F.mul(x, F.pow(F.abs(x), p - 2))
    return (F.where(F.eq(ok, 0), 0.0, F.div(F.mul(scale, gk), F.pow(ok, p - 1))),)


def _norm_ref(x, p="fro", dim=None, keepdim=False, dtype=None):
    p = 2 if p == "fro" else p
    axis = _axis(_all_if_empty(dim))
    if axis is None:
        return np.linalg.norm(x.reshape(-1), ord=p, keepdims=False).reshape(
            (1,) * x.ndim if keepdim else ())
    if isinstance(axis, int):
        axis = (axis,)
    a = np.abs(x)
    if p == math.inf:
        return a.max(axis=axis, keepdims=keepdim)
    if p == 0:
        return (a != 0).sum(axis=axis, keepdims=keepdim).astype(x.dtype)
    return (a**p).sum(axis=axis, keepdims=keepdim) ** (1 / p)


reduction(
    "norm", "input, p='fro', dim=None, keepdim=False, dtype=None", _norm_impl, _norm_backward,
    _norm_ref, Promo("norm", _norm_promo), attrs_rule=_norm_attrs,
    samples=({}, {"p": 1, "dim": 1}, {"p": 0.5, "dim": (0, 2), "keepdim": True},
             {"p": 3.0, "dim": -1}), test_dtypes=FLOATS,  # p=inf: tests/test_ops.py
)
