"""The optimizers' array path (`eager/optim/arrays.py`) computes the Tensor path's numbers bit
for bit and bumps the same version counters; and both agree with torch over 5 steps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import eager
from eager.optim import arrays, update_rules
from eager.optim import sgd as sgd_module

SGD_OPTIONS = [dict(momentum=m, dampening=d, weight_decay=wd, nesterov=n, maximize=mx)
               for m, d, wd, n, mx in itertools.product((0, 0.9), (0, 0.3), (0, 0.01),
                                                        (False, True), (False, True))
               if not (n and (m == 0 or d != 0))]
ADAM_OPTIONS = [dict(weight_decay=wd, maximize=mx, betas=b, amsgrad=ams)
                for wd, mx, b, ams in itertools.product((0, 0.05), (False, True),
                                                        ((0.9, 0.999), (0.3, 0.99)),
                                                        (False, True))]


def _problem(dtype, seed=0):
    rng = np.random.default_rng(seed)
    ws = [rng.standard_normal((5, 4)).astype(dtype), rng.standard_normal(5).astype(dtype)]
    x = rng.standard_normal((7, 4)).astype(dtype)
    return ws, x


def _run(lib, make, dtype, steps=5, seed=0):
    """Parameters after `steps` steps of `make(params)` on a small least-squares loss, with
    the version counters of the parameters and the optimizer's state tensors."""
    ws, x = _problem(dtype, seed)
    params = [lib.tensor(w.copy(), requires_grad=True) for w in ws]
    opt = make(params)
    xt = lib.tensor(x)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((xt @ params[0].t() + params[1]) ** 2).sum() * 0.01
        loss.backward()
        opt.step()
    versions = [p._version for p in params]
    versions += [t._version for p in params for t in opt.state[p].values()
                 if isinstance(t, lib.Tensor)]
    return [p.detach().numpy().copy() for p in params], versions


def _both_paths(make, dtype):
    try:
        on = _run(eager, make, dtype)
        arrays.ENABLED[0] = False
        off = _run(eager, make, dtype)
    finally:
        arrays.ENABLED[0] = True
    return on, off


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("opts", SGD_OPTIONS, ids=str)
def test_sgd_array_path_is_tensor_path(opts, dtype):
    (p_on, v_on), (p_off, v_off) = _both_paths(
        lambda ps: eager.optim.SGD(ps, lr=0.1, **opts), dtype)
    for a, b in zip(p_on, p_off):
        np.testing.assert_array_equal(a, b)
    assert v_on == v_off


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("opts", ADAM_OPTIONS, ids=str)
def test_adam_array_path_is_tensor_path(opts, cls, dtype):
    (p_on, v_on), (p_off, v_off) = _both_paths(
        lambda ps: getattr(eager.optim, cls)(ps, lr=0.05, **opts), dtype)
    for a, b in zip(p_on, p_off):
        np.testing.assert_array_equal(a, b)
    assert v_on == v_off


def test_array_path_runs(monkeypatch):
    """The steady-state steps of a plain float32 model take the array path (not a fallback):
    with the Tensor namespace gone, SGD's and Adam's steps still run."""
    ws, _ = _problem(np.float32)
    p = eager.tensor(ws[0], requires_grad=True)
    p.grad = eager.ones_like(p)
    adam = eager.optim.Adam([p], lr=0.1, amsgrad=True)
    sgd = eager.optim.SGD([p], lr=0.1, momentum=0.9)
    sgd.step()  # (creates the momentum buffer: the Tensor path)
    before = p.detach().numpy().copy()
    monkeypatch.setattr(update_rules, "TensorOps", None)
    monkeypatch.setattr(sgd_module, "TensorOps", None)
    adam.step()
    sgd.step()
    assert not np.array_equal(before, p.detach().numpy())


def test_array_path_declines_shared_and_hooked():
    p = eager.tensor(np.ones(3, np.float32), requires_grad=True)
    p.grad = eager.ones(3)
    assert arrays.ArrayOps.take(p, {}) is not None
    p.grad = p.detach()  # (the grad shares the parameter's memory: the Tensor path runs)
    assert arrays.ArrayOps.take(p, {}) is None
    p.grad = eager.ones(3, dtype=eager.float64)  # another dtype
    assert arrays.ArrayOps.take(p, {}) is None
    p.grad = eager.ones(3)
    assert arrays.ArrayOps.take(p, {"exp_avg": eager.ones(4)}) is None  # another shape


@pytest.mark.parametrize("opts", SGD_OPTIONS[::3], ids=str)
def test_sgd_matches_torch(opts):
    torch = pytest.importorskip("torch")
    ours, _ = _run(eager, lambda ps: eager.optim.SGD(ps, lr=0.1, **opts), np.float32)
    ref, _ = _run(torch, lambda ps: torch.optim.SGD(ps, lr=0.1, **opts), np.float32)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("cls", ["Adam", "AdamW"])
@pytest.mark.parametrize("opts", ADAM_OPTIONS, ids=str)
def test_adam_matches_torch(opts, cls):
    torch = pytest.importorskip("torch")
    ours, _ = _run(eager, lambda ps: getattr(eager.optim, cls)(ps, lr=0.05, **opts),
                   np.float32)
    ref, _ = _run(torch, lambda ps: getattr(torch.optim, cls)(ps, lr=0.05, **opts),
                  np.float32)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
