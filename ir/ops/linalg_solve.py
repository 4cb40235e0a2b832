"""`torch.linalg` solvers and factorizations beyond `matrix.py`: solve_triangular, the LU family
(lu_factor(_ex), lu, lu_unpack, lu_solve) and the top-level cholesky_solve, cholesky_inverse
and triangular_solve (the `_ex` variants and LAPACK's `info`: `linalg_ex.py`).

Primitives are library calls (scipy.linalg / numpy.linalg, LAPACK underneath): triangular
solves, the LU factorization (LU and 1-based int32 pivots, LAPACK's convention as PyTorch's),
the permutation of a pivot vector and the LAPACK `info` codes (lstsq: `linalg_lstsq.py`). Everything else is
a composite of registry ops, so its gradient comes from those: lu_solve is two triangular
solves over `lu_unpack`, cholesky_solve two triangular solves. Backward rules of the
primitives: PyTorch's derivatives.yaml / FunctionsManual.cpp (linalg_solve_triangular_backward,
linalg_lu_backward for square A). Errors:
`LinAlgError` (a RuntimeError) for singular and non-positive-definite input, with PyTorch's
messages. Imports nothing of wick's outside `ir`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .. import dtypes as D
from ..opdef import broadcast_shapes
from ..return_types import return_type
from .elementwise import FLOATS
from .indexing import declare
from .linalg import FLOATS_COMPLEX, mH
from .matrix import _float, _normal, _square

lu_factor_result = return_type("linalg_lu_factor", ["LU", "pivots"])
lu_factor_ex_result = return_type("linalg_lu_factor_ex", ["LU", "pivots", "info"])
lu_result = return_type("linalg_lu", ["P", "L", "U"])
lu_unpack_result = return_type("lu_unpack", ["P", "L", "U"])
solve_ex_result = return_type("linalg_solve_ex", ["result", "info"])
inv_ex_result = return_type("linalg_inv_ex", ["inverse", "info"])
cholesky_ex_result = return_type("linalg_cholesky_ex", ["L", "info"])
triangular_solve_result = return_type("triangular_solve", ["solution", "cloned_coefficient"])


def _batch(a):
    """(batch shape, a reshaped to (-1, m, n))."""
    return a.shape[:-2], a.reshape((-1,) + a.shape[-2:])


def _nan_where_failing(fn, a, *rest):
    """`fn(a, *rest)` on a batch; where LAPACK refuses a matrix (singular, not positive-
    definite), that matrix's result is NaN instead of an error (the `_ex` functions and
    solve_triangular do not raise, as PyTorch's)."""
    try:
        return fn(a, *rest)
    except (np.linalg.LinAlgError, ValueError):
        pass
    shape, flat = _batch(a)
    rest = [np.broadcast_to(r, shape + r.shape[-2:]).reshape((-1,) + r.shape[-2:])
            for r in rest]
    outs = []
    for i in range(flat.shape[0]):
        try:
            outs.append(fn(flat[i], *(r[i] for r in rest)))
        except (np.linalg.LinAlgError, ValueError):
            outs.append(None)
    like = next((o for o in outs if o is not None), None)
    if like is None:
        like = np.empty(flat.shape[1:] if not rest else rest[0].shape[1:], a.dtype)
    outs = [np.full_like(like, np.nan) if o is None else o for o in outs]
    return np.stack(outs).reshape(shape + like.shape)


def _vector_rhs(a, b):
    """PyTorch's linalg_solve_is_vector_rhs: B is a (batch of) vector(s)."""
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


# ---------------------------------------------------------------- solve_triangular


def _tri_attrs(inputs, attrs):
    a, b = inputs
    _square("solve_triangular")((a,), attrs)
    if a.dtype is not b.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, "
                           f"but found A of type {a.dtype.title} and B of type {b.dtype.title} "
                           f"instead")
    if b.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 "
                           "dimensions.")
    n = a.shape[-1]
    if (b.shape[-2] if attrs["left"] else b.shape[-1]) != n:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the "
                           f"equation {'AX = B' if attrs['left'] else 'XA = B'} "
                           f"({'x'.join(map(str, a.shape[-2:]))} and "
                           f"{'x'.join(map(str, b.shape[-2:]))})")
    return attrs


