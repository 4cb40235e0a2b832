"""Backward plans (eager/autograd/plans.py) on the MLP step and on the rules their numpy-level
rewrites touch (mean/sum backward, keepdim sums of broadcast gradients, relu's masked gradient,
transposes, matmul): gradients equal numpy by hand / PyTorch, and bit-identical to the generic
path (the same rules run op by op through `lazy.LF`, no plan)."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.autograd import plans

try:
    import torch
except ImportError:  # an optional reference
    torch = None


def _grads(fn, arrays, use_plans: bool):
    """`fn(*tensors).backward()` on fresh leaves; their gradients as arrays."""
    saved = plans.build
    if not use_plans:
        plans.build = lambda node, g: None  # every node the generic way
    plans.clear()
    try:
        ts = [eager.tensor(a, requires_grad=True) for a in arrays]
        out = fn(*ts)
        out.backward()
        for _ in range(2):  # a second step runs the cached plans
            for t in ts:
                t.grad = None
            fn(*ts).backward()
        return [None if t.grad is None else t.grad.numpy().copy() for t in ts]
    finally:
        plans.build = saved
        plans.clear()


def _same_bits(a, b):
    if a is None or b is None:
        assert a is None and b is None
        return
    assert a.dtype == b.dtype and a.shape == b.shape
    assert np.array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8)), (a, b)


def _check(fn, arrays, torch_fn=None, rtol=1e-5):
    """Plans equal the generic path bit for bit, and PyTorch (when importable) within rtol."""
    got = _grads(fn, arrays, True)
    ref = _grads(fn, arrays, False)
    for a, b in zip(got, ref):
        _same_bits(a, b)
    if torch is not None:
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        (torch_fn or fn)(*ts).backward()
        for a, t in zip(got, ts):
            if t.grad is None:
                assert a is None
            else:
                np.testing.assert_allclose(a, t.grad.numpy(), rtol=rtol, atol=1e-6)
    return got


# ---------------------------------------------------------------- the benchmark's MLP


def _mlp_arrays(dtype=np.float32):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 20)).astype(dtype)
    y = rng.standard_normal((16, 5)).astype(dtype)
    w1 = (rng.standard_normal((20, 12)) * 0.3).astype(dtype)
    b1 = (rng.standard_normal(12) * 0.1).astype(dtype)
    w2 = (rng.standard_normal((12, 5)) * 0.3).astype(dtype)
    b2 = np.zeros(5, dtype)
    return x, y, w1, b1, w2, b2


def _mlp(lib):
    def step(x, y, w1, b1, w2, b2):
        o = lib.relu(x @ w1 + b1) @ w2 + b2
        d = o - y
        return (d * d).mean()
    return step


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mlp_gradients_equal_numpy_by_hand(dtype):
    x, y, w1, b1, w2, b2 = arrays = _mlp_arrays(dtype)
    got = _check(_mlp(eager), arrays, _mlp(torch) if torch is not None else None,
                 rtol=1e-4 if dtype == np.float32 else 1e-10)
    h = x @ w1 + b1
    a = np.maximum(h, 0)
    d = a @ w2 + b2 - y
    do = d * (2 / d.size)
    da = do @ w2.T
    dh = da * (h > 0)
    want = [dh @ w1.T, -do, x.T @ dh, dh.sum(0), a.T @ do, do.sum(0)]
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=tol, atol=tol * 1e-2)


# ---------------------------------------------------------------- mean and sum backward


MEAN_CASES = [((3, 4), {}), ((3, 4), {"dim": 1}), ((3, 4), {"dim": 0, "keepdim": True}),
              ((2, 3, 4), {"dim": (0, 2)}), ((2, 3, 4), {"dim": (0, 2), "keepdim": True}),
              ((5,), {}), ((), {}), ((1, 1), {}), ((2, 1, 3), {"dim": -1, "keepdim": True})]


@pytest.mark.parametrize("shape,kw", MEAN_CASES)
@pytest.mark.parametrize("red", ["mean", "sum"])
def test_reduction_backward(red, shape, kw):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape).astype(np.float32)

    def fn(x, w):
        r = getattr(x * w, red)(**kw)
        return (r * r).sum() if r.ndim else r * 3.0

    _check(fn, [x, w])


def test_mean_backward_of_a_large_tensor_is_exact():
    """Above the fill limit mean's gradient stays a broadcast view: the same values."""
    x = np.random.default_rng(2).standard_normal((300, 300)).astype(np.float32)
    got = _check(lambda t: (t * 2.0).mean(), [x])
    assert np.all(got[0] == np.float32(2.0) / np.float32(x.size))


