"""Reductions and composites over dimensions: sum, amax, mean, softmax, log_softmax."""

from __future__ import annotations


import numpy as np

from ..opdef import (
    OpDef, normalize_dim, normalize_dims, register,
)
from .elementwise import FLOATS



def _reduce_attrs(inputs, attrs):
    attrs["dim"] = normalize_dims(attrs["dim"], inputs[0].ndim)
    return attrs


def _reduce_shape(shape, dim, keepdim=False, **_):
    if keepdim:
        return tuple(1 if i in dim else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dim)


def _keep(F, t, x, dim, keepdim):
    """A reduced tensor reshaped so that it broadcasts against the unreduced input `x`."""
    return t if keepdim else F.reshape(t, _reduce_shape(tuple(x.shape), dim, True))


register(OpDef(
    "sum", "reduction", "input, dim=None, keepdim=False, *, dtype=None", 1, "sum",
    shape=_reduce_shape, attrs_rule=_reduce_attrs,
    impl=lambda xp, x, dim, keepdim, dtype=None: xp.sum(x, axis=dim, keepdims=keepdim),
    backward=lambda F, g, out, x, dim, keepdim, dtype=None: (
        F.expand(_keep(F, g, x, dim, keepdim), tuple(x.shape)),
    ),
    ref=lambda x, dim, keepdim=False, dtype=None: np.sum(x, axis=dim, keepdims=keepdim),
    samples=({"dim": None}, {"dim": 1, "keepdim": True}, {"dim": (0, -1)}),
))


def _amax_backward(F, g, out, x, dim, keepdim):
    mask = F.eq(x, _keep(F, out, x, dim, keepdim))
    count = F.sum(mask, dim, keepdim=True)
    return (F.where(mask, F.div(_keep(F, g, x, dim, keepdim), count), 0.0),)


def _amax_impl(xp, x, dim, keepdim):
    if x.size == 0 and any(x.shape[d] == 0 for d in dim):
        raise IndexError("amax(): Expected reduction dim to have non-zero size")
    return xp.amax(x, axis=dim, keepdims=keepdim)


register(OpDef(
    "amax", "reduction", "input, dim=(), keepdim=False", 1, "keep",
    shape=_reduce_shape, attrs_rule=lambda i, a: _reduce_attrs(i, {**a, "dim": a["dim"] or None}),
    impl=_amax_impl, backward=_amax_backward,
    ref=lambda x, dim=(), keepdim=False: np.amax(x, axis=dim or None, keepdims=keepdim),
    samples=({"dim": 1}, {"dim": (0, 1), "keepdim": True}),
))


def _mean_decomp(F, x, dim, keepdim, dtype=None):
    count = 1
    for d in dim:
        count *= x.shape[d]
    return F.div(F.sum(x, dim, keepdim, dtype=dtype), count)


register(OpDef(
    "mean", "composite", "input, dim=None, keepdim=False, *, dtype=None", 1, "float_only",
    shape=_reduce_shape, attrs_rule=_reduce_attrs, decomp=_mean_decomp,
    ref=lambda x, dim=None, keepdim=False, dtype=None: np.mean(x, axis=dim, keepdims=keepdim),
    samples=({"dim": None}, {"dim": -1, "keepdim": True}), test_dtypes=FLOATS,
))


def _log_softmax_decomp(F, x, dim, dtype=None):
    if dtype is not None:
        x = F.cast(x, dtype)
    shifted = F.sub(x, F.amax(x, dim, keepdim=True))
    return F.sub(shifted, F.log(F.sum(F.exp(shifted), dim, keepdim=True)))


def _softmax_decomp(F, x, dim, dtype=None):
    if dtype is not None:
        x = F.cast(x, dtype)
    e = F.exp(F.sub(x, F.amax(x, dim, keepdim=True)))
    return F.div(e, F.sum(e, dim, keepdim=True))


def _softmax_ref(x, dim, dtype=None):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _dim_attr(inputs, attrs):
    attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
    return attrs


for _name, _decomp, _ref in [
    ("softmax", _softmax_decomp, _softmax_ref),
    ("log_softmax", _log_softmax_decomp, lambda x, dim, dtype=None: np.log(_softmax_ref(x, dim))),
]:
    register(OpDef(
        _name, "composite", "input, dim, dtype=None", 1, "int_to_float",
        shape=lambda s, dim, dtype=None: s, attrs_rule=_dim_attr, decomp=_decomp, ref=_ref,
        samples=({"dim": -1}, {"dim": 0}), test_dtypes=FLOATS,
    ))
