"""`torch.linalg` on numpy.linalg kernels: inv, det, slogdet, solve, cholesky, qr, svd/svdvals,
eigh, pinv (the norms are in `norms.py`).

Registry names carry a `linalg_` prefix (`eager.linalg.inv` is `linalg_inv`; PyTorch's top-level
aliases `det`, `inverse`, `slogdet`, `pinverse` are aliases). Decompositions with several outputs
are composites over one primitive per output (`part=`), returning namedtuples as
`torch.return_types`. Backward rules: PyTorch's derivatives.yaml and FunctionsManual.cpp.
Cholesky and eigh read the Hermitian part (A + A^H) / 2 of their input: PyTorch's values for
valid input, and gradients of a function of every entry. For complex input the results that
are real by definition (svd's S, eigh's eigenvalues, slogdet's logabsdet, norms) have the real
dtype, as in PyTorch. Imports nothing outside `ir`.
"""

from __future__ import annotations

import numpy as np

from .elementwise import FLOATS
from .indexing import declare
from .linalg import (
    FLOATS_COMPLEX,
    LinAlgError,
    eigh_result,
    mH,
    qr_backward,
    qr_result,
    slogdet_result,
    svd_backward,
    svd_result,
)


def _square(op):
    """attrs rule: a float (batch of) square matrix, with PyTorch's messages."""
    def rule(inputs, attrs):
        a = inputs[0]
        if not a.dtype.is_floating_point and not a.dtype.is_complex:
            raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as "
                               f"input. Got {a.dtype.title}")
        if a.ndim < 2:
            raise RuntimeError(f"linalg.{op}: The input tensor A must have at least 2 "
                               f"dimensions.")
        if a.shape[-1] != a.shape[-2]:
            raise RuntimeError(f"linalg.{op}: A must be batches of square matrices, but they "
                               f"are {a.shape[-2]} by {a.shape[-1]} matrices")
        return attrs
    return rule


def _float(op, min_ndim=2):
    def rule(inputs, attrs):
        a = inputs[0]
        if not a.dtype.is_floating_point and not a.dtype.is_complex:
            raise RuntimeError(f"linalg.{op}: Expected a floating point or complex tensor as "
                               f"input. Got {a.dtype.title}")
        if a.ndim < min_ndim:
            raise RuntimeError(f"linalg.{op}: The input tensor A must have at least "
                               f"{min_ndim} dimensions.")
        return attrs
    return rule


def _normal(rng, shape, dt):
    """Standard normal float64 data, complex128 (both parts normal) for a complex `dt`."""
    a = rng.standard_normal(shape)
    return a + 1j * rng.standard_normal(shape) if dt.is_complex else a


def _mats(*shapes, spd=False):
    """sample_inputs: well-conditioned (or Hermitian positive-definite) matrices."""
    def gen(rng, dt):
        for s in shapes:
            a = _normal(rng, s, dt)
            n = s[-1]
            if spd:
                a = a @ np.conj(np.swapaxes(a, -1, -2)) + n * np.eye(n)
            elif s[-1] == s[-2]:
                a = a + n * np.eye(n)
            yield (a.astype(dt.np),), {}
    return gen


def _sym(xp, a):
    return (a + xp.conj(xp.swapaxes(a, -1, -2))) / 2


def _sym_F(F, g):
    return F.mul(F.add(g, mH(F, g)), 0.5)


def _real_part_dtype(*real_parts):
    """`fixed` dtype rule: the real counterpart of the input's dtype for the `part`s PyTorch
    returns real (svd's S, eigh's eigenvalues, slogdet's logabsdet: float32 for complex64,
    float64 for complex128), the input's dtype for the others."""
    def rule(inputs, attrs):
        d = inputs[0].dtype
        return d.to_real() if attrs["part"] in real_parts else d
    return rule


def _eye_like(F, x, n):
    return F.diag_embed(F.add(F.new_zeros(x, tuple(x.shape[:-2]) + (n,)), 1.0))


