"""gradcheck over every differentiable registry op (float64, and complex128 where the op takes
complex inputs), reverse and forward mode; the gradcheck tool itself (its errors must catch
wrong gradients, like PyTorch's); complex gradients by the conjugate Wirtinger convention;
anomaly detection."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from opinfo import dtypes_of, samples

import eager
import ir
from eager import autograd
from eager.autograd import GradcheckError, gradcheck, gradgradcheck
from eager.dispatch import apply

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

HAS_COMPLEX = hasattr(eager, "complex128")

def _cases():
    out = []
    for op in ir.REGISTRY.values():
        if not op.differentiable:
            continue
        for dt in dtypes_of(op):
            if dt.name in ("float64", "complex128"):
                out.append(pytest.param(op, dt, id=f"{op.name}-{dt.name}"))
    return out


def _generic(a: np.ndarray, rng, domain) -> np.ndarray:
    """A point where the op is differentiable: NaN/inf replaced, ties broken by a tiny jitter
    (samples test tie and NaN semantics of the forward; finite differences need neither)."""
    if a.dtype.kind not in "fc":
        return a
    a = a.copy()
    bad = ~np.isfinite(a)
    if bad.any():
        lo, hi = domain
        lo = -1.0 if lo is None else lo
        hi = 1.0 if hi is None else hi
        a[bad] = rng.uniform(lo + 0.1 * (hi - lo), hi - 0.1 * (hi - lo), size=int(bad.sum()))
    jitter = rng.uniform(-1e-4, 1e-4, a.shape)
    if a.dtype.kind == "c":
        jitter = jitter + 1j * rng.uniform(-1e-4, 1e-4, a.shape)
    return a + jitter * np.maximum(1.0, np.abs(a))


def _caller(op, attrs):
    def call(*xs):
        ins, at = op.bind((list(xs),) if op.variadic else xs, dict(attrs))
        return apply(op, ins, at)

    return call


@pytest.mark.parametrize("op,dtype", _cases())
def test_gradcheck_every_differentiable_op(op, dtype):
    rng = np.random.default_rng(0)
    ran = 0
    for mode in ("bwd", "fwd"):
        for inputs, attrs in samples(op, dtype):
            ts = tuple(eager.tensor(_generic(a, rng, op.domain),
                                    requires_grad=a.dtype.kind in "fc")
                       if isinstance(a, np.ndarray) else a for a in inputs)
            if not any(isinstance(t, eager.Tensor) and t.requires_grad for t in ts):
                continue
            ran += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                gradcheck(_caller(op, attrs), ts, check_backward_ad=mode == "bwd",
                          check_forward_ad=mode == "fwd", atol=1e-5, rtol=1e-4)
    assert ran, f"no sample of {op.name} has an input that can require grad"


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "gelu", "div", "pow", "matmul",
                                  "log_softmax", "amax", "sum"])
def test_gradgradcheck_common_ops(name):
    op = ir.REGISTRY[name]
    rng = np.random.default_rng(1)
    inputs, attrs = next(iter(samples(op, eager.float64)))
    ts = tuple(eager.tensor(_generic(a, rng, op.domain), requires_grad=a.dtype.kind == "f")
               if isinstance(a, np.ndarray) else a for a in inputs)
    assert gradgradcheck(_caller(op, attrs), ts, atol=1e-5, rtol=1e-4)


# ---------------------------------------------------------------- the tool itself


class _WrongGrad(autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x  # should be 2x


def test_gradcheck_catches_a_wrong_gradient_and_reports_entries():
    x = eager.tensor([1.0, 2.0, 3.0], dtype=eager.float64, requires_grad=True)
    with pytest.raises(GradcheckError) as info:
        gradcheck(_WrongGrad.apply, (x,))
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,")
    assert "numerical:" in msg and "analytical:" in msg and "[1, 1]" in msg
    assert not gradcheck(_WrongGrad.apply, (x,), raise_exception=False)
    with pytest.raises(GradcheckError):
        gradcheck(_WrongGrad.apply, (x,), fast_mode=True)
    assert isinstance(info.value, RuntimeError)


@pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
def test_gradcheck_fails_where_torch_gradcheck_fails():
    class TWrong(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x

    xt = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(TWrong.apply, (xt,), raise_exception=False)
    x = eager.tensor([1.0, 2.0, 3.0], dtype=eager.float64, requires_grad=True)
    assert not gradcheck(_WrongGrad.apply, (x,), raise_exception=False)


def test_gradcheck_errors_and_warnings():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (eager.ones(2, dtype=eager.float64),))
    x = eager.ones(2, requires_grad=True)  # float32
    with pytest.warns(UserWarning, match="not a double precision"):
        gradcheck(lambda a: a * 2, (x,), atol=1e-2, rtol=1e-2, eps=1e-3)


def test_gradcheck_detects_non_reentrant_backward():
    calls = [0]

    class Flaky(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            calls[0] += 1
            return g * 2 + (1e-3 if calls[0] % 2 else 0.0)

    x = eager.tensor([1.0], dtype=eager.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="not reentrant"):
        gradcheck(Flaky.apply, (x,), atol=1e-2)


def test_gradgradcheck_catches_wrong_second_derivative():
    class BadSecond(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x.detach() * x.detach()  # right value, no second derivative

    x = eager.tensor([0.5, 1.5], dtype=eager.float64, requires_grad=True)
    assert gradcheck(BadSecond.apply, (x,))
    assert not gradgradcheck(BadSecond.apply, (x,), raise_exception=False)


# ---------------------------------------------------------------- complex


@pytest.mark.skipif(not HAS_COMPLEX, reason="complex dtypes are not in ir.dtypes yet")
def test_complex_leaf_gradient_follows_conjugate_wirtinger():
    """For a real loss L of z = a + ib, PyTorch's z.grad is dL/da + i dL/db, so that
    z - lr * z.grad descends."""
    z0 = np.array([1.0 + 2.0j, -0.5 + 0.25j])

    def loss(lib, z):
        return (lib.real(z) ** 2 + 3 * lib.imag(z) ** 2).sum()

    z = eager.tensor(z0, requires_grad=True)
    loss(eager, z).backward()
    want = 2 * z0.real + 1j * 6 * z0.imag
    np.testing.assert_allclose(z.grad.detach().numpy(), want)
    if torch is not None:
        zt = torch.tensor(z0, requires_grad=True)
        loss(torch, zt).backward()
        np.testing.assert_allclose(z.grad.detach().numpy(), zt.grad.numpy())
    before = loss(eager, z).item()
    with eager.no_grad():
        z -= 0.05 * z.grad
    assert loss(eager, z).item() < before


@pytest.mark.skipif(not HAS_COMPLEX, reason="complex dtypes are not in ir.dtypes yet")
def test_complex_gradcheck_of_custom_holomorphic_function():
    class CSquare(autograd.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * (2 * z).conj()  # PyTorch's convention: grad * conj(f'(z))

    z = eager.tensor(np.array([1 + 1j, 0.5 - 2j]), requires_grad=True)
    assert gradcheck(CSquare.apply, (z,))

    class CSquareWrong(CSquare):
        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * 2 * z

    with pytest.raises(GradcheckError, match="imaginary part"):
        gradcheck(CSquareWrong.apply, (z,))


@pytest.mark.skipif(not HAS_COMPLEX, reason="complex dtypes are not in ir.dtypes yet")
def test_real_input_of_complex_op_gets_real_gradient():
    x = eager.tensor([1.0, 2.0], dtype=eager.float64, requires_grad=True)
    z = eager.tensor(np.array([1j, 2 + 1j]))
    y = x.to(eager.complex128) + z
    (eager.real(y) * 3 + eager.imag(y)).sum().backward()
    assert x.grad.dtype is eager.float64
    np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0])


# ---------------------------------------------------------------- anomaly detection


def test_detect_anomaly_names_forward_op_and_user_line():
    x = eager.tensor([0.0, 1.0], dtype=eager.float64, requires_grad=True)
    anomaly_mode = autograd.detect_anomaly()
    with pytest.warns(UserWarning, match="Anomaly Detection has been enabled"):
        anomaly_mode.__enter__()
    try:
        y = x.sqrt()  # the user's line: d sqrt(x)/dx at 0 is inf, times 0 -> nan
        z = (y * 0).sum()
        with pytest.raises(RuntimeError) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            z.backward()
    finally:
        anomaly_mode.__exit__(None, None, None)
    msg = str(info.value)
    assert "Function 'SqrtBackward0' returned nan values in its 0th output." in msg
    assert "'sqrt'" in msg and "test_autograd_gradcheck.py:" in msg and "x.sqrt()" in msg
    assert not autograd.is_anomaly_enabled()


def test_anomaly_off_lets_nan_through_and_set_detect_anomaly():
    x = eager.tensor([0.0], dtype=eager.float64, requires_grad=True)
    (x.sqrt() * 0).sum().backward()
    assert np.isnan(x.grad.item())
    autograd.set_detect_anomaly(True)
    try:
        assert autograd.is_anomaly_enabled()
        y = (x.sqrt() * 0).sum()
    finally:
        autograd.set_detect_anomaly(False)
    with autograd.set_detect_anomaly(True), warnings.catch_warnings(), \
            pytest.raises(RuntimeError, match="returned nan values"):
        warnings.simplefilter("ignore")
        y.backward()
    with autograd.set_detect_anomaly(True, check_nan=False):
        (x.sqrt() * 0).sum().backward()  # no NaN check


def test_anomaly_warns_forward_trace_on_backward_error():
    x = eager.tensor([1.0], dtype=eager.float64, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with autograd.detect_anomaly():
            y = x * 2
            z = y * y
            with eager.no_grad():
                y.add_(1)
            with pytest.warns(UserWarning, match="Error detected in MulBackward0. Traceback of "
                                                 "forward call"), \
                    pytest.raises(RuntimeError, match="modified by an inplace operation"):
                z.backward()


def test_anomaly_decorator():
    @autograd.detect_anomaly()
    def run():
        return autograd.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert run() and not autograd.is_anomaly_enabled()
