"""Named capture breaks that torch.compile has fewer of (issue 14's "Left" list, second part):
each case is a realistic piece of model code built by `case(lib)` for `lib` = wick's `eager` or
the real torch. It runs eagerly and compiled (capture, then the cache hit) from the same seed,
comparing outputs (values, dtypes) and the state it names (buffers, version counters, the
generator's next draw); its graph and break counts from `capture.explain` are checked, and when
torch is installed torch._dynamo.explain's counts on the same code are too. Cases whose inputs
require grad are also checked for eager's gradients (`GRAD_CASES`).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Optional

import numpy as np
import pytest
from capture_cases import case_tests, check_torch_counts, same
from capture_cases import rand as _rand

import capture
import eager


def _flat(v):
    if isinstance(v, dict):
        return [type(v).__qualname__] + [x for k in v for x in [k] + _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach(), v.requires_grad]
    return [v]


def _same(a, b):
    same(a, b, _flat)


# ---------------------------------------------------------------- 1. writes through views


def half_rotary_gain(torch):
    """A projection whose first half of features is scaled in place through a slice view
    (`h[..., :d].mul_(g)`), the base `h` used afterwards (residual add): eagerly the base sees
    the write; parameters require grad."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.gain = nn.Parameter(torch.linspace(0.5, 2.0, 2))

        def forward(self, x):
            h = self.proj(x)
            h[..., :2].mul_(self.gain)
            h[:, 0].add_(1.0)
            return h + x

    m = Block()
    return m, (_rand(torch, 3, 4),), lambda: []


def flat_view_bias(torch):
    """`v = b.view(-1); v.add_(1); return b.sum()` (the brief's shape), then a transposed view
    zeroed in place (`t[0].zero_()`) with both the base and the view returned."""
    def f(x, y):
        b = x * y
        v = b.view(-1)
        v.add_(1)
        t = b.transpose(0, 1)
        t[0].zero_()
        return b.sum(), t, v

    return f, (_rand(torch, 3, 4), _rand(torch, 3, 4, seed=2)), lambda: []


def made_histogram_columns(torch):
    """A buffer made in the frame (`torch.zeros`) filled column by column through views
    (`buf[:, 0].add_(...)`, `buf[1:].mul_(2)`), then read whole."""
    def f(x):
        buf = torch.zeros(4, 3)
        buf[:, 0].add_(x.sum(0))
        buf[1:].mul_(2)
        buf[:, 1:].sub_(x[:2].t())
        return buf.softmax(-1)

    return f, (_rand(torch, 3, 4),), lambda: []