def _tri_impl(xp, a, b, *, upper, left=True, unitriangular=False):
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = xp.broadcast_to(a, batch + a.shape[-2:])
    b = xp.broadcast_to(b, batch + b.shape[-2:])
    if not left:  # X A = B  <=>  A^T X^T = B^T
        b = xp.swapaxes(b, -1, -2)
    if xp is not np:  # cupy: a general solve of the triangle
        t = xp.triu(a) if upper else xp.tril(a)
        if unitriangular:
            t = t - t * xp.eye(t.shape[-1], dtype=t.dtype) + xp.eye(t.shape[-1], dtype=t.dtype)
        x = xp.linalg.solve(xp.swapaxes(t, -1, -2) if not left else t, b)
    else:
        with np.errstate(all="ignore"):
            x = _nan_where_failing(
                lambda a_, b_: sla.solve_triangular(a_, b_, trans=0 if left else 1,
                                                    lower=not upper,
                                                    unit_diagonal=unitriangular,
                                                    check_finite=False), a, b)
    x = np.asarray(x) if xp is np else x
    return xp.swapaxes(x, -1, -2) if not left else x


def _tri_backward(F, g, out, a, b, *, upper, left=True, unitriangular=False):
    # FunctionsManual.cpp linalg_solve_triangular_backward
    gb = F.linalg_solve_triangular(mH(F, a), g, upper=not upper, left=left,
                                   unitriangular=unitriangular)
    ga = F.neg(F.matmul(gb, mH(F, out)) if left else F.matmul(mH(F, out), gb))
    ga = F.triu(ga, int(unitriangular)) if upper else F.tril(ga, -int(unitriangular))
    return ga, gb


def _tri_samples(rng, dt):
    for sa, sb, kw in (((3, 3), (3, 2), {"upper": True}),
                       ((2, 4, 4), (2, 4, 1), {"upper": False}),
                       ((3, 3), (2, 2, 3), {"upper": True, "left": False}),
                       ((2, 3, 3), (3, 2), {"upper": False, "unitriangular": True})):
        a = _normal(rng, sa, dt) + 3 * np.eye(sa[-1])
        yield (a.astype(dt.np), _normal(rng, sb, dt).astype(dt.np)), kw


