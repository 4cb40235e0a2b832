"""Ordinary model code that capture broke on at first sight (issue 14's bar, held-out set M):
each case is a model written as PyTorch code and built by `build(lib)` for `lib` = wick's
`eager` or the real torch. It runs eagerly and compiled (twice: capture, then the cache hit)
from the same seed, comparing outputs (values and dtypes) and the state it names; its graph and
break counts from `capture.explain` are checked, and when torch is installed
torch._dynamo.explain's counts on the same code are too.
"""

from __future__ import annotations

import numpy as np
import pytest
from capture_cases import case_tests, same
from capture_cases import rand as _rand

import capture
import eager


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def _types(v):
    """The container types of a result, outermost first (an OrderedDict stays one)."""
    if isinstance(v, dict):
        return [type(v)] + [t for k in v for t in _types(v[k])]
    if isinstance(v, (list, tuple)):
        return [type(v)] + [t for x in v for t in _types(x)]
    return []


def _same(a, b):
    same(a, b, _flat)


def _same_types(a, b):
    _same(a, b)
    assert _types(a) == _types(b)


def patch_attention_mT(torch):
    """Hand-written rearranges (`unflatten`, `movedim`, `swapaxes`) and self-attention scores
    by `q @ q.mT`; a Gram matrix by `.H`, sizes from `itemsize`/`nbytes` (`Tensor.mT`, `.H`,
    `.mH`, `itemsize` were breaks)."""
    nn = torch.nn

    class PatchMixer(nn.Module):
        def __init__(self, C=3, p=2, d=8, heads=2):
            super().__init__()
            self.p, self.heads = p, heads
            self.embed = nn.Linear(C * p * p, d)

        def forward(self, img):
            _, _, H, W = img.shape
            x = img.unflatten(2, (H // self.p, self.p)).unflatten(4, (W // self.p, self.p))
            x = self.embed(x.permute(0, 2, 4, 3, 5, 1).flatten(3).flatten(1, 2))
            q = x.unflatten(-1, (self.heads, -1)).movedim(2, 1)
            attn = (q @ q.mT).softmax(dim=-1)
            y = (attn @ q).swapaxes(1, 2).flatten(2)
            gram = y[0].H @ y[0] + y[1].mH @ y[1]
            bytes_per_row = y.nbytes // y.shape[0] + y.itemsize
            return y, gram, bytes_per_row, y.real.sum()

    m = PatchMixer()
    return m, (_rand(torch, 2, 3, 4, 6),), list


def module_device_property(torch):
    """HF-style `self.device` / `self.dtype` properties of a module (`next(self.parameters())`)
    read in forward, and a metrics object whose `avg` is a property over tensor state it
    accumulates (a property of a user class was a break)."""
    nn, F = torch.nn, torch.nn.functional

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6)
            self.fc = nn.Linear(6, 3)

        @property
        def device(self):
            return next(self.parameters()).device

        @property
        def dtype(self):
            return self.fc.weight.dtype

        def forward(self, ids):
            pos = torch.arange(ids.size(1), device=self.device)
            h = self.emb(ids).to(self.dtype) + pos[None, :, None].to(self.dtype) * 0.1
            return self.fc(h.mean(1))

    class AverageMeter:
        def __init__(self):
            self.sum = torch.zeros(())
            self.count = 0

        def update(self, val, n=1):
            self.sum += val.detach() * n
            self.count += n

        @property
        def avg(self):
            return self.sum / max(self.count, 1)

    m, meter = Model(), AverageMeter()

    def step(ids, y):
        loss = F.cross_entropy(m(ids), y)
        meter.update(loss, ids.size(0))
        return meter.avg

    ids = torch.tensor(np.random.default_rng(3).integers(0, 10, (2, 5)))
    return step, (ids, torch.tensor([0, 2])), lambda: [meter.sum, meter.count]


def backbone_feature_dict(torch):
    """torchvision-style IntermediateLayerGetter: iterate `named_children()` of a Sequential
    built from an OrderedDict, collect features into `OrderedDict()` (a call to OrderedDict was
    a break), pool with AdaptiveAvgPool2d((2, 2)) on a 3x3 map."""
    from collections import OrderedDict

    nn = torch.nn

    class Backbone(nn.Module):
        def __init__(self):
            super().__init__()
            self.stages = nn.Sequential(OrderedDict([
                ("stem", nn.Conv2d(3, 4, 3, padding=1)), ("act", nn.ReLU()),
                ("layer1", nn.Conv2d(4, 4, 3, stride=2, padding=1)),
                ("pool", nn.AdaptiveAvgPool2d((2, 2)))]))
            self.return_layers = {"layer1": "feat1", "pool": "feat2"}

        def forward(self, x):
            out = OrderedDict()
            for name, module in self.stages.named_children():
                x = module(x)
                if name in self.return_layers:
                    out[self.return_layers[name]] = x
            both = OrderedDict([("first", x.sum())], last=x.mean())
            return out, both, isinstance(out, OrderedDict)

    m = Backbone()
    return m, (_rand(torch, 2, 3, 6, 6),), list


def jit_guarded_block(torch):
    """timm/torchvision-style code: `if torch.jit.is_scripting() or not ...`, `torch.is_tensor`
    on an optional mask, `@torch.jit.unused` helpers, `torch.jit.annotate` (eager had no
    `torch.jit`, and is_tensor was a break)."""
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.d = d
            self.proj = nn.Linear(d, d)
            self.grad_checkpointing = False

        @torch.jit.unused
        def _checkpointed(self, x):
            return self.proj(x)

        def forward(self, x, mask=None):
            assert x.shape[-1] == self.d, f"expected last dim {self.d}, got {x.shape[-1]}"
            if self.grad_checkpointing and not torch.jit.is_scripting():
                h = self._checkpointed(x)
            else:
                h = self.proj(x)
            if torch.is_tensor(mask) and not torch.jit.is_tracing():
                h = h.masked_fill(~mask.bool()[..., None], 0.0)
            outs = torch.jit.annotate(list, [])
            outs.append(h)
            return outs, torch.is_tensor(self.d)

    m = Block()
    return m, (_rand(torch, 2, 4, 8), torch.tensor([[1, 1, 0, 1], [0, 1, 1, 1]])), list


def negative_binomial_nll(torch):
    """A scVI-style negative-binomial likelihood (lgamma) with `torch.special.xlogy`/`xlog1py`,
    `expit`, `logit` (eager.special's functions, written in registry ops, were breaks)."""
    nn, F = torch.nn, torch.nn.functional

    class NBDecoder(nn.Module):
        def __init__(self, z=4, genes=6):
            super().__init__()
            self.scale = nn.Linear(z, genes)
            self.log_theta = nn.Parameter(torch.zeros(genes))

        def forward(self, z, x):
            mu = F.softmax(self.scale(z), dim=-1) * 10.0
            theta = self.log_theta.exp()
            log_tm = torch.log(theta + mu + 1e-8)
            ll = (theta * (torch.log(theta + 1e-8) - log_tm) + x * (torch.log(mu + 1e-8) - log_tm)
                  + torch.lgamma(x + theta) - torch.lgamma(theta) - torch.lgamma(x + 1))
            extra = torch.special.xlogy(x, mu + 1).sum() + torch.special.xlog1py(x, mu).mean()
            gate = torch.special.logit(torch.special.expit(z), eps=1e-6)
            return -ll.sum(-1).mean(), extra, gate

    counts = np.random.default_rng(4).poisson(1.0, (3, 6)).astype(np.float32)
    m = NBDecoder()
    return m, (_rand(torch, 3, 4), torch.tensor(counts)), list


def python_functional_shapes(torch):
    """Shape and loss bookkeeping with `functools.reduce(operator.mul, ...)`,
    `itertools.accumulate`, `operator.add` on tensors, `max`/`min` with `key=` (reduce and
    accumulate were break sites)."""
    import functools
    import itertools
    import operator

    nn = torch.nn

    class Stack(nn.Module):
        def __init__(self, dims=(6, 8, 8, 4)):
            super().__init__()
            self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))

        def forward(self, x):
            flat = functools.reduce(operator.mul, x.shape[1:], 1)
            x = x.reshape(-1, flat)
            outs = []
            for layer in self.layers:
                x = torch.tanh(layer(x))
                outs.append(x)
            total = functools.reduce(operator.add, [o.sum(-1) for o in outs])
            running = list(itertools.accumulate(o.mean() for o in outs))
            scaled = list(itertools.accumulate(outs[:2], lambda a, b: a * 0.5 + b.sum(),
                                               initial=torch.zeros(())))
            widest = max(range(len(outs)), key=lambda i: outs[i].shape[-1])
            narrowest = min(outs, key=lambda o: o.shape[-1])
            return total, running, scaled, outs[widest], narrowest, operator.sub(x, 1.0)

    m = Stack()
    return m, (_rand(torch, 3, 2, 3),), list


