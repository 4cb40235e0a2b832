"""Numerical helpers of PyTorch's top level (issue 16's sweep): `nanquantile` (sort + gather +
lerp, so gradients reach the interpolated elements), `gradient` (central differences with
one-sided edges, as `torch.gradient` / numpy.gradient), `histogramdd` (numpy's kernel).
Semantics follow the PyTorch documentation of each function. Imports eager's modules only.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D
from ir.return_types import return_type

from . import creation, linalg
from .dispatch import FUNCTIONS as _F
from .random import _gen, randn
from .tensor import Tensor

histogramdd_result = return_type("histogramdd", ("hist", "bin_edges"))
_MODES = ("linear", "lower", "higher", "midpoint", "nearest")


def nanquantile(input, q, dim=None, keepdim=False, *, interpolation="linear"):
    """`torch.nanquantile`: `quantile` ignoring NaNs (a row of NaNs gives NaN); `q` a number or
    1-d tensor in [0, 1] (its values become a leading dim); float input only."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"quantile() input tensor must be either float or double dtype, "
                           f"got {input.dtype.name}")
    if interpolation not in _MODES:
        raise ValueError(f"quantile() interpolation must be one of linear, lower, higher, "
                         f"midpoint or nearest. Got {interpolation}")
    qs = q.numpy(force=True).reshape(-1) if isinstance(q, Tensor) else np.array([q], float)
    if ((qs < 0) | (qs > 1)).any():
        raise RuntimeError("quantile() q values must be in the range [0, 1]")
    x = input.reshape(-1) if dim is None else input
    d = -1 if dim is None else dim % max(input.ndim, 1)
    srt = _F["sort"](x, d).values  # NaNs last
    valid = _F["sum"](_F["logical_not"](_F["isnan"](x)), (d,), keepdim=True)  # int64
    n = x.shape[d] if x.ndim else 1
    outs = []
    for qv in qs:
        pos = _F["mul"](_F["sub"](valid, 1).to(D.float64), float(qv))
        lo = _F["clamp"](_F["floor"](pos), 0, max(n - 1, 0))
        hi = _F["clamp"](_F["ceil"](pos), 0, max(n - 1, 0))
        frac = _F["sub"](pos, lo)
        if interpolation == "lower":
            hi = lo
        elif interpolation == "higher":
            lo = hi
        elif interpolation == "nearest":
            lo = hi = _F["clamp"](_F["round"](pos), 0, max(n - 1, 0))
        a = _F["gather"](srt, d, lo.to(D.int64))
        b = _F["gather"](srt, d, hi.to(D.int64))
        w = 0.5 if interpolation == "midpoint" else frac.to(input.dtype)
        r = _F["lerp"](a, b, w) if interpolation in ("linear", "midpoint") else a
        r = _F["where"](_F["eq"](valid, 0), float("nan"), r)
        outs.append(r if keepdim and dim is not None else _F["squeeze"](r, d))
    if dim is None and keepdim:
        outs = [o.reshape((1,) * input.ndim) for o in outs]
    if isinstance(q, Tensor) and q.ndim > 0:
        return _F["stack"](outs, 0)
    return outs[0]


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """`torch.gradient`: a tuple with the derivative estimate along each dim of `dim` (all
    dims by default): central differences inside, first- or second-order one-sided
    differences at the edges (`edge_order`), uniform `spacing` (a number, or one per dim) or
    coordinate tensors (one 1-d tensor per dim)."""
    dims = list(range(input.ndim)) if dim is None else \
        [dim] if isinstance(dim, int) else list(dim)
    dims = [d % input.ndim for d in dims]
    sp = spacing if isinstance(spacing, (tuple, list)) else [spacing] * len(dims)
    if len(sp) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"its length to match the number of dims ({len(dims)}), but got "
                           f"{len(sp)}")
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    x = input if input.dtype.is_floating_point or input.dtype.is_complex else \
        input.to(D.get_default_dtype())
    out = []
    for d, h in zip(dims, sp):
        n = x.shape[d]
        if n < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
        out.append(_along(x, d, n, h, edge_order))
    return tuple(out)


