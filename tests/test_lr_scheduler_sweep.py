"""Every eager.optim.lr_scheduler scheduler against torch's (issue 16's API sweep): the lr
sequence (and the momentum / beta1 that CyclicLR and OneCycleLR cycle) over 40 steps with
two parameter groups, for each option, for compositions (SequentialLR, ChainedScheduler,
nested), for fractional `step(epoch)` of CosineAnnealingWarmRestarts, and after a state_dict
round trip mid-schedule; errors against torch's."""

import warnings

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

STEPS = 40


def make_opt(lib, kind="SGD"):
    p1, p2 = lib.zeros(2, requires_grad=True), lib.zeros(1, requires_grad=True)
    groups = [{"params": [p1]}, {"params": [p2], "lr": 0.05}]
    if kind == "Adam":
        return lib.optim.Adam(groups, lr=0.1)
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def momenta(opt):
    return [g["betas"][0] if "betas" in g else g["momentum"] for g in opt.param_groups]


SCHEDULERS = {
    "OneCycleLR": [{"max_lr": 1.0, "total_steps": STEPS + 1},
                   {"max_lr": [1.0, 0.5], "epochs": 4, "steps_per_epoch": 11, "pct_start": 0.25,
                        "anneal_strategy": "linear", "div_factor": 10.0, "final_div_factor": 100.0},
                   {"max_lr": 0.3, "total_steps": STEPS + 1, "three_phase": True,
                        "base_momentum": 0.8, "max_momentum": [0.9, 0.95]},
                   {"max_lr": 0.3, "total_steps": STEPS + 1, "cycle_momentum": False}],
    "CyclicLR": [{"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 5},
                 {"base_lr": [0.01, 0.02], "max_lr": 0.1, "step_size_up": 4, "step_size_down": 7,
                      "mode": "triangular2"},
                 {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 3, "mode": "exp_range",
                  "gamma": 0.95},
                 {"base_lr": 0.01, "max_lr": 0.1, "step_size_up": 6, "cycle_momentum": False,
                      "scale_fn": lambda x: 1 / (1 + x), "scale_mode": "iterations"}],
    "CosineAnnealingWarmRestarts": [{"T_0": 5}, {"T_0": 3, "T_mult": 2, "eta_min": 0.001}],
    "PolynomialLR": [{}, {"total_iters": 25, "power": 2.0}],
    "StepLR": [{"step_size": 7, "gamma": 0.5}],
    "MultiStepLR": [{"milestones": [5, 9, 9, 20]}],
    "ConstantLR": [{"factor": 0.5, "total_iters": 6}],
    "LinearLR": [{"start_factor": 0.2, "total_iters": 10}],
    "ExponentialLR": [{"gamma": 0.93}],
    "CosineAnnealingLR": [{"T_max": 12, "eta_min": 0.001}],
}
ALL = [(n, i) for n, cases in SCHEDULERS.items() for i in range(len(cases))]


def run(lib, build, steps=STEPS, kind="SGD"):
    opt = make_opt(lib, kind)
    sched = build(lib, opt)
    seq = [(list(sched.get_last_lr()), momenta(opt))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(steps):
            opt.step()
            sched.step()
            seq.append((list(sched.get_last_lr()), momenta(opt)))
    return seq, opt, sched


def assert_same(a, b):
    np.testing.assert_allclose(np.array([x[0] for x in a], dtype=float),
                               np.array([x[0] for x in b], dtype=float), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(np.array([x[1] for x in a], dtype=float),
                               np.array([x[1] for x in b], dtype=float), rtol=1e-12)


@pytest.mark.parametrize("name,i", ALL)
@pytest.mark.parametrize("kind", ["SGD", "Adam"])
def test_sequence_matches_torch(name, i, kind):
    kw = SCHEDULERS[name][i]

    def build(lib, opt):
        return getattr(lib.optim.lr_scheduler, name)(opt, **kw)

    ours, _, _ = run(eager, build, kind=kind)
    ref, _, _ = run(torch, build, kind=kind)
    assert_same(ours, ref)


COMPOSITES = {
    "sequential": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5),
              lib.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10),
              lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)], milestones=[5, 15]),
    "sequential_constant_step": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=2),
              lib.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)], milestones=[3]),
    "chained": lambda lib, opt: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.ConstantLR(opt, factor=0.1, total_iters=4),
         lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.9)]),
    "chained_poly_step": lambda lib, opt: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.PolynomialLR(opt, total_iters=30, power=0.5),
         lib.optim.lr_scheduler.MultiStepLR(opt, milestones=[8, 16])], optimizer=opt),
    "sequential_of_chained": lambda lib, opt: lib.optim.lr_scheduler.SequentialLR(
        opt, [lib.optim.lr_scheduler.ChainedScheduler(
            [lib.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=4),
             lib.optim.lr_scheduler.ExponentialLR(opt, gamma=0.95)]),
            lib.optim.lr_scheduler.PolynomialLR(opt, total_iters=20)], milestones=[6]),
}