def _tri_ref(a, b, *, upper, left=True, unitriangular=False):
    t = np.triu(a) if upper else np.tril(a)
    if unitriangular:
        t = t - t * np.eye(t.shape[-1]) + np.eye(t.shape[-1])
    if left:
        return np.linalg.solve(t, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(t, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


declare(
    "linalg_solve_triangular", "linalg", "A, B, *, upper, left=True, unitriangular=False", 2,
    data=(0, 1), scalar_ok=False, method=False, attrs_rule=_tri_attrs,
    shape=lambda sa, sb, **_: broadcast_shapes(sa[:-2], sb[:-2]) + sb[-2:],
    impl=_tri_impl, backward=_tri_backward, ref=_tri_ref, sample_inputs=_tri_samples,
    test_dtypes=FLOATS_COMPLEX,
)


def _triangular_solve_decomp(F, b, a, upper=True, transpose=False, unitriangular=False):
    # torch.triangular_solve (deprecated): A X = b, or A^T X = b with transpose=True
    t = F.transpose(a, -1, -2) if transpose else a
    x = F.linalg_solve_triangular(t, b, upper=upper != transpose, unitriangular=unitriangular)
    batch = broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return triangular_solve_result(x, F.clone(F.expand(a, batch + tuple(a.shape[-2:]))))


declare(
    "triangular_solve", "composite", "input, A, upper=True, transpose=False, "
    "unitriangular=False", 2, data=(0, 1), scalar_ok=False, decomp=_triangular_solve_decomp,
    ref=lambda b, a, upper=True, transpose=False, unitriangular=False: (_tri_ref(
        np.swapaxes(a, -1, -2) if transpose else a, b, upper=upper != transpose,
        unitriangular=unitriangular), np.broadcast_to(a, np.broadcast_shapes(
            a.shape[:-2], b.shape[:-2]) + a.shape[-2:])),
    sample_inputs=lambda rng, dt: (
        ((_normal(rng, sb, dt).astype(dt.np),
          (_normal(rng, sa, dt) + 3 * np.eye(sa[-1])).astype(dt.np)), kw)
        for sa, sb, kw in (((3, 3), (3, 2), {}), ((2, 4, 4), (2, 4, 1), {"upper": False}),
                           ((3, 3), (2, 3, 2), {"transpose": True, "unitriangular": True}))),
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- LU


def _lu_attrs(op):
    def rule(inputs, attrs):
        _float(op)(inputs, attrs)
        if not attrs.get("pivot", True):
            raise RuntimeError(f"linalg.{op}: LU without pivoting is not implemented on the "
                               f"CPU")
        return attrs
    return rule


def _lu_impl(xp, a, pivot=True, part="LU"):
    if xp is not np:
        raise NotImplementedError("linalg.lu_factor is implemented for CPU tensors only")
    shape, flat = _batch(a)
    k = min(a.shape[-2:])
    lus, pivs = [], []
    for m in flat:  # scipy.linalg.lu_factor wants square input; getrf takes any shape
        getrf, = sla.get_lapack_funcs(("getrf",), (m,))
        lu, piv, _ = getrf(m)
        lus.append(lu)
        pivs.append(piv[:k] + 1)
    if part == "LU":
        return np.stack(lus).reshape(a.shape) if lus else a.copy()
    return (np.stack(pivs) if pivs else np.zeros((0, k))).reshape(shape + (k,)).astype(np.int32)


def _lu_unpack(F, lu, pivots=None):
    """(P, L, U) of a packed LU (m x n, k = min(m, n)): L unit lower m x k, U upper k x n."""
    m, n = lu.shape[-2], lu.shape[-1]
    k = min(m, n)
    lower = F.narrow(lu, -1, 0, k) if n > k else lu
    eye = F.diag_embed(F.add(F.new_zeros(lu, tuple(lu.shape[:-2]) + (k,)), 1.0))
    if m > k:
        eye = F.cat([eye, F.new_zeros(lu, tuple(lu.shape[:-2]) + (m - k, k))], -2)
    L = F.add(F.tril(lower, -1), eye)
    U = F.triu(F.narrow(lu, -2, 0, k) if m > k else lu)
    P = None if pivots is None else F._lu_perm(lu, pivots)
    return P, L, U


def _lu_backward(F, g, out, a, pivot=True, part="LU"):
    # FunctionsManual.cpp linalg_lu_backward (m == n), with gL = tril(g, -1), gU = triu(g)
    # (lu_factor_ex_backward): gA = P L^-H [tril(L^H gL, -1) + triu(gU U^H)] U^-H
    m, n = a.shape[-2], a.shape[-1]
    if m != n:
        raise NotImplementedError("the LU backward is implemented for square matrices only")
    P, L, U = _lu_unpack(F, out, F._linalg_lu_factor(a, pivot, "pivots"))
    phi = F.add(F.tril(F.matmul(mH(F, L), F.tril(g, -1)), -1),
                F.triu(F.matmul(F.triu(g), mH(F, U))))
    ga = F.linalg_solve_triangular(mH(F, U), phi, upper=False, left=False)
    ga = F.linalg_solve_triangular(mH(F, L), ga, upper=True, unitriangular=True)
    return (F.matmul(P, ga),)


def _lu_shape(s, pivot=True, part="LU"):
    return s if part == "LU" else s[:-2] + (min(s[-2:]),)


def _lu_ref(a, pivot=True, part="LU"):
    out = [_lu_impl(np, m, pivot, part) for m in a.reshape((-1,) + a.shape[-2:])]
    return np.stack(out).reshape(_lu_shape(a.shape, pivot, part))


def _sq_samples(*shapes, parts=None):
    def gen(rng, dt):
        for s in shapes:
            a = (_normal(rng, s, dt) + (s[-1] * np.eye(*s[-2:]) if s[-1] == s[-2] else 0))
            for kw in parts or ({},):
                yield (a.astype(dt.np),), kw
    return gen


declare(
    "_linalg_lu_factor", "linalg", "A, pivot=True, part='LU'", method=False,
    attrs_rule=_lu_attrs("lu_factor"),
    fixed=lambda inputs, attrs: inputs[0].dtype if attrs["part"] == "LU" else D.int32,
    shape=_lu_shape, impl=_lu_impl,
    backward=lambda F, g, out, a, pivot=True, part="LU": _lu_backward(F, g, out, a, pivot)
    if part == "LU" else (None,),
    ref=_lu_ref, sample_inputs=_sq_samples((3, 3), (2, 4, 4), parts=({"part": "LU"},)),
    test_dtypes=FLOATS_COMPLEX,
)


def _lu_perm_impl(xp, lu, pivots):
    """The permutation matrix P (A = P L U) of LAPACK's 1-based row-interchange vector."""
    m = lu.shape[-2]
    shape = pivots.shape[:-1]
    piv = np.asarray(pivots).reshape((-1, pivots.shape[-1])).astype(np.int64) - 1
    perm = np.tile(np.arange(m), (piv.shape[0], 1))
    rows = np.arange(piv.shape[0])
    for i in range(piv.shape[1]):
        a, b = perm[rows, i].copy(), perm[rows, piv[:, i]].copy()
        perm[rows, i], perm[rows, piv[:, i]] = b, a
    p = np.zeros((piv.shape[0], m, m), lu.dtype)
    p[rows[:, None], perm, np.arange(m)[None, :]] = 1
    return xp.asarray(p.reshape(shape + (m, m)))


declare(
    "_lu_perm", "linalg", "LU, pivots", 2, data=(0,), scalar_ok=False, method=False,
    shape=lambda s, sp: sp[:-1] + (s[-2], s[-2]), impl=_lu_perm_impl,
    backward=lambda F, g, out, lu, piv: (None, None),
    ref=lambda lu, piv: _lu_perm_impl(np, lu, piv),
    sample_inputs=lambda rng, dt: (((a, _lu_impl(np, a, part="pivots")), {}) for (a,), _ in
                                   _sq_samples((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS,
)


def _lu_factor_decomp(F, a, *, pivot=True):
    return lu_factor_result(F._linalg_lu_factor(a, pivot, "LU"),
                            F._linalg_lu_factor(a, pivot, "pivots"))


def _lu_factor_ex_decomp(F, a, *, pivot=True, check_errors=False):
    lu, piv = _lu_factor_decomp(F, a, pivot=pivot)
    return lu_factor_ex_result(lu, piv, F._linalg_info(a, "lu_factor_ex", check_errors))


def _lu_factor_checked(F, a, *, pivot=True):
    F._linalg_info(a, "lu_factor", True)
    return _lu_factor_decomp(F, a, pivot=pivot)


def _lu_refs(what):
    def ref(a, **_):
        lu = _lu_ref(a)
        piv = _lu_ref(a, part="pivots")
        if what == "factor":
            return lu, piv
        if what == "factor_ex":
            return lu, piv, np.zeros(a.shape[:-2], np.int32)
        p = _lu_perm_impl(np, lu, piv)
        k = min(a.shape[-2:])
        L = np.tril(lu[..., :, :k], -1) + np.eye(a.shape[-2], k)
        return p, L, np.triu(lu[..., :k, :])
    return ref


_LU_SAMPLES = _sq_samples((3, 3), (2, 4, 4))  # rectangular: values in test_linalg_sweep.py
declare("linalg_lu_factor", "composite", "A, *, pivot=True", method=False,
        attrs_rule=_lu_attrs("lu_factor"), decomp=_lu_factor_checked, ref=_lu_refs("factor"),
        sample_inputs=_LU_SAMPLES, test_dtypes=FLOATS_COMPLEX)
declare("linalg_lu_factor_ex", "composite", "A, *, pivot=True, check_errors=False",
        method=False, attrs_rule=_lu_attrs("lu_factor_ex"), decomp=_lu_factor_ex_decomp,
        ref=_lu_refs("factor_ex"), sample_inputs=_LU_SAMPLES, test_dtypes=FLOATS_COMPLEX)
declare("linalg_lu", "composite", "A, *, pivot=True", method=False,
        attrs_rule=_lu_attrs("lu"),
        decomp=lambda F, a, *, pivot=True: lu_result(*_lu_unpack(
            F, F._linalg_lu_factor(a, pivot, "LU"), F._linalg_lu_factor(a, pivot, "pivots"))),
        ref=_lu_refs("lu"), sample_inputs=_LU_SAMPLES, test_dtypes=FLOATS_COMPLEX)


def _lu_unpack_decomp(F, lu, pivots, unpack_data=True, unpack_pivots=True):
    P, L, U = _lu_unpack(F, lu, pivots if unpack_pivots else None)
    empty = F.new_zeros(lu, (0,))
    return lu_unpack_result(P if unpack_pivots else empty, L if unpack_data else empty,
                            U if unpack_data else empty)


declare(
    "lu_unpack", "composite", "LU_data, LU_pivots, unpack_data=True, unpack_pivots=True", 2,
    data=(0,), scalar_ok=False, method=False, decomp=_lu_unpack_decomp,
    ref=lambda lu, piv, **_: _lu_refs("lu")(_lu_solve_source(lu, piv)),
    sample_inputs=lambda rng, dt: (((_lu_ref(a), _lu_ref(a, part="pivots")), {}) for (a,), _
                                   in _LU_SAMPLES(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


def _lu_solve_source(lu, piv):
    """The matrix A = P L U an LU factorization came from (test reference helper)."""
    p = _lu_perm_impl(np, lu, piv)
    k = min(lu.shape[-2:])
    L = np.tril(lu[..., :, :k], -1) + np.eye(lu.shape[-2], k)
    return p @ L @ np.triu(lu[..., :k, :])


def _lu_solve_decomp(F, lu, pivots, b, *, left=True, adjoint=False):
    # A = P L U. left: A X = B (A^H X = B with adjoint); right: X A = B (X A^H = B)
    P, L, U = _lu_unpack(F, lu, pivots)
    tri = F.linalg_solve_triangular
    if left and not adjoint:
        x = tri(L, F.matmul(mH(F, P), b), upper=False, unitriangular=True)
        return tri(U, x, upper=True)
    if left:
        x = tri(mH(F, U), b, upper=False)
        return F.matmul(P, tri(mH(F, L), x, upper=True, unitriangular=True))
    if not adjoint:
        x = tri(U, b, upper=True, left=False)
        return F.matmul(tri(L, x, upper=False, left=False, unitriangular=True), mH(F, P))
    x = F.matmul(b, P)
    x = tri(mH(F, L), x, upper=True, left=False, unitriangular=True)
    return tri(mH(F, U), x, upper=False, left=False)


def _lu_solve_ref(lu, piv, b, *, left=True, adjoint=False):
    a = _lu_solve_source(lu, piv)
    a = np.conj(np.swapaxes(a, -1, -2)) if adjoint else a
    if left:
        return np.linalg.solve(a, b)
    return np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)), -1, -2)


def _lu_solve_samples(rng, dt):
    for (a,), _ in _sq_samples((3, 3), (2, 4, 4))(rng, dt):
        lu, piv = _lu_ref(a), _lu_ref(a, part="pivots")
        n = a.shape[-1]
        for kw in ({}, {"adjoint": True}, {"left": False}, {"left": False, "adjoint": True}):
            b = _normal(rng, a.shape[:-2] + ((n, 2) if kw.get("left", True) else (2, n)), dt)
            yield (lu, piv, b.astype(dt.np)), kw


declare(
    "linalg_lu_solve", "composite", "LU, pivots, B, *, left=True, adjoint=False", 3,
    data=(0, 2), scalar_ok=False, method=False, decomp=_lu_solve_decomp, ref=_lu_solve_ref,
    sample_inputs=_lu_solve_samples, test_dtypes=FLOATS_COMPLEX,
)
declare(
    "lu_solve", "composite", "input, LU_data, LU_pivots", 3, data=(0, 1), scalar_ok=False,
    decomp=lambda F, b, lu, piv: _lu_solve_decomp(F, lu, piv, b),
    ref=lambda b, lu, piv: _lu_solve_ref(lu, piv, b),
    sample_inputs=lambda rng, dt: (((b, lu, piv), {}) for (lu, piv, b), kw in
                                   _lu_solve_samples(rng, dt) if not kw),
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- cholesky_solve, cholesky_inverse


def _cholesky_solve_decomp(F, b, L, upper=False):
    # A = L L^H (lower) or U^H U (upper): two triangular solves that read the factor's
    # triangle, so the factor's gradient is that triangle's (PyTorch's dense formula agrees
    # there, and also fills the triangle the function does not read)
    tri = F.linalg_solve_triangular
    if upper:
        return tri(L, tri(mH(F, L), b, upper=False), upper=True)
    return tri(mH(F, L), tri(L, b, upper=False), upper=True)


def _chol_factor_samples(rng, dt, rhs=True):
    for (x,), kw in _sq_samples((3, 3), (2, 4, 4), parts=({}, {"upper": True}))(rng, dt):
        L = np.linalg.cholesky(x @ np.conj(np.swapaxes(x, -1, -2)))
        if kw:
            L = np.conj(np.swapaxes(L, -1, -2))
        b = _normal(rng, x.shape[:-1] + (2,), dt).astype(dt.np)
        yield ((b, L) if rhs else (L,)), kw


def _from_factor(L, upper):
    return np.conj(np.swapaxes(L, -1, -2)) @ L if upper else L @ np.conj(np.swapaxes(L, -1, -2))


declare(
    "cholesky_solve", "composite", "input, input2, upper=False", 2, data=(0, 1),
    scalar_ok=False, decomp=_cholesky_solve_decomp,
    ref=lambda b, L, upper=False: np.linalg.solve(_from_factor(L, upper), b),
    sample_inputs=_chol_factor_samples, test_dtypes=FLOATS_COMPLEX,
)
declare(
    "cholesky_inverse", "composite", "input, upper=False",
    decomp=lambda F, L, upper=False: F.cholesky_solve(
        F.diag_embed(F.add(F.new_zeros(L, tuple(L.shape[:-1])), 1.0)), L, upper),
    ref=lambda L, upper=False: np.linalg.inv(_from_factor(L, upper)),
    sample_inputs=lambda rng, dt: _chol_factor_samples(rng, dt, rhs=False),
    test_dtypes=FLOATS_COMPLEX,
)
