"""torch.linalg on complex64/complex128 input: result dtypes and values.

PyTorch returns the results that are real by definition (svd's S, svdvals, eigh's
eigenvalues, eigvalsh, slogdet's logabsdet, every norm) in the real counterpart dtype (float32
for complex64, float64 for complex128), the others (U, Vh, eigenvectors, sign, det, inv...)
complex. Checked against numpy/scipy always, against PyTorch when it is importable; gradients
of complex inputs against PyTorch (phase-invariant losses for singular vectors and
eigenvectors) and against central finite differences (eager.autograd.gradcheck).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import eager
from eager.autograd import gradcheck

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

CDTYPES = ["complex64", "complex128"]
REAL_OF = {"complex64": np.float32, "complex128": np.float64}
TOL = {"complex64": {"rtol": 2e-4, "atol": 2e-4}, "complex128": {"rtol": 1e-10, "atol": 1e-10}}
SHAPES = [(3, 3), (4, 3), (3, 5), (2, 4, 4), (2, 3, 2, 4)]
SQUARE = [(3, 3), (1, 1), (2, 4, 4), (2, 1, 3, 3)]


def _cplx(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _mH(a):
    return np.conj(np.swapaxes(a, -1, -2))


def _herm(rng, shape):
    """A Hermitian positive-definite (batch of) matrix."""
    a = _cplx(rng, shape)
    return a @ _mH(a) + shape[-1] * np.eye(shape[-1])


def _distinct_sv(rng, shape):
    """Singular values 1.5, 2.5, ... (distinct, nonzero): the SVD is differentiable there."""
    u, _, vh = np.linalg.svd(_cplx(rng, shape), full_matrices=False)
    return (u * (np.arange(min(shape[-2:]), 0, -1) + 0.5)[..., None, :]) @ vh


def _check(got, want, dtype_name, real):
    """`got` (an eager tensor) has `want`'s values and the dtype PyTorch gives: the real
    counterpart of the input dtype where `real`, the input dtype otherwise."""
    want_dtype = REAL_OF[dtype_name] if real else np.dtype(dtype_name)
    assert got.dtype.name == np.dtype(want_dtype).name, (got.dtype, want_dtype)
    arr = got.numpy()
    assert arr.dtype == want_dtype
    np.testing.assert_allclose(arr, want, **TOL[dtype_name])


# ---------------------------------------------------------------- numpy/scipy references


@pytest.mark.parametrize("dt", CDTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_svd_values_real(dt, shape):
    a = _cplx(np.random.default_rng(0), shape).astype(dt)
    s_ref = np.linalg.svd(a.astype(np.complex128), compute_uv=False)
    assert np.linalg.svd(a, compute_uv=False).dtype == REAL_OF[dt]  # numpy agrees
    x = eager.tensor(a)
    _check(eager.linalg.svdvals(x), s_ref, dt, real=True)
    for full in (True, False):
        u, s, vh = eager.linalg.svd(x, full_matrices=full)
        _check(s, s_ref, dt, real=True)
        assert u.dtype.name == vh.dtype.name == dt
        k = s_ref.shape[-1]
        prod = (u.numpy()[..., :k] * s.numpy()[..., None, :]) @ vh.numpy()[..., :k, :]
        np.testing.assert_allclose(prod, a, **TOL[dt])


@pytest.mark.parametrize("dt", CDTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_eigh_eigenvalues_real(dt, shape):
    a = _herm(np.random.default_rng(1), shape).astype(dt)
    a128 = a.astype(np.complex128)
    w_ref = np.stack([scipy.linalg.eigvalsh(m) for m in a128.reshape((-1,) + shape[-2:])])
    w_ref = w_ref.reshape(shape[:-1])
    x = eager.tensor(a)
    _check(eager.linalg.eigvalsh(x), w_ref, dt, real=True)
    for uplo in ("L", "U"):
        w, v = eager.linalg.eigh(x, UPLO=uplo)
        _check(w, w_ref, dt, real=True)
        assert v.dtype.name == dt
        vn = v.numpy()
        np.testing.assert_allclose((vn * w.numpy()[..., None, :]) @ _mH(vn), a128, **TOL[dt])


@pytest.mark.parametrize("dt", CDTYPES)
@pytest.mark.parametrize("shape", SQUARE)
def test_slogdet_det_inv(dt, shape):
    rng = np.random.default_rng(2)
    a = (_cplx(rng, shape) + 2 * np.eye(shape[-1])).astype(dt)
    a128 = a.astype(np.complex128)
    sign_ref, logabs_ref = np.linalg.slogdet(a128)
    x = eager.tensor(a)
    sign, logabs = eager.linalg.slogdet(x)
    _check(logabs, logabs_ref, dt, real=True)
    _check(sign, sign_ref, dt, real=False)
    _check(eager.linalg.det(x), np.linalg.det(a128), dt, real=False)
    _check(eager.linalg.inv(x), np.linalg.inv(a128), dt, real=False)


@pytest.mark.parametrize("dt", CDTYPES)
@pytest.mark.parametrize("ord", ["fro", "nuc", 2, -2, 1, -1, np.inf, -np.inf])
def test_matrix_norm_real(dt, ord):
    a = _cplx(np.random.default_rng(3), (2, 3, 4)).astype(dt)
    want = np.linalg.norm(a.astype(np.complex128), ord, axis=(-2, -1))
    _check(eager.linalg.matrix_norm(eager.tensor(a), ord), want, dt, real=True)
    if ord in ("fro", "nuc", 2, -2):
        _check(eager.linalg.norm(eager.tensor(a[0]), ord), want[0], dt, real=True)


@pytest.mark.parametrize("dt", CDTYPES)
@pytest.mark.parametrize("ord", [2, 1, 3, 0, np.inf, -np.inf])
def test_vector_norm_real(dt, ord):
    a = _cplx(np.random.default_rng(4), (3, 4)).astype(dt)
    want = np.linalg.norm(a.astype(np.complex128), ord, axis=1)
    x = eager.tensor(a)
    _check(eager.linalg.vector_norm(x, ord, dim=1), want, dt, real=True)
    _check(eager.linalg.norm(x, ord, dim=1), want, dt, real=True)


def test_norm_dtype_argument():
    """`dtype=`: a complex input takes a complex dtype and gives its real counterpart; a real
    dtype for a complex input (and the reverse) raises RuntimeError, as in PyTorch."""
    a = _cplx(np.random.default_rng(5), (3, 4)).astype(np.complex64)
    want = np.linalg.norm(a.astype(np.complex128))
    x = eager.tensor(a)
    for fn in (eager.linalg.vector_norm, eager.linalg.matrix_norm, eager.linalg.norm):
        r = fn(x, dtype=eager.complex128)
        assert r.dtype.name == "float64"
        np.testing.assert_allclose(r.numpy(), want, rtol=1e-6)
        with pytest.raises(RuntimeError, match="dtype should be complex for complex inputs"):
            fn(x, dtype=eager.float64)
    with pytest.raises(RuntimeError, match="dtype should be real for real inputs"):
        eager.linalg.vector_norm(eager.ones(3), dtype=eager.complex64)


@pytest.mark.parametrize("dt", CDTYPES)
def test_linear_does_not_conjugate_the_weight(dt):
    """torch.nn.functional.linear is x W^T + b (no conjugate), unlike x W^H."""
    rng = np.random.default_rng(6)
    x, w, b = _cplx(rng, (2, 3, 4)), _cplx(rng, (5, 4)), _cplx(rng, (5,))
    x, w, b = (v.astype(dt) for v in (x, w, b))
    got = eager.nn.functional.linear(eager.tensor(x), eager.tensor(w), eager.tensor(b))
    want = x.astype(np.complex128) @ w.T.astype(np.complex128) + b
    _check(got, want, dt, real=False)


@pytest.mark.parametrize("fn,gen,shape", [
    ("svdvals", _distinct_sv, (4, 3)), ("svdvals", _distinct_sv, (2, 3, 5)),
    ("eigvalsh", _herm, (2, 3, 3)), ("logabsdet", _cplx, (3, 3)), ("vector_norm", _cplx, (3, 4)),
    ("nuc", _distinct_sv, (3, 4)), ("spectral", _distinct_sv, (4, 3)),
])
def test_real_results_gradcheck(fn, gen, shape):
    """Real results of a complex input: gradients against central finite differences of the
    real and imaginary parts."""
    a = gen(np.random.default_rng(7), shape)
    f = {"svdvals": eager.linalg.svdvals, "eigvalsh": eager.linalg.eigvalsh,
         "logabsdet": lambda x: eager.linalg.slogdet(x)[1],
         "vector_norm": eager.linalg.vector_norm,
         "nuc": lambda x: eager.linalg.matrix_norm(x, "nuc"),
         "spectral": lambda x: eager.linalg.matrix_norm(x, 2)}[fn]
    assert gradcheck(f, (eager.tensor(a, requires_grad=True),), atol=1e-6, rtol=1e-5)


# ---------------------------------------------------------------- PyTorch


@needs_torch
@pytest.mark.parametrize("dt", CDTYPES)
def test_result_dtypes_and_values_match_torch(dt):
    rng = np.random.default_rng(8)
    gen = _cplx(rng, (2, 4, 3)).astype(dt)
    sq = (_cplx(rng, (2, 3, 3)) + 2 * np.eye(3)).astype(dt)
    herm = _herm(rng, (2, 3, 3)).astype(dt)
    rhs = _cplx(rng, (2, 3, 2)).astype(dt)
    calls = [
        ("svdvals", lambda L: L.linalg.svdvals(L.tensor(gen))),
        ("svd.S", lambda L: L.linalg.svd(L.tensor(gen), full_matrices=False)[1]),
        ("eigvalsh", lambda L: L.linalg.eigvalsh(L.tensor(herm))),
        ("eigh.eigenvalues", lambda L: L.linalg.eigh(L.tensor(herm), UPLO="U")[0]),
        ("slogdet", lambda L: tuple(L.linalg.slogdet(L.tensor(sq)))),
        ("det", lambda L: L.linalg.det(L.tensor(sq))),
        ("inv", lambda L: L.linalg.inv(L.tensor(sq))),
        ("solve", lambda L: L.linalg.solve(L.tensor(sq), L.tensor(rhs))),
        ("cholesky", lambda L: L.linalg.cholesky(L.tensor(herm), upper=True)),
        ("qr", lambda L: tuple(L.linalg.qr(L.tensor(gen)))),
        ("pinv", lambda L: L.linalg.pinv(L.tensor(gen))),
        ("norm", lambda L: L.linalg.norm(L.tensor(gen))),
        ("vector_norm", lambda L: L.linalg.vector_norm(L.tensor(gen), 3, dim=(0, 2))),
        *((f"matrix_norm {o}", lambda L, o=o: L.linalg.matrix_norm(L.tensor(gen), o))
          for o in ("fro", "nuc", 2, -2, 1, float("inf"))),
        ("linear", lambda L: L.nn.functional.linear(L.tensor(gen), L.tensor(sq[0]))),
    ]
    for name, call in calls:
        want, got = call(torch), call(eager)
        want = want if isinstance(want, tuple) else (want,)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want, strict=True):
            assert g.dtype.name == str(w.dtype).removeprefix("torch."), (name, g.dtype, w.dtype)
            np.testing.assert_allclose(g.numpy(), w.numpy(), **TOL[dt], err_msg=name)


def _grad(lib, fn, a, ws):
    """d/dA of sum_i Re<w_i, fn(A)_i> in `lib` (eager or torch), as numpy."""
    x = lib.tensor(a, requires_grad=True)
    outs = fn(lib, x)
    loss = 0
    for o, w in zip(outs if isinstance(outs, tuple) else (outs,), ws):
        prod = o * lib.tensor(w if np.iscomplexobj(o.detach().numpy()) else w.real)
        loss = loss + (lib.real(prod) if np.iscomplexobj(prod.detach().numpy()) else prod).sum()
    loss.backward()
    return x.grad.numpy()


def _svd(lib, x):
    return lib.linalg.svd(x, full_matrices=False)


def _svd_product(lib, x):
    u, s, vh = _svd(lib, x)
    return (u * s[..., None, :]) @ vh


def _eigh_phase_free(lib, x):
    w, v = lib.linalg.eigh(x)
    return w, v.abs()


GRAD_CASES = {
    "svdvals": (lambda L, x: L.linalg.svdvals(x), _distinct_sv, [(4, 3), (2, 3, 5)]),
    "svd.S": (lambda L, x: _svd(L, x)[1], _distinct_sv, [(3, 3), (2, 4, 3)]),
    "svd |U|, |Vh|": (lambda L, x: (_svd(L, x)[0].abs(), _svd(L, x)[2].abs()), _distinct_sv,
                      [(4, 3), (3, 5), (3, 3)]),
    "svd U S Vh": (_svd_product, _distinct_sv, [(4, 3), (3, 5)]),
    "eigvalsh": (lambda L, x: L.linalg.eigvalsh(x), _herm, [(3, 3), (2, 4, 4)]),
    "eigh": (_eigh_phase_free, _herm, [(3, 3), (2, 4, 4)]),
    "slogdet": (lambda L, x: tuple(L.linalg.slogdet(x)), _cplx, [(3, 3), (2, 4, 4)]),
    "det": (lambda L, x: L.linalg.det(x), _cplx, [(3, 3), (2, 4, 4)]),
    "inv": (lambda L, x: L.linalg.inv(x), _cplx, [(3, 3)]),
    "qr": (lambda L, x: tuple(L.linalg.qr(x)), _cplx, [(4, 3), (3, 3)]),
    "pinv": (lambda L, x: L.linalg.pinv(x), _cplx, [(4, 3), (3, 5)]),
    "norms": (lambda L, x: (L.linalg.norm(x), L.linalg.vector_norm(x, 3, dim=-1),
                            L.linalg.matrix_norm(x, 1), L.linalg.matrix_norm(x, "nuc")),
              _distinct_sv, [(2, 3, 4)]),
}


@needs_torch
@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_match_torch(name):
    fn, gen, shapes = GRAD_CASES[name]
    rng = np.random.default_rng(9)
    for shape in shapes:
        a = gen(rng, shape)
        outs = fn(torch, torch.tensor(a))
        ws = [_cplx(rng, tuple(o.shape)) for o in (outs if isinstance(outs, tuple) else (outs,))]
        np.testing.assert_allclose(_grad(eager, fn, a, ws), _grad(torch, fn, a, ws),
                                   rtol=1e-8, atol=1e-10, err_msg=f"{name} {shape}")


@needs_torch
def test_cholesky_gradient_hermitian_part_matches_torch():
    """wick's cholesky reads (A + A^H) / 2 (a function of every entry), so its gradient is
    Hermitian; PyTorch's (of the lower triangle LAPACK reads) adds an anti-Hermitian part.
    Both agree on Hermitian directions: their Hermitian parts are equal."""
    rng = np.random.default_rng(10)
    a = _herm(rng, (2, 3, 3))
    for upper in (False, True):
        def fn(lib, x, upper=upper):
            return lib.linalg.cholesky(x, upper=upper)

        ws = [_cplx(rng, (2, 3, 3))]
        got, want = _grad(eager, fn, a, ws), _grad(torch, fn, a, ws)
        np.testing.assert_allclose(got, _mH(got), atol=1e-12)
        np.testing.assert_allclose(got, (want + _mH(want)) / 2, rtol=1e-8, atol=1e-10)
