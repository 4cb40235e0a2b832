"""Complex backward rules of the elementwise registry ops (conjugate Wirtinger convention):
gradients compared with PyTorch's (when importable) and with central differences of a real
loss; real-dtype rules must not pay for the conjugation (no `conj` op recorded)."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.dispatch import apply
from ir.opdef import OpNamespace

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

UNARY = ("exp", "log", "sin", "cos", "tan", "sinh", "cosh", "tanh", "sigmoid", "sqrt", "rsqrt",
         "reciprocal", "sgn", "abs", "angle", "exp2", "expm1", "log2", "log10", "log1p", "asin",
         "acos", "atan", "asinh", "acosh", "atanh")
BINARY = ("mul", "div", "pow")


def _z(rng, shape=(5,)):
    return rng.uniform(0.3, 1.2, shape) * np.exp(1j * rng.uniform(-1.2, 1.2, shape))


def _complex_like(rng, shape):
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def _loss_weights(rng, out_np):
    """Upstream gradient for out: complex for complex outputs, real for real ones."""
    if np.iscomplexobj(out_np):
        return _complex_like(rng, out_np.shape)
    return rng.standard_normal(out_np.shape)


def _eager_grads(fn, arrays, gout):
    ts = [eager.tensor(a, requires_grad=True) for a in arrays]
    out = fn(*ts)
    out.backward(eager.tensor(gout))
    return [t.grad.numpy() for t in ts]


def _numeric_grads(f_np, arrays, gout, eps=1e-6):
    """PyTorch's z.grad for the real loss L = Re sum(conj(gout) * f(z)): dL/da + i dL/db."""
    def loss(xs):
        return np.real(np.sum(np.conj(gout) * f_np(*xs)))

    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a)
        for k in np.ndindex(a.shape):
            for step in (1.0, 1j):
                hi = [x.copy() for x in arrays]
                lo = [x.copy() for x in arrays]
                hi[i][k] += eps * step
                lo[i][k] -= eps * step
                g[k] += step * (loss(hi) - loss(lo)) / (2 * eps)
        grads.append(g)
    return grads


_NP = {"sgn": lambda z: z / np.abs(z), "rsqrt": lambda z: 1 / np.sqrt(z),
       "exp2": lambda z: 2.0 ** z, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan,
       "asinh": np.arcsinh, "acosh": np.arccosh, "atanh": np.arctanh,
       "sigmoid": lambda z: 1 / (1 + np.exp(-z)), "div": np.divide, "mul": np.multiply,
       "pow": np.power, "angle": np.angle}


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_complex_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(3)
    arrays = [_z(rng) for _ in range(2 if name in BINARY else 1)]
    f_np = _NP.get(name, getattr(np, name, None))
    gout = _loss_weights(rng, f_np(*arrays))
    got = _eager_grads(getattr(eager, name), arrays, gout)
    for g, want in zip(got, _numeric_grads(f_np, arrays, gout)):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-6)


@pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
@pytest.mark.parametrize("name", UNARY + BINARY + ("silu", "lerp", "addcmul", "addcdiv"))
def test_complex_gradient_matches_torch(name):
    rng = np.random.default_rng(4)
    nin = 3 if name in ("lerp", "addcmul", "addcdiv") else 2 if name in BINARY else 1
    arrays = [_z(rng) for _ in range(nin)]
    kw = {"value": 0.5 - 2j} if name in ("addcmul", "addcdiv") else {}
    e_fn = eager.nn.functional.silu if name == "silu" else getattr(eager, name)
    # (torch's silu has no complex autograd: its formula, x * sigmoid(x), is the reference)
    t_fn = (lambda x: x * torch.sigmoid(x)) if name == "silu" else getattr(torch, name)
    ts = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = t_fn(*ts, **kw)
    gout = _loss_weights(rng, out.detach().numpy())
    out.backward(torch.tensor(gout))
    got = _eager_grads(lambda *xs: e_fn(*xs, **kw), arrays, gout)
    for g, t in zip(got, ts):
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
def test_mixed_real_complex_and_complex_numbers_match_torch():
    rng = np.random.default_rng(5)
    x, z = rng.uniform(0.5, 2.0, 4), _z(rng, (4,))
    gout = _complex_like(rng, (4,))
    cases = [
        lambda lib, a, b: lib.mul(a, b), lambda lib, a, b: lib.div(a, b),
        lambda lib, a, b: lib.pow(b, a), lambda lib, a, b: lib.mul(a, 2 - 3j) + b,
        lambda lib, a, b: lib.div(b, 1 + 1j) * a, lambda lib, a, b: lib.pow(0.5 + 1j, a) * b,
        lambda lib, a, b: lib.add(b, b, alpha=2 - 1j) * a,
        lambda lib, a, b: lib.sub(b, b * a, alpha=1j),
        lambda lib, a, b: lib.lerp(b, b * 2, 0.3 + 0.1j) * a,
    ]
    for f in cases:
        got = _eager_grads(lambda a, b, f=f: f(eager, a, b), [x, z], gout)
        ts = [torch.tensor(v, requires_grad=True) for v in (x, z)]
        f(torch, *ts).backward(torch.tensor(gout))
        assert got[0].dtype == np.float64
        for g, t in zip(got, ts):
            np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-9, atol=1e-12)


def test_jvp_of_complex_ops_is_f_prime_times_tangent():
    """Forward mode (derived from the conjugated backward rules): J t = f'(z) t."""
    from eager.autograd import forward_ad as fwAD

    rng = np.random.default_rng(6)
    z0, t0 = _z(rng), _complex_like(rng, (5,))
    for name, fprime in [("exp", np.exp), ("sin", np.cos), ("log", lambda z: 1 / z),
                         ("tanh", lambda z: 1 - np.tanh(z) ** 2)]:
        with fwAD.dual_level():
            out = getattr(eager, name)(fwAD.make_dual(eager.tensor(z0), eager.tensor(t0)))
            tangent = fwAD.unpack_dual(out).tangent.numpy()
        np.testing.assert_allclose(tangent, fprime(z0) * t0, rtol=1e-10)


@pytest.mark.parametrize("name", UNARY + BINARY + ("add", "sub", "lerp", "addcmul", "addcdiv"))
def test_real_rules_record_no_conj(name):
    """Conjugation is decided on the dtype while the rule runs: a float64 rule records no
    `conj` (plans and AOT graphs of real models keep their ops); a complex one does."""
    from ir import REGISTRY

    op = REGISTRY[name]
    for dtype, want in ((np.float64, False), (np.complex128, True)):
        calls = []

        def record(o, ins, attrs, calls=calls):
            calls.append(o.name)
            return apply(o, ins, attrs)

        F = OpNamespace(record)
        v = (1.5 if name == "acosh" else 0.5) + (0.25j if dtype is np.complex128 else 0)
        xs, attrs = op.bind(tuple(eager.tensor(np.full((3,), v, dtype))
                                  for _ in range(op.nin)), {"alpha": 2} if name in
                            ("add", "sub") else {})
        out = apply(op, xs, attrs)
        g = eager.ones_like(out)
        op.backward(F, g, out, *xs, **attrs)
        has_conj = "conj" in calls
        if name in ("abs", "angle", "add", "sub"):  # real g or real alpha: no conj
            want = False
        assert has_conj is want, (name, dtype, calls)
