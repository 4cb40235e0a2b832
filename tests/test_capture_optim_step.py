"""`opt.step()` of SGD, Adam and AdamW under `capture.compile` (capture/optim_forms.py).

Compiled training runs are compared with eager runs of the same model, data and optimizer:
parameters and every state tensor bit for bit, the state's key order, over 5 steps whose lr
changes between steps; graph and break counts through `capture.explain`; the step graph is
not recompiled when the lr changes. A separate test compares with torch.optim when torch is
installed.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest

import capture
import eager as torch
import eager.nn.functional as F
from eager import nn


def _data(steps, seed=1, n_in=6, n_out=3):
    rng = np.random.default_rng(seed)
    return [(torch.tensor(rng.standard_normal((8, n_in)).astype(np.float32)),
             torch.tensor(rng.standard_normal((8, n_out)).astype(np.float32)))
            for _ in range(steps)]


def _model(dtype=None):
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 3))
    return m.to(dtype) if dtype is not None else m


def _train_fn(m, opt):
    def train(x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss

    return train


def _entries(compiled) -> int:
    return sum(len(cf.entries) for cf in compiled.__wick_compiled__.all_functions())


def _step_fn(opt):
    def step():
        opt.step()
        opt.zero_grad()

    return step


def _run(make_opt, compiled, steps=5, decay=0.7, dtype=None, whole=False):
    """(model, optimizer, entries after step 2, entries at the end) of `steps` training
    steps; the lr of every group is multiplied by `decay` after each step. Only the step
    (`opt.step(); opt.zero_grad()`) is compiled, after an eager forward and backward (the
    grads are eager's: the optimizer alone is compared), or, with `whole`, the whole
    training step (`_train_fn`)."""
    m = _model(dtype)
    opt = make_opt(m.parameters())
    f = _train_fn(m, opt) if whole else _step_fn(opt)
    if compiled:
        f = capture.compile(f)
    counts = []
    for x, y in _data(steps):
        if dtype is not None:
            x, y = x.to(dtype), y.to(dtype)
        if whole:
            f(x, y)
        else:
            F.mse_loss(m(x), y).backward()
            f()
        for group in opt.param_groups:
            group["lr"] *= decay
        counts.append(_entries(f) if compiled else 0)
    if compiled:  # (the step was captured: no break but backward's)
        reasons = [r.reason for cf in f.__wick_compiled__.all_functions()
                   for r in cf.break_reasons]
        assert all("backward" in r for r in reasons) and (whole or not reasons), reasons
    return m, opt, counts[1], counts[-1]


def _bits(t):
    return t.dtype, tuple(t.shape), t.detach().numpy().tobytes()


def _assert_same_state(me, oe, mc, oc):
    for (name, a), b in zip(me.named_parameters(), mc.parameters()):
        assert _bits(a) == _bits(b), name
    se, sc = oe.state_dict()["state"], oc.state_dict()["state"]
    assert list(se) == list(sc)
    for k in se:
        assert list(se[k]) == list(sc[k])  # (key order, as eager made them)
        for key in se[k]:
            assert _bits(se[k][key]) == _bits(sc[k][key]), (k, key)


SGD_CASES = [{"momentum": mo, "dampening": da, "nesterov": ne, "weight_decay": wd, "maximize": mx}
             for mo, da, ne, wd, mx in itertools.product(
                 [0, 0.9], [0, 0.1], [False, True], [0, 0.01], [False, True])
             if not (ne and (mo == 0 or da != 0))]
ADAM_CASES = [(cls, {"amsgrad": am, "weight_decay": wd, "maximize": mx, "betas": (b1, 0.999)})
              for cls, am, wd, mx, b1 in itertools.product(
                  ["Adam", "AdamW"], [False, True], [0, 0.01], [False, True], [0.9, 0.3])]


@pytest.mark.parametrize("kw", SGD_CASES, ids=[
    "-".join(f"{k}={v}" for k, v in c.items()) for c in SGD_CASES])
def test_sgd_matches_eager(kw):
    def make(p):
        return torch.optim.SGD(p, lr=0.1, **kw)

    me, oe, _, _ = _run(make, False)
    mc, oc, early, late = _run(make, True)
    _assert_same_state(me, oe, mc, oc)
    assert early == late  # (the lr changed after every step: no recompile)


@pytest.mark.parametrize("cls,kw", ADAM_CASES, ids=[
    c + "-" + "-".join(f"{k}={v}" for k, v in d.items()) for c, d in ADAM_CASES])
def test_adam_matches_eager(cls, kw):
    def make(p):
        return getattr(torch.optim, cls)(p, lr=0.01, **kw)

    me, oe, _, _ = _run(make, False)
    mc, oc, early, late = _run(make, True)
    _assert_same_state(me, oe, mc, oc)
    assert early == late
    assert float(oc.state[next(mc.parameters())]["step"]) == 5.0


def test_float64_parameters_and_two_groups():
    def make(p):
        p = list(p)
        return torch.optim.AdamW([{"params": p[:2], "lr": 0.02, "weight_decay": 0.1},
                                  {"params": p[2:], "betas": (0.8, 0.99), "amsgrad": True}],
                                 lr=0.01)

    me, oe, _, _ = _run(make, False, dtype=torch.float64)
    mc, oc, early, late = _run(make, True, dtype=torch.float64)
    _assert_same_state(me, oe, mc, oc)
    assert early == late


def _stepped_pair(make_opt):
    """Two equal models with grads from one eager backward, and their optimizers."""
    out = []
    for _ in range(2):
        m = _model()
        x, y = _data(1)[0]
        F.mse_loss(m(x), y).backward()
        out.append((m, make_opt(m.parameters())))
    return out


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=0.01),
], ids=["sgd", "adam"])
def test_step_alone_is_one_graph(make_opt):
    """`opt.step(); opt.zero_grad()` alone: one graph, no break, on the first call (which
    creates the state) and on later ones; the grads are None afterwards, as eagerly."""
    (me, oe), (mc, oc) = _stepped_pair(make_opt)

    def step():
        oc.step()
        oc.zero_grad()

    ex = capture.explain(step)()
    assert (ex.graph_count, ex.graph_break_count, ex.break_reasons) == (1, 0, []), str(ex)
    oe.step()
    oe.zero_grad()
    _assert_same_state(me, oe, mc, oc)
    assert all(p.grad is None for p in mc.parameters())
    assert oc._opt_called and not oc._in_step


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda p: torch.optim.AdamW(p, lr=0.01, amsgrad=True),
], ids=["sgd", "adamw"])
def test_whole_train_step_matches_eager(make_opt):
    """forward, backward (a break) and step compiled: the compiled forward's kernels round
    differently from eager's, so the results agree to float32 rounding, not bit for bit."""
    me, oe, _, _ = _run(make_opt, False, whole=True)
    mc, oc, early, late = _run(make_opt, True, whole=True)
    for a, b in zip(me.parameters(), mc.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    for p, q in zip(me.parameters(), mc.parameters()):
        assert list(oe.state[p]) == list(oc.state[q])
        for key, t in oe.state[p].items():
            np.testing.assert_allclose(oc.state[q][key].numpy(), t.numpy(), rtol=1e-5,
                                       atol=1e-6)
    assert early == late


def test_train_step_breaks_only_at_backward():
    m = _model()
    opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)
    ex = capture.explain(_train_fn(m, opt))(*_data(1)[0])
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), str(ex)
    assert [r.source_line for r in ex.unique_break_reasons] == ["loss.backward()"]


