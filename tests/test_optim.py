"""eager.optim: every optimizer against a numpy reference of its documented algorithm and
against torch.optim (when importable), plus the Optimizer base class contract (errors, param
groups, zero_grad, state_dict round trips, closures, hooks)."""

import copy
import math

import numpy as np
import pytest

import eager
from eager import nn, optim

try:
    import torch
except ImportError:  # an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

STEPS = 6
SHAPES = [(3, 4), (4,)]


# ---------------------------------------------------------------- numpy references (the docs'
# pseudo-code, https://pytorch.org/docs/stable/optim.html, one function per algorithm)


def ref_sgd(p, g, st, t, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False,
            maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    if momentum:
        b = g.copy() if t == 1 else momentum * st["b"] + (1 - dampening) * g
        st["b"] = b
        g = g + momentum * b if nesterov else b
    return p - lr * g


def ref_adam(p, g, st, t, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
             amsgrad=False, maximize=False, decoupled=False):
    b1, b2 = betas
    g = -g if maximize else g
    if weight_decay:
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
    m = st.get("m", np.zeros_like(p)) * b1 + (1 - b1) * g
    v = st.get("v", np.zeros_like(p)) * b2 + (1 - b2) * g * g
    st["m"], st["v"] = m, v
    mhat = m / (1 - b1 ** t)
    if amsgrad:
        st["vmax"] = np.maximum(st.get("vmax", np.zeros_like(p)), v)
        v = st["vmax"]
    vhat = v / (1 - b2 ** t)
    return p - lr * mhat / (np.sqrt(vhat) + eps)


def ref_adamw(p, g, st, t, weight_decay=1e-2, **kw):
    return ref_adam(p, g, st, t, weight_decay=weight_decay, decoupled=True, **kw)


def ref_rmsprop(p, g, st, t, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                centered=False, maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    v = alpha * st.get("v", np.zeros_like(p)) + (1 - alpha) * g * g
    st["v"] = v
    vt = v
    if centered:
        st["ga"] = alpha * st.get("ga", np.zeros_like(p)) + (1 - alpha) * g
        vt = v - st["ga"] ** 2
    if momentum > 0:
        st["b"] = momentum * st.get("b", np.zeros_like(p)) + g / (np.sqrt(vt) + eps)
        return p - lr * st["b"]
    return p - lr * g / (np.sqrt(vt) + eps)


def ref_adagrad(p, g, st, t, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
                eps=1e-10, maximize=False):
    g = -g if maximize else g
    if weight_decay:
        g = g + weight_decay * p
    clr = lr / (1 + (t - 1) * lr_decay)
    st["s"] = st.get("s", np.full_like(p, initial_accumulator_value)) + g * g
    return p - clr * g / (np.sqrt(st["s"]) + eps)


REFS = {"SGD": ref_sgd, "Adam": ref_adam, "AdamW": ref_adamw, "RMSprop": ref_rmsprop,
        "Adagrad": ref_adagrad}

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.3, "weight_decay": 0.1}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    ("Adam", {"lr": 0.05}),
    ("Adam", {"lr": 0.05, "amsgrad": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "betas": (0.8, 0.9)}),
    ("Adam", {"lr": 0.05, "maximize": True, "amsgrad": True, "eps": 1e-3}),
    ("AdamW", {"lr": 0.05}),
    ("AdamW", {"lr": 0.05, "weight_decay": 0.5, "amsgrad": True}),
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1,
                 "alpha": 0.9}),
    ("RMSprop", {"lr": 0.01, "maximize": True}),
    ("Adagrad", {"lr": 0.1}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "maximize": True, "eps": 1e-3}),
]
IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items())}" for n, kw in CONFIGS]

TOL = {np.float32: {"rtol": 2e-5, "atol": 2e-6}, np.float64: {"rtol": 1e-11, "atol": 1e-12}}


def init_params(dtype):
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s).astype(dtype) for s in SHAPES]


def grad_fn(p):
    """A gradient depending on the parameter (so that weight decay and history matter), the
    same numpy formula for every implementation: d/dp of sum(p**2 / 2 + cos(p) + 0.3 p**3)."""
    return (p - np.sin(p) + 0.9 * p * p).astype(p.dtype)


