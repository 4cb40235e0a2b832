"""`eager.fft` (torch.fft): values against numpy.fft/scipy.fft always, and values, dtypes,
gradients and errors against PyTorch when it is installed; complex and real gradients through
gradcheck/gradgradcheck (conjugate Wirtinger, as PyTorch's); compiled graphs keep the
transforms as library calls.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft

import capture
import codegen
import eager
from codegen.partition import LibraryCall
from eager.autograd import gradcheck, gradgradcheck

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

ONE_D = ["fft", "ifft", "rfft", "irfft", "hfft", "ihfft"]
ALL = ONE_D + [k + a for k in ONE_D for a in ("2", "n")]
REAL_ONLY = {"rfft", "rfft2", "rfftn", "ihfft", "ihfft2", "ihfftn"}
DTYPES = ["float32", "float64", "complex64", "complex128"]
NORMS = [None, "backward", "ortho", "forward"]
TOL = {"float32": 2e-5, "complex64": 2e-5, "float64": 1e-12, "complex128": 1e-12}
# (transform, dtype) pairs; complex input to a real-input transform is an error case
CASES = [(n, d) for n in ALL for d in DTYPES if not (n in REAL_ONLY and d.startswith("complex"))]


def _data(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if dtype.startswith("complex"):
        a = a + 1j * rng.standard_normal(shape)
    return a.astype(dtype)


def _np_ref(name, a, **kw):
    """numpy.fft's function (scipy.fft's for the 2-D/n-D Hermitian ones), torch's argument
    names translated (dim -> axis/axes)."""
    kw = dict(kw)
    if "s" in kw and kw.get("dim") is None:
        kw["dim"] = tuple(range(a.ndim - len(kw["s"]), a.ndim))
    if "dim" in kw:
        kw["axis" if name in ONE_D else "axes"] = kw.pop("dim")
    lib = scipy.fft if name[:4] in ("hfft", "ihff") and name not in ONE_D else np.fft
    return getattr(lib, name)(a, **kw)


def _cases(name):
    """(input shape, keyword arguments) covering defaults, n/s, dim and batch dims."""
    if name in ONE_D:
        return [((16,), {}), ((2, 3, 10), {"dim": 1}), ((3, 7), {"n": 12}),
                ((3, 9), {"n": 5, "dim": -1})]
    if name.endswith("2"):
        return [((2, 6, 8), {}), ((6, 5), {"s": (4, 7)}), ((5, 2, 6), {"dim": (0, 2)})]
    return [((2, 4, 6), {}), ((3, 4, 5), {"s": (6, 3), "dim": (2, 0)}),
            ((4, 6), {"dim": (1,)}), ((2, 3, 4), {"s": (5,)})]


@pytest.mark.parametrize("norm", NORMS)
@pytest.mark.parametrize("name,dtype", CASES)
def test_values_match_numpy(name, dtype, norm):
    for shape, kw in _cases(name):
        a = _data(shape, dtype)
        got = getattr(eager.fft, name)(eager.tensor(a), norm=norm, **kw)
        want = _np_ref(name, a.astype(np.complex128 if a.dtype.kind == "c" else np.float64),
                       norm=norm, **kw)
        real_out = name[:4] in ("irff", "hfft")
        single = dtype in ("float32", "complex64")
        want_dtype = {(True, True): "float32", (True, False): "float64",
                      (False, True): "complex64", (False, False): "complex128"}[real_out,
                                                                                 single]
        assert got.dtype.name == want_dtype, (name, kw)
        assert tuple(got.shape) == want.shape, (name, kw)
        np.testing.assert_allclose(got.numpy(), want, rtol=TOL[dtype],
                                   atol=TOL[dtype] * max(1.0, np.abs(want).max()))


@needs_torch
@pytest.mark.parametrize("name,dtype", CASES)
def test_values_and_grads_match_torch(name, dtype):
    for norm in ("ortho", None):
        for shape, kw in _cases(name):
            a = _data(shape, dtype)
            x = eager.tensor(a, requires_grad=True)
            tx = torch.tensor(a, requires_grad=True)
            y = getattr(eager.fft, name)(x, norm=norm, **kw)
            ty = getattr(torch.fft, name)(tx, norm=norm, **kw)
            assert y.dtype.name == str(ty.dtype).removeprefix("torch.")
            np.testing.assert_allclose(y.detach().numpy(), ty.detach().resolve_conj().numpy(),
                                       rtol=1e-4, atol=1e-4)
            w = _data(tuple(y.shape), "complex128" if y.dtype.is_complex else "float64", 1)
            w = w.astype(y.dtype.name)
            (y * eager.tensor(w)).real.sum().backward() if y.dtype.is_complex else \
                (y * eager.tensor(w)).sum().backward()
            (ty * torch.tensor(w)).real.sum().backward() if ty.is_complex() else \
                (ty * torch.tensor(w)).sum().backward()
            assert x.grad.dtype.name == str(tx.grad.dtype).removeprefix("torch.")
            np.testing.assert_allclose(x.grad.numpy(), tx.grad.resolve_conj().numpy(), rtol=1e-4, atol=1e-4,
                                       err_msg=f"{name} {kw} norm={norm}")


@pytest.mark.parametrize("name", ALL)
def test_gradcheck(name):
    """Finite differences (real and imaginary parts of complex inputs separately) against
    the registry's backward rules, reverse and forward mode."""
    for dtype in ("float64", "complex128"):
        if name in REAL_ONLY and dtype == "complex128":
            continue
        shape, kw = _cases(name)[1]
        x = eager.tensor(_data(shape, dtype), requires_grad=True)
        fn = getattr(eager.fft, name)
        assert gradcheck(lambda t, fn=fn, kw=kw: fn(t, norm="ortho", **kw), (x,),
                         check_forward_ad=True)