def legacy_tensor_api(torch):
    """Pre-0.4 style model code: `Variable(x)`, `weight.data.new(b, h).zero_()`,
    `torch.FloatTensor(b, 1).fill_(0.5)`, `torch.LongTensor([..])`, `x.new([..])`,
    `.type(torch.FloatTensor)`, and the cast methods `.half()`, `.bfloat16()`, `.int()`,
    `.byte()` (each was a break)."""
    nn = torch.nn
    Variable = torch.autograd.Variable

    class OldRNN(nn.Module):
        def __init__(self, d=4, h=5):
            super().__init__()
            self.h = h
            self.i2h = nn.Linear(d + h, h)

        def forward(self, x):
            x = Variable(x)
            hidden = next(self.parameters()).data.new(x.size(0), self.h).zero_()
            for t in range(x.size(1)):
                hidden = torch.tanh(self.i2h(torch.cat((x[:, t], hidden), 1)))
            extra = torch.FloatTensor(x.size(0), 1).fill_(0.5)
            idx = torch.LongTensor([1, 0])
            out = torch.cat([hidden, extra], 1).type(torch.FloatTensor)
            scale = out.new([2.0])
            casts = (out.half(), out.bfloat16().float(), (out * 10).int(), (out > 0).byte())
            return out[idx] * scale, casts

    m = OldRNN()
    return m, (_rand(torch, 2, 3, 4),), list