def test_mean_backward_propagates_inf_and_nan():
    x = np.array([[1.0, np.inf], [np.nan, -2.0]], np.float32)
    _check(lambda t: (t * t).mean(), [x])


def test_mean_backward_float16():
    x = np.random.default_rng(3).standard_normal((4, 6)).astype(np.float16)
    got = _grads(lambda t: (t * t).mean(), [x], True)
    ref = _grads(lambda t: (t * t).mean(), [x], False)
    _same_bits(got[0], ref[0])


@pytest.mark.parametrize("bshape", [(5,), (1, 5), (4, 1), (1, 1), ()])
def test_broadcast_add_backward_sums_back(bshape):
    """The engine's sum_to_shape (keepdim sum + reshape) folded into one reduction."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal(bshape).astype(np.float32)
    w = rng.standard_normal((4, 5)).astype(np.float32)
    _check(lambda a, b: ((a + b) * eager.tensor(w)).sum(), [a, b],
           (lambda a, b: ((a + b) * torch.tensor(w)).sum()) if torch else None)


def test_batched_broadcast_mul_backward():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((2, 3, 4)).astype(np.float64)
    b = rng.standard_normal((3, 1)).astype(np.float64)
    _check(lambda a, b: (a * b).sum(), [a, b])


# ---------------------------------------------------------------- relu, transposes, matmul


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
def test_relu_backward_zero_where_out_not_positive_even_for_inf_nan_grads():
    x = np.array([[-1.0, 0.0, 2.0, np.nan], [3.0, -0.0, -np.inf, np.inf]], np.float32)
    g = np.array([[np.inf, np.nan, 1.5, 7.0], [np.nan, np.inf, 2.0, -np.inf]], np.float32)
    # relu(x) * g: d/dx = 0 where relu(x) <= 0, else g (PyTorch's threshold_backward on the
    # result: a NaN x passes g), whatever g holds
    got = _check(lambda x, g: (eager.relu(x) * g.detach()).sum(), [x, g],
                 (lambda x, g: (torch.relu(x) * g.detach()).sum()) if torch else None)
    want = np.where(np.maximum(x, 0) <= 0, np.float32(0), g)
    _same_bits(got[0], want)
    assert got[0][0, 3] == 7.0 and got[0][0, 0] == 0.0 and got[0][1, 1] == 0.0


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relu_backward_dtypes(dtype):
    x = np.random.default_rng(6).standard_normal((7, 9)).astype(dtype)
    got = _grads(lambda t: (eager.relu(t) * 3.0).sum(), [x], True)
    _same_bits(got[0], np.where(x > 0, dtype(3.0), dtype(0.0)).astype(dtype))


def test_transpose_permute_expand_backward():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((4, 3)).astype(np.float32)
    c = rng.standard_normal((3, 1)).astype(np.float32)

    def fn(a, b, c):
        p = a.permute(2, 0, 1) * a.transpose(0, 2).transpose(1, 2)
        q = b.T * c.expand(3, 4)
        return (p * p).sum() + (q * p.sum(1).T).sum()

    _check(fn, [a, b, c])


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 5)), ((4,), (4, 5)), ((2, 3, 4), (4,)),
                                   ((2, 3, 4), (1, 4, 2)), ((4,), (4,))])
def test_matmul_backward(sa, sb):
    rng = np.random.default_rng(8)
    a = rng.standard_normal(sa).astype(np.float32)
    b = rng.standard_normal(sb).astype(np.float32)
    _check(lambda a, b: ((a @ b) * 1.5).sum(), [a, b], rtol=1e-4)


def test_sum_with_dtype_backward():
    """sum(dtype=float64) of a float32 input: the gradient comes back as float32."""
    x = np.random.default_rng(9).standard_normal((3, 4)).astype(np.float32)
    got = _check(lambda t: (t.sum(1, dtype=eager.float64) * 2.0).sum(), [x],
                 (lambda t: (t.sum(1, dtype=torch.float64) * 2.0).sum()) if torch else None)
    assert got[0].dtype == np.float32
