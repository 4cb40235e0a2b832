"""The array API `linalg` extension over eager.linalg (the standard's names and keywords)."""

from __future__ import annotations

import numpy as np

import eager as _e
from eager import linalg as _la

from . import _core
from ._stats import sum as _sum

__all__ = ["cholesky", "cross", "det", "diagonal", "eigh", "eigvalsh", "inv", "matmul",
           "matrix_norm", "matrix_power", "matrix_rank", "matrix_transpose", "outer", "pinv",
           "qr", "slogdet", "solve", "svd", "svdvals", "tensordot", "trace", "vecdot",
           "vector_norm"]


def cholesky(x, /, *, upper=False):
    return _la.cholesky(x, upper=upper)


def cross(x1, x2, /, *, axis=-1):
    if x1.ndim != x2.ndim:  # the standard broadcasts; torch.linalg.cross wants equal ranks
        x1, x2 = _e.broadcast_tensors(x1, x2)
    return _la.cross(x1, x2, dim=axis)


def det(x, /):
    return _la.det(x)


def diagonal(x, /, *, offset=0):
    return _e.diagonal(x, offset=offset, dim1=-2, dim2=-1)


def eigh(x, /):
    return _la.eigh(x)


def eigvalsh(x, /):
    return _la.eigvalsh(x)


def inv(x, /):
    return _la.inv(x)


matmul = _core.matmul
matrix_transpose = _core.matrix_transpose
tensordot = _core.tensordot
vecdot = _core.vecdot


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    return _la.matrix_norm(x, ord=ord, keepdim=keepdims)


def matrix_power(x, n, /):
    return _la.matrix_power(x, n)


def matrix_rank(x, /, *, rtol=None):
    return _la.matrix_rank(x, rtol=rtol)


def outer(x1, x2, /):
    return _e.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    if not isinstance(rtol, _e.Tensor) and x.numel():
        return _la.pinv(x, rtol=rtol)
    # a batched rtol (or an empty batch): through the SVD, singular values below
    # rtol * largest set to zero
    m, n = x.shape[-2], x.shape[-1]
    if x.numel() == 0:
        return _e.zeros(tuple(x.shape[:-2]) + (n, m), dtype=x.dtype)
    u, s, vh = _la.svd(x, full_matrices=False)
    if rtol is None:
        rtol = max(m, n) * float(np.finfo(s.numpy().dtype).eps)
    cutoff = (rtol.unsqueeze(-1) if isinstance(rtol, _e.Tensor) else rtol) * \
        s.amax(-1, keepdim=True)
    s_inv = _e.where(s > cutoff, 1.0 / _e.where(s > cutoff, s, 1.0), 0.0).to(s.dtype)
    return vh.mT.conj() @ (s_inv.unsqueeze(-1).to(u.dtype) * u.mT.conj())


def qr(x, /, *, mode="reduced"):
    return _la.qr(x, mode=mode)


def slogdet(x, /):
    return _la.slogdet(x)


def solve(x1, x2, /):
    return _la.solve(x1, x2)


def svd(x, /, *, full_matrices=True):
    return _la.svd(x, full_matrices=full_matrices)


def svdvals(x, /):
    return _la.svdvals(x)


def trace(x, /, *, offset=0, dtype=None):
    d = _e.diagonal(x, offset=offset, dim1=-2, dim2=-1)
    return _sum(d, axis=-1, dtype=dtype)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    return _la.vector_norm(x, ord=ord, dim=axis, keepdim=keepdims)
