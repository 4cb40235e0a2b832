"""eager.optim.lr_scheduler: each scheduler's learning rates over 20 epochs against its closed
form (written here from the PyTorch docs) and against torch.optim.lr_scheduler (when
importable), chaining, step(epoch), state_dict resume, warnings and errors."""

import copy
import math
import warnings
from bisect import bisect_right

import numpy as np
import pytest

import eager
from eager import optim
from eager.optim import lr_scheduler as S

try:
    import torch
except ImportError:  # an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

EPOCHS = 20
BASES = (0.1, 0.03)  # two param groups with different lrs


def halve(epoch):
    return 0.5 ** (epoch // 3)


# (class name, kwargs, closed form f(base_lr, epoch))
CASES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}, lambda b, e: b * 0.5 ** (e // 3)),
    ("MultiStepLR", {"milestones": [2, 5, 5, 11], "gamma": 0.3},
     lambda b, e: b * 0.3 ** bisect_right([2, 5, 5, 11], e)),
    ("ExponentialLR", {"gamma": 0.9}, lambda b, e: b * 0.9 ** e),
    ("CosineAnnealingLR", {"T_max": 7}, lambda b, e: b * (1 + math.cos(math.pi * e / 7)) / 2),
    ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.01},
     lambda b, e: 0.01 + (b - 0.01) * (1 + math.cos(math.pi * e / 5)) / 2),
    ("LambdaLR", {"lr_lambda": halve}, lambda b, e: b * halve(e)),
    ("LinearLR", {}, lambda b, e: b * (1 / 3 + (2 / 3) * min(5, e) / 5)),
    ("LinearLR", {"start_factor": 0.5, "end_factor": 0.1, "total_iters": 8},
     lambda b, e: b * (0.5 - 0.4 * min(8, e) / 8)),
    ("ConstantLR", {"factor": 0.25, "total_iters": 4}, lambda b, e: b * (0.25 if e < 4 else 1)),
]
IDS = [f"{n}-{i}" for i, (n, _, _) in enumerate(CASES)]


def make(lib, name, kw, bases=BASES):
    params = [lib.zeros(1, requires_grad=True) for _ in bases]
    opt = lib.optim.SGD([{"params": [p], "lr": b} for p, b in zip(params, bases)])
    return opt, getattr(lib.optim.lr_scheduler, name)(opt, **kw)


def schedule(lib, name, kw, epochs=EPOCHS):
    opt, sched = make(lib, name, kw)
    lrs = [sched.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr())
        assert lrs[-1] == [g["lr"] for g in opt.param_groups]
    return np.array(lrs)