def _along(x, d, n, h, edge_order):
    def sl(start, length):
        return _F["narrow"](x, d, start, length)

    if isinstance(h, Tensor):  # coordinates: numpy.gradient's non-uniform formula
        c = h.to(x.dtype)
        hs = _F["sub"](_F["narrow"](c, 0, 1, n - 1), _F["narrow"](c, 0, 0, n - 1))
        view = [1] * x.ndim
        view[d] = n - 2
        h1 = _F["narrow"](hs, 0, 0, n - 2).reshape(view)
        h2 = _F["narrow"](hs, 0, 1, n - 2).reshape(view)
        inner = _F["div"](_F["add"](_F["sub"](_F["mul"](sl(2, n - 2), _F["mul"](h1, h1)),
                                              _F["mul"](sl(0, n - 2), _F["mul"](h2, h2))),
                                    _F["mul"](sl(1, n - 2), _F["sub"](_F["mul"](h2, h2),
                                                                      _F["mul"](h1, h1)))),
                          _F["mul"](_F["mul"](h1, h2), _F["add"](h1, h2)))
        first = _F["div"](_F["sub"](sl(1, 1), sl(0, 1)), hs[0])
        last = _F["div"](_F["sub"](sl(n - 1, 1), sl(n - 2, 1)), hs[-1])
        return _F["cat"]([first, inner, last], d)
    inner = _F["div"](_F["sub"](sl(2, n - 2), sl(0, n - 2)), 2.0 * h)
    if edge_order == 1:
        first = _F["div"](_F["sub"](sl(1, 1), sl(0, 1)), h)
        last = _F["div"](_F["sub"](sl(n - 1, 1), sl(n - 2, 1)), h)
    else:
        first = _F["div"](_F["add"](_F["sub"](_F["mul"](sl(1, 1), 4.0), _F["mul"](sl(0, 1), 3.0)),
                                    _F["neg"](sl(2, 1))), 2.0 * h)
        last = _F["div"](_F["add"](_F["sub"](_F["mul"](sl(n - 1, 1), 3.0),
                                             _F["mul"](sl(n - 2, 1), 4.0)), sl(n - 3, 1)),
                         2.0 * h)
    return _F["cat"]([first, inner, last], d)


def histogramdd(input, bins=10, *, range=None, weight=None, density=False):
    """`torch.histogramdd`: the D-dimensional histogram of the rows of an (N, D) float tensor
    (numpy.histogramdd's binning); returns (hist, [edges per dim])."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.histogramdd: input tensor should be of floating dtype")
    a = input.numpy(force=True)
    a = a.reshape(-1, a.shape[-1])
    b = [e.numpy(force=True) for e in bins] if isinstance(bins, (tuple, list)) and bins and \
        isinstance(bins[0], Tensor) else bins
    rng = None if range is None else [tuple(range[i:i + 2]) for i in builtins_range(
        0, len(range), 2)]
    w = None if weight is None else weight.numpy(force=True).reshape(-1)
    hist, edges = np.histogramdd(a, b, range=rng, weights=w, density=density)
    return histogramdd_result(creation.tensor(hist, dtype=input.dtype),
                              [creation.tensor(e, dtype=input.dtype) for e in edges])


builtins_range = range
FUNCTIONS = (nanquantile, gradient, histogramdd)


# ---------------------------------------------------------------- samplers, low-rank SVD


def binomial(count, prob, generator=None):
    """`torch.binomial(count, prob)`: Binomial(count, prob) samples, float tensors of one
    dtype (numpy's sampler on the generator's stream)."""
    if count.dtype is not prob.dtype or not count.dtype.is_floating_point:
        raise RuntimeError(f"binomial: expected count and prob of the same floating dtype, "
                           f"got {count.dtype.name} and {prob.dtype.name}")
    c, p = np.broadcast_arrays(count.numpy(force=True), prob.numpy(force=True))
    if (p < 0).any() or (p > 1).any():
        raise RuntimeError("binomial: prob must be in [0, 1]")
    s = _gen(generator).binomial(c.astype(np.int64), p.astype(np.float64))
    return creation.tensor(s, dtype=count.dtype)


def poisson(input, generator=None):
    """`torch.poisson(rates)`: Poisson(rate) samples in the rates' dtype."""
    r = input.numpy(force=True)
    if (r < 0).any():
        raise RuntimeError("poisson: rates must be non-negative")
    return creation.tensor(_gen(generator).poisson(r.astype(np.float64)), dtype=input.dtype)


