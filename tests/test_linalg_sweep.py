"""The whole of torch.linalg (and its top-level spellings) against PyTorch: values, dtypes and
gradients for float32/float64/complex64/complex128 and batched input, every norm order,
PyTorch's errors for singular and non-positive-definite input, and the coverage of
`dir(torch.linalg)` / `dir(torch.fft)`. The registry's own matrix (tests/test_ops.py,
tests/test_autograd_gradcheck.py) compares every op with numpy and runs gradcheck; this file
adds the PyTorch comparisons of calls as users write them.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

DTYPES = ["float32", "float64", "complex64", "complex128"]
TOL = {"float32": 1e-3, "complex64": 1e-3, "float64": 1e-8, "complex128": 1e-8}


def _data(shape, dtype, seed=0, shift=0.0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    if shift and len(shape) >= 2 and shape[-1] == shape[-2]:
        a = a + shift * np.eye(shape[-1])
    return a.astype(dtype)


def _spd(shape, dtype, seed=0):
    a = _data(shape, dtype, seed).astype(np.complex128 if dtype[0] == "c" else np.float64)
    return (a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])).astype(dtype)


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [o for x in out for o in _flat(x)]
    return [out]


def compare(name, arrays, kwargs=None, dtype="float64", grad=True, top=False, skip=(),
            hermitian=False, triangle=None):
    """Call `name` (torch.linalg.<name>, or torch.<name> with `top`) in wick and PyTorch on
    `arrays`; compare every result (values, dtype, shape) and, with `grad`, the gradients of
    a random linear function of the floating/complex results (indices in `skip` left out:
    results defined only up to a phase). `hermitian`: wick's Cholesky reads the Hermitian part
    (A + A^H)/2 of its input (ir/ops/matrix.py), so its gradient is the Hermitian part of
    PyTorch's (which differs off the Hermitian subspace for complex input only). `triangle`:
    {operand index: "lower"/"upper"}: operands of which only that triangle is read (a
    Cholesky factor); PyTorch's dense gradient is compared on it."""
    kwargs = kwargs or {}
    w_home, t_home = (eager, torch) if top else (eager.linalg, torch.linalg)
    diff = [i for i, a in enumerate(arrays) if isinstance(a, np.ndarray) and a.dtype.kind in
            "fc"] if grad else []
    ws = [eager.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a
          for i, a in enumerate(arrays)]
    ts = [torch.tensor(a, requires_grad=i in diff) if isinstance(a, np.ndarray) else a
          for i, a in enumerate(arrays)]
    got = _flat(getattr(w_home, name)(*ws, **kwargs))
    want = _flat(getattr(t_home, name)(*ts, **kwargs))
    assert len(got) == len(want), name
    tol = TOL[dtype]
    loss_w, loss_t = 0, 0
    rng = np.random.default_rng(7)
    for i, (g, t) in enumerate(zip(got, want)):
        t = t.resolve_conj()
        assert g.dtype.name == str(t.dtype).removeprefix("torch."), (name, i, g.dtype, t.dtype)
        assert tuple(g.shape) == tuple(t.shape), (name, i, g.shape, t.shape)
        np.testing.assert_allclose(g.detach().numpy(), t.detach().numpy(), rtol=tol,
                                   atol=tol, err_msg=f"{name} result {i}")
        if diff and i not in skip and t.requires_grad:
            w = rng.standard_normal(tuple(t.shape))
            if t.is_complex():
                w = w + 1j * rng.standard_normal(tuple(t.shape))
            w = w.astype(str(t.dtype).removeprefix("torch."))
            loss_w = loss_w + (g * eager.tensor(w)).real.sum() if g.dtype.is_complex else \
                loss_w + (g * eager.tensor(w)).sum()
            loss_t = loss_t + (t * torch.tensor(w)).real.sum()
    if diff and not isinstance(loss_t, int):
        loss_w.backward()
        loss_t.backward()
        for i in diff:
            want_grad = ts[i].grad.resolve_conj().numpy()
            if hermitian:
                want_grad = (want_grad + np.conj(np.swapaxes(want_grad, -1, -2))) / 2
            if triangle and i in triangle:
                want_grad = np.tril(want_grad) if triangle[i] == "lower" else \
                    np.triu(want_grad)
            np.testing.assert_allclose(ws[i].grad.numpy(), want_grad,
                                       rtol=10 * tol, atol=10 * tol,
                                       err_msg=f"{name} gradient of operand {i}")


