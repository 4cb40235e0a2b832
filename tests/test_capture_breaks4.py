"""Issue 14's capture items for session 9 (B3): each case is ordinary PyTorch code built by
`case(lib)` for `lib` = wick's `eager` or the real torch, run eagerly and compiled, comparing
values, dtypes, gradients (None stays None) and cache entries; torch's graph counts on the
same code when torch is installed.

1. a custom `autograd.Function` whose backward returns None for an input that requires grad:
   the leaf's `.grad` stays None under compile, as in eager (an optimizer skips it);
2. sizes read as Python ints of a dynamic dimension (`B, T, C = x.size()`, `x.size(0)`,
   `len(x)`) used as op sizes and returned: one dynamic entry for every batch size.
"""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def _rand(lib, *shape, seed=0, grad=False):
    t = lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return t.requires_grad_() if grad else t


def _same(a, b) -> None:
    assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape), (a, b)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------- 1. autograd.Function returning None grads


def fn_none_for_leaf(lib):
    """backward returns None for `w` (requires grad): w.grad stays None."""
    class Gate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            return g * w, None

    def f(x, w):
        return Gate.apply(x, w).sum()

    return f, lambda: (_rand(lib, 4, 3, grad=True), _rand(lib, 4, 3, seed=1, grad=True))


def fn_none_and_other_path(lib):
    """backward gives None for `w`, but `w` also feeds another op: its grad is that path's;
    `v` reaches the Function only through `v * 2`: its grad stays None."""
    class Gate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, v):
            return x * w + v

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    def f(x, w, v):
        return (Gate.apply(x, w, v * 2) + w.sin()).sum()

    return f, lambda: (_rand(lib, 3, grad=True), _rand(lib, 3, seed=1, grad=True),
                       _rand(lib, 3, seed=2, grad=True))


def fn_none_by_value(lib):
    """backward decides at run time (a Python flag stored on the class) whether to return
    None: compiled follows each call's choice."""
    class Maybe(lib.autograd.Function):
        flag = [True]

        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3 if Maybe.flag[0] else None

    def f(x):
        return Maybe.apply(x).sum()

    return f, lambda: (_rand(lib, 5, grad=True),), Maybe.flag


@pytest.mark.parametrize("case", [fn_none_for_leaf, fn_none_and_other_path])
def test_function_none_grad_stays_none(case):
    capture.reset()
    fe, make = case(eager)
    ex = capture.explain(fe)(*make())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    fc = capture.compile(case(eager)[0])
    for _ in range(3):
        got = []
        for f in (fe, fc):
            args = make()
            out = f(*args)
            out.backward()
            got.append((out, [a.grad for a in args]))
        (oe, ge), (oc, gc) = got
        _same(oe, oc)
        for a, b in zip(ge, gc):
            assert (a is None) == (b is None), (ge, gc)
            if a is not None:
                _same(a, b)


def test_function_none_grad_follows_each_call():
    capture.reset()
    fe, make, flag = fn_none_by_value(eager)
    fc = capture.compile(fe)
    for on in (True, False, True):
        flag[0] = on
        for f in (fe, fc):
            (x,) = make()
            f(x).backward()
            assert (x.grad is None) == (not on)
            if on:
                np.testing.assert_allclose(x.grad.numpy(), np.full(5, 3.0, np.float32))


def test_function_none_grad_optimizer_skips():
    """SGD with weight decay skips a parameter whose grad is None: compiled equals eager."""
    capture.reset()
    f, make = fn_none_for_leaf(eager)
    fc = capture.compile(f)
    res = []
    for fn in (f, fc):
        x, w = make()
        opt = eager.optim.SGD([x, w], lr=0.1, weight_decay=0.5)
        for _ in range(2):
            opt.zero_grad()
            fn(x, w).backward()
            opt.step()
        res.append((x.detach().numpy().copy(), w.detach().numpy().copy(), w.grad))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6)
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert res[0][2] is None and res[1][2] is None


@pytest.mark.parametrize("case", [fn_none_for_leaf, fn_none_and_other_path])
def test_function_none_grad_torch(case):
    torch = pytest.importorskip("torch")
    f, make = case(torch)
    torch._dynamo.reset()
    ex = torch._dynamo.explain(f)(*make())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)
    args = make()
    torch.compile(f, backend="eager")(*args).backward()
    ref = make()
    f(*ref).backward()
    assert [a.grad is None for a in args] == [a.grad is None for a in ref]