def run_ref(name, kw, dtype):
    ps = init_params(dtype)
    states = [{} for _ in ps]
    for t in range(1, STEPS + 1):
        ps = [REFS[name](p, grad_fn(p), st, t, **kw).astype(dtype)
              for p, st in zip(ps, states)]
    return ps


def run_lib(lib, name, kw, dtype):
    ps = [lib.tensor(p, requires_grad=True) for p in init_params(dtype)]
    opt = getattr(lib.optim, name)(ps, **kw)
    for _ in range(STEPS):
        for p in ps:
            p.grad = lib.tensor(grad_fn(p.detach().numpy()))
        opt.step()
    return [p.detach().numpy() for p in ps], opt


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=IDS)
def test_matches_numpy_reference(name, kw, dtype):
    got, _ = run_lib(eager, name, kw, dtype)
    want = run_ref(name, kw, dtype)
    for g, w in zip(got, want):
        assert g.dtype == dtype
        np.testing.assert_allclose(g, w, **TOL[dtype])
    assert not np.allclose(got[0], init_params(dtype)[0])  # it moved


@needs_torch
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "kw"), CONFIGS, ids=IDS)
def test_matches_torch(name, kw, dtype):
    got, opt = run_lib(eager, name, kw, dtype)
    want, topt = run_lib(torch, name, kw, dtype)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, **TOL[dtype])
    # same state layout and values (keys, step counters, buffers)
    sd, tsd = opt.state_dict(), topt.state_dict()
    assert sd["param_groups"] == tsd["param_groups"]
    for i in tsd["state"]:
        assert sorted(sd["state"][i]) == sorted(tsd["state"][i])
        for k, v in tsd["state"][i].items():
            np.testing.assert_allclose(sd["state"][i][k].numpy(), v.numpy(), **TOL[dtype])
            assert str(sd["state"][i][k].dtype).split(".")[1] == str(v.dtype).split(".")[1]
    assert repr(opt) == repr(topt)


@needs_torch
@pytest.mark.parametrize("name", ["Adam", "RMSprop", "Adagrad", "SGD"])
def test_complex_params_match_torch(name):
    rng = np.random.default_rng(1)
    z0 = (rng.standard_normal(5) + 1j * rng.standard_normal(5)).astype(np.complex64)
    kw = {"lr": 0.05, "momentum": 0.5} if name in ("SGD", "RMSprop") else {"lr": 0.05}
    out = []
    for lib in (eager, torch):
        z = lib.tensor(z0, requires_grad=True)
        opt = getattr(lib.optim, name)([z], **kw)
        for _ in range(4):
            zn = z.detach().numpy()
            z.grad = lib.tensor((zn * np.conj(zn) * zn + 0.5j).astype(np.complex64))
            opt.step()
        out.append(z.detach().numpy())
    np.testing.assert_allclose(out[0], out[1], rtol=1e-5, atol=1e-6)


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8, dtype=eager.float64)
        self.fc2 = nn.Linear(8, 2, dtype=eager.float64)

    def forward(self, x):
        return self.fc2(eager.tanh(self.fc1(x)))


@needs_torch
@pytest.mark.parametrize(("name", "kw"), [("SGD", {"lr": 0.1, "momentum": 0.9}),
                                          ("AdamW", {"lr": 0.01}),
                                          ("RMSprop", {"lr": 0.01, "centered": True})])