def test_parameters_without_grad_are_skipped():
    """A frozen first layer (no grad: skipped, no state); unfrozen later, its grads appear
    and its state is created then (a new entry), as eagerly."""
    runs = []
    for compiled in (False, True):
        m = _model()
        opt = torch.optim.Adam(m.parameters(), lr=0.01)
        f = _step_fn(opt)
        f = capture.compile(f) if compiled else f
        m[0].weight.requires_grad_(False)
        for i, (x, y) in enumerate(_data(4)):
            if i == 2:
                m[0].weight.requires_grad_(True)
            F.mse_loss(m(x), y).backward()
            f()
        runs.append((m, opt))
    _assert_same_state(*runs[0], *runs[1])


def test_scheduler_between_steps_takes_effect_without_recompile():
    runs = []
    for compiled in (False, True):
        m = _model()
        opt = torch.optim.SGD(m.parameters(), lr=0.1, momentum=0.9, nesterov=True)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        f = _step_fn(opt)
        f = capture.compile(f) if compiled else f
        counts = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # (no "lr_scheduler.step() before optimizer.step()")
            for x, y in _data(5):
                F.mse_loss(m(x), y).backward()
                f()
                sched.step()
                counts.append(_entries(f) if compiled else 0)
        runs.append((m, opt))
    _assert_same_state(*runs[0], *runs[1])
    assert counts[1] == counts[-1]


def _compare_break(body, make_opt, why):
    """`body(opt)` compiled: one break at the step naming `why`; the same result as eager."""
    (me, oe), (mc, oc) = _stepped_pair(make_opt)
    ex = capture.explain(lambda: body(oc))()
    assert any(why in r.reason for r in ex.break_reasons), str(ex)
    body(oe)
    _assert_same_state(me, oe, mc, oc)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_half_parameters_are_a_named_break(dtype):
    """Half-precision parameters step eagerly (eager rounds after every op; a fused kernel
    would keep float32 intermediates): the same bits as eager."""
    def make(p):
        return torch.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=0.01)

    (me, oe), (mc, oc) = _stepped_pair(make)
    for m in (me, mc):
        m.to(dtype)
        for p in m.parameters():
            p.grad = p.grad.to(dtype)
    ex = capture.explain(lambda: oc.step())()
    assert any(dtype.name in r.reason for r in ex.break_reasons), str(ex)
    oe.step()
    _assert_same_state(me, oe, mc, oc)


def test_closure_is_a_named_break():
    _compare_break(lambda o: o.step(lambda: None), lambda p: torch.optim.SGD(p, lr=0.1),
                   "closure")


