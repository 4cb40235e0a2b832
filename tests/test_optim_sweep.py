"""Every eager.optim optimizer against torch.optim (issue 16's API sweep): the same
parameters (float64, and complex where torch supports it) after several steps from the same
initial values and gradients, with torch's defaults and with each option (weight_decay,
maximize, momentum variants, decoupled decay, foreach/fused flags accepted), parameter groups
with their own options, state_dict round trips in both directions (torch's layout loaded
into wick and wick's into torch), LBFGS with and without the strong-Wolfe line search on
Rosenbrock and a quadratic, swa_utils and swap_in_optimizer_params_and_state."""

import numpy as np
import pytest

import eager
from eager import optim

torch = pytest.importorskip("torch")

STEPS = 8
RTOL = 1e-5


def to_torch(x):
    if isinstance(x, eager.Tensor):
        return torch.from_numpy(np.array(x.numpy()))
    if isinstance(x, dict):
        return {k: to_torch(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_torch(v) for v in x)
    return x


def to_eager(x):
    if isinstance(x, torch.Tensor):
        return eager.tensor(x.detach().numpy().copy())
    if isinstance(x, dict):
        return {k: to_eager(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(to_eager(v) for v in x)
    return x


def close(a, b, rtol=RTOL, atol=1e-9):
    a = a.numpy() if isinstance(a, eager.Tensor) else np.asarray(a)
    b = b.detach().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def make_params(complex_=False, shapes=((3, 4), (5,), (2, 3))):
    rng = np.random.default_rng(0)
    vals = []
    for s in shapes:
        v = rng.standard_normal(s)
        if complex_:
            v = v + 1j * rng.standard_normal(s)
        vals.append(v)
    ours = [eager.tensor(v.copy(), requires_grad=True) for v in vals]
    ref = [torch.tensor(v.copy(), requires_grad=True) for v in vals]
    return ours, ref


def grads_for(step, params):
    rng = np.random.default_rng(100 + step)
    out = []
    for p in params:
        shape = tuple(p.shape)
        g = rng.standard_normal(shape)
        if p.is_complex():
            g = g + 1j * rng.standard_normal(shape)
        out.append(g)
    return out


def run_steps(opt_w, opt_t, pw, pt, steps=STEPS, start=0):
    for i in range(start, start + steps):
        for a, b, g in zip(pw, pt, grads_for(i, pw)):
            # a gradient that depends on the parameter keeps sign-based methods honest
            a.grad = eager.tensor(g) + a.detach() * 0.5
            b.grad = torch.tensor(g) + b.detach() * 0.5
        opt_w.step()
        opt_t.step()
    for a, b in zip(pw, pt):
        close(a.detach(), b)


def compare_state(opt_w, opt_t, pw, pt):
    for a, b in zip(pw, pt):
        sw, st = opt_w.state[a], opt_t.state[b]
        assert set(sw) == set(st)
        for k in st:
            if isinstance(st[k], torch.Tensor):
                close(sw[k], st[k])
            else:
                assert sw[k] == pytest.approx(st[k])


CASES = {
    "Adadelta": [{}, {"lr": 0.5, "rho": 0.8, "weight_decay": 0.1}, {"maximize": True},
                 {"foreach": False, "capturable": False}],
    "Adafactor": [{}, {"lr": 0.05, "beta2_decay": -0.5, "d": 2.0, "weight_decay": 0.1},
                  {"maximize": True, "eps": (1e-30, 1e-3)}],
    "Adamax": [{}, {"lr": 0.01, "betas": (0.8, 0.9), "weight_decay": 0.1},
               {"maximize": True, "foreach": False}],
    "ASGD": [{}, {"lr": 0.05, "lambd": 1e-2, "alpha": 0.5, "t0": 3, "weight_decay": 0.1},
             {"maximize": True, "t0": 0}],
    "NAdam": [{}, {"lr": 0.01, "momentum_decay": 1e-2, "weight_decay": 0.1},
              {"weight_decay": 0.1, "decoupled_weight_decay": True}, {"maximize": True}],
    "RAdam": [{}, {"lr": 0.01, "betas": (0.5, 0.6), "weight_decay": 0.1},
              {"weight_decay": 0.1, "decoupled_weight_decay": True}, {"maximize": True}],
    "Rprop": [{}, {"lr": 0.05, "etas": (0.3, 1.5), "step_sizes": (1e-3, 0.2)},
              {"maximize": True, "foreach": False}],
    # the existing optimizers, through the same harness (defaults and a few options)
    "SGD": [{"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.1}],
    "Adam": [{"amsgrad": True, "weight_decay": 0.1, "fused": None}],
    "AdamW": [{"maximize": True}],
    "RMSprop": [{"centered": True, "momentum": 0.5}],
    "Adagrad": [{"lr_decay": 0.1, "initial_accumulator_value": 0.2}],
}
ALL = [(name, i) for name, cases in CASES.items() for i in range(len(cases))]
COMPLEX = {"Adadelta", "Adamax", "ASGD", "NAdam", "RAdam", "Rprop"}


@pytest.mark.parametrize("name,i", ALL)
def test_matches_torch(name, i):
    kw = CASES[name][i]
    pw, pt = make_params()
    opt_w = getattr(optim, name)(pw, **kw)
    opt_t = getattr(torch.optim, name)(pt, **to_torch(kw))
    run_steps(opt_w, opt_t, pw, pt)
    compare_state(opt_w, opt_t, pw, pt)


@pytest.mark.parametrize("name", sorted(COMPLEX))
def test_complex_params(name):
    pw, pt = make_params(complex_=True, shapes=((3, 2), (4,)))
    opt_w = getattr(optim, name)(pw, weight_decay=0.1) if name not in ("Rprop",) \
        else optim.Rprop(pw)
    opt_t = getattr(torch.optim, name)(pt, weight_decay=0.1) if name != "Rprop" \
        else torch.optim.Rprop(pt)
    run_steps(opt_w, opt_t, pw, pt, steps=5)


@pytest.mark.parametrize("name", ["Adadelta", "Adafactor", "Adamax", "ASGD", "NAdam", "RAdam",
                                  "Rprop"])
def test_param_groups(name):
    pw, pt = make_params()
    groups_w = [{"params": pw[:2]}, {"params": pw[2:], "lr": 0.3, "maximize": True}]
    groups_t = [{"params": pt[:2]}, {"params": pt[2:], "lr": 0.3, "maximize": True}]
    opt_w = getattr(optim, name)(groups_w)
    opt_t = getattr(torch.optim, name)(groups_t)
    run_steps(opt_w, opt_t, pw, pt, steps=5)
    gw, gt = opt_w.param_groups, opt_t.param_groups
    assert [sorted(g) for g in gw] == [sorted(g) for g in gt]
    for a, b in zip(gw, gt):
        for k in b:
            if k != "params":
                assert a[k] == b[k], k


@pytest.mark.parametrize("name", ["Adadelta", "Adafactor", "Adamax", "ASGD", "NAdam", "RAdam",
                                  "Rprop"])
def test_state_dict_round_trips(name):
    pw, pt = make_params()
    opt_w = getattr(optim, name)(pw)
    opt_t = getattr(torch.optim, name)(pt)
    run_steps(opt_w, opt_t, pw, pt, steps=3)
    # torch's state_dict into a fresh wick optimizer, wick's into a fresh torch one
    pw2 = [eager.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pt]
    pt2 = [torch.tensor(p.detach().numpy().copy(), requires_grad=True) for p in pw]
    opt_w2 = getattr(optim, name)(pw2, lr=123.0)
    opt_t2 = getattr(torch.optim, name)(pt2, lr=123.0)
    opt_w2.load_state_dict(to_eager(opt_t.state_dict()))
    opt_t2.load_state_dict(to_torch(opt_w.state_dict()))
    assert opt_w2.param_groups[0]["lr"] == opt_t.param_groups[0]["lr"]
    run_steps(opt_w2, opt_t2, pw2, pt2, steps=3, start=3)
    run_steps(opt_w, opt_t, pw, pt, steps=3, start=3)
    for a, b in zip(pw, pw2):
        close(a.detach(), b.detach().numpy())


@pytest.mark.parametrize("name,kw,msg", [
    ("Adadelta", {"rho": 1.5}, "Invalid rho value"),
    ("Adamax", {"betas": (1.0, 0.9)}, "Invalid beta parameter at index 0"),
    ("NAdam", {"momentum_decay": -1}, "Invalid momentum_decay value"),
    ("RAdam", {"eps": -1}, "Invalid epsilon value"),
    ("Rprop", {"etas": (1.5, 2.0)}, "Invalid eta values"),
    ("ASGD", {"lr": -1}, "Invalid learning rate"),
    ("Adafactor", {"d": 0.5}, "Clipping threshold d should be >= 1"),
])
def test_argument_errors(name, kw, msg):
    for lib in (optim, torch.optim):
        with pytest.raises(ValueError, match=msg):
            getattr(lib, name)([eager.zeros(2, requires_grad=True)] if lib is optim
                               else [torch.zeros(2, requires_grad=True)], **kw)


# ---------------------------------------------------------------- LBFGS


def rosenbrock(lib, x):
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def quadratic(lib, x):
    a = lib.tensor([[3.0, 0.5, 0.0], [0.5, 2.0, 0.3], [0.0, 0.3, 1.0]], dtype=lib.float64)
    b = lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64)
    return 0.5 * x @ (a @ x) - b @ x


@pytest.mark.parametrize("fn,x0", [(rosenbrock, [-1.5, 2.0]), (quadratic, [1.0, 1.0, 1.0])])
@pytest.mark.parametrize("kw", [{}, {"line_search_fn": "strong_wolfe"},
                                {"history_size": 3, "max_iter": 5, "lr": 0.5},
                                {"line_search_fn": "strong_wolfe", "history_size": 2}])
def test_lbfgs_matches_torch(fn, x0, kw):
    results = []
    for lib, mod in ((eager, optim), (torch, torch.optim)):
        x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
        opt = mod.LBFGS([x], **kw)
        losses = []

        def closure(lib=lib, x=x, opt=opt):
            opt.zero_grad()
            loss = fn(lib, x)
            loss.backward()
            return loss

        # (Rosenbrock without a line search is chaotic: torch's fused multiply-adds and
        # numpy's separate roundings part by 1e-13 after one step, by 1e-4 after four)
        chaotic = fn is rosenbrock and "line_search_fn" not in kw and "history_size" not in kw
        for _ in range(2 if chaotic else 4):
            losses.append(float(opt.step(closure).detach()))
        st = opt.state[x]
        results.append((x.detach().numpy().copy(), losses, st["func_evals"], st["n_iter"]))
    (xw, lw, fw, nw), (xt, lt, ft, nt) = results
    np.testing.assert_allclose(xw, xt, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(lw, lt, rtol=1e-6, atol=1e-12)
    assert (fw, nw) == (ft, nt)


def test_lbfgs_converges_and_refuses_groups():
    x = eager.tensor([-1.5, 2.0], dtype=eager.float64, requires_grad=True)
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=100)

    def closure():
        opt.zero_grad()
        loss = rosenbrock(eager, x)
        loss.backward()
        return loss

    for _ in range(5):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-5)
    with pytest.raises(ValueError, match="per-parameter options"):
        optim.LBFGS([{"params": [x]}, {"params": [eager.zeros(1, requires_grad=True)]}])
    with pytest.raises(RuntimeError, match="only 'strong_wolfe' is supported"):
        with eager.no_grad():
            x.fill_(0.0)
        opt = optim.LBFGS([x], line_search_fn="armijo")
        opt.step(closure)


# ---------------------------------------------------------------- Muon


def test_muon_matches_torch():
    rng = np.random.default_rng(1)
    w0 = [rng.standard_normal((6, 4)), rng.standard_normal((3, 5))]
    pw = [eager.tensor(v, dtype=eager.float32, requires_grad=True) for v in w0]
    pt = [torch.tensor(v, dtype=torch.float32, requires_grad=True) for v in w0]
    for kw in ({}, {"nesterov": False, "adjust_lr_fn": "match_rms_adamw", "lr": 0.02}):
        opt_w, opt_t = optim.Muon(pw, **kw), torch.optim.Muon(pt, **kw)
        for i in range(3):
            for a, b, g in zip(pw, pt, grads_for(i, pw)):
                a.grad = eager.tensor(g, dtype=eager.float32)
                b.grad = torch.tensor(g, dtype=torch.float32)
            opt_w.step()
            opt_t.step()
        for a, b in zip(pw, pt):  # bfloat16 Newton-Schulz: agreement to bf16 rounding
            close(a.detach(), b, rtol=0, atol=2e-3)
    with pytest.raises(ValueError, match="only supports 2D parameters"):
        optim.Muon([eager.zeros(3, requires_grad=True)])


# ---------------------------------------------------------------- swa_utils and swapping


def _twin_models():
    w = np.random.default_rng(2).standard_normal((3, 4))

    def build(lib):
        m = lib.nn.Sequential(lib.nn.Linear(4, 3, dtype=lib.float64),
                              lib.nn.BatchNorm1d(3, dtype=lib.float64))
        with lib.no_grad():
            m[0].weight.copy_(lib.tensor(w))
            m[0].bias.fill_(0.1)
        return m

    return build(eager), build(torch)


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_multi", "buffers_ema", "buffers_swa"])
def test_averaged_model(kind):
    mw, mt = _twin_models()
    results = []
    for lib, m in ((eager, mw), (torch, mt)):
        su = lib.optim.swa_utils
        kw = {"swa": {}, "ema": {"avg_fn": su.get_ema_avg_fn(0.9)},
              "ema_multi": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.8)},
              "buffers_ema": {"use_buffers": True, "multi_avg_fn": su.get_ema_multi_avg_fn()},
              "buffers_swa": {"use_buffers": True}}[kind]
        avg = su.AveragedModel(m, **kw)
        for i in range(4):
            with lib.no_grad():
                for j, p in enumerate(m.parameters()):
                    p.mul_(0.9).add_(0.1 * (i + j))
            m(lib.ones(5, 4, dtype=lib.float64) * i)  # moves BatchNorm's running stats
            avg.update_parameters(m)
        x = lib.tensor(np.linspace(-1, 1, 8).reshape(2, 4))
        avg.eval()
        results.append((avg(x).detach().numpy(), int(avg.n_averaged),
                        [t.detach().numpy() for t in avg.state_dict().values()]))
    close(results[0][0], results[1][0])
    assert results[0][1] == results[1][1] == 4
    for a, b in zip(results[0][2], results[1][2]):
        close(a, b)


def test_update_bn_and_swalr():
    mw, mt = _twin_models()
    data = [np.random.default_rng(k).standard_normal((6, 4)) for k in range(3)]
    for lib, m in ((eager, mw), (torch, mt)):
        lib.optim.swa_utils.update_bn([(lib.tensor(d), 0) for d in data], m)
    close(mw[1].running_mean, mt[1].running_mean)
    close(mw[1].running_var, mt[1].running_var)
    assert mw[1].momentum == mt[1].momentum == 0.1
    for strategy, epochs in (("cos", 5), ("linear", 3), ("cos", 0)):
        seqs = []
        for lib in (eager, torch):
            p = lib.zeros(2, requires_grad=True)
            opt = lib.optim.SGD([{"params": [p]}, {"params": [lib.zeros(1, requires_grad=True)],
                                                  "lr": 0.5}], lr=1.0)
            sched = lib.optim.swa_utils.SWALR(opt, swa_lr=[0.05, 0.2], anneal_epochs=epochs,
                                              anneal_strategy=strategy)
            seq = []
            for _ in range(8):
                opt.step()
                sched.step()
                seq.append(sched.get_last_lr())
            seqs.append(seq)
        np.testing.assert_allclose(seqs[0], seqs[1], rtol=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy"):
        optim.swa_utils.SWALR(optim.SGD([eager.zeros(1, requires_grad=True)]), 0.1,
                              anneal_strategy="exp")


def test_swap_in_optimizer_params_and_state():
    pw, pt = make_params()
    opt_w, opt_t = optim.Adam(pw, lr=0.1), torch.optim.Adam(pt, lr=0.1)
    run_steps(opt_w, opt_t, pw, pt, steps=2)
    outs = []
    for lib, opt, params in ((eager, opt_w, pw), (torch, opt_t, pt)):
        swap = {f"p{i}": p.detach().clone() * 2 for i, p in enumerate(params)}
        sd = opt.state_dict()
        sd = {"state": {k: {n: v.clone() for n, v in s.items()} for k, s in sd["state"].items()},
              "param_groups": [dict(g, lr=0.01) for g in sd["param_groups"]]}
        before = [p.detach().clone() for p in params]
        for s, p in zip(swap.values(), params):
            s.grad = p.grad.clone()
        with lib.optim.swap_in_optimizer_params_and_state(opt, swap, sd):
            assert opt.param_groups[0]["lr"] == 0.01
            opt.step()
        assert opt.param_groups[0]["lr"] == 0.1
        for a, b in zip(before, params):  # the live parameters are untouched
            assert (a == b.detach()).all()
        outs.append(([s.detach().numpy() for s in swap.values()],
                     [sd["state"][k]["exp_avg"].numpy() for k in sorted(sd["state"])]))
    for a, b in zip(outs[0][0] + outs[0][1], outs[1][0] + outs[1][1]):
        close(a, b)
    fresh = optim.swap_in_optimizer_params_and_state(optim.SGD(pw), {}, {})
    with pytest.raises(RuntimeError, match="initialized optimizer state"):
        fresh.__enter__()


# ---------------------------------------------------------------- signatures


def _params(fn):
    import inspect

    out = []
    for p in inspect.signature(fn).parameters.values():
        default = p.default
        if not isinstance(default, (int, float, str, bool, tuple, type(None), type)):
            default = "<object>"  # (torch's generator objects, sentinels)
        out.append((p.name, p.kind, default))
    return out


@pytest.mark.parametrize("ns", ["optim", "optim.lr_scheduler", "optim.swa_utils", "nn.init",
                                "nn.utils", "nn.utils.parametrize",
                                "nn.utils.parametrizations", "nn.utils.stateless"])
def test_signatures_match_torch(ns):
    """Every callable of the namespace takes torch's parameter names, kinds and defaults."""
    import importlib
    import inspect

    ours, ref = importlib.import_module(f"eager.{ns}"), importlib.import_module(f"torch.{ns}")
    names = getattr(ref, "__all__", None) or [n for n in dir(ref) if not n.startswith("_")]
    checked = 0
    for name in names:
        a, b = getattr(ours, name, None), getattr(ref, name, None)
        if a is None or not callable(b) or inspect.ismodule(b) or name in ("SparseAdam",):
            continue
        try:
            sb = _params(b)
        except (TypeError, ValueError):
            continue
        assert _params(a) == sb, name
        checked += 1
    assert checked > 0


@pytest.mark.parametrize("direction", ["torch_to_wick", "wick_to_torch"])
def test_lbfgs_state_dict_across(direction):
    """LBFGS's history (torch keeps 0-d tensors where wick keeps floats) loads both ways and
    the next steps agree."""
    def setup(lib, mod, x0):
        x = lib.tensor(x0, dtype=lib.float64, requires_grad=True)
        opt = mod.LBFGS([x], history_size=4, max_iter=3, line_search_fn="strong_wolfe")

        def closure():
            opt.zero_grad()
            loss = rosenbrock(lib, x)
            loss.backward()
            return loss
        return x, opt, closure

    xw, ow, cw = setup(eager, optim, [-1.5, 2.0])
    xt, ot, ct = setup(torch, torch.optim, [-1.5, 2.0])
    for _ in range(2):
        ow.step(cw)
        ot.step(ct)
    before = xt.detach().numpy().copy()
    if direction == "torch_to_wick":
        xw2, ow2, cw2 = setup(eager, optim, xt.detach().numpy().tolist())
        ow2.load_state_dict(to_eager(ot.state_dict()))
        ow2.step(cw2)
        ot.step(ct)
        close(xw2.detach(), xt)
        assert np.abs(xt.detach().numpy() - before).max() > 1e-3  # the history mattered
    else:
        xt2, ot2, ct2 = setup(torch, torch.optim, xw.detach().numpy().tolist())
        ot2.load_state_dict(to_torch(ow.state_dict()))
        ot2.step(ct2)
        ow.step(cw)
        close(xw.detach(), xt2)