def _lapack(op, fn):
    """Run a numpy.linalg kernel, turning its LinAlgError into PyTorch's."""
    def impl(xp, *args, **kw):
        try:
            return fn(xp, *args, **kw)
        except np.linalg.LinAlgError as e:
            what = ("The factorization could not be completed because the input is not "
                    "positive-definite." if op == "cholesky" else
                    "The diagonal element is zero, the inversion could not be completed "
                    "because the input matrix is singular." if op == "inv" else
                    "The solver failed because the input matrix is singular." if op == "solve"
                    else str(e))
            raise LinAlgError(f"linalg.{op}: {what}") from None
    return impl


# ---------------------------------------------------------------- inv, det, slogdet, solve


declare(
    "linalg_inv", "linalg", "A", aliases=("inverse",), attrs_rule=_square("inv"),
    shape=lambda s: s, impl=_lapack("inv", lambda xp, a: xp.linalg.inv(a)),
    backward=lambda F, g, out, a: (F.neg(F.matmul(F.matmul(mH(F, out), g), mH(F, out))),),
    ref=np.linalg.inv, sample_inputs=_mats((3, 3), (2, 4, 4)), test_dtypes=FLOATS_COMPLEX,
)


def _det_backward(F, g, out, a):
    # d det(A) = det(A) tr(A^-1 dA)  =>  gA = g conj(det(A)) A^-H  (derivatives.yaml: linalg_det)
    det = F.conj(out) if out.dtype.is_complex else out
    s = F.reshape(F.mul(g, det), tuple(out.shape) + (1, 1))
    return (F.mul(s, mH(F, F.linalg_inv(a))),)


declare(
    "linalg_det", "linalg", "A", aliases=("det",), attrs_rule=_square("det"),
    shape=lambda s: s[:-2], impl=lambda xp, a: xp.linalg.det(a), backward=_det_backward,
    ref=np.linalg.det, sample_inputs=_mats((3, 3), (2, 4, 4)), test_dtypes=FLOATS_COMPLEX,
)


def _slogdet_impl(xp, a, part):
    sign, logabs = xp.linalg.slogdet(a)
    return sign if part == "sign" else logabs


def _slogdet_backward(F, g, out, a, part):
    # FunctionsManual.cpp slogdet_backward: gA = (g_logabsdet - i Im(conj(g_sign) sign)) A^-H;
    # a real sign is locally constant (no gradient)
    if part == "sign":
        if not a.dtype.is_complex:
            return (None,)
        g = F.mul(F.imag(F.mul(F.conj(g), out)), -1j)
    return (F.mul(F.reshape(g, tuple(g.shape) + (1, 1)), mH(F, F.linalg_inv(a))),)


declare(
    "_linalg_slogdet", "linalg", "A, part", method=False, attrs_rule=_square("slogdet"),
    fixed=_real_part_dtype("logabsdet"),
    shape=lambda s, part: s[:-2], impl=_slogdet_impl, backward=_slogdet_backward,
    ref=lambda a, part: np.linalg.slogdet(a)[part != "sign"],
    sample_inputs=lambda rng, dt: ((x, {"part": p}) for p in ("sign", "logabsdet")
                                   for x, _ in _mats((3, 3), (2, 4, 4))(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)
declare(
    "linalg_slogdet", "composite", "A", aliases=("slogdet",), attrs_rule=_square("slogdet"),
    decomp=lambda F, a: slogdet_result(F._linalg_slogdet(a, "sign"),
                                       F._linalg_slogdet(a, "logabsdet")),
    ref=lambda a: slogdet_result(*np.linalg.slogdet(a)),
    sample_inputs=_mats((3, 3), (2, 4, 4)), test_dtypes=FLOATS_COMPLEX,
)


def _is_vector_rhs(a, b):
    return b.ndim == 1 or (b.ndim == a.ndim - 1 and tuple(b.shape) == tuple(a.shape[:-1]))


def _solve_attrs(inputs, attrs):
    _square("solve")(inputs, attrs)
    a, b = inputs
    if not attrs["left"]:
        raise NotImplementedError("linalg.solve(left=False) is not implemented; solve "
                                  "A^T X^T = B^T instead")
    rows = b.shape[-1] if _is_vector_rhs(a, b) else b.shape[-2] if b.ndim >= 2 else -1
    if rows != a.shape[-1]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation "
                           f"AX = B ({'x'.join(map(str, a.shape[-2:]))} and "
                           f"{'x'.join(map(str, b.shape[-2:] if b.ndim > 1 else b.shape))})")
    if a.dtype is not b.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found "
                           f"A of type {a.dtype.title} and B of type {b.dtype.title} instead")
    return attrs