def test_step_hooks_are_a_named_break():
    def make(p):
        opt = torch.optim.Adam(p, lr=0.01)
        opt.register_step_post_hook(lambda o, a, k: None)
        return opt

    _compare_break(lambda o: o.step(), make, "hooks")


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=torch.tensor(0.1), momentum=0.5),
    lambda p: torch.optim.Adam(p, lr=torch.tensor(0.01)),
    lambda p: torch.optim.RMSprop(p, lr=torch.tensor(0.01), momentum=0.9),
], ids=["sgd", "adam", "rmsprop"])
def test_tensor_lr_in_the_graph(make_opt):
    """torch's compiled-optimizer tutorial: `lr=torch.tensor(0.01)` with a scheduler inside
    the compiled function (`opt.step(); sched.step()`): the step is one graph whose lr is read
    on every call (the scheduler's `fill_` takes effect without a recompile), the parameters
    and state equal eager's bit for bit over 5 steps (was a named break: 0 graphs)."""
    runs, counts = [], []
    for compiled in (False, True):
        m = _model()
        opt = make_opt(m.parameters())
        sched = torch.optim.lr_scheduler.LinearLR(opt, total_iters=5)

        def fn(opt=opt, sched=sched):
            opt.step()
            sched.step()

        f = capture.compile(fn) if compiled else fn
        for x, y in _data(5):
            F.mse_loss(m(x), y).backward()
            f()
            counts.append(_entries(f) if compiled else 0)
        runs.append((m, opt))
    _assert_same_state(*runs[0], *runs[1])
    assert runs[0][1].param_groups[0]["lr"].item() == runs[1][1].param_groups[0]["lr"].item()
    assert counts[6] == counts[-1]
    (_, o), = _stepped_pair(make_opt)[1:]
    assert capture.explain(o.step)().graph_count == 1


def test_tensor_lr_with_grad_is_a_named_break():
    _compare_break(lambda o: o.step(), lambda p: torch.optim.SGD(
        p, lr=torch.tensor(0.1, requires_grad=True), momentum=0.5), "lr=")


def test_groups_changed_in_the_frame_is_a_named_break():
    def body(o):
        o.param_groups[0]["lr"] = 0.5
        o.step()

    _compare_break(body, lambda p: torch.optim.SGD(p, lr=0.1), "changed earlier")


@pytest.mark.parametrize("make_opt", [
    lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
    lambda p: torch.optim.Adam(p, lr=0.01, amsgrad=True),
], ids=["sgd", "adam"])
def test_two_steps_then_forward_in_one_function(make_opt):
    """Two steps in one compiled function (the second after the first created the state: a
    named break, then a graph on later calls), then a forward that reads the new weights."""
    (me, oe), (mc, oc) = _stepped_pair(make_opt)
    x = _data(1, seed=5)[0][0]

    def body(m, o):
        o.step()
        o.step()
        return m(x)

    f = capture.compile(body)
    for _ in range(3):
        want, got = body(me, oe), f(mc, oc)  # (the compiled forward rounds differently)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                                   atol=1e-6)
        _assert_same_state(me, oe, mc, oc)


@pytest.mark.parametrize("name,kw", [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.01, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "maximize": True}),
])
def test_against_torch(name, kw):
    """Compiled wick training against torch.optim's eager steps: within float32 rounding."""
    T = pytest.importorskip("torch")
    m = _model()
    tm = T.nn.Sequential(T.nn.Linear(6, 10), T.nn.Tanh(), T.nn.Linear(10, 3))
    with T.no_grad():
        for a, b in zip(tm.parameters(), m.parameters()):
            a.copy_(T.tensor(b.detach().numpy()))
    opt = getattr(torch.optim, name)(m.parameters(), **kw)
    topt = getattr(T.optim, name)(tm.parameters(), **kw, foreach=False)
    f = capture.compile(_train_fn(m, opt))
    for x, y in _data(5):
        f(x, y)
        topt.zero_grad()
        T.nn.functional.mse_loss(tm(T.tensor(x.numpy())), T.tensor(y.numpy())).backward()
        topt.step()
    for a, b in zip(tm.parameters(), m.parameters()):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_counts_as_torch_dynamo():
    """Graph and break counts of the step alone and of the whole training step, as
    `torch._dynamo.explain` counts them on the same code with torch.optim.Adam."""
    T = pytest.importorskip("torch")
    counts = {}
    for lib, explain in ((torch, capture.explain), (T, T._dynamo.explain)):
        lib.manual_seed(0)
        m = lib.nn.Sequential(lib.nn.Linear(6, 10), lib.nn.Tanh(), lib.nn.Linear(10, 3))
        opt = lib.optim.Adam(m.parameters(), lr=0.01)
        x, y = lib.randn(8, 6), lib.randn(8, 3)
        m(x).sum().backward()

        def step(opt=opt):
            opt.step()
            opt.zero_grad()

        got = [explain(step)()]
        if lib is T:
            T._dynamo.reset()
        got.append(explain(_train_fn(m, opt))(x, y))
        counts[lib.__name__] = [(e.graph_count, e.graph_break_count) for e in got]
    assert counts["eager"] == counts["torch"] == [(1, 0), (2, 1)], counts
