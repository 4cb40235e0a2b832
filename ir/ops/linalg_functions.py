"""The rest of `torch.linalg` and PyTorch's top-level linear-algebra functions: eig/eigvals,
matrix_exp, matrix_power, cond, matrix_rank, multi_dot, tensorinv, tensorsolve, vander, vecdot,
cross, logdet, torch.svd, inner, addmv, addr, addbmm (the Householder QR ops geqrf,
householder_product and ormqr: `linalg_qr.py`).

Primitives are library calls: numpy.linalg.eig (complex eigenvalues and unit-norm eigenvectors,
as LAPACK's geev gives PyTorch), scipy.linalg.expm. The rest are composites of
registry ops, so their gradients come from those. Backward rules: PyTorch's
FunctionsManual.cpp (linalg_eig_backward for a general matrix: gA = V^-H (diag(gL) +
(V^H gV - V^H V diag(Re(V^H gV))) / conj(E)) V^H, E_ij = L_j - L_i; the matrix exponential's
gradient as the upper-right block of exp([[A^H, G], [0, A^H]])). Imports nothing of wick's
outside `ir`.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg as sla

from .. import dtypes as D
from ..opdef import broadcast_shapes, normalize_dim
from ..return_types import return_type
from .elementwise import FLOATS
from .indexing import arr, declare
from .linalg import FLOATS_COMPLEX, mH
from .linalg_solve import _sq_samples
from .matrix import _float, _normal, _square

eig_result = return_type("linalg_eig", ["eigenvalues", "eigenvectors"])
geqrf_result = return_type("geqrf", ["a", "tau"])
svd_result = return_type("svd", ["U", "S", "V"])


def _eye(F, x, n):
    return F.diag_embed(F.add(F.new_zeros(x, tuple(x.shape[:-2]) + (n,)), 1.0))


# ---------------------------------------------------------------- eig


def _eig_impl(xp, a, part="eigenvalues"):
    w, v = xp.linalg.eig(a)
    c = np.result_type(a.dtype, np.complex64)
    return (w if part == "eigenvalues" else v).astype(c, copy=False)


def _eig_backward(F, g, out, a, part="eigenvalues"):
    v = out if part == "eigenvectors" else F._linalg_eig(a, "eigenvectors")
    vh = mH(F, v)
    if part == "eigenvalues":
        inner = F.diag_embed(g)
    else:
        lam = F.conj(F._linalg_eig(a, "eigenvalues"))
        vhg = F.matmul(vh, g)
        re_diag = F.real(F.diagonal(vhg, 0, -2, -1))
        vhg = F.sub(vhg, F.matmul(vh, F.mul(v, F.unsqueeze(re_diag, -2))))
        e = F.add(F.sub(F.unsqueeze(lam, -2), F.unsqueeze(lam, -1)), _eye(F, a, a.shape[-1]))
        inner = F.div(vhg, e)
    ga = F.linalg_solve(vh, F.matmul(inner, vh))
    return (ga if a.dtype.is_complex else F.real(ga),)


def _distinct_eig(rng, shape, dt):
    """A matrix with eigenvalues 1, 2, ..., n (distinct: eig's derivative divides by their
    differences) and a well-conditioned eigenbasis."""
    n = shape[-1]
    q = _normal(rng, shape, dt) * 0.3 + np.eye(n)
    return ((q * np.arange(1, n + 1)) @ np.linalg.inv(q)).astype(dt.np)


declare(
    "_linalg_eig", "linalg", "A, part='eigenvalues'", method=False,
    attrs_rule=_square("eig"), fixed=lambda inputs, attrs: inputs[0].dtype.to_complex(),
    shape=lambda s, part="eigenvalues": s[:-1] if part == "eigenvalues" else s,
    impl=_eig_impl, backward=_eig_backward,
    ref=lambda a, part="eigenvalues": np.linalg.eig(a)[part != "eigenvalues"],
    sample_inputs=lambda rng, dt: iter([((_distinct_eig(rng, s, dt),), {})
                                        for s in ((3, 3), (2, 4, 4))]),
    test_dtypes=FLOATS_COMPLEX,
)


def _sorted_eig(w):
    return np.sort_complex(np.asarray(w, np.complex128))


declare(
    "linalg_eig", "composite", "A", method=False, attrs_rule=_square("eig"),
    decomp=lambda F, a: eig_result(F._linalg_eig(a, "eigenvalues"),
                                   F._linalg_eig(a, "eigenvectors")),
    ref=lambda a: eig_result(*np.linalg.eig(a)),
    sample_inputs=lambda rng, dt: iter([((_distinct_eig(rng, (3, 3), dt),), {})]),
    test_dtypes=FLOATS,  # complex: eigenvector phases; tests/test_linalg_sweep.py
)
declare(
    "linalg_eigvals", "composite", "A", method=False, attrs_rule=_square("eigvals"),
    decomp=lambda F, a: F._linalg_eig(a, "eigenvalues"), ref=np.linalg.eigvals,
    sample_inputs=lambda rng, dt: iter([((_distinct_eig(rng, s, dt),), {})
                                        for s in ((3, 3), (2, 4, 4))]),
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- matrix_exp, matrix_power


def _expm_impl(xp, a):
    if xp is not np:
        raise NotImplementedError("linalg.matrix_exp is implemented for CPU tensors only")
    return sla.expm(a) if a.shape[-1] else a.copy()


def _expm_backward(F, g, out, a):
    # FunctionsManual.cpp linalg_matrix_exp_differential (adjoint): the upper-right block of
    # exp([[A^H, G], [0, A^H]])
    n = a.shape[-1]
    ah = mH(F, a)
    top = F.cat([ah, g], -1)
    bottom = F.cat([F.new_zeros(a, tuple(a.shape)), ah], -1)
    big = F.linalg_matrix_exp(F.cat([top, bottom], -2))
    return (F.narrow(F.narrow(big, -2, 0, n), -1, n, n),)


declare(
    "linalg_matrix_exp", "linalg", "A", aliases=("matrix_exp",), attrs_rule=_square(
        "matrix_exp"),
    shape=lambda s: s, impl=_expm_impl, backward=_expm_backward,
    ref=lambda a: sla.expm(a.astype(np.complex128 if a.dtype.kind == "c" else np.float64)),
    sample_inputs=lambda rng, dt: iter([((arr(rng, s, dt) * 0.5,), {})
                                        for s in ((3, 3), (2, 4, 4))]),
    test_dtypes=FLOATS_COMPLEX,
)


def _matrix_power_decomp(F, a, n):
    if not isinstance(n, int):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if n == 0:
        return F.add(F.mul(a, 0.0) if a.dtype.is_floating_point or a.dtype.is_complex else
                     F.mul(a, 0), _eye(F, a, a.shape[-1]))
    if n < 0:
        a, n = F.linalg_inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else F.matmul(result, base)
        n >>= 1
        if n:
            base = F.matmul(base, base)
    return result


def _power_attrs(inputs, attrs):
    a = inputs[0]
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but "
                           f"they are {a.shape[-2] if a.ndim > 1 else a.ndim} by "
                           f"{a.shape[-1] if a.ndim else 0} matrices")
    return attrs


declare(
    "linalg_matrix_power", "composite", "A, n", aliases=("matrix_power",),
    attrs_rule=_power_attrs, decomp=_matrix_power_decomp,
    ref=lambda a, n: np.linalg.matrix_power(a, n),
    sample_inputs=lambda rng, dt: ((x, {"n": n}) for n in (0, 1, 3, -2) for x, _ in
                                   _sq_samples((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- cond, matrix_rank


def _cond_decomp(F, a, p=None):
    if p in (None, 2, -2):
        s = F._linalg_svd(a, False, "S")
        hi, lo = F.amax(s, -1), F.neg(F.amax(F.neg(s), -1))
        return F.div(lo, hi) if p == -2 else F.div(hi, lo)
    if p not in ("fro", "nuc", math.inf, -math.inf, 1, -1):
        raise RuntimeError(f"linalg.cond got an invalid norm type: {p}")
    _square("cond")((a,), {})
    return F.mul(F.linalg_matrix_norm(a, p), F.linalg_matrix_norm(F.linalg_inv(a), p))


declare(
    "linalg_cond", "composite", "A, p=None", method=False, attrs_rule=_float("cond"),
    decomp=_cond_decomp, ref=lambda a, p=None: np.linalg.cond(a, p),
    sample_inputs=lambda rng, dt: ((x, {"p": p}) for p in (None, 2, -2, "fro", "nuc", 1,
                                                           -math.inf)
                                   for x, _ in _sq_samples((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


def _rank_decomp(F, a, tol=None, hermitian=False, *, atol=None, rtol=None):
    if tol is not None:
        atol, rtol = tol, 0.0
    s = F._linalg_svd(a, False, "S") if not hermitian else \
        F.abs(F._linalg_eigh(a, "L", "eigenvalues"))
    smax = F.amax(s, -1, keepdim=True) if s.shape[-1] else F.new_zeros(s, tuple(s.shape))
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else \
            float(np.finfo(s.dtype.np).eps) * max(a.shape[-2:])
    thresh = F.mul(smax, rtol)
    if atol is not None:
        thresh = F.maximum(thresh, F.add(F.new_zeros(thresh, tuple(thresh.shape)), atol))
    return F.sum(F.gt(s, thresh), -1)


declare(
    "linalg_matrix_rank", "composite", "A, tol=None, hermitian=False, *, atol=None, rtol=None",
    method=False, attrs_rule=_float("matrix_rank"), decomp=_rank_decomp,
    ref=lambda a, tol=None, hermitian=False, atol=None, rtol=None: np.asarray(
        np.linalg.matrix_rank(a, tol=tol if tol is not None else atol, hermitian=hermitian)),
    sample_inputs=lambda rng, dt: iter([
        ((_normal(rng, (4, 3), dt).astype(dt.np),), {}),
        (((_normal(rng, (2, 5, 2), dt) @ _normal(rng, (2, 2, 4), dt)).astype(dt.np),), {}),
        ((_normal(rng, (3, 3), dt).astype(dt.np),), {"atol": 0.5})]),
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- products


def _multi_dot_decomp(F, *ts):
    if len(ts) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(ts)}")
    for i, t in enumerate(ts):
        edge = i in (0, len(ts) - 1)
        if t.ndim != 2 and not (edge and t.ndim == 1):
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D"
                               if not edge else f"multi_dot(): {'first' if i == 0 else 'last'}"
                               f" tensor must be 1D or 2D but got {t.ndim}D")
    mats = list(ts)
    first_vec, last_vec = mats[0].ndim == 1, mats[-1].ndim == 1
    if first_vec:
        mats[0] = F.unsqueeze(mats[0], 0)
    if last_vec:
        mats[-1] = F.unsqueeze(mats[-1], -1)
    dims = [m.shape[0] for m in mats] + [mats[-1].shape[1]]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):  # the optimal order of the chain (as PyTorch's multi_dot)
        for i in range(n - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def chain(i, j):
        if i == j:
            return mats[i]
        return F.matmul(chain(i, split[i][j]), chain(split[i][j] + 1, j))

    out = chain(0, n - 1)
    if first_vec:
        out = F.squeeze(out, 0)
    if last_vec:
        out = F.squeeze(out, -1)
    return out


def _chain_samples(rng, dt):
    yield [arr(rng, s, dt) for s in ((3, 4), (4, 5), (5, 2))], {}
    yield [arr(rng, s, dt) for s in ((4,), (4, 6), (6, 2), (2, 3), (3,))], {}


declare(
    "linalg_multi_dot", "composite", "tensors", variadic=True, scalar_ok=False, method=False,
    data=(), decomp=_multi_dot_decomp, ref=lambda *ts: np.linalg.multi_dot(ts),
    sample_inputs=_chain_samples, test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- tensorinv, tensorsolve


def _tensorinv_decomp(F, a, ind=2):
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    out_shape = tuple(a.shape[ind:]) + tuple(a.shape[:ind])
    rows = math.prod(a.shape[:ind])
    cols = math.prod(a.shape[ind:])
    if rows != cols:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) "
                           f"== prod(self.shape[:ind]), but got {cols} != {rows}")
    return F.reshape(F.linalg_inv(F.reshape(a, (rows, cols))), out_shape)


declare(
    "linalg_tensorinv", "composite", "A, ind=2", method=False, decomp=_tensorinv_decomp,
    ref=lambda a, ind=2: np.linalg.tensorinv(a, ind),
    sample_inputs=lambda rng, dt: iter([
        (((_normal(rng, (6, 6), dt) + 6 * np.eye(6)).reshape(6, 2, 3).astype(dt.np),),
         {"ind": 1}),
        (((_normal(rng, (6, 6), dt) + 6 * np.eye(6)).reshape(2, 3, 6).astype(dt.np),), {})]),
    test_dtypes=FLOATS_COMPLEX,
)


def _tensorsolve_decomp(F, a, b, dims=None):
    if dims is not None:
        dims = [normalize_dim(d, a.ndim) for d in dims]
        rest = [d for d in range(a.ndim) if d not in dims]
        a = F.permute(a, tuple(rest + dims))
    n = math.prod(b.shape)
    x_shape = tuple(a.shape[b.ndim:])
    x = F.linalg_solve(F.reshape(a, (n, -1)), F.reshape(b, (n,)))
    return F.reshape(x, x_shape)


declare(
    "linalg_tensorsolve", "composite", "A, B, dims=None", 2, data=(0, 1), scalar_ok=False,
    method=False, decomp=_tensorsolve_decomp,
    ref=lambda a, b, dims=None: np.linalg.tensorsolve(a, b, dims),
    sample_inputs=lambda rng, dt: iter([
        (((_normal(rng, (6, 6), dt) + 6 * np.eye(6)).reshape(2, 3, 6).astype(dt.np),
          _normal(rng, (2, 3), dt).astype(dt.np)), {}),
        (((_normal(rng, (6, 6), dt) + 6 * np.eye(6)).reshape(6, 2, 3).astype(dt.np),
          _normal(rng, (2, 3), dt).astype(dt.np)), {"dims": (0,)})]),
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- vander, vecdot, cross


def _vander_decomp(F, x, N=None, increasing=True):
    if x.ndim < 1:
        raise RuntimeError("linalg.vander: x must have at least one dimension")
    n = x.shape[-1] if N is None else N
    if n < 1 and N is not None:
        raise RuntimeError("N must be greater than 1.")
    if x.dtype is D.bool_:
        x = F.cast(x, D.int64)
    cols = [F.add(F.mul(x, 0), 1)] if n else []
    for _ in range(1, n):  # x^k as a chain of products (cumprod's complex gradient is off)
        cols.append(x if len(cols) == 1 else F.mul(cols[-1], x))
    out = F.stack(cols, -1) if n else F.new_zeros(x, tuple(x.shape) + (0,))
    return out if increasing else F.flip(out, (-1,))


declare(
    "linalg_vander", "composite", "x, *, N=None", method=False,
    decomp=lambda F, x, *, N=None: _vander_decomp(F, x, N, True),
    ref=lambda x, N=None: np.vander(x.reshape(-1, x.shape[-1])[0] if x.ndim == 1 else x[0],
                                    N, increasing=True) if x.ndim == 1 else np.stack(
        [np.vander(r, N, increasing=True) for r in x.reshape(-1, x.shape[-1])]).reshape(
        x.shape + (x.shape[-1] if N is None else N,)),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (4,), dt),), {}),
                                        ((arr(rng, (2, 3), dt),), {"N": 5})]),
    test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)
declare(
    "vander", "composite", "x, N=None, increasing=False", method=False,
    decomp=_vander_decomp,
    ref=lambda x, N=None, increasing=False: np.vander(x, N, increasing=increasing),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (4,), dt),), {}),
                                        ((arr(rng, (3,), dt),), {"N": 5, "increasing": True})]),
    test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)


def _vecdot_decomp(F, x, y, *, dim=-1):
    return F.sum(F.mul(F.conj(x) if x.dtype.is_complex else x, y), dim)


declare(
    "linalg_vecdot", "composite", "x, y, *, dim=-1", 2, data=(0, 1), scalar_ok=False,
    method=False, decomp=_vecdot_decomp,
    ref=lambda x, y, dim=-1: np.sum(np.conj(x) * y, axis=dim),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 4), dt), arr(rng, (4,), dt)), {}),
                                        ((arr(rng, (3, 4), dt), arr(rng, (3, 1), dt)),
                                         {"dim": 0})]),
    test_dtypes=FLOATS_COMPLEX,
)


def _cross_decomp(F, a, b, dim=-1):
    if a.ndim != b.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shapes(tuple(a.shape), tuple(b.shape))
    a, b = F.expand(a, shape), F.expand(b, shape)
    if dim is None:  # torch.cross's deprecated default: the first dim of size 3
        dim = next((i for i, n in enumerate(shape) if n == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    d = normalize_dim(dim, len(shape))
    if shape[d] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[d]} and {b.shape[d]}")
    c = [F.narrow(a, d, i, 1) for i in range(3)]
    e = [F.narrow(b, d, i, 1) for i in range(3)]
    return F.cat([F.sub(F.mul(c[(i + 1) % 3], e[(i + 2) % 3]),
                        F.mul(c[(i + 2) % 3], e[(i + 1) % 3])) for i in range(3)], d)


declare(
    "linalg_cross", "composite", "input, other, *, dim=-1", 2, data=(0, 1), scalar_ok=False,
    method=False, decomp=_cross_decomp, ref=lambda a, b, dim=-1: np.cross(a, b, axis=dim),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (4, 3), dt), arr(rng, (1, 3), dt)), {}),
                                        ((arr(rng, (3, 2), dt), arr(rng, (3, 2), dt)),
                                         {"dim": 0})]),
    test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)
declare(
    "cross", "composite", "input, other, dim=None", 2, data=(0, 1), scalar_ok=False,
    decomp=_cross_decomp,
    ref=lambda a, b, dim=None: np.cross(a, b, axis=dim if dim is not None else
                                        next(i for i, n in enumerate(a.shape) if n == 3)),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 4), dt), arr(rng, (3, 4), dt)), {}),
                                        ((arr(rng, (2, 3), dt), arr(rng, (2, 3), dt)),
                                         {"dim": 1})]),
    test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- logdet, svd, products


def _logdet_decomp(F, a):
    sign, logabs = F.linalg_slogdet(a)
    if a.dtype.is_complex:
        return F.add(F.log(sign), logabs)
    # a negative determinant has no real log (nan); a zero one gives -inf
    return F.where(F.lt(sign, 0), math.nan, logabs)


declare(
    "logdet", "composite", "input", attrs_rule=_square("logdet"), decomp=_logdet_decomp,
    ref=lambda a: np.log(np.linalg.det(a).astype(np.complex128)).real
    if a.dtype.kind != "c" else np.log(np.linalg.det(a)),
    sample_inputs=lambda rng, dt: (((x @ np.conj(np.swapaxes(x, -1, -2)),), {}) for (x,), _ in
                                   _sq_samples((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


def _svd_decomp(F, a, some=True, compute_uv=True):
    # torch.svd: V (not Vh); with compute_uv=False, U and V are zero-filled
    s = F._linalg_svd(a, not some, "S")
    m, n = a.shape[-2], a.shape[-1]
    if not compute_uv:
        batch = tuple(a.shape[:-2])
        return svd_result(F.new_zeros(a, batch + (m, m)), s, F.new_zeros(a, batch + (n, n)))
    return svd_result(F._linalg_svd(a, not some, "U"), s,
                      mH(F, F._linalg_svd(a, not some, "Vh")))


def _svd_ref(a, some=True, compute_uv=True):
    u, s, vh = np.linalg.svd(a, full_matrices=not some)
    return u, s, np.conj(np.swapaxes(vh, -1, -2))


declare(
    "svd", "composite", "input, some=True, compute_uv=True", attrs_rule=_float("svd"),
    decomp=_svd_decomp, ref=_svd_ref,
    sample_inputs=lambda rng, dt: iter([((_normal(rng, (4, 3), dt).astype(dt.np),), {})]),
    test_dtypes=FLOATS,  # complex: the phases of U and V; tests/test_linalg_sweep.py
)


def _inner_decomp(F, a, b):
    if a.ndim == 0 or b.ndim == 0:
        return F.mul(a, b)
    return F.tensordot(a, b, ([-1], [-1]))


declare(
    "inner", "composite", "input, other", 2, data=(0, 1), scalar_ok=False,
    decomp=_inner_decomp, ref=np.inner,
    sample_inputs=lambda rng, dt: iter([((arr(rng, (2, 3), dt), arr(rng, (4, 3), dt)), {}),
                                        ((arr(rng, (3,), dt), arr(rng, (3,), dt)), {})]),
    test_dtypes=(D.int64,) + FLOATS_COMPLEX,
)


def _add_product(prod):
    def decomp(F, x, a, b, *, beta=1, alpha=1):
        p = prod(F, a, b)
        if alpha != 1:
            p = F.mul(p, alpha)
        if beta == 0:  # as addmm: `input` is ignored (its nan and inf too)
            return F.add(p, F.mul(F.new_zeros(x, tuple(x.shape)), 0))
        return F.add(F.mul(x, beta) if beta != 1 else x, p)
    return decomp


for _name, _prod, _ref, _shapes in (
        ("addmv", lambda F, a, b: F.matmul(a, b), lambda a, b: a @ b,
         ((3,), (3, 4), (4,))),
        ("addr", lambda F, a, b: F.mul(F.unsqueeze(a, -1), b), np.outer, ((3, 4), (3,), (4,))),
        ("addbmm", lambda F, a, b: F.sum(F.matmul(a, b), 0), lambda a, b: (a @ b).sum(0),
         ((3, 4), (2, 3, 5), (2, 5, 4)))):
    declare(
        _name, "composite", f"input, {'mat, vec' if _name == 'addmv' else 'vec1, vec2' if _name == 'addr' else 'batch1, batch2'}, *, beta=1, alpha=1",
        3, data=(0, 1, 2), scalar_ok=False, decomp=_add_product(_prod),
        ref=lambda x, a, b, beta=1, alpha=1, _r=_ref: beta * x + alpha * _r(a, b),
        sample_inputs=lambda rng, dt, _s=_shapes: iter([
            (tuple(arr(rng, s, dt) for s in _s), {}),
            (tuple(arr(rng, s, dt) for s in _s), {"beta": 2, "alpha": 0.5})]),
        test_dtypes=FLOATS_COMPLEX,
    )

