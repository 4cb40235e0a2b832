"""Eager Tensor behaviour: creation, printing, autograd semantics, in-place safety.

References: PyTorch when installed (same calls side by side), otherwise numpy and finite
differences; never values recorded from wick itself."""

from __future__ import annotations

import numpy as np
import pytest

import eager

try:
    import torch
except ImportError:
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")


def test_creation_dtypes_follow_pytorch_rules():
    assert eager.tensor([1, 2]).dtype is eager.int64
    assert eager.tensor([1.0, 2]).dtype is eager.float32
    assert eager.tensor([True]).dtype is eager.bool
    assert eager.zeros(2, 3).dtype is eager.float32
    assert eager.arange(5).dtype is eager.int64
    assert eager.arange(0, 1, 0.25).dtype is eager.float32
    np.testing.assert_array_equal(eager.arange(1, 10, 3).numpy(), np.arange(1, 10, 3))
    assert eager.ones((2, 3)).shape == (2, 3)
    assert eager.randn(4, 5, dtype=eager.float64).dtype is eager.float64


def test_from_numpy_shares_memory():
    a = np.arange(6.0)
    t = eager.from_numpy(a)
    a[0] = 42.0
    assert t[0].item() == 42.0 if hasattr(eager.Tensor, "__getitem__") else t.numpy()[0] == 42


@needs_torch
@pytest.mark.parametrize("data,kw", [
    ([[0.1234, -1.0]], {}), ([1.0, 2.0], {}), ([1, 2, 3], {}), ([True, False], {}),
    ([[1.5, 2.25], [3.0, -4.125]], {"dtype": "float64"}), ([0.5, 1.5], {"requires_grad": True}),
])
def test_repr_matches_torch(data, kw):
    ekw = {k: (getattr(eager, v) if k == "dtype" else v) for k, v in kw.items()}
    tkw = {k: (getattr(torch, v) if k == "dtype" else v) for k, v in kw.items()}
    want = repr(torch.tensor(data, **tkw)).replace("torch.", "eager.")
    assert repr(eager.tensor(data, **ekw)) == want


def test_grad_fn_names_and_leaves():
    x = eager.ones(3, requires_grad=True)
    y = x * 2
    assert x.is_leaf and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    assert (y + 1).grad_fn.name() == "AddBackward0"
    with eager.no_grad():
        z = x * 2
    assert z.grad_fn is None and not z.requires_grad


def _torch_or_numeric(fn_eager, fn_torch, x0):
    """d(sum fn(x))/dx by PyTorch if present, else by central differences on fn_eager."""
    if torch is not None:
        xt = torch.tensor(x0, requires_grad=True)
        fn_torch(xt).sum().backward()
        return xt.grad.numpy()
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[i] += 1e-6
        lo[i] -= 1e-6
        g[i] = (fn_eager(eager.tensor(hi)).sum().item() -
                fn_eager(eager.tensor(lo)).sum().item()) / 2e-6
    return g


def test_backward_accumulates_and_shares_paths():
    x0 = np.random.default_rng(0).standard_normal((3, 4))

    def f(x, lib):
        y = lib.tanh(x) * x
        return (y + y.exp()) * lib.sigmoid(x)

    x = eager.tensor(x0, requires_grad=True)
    f(x, eager).sum().backward()
    want = _torch_or_numeric(lambda t: f(t, eager), lambda t: f(t, torch), x0)
    np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-6, atol=1e-7)
    f(x, eager).sum().backward()  # a second pass accumulates
    np.testing.assert_allclose(x.grad.numpy(), 2 * want, rtol=1e-6, atol=1e-7)


def test_broadcast_gradients_reduce_to_operand_shapes():
    rng = np.random.default_rng(1)
    a0, b0 = rng.standard_normal((4, 1, 3)), rng.standard_normal((5, 1))
    a = eager.tensor(a0, requires_grad=True)
    b = eager.tensor(b0, requires_grad=True)
    (a * b + b).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), np.broadcast_to(b0.sum(), (4, 1, 3)) * 1.0
                               if False else (b0.sum() * np.ones((4, 1, 3))), rtol=1e-12)
    np.testing.assert_allclose(b.grad.numpy(), (a0.sum() + 4 * 3) * np.ones((5, 1)), rtol=1e-12)


def test_second_backward_through_freed_graph_raises():
    x = eager.ones(2, requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = (x.exp()).sum()
    z.backward(retain_graph=True)
    z.backward()  # retained: works
    np.testing.assert_allclose(x.grad.numpy(), 2 + 2 * np.e, rtol=1e-6)  # 2x, then e^x twice


def test_create_graph_gives_second_derivative():
    x0 = np.array([0.3, -1.2, 2.0])
    x = eager.tensor(x0, requires_grad=True)
    (g,) = eager.autograd.grad(eager.tanh(x).sum(), x, create_graph=True)
    (h,) = eager.autograd.grad(g.sum(), x)
    t = np.tanh(x0)
    assert g.requires_grad
    np.testing.assert_allclose(g.detach().numpy(), 1 - t**2, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), -2 * t * (1 - t**2), rtol=1e-12)


def test_inplace_on_leaf_requiring_grad_raises_and_leaves_it_unchanged():
    x = eager.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    np.testing.assert_array_equal(x.detach().numpy(), np.ones(3))
    with eager.no_grad():
        x -= 0.5
    np.testing.assert_array_equal(x.detach().numpy(), np.full(3, 0.5))


def test_failed_inplace_leaves_tensor_unchanged():
    t = eager.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.mul_(1.5)
    with pytest.raises(RuntimeError):
        t.add_(eager.ones(2, 3, dtype=eager.int64))
    np.testing.assert_array_equal(t.numpy(), [1, 2, 3])
    assert t._version == 0


def test_modified_saved_tensor_is_detected():
    x = eager.ones(3, requires_grad=True)
    y = x * 2
    z = y * y          # saves y
    with eager.no_grad():
        y.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.sum().backward()


def test_inplace_on_non_leaf_rebases_history():
    x0 = np.array([0.5, -1.0, 2.0])
    x = eager.tensor(x0, requires_grad=True)
    y = x * 3
    y.mul_(y)              # y = (3x)^2
    y.add_(1)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 18 * x0, rtol=1e-12)


def test_long_chain_does_not_recurse():
    x = eager.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(100_000):
        y = y + 0.0
    y.sum().backward()
    assert x.grad.item() == 1.0


def test_numpy_on_requires_grad_raises():
    with pytest.raises(RuntimeError, match="detach"):
        eager.ones(2, requires_grad=True).numpy()


def test_int_tensors_cannot_require_grad():
    with pytest.raises(RuntimeError, match="floating point"):
        eager.tensor([1, 2], requires_grad=True)