def buffer_flat_counter(torch):
    """A module buffer written through `self.hist.view(-1).add_(...)`, the buffer read after
    (its sum) and left written as eager leaves it, version counter included."""
    nn = torch.nn

    class Stats(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("hist", torch.zeros(2, 3))

        def forward(self, x):
            flat = self.hist.view(-1)
            flat.add_(x.abs().mean())
            return self.hist.sum() + x

    m = Stats()
    return m, (_rand(torch, 2, 3),), lambda: [m.hist, m.hist._version]


# ---------------------------------------------------------------- 6. detached aliases


def centered_detached_targets(torch):
    """Self-distillation targets centred in place on a `detach()` of the features
    (`t = feats.detach(); t.sub_(t.mean(0)); t[:, 0] = 0`): eagerly `feats` sees the writes
    (shared memory) while its gradient history is untouched; the loss reads both."""
    nn = torch.nn

    class Distill(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 3)

        def forward(self, x):
            feats = self.proj(x)
            t = feats.detach()
            t.sub_(t.mean(0))
            t[:, 0] = 0.0
            loss = ((feats - 0.5 * t) ** 2).mean() + feats.pow(2).sum()
            return loss, t

    m = Distill()
    return m, (_rand(torch, 5, 4),), lambda: []


def logits_clamped_without_grad(torch):
    """Logits clamped in place under `no_grad` for numerical safety, then a view of a
    detached copy filled (`y.detach()[:, 0].fill_(1)`): the tensor keeps its history
    (gradient 1 through the write) and holds the written values."""
    def f(x, w):
        logits = x @ w
        with torch.no_grad():
            logits.clamp_(-1.0, 1.0)
        y = logits * 1.5
        s = y.detach()[:, 0]
        s.fill_(1.0)
        return torch.log_softmax(logits, -1).sum() + (y * y).sum(), s

    return f, (_rand(torch, 4, 5), _rand(torch, 5, 3, seed=3)), lambda: []


# ---------------------------------------------------------------- 5. exceptions of callees


class ConfigError(KeyError):
    """A library's own exception class (builtin construction)."""


def config_fallbacks(torch):
    """A block reading optional settings through a helper that raises `ValueError` for a
    missing key (caught by the caller, which falls back to a default), a custom
    `ConfigError(KeyError)` raised two calls deep after some tensor work, caught with `as e`
    and its message used, an `except Exception:` fallback, and a helper whose `raise` is not
    reached."""
    nn = torch.nn

    def setting(cfg, key):
        if key not in cfg:
            raise ValueError("missing setting " + key)
        return cfg[key]

    def lookup_act(name):
        if name not in ("gelu", "relu"):
            raise ConfigError(name)
        return name

    def activation(h, name):
        h = h * 1.0
        return h.relu() if lookup_act(name) == "relu" else torch.nn.functional.gelu(h)

    class Block(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.cfg = cfg
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            try:
                scale = setting(self.cfg, "scale")
            except ValueError:
                scale = 0.5
            try:
                shift = setting(self.cfg, "shift")
            except ValueError:
                shift = 0.0
            try:  # (a broad handler of the user's own raise)
                bias = setting(self.cfg, "bias")
            except Exception:
                bias = -0.125
            h = self.fc(x) * scale + shift + bias
            try:
                h = activation(h, self.cfg.get("act", "swish"))
                tag = "ok"
            except ConfigError as e:
                h = torch.tanh(h)
                tag = "fallback " + str(e)
            return h, tag

    m = Block({"shift": 0.25})
    return m, (_rand(torch, 3, 4),), lambda: []


# ---------------------------------------------------------------- 2. ModelOutput across a break


class _ModelOutput(OrderedDict):
    """HF's ModelOutput pattern: a dataclass that is also an OrderedDict of its non-None
    fields, `out["name"]` through `dict(self.items())`, `out[0]` through `to_tuple()`."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is not None:
                self[f.name] = v

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclasses.dataclass
class _LMOutput(_ModelOutput):
    loss: Optional[object] = None
    logits: Optional[object] = None
    hidden_states: Optional[tuple] = None


def _lm(torch):
    nn = torch.nn

    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(6, 8)
            self.fc2 = nn.Linear(8, 3)

        def forward(self, x):
            h = torch.tanh(self.fc1(x))
            logits = self.fc2(h)
            return _LMOutput(loss=logits.pow(2).mean(), logits=logits, hidden_states=(x, h))

    return LM()


def model_output_after_print(torch):
    """A HF-style output built by the model, a `print` (a break, as in torch.compile), then
    its fields read by attribute, by key, by position and through `keys()`/`len`/`in`."""
    m = _lm(torch)

    def run(x):
        out = m(x)
        print("step", tuple(out.logits.shape))
        extra = out["hidden_states"][1].sum() if "hidden_states" in out else 0.0
        return out.logits * 2 + extra, out[0], len(out), list(out.keys()), out

    return run, (_rand(torch, 4, 6),), lambda: []


def model_output_item_branch(torch):
    """An output's loss read with `.item()` to pick a Python branch (a break, as in
    torch.compile), the fields read after it (`out["loss"]`, `out.to_tuple()`, items)."""
    m = _lm(torch)

    def run(x):
        out = m(x)
        scale = 2.0 if out.loss.item() > 0.1 else 0.5
        pairs = [(k, v) for k, v in out.items() if k != "hidden_states"]
        return out["logits"] * scale, out["loss"], out.to_tuple()[1], pairs

    return run, (_rand(torch, 4, 6),), lambda: []


# ---------------------------------------------------------------- 3. gradient hooks


def hooked_intermediates(torch):
    """Hooks registered in `forward` on intermediates: a gradient-scaling lambda (as in
    gradient reversal / scaling layers), a clipping method of the module, and a logging hook
    closing over the module that records each gradient's norm (run at backward time)."""
    nn = torch.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(4, 6)
            self.fc2 = nn.Linear(6, 2)
            self.clip = 0.05
            self.norms = []

        def _clip_grad(self, g):
            return g.clamp(-self.clip, self.clip)

        def forward(self, x):
            h = self.fc1(x)
            h.register_hook(lambda g: g * -0.5)
            a = torch.tanh(h)
            a.register_hook(self._clip_grad)
            out = self.fc2(a) + a.sum(-1, keepdim=True)
            out.register_hook(lambda g: self.norms.append(float(g.norm())))
            return out

    m = Net()
    return m, (_rand(torch, 3, 4),), lambda: [list(m.norms)]


def test_hooks_run_in_backward_like_eager():
    """The hooks change the gradients as eagerly and run once per backward, in eager's
    order (the logging hook's record equals eager's), call after call."""
    runs = []
    for compiled in (False, True):
        eager.manual_seed(0)
        m, (x,), state = hooked_intermediates(eager)
        capture.reset()
        run = capture.compile(m) if compiled else m
        grads = []
        for _ in range(2):
            m.zero_grad()
            xx = x.detach().requires_grad_()
            (run(xx) ** 2).sum().backward()
            grads += [xx.grad.numpy().copy()] + [p.grad.numpy().copy() for p in m.parameters()]
        runs.append((grads, state()))
    (ga, sa), (gb, sb) = runs
    for a, b in zip(ga, gb):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert len(sa[0]) == 2
    np.testing.assert_allclose(sa[0], sb[0], rtol=1e-5)


# ---------------------------------------------------------------- 4. local generators


def local_generator_draws(torch):
    """Augmentation noise from a local generator seeded in the frame
    (`g = torch.Generator(device="cpu"); g.manual_seed(7)`), used by randperm and randn, next
    to a draw from the global generator: the draws are eager's and the global generator is
    left where eager leaves it (its next draw)."""
    def f(x):
        g = torch.Generator(device="cpu")
        g.manual_seed(7)
        perm = torch.randperm(x.shape[0], generator=g)
        noise = torch.randn(x.shape, generator=g) * 0.1
        return x[perm] + noise, torch.rand(3)

    return f, (_rand(torch, 4, 3),), lambda: [torch.rand(2)]


def chained_local_generator(torch):
    """`torch.Generator().manual_seed(s)` chained, then randn and rand on it."""
    def f(x):
        g = torch.Generator().manual_seed(3)
        return x + torch.randn(x.shape, generator=g) + torch.rand(2, 3, generator=g)

    return f, (_rand(torch, 2, 3),), lambda: [torch.rand(2)]


# ---------------------------------------------------------------- 7. counts already torch's


def accumulation_step(torch):
    """Gradient accumulation over two micro-batches inside one compiled train step
    (`loss.backward()` in a Python loop, then `opt.step()`): the parameters after each step
    equal eager's."""
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(xs, ys):
        opt.zero_grad()
        total = 0.0
        for i in range(2):
            loss = torch.nn.functional.mse_loss(model(xs[i]), ys[i]) / 2
            loss.backward()
            total = total + loss.detach()
        opt.step()
        return total

    return step, (_rand(torch, 2, 3, 4), _rand(torch, 2, 3, 1, seed=4)), \
        lambda: [p.detach().clone() for p in model.parameters()]


# (case, wick's counts, torch's counts): wick runs the named calls eagerly where they are
# (values and state as eager), with no more graphs or breaks than torch.compile
AS_TORCH = [
    (accumulation_step, 1, 0, 1, 0),
]
AS_IDS = [c[0].__name__ for c in AS_TORCH]


@pytest.mark.parametrize("case,graphs,breaks,tg,tb", AS_TORCH, ids=AS_IDS)
def test_counts_as_torch_like_eager(case, graphs, breaks, tg, tb):
    eager.manual_seed(0)
    fn, args, *_ = case(eager)
    capture.reset()
    ex = capture.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), str(ex)
    want, got = [], []
    for out, compiled in ((want, False), (got, True)):
        eager.manual_seed(0)
        fn, args, state = case(eager)
        capture.reset()
        run = capture.compile(fn) if compiled else fn
        for _ in range(2):
            eager.manual_seed(1)
            out.append((run(*args), state()))
    _same(want, got)