def _solve_impl(xp, a, b, left=True):
    if _is_vector_rhs(a, b):  # numpy treats b as a vector only when 1-D
        return xp.linalg.solve(a, b[..., None])[..., 0]
    return xp.linalg.solve(a, b)


def _solve_shape(sa, sb, left=True):
    from ..opdef import broadcast_shapes

    if len(sb) == 1 or (len(sb) == len(sa) - 1 and tuple(sb) == tuple(sa[:-1])):
        return broadcast_shapes(sa[:-2], sb[:-1]) + sb[-1:]
    return broadcast_shapes(sa[:-2], sb[:-2]) + sb[-2:]


def _solve_backward(F, g, out, a, b, left=True):
    gb = F.linalg_solve(mH(F, a), g)
    vec = _is_vector_rhs(a, b)
    gb2 = F.unsqueeze(gb, -1) if vec else gb
    x2 = F.unsqueeze(out, -1) if vec else out
    return F.neg(F.matmul(gb2, mH(F, x2))), gb


def _solve_samples(rng, dt):
    for sa, sb in (((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3)), ((2, 3, 3), (3, 1))):
        a = _normal(rng, sa, dt) + 3 * np.eye(3)
        yield (a.astype(dt.np), _normal(rng, sb, dt).astype(dt.np)), {}


declare(
    "linalg_solve", "linalg", "A, B, *, left=True", 2, data=(0, 1), scalar_ok=False,
    attrs_rule=_solve_attrs, shape=_solve_shape,
    impl=_lapack("solve", _solve_impl), backward=_solve_backward,
    ref=lambda a, b, left=True: _solve_impl(np, a, b), sample_inputs=_solve_samples,
    test_dtypes=FLOATS_COMPLEX,
)


# ---------------------------------------------------------------- cholesky, qr, svd, eigh


def _cholesky_impl(xp, a, upper=False):
    lower = xp.linalg.cholesky(_sym(xp, a))
    return xp.conj(xp.swapaxes(lower, -1, -2)) if upper else lower


def _cholesky_backward(F, g, out, a, upper=False):
    # FunctionsManual.cpp cholesky_backward: gA = L^-H phi(L^H gL) L^-1, then symmetrized;
    # phi takes the lower triangle with the diagonal halved
    L, gL = (mH(F, out), mH(F, g)) if upper else (out, g)
    p = F.matmul(mH(F, L), gL)
    phi = F.sub(F.tril(p), F.mul(F.diag_embed(F.diagonal(p, 0, -2, -1)), 0.5))
    li = F.linalg_inv(L)
    return (_sym_F(F, F.matmul(F.matmul(mH(F, li), phi), li)),)


declare(
    "linalg_cholesky", "linalg", "A, *, upper=False", attrs_rule=_square("cholesky"),
    shape=lambda s, upper=False: s, impl=_lapack("cholesky", _cholesky_impl),
    backward=_cholesky_backward,
    ref=lambda a, upper=False: (np.linalg.cholesky(a).swapaxes(-1, -2).conj() if upper
                                else np.linalg.cholesky(a)),
    sample_inputs=lambda rng, dt: ((x, a) for (x, _), a in zip(
        _mats((3, 3), (2, 4, 4), spd=True)(rng, dt), ({}, {"upper": True}))),
    test_dtypes=FLOATS_COMPLEX,
)


def _qr_impl(xp, a, mode="reduced", part="Q"):
    q, r = xp.linalg.qr(a, mode="complete" if mode == "complete" else "reduced")
    return q if part == "Q" else r


