"""`torch.linalg`'s `_ex` variants (solve_ex, inv_ex, cholesky_ex: a result and LAPACK's `info`
instead of an error) and the `info` codes themselves (`_linalg_info`: the 1-based index of the
first zero pivot of getrf, or of the first non-positive leading minor of potrf; 0 on success),
which `lu_factor_ex` uses too. The kernels do not raise: failing matrices give NaN results and
a nonzero info, and `check_errors=True` raises PyTorch's error and message. Backward rules:
PyTorch's derivatives.yaml (linalg_solve, linalg_inv_ex, linalg_cholesky_ex). Imports nothing
of wick's outside `ir`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .. import dtypes as D
from ..opdef import broadcast_shapes
from .indexing import declare
from .linalg import FLOATS_COMPLEX, LinAlgError, mH
from .linalg_solve import (
    _batch,
    _nan_where_failing,
    _sq_samples,
    _vector_rhs,
    cholesky_ex_result,
    inv_ex_result,
    solve_ex_result,
)
from .matrix import _cholesky_backward, _normal, _square


def _info_messages(op, i):
    return {
        "lu_factor": f"U[{i},{i}] is zero and using it on lu_solve would result in a division "
                     f"by zero. If you still want to perform the factorization, consider "
                     f"calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)",
        "inv_ex": f"The diagonal element {i} is zero, the inversion could not be completed "
                  f"because the input matrix is singular.",
        "solve_ex": "The solver failed because the input matrix is singular.",
        "cholesky_ex": f"The factorization could not be completed because the input is not "
                       f"positive-definite (the leading minor of order {i} is not "
                       f"positive-definite).",
    }[op.removesuffix("_ex") + "_ex" if op != "lu_factor" else op]


def _info_impl(xp, a, op, check_errors=False):
    """LAPACK's `info` per matrix (int32, batch shape): the 1-based index of the first zero
    pivot of getrf (LU-based ops), or of the first non-positive leading minor of potrf
    (cholesky_ex); 0 where the factorization succeeds. With `check_errors`, the first
    nonzero one raises PyTorch's error instead."""
    a = np.asarray(a)
    shape, flat = _batch(a)
    info = np.zeros(flat.shape[0], np.int32)
    chol = op.startswith("cholesky")
    try:
        ok = (np.linalg.cholesky((a + np.conj(np.swapaxes(a, -1, -2))) / 2) is not None) \
            if chol else bool(np.all(np.linalg.slogdet(a)[0] != 0))
    except np.linalg.LinAlgError:
        ok = False
    if not ok:
        for i, m in enumerate(flat):
            if chol:
                potrf, = sla.get_lapack_funcs(("potrf",), (m,))
                info[i] = potrf((m + np.conj(m.T)) / 2, lower=True)[1]
            else:
                getrf, = sla.get_lapack_funcs(("getrf",), (m,))
                info[i] = getrf(m)[2]
    if check_errors and info.any():
        b = int(np.flatnonzero(info)[0])
        where = f"(Batch element {b}): " if shape else ""
        name = "torch.linalg." + op if op.startswith("lu") else "linalg." + op
        exc = RuntimeError if op.startswith("lu") else LinAlgError
        raise exc(f"{name}: {where}{_info_messages(op, int(info[b]))}")
    return xp.asarray(info.reshape(shape))