def test_tiny_mlp_training_matches_torch(name, kw):
    """A full training loop (autograd, zero_grad, step) as PyTorch users write it."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 2))
    model = MLP()
    tmodel = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(),
                                 torch.nn.Linear(8, 2)).double()
    with eager.no_grad():
        for p, tp in zip(model.parameters(), tmodel.parameters()):
            p.copy_(eager.tensor(tp.detach().numpy()))
    losses = []
    for lib, m in ((eager, model), (torch, tmodel)):
        opt = getattr(lib.optim, name)(m.parameters(), **kw)
        xs, ys = lib.tensor(x), lib.tensor(y)
        run = []
        for _ in range(5):
            opt.zero_grad()
            loss = ((m(xs) - ys) ** 2).mean()
            loss.backward()
            opt.step()
            run.append(loss.item())
        losses.append(run)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-10)
    assert losses[0][-1] < losses[0][0]
    for p, tp in zip(model.parameters(), tmodel.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-9,
                                   atol=1e-12)


# ---------------------------------------------------------------- the Optimizer contract


def _param(*shape):
    return eager.ones(*shape, requires_grad=True)


def test_errors_of_construction():
    p = _param(2)
    with pytest.raises(ValueError, match="optimizer got an empty parameter list"):
        optim.SGD([], lr=0.1)
    with pytest.raises(TypeError, match="iterable of Tensors or dicts"):
        optim.SGD(p, lr=0.1)
    with pytest.raises(TypeError, match="ordered collections"):
        optim.SGD([{"params": {p}}], lr=0.1)
    with pytest.raises(TypeError, match="can only optimize Tensors"):
        optim.SGD([p, 3.0], lr=0.1)
    with pytest.raises(ValueError, match="can't optimize a non-leaf Tensor"):
        optim.SGD([p * 2], lr=0.1)
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": [p]}, {"params": [p], "lr": 0.2}], lr=0.1)
    opt = optim.Adam([p])
    with pytest.raises(ValueError, match="more than one parameter group"):
        opt.add_param_group({"params": p})
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([p], lr=0.1, nesterov=True)
    with pytest.raises(ValueError, match="Nesterov momentum requires"):
        optim.SGD([p], lr=0.1, momentum=0.9, dampening=0.1, nesterov=True)
    with pytest.raises(NotImplementedError, match="differentiable"):
        optim.Adam([p], differentiable=True)
    with pytest.warns(UserWarning, match="duplicate parameters"):
        optim.SGD([p, p], lr=0.1)


@pytest.mark.parametrize(("cls", "kw", "msg"), [
    (optim.SGD, {"lr": -1}, "Invalid learning rate: -1"),
    (optim.SGD, {"momentum": -0.5}, "Invalid momentum value: -0.5"),
    (optim.SGD, {"weight_decay": -1}, "Invalid weight_decay value: -1"),
    (optim.Adam, {"lr": -1}, "Invalid learning rate: -1"),
    (optim.Adam, {"eps": -1.0}, "Invalid epsilon value: -1.0"),
    (optim.Adam, {"betas": (1.0, 0.999)}, "Invalid beta parameter at index 0: 1.0"),
    (optim.AdamW, {"betas": (0.9, -0.1)}, "Invalid beta parameter at index 1: -0.1"),
    (optim.AdamW, {"weight_decay": -0.1}, "Invalid weight_decay value: -0.1"),
    (optim.RMSprop, {"alpha": -1}, "Invalid alpha value: -1"),
    (optim.RMSprop, {"momentum": -1}, "Invalid momentum value: -1"),
    (optim.Adagrad, {"lr_decay": -1}, "Invalid lr_decay value: -1"),
    (optim.Adagrad, {"initial_accumulator_value": -1},
     "Invalid initial_accumulator_value value: -1"),
])
def test_invalid_hyperparameters(cls, kw, msg):
    with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
        cls([_param(2)], **kw)
    if torch is not None:  # the same message as PyTorch's
        with pytest.raises(ValueError, match=msg.replace("(", r"\(").replace(")", r"\)")):
            getattr(torch.optim, cls.__name__)([torch.ones(2, requires_grad=True)], **kw)


def test_defaults_as_pytorch():
    p = _param(2)
    assert optim.SGD([p]).defaults["lr"] == 1e-3
    assert optim.Adam([p]).defaults["weight_decay"] == 0
    assert optim.AdamW([p]).defaults["weight_decay"] == 1e-2
    assert optim.AdamW([p]).defaults["decoupled_weight_decay"] is True
    assert optim.RMSprop([p]).defaults["lr"] == 1e-2
    assert optim.Adagrad([p]).defaults["eps"] == 1e-10
    if torch is not None:
        tp = torch.ones(2, requires_grad=True)
        for name in ("SGD", "Adam", "AdamW", "RMSprop", "Adagrad"):
            assert getattr(optim, name)([p]).defaults == getattr(torch.optim, name)([tp]).defaults


def test_param_groups_with_their_own_options():
    a, b = _param(3), _param(3)
    opt = optim.SGD([{"params": [a]}, {"params": b, "lr": 0.5, "momentum": 0.9}], lr=0.1)
    assert [g["lr"] for g in opt.param_groups] == [0.1, 0.5]
    assert [g["momentum"] for g in opt.param_groups] == [0, 0.9]
    assert opt.param_groups[1]["params"][0] is b
    sa, sb = {}, {}
    pa, pb = np.ones(3), np.ones(3)
    for t in (1, 2, 3):
        for p, pn in ((a, pa), (b, pb)):
            p.grad = eager.tensor(grad_fn(pn.astype(np.float32)))
        pa = ref_sgd(pa, grad_fn(pa.astype(np.float32)), sa, t, lr=0.1)
        pb = ref_sgd(pb, grad_fn(pb.astype(np.float32)), sb, t, lr=0.5, momentum=0.9)
        opt.step()
    np.testing.assert_allclose(a.detach().numpy(), pa, rtol=1e-5)
    np.testing.assert_allclose(b.detach().numpy(), pb, rtol=1e-5)
    assert b in opt.state and a not in opt.state  # only momentum keeps state
    c = _param(2)
    opt.add_param_group({"params": [c], "lr": 0.01})
    assert opt.param_groups[2]["momentum"] == 0 and opt.param_groups[2]["lr"] == 0.01


def test_named_parameters_are_accepted():
    m = MLP()
    opt = optim.Adam(m.named_parameters())
    assert opt.param_groups[0]["param_names"] == [n for n, _ in m.named_parameters()]
    assert opt.state_dict()["param_groups"][0]["param_names"][0] == "fc1.weight"


def test_parameters_without_grad_are_skipped():
    a, b = _param(2), _param(2)
    opt = optim.Adam([a, b], lr=0.1)
    a.grad = eager.tensor([1.0, -1.0])
    v = b._version
    opt.step()
    assert b.grad is None and b._version == v
    np.testing.assert_array_equal(b.detach().numpy(), [1.0, 1.0])
    assert b not in opt.state and int(opt.state[a]["step"].item()) == 1


def test_zero_grad_both_ways():
    p = _param(3)
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    g = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is g
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, 0.0, 0.0])
    (p * p).sum().backward()  # accumulates into the zeroed grad
    np.testing.assert_array_equal(p.grad.numpy(), [2.0, 2.0, 2.0])
    opt.zero_grad()
    assert p.grad is None


def test_zero_grad_detaches_a_grad_with_history():
    p = _param(2)
    (p * p).sum().backward(create_graph=True)
    assert p.grad.requires_grad
    optim.SGD([p]).zero_grad(set_to_none=False)
    assert not p.grad.requires_grad and p.grad.grad_fn is None
    np.testing.assert_array_equal(p.grad.numpy(), [0.0, 0.0])


def test_step_updates_in_place_and_bumps_the_version():
    p = _param(3)
    data = p.detach()
    opt = optim.SGD([p], lr=0.5)
    p.grad = eager.tensor([1.0, 2.0, 3.0])
    v = p._version
    opt.step()
    assert p._version > v and p.requires_grad and p.is_leaf
    np.testing.assert_array_equal(data.numpy(), [0.5, 0.0, -0.5])  # same memory


def test_step_with_closure_runs_under_grad_and_returns_the_loss():
    p = eager.tensor([1.0, -2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    calls = []

    def closure():
        calls.append(eager.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with eager.no_grad():
        loss = opt.step(closure)
    assert calls == [True]
    assert loss.item() == 5.0
    np.testing.assert_allclose(p.detach().numpy(), [0.8, -1.6], rtol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW", "RMSprop", "Adagrad"])
def test_state_dict_round_trip_resumes_exactly(name):
    kw = {"SGD": {"lr": 0.1, "momentum": 0.9}, "RMSprop": {"centered": True, "momentum": 0.5},
          "Adam": {"amsgrad": True}}.get(name, {})
    ps = [eager.tensor(p, requires_grad=True) for p in init_params(np.float64)]
    opt = getattr(optim, name)(ps, **kw)

    def steps(opt, ps, n):
        for _ in range(n):
            for p in ps:
                p.grad = eager.tensor(grad_fn(p.detach().numpy()))
            opt.step()

    steps(opt, ps, 3)
    saved = copy.deepcopy(opt.state_dict())
    assert list(saved["state"]) == [0, 1] and saved["param_groups"][0]["params"] == [0, 1]
    ps2 = [eager.tensor(p.detach().numpy(), requires_grad=True) for p in ps]
    opt2 = getattr(optim, name)(ps2, lr=123.0)  # the loaded hyperparameters win
    opt2.load_state_dict(saved)
    assert opt2.param_groups[0]["lr"] == opt.param_groups[0]["lr"]
    assert opt2.param_groups[0]["params"][0] is ps2[0]
    steps(opt, ps, 3)
    steps(opt2, ps2, 3)
    for a, b in zip(ps, ps2):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_load_state_dict_errors_and_casts():
    a, b = _param(2), _param(2)
    opt = optim.Adam([a, b])
    a.grad = b.grad = eager.ones(2)
    opt.step()
    sd = copy.deepcopy(opt.state_dict())
    with pytest.raises(ValueError, match="different number of parameter groups"):
        optim.Adam([{"params": [a]}, {"params": [b]}]).load_state_dict(sd)
    with pytest.raises(ValueError, match="doesn't match the size"):
        optim.Adam([a]).load_state_dict(
            {"state": {}, "param_groups": [dict(sd["param_groups"][0], params=[0, 1, 2])]})
    c = eager.ones(2, dtype=eager.float64, requires_grad=True)
    d = eager.ones(2, dtype=eager.float64, requires_grad=True)
    opt64 = optim.Adam([c, d])
    opt64.load_state_dict(sd)
    assert opt64.state[c]["exp_avg"].dtype == eager.float64
    assert opt64.state[c]["step"].dtype == eager.float32  # counters keep their dtype


@needs_torch
def test_state_dict_loads_across_eager_and_torch_layouts():
    """PyTorch's layout: an eager state dict, converted leaf by leaf, loads into torch.optim
    and the two continue in step."""
    ps = [eager.tensor(p, requires_grad=True) for p in init_params(np.float64)]
    opt = optim.Adam(ps, lr=0.05, amsgrad=True)
    for _ in range(2):
        for p in ps:
            p.grad = eager.tensor(grad_fn(p.detach().numpy()))
        opt.step()
    sd = opt.state_dict()
    tsd = {"param_groups": copy.deepcopy(sd["param_groups"]),
           "state": {i: {k: torch.tensor(v.numpy()) for k, v in s.items()}
                     for i, s in sd["state"].items()}}
    tps = [torch.tensor(p.detach().numpy(), requires_grad=True) for p in ps]
    topt = torch.optim.Adam(tps)
    topt.load_state_dict(tsd)
    for lib, o, qs in ((eager, opt, ps), (torch, topt, tps)):
        for p in qs:
            p.grad = lib.tensor(grad_fn(p.detach().numpy()))
        o.step()
    for p, tp in zip(ps, tps):
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-12)


def test_step_hooks():
    p = _param(2)
    opt = optim.SGD([p], lr=0.1)
    seen = []
    h1 = opt.register_step_pre_hook(lambda o, args, kwargs: seen.append(("pre", o is opt)))
    opt.register_step_post_hook(lambda o, args, kwargs: seen.append(("post", o is opt)))
    opt.step()
    assert seen == [("pre", True), ("post", True)]
    h1.remove()
    opt.step()
    assert seen[2:] == [("post", True)]


def test_custom_optimizer_subclass():
    """The documented way to write an optimizer: subclass, `defaults`, loop over groups."""

    class SignSGD(optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, {"lr": lr})

        @eager.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(p.grad.sign(), alpha=-group["lr"])

    p = eager.tensor([1.0, -1.0, 0.5], requires_grad=True)
    opt = SignSGD([p])
    p.grad = eager.tensor([3.0, -0.1, 0.0])
    opt.step()
    np.testing.assert_allclose(p.detach().numpy(), [0.9, -0.9, 0.5], rtol=1e-6)
    assert repr(opt) == "SignSGD (\nParameter Group 0\n    lr: 0.1\n)"


def test_adagrad_state_exists_before_the_first_step():
    p = _param(2)
    opt = optim.Adagrad([p], initial_accumulator_value=0.25)
    np.testing.assert_array_equal(opt.state[p]["sum"].numpy(), [0.25, 0.25])
    assert opt.state[p]["step"].item() == 0.0
    q = _param(2)
    opt.add_param_group({"params": [q]})
    q.grad = eager.ones(2)
    opt.step()
    np.testing.assert_allclose(q.detach().numpy(), 1 - 0.01 / (math.sqrt(1.25) + 1e-10))