def _qr_shape(s, mode="reduced", part="Q"):
    m, n = s[-2], s[-1]
    k = m if mode == "complete" else min(m, n)
    if part == "Q":
        return s[:-2] + ((m, k) if mode != "r" else (0,))
    return s[:-2] + (k, n)


def _qr_backward(F, g, out, a, mode="reduced", part="Q"):
    # FunctionsManual.cpp linalg_qr_backward, one part at a time (it is linear in gQ, gR);
    # mode='r' (R alone) raises there, before Q would be needed
    q = out if part == "Q" or mode == "r" else F._linalg_qr(a, mode, "Q")
    r = out if part == "R" else F._linalg_qr(a, mode, "R")
    return (qr_backward(F, g, q, r, mode, part),)


def _qr_samples(rng, dt):
    for shape, mode in (((4, 3), "reduced"), ((2, 3, 4), "reduced"), ((3, 5), "complete"),
                        ((3, 3), "complete")):
        a = _normal(rng, shape, dt).astype(dt.np)
        for part in ("Q", "R"):
            yield (a,), {"mode": mode, "part": part}


declare(
    "_linalg_qr", "linalg", "A, mode='reduced', part='Q'", method=False,
    attrs_rule=_float("qr"), shape=_qr_shape, impl=_qr_impl, backward=_qr_backward,
    ref=lambda a, mode="reduced", part="Q": np.linalg.qr(
        a, "reduced" if mode == "r" else mode)[part == "R"],
    sample_inputs=_qr_samples, test_dtypes=FLOATS_COMPLEX,
)


