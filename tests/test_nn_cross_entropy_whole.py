"""`F.cross_entropy` on 2-D logits with class indices runs as one registry op
(`ir/ops/losses.py`: `_cross_entropy`, backward `_cross_entropy_backward`): values, gradients,
double backward and errors against PyTorch, and the one-node graph eager records."""

from __future__ import annotations

import re

import numpy as np
import pytest

import eager
from eager.autograd import plans

torch = pytest.importorskip("torch")
F, TF = eager.nn.functional, torch.nn.functional


def _case(dtype, n=6, c=5, seed=0, ignore=()):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((n, c)) * 3).astype(dtype)
    t = rng.integers(0, c, n)
    for i, v in ignore:
        t[i] = v
    return x, t


def _both(x, t, **kw):
    ex = eager.tensor(x, requires_grad=True)
    tx = torch.tensor(x, requires_grad=True)
    el = F.cross_entropy(ex, eager.tensor(t), **kw)
    tl = TF.cross_entropy(tx, torch.tensor(t), **kw)
    return ex, el, tx, tl


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore", [(), ((1, -100), (4, -100)), ((0, 2),)])
def test_values_and_gradients_match_torch(dtype, reduction, ignore):
    x, t = _case(dtype, ignore=ignore)
    kw = {"reduction": reduction}
    if ignore and ignore[0][1] == 2:
        kw["ignore_index"] = 2
    ex, el, tx, tl = _both(x, t, **kw)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(el.detach().numpy(), tl.detach().numpy(), rtol=tol, atol=tol)
    g = np.linspace(0.5, 2.0, el.numel()).reshape(tuple(el.shape)).astype(dtype)
    el.backward(eager.tensor(g))
    tl.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=tol, atol=tol)
    assert ex.grad.dtype == (eager.float32 if dtype == np.float32 else eager.float64)


def test_every_target_ignored_gives_nan_mean_and_zero_gradient():
    x, t = _case(np.float32, ignore=[(i, -100) for i in range(6)])
    ex, el, tx, tl = _both(x, t)
    assert np.isnan(el.item()) and np.isnan(tl.item())
    el.backward()
    tl.backward()
    np.testing.assert_array_equal(ex.grad.numpy(), tx.grad.numpy())


def test_one_node_and_a_one_step_backward_plan():
    x, t = _case(np.float32)
    ex = eager.tensor(x, requires_grad=True)
    loss = F.cross_entropy(ex, eager.tensor(t))
    assert type(loss.grad_fn.next_functions[0][0]).__name__ == "AccumulateGrad"
    plans.clear()
    loss.backward()
    srcs = [fn.source for k, fn in plans.PLANS.items() if k[0] == "_cross_entropy" and fn]
    steps = [[ln for ln in s.splitlines() if re.match(r"\s+t\d+ = ", ln)] for s in srcs]
    assert srcs and all(len(st) == 1 for st in steps), srcs  # (one kernel call)


def test_double_backward_matches_torch():
    x, t = _case(np.float64, ignore=((2, -100),))
    ex, el, tx, tl = _both(x, t)
    (eg,) = eager.autograd.grad(el, ex, create_graph=True)
    (tg,) = torch.autograd.grad(tl, tx, create_graph=True)
    np.testing.assert_allclose(eg.detach().numpy(), tg.detach().numpy(), rtol=1e-12)
    (eg2,) = eager.autograd.grad((eg * eg).sum(), ex)
    (tg2,) = torch.autograd.grad((tg * tg).sum(), tx)
    np.testing.assert_allclose(eg2.numpy(), tg2.numpy(), rtol=1e-10, atol=1e-14)


def test_uint8_target_and_large_logits():
    x, t = _case(np.float32)
    x[0] = [1e4, -1e4, 0, 50, 3]  # (a shifted row: no overflow)
    ex, el, tx, tl = _both(x, t.astype(np.uint8))
    np.testing.assert_allclose(el.item(), tl.item(), rtol=1e-5)
    el.backward()
    tl.backward()
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("bad", [5, -1, 7])
def test_target_out_of_range_raises_torchs_error(bad):
    x, t = _case(np.float32)
    t[3] = bad
    with pytest.raises(IndexError, match=f"Target {bad} is out of bounds."):
        F.cross_entropy(eager.tensor(x, requires_grad=True), eager.tensor(t))
    with pytest.raises(IndexError):
        TF.cross_entropy(torch.tensor(x), torch.tensor(t))


def test_shape_dtype_and_reduction_errors_as_torch():
    x, t = _case(np.float32)
    ex, et = eager.tensor(x), eager.tensor(t)
    with pytest.raises(ValueError, match="Expected input batch_size"):
        F.cross_entropy(ex, et[:4])
    with pytest.raises(RuntimeError, match="expected target dtype to be Long or Byte"):
        F.cross_entropy(ex, et.int())
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.cross_entropy(ex, et, reduction="avg")
    with pytest.raises(RuntimeError, match="label_smoothing must be between 0.0 and 1.0"):
        F.cross_entropy(ex, et, label_smoothing=1.5)