# ---------------------------------------------------------------- solvers


LSTSQ_SHAPES = [((6, 3), (6, 2)), ((2, 3, 5), (2, 3, 2)), ((2, 4, 4), (2, 4)),
                ((3, 5, 2), (3, 5, 1))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("driver,shapes", [
    (d, s) for d in (None, "gels", "gelsy", "gelsd", "gelss") for s in LSTSQ_SHAPES
    if not (d == "gels" and s[0][-2] < s[0][-1])])  # gels: full-rank tall or square A only
def test_lstsq(dtype, driver, shapes):
    sa, sb = shapes
    a, b = _data(sa, dtype, 0), _data(sb, dtype, 1)
    compare("lstsq", (a, b), {"driver": driver} if driver else {}, dtype,
            skip=(3,))  # singular values: not differentiable in PyTorch


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", [{"upper": True}, {"upper": False},
                                {"upper": True, "left": False},
                                {"upper": False, "unitriangular": True},
                                {"upper": True, "left": False, "unitriangular": True}])
def test_solve_triangular(dtype, kw):
    a = _data((2, 4, 4), dtype, 0, shift=4)
    b = _data((2, 4, 3) if kw.get("left", True) else (2, 3, 4), dtype, 1)
    compare("solve_triangular", (a, b), kw, dtype)
    compare("solve_triangular", (a[0], b), kw, dtype)  # broadcast batch


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_lu_family(dtype, shape):
    a = _data(shape, dtype, 0, shift=1)
    compare("lu_factor", (a,), {}, dtype)
    compare("lu_factor_ex", (a,), {}, dtype)
    compare("lu", (a,), {}, dtype)
    lu, piv = torch.linalg.lu_factor(torch.tensor(a))
    b = _data(shape[:-1] + (2,), dtype, 1)
    for kw in ({}, {"adjoint": True}):
        compare("lu_solve", (lu.detach().numpy(), piv.numpy(), b), kw, dtype)
    bt = _data(shape[:-2] + (2, shape[-1]), dtype, 1)
    compare("lu_solve", (lu.detach().numpy(), piv.numpy(), bt), {"left": False}, dtype)
    compare("lu_unpack", (lu.detach().numpy(), piv.numpy()), {}, dtype, top=True)
    compare("lu_solve", (b, lu.detach().numpy(), piv.numpy()), {}, dtype, top=True)


