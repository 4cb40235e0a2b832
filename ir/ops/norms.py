"""`torch.linalg`'s norms: `vector_norm`, `matrix_norm`, `norm` (composites over registry ops;
the spectral and nuclear norms through svd's S). For complex input the norm is real, as in
PyTorch; `dtype=` of the other kind raises PyTorch's RuntimeError. Imports nothing outside
`ir`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import TensorMeta, normalize_dim, normalize_dims
from .indexing import arr, declare
from .linalg import FLOATS_COMPLEX
from .matrix import _float

# ---------------------------------------------------------------- norms


def _norm_dims(dim, ndim):
    return None if dim is None else normalize_dims(dim, ndim)


def _norm_cast(F, op, x, dtype):
    """`dtype=`: cast first; a complex input takes a complex dtype (its norm is then of the
    real counterpart), a real input a real one, as PyTorch requires."""
    if dtype is None:
        return x
    dtype = D.to_dtype(dtype)
    if dtype.is_complex != x.dtype.is_complex:
        what = "complex for complex" if x.dtype.is_complex else "real for real"
        raise RuntimeError(f"linalg.{op}: dtype should be {what} inputs, but got {dtype.title}")
    return F.cast(x, dtype)


def _vector_norm_decomp(F, x, ord=2, dim=None, keepdim=False, *, dtype=None):
    x = _norm_cast(F, "vector_norm", x, dtype)
    dims = _norm_dims(dim, x.ndim)
    ax = F.abs(x)
    if ord == math.inf:
        return F.amax(ax, dims or (), keepdim)
    if ord == -math.inf:
        return F.neg(F.amax(F.neg(ax), dims or (), keepdim))
    if ord == 0:  # a count; its (zero) gradient still flows, as in PyTorch
        return F.sum(F.where(F.ne(ax, 0), 1.0, F.mul(ax, 0.0)), dims, keepdim)
    if ord == 1:
        return F.sum(ax, dims, keepdim)
    if ord == 2:
        return F.sqrt(F.sum(F.mul(ax, ax), dims, keepdim))
    return F.pow(F.sum(F.pow(ax, ord), dims, keepdim), 1.0 / ord)


def _vector_norm_ref(x, ord=2, dim=None, keepdim=False, dtype=None):
    x = np.abs(x).astype(np.float64)
    axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
    if ord == math.inf:
        r = x.max(axis=axis, keepdims=keepdim)
    elif ord == -math.inf:
        r = x.min(axis=axis, keepdims=keepdim)
    elif ord == 0:
        r = (x != 0).sum(axis=axis, keepdims=keepdim)
    else:
        r = (x ** ord).sum(axis=axis, keepdims=keepdim) ** (1 / ord)
    return np.asarray(r)


def _vector_norm_samples(rng, dt):
    for attrs in ({}, {"ord": 1, "dim": 1}, {"ord": math.inf, "dim": (0, 1), "keepdim": True},
                  {"ord": -math.inf, "dim": -1}, {"ord": 3, "dim": 0}, {"ord": 0}):
        yield (arr(rng, (3, 4), dt),), attrs


declare(
    "linalg_vector_norm", "composite", "x, ord=2, dim=None, keepdim=False, *, dtype=None",
    method=False, attrs_rule=_float("vector_norm", 0), decomp=_vector_norm_decomp,
    ref=_vector_norm_ref, sample_inputs=_vector_norm_samples, test_dtypes=FLOATS_COMPLEX,
)


def _matrix_norm_decomp(F, a, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    a = _norm_cast(F, "matrix_norm", a, dtype)
    d0, d1 = normalize_dim(dim[0], a.ndim), normalize_dim(dim[1], a.ndim)
    if d0 == d1:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({d0}, {d1})")
    if ord == "fro":
        return _vector_norm_decomp(F, a, 2, (d0, d1), keepdim)
    rest = [d for d in range(a.ndim) if d not in (d0, d1)]
    m = F.permute(a, tuple(rest) + (d0, d1))
    if ord in ("nuc", 2, -2):
        s = F._linalg_svd(m, False, "S")
        r = F.sum(s, -1) if ord == "nuc" else F.amax(s, -1) if ord == 2 else \
            F.neg(F.amax(F.neg(s), -1))
    elif ord in (1, -1, math.inf, -math.inf):
        sums = F.sum(F.abs(m), -2 if ord in (1, -1) else -1)
        r = F.amax(sums, -1) if ord > 0 else F.neg(F.amax(F.neg(sums), -1))
    else:
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    if keepdim:
        for d in sorted((d0, d1)):
            r = F.unsqueeze(r, d)
    return r


declare(
    "linalg_matrix_norm", "composite", "A, ord='fro', dim=(-2, -1), keepdim=False, *, dtype=None",
    method=False, attrs_rule=_float("matrix_norm"), decomp=_matrix_norm_decomp,
    ref=lambda a, ord="fro", dim=(-2, -1), keepdim=False, dtype=None: np.linalg.norm(
        a, ord, axis=dim, keepdims=keepdim),
    sample_inputs=lambda rng, dt: (((arr(rng, (2, 3, 4), dt),), {"ord": o}) for o in (
        "fro", "nuc", 2, -2, 1, -1, math.inf, -math.inf)),
    test_dtypes=FLOATS_COMPLEX,
)


def _norm_decomp(F, a, ord=None, dim=None, keepdim=False, *, dtype=None):
    if dim is not None and not isinstance(dim, int) and len(dim) == 2:
        return _matrix_norm_decomp(F, a, "fro" if ord is None else ord, dim, keepdim, dtype=dtype)
    if dim is None and ord is not None:
        if a.ndim == 2:
            return _matrix_norm_decomp(F, a, ord, (-2, -1), keepdim, dtype=dtype)
        if a.ndim != 1:
            raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input "
                               f"must be 1D or 2D. Got {a.ndim}D.")
    return _vector_norm_decomp(F, a, 2 if ord is None else ord, dim, keepdim, dtype=dtype)


def _norm_ref(a, ord=None, dim=None, keepdim=False, dtype=None):
    if dim is None and ord is None:
        return np.asarray(np.linalg.norm(a.reshape(-1), keepdims=keepdim)).reshape(
            (1,) * a.ndim if keepdim else ())
    return np.linalg.norm(a, ord, axis=dim, keepdims=keepdim)


declare(
    "linalg_norm", "composite", "A, ord=None, dim=None, keepdim=False, *, dtype=None",
    method=False, attrs_rule=_float("norm", 0), decomp=_norm_decomp, ref=_norm_ref,
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (2, 3, 4), dt),), {}), ((arr(rng, (3, 4), dt),), {"ord": "nuc"}),
        ((arr(rng, (4,), dt),), {"ord": 1}), ((arr(rng, (3, 4), dt),), {"dim": 1, "ord": 3}),
        ((arr(rng, (2, 3, 4), dt),), {"dim": (0, 2), "ord": math.inf, "keepdim": True}),
    ]),
    test_dtypes=FLOATS_COMPLEX,
)
del TensorMeta
