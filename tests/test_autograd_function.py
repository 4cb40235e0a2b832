"""Custom differentiable ops: `eager.autograd.Function` and its ctx API, against PyTorch's
`torch.autograd.Function` running the same class body (when importable) and closed forms."""

from __future__ import annotations

import weakref

import numpy as np
import pytest

import eager
from eager import autograd

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

LIBS = [eager] + ([torch] if torch is not None else [])


def _t(lib, a, rg=False):
    return lib.tensor(np.asarray(a, dtype=np.float64), requires_grad=rg)


def _np(t):
    return t.detach().numpy()


def make_exp(lib):
    class Exp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    return Exp


def make_scaled_mul(lib):
    class ScaledMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, scale):
            ctx.save_for_backward(x, y)
            ctx.scale = scale
            ctx.flags = ctx.needs_input_grad
            return x * y * scale

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            gx = g * y * ctx.scale if ctx.needs_input_grad[0] else None
            gy = g * x * ctx.scale if ctx.needs_input_grad[1] else None
            return gx, gy, None

    return ScaledMul


def test_function_forward_backward_and_names():
    x0 = np.array([0.1, -0.5, 1.2])
    for lib in LIBS:
        x = _t(lib, x0, True)
        y = make_exp(lib).apply(x)
        assert y.grad_fn.name() == "ExpBackward" if lib is eager else True
        (y * y).sum().backward()
        np.testing.assert_allclose(_np(x.grad), 2 * np.exp(2 * x0), rtol=1e-12)


def test_needs_input_grad_and_non_tensor_arguments():
    for lib in LIBS:
        x, y = _t(lib, [1.0, 2.0], True), _t(lib, [3.0, 4.0])
        out = make_scaled_mul(lib).apply(x, y, 0.5)
        assert out.grad_fn.flags == (True, False, False)
        out.sum().backward()
        np.testing.assert_allclose(_np(x.grad), [1.5, 2.0])


def test_higher_order_through_custom_function():
    x0 = np.array([0.3, 0.8])
    for lib in LIBS:
        x = _t(lib, x0, True)
        y = make_exp(lib).apply(x * 2)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        np.testing.assert_allclose(_np(g), 2 * np.exp(2 * x0), rtol=1e-12)
        np.testing.assert_allclose(_np(h), 4 * np.exp(2 * x0), rtol=1e-12)


def test_saved_tensors_checked_and_freed():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0], True)
        h = x * 1
        y = make_exp(lib).apply(h)
        with lib.no_grad():
            y.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()
        y = make_exp(lib).apply(h)
        y.sum().backward()
        with pytest.raises(RuntimeError, match="backward through the graph a second time"):
            y.sum().backward()


def test_saved_output_does_not_keep_graph_alive():
    import gc

    x = _t(eager, [1.0, 2.0], True)
    gc.disable()
    try:
        y = make_exp(eager).apply(x * 1)
        refs = weakref.ref(y), weakref.ref(y.grad_fn)
        del y
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def make_mul2_(lib):
    class Mul2_(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x

        @staticmethod
        def backward(ctx, g):
            return g * 2

    return Mul2_


def test_mark_dirty_rebases_and_leaf_raises():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0], True)
        y = x * 3
        out = make_mul2_(lib).apply(y)
        assert out is y
        (y * y).sum().backward()
        np.testing.assert_allclose(_np(x.grad), 2 * 36 * np.array([1.0, 2.0]))
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            make_mul2_(lib).apply(_t(lib, [1.0], True))


def test_mark_dirty_on_view_rebases_base():
    for lib in LIBS:
        x = _t(lib, [1.0, 2.0, 3.0, 4.0], True)
        y = x * 1
        make_mul2_(lib).apply(y.reshape(2, 2).transpose(0, 1))
        (y * _t(lib, [1.0, 2.0, 3.0, 4.0])).sum().backward()
        np.testing.assert_allclose(_np(x.grad), [2.0, 4.0, 6.0, 8.0])


def make_sort_like(lib):
    class MaxAndIndex(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            i = int(np.argmax(x.detach().numpy()))
            idx = lib.tensor([i])
            ctx.mark_non_differentiable(idx)
            ctx.i, ctx.n = i, x.shape[0]
            return x.max() * 1, idx

        @staticmethod
        def backward(ctx, g, gi):
            out = np.zeros(ctx.n)
            out[ctx.i] = g.item()
            return lib.tensor(out)

    return MaxAndIndex


def test_multiple_outputs_and_non_differentiable():
    for lib in LIBS:
        x = _t(lib, [1.0, 5.0, 2.0], True)
        m, idx = make_sort_like(lib).apply(x)
        assert m.requires_grad and not idx.requires_grad
        (m * 3).backward()
        np.testing.assert_allclose(_np(x.grad), [0.0, 3.0, 0.0])


def test_materialize_grads_setting():
    got = {}
    for lib in LIBS:
        name = lib.__name__

        class Two(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, materialize):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, g1, g2, name=name):
                got.setdefault(name, []).append(g2 is None)
                return g1 * 2 + (0 if g2 is None else g2 * 3), None

        for mat in (True, False):
            x = _t(lib, [1.0], True)
            a, _ = Two.apply(x, mat)
            a.sum().backward()
            np.testing.assert_allclose(_np(x.grad), [2.0])
    assert got["eager"] == [False, True]
    if torch is not None:
        assert got["torch"] == got["eager"]


def test_once_differentiable_refuses_double_backward():
    for lib in LIBS:
        class Sq(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            @(autograd.once_differentiable if lib is eager else
              torch.autograd.function.once_differentiable)
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return g * 2 * x

        x = _t(lib, [3.0], True)
        y = Sq.apply(x)
        (g,) = lib.autograd.grad((y * y).sum(), x, create_graph=True)  # 2y flows in: has history
        np.testing.assert_allclose(_np(g), [4 * 27.0])
        with pytest.raises(RuntimeError, match="once_differentiable"):
            g.sum().backward()


def test_setup_context_style_and_jvp():
    class Cube(autograd.Function):
        @staticmethod
        def forward(x):
            return x * x * x

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x * x

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return t * 3 * x * x

    x = _t(eager, [1.0, 2.0], True)
    Cube.apply(x).sum().backward()
    np.testing.assert_allclose(_np(x.grad), [3.0, 12.0])
    fw = autograd.forward_ad
    with fw.dual_level():
        d = fw.make_dual(_t(eager, [1.0, 2.0]), _t(eager, [1.0, 0.5]))
        np.testing.assert_allclose(_np(fw.unpack_dual(Cube.apply(d)).tangent), [3.0, 6.0])


def test_function_errors():
    class Wrong(autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y

        @staticmethod
        def backward(ctx, g):
            return g

    x, y = _t(eager, [1.0], True), _t(eager, [2.0], True)
    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        Wrong.apply(x, y).sum().backward()

    class BadShape(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return eager.ones(5, dtype=eager.float64)

    with pytest.raises(RuntimeError, match="returned an invalid gradient at index 0"):
        BadShape.apply(_t(eager, [1.0, 2.0], True)).sum().backward()
    with pytest.raises(RuntimeError, match="Legacy autograd function"):
        Wrong()

    class Plain(autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

    with pytest.raises(NotImplementedError, match="backward"):
        Plain.apply(_t(eager, [1.0], True)).sum().backward()


def test_function_without_grad_mode_records_nothing():
    x = _t(eager, [1.0], True)
    with eager.no_grad():
        y = make_exp(eager).apply(x)
    assert y.grad_fn is None and not y.requires_grad
