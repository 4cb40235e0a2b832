"""`torch.linalg.lstsq` (all four results, every driver) and the LDL factorization
(`ldl_factor(_ex)`, `ldl_solve`), on LAPACK through scipy.linalg.

lstsq is a composite over one primitive that returns the solution with the rank packed in
an extra row (one LAPACK call per matrix gives both; gelsy is called directly on a
Fortran-ordered batch), the residuals as ||A X - B||^2 from the solution (where PyTorch
returns them: m > n and a driver other than gelsy) and the singular values of gelsd/gelss
from svdvals. Its backward is PyTorch's linalg_lstsq_backward: the gradient of pinv(A) B.
LDL: LAPACK sytrf/hetrf (lower, LAPACK's pivots as PyTorch returns them) and sytrs/hetrs;
not differentiable, as in PyTorch (eager exposes them as functions, not composites).
Imports nothing of wick's outside `ir`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .. import dtypes as D
from ..opdef import broadcast_shapes
from ..return_types import return_type
from .indexing import declare
from .linalg import FLOATS_COMPLEX, LinAlgError, mH
from .linalg_solve import _vector_rhs
from .matrix import _float, _normal, _pinv_backward, _square

lstsq_result = return_type("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
ldl_factor_result = return_type("linalg_ldl_factor", ["LD", "pivots"])
ldl_factor_ex_result = return_type("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


# ---------------------------------------------------------------- lstsq

DRIVERS = ("gels", "gelsy", "gelsd", "gelss")


def _lstsq_impl(xp, a, b, rcond=None, driver=None):
    """Rows [0, n) of the result: the solution (n x k); row n, column 0: the rank. One LAPACK
    call per matrix gives both (the singular values of gelsd/gelss come from svdvals)."""
    if xp is not np:
        raise NotImplementedError("linalg.lstsq is implemented for CPU tensors only")
    batch = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    (m, n), k = a.shape[-2:], b.shape[-1]
    a = np.broadcast_to(a, batch + (m, n)).reshape((-1, m, n))
    b = np.broadcast_to(b, batch + (m, k)).reshape((-1, m, k))
    out = np.zeros((a.shape[0], n + 1, max(k, 1)), a.dtype)
    cond = rcond if rcond is not None else np.finfo(a.dtype).eps * max(m, n)
    lapack = "gelsy" if driver in (None, "gels") else driver
    if lapack == "gelsy" and a.shape[0] and m and n and k:
        _gelsy_batch(a, b, cond, out)
    else:
        for i in range(a.shape[0]):
            x, _, rank, _ = sla.lstsq(a[i], b[i], cond=cond, lapack_driver=lapack,
                                      check_finite=False)
            out[i, :n, :k] = x
            out[i, n, 0] = rank
    return out.reshape(batch + out.shape[1:])


def _gelsy_batch(a, b, cond, out):
    """LAPACK gelsy on each matrix of a (B, m, n) batch, called directly (as
    scipy.linalg.lstsq does, with its checks and workspace query done once for the batch)."""
    (m, n), k = a.shape[-2:], b.shape[-1]
    gelsy, gelsy_lwork = sla.get_lapack_funcs(("gelsy", "gelsy_lwork"), (a[0], b[0]))
    lwork = sla.lapack._compute_lwork(gelsy_lwork, m, n, k, cond)
    # Fortran-ordered copies of the whole batch at once: each matrix then goes to LAPACK
    # without a copy of its own
    af = np.ascontiguousarray(np.swapaxes(a, -1, -2))
    bf = np.zeros((a.shape[0], k, max(m, n)), a.dtype)
    bf[:, :, :m] = np.swapaxes(b, -1, -2)
    jpvt = np.zeros((n, 1), np.int32)
    for i in range(a.shape[0]):
        jpvt[:] = 0
        _, x, _, rank, info = gelsy(af[i].T, bf[i].T, jpvt, cond, lwork, True, True)
        if info < 0:
            raise ValueError(f"illegal value in {-info}-th argument of internal gelsy")
        out[i, :n, :k] = x[:n]
        out[i, n, 0] = rank


def _lstsq_backward(F, g, out, a, b, rcond=None, driver=None):
    # FunctionsManual.cpp linalg_lstsq_backward: the gradient of X = pinv(A) B
    n, k = a.shape[-1], b.shape[-1]
    gx = F.narrow(F.narrow(g, -2, 0, n), -1, 0, k)
    pinv = F.linalg_pinv(a)
    ga = _pinv_backward(F, F.matmul(gx, mH(F, b)), pinv, a)[0]
    return ga, F.matmul(mH(F, pinv), gx)


declare(
    "_linalg_lstsq", "linalg", "A, B, rcond=None, driver=None", 2, data=(0, 1),
    scalar_ok=False, method=False,
    shape=lambda sa, sb, **_: broadcast_shapes(sa[:-2], sb[:-2]) + (sa[-1] + 1,
                                                                    max(sb[-1], 1)),
    impl=_lstsq_impl, backward=_lstsq_backward,
    ref=lambda a, b, rcond=None, driver=None: _lstsq_impl(np, a, b, rcond, driver),
    sample_inputs=lambda rng, dt: iter([((_normal(rng, sa, dt).astype(dt.np),
                                          _normal(rng, sb, dt).astype(dt.np)), {})
                                        for sa, sb in (((5, 3), (5, 2)), ((2, 4, 4), (4, 1)))]),
    test_dtypes=FLOATS_COMPLEX,
)


def _lstsq_attrs(inputs, attrs):
    a, b = inputs
    _float("lstsq")((a,), attrs)
    if attrs["driver"] is not None and attrs["driver"] not in DRIVERS:
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of "
                           f"({', '.join(DRIVERS)})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same "
                           f"dtype, but got input's dtype {a.dtype.title} and other's dtype "
                           f"{b.dtype.title}")
    vec = _vector_rhs(a, b)
    if (b.shape[-1] if vec else b.shape[-2]) != a.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-"
                           f"{1 if vec else 2})")
    return attrs


def _lstsq_decomp(F, a, b, rcond=None, *, driver=None):
    driver = driver or "gelsy"
    vec = _vector_rhs(a, b)
    rhs = F.unsqueeze(b, -1) if vec else b
    (m, n), k = a.shape[-2:], rhs.shape[-1]
    packed = F._linalg_lstsq(a, rhs, rcond, driver)
    x = F.narrow(F.narrow(packed, -2, 0, n), -1, 0, k)
    real = a.dtype.to_real()
    empty = F.new_zeros(a, (0,), dtype=real)
    info = F.real(F.select(F.select(packed, -1, 0), -1, n)) if a.dtype.is_complex else \
        F.select(F.select(packed, -1, 0), -1, n)
    rank = F.new_zeros(a, (0,), dtype=D.int64) if driver == "gels" else F.cast(info, D.int64)
    sv = F._linalg_svd(a, False, "S") if driver in ("gelsd", "gelss") else empty
    res = empty
    if m > n and driver != "gelsy":
        r = F.abs(F.sub(F.matmul(a, x), rhs))
        res = F.sum(F.mul(r, r), -2)  # (*, k); (*, 1) for a vector B, as PyTorch's
    return lstsq_result(F.squeeze(x, -1) if vec else x, res, rank, sv)


def _lstsq_ref(a, b, rcond=None, driver=None):
    driver = driver or "gelsy"
    vec = _vector_rhs(a, b)
    rhs = b[..., None] if vec else b
    x = np.linalg.pinv(a) @ rhs
    m, n = a.shape[-2:]
    res = (np.abs(a @ x - rhs) ** 2).sum(-2) if m > n and driver != "gelsy" else np.zeros(0)
    rank = np.zeros(0) if driver == "gels" else np.linalg.matrix_rank(a)
    sv = np.linalg.svd(a, compute_uv=False) if driver in ("gelsd", "gelss") else np.zeros(0)
    return x[..., 0] if vec else x, res, rank, sv


def _lstsq_samples(rng, dt):
    for sa, sb, kw in (((5, 3), (5, 2), {}), ((5, 3), (5, 2), {"driver": "gelsd"}),
                       ((2, 3, 5), (2, 3, 2), {"driver": "gelss"}),
                       ((2, 4, 4), (2, 4, 1), {"driver": "gels"}),
                       ((2, 6, 3), (2, 6), {"driver": "gelsd"})):
        yield (_normal(rng, sa, dt).astype(dt.np), _normal(rng, sb, dt).astype(dt.np)), kw


declare(
    "linalg_lstsq", "composite", "A, B, rcond=None, *, driver=None", 2, data=(0, 1),
    scalar_ok=False, method=False, attrs_rule=_lstsq_attrs, decomp=_lstsq_decomp,
    ref=_lstsq_ref, sample_inputs=_lstsq_samples, test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- LDL


def _ldl_funcs(a, hermitian, names):
    pre = "he" if hermitian and a.dtype.kind == "c" else "sy"
    return sla.get_lapack_funcs(tuple(pre + n for n in names), (a,))


def _ldl_impl(xp, a, hermitian=False, part="LD"):
    if xp is not np:
        raise NotImplementedError("linalg.ldl_factor is implemented for CPU tensors only")
    flat = a.reshape((-1,) + a.shape[-2:])
    lds, pivs, infos = [], [], []
    for m in flat:
        trf, = _ldl_funcs(m, hermitian, ("trf",))
        ldu, ipiv, info = trf(m, lower=1)
        lds.append(np.tril(ldu))
        pivs.append(ipiv)
        infos.append(info)
    if part == "LD":
        return np.stack(lds).reshape(a.shape) if lds else a.copy()
    vals = pivs if part == "pivots" else infos
    tail = a.shape[-1:] if part == "pivots" else ()
    return (np.stack(vals) if vals else np.zeros((0,) + tail)).reshape(
        a.shape[:-2] + tail).astype(np.int32)


declare(
    "_linalg_ldl_factor", "linalg", "A, hermitian=False, part='LD'", method=False,
    attrs_rule=_square("ldl_factor"),
    fixed=lambda inputs, attrs: inputs[0].dtype if attrs["part"] == "LD" else D.int32,
    shape=lambda s, hermitian=False, part="LD": s if part == "LD" else
    s[:-1] if part == "pivots" else s[:-2],
    impl=_ldl_impl, ref=lambda a, hermitian=False, part="LD": _ldl_impl(np, a, hermitian, part),
    sample_inputs=lambda rng, dt: iter([((a + np.swapaxes(a, -1, -2),), {"part": p})
                                        for a in [_normal(rng, (2, 4, 4), dt).astype(dt.np)]
                                        for p in ("LD", "pivots", "info")]),
    test_dtypes=FLOATS_COMPLEX,
)


def _ldl_solve_impl(xp, ld, pivots, b, hermitian=False):
    if xp is not np:
        raise NotImplementedError("linalg.ldl_solve is implemented for CPU tensors only")
    batch = broadcast_shapes(ld.shape[:-2], b.shape[:-2])
    ld = np.broadcast_to(ld, batch + ld.shape[-2:]).reshape((-1,) + ld.shape[-2:])
    piv = np.broadcast_to(pivots, batch + pivots.shape[-1:]).reshape((-1, pivots.shape[-1]))
    bb = np.broadcast_to(b, batch + b.shape[-2:]).reshape((-1,) + b.shape[-2:])
    out = np.empty(bb.shape, np.result_type(ld.dtype, b.dtype))
    for i in range(ld.shape[0]):
        trs, = _ldl_funcs(ld[i], hermitian, ("trs",))
        out[i], _ = trs(ld[i], piv[i], bb[i], lower=1)
    return out.reshape(batch + b.shape[-2:])


def _ldl_ref(ld, pivots, b, hermitian=False):
    return _ldl_solve_impl(np, ld, pivots, b, hermitian)


def _ldl_solve_samples(rng, dt):
    a = _normal(rng, (2, 4, 4), dt)
    a = (a + np.swapaxes(a, -1, -2)).astype(dt.np)
    yield ((_ldl_impl(np, a), _ldl_impl(np, a, part="pivots"),
            _normal(rng, (2, 4, 2), dt).astype(dt.np)), {})


declare(
    "linalg_ldl_solve", "linalg", "LD, pivots, B, *, hermitian=False", 3, data=(0, 2),
    scalar_ok=False, method=False,
    shape=lambda sl, sp, sb, hermitian=False: broadcast_shapes(sl[:-2], sb[:-2]) + sb[-2:],
    impl=_ldl_solve_impl, ref=_ldl_ref, sample_inputs=_ldl_solve_samples,
    test_dtypes=FLOATS_COMPLEX,
)


def ldl_info_error(info, batched):
    """The error for a failed LDL factorization (a zero on D's diagonal; PyTorch reports
    LAPACK's code as an internal error there): LinAlgError naming the entry."""
    flat = np.asarray(info).reshape(-1)
    b = int(np.flatnonzero(flat)[0])
    where = f"(Batch element {b}): " if batched else ""
    return LinAlgError(f"torch.linalg.ldl_factor: {where}LDL factorization failed: "
                       f"D[{flat[b]}, {flat[b]}] is zero")
