"""Forward-mode AD (`eager.autograd.forward_ad`) and `eager.autograd.functional`, against
PyTorch's `torch.autograd.forward_ad` / `torch.autograd.functional` (same code, when
importable) and against Jacobians by central differences."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import autograd
from eager.autograd import forward_ad as fwad
from eager.autograd import functional as AF

try:
    import torch
    import torch.autograd.forward_ad as tfwad
    import torch.autograd.functional as TAF
except ImportError:  # PyTorch is an optional reference
    torch = None

RNG = np.random.default_rng(3)


def _t(lib, a, rg=False):
    return lib.tensor(np.asarray(a, dtype=np.float64), requires_grad=rg)


def _np(t):
    return t.detach().numpy()


def _numeric_jac(f, x0, eps=1e-6):
    """d f / d x as an array of shape f(x).shape + x.shape (central differences)."""
    y0 = np.asarray(f(x0))
    jac = np.zeros(y0.shape + x0.shape)
    for i in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[i] += eps
        lo[i] -= eps
        jac[(...,) + i] = (np.asarray(f(hi)) - np.asarray(f(lo))) / (2 * eps)
    return jac


def f_eager(x, w):
    return (eager.tanh(x @ w) * x.sum(1, keepdim=True)).exp()


def f_np(x0, w0):
    return np.exp(np.tanh(x0 @ w0) * x0.sum(1, keepdims=True))


X0 = RNG.standard_normal((3, 4)) * 0.5
W0 = RNG.standard_normal((4, 2)) * 0.5


# ---------------------------------------------------------------- forward_ad


def test_dual_numbers_give_jvp():
    tx = RNG.standard_normal(X0.shape)
    with fwad.dual_level():
        x = fwad.make_dual(_t(eager, X0), _t(eager, tx))
        out = f_eager(x, _t(eager, W0))
        primal, tangent = fwad.unpack_dual(out)
    jac = _numeric_jac(lambda a: f_np(a, W0), X0)
    want = np.tensordot(jac, tx, axes=2)
    np.testing.assert_allclose(_np(primal), f_np(X0, W0), rtol=1e-12)
    np.testing.assert_allclose(_np(tangent), want, rtol=1e-6, atol=1e-8)
    assert fwad.unpack_dual(out).tangent is None  # level exited: tangents dropped


@pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
def test_forward_ad_matches_torch_through_views_and_composites():
    x0, t0 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))

    def run(lib, fw):
        with fw.dual_level():
            x = fw.make_dual(_t(lib, x0), _t(lib, t0))
            y = lib.softmax(x.transpose(0, 1).reshape(6), dim=0) * 2
            z = (y.unsqueeze(0).expand(2, 6) * y).sum(0) + lib.log_softmax(x, dim=1).sum()
            p, t = fw.unpack_dual(z)
            return _np(p), _np(t)

    got, want = run(eager, fwad), run(torch, tfwad)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


def test_forward_ad_in_place_matches_finite_differences():
    """(PyTorch 2.13 gets this one wrong: its in-place tangent update reads an expanded
    tangent it overwrites; the finite differences are the reference.)"""
    x0, t0 = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 3))

    def f(x):
        e = np.exp(x.T.reshape(6))
        z = np.broadcast_to(e / e.sum() * 2, (2, 6)) * 1
        return z * z

    with fwad.dual_level():
        x = fwad.make_dual(_t(eager, x0), _t(eager, t0))
        y = eager.softmax(x.transpose(0, 1).reshape(6), dim=0) * 2
        z = y.unsqueeze(0).expand(2, 6) * 1
        z.mul_(z)
        tangent = _np(fwad.unpack_dual(z).tangent)
    want = (f(x0 + 1e-6 * t0) - f(x0 - 1e-6 * t0)) / 2e-6
    np.testing.assert_allclose(tangent, want, rtol=1e-6, atol=1e-9)


def test_forward_ad_errors_and_unpack_of_plain_tensor():
    x = _t(eager, [1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists"):
        fwad.make_dual(x, x)
    with fwad.dual_level():
        with pytest.raises(RuntimeError, match="different size"):
            fwad.make_dual(x, _t(eager, [1.0]))
        with pytest.raises(ValueError, match="floating point or complex"):
            fwad.make_dual(eager.tensor([1, 2]), x)
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"), \
                fwad.dual_level():
            pass
        primal, tangent = fwad.unpack_dual(x)
        assert primal is x and tangent is None


def test_forward_ad_inplace_and_reverse_mode_together():
    with fwad.dual_level():
        x = _t(eager, [1.0, 2.0], True)
        d = fwad.make_dual(x, _t(eager, [1.0, 1.0]))
        y = d * 2
        y.mul_(3)
        _, t = fwad.unpack_dual(y)
        np.testing.assert_allclose(_np(t), [6.0, 6.0])
        y.sum().backward()  # the dual keeps the primal's history
    np.testing.assert_allclose(_np(x.grad), [6.0, 6.0])


# ---------------------------------------------------------------- functional


def _both_functional(name, f_e, f_t, inputs, **kw):
    got = getattr(AF, name)(f_e, tuple(_t(eager, a) for a in inputs), **kw)
    if torch is None:
        return got, None
    want = getattr(TAF, name)(f_t, tuple(_t(torch, a) for a in inputs), **kw)
    return got, want


def _flat(x):
    if isinstance(x, (tuple, list)):
        out = []
        for a in x:
            out += _flat(a)
        return out
    return [_np(x)]


def _same(got, want, rtol=1e-9):
    if want is None:
        return
    g, w = _flat(got), _flat(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


def test_jacobian_matches_numeric_and_torch():
    got = AF.jacobian(lambda x: f_eager(x, _t(eager, W0)), _t(eager, X0))
    np.testing.assert_allclose(_np(got), _numeric_jac(lambda a: f_np(a, W0), X0), rtol=1e-6,
                               atol=1e-8)

    def fe(x, w):
        return f_eager(x, w), (x * w.sum()).sum()

    def ft(x, w):
        return (torch.tanh(x @ w) * x.sum(1, keepdim=True)).exp(), (x * w.sum()).sum()

    got, want = _both_functional("jacobian", fe, ft, (X0, W0))
    assert len(got) == 2 and len(got[0]) == 2
    assert tuple(got[0][1].shape) == (3, 2, 4, 2)
    _same(got, want)


def test_hessian_hvp_vhp_vjp_jvp_match_torch():
    x0 = RNG.standard_normal(4)
    v0 = RNG.standard_normal(4)

    def fe(x):
        return (eager.tanh(x) * x * x).sum()

    def ft(x):
        return (torch.tanh(x) * x * x).sum()

    got, want = _both_functional("hessian", fe, ft, (x0,))
    h = _np(got[0][0]) if isinstance(got, tuple) else _np(got)
    grad = lambda a: np.array([_numeric_jac(lambda b: np.sum(np.tanh(b) * b * b), a)])[0]
    np.testing.assert_allclose(h, _numeric_jac(grad, x0, 1e-4), rtol=1e-4, atol=1e-4)
    _same(got, want)
    for name in ("hvp", "vhp", "vjp", "jvp"):
        v = (_t(eager, v0),) if name != "vjp" else None
        got = getattr(AF, name)(fe, (_t(eager, x0),), v)
        if torch is not None:
            want = getattr(TAF, name)(ft, (_t(torch, x0),), (_t(torch, v0),) if v else None)
            _same(got, want)
    _, hv = AF.hvp(fe, _t(eager, x0), _t(eager, v0))
    np.testing.assert_allclose(_np(hv), h @ v0, rtol=1e-8)


def test_jvp_and_vjp_of_tensor_functions():
    v0 = RNG.standard_normal((3, 2))
    out, vjp = AF.vjp(lambda x: f_eager(x, _t(eager, W0)), _t(eager, X0), _t(eager, v0))
    jac = _numeric_jac(lambda a: f_np(a, W0), X0)
    np.testing.assert_allclose(_np(vjp), np.tensordot(v0, jac, axes=2), rtol=1e-6, atol=1e-8)
    t0 = RNG.standard_normal(X0.shape)
    out, jv = AF.jvp(lambda x: f_eager(x, _t(eager, W0)), _t(eager, X0), _t(eager, t0))
    np.testing.assert_allclose(_np(jv), np.tensordot(jac, t0, axes=2), rtol=1e-6, atol=1e-8)
    assert not out.requires_grad and not jv.requires_grad


def test_functional_create_graph_and_strict():
    x = _t(eager, [0.5, 1.5], True)
    _, (g,) = AF.vjp(lambda a: (a**3).sum(), (x,), create_graph=True)
    assert g.requires_grad
    (h,) = autograd.grad(g.sum(), x)
    np.testing.assert_allclose(_np(h), 6 * np.array([0.5, 1.5]))
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.vjp(lambda a, b: (a * 2).sum(), (_t(eager, [1.0]), _t(eager, [2.0])), strict=True)
    with pytest.raises(RuntimeError, match="independent of input 1"):
        AF.jacobian(lambda a, b: a * 2, (_t(eager, [1.0]), _t(eager, [2.0])), strict=True)
    _, (_, gb) = AF.vjp(lambda a, b: (a * 2).sum(), (_t(eager, [1.0]), _t(eager, [2.0])))
    np.testing.assert_array_equal(_np(gb), [0.0])
    with pytest.raises(RuntimeError, match="v can only be None"):
        AF.vjp(lambda a: a * 2, _t(eager, [1.0, 2.0]))
    with pytest.raises(TypeError, match="must be either a Tensor or a tuple of Tensors"):
        AF.jacobian(lambda a: a, [1.0])
    with pytest.raises(RuntimeError, match="single Tensor with a single element"):
        AF.hessian(lambda a: a * 2, _t(eager, [1.0, 2.0]))