def robust_stats_quantile(torch):
    """Robust feature scaling: median/MAD, `torch.quantile(x, torch.tensor([0.25, 0.75]),
    dim=0)` (a q tensor of the code's constants was a break: the op takes q as a constant),
    kthvalue, nanmean/nansum."""

    def robust_scale(x):
        med = x.median(dim=0, keepdim=True).values
        mad = (x - med).abs().median(dim=0, keepdim=True).values
        q = torch.quantile(x, torch.tensor([0.25, 0.75]), dim=0)
        filled = torch.where(x > 1.5, torch.full_like(x, float("nan")), x)
        return ((x - med) / (1.4826 * mad + 1e-6), q[1] - q[0], x.kthvalue(2, dim=0).values,
                torch.nanmean(filled, 0), torch.nansum(filled))

    return robust_scale, (_rand(torch, 7, 3),), list


def index_put_accumulate(torch):
    """A 2-D histogram by `grid.index_put_((rows, cols), w, accumulate=True)`, the out-of-place
    `index_put` and `torch.index_put`, and an accumulating store into an input (each explicit
    index_put call was a break; `x[idx] = v` already was in the graph)."""

    def scatter_counts(coords, weights, acc):
        grid = torch.zeros(4, 4)
        grid.index_put_((coords[:, 0], coords[:, 1]), weights, accumulate=True)
        hist = torch.zeros(4).index_put((coords[:, 0],), torch.ones(coords.size(0)),
                                        accumulate=True)
        marks = torch.index_put(grid, [coords[:, 1]], torch.tensor(1.0))
        acc.index_put_((coords[:, 1],), weights, accumulate=True)
        return grid, hist, marks, acc * 2

    coords = torch.tensor(np.random.default_rng(4).integers(0, 4, (9, 2)))
    acc = torch.zeros(4)
    return scatter_counts, (coords, _rand(torch, 9), acc), lambda: [acc]