def _approximate_basis(A, q, niter, M=None):
    """Halko et al. 2009, algorithm 4.4 (PyTorch's `get_approximate_basis`): an orthonormal
    (.., m, q) basis of A's range by randomized subspace iteration."""
    n = A.shape[-1]
    R = randn(*A.shape[:-2], n, q, dtype=A.dtype)
    X = _F["matmul"](A, R) if M is None else _F["sub"](_F["matmul"](A, R), _F["matmul"](M, R))
    Q = _F["linalg_qr"](X).Q
    At = A.mT if M is None else _F["sub"](A, M).mT
    B = A if M is None else _F["sub"](A, M)
    for _ in range(niter):
        Q = _F["linalg_qr"](_F["matmul"](At, Q)).Q
        Q = _F["linalg_qr"](_F["matmul"](B, Q)).Q
    return Q


def svd_lowrank(A, q=6, niter=2, M=None):
    """`torch.svd_lowrank`: (U, S, V) of a rank-q approximation of A (or A - M) by randomized
    range finding (Halko et al. 2009), A ~ U diag(S) V^T."""
    q = min(6 if q is None else q, A.shape[-2], A.shape[-1])
    tall = A.shape[-2] >= A.shape[-1]
    X = A if tall else A.mT
    Mx = None if M is None else (M if tall else M.mT)
    Q = _approximate_basis(X, q, niter, Mx)
    B = _F["matmul"](Q.mT, X if Mx is None else _F["sub"](X, Mx))
    U, S, Vh = _F["linalg_svd"](B, full_matrices=False)
    U = _F["matmul"](Q, U)
    V = Vh.mT
    return (U, S, V) if tall else (V, S, U)


def pca_lowrank(A, q=None, center=True, niter=2):
    """`torch.pca_lowrank`: `svd_lowrank` of the column-centred data (q = min(6, m, n))."""
    m, n = A.shape[-2:]
    q = min(6, m, n) if q is None else q
    if not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than min(m, "
                         f"n)={min(m, n)}")
    if center:
        A = _F["sub"](A, _F["mean"](A, (-2,), keepdim=True))
    return svd_lowrank(A, q, niter)


def lobpcg(A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None, largest=None,
           method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
           ortho_bparams=None):
    """`torch.lobpcg`: the k largest (or smallest, `largest=False`) eigenpairs (E, X) of the
    symmetric (generalized: A x = e B x) problem. wick solves it densely (Cholesky of B, then
    `linalg.eigh`), which LOBPCG's iteration converges to: same values to its tolerance, exact
    gradients through eigh; `iK`, `niter`, `tol`, `method` and the ortho parameters are
    accepted and unused. ValueError when rows < 3k, as PyTorch."""
    k = (1 if X is None else X.shape[-1]) if k is None else k
    m = A.shape[-1]
    if m < 3 * k:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows "
                           f"(={m}) is smaller than 3 x the number of requested eigenpairs "
                           f"(={k})")
    largest = True if largest is None else largest
    if B is None:
        evals, evecs = linalg.eigh(A)
    else:
        L = linalg.cholesky(B)
        C = linalg.solve_triangular(L, A, upper=False)
        C = linalg.solve_triangular(L, C.mT, upper=False)
        evals, Y = linalg.eigh(C)
        evecs = linalg.solve_triangular(L.mT, Y, upper=True)
    if largest:
        return _F["flip"](evals[..., m - k:], (-1,)), _F["flip"](evecs[..., m - k:], (-1,))
    return evals[..., :k], evecs[..., :k]


FUNCTIONS = FUNCTIONS + (binomial, poisson, svd_lowrank, pca_lowrank, lobpcg)