@pytest.mark.parametrize(("name", "kw", "closed"), CASES, ids=IDS)
def test_schedule_matches_closed_form(name, kw, closed):
    got = schedule(eager, name, kw)
    want = np.array([[closed(b, e) for b in BASES] for e in range(EPOCHS + 1)])
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@needs_torch
@pytest.mark.parametrize(("name", "kw", "closed"), CASES, ids=IDS)
def test_schedule_matches_torch(name, kw, closed):
    np.testing.assert_allclose(schedule(eager, name, kw), schedule(torch, name, kw),
                               rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize(("name", "kw", "closed"), CASES, ids=IDS)
def test_step_with_epoch_uses_the_closed_form(name, kw, closed):
    opt, sched = make(eager, name, kw)
    opt.step()
    for e in (4, 9, 2):
        with pytest.warns(UserWarning, match="epoch parameter"):
            sched.step(e)
        np.testing.assert_allclose(sched.get_last_lr(), [closed(b, e) for b in BASES],
                                   rtol=1e-12, atol=1e-15)


def test_multiplicative_lr():
    got = schedule(eager, "MultiplicativeLR", {"lr_lambda": lambda e: 0.9})
    want = np.array([[b * 0.9 ** e for b in BASES] for e in range(EPOCHS + 1)])
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_lambda_lr_one_function_per_group():
    opt, sched = make(eager, "LambdaLR", {"lr_lambda": [lambda e: 1.0 / (e + 1),
                                                       lambda e: 0.5]})
    opt.step()
    sched.step()
    sched.step()
    np.testing.assert_allclose(sched.get_last_lr(), [0.1 / 3, 0.015])
    with pytest.raises(ValueError, match="Expected 2 lr_lambdas, but got 1"):
        make(eager, "LambdaLR", {"lr_lambda": [halve]})


def test_chained_schedulers_compose_like_torch():
    """Two schedulers on one optimizer multiply their effects (the chainable form)."""
    runs = []
    for lib in [eager] + ([torch] if torch is not None else []):
        opt, s1 = make(lib, "StepLR", {"step_size": 4, "gamma": 0.5})
        s2 = lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)
        lrs = []
        for _ in range(12):
            opt.step()
            s1.step()
            s2.step()
            lrs.append([g["lr"] for g in opt.param_groups])
        runs.append(np.array(lrs))
    e = np.arange(1, 13)[:, None]
    np.testing.assert_allclose(runs[0], np.array(BASES) * 0.5 ** (e // 4) * 0.9 ** e,
                               rtol=1e-12)
    if len(runs) == 2:
        np.testing.assert_allclose(runs[0], runs[1], rtol=1e-14)


def test_base_lrs_initial_lr_and_resume():
    opt, sched = make(eager, "StepLR", {"step_size": 2, "gamma": 0.1})
    assert sched.base_lrs == list(BASES) and sched.last_epoch == 0
    assert [g["initial_lr"] for g in opt.param_groups] == list(BASES)
    for _ in range(5):
        opt.step()
        sched.step()
    saved = copy.deepcopy(sched.state_dict())
    assert "optimizer" not in saved and saved["last_epoch"] == 5
    assert saved["base_lrs"] == list(BASES)
    np.testing.assert_allclose(saved["_last_lr"], [b * 0.1 ** 2 for b in BASES])
    # a second scheduler keeps the groups' initial_lr (setdefault) as its base lrs
    again = S.ExponentialLR(opt, gamma=0.5)
    assert again.base_lrs == list(BASES)
    # resuming with last_epoch needs initial_lr: present here, so it resumes the closed form
    resumed = S.StepLR(opt, step_size=2, gamma=0.1, last_epoch=5)
    assert resumed.last_epoch == 6


def test_state_dict_round_trip_continues_identically():
    a_opt, a = make(eager, "CosineAnnealingLR", {"T_max": 6})
    for _ in range(4):
        a_opt.step()
        a.step()
    b_opt, b = make(eager, "CosineAnnealingLR", {"T_max": 6})
    b_opt.load_state_dict(copy.deepcopy(a_opt.state_dict()))
    b.load_state_dict(copy.deepcopy(a.state_dict()))
    for _ in range(6):
        a_opt.step()
        b_opt.step()
        a.step()
        b.step()
        assert a.get_last_lr() == b.get_last_lr()


def test_errors_and_warnings():
    p = eager.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    with pytest.raises(TypeError, match="is not an Optimizer"):
        S.StepLR(object(), step_size=2)
    with pytest.raises(KeyError, match="initial_lr"):
        S.StepLR(opt, step_size=2, last_epoch=3)
    with pytest.raises(ValueError, match="Starting multiplicative factor"):
        S.LinearLR(opt, start_factor=0)
    with pytest.raises(ValueError, match="Ending multiplicative factor"):
        S.LinearLR(opt, end_factor=1.5)
    with pytest.raises(ValueError, match="Constant multiplicative factor"):
        S.ConstantLR(opt, factor=2)
    sched = S.ExponentialLR(opt, gamma=0.5)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()
    opt2 = optim.SGD([p], lr=0.1)
    sched2 = S.ExponentialLR(opt2, gamma=0.5)
    opt2.step()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        sched2.step()  # the right order: no warning
    with pytest.warns(UserWarning, match="get_last_lr"):
        sched2.get_lr()


def test_scheduler_drives_training_lr():
    """The lr a scheduler sets is the one the optimizer's next step uses."""
    p = eager.tensor([1.0], requires_grad=True)
    opt = optim.SGD([p], lr=1.0)
    sched = S.StepLR(opt, step_size=1, gamma=0.5)
    want = 1.0
    for e in range(4):
        p.grad = eager.tensor([1.0])
        opt.step()
        want -= 0.5 ** e
        sched.step()
    np.testing.assert_allclose(p.detach().numpy(), [want])


# ---------------------------------------------------------------- ReduceLROnPlateau

# a validation metric that improves, stalls, improves a little, then stalls for good
_METRICS = [1.0, 0.8, 0.7, 0.7, 0.71, 0.7, 0.69999, 0.69, 0.69, 0.69, 0.69, 0.69, 0.69,
            0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
_PLATEAU = [{}, {"patience": 2}, {"patience": 1, "cooldown": 2, "factor": 0.5},
            {"mode": "max", "patience": 2}, {"threshold_mode": "abs", "threshold": 0.05,
                                              "patience": 1},
            {"patience": 0, "min_lr": [0.02, 0.3]}]


def _plateau_lrs(lib, kw):
    p = [lib.zeros(2, requires_grad=True), lib.zeros(2, requires_grad=True)]
    opt = lib.optim.SGD([{"params": [p[0]]}, {"params": [p[1]], "lr": 0.5}], lr=0.1)
    sched = lib.optim.lr_scheduler.ReduceLROnPlateau(opt, **kw)
    out = []
    for m in _METRICS:
        sched.step(m)
        out.append([g["lr"] for g in opt.param_groups] + [sched.num_bad_epochs,
                                                          sched.cooldown_counter])
    return out


def _plateau_by_hand(kw):
    """The documented rule, written out (mode min/max, rel/abs threshold, cooldown)."""
    mode, factor = kw.get("mode", "min"), kw.get("factor", 0.1)
    patience, cooldown = kw.get("patience", 10), kw.get("cooldown", 0)
    thr, rel = kw.get("threshold", 1e-4), kw.get("threshold_mode", "rel") == "rel"
    mins = kw.get("min_lr", 0)
    mins = mins if isinstance(mins, list) else [mins, mins]
    lrs, best, bad, cool, out = [0.1, 0.5], (math.inf if mode == "min" else -math.inf), 0, 0, []
    for m in _METRICS:
        if mode == "min":
            better = m < (best * (1 - thr) if rel else best - thr)
        else:
            better = m > (best * (1 + thr) if rel else best + thr)
        best, bad = (m, 0) if better else (best, bad + 1)
        if cool > 0:
            cool, bad = cool - 1, 0
        if bad > patience:
            lrs = [max(lr * factor, lo) if lr - max(lr * factor, lo) > 1e-8 else lr
                   for lr, lo in zip(lrs, mins)]
            cool, bad = cooldown, 0
        out.append(lrs + [bad, cool])
    return out


@pytest.mark.parametrize("kw", _PLATEAU, ids=str)
def test_reduce_lr_on_plateau(kw):
    got = _plateau_lrs(eager, kw)
    np.testing.assert_allclose(np.array(got, float), np.array(_plateau_by_hand(kw), float),
                               rtol=1e-12)
    if torch is not None:
        np.testing.assert_allclose(np.array(got, float),
                                   np.array(_plateau_lrs(torch, kw), float), rtol=1e-12)


def test_reduce_lr_on_plateau_errors_and_state():
    opt = optim.SGD([eager.zeros(1, requires_grad=True)], lr=0.1)
    with pytest.raises(ValueError, match="Factor should be < 1.0."):
        S.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(ValueError, match="mode avg is unknown!"):
        S.ReduceLROnPlateau(opt, mode="avg")
    with pytest.raises(ValueError, match="threshold mode x is unknown!"):
        S.ReduceLROnPlateau(opt, threshold_mode="x")
    with pytest.raises(ValueError, match="expected 1 min_lrs, got 2"):
        S.ReduceLROnPlateau(opt, min_lr=[0, 0])
    a = S.ReduceLROnPlateau(opt, patience=0)
    a.step(eager.tensor(1.0))
    a.step(2.0)
    b = S.ReduceLROnPlateau(optim.SGD([eager.zeros(1, requires_grad=True)], lr=0.1),
                            patience=0)
    b.load_state_dict(a.state_dict())
    assert b.best == a.best == 1.0 and b.last_epoch == 2 and b.get_last_lr() == [0.1 * 0.1]