def embedding_max_norm(torch):
    """`nn.Embedding(10, 4, max_norm=1.0)`: the looked-up rows renormalised in place first
    (eager read the indices on the host to dedupe them: a break inside the lookup); the
    weight's new values are compared too."""
    nn = torch.nn

    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 4, max_norm=1.0)
            self.fc = nn.Linear(4, 3)

        def forward(self, ids):
            return self.fc(self.emb(ids)).mean(1)

    m = Tagger()
    with torch.no_grad():
        m.emb.weight.mul_(3.0)
    ids = torch.tensor([[1, 2, 2, 5], [5, 5, 0, 9]])
    return m, (ids,), lambda: [m.emb.weight]


def user_optimizer_subclass(torch):
    """A user's Optimizer subclass (Lion-style, with a Python step count) compiled as a step:
    `self.state[p]` made on the first step (`len(state) == 0`), in-place updates of the
    parameters (`p.data.mul_`, `p.add_`) and of the state, `@torch.no_grad()` on step (the
    subclass's step was a break: 0 graphs). The state dicts are compared after each call."""
    nn = torch.nn

    class Lion(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-2, betas=(0.9, 0.99), weight_decay=0.1):
            super().__init__(params, {"lr": lr, "betas": betas, "weight_decay": weight_decay})

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    p.data.mul_(1 - group["lr"] * group["weight_decay"])
                    state = self.state[p]
                    if len(state) == 0:
                        state["exp_avg"] = torch.zeros_like(p)
                        state["step"] = 0
                    state["step"] += 1
                    exp_avg = state["exp_avg"]
                    beta1, beta2 = group["betas"]
                    update = exp_avg * beta1 + p.grad * (1 - beta1)
                    p.add_(torch.sign(update), alpha=-group["lr"])
                    exp_avg.mul_(beta2).add_(p.grad, alpha=1 - beta2)

    model = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    opt = Lion(model.parameters())
    for i, p in enumerate(model.parameters()):
        p.grad = _rand(torch, *p.shape, seed=20 + i)

    def step():
        opt.step()

    def state():
        return list(model.parameters()) + [
            {k: v for k, v in opt.state[p].items()} for p in model.parameters()]

    return step, (), state


CASES = [
    (patch_attention_mT, 1, 0, 1, 0),
    (module_device_property, 1, 0, 1, 0),
    (backbone_feature_dict, 1, 0, 1, 0),
    (jit_guarded_block, 1, 0, 1, 0),
    (negative_binomial_nll, 1, 0, 1, 0),
    (legacy_tensor_api, 1, 0, 1, 0),
    (robust_stats_quantile, 1, 0, 1, 0),
    (index_put_accumulate, 1, 0, 1, 0),
    (embedding_max_norm, 1, 0, 1, 0),
    (user_optimizer_subclass, 1, 0, 1, 0),
    (python_functional_shapes, 1, 0, 2, 1),  # torch: max(key=...) is a break in Dynamo
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same_types)


def test_factory_rule_when_functional_imports_it(monkeypatch):
    """`eager.nn.functional` importing a factory at module level (`from ..creation import
    as_tensor`) keeps the factory's rule: the functional namespace is read first, and the
    entry it made had no rule, so interpolate's `as_tensor(...)` of constants became a break."""
    from capture import vocabulary
    from eager.nn import functional as F

    monkeypatch.setattr(F, "as_tensor", eager.as_tensor, raising=False)
    monkeypatch.setattr(vocabulary, "_TABLE", None)
    assert vocabulary.rule_for(eager.as_tensor) is not None

    def up(x):
        return F.interpolate(x, scale_factor=2, mode="bilinear", align_corners=False) * 2

    x = _rand(eager, 1, 2, 3, 3)
    capture.reset()
    ex = capture.explain(up)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    _same(up(x), capture.compile(up)(x))