@pytest.mark.parametrize("case,graphs,breaks,tg,tb", AS_TORCH, ids=AS_IDS)
def test_counts_as_torch_torch_counts(case, graphs, breaks, tg, tb):
    check_torch_counts(case, tg, tb)


def view_scaled_without_grad(torch):
    """A column view taken with grad, scaled in place under `no_grad` (a manual rescale of
    part of an activation), the base and the view used after: both keep their gradient
    history (identity through the write), as eagerly."""
    def f(x):
        h = x * 2
        v = h[:, :1]
        with torch.no_grad():
            v.mul_(0.5)
        return (h * x).sum() + v.sum(), v

    return f, (_rand(torch, 3, 2),), lambda: []


CASES = [
    (half_rotary_gain, 1, 0, 1, 0),
    (flat_view_bias, 1, 0, 1, 0),
    (made_histogram_columns, 1, 0, 1, 0),
    (buffer_flat_counter, 1, 0, 1, 0),
    (centered_detached_targets, 1, 0, 1, 0),
    (logits_clamped_without_grad, 1, 0, 1, 0),
    (view_scaled_without_grad, 1, 0, 1, 0),
    (config_fallbacks, 1, 0, 1, 0),
    (hooked_intermediates, 1, 0, 1, 0),
    (model_output_after_print, 2, 1, 2, 1),
    (model_output_item_branch, 2, 1, 2, 1),
    (local_generator_draws, 1, 0, 1, 0),
    (chained_local_generator, 1, 0, 2, 1),
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def _grads(case, compiled: bool):
    eager.manual_seed(0)
    fn, args, *_ = case(eager)
    args = [a.detach().requires_grad_() if isinstance(a, eager.Tensor) and
            a.dtype.is_floating_point else a for a in args]
    run = capture.compile(fn) if compiled else fn
    capture.reset()
    out = run(*args)
    outs = out if isinstance(out, tuple) else (out,)
    loss = sum(((o * o).sum() for o in outs if isinstance(o, eager.Tensor)
                and o.requires_grad), eager.zeros(()))
    loss.backward()
    params = list(fn.parameters()) if isinstance(fn, eager.nn.Module) else []
    return [t.grad for t in list(args) + params if isinstance(t, eager.Tensor)]


GRAD_CASES = [half_rotary_gain, flat_view_bias, made_histogram_columns,
              centered_detached_targets, logits_clamped_without_grad, view_scaled_without_grad]


@pytest.mark.parametrize("case", GRAD_CASES, ids=[c.__name__ for c in GRAD_CASES])
def test_gradients_like_eager(case):
    want, got = _grads(case, False), _grads(case, True)
    assert len(want) == len(got)
    for a, b in zip(want, got):
        assert (a is None) == (b is None)
        if a is not None:
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [model_output_after_print, model_output_item_branch],
                         ids=["print", "item"])
def test_model_output_reads_after_the_break_are_in_the_graph(case):
    """The only break is the named one (print / .item()): the output's reads after it are in
    the resumed graph (they were eager sites: subscript, len, keys of the object)."""
    fn, args, *_ = case(eager)
    capture.reset()
    ex = capture.explain(fn)(*args)
    assert len(ex.unique_break_reasons) == 1, str(ex)


def test_view_writes_with_changing_sizes_stay_two_entries():
    """Writes through views, called with a new batch size each time: eager's values, and the
    automatic dynamic entry serves every later size (the write there is a break, as before),
    not one entry per size."""
    def f(x, y):
        h = x.clone()
        h[:, 0].mul_(2)
        h.view(-1).add_(1)
        return h + y

    capture.reset()
    c = capture.compile(f)
    for n in (3, 4, 5, 6, 7):
        x, y = _rand(eager, n, 4), _rand(eager, n, 4, seed=n)
        np.testing.assert_allclose(c(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)
    assert len(c.__wick_compiled__.entries) == 2