@pytest.mark.parametrize("name", sorted(COMPOSITES))
def test_composites_match_torch(name):
    ours, _, _ = run(eager, COMPOSITES[name])
    ref, _, _ = run(torch, COMPOSITES[name])
    assert_same(ours, ref)


@pytest.mark.parametrize("name", ["OneCycleLR", "CyclicLR", "CosineAnnealingWarmRestarts",
                                  "PolynomialLR", "sequential", "chained"])
def test_state_dict_round_trip(name):
    if name in COMPOSITES:
        build = COMPOSITES[name]
    else:
        def build(lib, opt):
            return getattr(lib.optim.lr_scheduler, name)(opt, **SCHEDULERS[name][0])
    ref, _, _ = run(torch, build)
    _, opt, sched = run(eager, build, steps=17)
    saved = sched.state_dict()
    opt2_groups = opt.state_dict()
    fresh_opt = make_opt(eager)
    fresh = build(eager, fresh_opt)
    fresh_opt.load_state_dict(opt2_groups)
    fresh.load_state_dict(saved)
    seq = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(STEPS - 17):
            fresh_opt.step()
            fresh.step()
            seq.append((list(fresh.get_last_lr()), momenta(fresh_opt)))
    assert_same(seq, ref[18:])


def test_warm_restarts_fractional_epochs():
    seqs = []
    for lib in (eager, torch):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(opt, T_0=3, T_mult=2)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for k in range(60):
                sched.step(k / 4)
                out.append((list(sched.get_last_lr()), momenta(opt)))
        seqs.append(out)
    assert_same(*seqs)


@pytest.mark.parametrize("build,exc", [
    (lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, max_lr=1.0), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=10, pct_start=1),
     ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.OneCycleLR(o, 1.0, total_steps=10,
                                                      anneal_strategy="exp"), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.CyclicLR(o, 0.1, 1.0, mode="sawtooth"), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=0), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, 2, T_mult=1.5),
     ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.SequentialLR(
        o, [lib.optim.lr_scheduler.StepLR(o, 2)], milestones=[3]), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.ChainedScheduler([]), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.ChainedScheduler(
        [lib.optim.lr_scheduler.ReduceLROnPlateau(o)]), ValueError),
    (lambda lib, o: lib.optim.lr_scheduler.CyclicLR(
        lib.optim.Adagrad([lib.zeros(1, requires_grad=True)]), 0.1, 1.0), ValueError),
])
def test_errors_match_torch(build, exc):
    with pytest.raises(exc) as ref:
        build(torch, make_opt(torch))
    with pytest.raises(exc) as ours:
        build(eager, make_opt(eager))
    assert str(ours.value) == str(ref.value)


def test_one_cycle_past_the_end():
    for lib in (eager, torch):
        opt = make_opt(lib)
        sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=3)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                sched.step()
            with pytest.raises(ValueError, match="Tried to step 4 times"):
                sched.step()