def _qr_decomp(F, a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    r = F._linalg_qr(a, mode, "R")
    q = F.new_zeros(a, (0,)) if mode == "r" else F._linalg_qr(a, mode, "Q")
    return qr_result(q, r)


declare(
    "linalg_qr", "composite", "A, mode='reduced'", aliases=("qr",), attrs_rule=_float("qr"),
    decomp=_qr_decomp, ref=lambda a, mode="reduced": qr_result(*np.linalg.qr(a, mode)),
    sample_inputs=lambda rng, dt: iter([
        ((_normal(rng, s, dt).astype(dt.np),), a) for s, a in (
            ((4, 3), {}), ((3, 4), {}), ((2, 3, 5), {"mode": "complete"}))]),
    test_dtypes=FLOATS_COMPLEX,
)


def _svd_impl(xp, a, full_matrices=True, part="S"):
    if part == "S":
        return xp.linalg.svd(a, compute_uv=False)
    u, _, vh = xp.linalg.svd(a, full_matrices=full_matrices)
    return u if part == "U" else vh


def _svd_shape(s, full_matrices=True, part="S"):
    m, n = s[-2], s[-1]
    k = min(m, n)
    if part == "S":
        return s[:-2] + (k,)
    if part == "U":
        return s[:-2] + (m, m if full_matrices else k)
    return s[:-2] + (n if full_matrices else k, n)


def _svd_backward(F, g, out, a, full_matrices=True, part="S"):
    # derivatives.yaml _linalg_svd: with full_matrices, gU, gVh, U and Vh are narrowed to
    # their first k = min(m, n) columns (rows): the rest of U (Vh) is not determined by A
    if part == "S":
        u, vh = F._linalg_svd(a, False, "U"), F._linalg_svd(a, False, "Vh")
        return (svd_backward(F, g, u, out, vh, "S"),)
    k = min(a.shape[-2], a.shape[-1])
    u = out if part == "U" else F._linalg_svd(a, full_matrices, "U")  # U, Vh of one call
    vh = out if part == "Vh" else F._linalg_svd(a, full_matrices, "Vh")
    if u.shape[-1] != k:
        u = F.narrow(u, -1, 0, k)
        g = F.narrow(g, -1, 0, k) if part == "U" else g
    if vh.shape[-2] != k:
        vh = F.narrow(vh, -2, 0, k)
        g = F.narrow(g, -2, 0, k) if part == "Vh" else g
    return (svd_backward(F, g, u, F._linalg_svd(a, False, "S"), vh, part),)


def _distinct_sv(rng, shape, dt):
    """A matrix whose singular values are 1, 2, ..., k (the SVD's derivative needs them
    distinct: it divides by S_j^2 - S_i^2), as PyTorch's OpInfo samples."""
    u, _, vh = np.linalg.svd(_normal(rng, shape, dt), full_matrices=False)
    s = np.arange(min(shape[-2:]), 0, -1, dtype=np.float64)
    return ((u * s[..., None, :]) @ vh).astype(dt.np)


def _svd_part_samples(rng, dt):
    # full_matrices=True only where U (Vh) has no columns (rows) past k = min(m, n): there
    # the gradient is PyTorch's (narrowed) one, not the finite differences of LAPACK's basis.
    # Complex samples are S alone: the phases of U and Vh are LAPACK's choice and their
    # gradients assume a phase-invariant loss (tests/test_linalg_complex.py checks those)
    for shape, full, part in (((4, 3), True, "S"), ((2, 3, 4), True, "S"),
                              ((4, 3), False, "U"), ((2, 3, 4), True, "U"),
                              ((3, 3), True, "U"), ((2, 3, 4), False, "Vh"),
                              ((4, 3), True, "Vh"), ((3, 3), False, "Vh")):
        if dt.is_complex and part != "S":
            continue
        yield (_distinct_sv(rng, shape, dt),), {"full_matrices": full, "part": part}


declare(
    "_linalg_svd", "linalg", "A, full_matrices=True, part='S'", method=False,
    attrs_rule=_float("svd"), fixed=_real_part_dtype("S"), shape=_svd_shape, impl=_svd_impl,
    backward=_svd_backward,
    ref=lambda a, full_matrices=True, part="S": np.linalg.svd(a, full_matrices)[
        "USV".index(part[0])],
    sample_inputs=_svd_part_samples, test_dtypes=FLOATS_COMPLEX,
)
declare(
    "linalg_svd", "composite", "A, full_matrices=True", attrs_rule=_float("svd"),
    decomp=lambda F, a, full_matrices=True: svd_result(*(
        F._linalg_svd(a, full_matrices, p) for p in ("U", "S", "Vh"))),
    ref=lambda a, full_matrices=True: svd_result(*np.linalg.svd(a, full_matrices)),
    sample_inputs=lambda rng, dt: iter([
        ((_distinct_sv(rng, s, dt),), {"full_matrices": f}) for s, f in (
            ((4, 3), False), ((2, 3, 4), False), ((3, 3), True))]),
    test_dtypes=FLOATS,  # complex: phases of U, Vh; tests/test_linalg_complex.py
)
declare(
    "linalg_svdvals", "composite", "A", attrs_rule=_float("svdvals"),
    decomp=lambda F, a: F._linalg_svd(a, False, "S"),
    ref=lambda a: np.linalg.svd(a, compute_uv=False),
    sample_inputs=_mats((4, 3), (2, 3, 4)), test_dtypes=FLOATS_COMPLEX,
)


def _eigh_impl(xp, a, UPLO="L", part="eigenvalues"):
    w, v = xp.linalg.eigh(_sym(xp, a))
    return w if part == "eigenvalues" else v


def _eigh_backward(F, g, out, a, UPLO="L", part="eigenvalues"):
    # FunctionsManual.cpp linalg_eig_backward, Hermitian case
    v = out if part == "eigenvectors" else F._linalg_eigh(a, UPLO, "eigenvectors")
    if part == "eigenvalues":
        inner = F.diag_embed(g)
    else:
        w = F._linalg_eigh(a, UPLO, "eigenvalues")
        n = w.shape[-1]
        vhg = F.matmul(mH(F, v), g)
        vhg = F.mul(F.sub(vhg, mH(F, vhg)), 0.5)
        e = F.add(F.sub(F.unsqueeze(w, -2), F.unsqueeze(w, -1)), _eye_like(F, a, n))
        inner = F.mul(F.div(vhg, e), F.sub(1.0, _eye_like(F, a, n)))
    return (_sym_F(F, F.matmul(F.matmul(v, inner), mH(F, v))),)


def _eigh_attrs(inputs, attrs):
    if attrs["UPLO"] not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {attrs['UPLO']}")
    return _square("eigh")(inputs, attrs)


declare(
    "_linalg_eigh", "linalg", "A, UPLO='L', part='eigenvalues'", method=False,
    attrs_rule=_eigh_attrs, fixed=_real_part_dtype("eigenvalues"),
    shape=lambda s, UPLO="L", part="eigenvalues": s[:-1] if part == "eigenvalues" else s,
    impl=_eigh_impl, backward=_eigh_backward,
    ref=lambda a, UPLO="L", part="eigenvalues": np.linalg.eigh(a)[part != "eigenvalues"],
    sample_inputs=lambda rng, dt: ((x, {"part": "eigenvalues"}) for x, _ in _mats(
        (3, 3), (2, 4, 4), spd=True)(rng, dt)),
    test_dtypes=FLOATS_COMPLEX,
)
declare(
    "linalg_eigh", "composite", "A, UPLO='L'", attrs_rule=_eigh_attrs,
    decomp=lambda F, a, UPLO="L": eigh_result(F._linalg_eigh(a, UPLO, "eigenvalues"),
                                              F._linalg_eigh(a, UPLO, "eigenvectors")),
    ref=lambda a, UPLO="L": eigh_result(*np.linalg.eigh(a)),
    sample_inputs=_mats((3, 3), spd=True),
    test_dtypes=FLOATS,  # complex: phases of the eigenvectors; tests/test_linalg_complex.py
)
declare(
    "linalg_eigvalsh", "composite", "A, UPLO='L'", attrs_rule=_eigh_attrs,
    decomp=lambda F, a, UPLO="L": F._linalg_eigh(a, UPLO, "eigenvalues"),
    ref=lambda a, UPLO="L": np.linalg.eigvalsh(a),
    sample_inputs=_mats((3, 3), spd=True), test_dtypes=FLOATS_COMPLEX,
)


def _pinv_impl(xp, a, *, atol=None, rtol=None, hermitian=False):
    s_max = xp.linalg.svd(a, compute_uv=False)[..., :1] if a.size else 0
    eps = np.finfo(a.dtype).eps * max(a.shape[-2:]) if rtol is None and atol is None else 0
    tol = xp.maximum(atol or 0, (rtol if rtol is not None else eps) * s_max)
    u, s, vh = xp.linalg.svd(a, full_matrices=False, hermitian=hermitian)
    inv = xp.where(s > tol, 1 / xp.where(s > tol, s, 1), 0)
    return xp.matmul(xp.conj(xp.swapaxes(vh, -1, -2)) * inv[..., None, :],
                     xp.conj(xp.swapaxes(u, -1, -2)))


def _pinv_backward(F, g, out, a, *, atol=None, rtol=None, hermitian=False):
    # FunctionsManual.cpp pinv_backward
    m, n = a.shape[-2], a.shape[-1]
    p, ph, gh = out, mH(F, out), mH(F, g)
    if m <= n:
        k = F.matmul(gh, p)
        kph = F.matmul(k, ph)
        ga = F.add(F.sub(F.neg(mH(F, F.matmul(p, k))), F.matmul(F.matmul(a, p), kph)), kph)
        ga = F.add(ga, F.matmul(F.matmul(ph, p), F.sub(gh, F.matmul(k, a))))
    else:
        k = F.matmul(p, gh)
        phk = F.matmul(ph, k)
        ga = F.neg(mH(F, F.matmul(k, p)))
        ga = F.add(ga, F.matmul(F.matmul(F.sub(gh, F.matmul(a, k)), p), ph))
        ga = F.add(ga, F.sub(phk, F.matmul(F.matmul(phk, p), a)))
    return (ga,)


declare(
    "linalg_pinv", "linalg", "A, *, atol=None, rtol=None, hermitian=False",
    aliases=("pinverse",), attrs_rule=_float("pinv"),
    shape=lambda s, **_: s[:-2] + (s[-1], s[-2]), impl=_pinv_impl, backward=_pinv_backward,
    ref=lambda a, **_: np.linalg.pinv(a), sample_inputs=_mats((4, 3), (2, 3, 5), (3, 3)),
    test_dtypes=FLOATS_COMPLEX,
)