def test_getattr_default_of_absent_attribute_is_guarded():
    """`getattr(obj, "calls", 0)` of an attribute the object does not have yet: the compiled
    code guards on its absence, so the next call (the attribute now set) is not replayed with
    the first call's default (`calls` stayed 1 and the result was x * 1 every call)."""

    class Counter:
        pass

    def f(x, o):
        o.calls = getattr(o, "calls", 0) + 1
        return x * o.calls

    x = eager.ones(2)
    want, o1 = [], Counter()
    for _ in range(3):
        want.append((f(x, o1), o1.calls))
    capture.reset()
    cf, o2 = capture.compile(f), Counter()
    got = []
    for _ in range(3):
        got.append((cf(x, o2), o2.calls))
    _same(want, got)


def test_adaptive_avg_pool_uneven_windows_in_graph():
    """AdaptiveAvgPool2d((2, 2)) on a 3x5 map (windows that overlap): eager's averaging matrix
    is a constant of the shapes, folded at capture time (its numpy item stores were a break)."""
    pool = eager.nn.AdaptiveAvgPool2d((2, 2))

    def f(x):
        return pool(x).flatten(1) * 2

    x = _rand(eager, 2, 3, 3, 5)
    capture.reset()
    ex = capture.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    assert not ex.unique_break_reasons, str(ex)
    _same(f(x), capture.compile(f)(x))
    torch = pytest.importorskip("torch")
    want = torch.nn.AdaptiveAvgPool2d((2, 2))(torch.tensor(x.numpy())).flatten(1) * 2
    np.testing.assert_allclose(f(x).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_eager_jit_helpers_as_torch():
    """eager.jit's helpers answer as torch.jit's do outside TorchScript: False for
    is_scripting/is_tracing, decorators that keep the function callable, annotate's value."""
    from eager import jit

    def f(x):
        return x + 1

    assert jit.is_scripting() is False and jit.is_tracing() is False
    assert jit.ignore(f)(1) == 2 and jit.ignore(drop=True)(f)(1) == 2
    assert jit.unused(f)(1) == 2 and jit.export(f)(1) == 2
    assert jit.annotate(list, [3]) == [3]
    with pytest.raises(RuntimeError, match="must be a bool or a function"):
        jit.ignore(3)
    torch = pytest.importorskip("torch")
    assert torch.jit.is_scripting() is jit.is_scripting()
    assert torch.jit.ignore(drop=True)(f)(1) == jit.ignore(drop=True)(f)(1)
    with pytest.raises(RuntimeError, match="must be a bool or a function"):
        torch.jit.ignore(3)


def test_inference_mode_block_in_graph():
    """`with torch.inference_mode():` inside the compiled function: one graph (torch.compile:
    1 graph, 0 breaks; it was 3 break sites), outputs made inside are inference tensors as in
    eager, those made after it from them are not, on the capture and on the cache hit."""
    eager.manual_seed(0)
    net = eager.nn.Sequential(eager.nn.Linear(4, 4), eager.nn.GELU())

    def infer(x):
        device = "cuda" if eager.cuda.is_available() else "cpu"
        with eager.inference_mode():
            y = net(x.to(device))
            z = y * 2
        return y, z, y + 1

    x = _rand(eager, 2, 4)
    capture.reset()
    ex = capture.explain(infer)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    assert not ex.unique_break_reasons, str(ex)
    want, cf = infer(x), capture.compile(infer)
    for _ in range(2):
        got = cf(x)
        _same(want, got)
        assert [t.is_inference() for t in got] == [t.is_inference() for t in want] \
            == [True, True, False]
        assert [t.requires_grad for t in got] == [t.requires_grad for t in want]
    with pytest.raises(RuntimeError, match="[Ii]nference"):
        got[0].add_(1)


def test_quantile_of_a_written_constant_tensor_breaks_correctly():
    """A q tensor written in place after it was made is no longer the code's constant: the
    quantile is a break and the result is eager's."""

    def f(x):
        q = eager.tensor([0.2, 0.8])
        q.mul_(0.5)
        return eager.quantile(x, q, dim=0)

    x = _rand(eager, 7, 3)
    capture.reset()
    _same(f(x), capture.compile(f)(x))