@pytest.mark.parametrize("name", ["fft", "rfft", "irfft", "hfftn", "ihfft2"])
def test_gradgradcheck(name):
    dtype = "float64" if name in REAL_ONLY else "complex128"
    x = eager.tensor(_data((3, 6), dtype), requires_grad=True)
    fn = getattr(eager.fft, name)
    assert gradgradcheck(lambda t: fn(t, norm="forward"), (x,))


def test_integer_input_promotes_to_complex64():
    x = np.arange(6)
    got = eager.fft.fft(eager.tensor(x))
    assert got.dtype.name == "complex64"
    np.testing.assert_allclose(got.numpy(), np.fft.fft(x), rtol=1e-6)
    assert eager.fft.rfft(eager.tensor(x)).dtype.name == "complex64"


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("dim", [None, 0, (0, 2), -1])
def test_shifts_match_numpy(inverse, dim):
    a = _data((4, 5, 7), "float64")
    fn = eager.fft.ifftshift if inverse else eager.fft.fftshift
    want = (np.fft.ifftshift if inverse else np.fft.fftshift)(a, axes=dim)
    np.testing.assert_array_equal(fn(eager.tensor(a), dim=dim).numpy(), want)


@pytest.mark.parametrize("n", [1, 4, 7, 10])
@pytest.mark.parametrize("d", [1.0, 0.25])
def test_frequencies(n, d):
    np.testing.assert_allclose(eager.fft.fftfreq(n, d).numpy(), np.fft.fftfreq(n, d),
                               rtol=1e-6)
    np.testing.assert_allclose(eager.fft.rfftfreq(n, d).numpy(), np.fft.rfftfreq(n, d),
                               rtol=1e-6)
    assert eager.fft.fftfreq(n, d).dtype.name == "float32"
    assert eager.fft.rfftfreq(n, d, dtype=eager.float64).dtype.name == "float64"
    if torch is not None:
        np.testing.assert_allclose(eager.fft.fftfreq(n, d).numpy(),
                                   torch.fft.fftfreq(n, d).numpy())


ERRORS = [
    ("fft", (8,), "float32", {"norm": "xyz"}, RuntimeError, "Invalid normalization mode"),
    ("fft", (8,), "float32", {"n": 0}, RuntimeError, "Invalid number of data points"),
    ("fft", (8,), "float16", {}, RuntimeError, "Unsupported dtype"),
    ("rfft", (8,), "complex64", {}, RuntimeError, "expects a real input tensor"),
    ("ihfft", (8,), "complex64", {}, RuntimeError, "expects a real input tensor"),
    ("fft2", (8,), "float32", {}, IndexError, "Dimension out of range"),
    ("fftn", (8,), "float32", {"s": (4, 4)}, RuntimeError, "input tensor only has 1"),
    ("fftn", (3, 4), "float32", {"s": (4,), "dim": (0, 1)}, RuntimeError,
     "same length"),
    ("fftn", (3, 4), "float32", {"dim": (0, 0)}, RuntimeError, "FFT dims must be unique"),
    ("fft", (8,), "float32", {"dim": 3}, IndexError, "Dimension out of range"),
    ("irfft", (1,), "complex64", {}, RuntimeError, "Invalid number of data points (0)"),
    ("fft", (), "float32", {}, IndexError, "no dimensions"),
]


@pytest.mark.parametrize("name,shape,dtype,kw,exc,msg", ERRORS)
def test_errors(name, shape, dtype, kw, exc, msg):
    a = np.zeros(shape, dtype)
    with pytest.raises(exc, match=msg.replace("(", r"\(").replace(")", r"\)")):
        getattr(eager.fft, name)(eager.tensor(a), **kw)
    if torch is not None:
        with pytest.raises(exc):
            getattr(torch.fft, name)(torch.tensor(a), **kw)


def test_compiled_graph_keeps_the_transform_as_a_library_call():
    def f(x):
        spec = eager.fft.rfft(x, norm="ortho")
        return eager.fft.irfft(spec * 0.5, n=x.shape[-1], norm="ortho") + x

    x = eager.randn(4, 64)
    out = capture.explain(f)(x)
    ops = out.ops_per_graph[0]
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert "_fft_r2c" in ops and "_fft_c2r" in ops, ops
    cg = codegen.compile_graph(out.graphs[0])
    calls = [s for s in cg.steps if isinstance(s, LibraryCall)]
    assert any("_fft_r2c" in repr(s) for s in calls), cg.steps
    compiled = capture.compile(f, backend="llvm")
    np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(f(x).numpy(), 1.5 * x.numpy(), rtol=1e-5, atol=1e-5)


def test_compiled_gradient_matches_eager():
    def f(x):
        return eager.fft.fft2(x).abs().sum()

    a = _data((5, 6), "float64")
    x1 = eager.tensor(a, requires_grad=True)
    f(x1).backward()
    x2 = eager.tensor(a, requires_grad=True)
    capture.compile(f)(x2).backward()
    np.testing.assert_allclose(x2.grad.numpy(), x1.grad.numpy(), rtol=1e-10)
