"""eager.nn.Module's methods and containers against PyTorch (when installed) and against the
definitions: state_dict keys and order, load_state_dict (copies, assign, strict errors and
their messages), conversions keeping parameter identity, traversal, registration errors,
ModuleDict / ParameterList / ParameterDict, and nn.utils (gradient clipping against torch's
with the same gradients, parameters <-> vector)."""

import math
from collections import OrderedDict

import numpy as np
import pytest

import eager
from eager import nn

try:
    import torch
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _net(lib):
    """The same small model written against `lib` (eager or torch)."""

    class Block(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = lib.nn.Linear(3, 3)
            self.register_buffer("scale", lib.ones(3))
            self.register_buffer("tmp", lib.zeros(1), persistent=False)

        def forward(self, x):
            return self.fc(x) * self.scale

    class Net(lib.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = lib.nn.Linear(4, 3)
            self.blocks = lib.nn.ModuleList([Block(), Block()])
            self.heads = lib.nn.ModuleDict({"a": lib.nn.Linear(3, 2), "b": lib.nn.Linear(3, 1)})
            self.extra = lib.nn.ParameterList([lib.nn.Parameter(lib.zeros(2)), lib.ones(1)])
            self.table = lib.nn.ParameterDict({"p": lib.nn.Parameter(lib.ones(2, 2))})

        def forward(self, x):
            x = self.fc1(x)
            for b in self.blocks:
                x = b(x)
            return self.heads["a"](x).sum() + self.heads["b"](x).sum()

    return Net()


# ---------------------------------------------------------------- state dicts


@needs_torch
def test_state_dict_keys_order_and_shapes_match_torch():
    e, t = _net(eager), _net(torch)
    es, ts = e.state_dict(), t.state_dict()
    assert list(es) == list(ts)
    assert [tuple(v.shape) for v in es.values()] == [tuple(v.shape) for v in ts.values()]
    assert [n for n, _ in e.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in e.named_buffers()] == [n for n, _ in t.named_buffers()]
    assert [n for n, _ in e.named_modules()] == [n for n, _ in t.named_modules()]
    assert [n for n, _ in e.named_children()] == [n for n, _ in t.named_children()]
    assert all(not v.requires_grad for v in es.values())
    assert isinstance(e.state_dict(keep_vars=True)["fc1.weight"], nn.Parameter)


@needs_torch
def test_load_state_dict_from_torch_values_gives_torch_outputs():
    e, t = _net(eager), _net(torch)
    e.load_state_dict({k: eager.tensor(v.numpy()) for k, v in t.state_dict().items()})
    x = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    np.testing.assert_allclose(e(eager.tensor(x)).item(), t(torch.tensor(x)).item(), rtol=1e-5)


def test_load_state_dict_copies_in_place_and_returns_incompatible_keys():
    m = nn.Linear(2, 3)
    w = m.weight
    sd = {"weight": eager.ones(3, 2, dtype=eager.float64), "bias": eager.zeros(3)}
    res = m.load_state_dict(sd)
    assert res.missing_keys == [] and res.unexpected_keys == []
    assert repr(res) == "<All keys matched successfully>"
    assert m.weight is w and w.dtype is eager.float32 and w.requires_grad
    np.testing.assert_array_equal(w.detach().numpy(), np.ones((3, 2)))
    sd["weight"].add_(1)  # a copy, not a reference
    assert w.detach().numpy().max() == 1


def test_load_state_dict_assign_uses_the_tensors():
    m = nn.Linear(2, 3)
    new = eager.ones(3, 2)
    m.load_state_dict({"weight": new, "bias": eager.zeros(3)}, assign=True)
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    assert m._parameters["weight"] is m.weight
    new.add_(1)
    assert m.weight.detach().numpy().max() == 2  # shares the given tensor's memory


def _errors(lib, sd_fn, strict=True):
    m = lib.nn.Sequential(OrderedDict(fc1=lib.nn.Linear(4, 4)))
    sd = sd_fn(lib)
    try:
        return m.load_state_dict(sd, strict=strict)
    except Exception as ex:  # noqa: BLE001
        return ex


def _bad_sd(lib):
    return {"fc1.weight": lib.ones(3, 4), "extra": lib.ones(1)}


@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_errors(strict):
    got = _errors(eager, _bad_sd, strict)
    assert isinstance(got, RuntimeError)
    msg = str(got)
    assert msg.startswith("Error(s) in loading state_dict for Sequential:\n\t")
    assert "size mismatch for fc1.weight: copying a param with shape eager.Size([3, 4]) from " \
           "checkpoint, the shape in current model is eager.Size([4, 4])." in msg
    assert ('Missing key(s) in state_dict: "fc1.bias".' in msg) == strict
    assert ('Unexpected key(s) in state_dict: "extra".' in msg) == strict


@needs_torch
@pytest.mark.parametrize("strict", [True, False])
def test_load_state_dict_errors_match_torch(strict):
    e = _errors(eager, _bad_sd, strict)
    t = _errors(torch, _bad_sd, strict)
    assert type(e) is type(t)
    assert str(e).replace("eager.Size", "torch.Size") == str(t)
    ok = lambda lib: {"fc1.weight": lib.ones(4, 4), "x.y": lib.ones(1)}
    e, t = _errors(eager, ok, False), _errors(torch, ok, False)
    assert (e.missing_keys, e.unexpected_keys) == (t.missing_keys, t.unexpected_keys)
    e, t = _errors(eager, ok, True), _errors(torch, ok, True)
    assert str(e) == str(t)


def test_non_persistent_buffers_are_left_out_and_buffers_reassign():
    m = _net(eager)
    assert "blocks.0.tmp" not in m.state_dict()
    assert "blocks.0.tmp" in dict(m.named_buffers())
    b = m.blocks[0]
    b.scale = eager.full((3,), 2.0)
    assert m.state_dict()["blocks.0.scale"].numpy().tolist() == [2.0, 2.0, 2.0]


# ---------------------------------------------------------------- conversions


def test_to_and_dtype_casts_keep_parameter_identity():
    m = _net(eager)
    params = list(m.parameters())
    m(eager.ones(2, 4)).backward()
    m.double()
    assert [id(p) for p in m.parameters()] == [id(p) for p in params]
    assert all(p.dtype is eager.float64 for p in params)
    assert m.fc1.weight.grad.dtype is eager.float64
    assert m.blocks[0].scale.dtype is eager.float64
    assert m.blocks[0]._buffers["scale"] is m.blocks[0].scale
    m.to(eager.float32)
    assert all(p.dtype is eager.float32 for p in m.parameters())
    m.to(eager.ones(1, dtype=eager.float16))
    assert m.fc1.weight.dtype is eager.float16
    m.float().cpu()
    assert m.fc1.weight.dtype is eager.float32 and m.fc1.weight.device == eager.device("cpu")
    assert m.to("cpu", eager.float64) is m and m.fc1.bias.dtype is eager.float64
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        m.to(eager.int64)


def test_float_leaves_integer_buffers_and_type_casts_all():
    m = nn.Module()
    m.register_buffer("count", eager.zeros(2, dtype=eager.int64))
    m.w = nn.Parameter(eager.ones(2, dtype=eager.float64))
    m.float()
    assert m.count.dtype is eager.int64 and m.w.dtype is eager.float32
    m.type(eager.float64)
    assert m.count.dtype is eager.float64


def test_apply_visits_children_first_then_self():
    m = _net(eager)
    seen = []
    assert m.apply(lambda mod: seen.append(type(mod).__name__)) is m
    assert seen[-1] == "Net" and seen[0] == "Linear"
    assert len(seen) == len(list(m.modules()))

    def init(mod):
        if isinstance(mod, nn.Linear):
            nn.init.zeros_(mod.bias)

    m.apply(init)
    assert all(float(abs(mod.bias).sum()) == 0 for mod in m.modules()
               if isinstance(mod, nn.Linear))


@needs_torch
def test_to_in_torch_also_keeps_identity():
    """The reference behaviour the eager test above relies on."""
    t = torch.nn.Linear(2, 2)
    w = t.weight
    t.double()
    assert t.weight is w and w.dtype == torch.float64


# ---------------------------------------------------------------- registration, attributes


def _attr_error(lib, fn):
    with pytest.raises(Exception) as info:
        fn(lib)
    return info.type, str(info.value).replace("torch.", "").replace("eager.", "")


@needs_torch
@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.Linear(2, 2).x,
    lambda lib: lib.nn.Linear(2, 2).get_submodule("a.b"),
    lambda lib: lib.nn.Sequential(lib.nn.Linear(2, 2)).get_submodule("0.weight"),
    lambda lib: lib.nn.Sequential(lib.nn.Linear(2, 2)).get_parameter("0.nope"),
    lambda lib: lib.nn.Sequential(lib.nn.Linear(2, 2)).get_parameter("0.in_features"),
    lambda lib: lib.nn.Linear(2, 2).add_module("weight", lib.nn.ReLU()),
    lambda lib: lib.nn.Linear(2, 2).add_module("a.b", lib.nn.ReLU()),
    lambda lib: lib.nn.Linear(2, 2).add_module("a", 3),
    lambda lib: lib.nn.Linear(2, 2).register_buffer("weight", lib.ones(1)),
    lambda lib: lib.nn.Linear(2, 2).register_buffer(1, lib.ones(1)),
    lambda lib: lib.nn.Linear(2, 2).register_parameter("p", lib.ones(1)),
    lambda lib: setattr(lib.nn.Linear(2, 2), "weight", lib.ones(2, 2)),
    lambda lib: lib.nn.Linear(2, 2).load_state_dict([1]),
])
def test_errors_match_torch(case):
    et, em = _attr_error(eager, case)
    tt, tm = _attr_error(torch, case)
    assert et is tt
    if et is AttributeError or et is KeyError:
        assert em == tm


