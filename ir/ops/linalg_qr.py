"""The Householder QR ops: `geqrf` (LAPACK's packed QR: R on and above the diagonal, the
reflectors' vectors below it, and their scales tau), `linalg.householder_product` (orgqr: Q =
H_1 ... H_k with H_i = I - tau_i v_i v_i^H) and `ormqr` (Q or Q^H times a matrix, from the left
or the right). geqrf is a LAPACK call on the CPU; the others form Q as composites of registry
ops, so their gradients come from those. Semantics: the PyTorch documentation of each op.
Imports nothing of wick's outside `ir`.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from .indexing import declare
from .linalg import FLOATS_COMPLEX, mH
from .linalg_functions import _eye
from .matrix import _float, _normal


def _householder_full(F, a, tau):
    """Q = H_1 ... H_k (m x m), H_i = I - tau_i v_i v_i^H, v_i the i-th column of `a` below
    the diagonal with a 1 on it (LAPACK's orgqr/ungqr), applied right to left."""
    m, k = a.shape[-2], tau.shape[-1]
    batch = tuple(a.shape[:-2])
    q = _eye(F, a, m)
    for i in reversed(range(k)):
        parts = [F.new_zeros(a, batch + (i, 1))] if i else []
        parts.append(F.add(F.new_zeros(a, batch + (1, 1)), 1.0))
        if m - i - 1:
            parts.append(F.narrow(F.narrow(a, -1, i, 1), -2, i + 1, m - i - 1))
        v = F.cat(parts, -2)
        t = F.unsqueeze(F.narrow(tau, -1, i, 1), -1)
        q = F.sub(q, F.mul(t, F.matmul(v, F.matmul(mH(F, v), q))))
    return q


def _householder_attrs(inputs, attrs):
    a, tau = inputs
    if a.ndim < 2 or a.shape[-2] < a.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-2] must be greater "
                           "than or equal to input.shape[-1]")
    if a.shape[-1] < tau.shape[-1]:
        raise RuntimeError("torch.linalg.householder_product: input.shape[-1] must be greater "
                           "than or equal to tau.shape[-1]")
    return attrs


def _geqrf_impl(xp, a, part="a"):
    if xp is not np:
        raise NotImplementedError("geqrf is implemented for CPU tensors only")
    flat = a.reshape((-1,) + a.shape[-2:])
    outs, taus = [], []
    for m in flat:
        geqrf, = sla.get_lapack_funcs(("geqrf",), (m,))
        qr, tau, _, _ = geqrf(m)
        outs.append(qr)
        taus.append(tau)
    k = min(a.shape[-2:])
    if part == "a":
        return np.stack(outs).reshape(a.shape) if outs else a.copy()
    return (np.stack(taus) if taus else np.zeros((0, k), a.dtype)).reshape(a.shape[:-2] + (k,))


declare(
    "_geqrf", "linalg", "input, part='a'", method=False, attrs_rule=_float("geqrf"),
    shape=lambda s, part="a": s if part == "a" else s[:-2] + (min(s[-2:]),),
    impl=_geqrf_impl, ref=lambda a, part="a": _geqrf_impl(np, a, part),
    sample_inputs=lambda rng, dt: iter([((_normal(rng, (4, 3), dt).astype(dt.np),),
                                         {"part": p}) for p in ("a", "tau")]),
    test_dtypes=FLOATS_COMPLEX,
)
def _q_ref(a, tau):
    m = a.shape[-2]
    q = np.broadcast_to(np.eye(m, dtype=a.dtype), a.shape[:-2] + (m, m)).copy()
    for i in reversed(range(tau.shape[-1])):
        v = a[..., :, i:i + 1].copy()
        v[..., :i, :] = 0
        v[..., i, :] = 1
        q = q - tau[..., i, None, None] * (v @ (np.conj(np.swapaxes(v, -1, -2)) @ q))
    return q


def _qr_factor_samples(rng, dt):
    for s in ((4, 3), (2, 3, 3), (5, 2)):
        a = _normal(rng, s, dt).astype(dt.np)
        yield (_geqrf_impl(np, a, "a"), _geqrf_impl(np, a, "tau")), {}


declare(
    "linalg_householder_product", "composite", "input, tau", 2, data=(0, 1), scalar_ok=False,
    aliases=("orgqr",), attrs_rule=_householder_attrs,
    decomp=lambda F, a, tau: F.narrow(_householder_full(F, a, tau), -1, 0, a.shape[-1]),
    ref=lambda a, tau: _q_ref(a, tau)[..., :a.shape[-1]],
    sample_inputs=_qr_factor_samples, test_dtypes=FLOATS_COMPLEX,
)


def _ormqr_decomp(F, a, tau, other, left=True, transpose=False):
    q = _householder_full(F, a, tau)
    q = mH(F, q) if transpose else q
    return F.matmul(q, other) if left else F.matmul(other, q)


def _ormqr_ref(a, tau, c, left=True, transpose=False):
    q = _q_ref(a, tau)
    q = np.conj(np.swapaxes(q, -1, -2)) if transpose else q
    return q @ c if left else c @ q


declare(
    "ormqr", "composite", "input, input2, input3, left=True, transpose=False", 3,
    data=(0, 1, 2), scalar_ok=False, decomp=_ormqr_decomp,
    ref=_ormqr_ref,
    sample_inputs=lambda rng, dt: (((a, tau, _normal(rng, a.shape[:-2] + (
        (a.shape[-2], 2) if kw.get("left", True) else (2, a.shape[-2])), dt).astype(dt.np)), kw)
        for (a, tau), _ in _qr_factor_samples(rng, dt)
        for kw in ({}, {"left": False, "transpose": True})),
    test_dtypes=FLOATS_COMPLEX,
)