@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_lu_rectangular_values(shape):
    a = _data(shape, "float64")
    compare("lu_factor", (a,), grad=False)
    compare("lu", (a,), grad=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_ex_variants_and_cholesky_helpers(dtype):
    a = _data((2, 3, 3), dtype, 0, shift=3)
    b = _data((2, 3, 2), dtype, 1)
    compare("solve_ex", (a, b), {}, dtype)
    compare("solve_ex", (a, _data((2, 3), dtype, 2)), {}, dtype)
    compare("solve_ex", (a, _data((2, 2, 3), dtype, 2)), {"left": False}, dtype)
    compare("inv_ex", (a,), {}, dtype)
    spd = _spd((2, 3, 3), dtype)
    compare("cholesky_ex", (spd,), {}, dtype, hermitian=True)
    compare("cholesky_ex", (spd,), {"upper": True}, dtype, hermitian=True)
    L = np.linalg.cholesky(spd)
    compare("cholesky_solve", (b, L), {}, dtype, top=True, triangle={1: "lower"})
    compare("cholesky_solve", (b, np.conj(np.swapaxes(L, -1, -2))), {"upper": True}, dtype,
            top=True, triangle={1: "upper"})
    compare("cholesky_inverse", (L[0],), {}, dtype, top=True, triangle={0: "lower"})
    compare("triangular_solve", (b, a), {}, dtype, top=True)
    compare("triangular_solve", (b, a), {"upper": False, "transpose": True}, dtype, top=True)
    compare("cholesky", (spd,), {}, dtype, top=True, hermitian=True)


def test_singular_and_not_positive_definite_errors():
    sing = eager.zeros(2, 3, 3, dtype=eager.float64)
    notpd = -eager.eye(3, dtype=eager.float64)
    assert issubclass(eager.linalg.LinAlgError, RuntimeError)
    with pytest.raises(eager.linalg.LinAlgError, match="singular"):
        eager.linalg.inv(sing)
    with pytest.raises(eager.linalg.LinAlgError, match="singular"):
        eager.linalg.solve(sing[0], eager.ones(3, dtype=eager.float64))
    with pytest.raises(eager.linalg.LinAlgError, match="not positive-definite"):
        eager.linalg.cholesky(notpd)
    with pytest.raises(eager.linalg.LinAlgError, match=r"\(Batch element 0\).*order 1"):
        eager.linalg.cholesky_ex(notpd.expand(2, 3, 3), check_errors=True)
    with pytest.raises(eager.linalg.LinAlgError, match="diagonal element 1 is zero"):
        eager.linalg.inv_ex(sing[0], check_errors=True)
    with pytest.raises(RuntimeError, match=r"U\[1,1\] is zero"):
        eager.linalg.lu_factor(sing[0])
    # the _ex forms report instead of raising, with LAPACK's info codes as PyTorch's
    for name, x in (("cholesky_ex", notpd), ("inv_ex", sing), ("lu_factor_ex", sing)):
        got = getattr(eager.linalg, name)(x).info
        want = getattr(torch.linalg, name)(torch.tensor(x.numpy())).info
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        assert got.dtype.name == "int32"
    with pytest.raises(RuntimeError, match="driver"):
        eager.linalg.lstsq(eager.eye(3), eager.eye(3), driver="bad")


# ---------------------------------------------------------------- functions of a matrix


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_functions(dtype):
    a = _data((2, 3, 3), dtype, 0) * 0.5
    compare("matrix_exp", (a,), {}, dtype)
    compare("matrix_exp", (a,), {}, dtype, top=True)
    sq = _data((2, 3, 3), dtype, 1, shift=2)
    for n in (0, 1, 2, 5, -1, -3):  # (PyTorch's own backward fails for n < 0: values only;
        compare("matrix_power", (sq, n), {}, dtype, grad=n >= 0)  # gradcheck in test_ops)
    compare("pinv", (_data((2, 4, 3), dtype),), {}, dtype)
    compare("pinv", (_spd((3, 3), dtype),), {"hermitian": True}, dtype)
    compare("svdvals", (_data((2, 4, 3), dtype),), {}, dtype)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        # (PyTorch's own backward of cond through inv_ex fails for the other orders)
        compare("cond", (sq,), {"p": p}, dtype, grad=p in (None, 2, -2))
    compare("logdet", (_spd((2, 3, 3), dtype),), {}, dtype, top=True)
    compare("det", (sq,), {}, dtype, top=True)
    compare("slogdet", (sq,), {}, dtype, top=True)
    compare("pinverse", (_data((4, 3), dtype),), {}, dtype, top=True)
    compare("inverse", (sq,), {}, dtype, top=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matrix_rank(dtype):
    low = (_data((2, 5, 2), dtype) @ _data((2, 2, 4), dtype, 1)).astype(dtype)
    compare("matrix_rank", (low,), {}, dtype, grad=False)
    compare("matrix_rank", (_data((4, 4), dtype),), {"atol": 1.0, "rtol": 0.1}, dtype,
            grad=False)
    compare("matrix_rank", (_spd((3, 3), dtype),), {"hermitian": True}, dtype, grad=False)


@pytest.mark.parametrize("dtype", DTYPES)
def test_eig(dtype):
    """Eigenvalues against PyTorch (as a set); eigenvectors through a phase-invariant loss
    (|V|^2 weighted): each is defined only up to a complex phase."""
    rng = np.random.default_rng(0)
    q = _data((2, 3, 3), dtype) * 0.3 + np.eye(3)
    a = ((q * np.arange(1, 4)) @ np.linalg.inv(q)).astype(dtype)
    x, tx = eager.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    w, v = eager.linalg.eig(x)
    tw, tv = torch.linalg.eig(tx)
    assert w.dtype.name == str(tw.dtype).removeprefix("torch.")
    np.testing.assert_allclose(np.sort_complex(w.detach().numpy().ravel()),
                               np.sort_complex(tw.detach().numpy().ravel()), rtol=1e-4)
    ww = rng.standard_normal((2, 3, 3))
    (w.real * w.real).sum().add((v.abs() * eager.tensor(ww)).sum()).backward()
    (tw.real * tw.real).sum().add((tv.abs() * torch.tensor(ww)).sum()).backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(np.sort_complex(eager.linalg.eigvals(eager.tensor(a)).numpy()),
                               np.sort_complex(torch.linalg.eigvals(torch.tensor(a)).numpy()),
                               rtol=1e-4)


# ---------------------------------------------------------------- products and helpers


@pytest.mark.parametrize("dtype", DTYPES)
def test_products(dtype):
    mats = [_data(s, dtype, i) for i, s in enumerate(((4,), (4, 6), (6, 2), (2, 3)))]
    got = eager.linalg.multi_dot([eager.tensor(m) for m in mats])
    want = torch.linalg.multi_dot([torch.tensor(m) for m in mats])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=TOL[dtype], atol=TOL[dtype])
    mats2 = [_data(s, dtype, i) for i, s in enumerate(((3, 4), (4, 6), (6, 2)))]
    compare("chain_matmul", tuple(mats2), {}, dtype, top=True)
    x, y = _data((3, 4), dtype), _data((4,), dtype, 1)
    compare("vecdot", (x, y), {}, dtype)
    compare("vecdot", (x, _data((3, 1), dtype, 2)), {"dim": 0}, dtype)
    c, d = _data((2, 4, 3), dtype), _data((1, 4, 3), dtype, 1)
    compare("cross", (c, d), {}, dtype)
    compare("cross", (_data((3, 2), dtype), _data((3, 2), dtype, 1)), {"dim": 0}, dtype)
    compare("cross", (_data((3, 2), dtype), _data((3, 2), dtype, 1)), {}, dtype, top=True)
    compare("vander", (_data((2, 3), dtype),), {"N": 4}, dtype)
    # (torch.vander's own backward fails: values only; gradcheck in test_ops)
    compare("vander", (_data((4,), dtype),), {}, dtype, top=True, grad=False)
    compare("vander", (_data((4,), dtype),), {"N": 3, "increasing": True}, dtype, top=True,
            grad=False)
    compare("diagonal", (_data((2, 3, 4), dtype),), {"offset": 1}, dtype)
    compare("inner", (_data((2, 3), dtype), _data((4, 3), dtype, 1)), {}, dtype, top=True)
    compare("addmv", (_data((3,), dtype), _data((3, 4), dtype, 1), _data((4,), dtype, 2)),
            {"beta": 0.5, "alpha": 2}, dtype, top=True)
    compare("addr", (_data((3, 4), dtype), _data((3,), dtype, 1), _data((4,), dtype, 2)), {},
            dtype, top=True)
    compare("addbmm", (_data((3, 4), dtype), _data((2, 3, 5), dtype, 1),
                       _data((2, 5, 4), dtype, 2)), {}, dtype, top=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_householder_geqrf_ormqr_tensor_ops(dtype):
    a = _data((2, 5, 3), dtype)
    qr, tau = torch.geqrf(torch.tensor(a))
    compare("geqrf", (a,), {}, dtype, top=True, grad=False)
    compare("householder_product", (qr.numpy(), tau.numpy()), {}, dtype)
    compare("orgqr", (qr.numpy(), tau.numpy()), {}, dtype, top=True)
    c = _data((2, 5, 2), dtype, 1)
    compare("ormqr", (qr.numpy(), tau.numpy(), c), {}, dtype, top=True)
    compare("ormqr", (qr.numpy(), tau.numpy(), np.swapaxes(c, -1, -2).copy()),
            {"left": False, "transpose": True}, dtype, top=True)
    t = (_data((6, 6), dtype, 2) + 6 * np.eye(6)).reshape(2, 3, 6).astype(dtype)
    compare("tensorinv", (t,), {}, dtype)
    compare("tensorsolve", (t, _data((2, 3), dtype, 3)), {}, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2])
def test_matrix_norms(dtype, ord):
    a = _data((2, 3, 4), dtype)
    compare("matrix_norm", (a,), {"ord": ord}, dtype)
    compare("norm", (a[0],), {"ord": ord}, dtype)
    compare("matrix_norm", (a,), {"ord": ord, "dim": (0, 2), "keepdim": True}, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", [2, 1, 0, 3.5, math.inf, -math.inf, -1])
def test_vector_norms(dtype, ord):
    a = _data((2, 3, 4), dtype)
    compare("vector_norm", (a,), {"ord": ord}, dtype, grad=ord != 0)
    compare("vector_norm", (a,), {"ord": ord, "dim": (0, 2), "keepdim": True}, dtype,
            grad=ord != 0)
    compare("norm", (a,), {"ord": ord, "dim": 1}, dtype, grad=ord != 0)


def test_top_level_norm_helpers():
    a = _data((2, 3, 4), "float64")
    compare("frobenius_norm", (a,), {"dim": (-2, -1)}, "float64", top=True)
    compare("nuclear_norm", (a[0],), {}, "float64", top=True)
    a = _data((2, 4, 3), "float64")
    for some in (True, False):
        u, s, v = eager.svd(eager.tensor(a), some=some)
        tu, ts, tv = torch.svd(torch.tensor(a), some=some)
        assert tuple(u.shape) == tuple(tu.shape) and tuple(v.shape) == tuple(tv.shape)
        np.testing.assert_allclose(s.numpy(), ts.numpy(), rtol=1e-10)
        k = 3
        np.testing.assert_allclose((u.numpy()[..., :k] * s.numpy()[..., None, :]) @
                                   np.swapaxes(v.numpy()[..., :k], -1, -2), a, atol=1e-10)


# ---------------------------------------------------------------- coverage


def _public(mod):
    return {n for n in dir(mod) if not n.startswith("_") and n not in (
        "common_notes", "Tensor", "torch", "common_args", "factory_common_args")}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl(dtype, hermitian):
    a = _data((2, 4, 4), dtype)
    a = (a + (np.conj(np.swapaxes(a, -1, -2)) if hermitian else np.swapaxes(a, -1, -2)))
    a = a.astype(dtype)
    compare("ldl_factor", (a,), {"hermitian": hermitian}, dtype, grad=False)
    compare("ldl_factor_ex", (a,), {"hermitian": hermitian}, dtype, grad=False)
    ld, piv = torch.linalg.ldl_factor(torch.tensor(a), hermitian=hermitian)
    compare("ldl_solve", (ld.numpy(), piv.numpy(), _data((2, 4, 3), dtype, 1)),
            {"hermitian": hermitian}, dtype, grad=False)
    z = np.zeros((3, 3), dtype)
    assert eager.linalg.ldl_factor_ex(eager.tensor(z)).info.item() == \
        torch.linalg.ldl_factor_ex(torch.tensor(z)).info.item()
    with pytest.raises(eager.linalg.LinAlgError, match="D\\[1, 1\\] is zero"):
        eager.linalg.ldl_factor(eager.tensor(z))


def test_namespace_coverage():
    """Every public name of torch.fft and of torch.linalg exists in eager.fft / eager.linalg,
    and the top-level linear-algebra functions in eager."""
    assert _public(torch.fft) - set(dir(eager.fft)) == set()
    assert _public(torch.linalg) - set(dir(eager.linalg)) == set()
    top = {"lu", "lu_solve", "lu_unpack", "cholesky", "cholesky_solve", "cholesky_inverse",
           "triangular_solve", "det", "logdet", "slogdet", "pinverse", "inverse", "matrix_exp",
           "matrix_power", "ormqr", "orgqr", "geqrf", "qr", "svd", "chain_matmul", "cross",
           "vander", "inner", "addmv", "addr", "addbmm", "frobenius_norm", "nuclear_norm"}
    assert {n for n in top if not hasattr(eager, n)} == set()