def test_registration_and_deletion():
    m = nn.Module()
    m.add_module("fc", nn.Linear(2, 2))
    m.register_module("act", nn.ReLU())
    m.register_parameter("p", nn.Parameter(eager.ones(1)))
    m.register_parameter("none", None)
    assert m.none is None and list(m.state_dict()) == ["p", "fc.weight", "fc.bias"]
    assert m.get_submodule("fc") is m.fc and m.get_parameter("fc.bias") is m.fc.bias
    m.register_buffer("buf", eager.zeros(1))
    assert m.get_buffer("buf") is m.buf
    del m.fc
    del m.p
    del m.buf
    assert list(m.state_dict()) == []
    with pytest.raises(AttributeError, match="'Module' object has no attribute 'fc'"):
        m.fc  # noqa: B018
    m.plain = 3
    del m.plain
    assert not hasattr(m, "plain")
    with pytest.raises(TypeError, match="torch.nn.Parameter or None required"):
        m.register_parameter("r", eager.ones(1, requires_grad=True) * 2)


def test_zero_grad_and_requires_grad():
    m = nn.Linear(2, 2)
    m(eager.ones(1, 2)).sum().backward()
    m.zero_grad(set_to_none=False)
    assert float(abs(m.weight.grad).sum()) == 0
    m.zero_grad()
    assert m.weight.grad is None
    m.requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())


