"""Version counters and in-place ops under autograd (the autograd paper's section on in-place
operations): saved tensors modified in place, in-place on leaves, history rebasing of non-leaf
tensors and of views (transpose/reshape/unsqueeze/expand/slicing), the paper's aliasing example.

References: PyTorch when importable (same code side by side), and closed-form gradients."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import autograd

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
LIBS = [eager] + ([torch] if torch is not None else [])
HAS_GETITEM = hasattr(eager.Tensor, "__getitem__")


def _t(lib, a, rg=False):
    return lib.tensor(np.asarray(a, dtype=np.float64), requires_grad=rg)


def _np(t):
    return t.detach().numpy()


def same(fn, expect=None):
    """fn(lib) for eager and torch: equal results; also equal to `expect` when given."""
    res = [fn(lib) for lib in LIBS]
    for r in res[1:]:
        for a, b in zip(res[0], r):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    if expect is not None:
        for a, b in zip(res[0], expect):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)
    return res[0]


def test_saved_tensor_modified_in_place_raises_naming_op_and_versions():
    x = _t(eager, [1.0, 2.0, 3.0], True)
    y = x * 2
    z = y * y  # saves y
    y.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: operand [01] of "
                                           r"MulBackward0 is at version 1; expected version 0"):
        z.sum().backward()


def test_saved_output_modified_in_place_raises():
    x = _t(eager, [0.1, 0.2], True)
    y = x.exp()  # exp's backward uses its output
    with eager.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="the output of ExpBackward0 is at version 1"):
        y.sum().backward()


@needs_torch
def test_version_error_is_raised_by_torch_too():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0], True)
        y = x.exp()
        with lib.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_modification_not_needed_by_the_rule_is_allowed():
    def run(lib):
        x = _t(lib, [1.0, 2.0], True)
        y = x * 2
        z = y + 1  # add saves nothing it needs
        y.mul_(3)
        (z.sum() + y.sum()).backward()
        return (_np(x.grad),)

    same(run, ([8.0, 8.0],))


def test_in_place_on_leaf_requiring_grad_raises_and_leaves_it_unchanged():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0], True)
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            x.add_(1)
        np.testing.assert_array_equal(_np(x), [1.0, 2.0])
        with lib.no_grad():
            x.mul_(2)  # allowed without recording
        np.testing.assert_array_equal(_np(x), [2.0, 4.0])


def test_in_place_on_non_leaf_rebases_history():
    x0 = np.array([0.5, -1.0, 2.0])

    def run(lib):
        x = _t(lib, x0, True)
        y = x * 3
        y.mul_(2)  # a scalar product saves nothing of y (the old value is not needed)
        y.exp_()
        y.sum().backward()
        return (_np(x.grad),)

    same(run, (6 * np.exp(6 * x0),))


def test_in_place_bumps_version_of_base_and_views():
    x = _t(eager, [1.0, 2.0, 3.0, 4.0])
    v = x.reshape(2, 2)
    w = v.transpose(0, 1)
    v.add_(1)
    assert x._version == v._version == w._version == 1
    np.testing.assert_array_equal(_np(x), [2.0, 3.0, 4.0, 5.0])


@pytest.mark.parametrize("make_view,is_view", [
    (lambda y: y.transpose(0, 1), True),
    (lambda y: y.reshape(6), True),
    (lambda y: y.unsqueeze(0), True),
    (lambda y: y.transpose(0, 1).reshape(6), False),  # reshape must copy here, as in PyTorch
], ids=["transpose", "reshape", "unsqueeze", "transpose-reshape"])
def test_in_place_on_view_rebases_base_history(make_view, is_view):
    x0 = np.arange(1.0, 7.0).reshape(2, 3)
    w0 = np.linspace(-1, 1, 6).reshape(2, 3)

    def run(lib):
        x = _t(lib, x0, True)
        y = x * 2
        v = make_view(y)
        v.mul_(v.detach() + 1)  # in place through the view; y changes too
        (y * _t(lib, w0)).sum().backward()
        return _np(x.grad), _np(y)

    got = same(run)
    want = 2 * (2 * x0 + 1) * w0 if is_view else 2 * w0
    np.testing.assert_allclose(got[0], want, rtol=1e-12)


def test_view_grad_fn_after_in_place_and_base_requires_grad():
    x = _t(eager, [1.0, 2.0, 3.0, 4.0], True)
    y = x * 1
    v = y.reshape(2, 2)
    v.mul_(2)
    assert y.grad_fn.name() == "CopySlices"
    assert v.grad_fn.name() == "AsStridedBackward0"
    base = eager.zeros(4)
    bv = base.reshape(2, 2)
    bv.add_(x.reshape(2, 2))  # a base that did not require grad now does
    assert base.requires_grad and not base.is_leaf
    (base * eager.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [1.0, 2.0, 3.0, 4.0])


def test_expand_view_gradient_sums_repeated_elements():
    def run(lib):
        x = _t(lib, [1.0, 2.0], True)
        e = (x * 1).unsqueeze(0).expand(3, 2)
        (e * _t(lib, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])).sum().backward()
        return (_np(x.grad),)

    same(run, ([9.0, 12.0],))


def test_view_of_leaf_in_place_raises():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0, 3.0, 4.0], True)
        with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
            x.reshape(2, 2).mul_(2)
        np.testing.assert_array_equal(_np(x), [1.0, 2.0, 3.0, 4.0])


def test_view_made_in_no_grad_then_modified_with_grad_raises():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0], True)
        y = x * 2
        with lib.no_grad():
            v = y.reshape(2, 1)
        with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
            v.mul_(2)


def test_view_sees_base_in_place_op_through_refreshed_history():
    """The view's grad_fn is regenerated from its base's new history (the paper's example in
    spirit: `y = x[:2]; x.add_(3); y.backward()`, with a multiplication so it matters)."""
    def run(lib):
        a = _t(lib, [1.0, 2.0, 3.0, 4.0], True)
        x = a * 1
        y = x.reshape(2, 2).transpose(0, 1)
        x.mul_(3)
        y.sum().backward()
        return _np(a.grad), _np(y)

    same(run, ([3.0, 3.0, 3.0, 3.0], [[3.0, 9.0], [6.0, 12.0]]))


@pytest.mark.skipif(not HAS_GETITEM, reason="Tensor.__getitem__ is not installed yet")
def test_slice_in_place_on_clone_differentiates():
    def run(lib):
        x = _t(lib, [1.0, 2.0, 3.0, 4.0], True)
        y = x.clone()
        y[1:3].mul_(2)
        (y * _t(lib, [1.0, 10.0, 100.0, 1000.0])).sum().backward()
        return _np(x.grad), _np(y)

    same(run, ([1.0, 20.0, 200.0, 1000.0], [1.0, 4.0, 6.0, 4.0]))


@pytest.mark.skipif(not HAS_GETITEM, reason="Tensor.__getitem__ is not installed yet")
def test_paper_aliasing_example():
    """Paszke et al. 2017, section 4.3: `y = x[:2]; x.add_(3); y.backward()`."""
    def run(lib):
        leaf = _t(lib, [1.0, 2.0, 3.0], True)
        x = leaf * 2
        y = x[:2]
        x.mul_(3)  # a multiplication: the gradient through y must see it
        x.add_(3)
        y.backward(_t(lib, [1.0, 1.0]))
        return _np(leaf.grad), _np(y)

    same(run, ([6.0, 6.0, 0.0], [9.0, 15.0]))


@pytest.mark.skipif(not HAS_GETITEM, reason="Tensor.__getitem__ is not installed yet")
def test_setitem_on_buffer_and_nested_slices():
    def run(lib):
        x = _t(lib, [1.0, 2.0, 3.0], True)
        buf = lib.zeros(2, 3, dtype=lib.float64)
        row = buf[1]
        row[1:].mul_(0)
        row[1:].add_(x[:2] * x[1:])
        (buf * buf).sum().backward()
        return _np(x.grad), _np(buf)

    same(run)


def test_retain_grad_follows_tensor_through_in_place():
    def run(lib):
        x = _t(lib, [1.0, 2.0], True)
        y = x * 2
        y.retain_grad()
        y.mul_(3)
        (y * y).sum().backward()
        return _np(y.grad), _np(x.grad)

    same(run, ([12.0, 24.0], [72.0, 144.0]))


def test_hooks_registered_before_in_place_see_old_value_gradient():
    seen = {}
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0], True)
        y = x * 2

        def hook(g, name=lib.__name__):
            seen[name] = _np(g).tolist()

        y.register_hook(hook)
        y.mul_(3)
        y.sum().backward()
    assert seen["eager"] == [3.0, 3.0]
    if torch is not None:
        assert seen["torch"] == seen["eager"]


def test_inplace_then_create_graph_second_order():
    x0 = np.array([0.3, 0.7])

    def run(lib):
        x = _t(lib, x0, True)
        y = x * 1
        y.mul_(y.detach() * 0 + 2)
        y.exp_()
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return _np(g), _np(h)

    same(run, (2 * np.exp(2 * x0), 4 * np.exp(2 * x0)))


def test_grad_through_inplace_view_of_non_leaf_with_autograd_grad():
    x = _t(eager, [1.0, 2.0, 3.0, 4.0], True)
    y = x * 1
    y.reshape(2, 2).transpose(0, 1).mul_(eager.tensor([[1.0, 2.0], [3.0, 4.0]],
                                                      dtype=eager.float64))
    (g,) = autograd.grad(y.sum(), x)
    np.testing.assert_allclose(_np(g), [1.0, 3.0, 2.0, 4.0])


def test_zero_fill_copy_overwrite_history():
    def run(lib):
        out = []
        for write in (lambda y: y.zero_(), lambda y: y.fill_(5.0),
                      lambda y: y.copy_(lib.ones(3, dtype=lib.float64))):
            x = _t(lib, [1.0, 2.0, 3.0], True)
            y = x * 2
            write(y)
            (y * x).sum().backward()
            out.append(_np(x.grad))
        return out

    same(run, ([0.0, 0.0, 0.0], [5.0, 5.0, 5.0], [1.0, 1.0, 1.0]))
    for lib in LIBS:
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            _t(lib, [1.0], True).zero_()
    g = _t(eager, [1.0], True)
    (g * 2).sum().backward()
    g.grad.zero_()  # gradients are plain tensors: no history involved
    assert g.grad.item() == 0.0


@pytest.mark.skipif(not HAS_GETITEM, reason="Tensor.__getitem__ is not installed yet")
def test_fill_on_slice_of_non_leaf():
    def run(lib):
        x = _t(lib, [1.0, 2.0, 3.0], True)
        y = x * 2
        y[1:].fill_(5.0)
        (y * x).sum().backward()
        return _np(x.grad), _np(y)

    same(run, ([4.0, 5.0, 5.0], [2.0, 5.0, 5.0]))


@pytest.mark.skipif(not HAS_GETITEM, reason="Tensor.__getitem__ is not installed yet")
def test_second_order_through_in_place_on_views():
    def run(lib):
        x = _t(lib, [0.5, 1.0, 1.5, 2.0], True)
        y = x * x
        y[1:3].mul_(y[1:3].detach() * 0 + 3)
        v = y.reshape(2, 2).transpose(0, 1)
        v.mul_(v.detach() * 0 + 2)
        (g,) = lib.autograd.grad((y ** 2).sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        return _np(g), _np(h)

    x0 = np.array([0.5, 1.0, 1.5, 2.0])
    scale = np.array([2.0, 6.0, 6.0, 2.0])  # y = scale * x^2, loss = scale^2 x^4
    same(run, (4 * scale**2 * x0**3, 12 * scale**2 * x0**2))