declare(
    "_linalg_info", "linalg", "A, op, check_errors=False", method=False, fixed=D.int32,
    shape=lambda s, **_: s[:-2], impl=_info_impl,
    ref=lambda a, op, check_errors=False: np.zeros(a.shape[:-2], np.int32),
    sample_inputs=lambda rng, dt: ((x, {"op": op}) for op in ("lu_factor_ex", "cholesky_ex")
                                   for x, _ in _sq_samples((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


def _inv_noraise(xp, a):
    return _nan_where_failing(np.linalg.inv, a) if xp is np else xp.linalg.inv(a)


def _chol_noraise(xp, a, upper=False):
    sym = (a + xp.conj(xp.swapaxes(a, -1, -2))) / 2
    low = _nan_where_failing(np.linalg.cholesky, sym) if xp is np else xp.linalg.cholesky(sym)
    return xp.conj(xp.swapaxes(low, -1, -2)) if upper else low


def _solve_noraise(xp, a, b):
    return _nan_where_failing(np.linalg.solve, a, b) if xp is np else xp.linalg.solve(a, b)


declare(
    "_linalg_inv_ex", "linalg", "A", method=False, attrs_rule=_square("inv_ex"),
    shape=lambda s: s, impl=_inv_noraise,
    backward=lambda F, g, out, a: (F.neg(F.matmul(F.matmul(mH(F, out), g), mH(F, out))),),
    ref=np.linalg.inv, sample_inputs=_sq_samples((3, 3), (2, 4, 4)),
    test_dtypes=FLOATS_COMPLEX,
)
declare(
    "_linalg_cholesky_ex", "linalg", "A, upper=False", method=False,
    attrs_rule=_square("cholesky_ex"), shape=lambda s, upper=False: s, impl=_chol_noraise,
    backward=_cholesky_backward,
    ref=lambda a, upper=False: _chol_noraise(np, a, upper),
    sample_inputs=lambda rng, dt: (((x @ np.conj(np.swapaxes(x, -1, -2)),), kw) for (x,), kw in
                                   _sq_samples((3, 3), (2, 4, 4), parts=(
                                       {}, {"upper": True}))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


def _solve_ex_backward(F, g, out, a, b):
    # derivatives.yaml linalg_solve: gB = A^-H g, gA = -gB X^H (b is a matrix here)
    gb = F._linalg_solve_ex(mH(F, a), g)
    return F.neg(F.matmul(gb, mH(F, out))), gb


declare(
    "_linalg_solve_ex", "linalg", "A, B", 2, data=(0, 1), scalar_ok=False, method=False,
    shape=lambda sa, sb: broadcast_shapes(sa[:-2], sb[:-2]) + sb[-2:],
    impl=_solve_noraise, backward=_solve_ex_backward, ref=np.linalg.solve,
    sample_inputs=lambda rng, dt: (((a, _normal(rng, a.shape[:-1] + (2,), dt).astype(dt.np)),
                                    {}) for (a,), _ in _sq_samples((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)


def _solve_ex_decomp(F, a, b, *, left=True, check_errors=False):
    vec = _vector_rhs(a, b)
    rhs = F.unsqueeze(b, -1) if vec else b
    if left:
        x = F._linalg_solve_ex(a, rhs)
    else:  # X A = B  <=>  A^T X^T = B^T
        x = F.transpose(F._linalg_solve_ex(F.transpose(a, -1, -2), F.transpose(rhs, -1, -2)),
                        -1, -2)
    info = F._linalg_info(a, "solve_ex", check_errors)
    return solve_ex_result(F.squeeze(x, -1) if vec else x, info)


def _ex_attrs(op):
    def rule(inputs, attrs):
        return _square(op)(inputs[:1], attrs)
    return rule


def _ex_ref(fn):
    def ref(a, *rest, **kw):
        return fn(a, *rest, **kw), np.zeros(a.shape[:-2], np.int32)
    return ref


declare(
    "linalg_solve_ex", "composite", "A, B, *, left=True, check_errors=False", 2, data=(0, 1),
    scalar_ok=False, method=False, attrs_rule=_ex_attrs("solve_ex"), decomp=_solve_ex_decomp,
    ref=_ex_ref(lambda a, b, left=True, check_errors=False: np.linalg.solve(a, b) if left else
                np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2)),
                            -1, -2)),
    sample_inputs=lambda rng, dt: (((a, _normal(rng, a.shape[:-2] + (
        (a.shape[-1], 2) if not kw else (2, a.shape[-1])), dt).astype(dt.np)), kw)
        for (a,), kw in _sq_samples((3, 3), (2, 4, 4), parts=({}, {"left": False}))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)
declare(
    "linalg_inv_ex", "composite", "A, *, check_errors=False", method=False,
    attrs_rule=_ex_attrs("inv_ex"),
    decomp=lambda F, a, *, check_errors=False: inv_ex_result(
        F._linalg_inv_ex(a), F._linalg_info(a, "inv_ex", check_errors)),
    ref=_ex_ref(lambda a, check_errors=False: np.linalg.inv(a)),
    sample_inputs=_sq_samples((3, 3), (2, 4, 4)), test_dtypes=FLOATS_COMPLEX,
)
declare(
    "linalg_cholesky_ex", "composite", "A, *, upper=False, check_errors=False", method=False,
    attrs_rule=_ex_attrs("cholesky_ex"),
    decomp=lambda F, a, *, upper=False, check_errors=False: cholesky_ex_result(
        F._linalg_cholesky_ex(a, upper), F._linalg_info(a, "cholesky_ex", check_errors)),
    ref=_ex_ref(lambda a, upper=False, check_errors=False: _chol_noraise(np, a, upper)),
    sample_inputs=lambda rng, dt: (((x @ np.conj(np.swapaxes(x, -1, -2)),), kw) for (x,), kw in
                                   _sq_samples((3, 3), (2, 4, 4), parts=(
                                       {}, {"upper": True}))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)