# ---------------------------------------------------------------- containers


def test_module_dict():
    d = nn.ModuleDict({"a": nn.Linear(1, 1)})
    d["b"] = nn.ReLU()
    d.update([("c", nn.Linear(1, 2))])
    assert list(d) == ["a", "b", "c"] and len(d) == 3 and "b" in d
    assert list(d.keys()) == ["a", "b", "c"] and isinstance(d["c"], nn.Linear)
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    assert isinstance(d.pop("b"), nn.ReLU) and list(d) == ["a", "c"]
    del d["a"]
    assert list(d.state_dict()) == ["c.weight", "c.bias"]
    d.clear()
    assert len(d) == 0


def test_parameter_list_and_dict_wrap_tensors():
    pl = nn.ParameterList([eager.ones(2)])
    pl.append(nn.Parameter(eager.zeros(3)))
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl)
    assert list(pl.state_dict()) == ["0", "1"] and pl[-1].shape == (3,)
    pl[0] = eager.full((2,), 5.0)
    assert isinstance(pl[0], nn.Parameter) and pl[0].detach().numpy().tolist() == [5, 5]
    pd = nn.ParameterDict({"w": eager.ones(2)})
    pd["v"] = eager.zeros(1)
    assert list(pd) == ["w", "v"] and isinstance(pd["v"], nn.Parameter)
    assert list(pd.state_dict()) == ["w", "v"] and pd.get("nope") is None
    assert pd.pop("w").shape == (2,) and list(pd.keys()) == ["v"]


def test_module_list_and_sequential_editing():
    ml = nn.ModuleList([nn.ReLU()])
    ml.extend([nn.Linear(1, 1)])
    ml.insert(0, nn.GELU())
    assert [type(m).__name__ for m in ml] == ["GELU", "ReLU", "Linear"]
    assert list(ml.state_dict()) == ["2.weight", "2.bias"]
    del ml[0]
    assert list(ml.state_dict()) == ["1.weight", "1.bias"]
    s = nn.Sequential(OrderedDict(first=nn.Linear(2, 2), act=nn.ReLU()))
    assert list(s.state_dict()) == ["first.weight", "first.bias"]
    assert isinstance(s[1], nn.ReLU) and list(s[:1].state_dict()) == ["first.weight",
                                                                     "first.bias"]


