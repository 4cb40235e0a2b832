"""Compiled autograd equals eager's (issue 13, item 5): gradient values, `None`-ness, the
`requires_grad` of outputs, errors on a second backward, and saved tensors freed after
`backward()`. Each function runs plainly and compiled (backend "llvm", and "eager" where the
path differs) on fresh leaves; the plain run is the reference."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import capture
import eager


def _leaves(*vals, rg=True):
    return [eager.tensor(v, requires_grad=rg) for v in vals]


def _run(f, vals, loss=lambda out: out[0].sum(), backend="llvm"):
    """(outputs' requires_grad, grads) of f on fresh leaves, plainly and compiled."""
    res = []
    for fn in (f, capture.compile(f, backend=backend)):
        args = _leaves(*vals)
        out = fn(*args)
        out = out if isinstance(out, tuple) else (out,)
        loss(out).backward()
        res.append(([o.requires_grad for o in out],
                    [None if a.grad is None else a.grad.numpy() for a in args]))
    return res


def _assert_same(res):
    (rg0, g0), (rg1, g1) = res
    assert rg0 == rg1
    assert [g is None for g in g0] == [g is None for g in g1]
    for a, b in zip(g0, g1):
        if a is not None:
            assert a.dtype == b.dtype
            np.testing.assert_allclose(b, a, rtol=1e-6)


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_output_unused_by_the_loss_gives_no_nan(backend):
    """An output the loss does not use gets no gradient: a non-finite value on its path must
    not turn into NaN gradients (was: NaN; eager: the loss path's finite gradient)."""
    def f(x, y):
        z = y / 0.0              # inf: its backward times a zero gradient would be NaN
        return x * y, z
    res = _run(f, ([1.0, 2.0], [3.0, 0.0]), backend=backend)
    _assert_same(res)
    assert np.isfinite(res[1][1][1]).all()


def test_leaf_reaching_only_an_unused_output_gets_none():
    """A leaf whose only path is to an output the loss ignores: grad None (was: zeros)."""
    def f(x, y):
        return x * 2, y.exp()
    res = _run(f, ([1.0, 2.0], [3.0, 4.0]))
    _assert_same(res)
    assert res[1][1][1] is None


def test_loss_over_both_outputs_still_reaches_every_leaf():
    def f(x, y):
        return x * 2, (y * x).exp()
    _assert_same(_run(f, ([1.0, 2.0], [0.5, -1.0]), loss=lambda o: o[0].sum() + o[1].sum()))


def test_ones_like_of_an_input_requiring_grad_does_not_require_grad():
    def f(x):
        return x * 2, eager.ones_like(x) * 3, x.to(eager.int64).to(eager.float32) + 1
    res = _run(f, ([1.0, 2.0],))
    _assert_same(res)
    assert res[1][0] == [True, False, False]


def test_cumsum_of_a_0d_tensor_in_the_compiled_backward():
    def f(x):
        return (x.cumsum(0) * x).exp()
    _assert_same(_run(f, (0.5,)))


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_graph_break_inside_no_grad_keeps_requires_grad(backend):
    def before(x):
        y = x * 2
        with eager.no_grad():
            capture.graph_break()
        return y * 3

    def after(x):
        with eager.no_grad():
            capture.graph_break()
        return x * 3

    def nested(x):
        with eager.enable_grad():
            with eager.no_grad():
                capture.graph_break()
            y = x + 1
        return x * y
    for f in (before, after, nested):
        res = _run(f, ([1.0, 2.0],), backend=backend)
        _assert_same(res)
        assert res[1][0] == [True]


def test_second_backward_raises_as_eager():
    def f(x):
        return (x * x).exp()
    errors = []
    for fn in (f, capture.compile(f, backend="llvm")):
        (x,) = _leaves([1.0, 2.0])
        loss = fn(x).sum()
        loss.backward()
        with pytest.raises(RuntimeError) as e:
            loss.backward()
        errors.append(str(e.value).split(".")[0])
    assert errors[0] == errors[1]


def test_retain_graph_allows_a_second_backward():
    f = capture.compile(lambda x: (x * x).exp(), backend="llvm")
    (x,) = _leaves([1.0, 2.0])
    loss = f(x).sum()
    loss.backward(retain_graph=True)
    g1 = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1)


def test_saved_tensors_are_freed_after_backward():
    """The compiled backward's saved values die with backward(), while the loss is alive."""
    f = capture.compile(lambda x: (x.sin() * x.cos()).exp(), backend="llvm")
    (x,) = _leaves(np.linspace(0, 1, 1000))
    loss = f(x).sum()
    node = loss.grad_fn.next_functions[0][0]
    refs = [weakref.ref(t) for t in node.saved_tensors if t is not None]
    loss.backward()
    gc.collect()
    assert node._saved is None
    with pytest.raises(RuntimeError):
        node.saved_tensors
    assert all(r() is None for r in refs if r() is not x)


def test_inplace_change_of_a_saved_input_is_detected_as_eager():
    def f(x, y):
        return x * y
    for fn in (f, capture.compile(f, backend="llvm")):
        x, = _leaves([1.0, 2.0])
        y = eager.tensor([3.0, 4.0])
        out = fn(x, y)
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="inplace"):
            out.sum().backward()


def test_half_broadcast_gradient_keeps_the_leaf_dtype():
    """Eager's gradient of a broadcast float16 leaf is float16 (was float32: the fast sum of
    the plan kept its float32 accumulator)."""
    def f(x, y):
        return x + y
    for fn in (f, capture.compile(f, backend="llvm")):
        x = eager.tensor([0.5, 1.0, 2.0], dtype=eager.float16, requires_grad=True)
        fn(x, eager.zeros((2, 3), dtype=eager.float16)).sum().backward()
        assert x.grad.dtype is eager.float16
        np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])