# ---------------------------------------------------------------- nn.utils


def _grads_pair(seed=0):
    rng = np.random.default_rng(seed)
    shapes = [(3, 4), (4,), (2, 2, 2)]
    grads = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    eps = [nn.Parameter(eager.zeros(*s)) for s in shapes]
    for p, g in zip(eps, grads, strict=True):
        p.grad = eager.tensor(g)
    return eps, grads


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, math.inf])
@pytest.mark.parametrize("max_norm", [0.5, 1e3])
def test_clip_grad_norm_against_numpy(norm_type, max_norm):
    eps, grads = _grads_pair()
    flat = np.concatenate([g.ravel() for g in grads]).astype(np.float64)
    total = np.abs(flat).max() if norm_type == math.inf else \
        (np.abs(flat) ** norm_type).sum() ** (1 / norm_type)
    got = nn.utils.clip_grad_norm_(eps, max_norm, norm_type)
    assert got.ndim == 0
    np.testing.assert_allclose(got.item(), total, rtol=1e-5)
    coef = min(1.0, max_norm / (total + 1e-6))
    for p, g in zip(eps, grads, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), g * coef, rtol=1e-5)


@needs_torch
@pytest.mark.parametrize("norm_type", [2.0, math.inf])
def test_clip_grad_norm_matches_torch(norm_type):
    eps, grads = _grads_pair(1)
    tps = [torch.nn.Parameter(torch.zeros(g.shape)) for g in grads]
    for p, g in zip(tps, grads, strict=True):
        p.grad = torch.tensor(g)
    e = nn.utils.clip_grad_norm_(eps, 1.0, norm_type)
    t = torch.nn.utils.clip_grad_norm_(tps, 1.0, norm_type)
    np.testing.assert_allclose(e.item(), t.item(), rtol=1e-5)
    for a, b in zip(eps, tps, strict=True):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-5, atol=1e-7)


def test_clip_grad_norm_nonfinite_and_empty():
    p = nn.Parameter(eager.zeros(2))
    p.grad = eager.tensor([float("inf"), 1.0])
    with pytest.raises(RuntimeError, match="is non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = nn.Parameter(eager.zeros(2))
    assert nn.utils.clip_grad_norm_([q], 1.0).item() == 0.0


def test_clip_grad_value_and_vector_round_trip():
    eps, grads = _grads_pair(2)
    nn.utils.clip_grad_value_(eps, 0.3)
    for p, g in zip(eps, grads, strict=True):
        np.testing.assert_allclose(p.grad.numpy(), np.clip(g, -0.3, 0.3))
    vec = nn.utils.parameters_to_vector(eps)
    assert vec.shape == (12 + 4 + 8,)
    new = eager.arange(24.0)
    nn.utils.vector_to_parameters(new, eps)
    np.testing.assert_array_equal(eps[1].detach().numpy(), np.arange(12.0, 16.0))
    np.testing.assert_array_equal(nn.utils.parameters_to_vector(eps).detach().numpy(),
                                  np.arange(24.0))
    with pytest.raises(TypeError, match="expected torch.Tensor"):
        nn.utils.vector_to_parameters([1.0], eps)


def test_replacing_a_child_or_parameter_keeps_its_place_as_torch():
    """`seq[i] = m`, `mlist[-k] = m`, a Sequential of named modules, and assigning a new
    Parameter over an old one keep the registration order (torch.nn.Module.__setattr__ only
    updates the table the name is in), so the model still computes in the same order."""
    torch = pytest.importorskip("torch")
    from collections import OrderedDict

    for lib in (nn, torch.nn):
        seq = lib.Sequential(lib.Linear(2, 2), lib.ReLU(), lib.Linear(2, 3))
        seq[0] = lib.Tanh()
        named = lib.Sequential(OrderedDict(a=lib.Linear(2, 2), b=lib.ReLU()))
        named[0] = lib.Tanh()
        ml = lib.ModuleList([lib.ReLU(), lib.Tanh()])
        ml[-2] = lib.Sigmoid()
        lin = lib.Linear(2, 2)
        lin.weight = lib.Parameter(lin.weight.detach().clone())
        got = ([(k, type(m).__name__) for k, m in seq.named_children()],
               [(k, type(m).__name__) for k, m in named.named_children()],
               [(k, type(m).__name__) for k, m in ml.named_children()],
               [k for k, _ in lin.named_parameters()])
        if lib is nn:
            mine = got
    assert mine == got
