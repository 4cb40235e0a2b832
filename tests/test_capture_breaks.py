"""Named capture breaks that torch.compile does not have (issue 14's "Left" list): each case is
a realistic piece of model code built by `build(lib)` for `lib` = wick's `eager` or the real
torch. It runs eagerly and compiled (twice: capture, then the cache hit) from the same seed,
comparing outputs (values, dtypes) and the state it names (buffers, parameters, version
counters, the generator's next draw); its graph and break counts from `capture.explain` are
checked, and when torch is installed torch._dynamo.explain's counts on the same code are too.
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


def _same(a, b):
    same(a, b, _flat)


# ---------------------------------------------------------------- 1. in-place samplers


def locked_dropout_lm(torch):
    """An AWD-LSTM-style language model in training: a DropConnect mask kept as a buffer and
    redrawn in place each step (`self.mask.bernoulli_(keep)`), a locked (variational) dropout
    mask `x.new_empty(b, 1, d).bernoulli_(keep_per_feature)` with a tensor of probabilities,
    and negative samples `torch.empty(b, k, dtype=torch.long).random_(vocab)` scored against
    the context; `cauchy_`/`log_normal_`/`geometric_` jitter. The compiled draws must equal
    eager's, the buffer must be written back (its version bumped once) and the generator must
    be left where eager leaves it (the state's next draw)."""
    nn, F = torch.nn, torch.nn.functional

    class LM(nn.Module):
        def __init__(self, vocab=20, d=8, p=0.25):
            super().__init__()
            self.vocab, self.p = vocab, p
            self.emb = nn.Embedding(vocab, d)
            self.proj = nn.Linear(d, d)
            self.register_buffer("mask", torch.ones(d, d))
            self.register_buffer("keep", torch.linspace(0.5, 1.0, d))

        def forward(self, tokens, k: int = 3):
            self.mask.bernoulli_(1 - self.p)
            h = self.emb(tokens)
            h = h * h.new_empty(h.shape[0], 1, h.shape[2]).bernoulli_(self.keep) / self.keep
            h = F.linear(h, self.proj.weight * self.mask, self.proj.bias)
            h = h * torch.empty(h.shape[0], 1, 1).log_normal_(0.0, 0.1)
            h = h + 0.01 * torch.empty_like(h).cauchy_() / torch.empty(1).geometric_(0.5)
            neg = torch.empty(tokens.shape[0], k, dtype=torch.long).random_(self.vocab)
            ctx = h.mean(1)
            pos = (ctx * self.emb(tokens[:, -1])).sum(-1)
            negs = torch.einsum("bd,bkd->bk", ctx, self.emb(neg))
            return -(F.logsigmoid(pos).mean() + F.logsigmoid(-negs).mean()), neg

    m = LM()

    def step(tokens):
        return m(tokens)

    tokens = torch.tensor([[1, 4, 7, 2, 9], [3, 3, 8, 0, 19]])
    return step, (tokens,), lambda: [m.mask, m.mask._version, torch.rand(3)]


# ---------------------------------------------------------------- 3, 4. .data and detach()


def _param_state(*modules):
    """Parameters with whether their version counters moved (a write-back bumps once per
    graph, eager once per in-place op) and their autograd flags (leaf, requires_grad)."""
    return [[p, p._version > 0, p.requires_grad, p.is_leaf, p.grad_fn is None]
            for m in modules for p in m.parameters()]


def manual_update_through_data(torch):
    """Old-style training code through `.data`: a manual SGD update `p.data -= lr * p.grad`,
    an EMA copy `e.data.mul_(0.9).add_(0.1 * p.data)`, a clamp assigned back `w.data =
    w.data.clamp(...)` and a `.data` read returned. Eager's `.data` is a detached alias with
    its own version counter: the parameters' versions must not move (autograd does not see
    these writes), they stay leaves that require grad, and the returned `.data` shares memory."""
    nn = torch.nn
    critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    ema = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    critic(_rand(torch, 5, 4, seed=3)).sum().backward()

    def step(x, lr: float = 0.05):
        q = critic(x)
        with torch.no_grad():
            for p in critic.parameters():
                p.data -= lr * p.grad
        for e, p in zip(ema.parameters(), critic.parameters()):
            e.data.mul_(0.9).add_(0.1 * p.data)
        critic[2].weight.data = critic[2].weight.data.clamp(-0.05, 0.05)
        w = critic[0].weight.data
        return q, w.norm(), w, w.requires_grad

    return step, (_rand(torch, 5, 4),), lambda: _param_state(critic, ema)


def wgan_critic_clipping(torch):
    """A WGAN critic step: the weights clipped in place through `.data` before the forward
    (`p.data.clamp_(-c, c)`), the Wasserstein loss, `backward()` (a break), a manual update
    `p.data -= lr * p.grad` and `p.grad = None`. The forward reads the clipped leaves with
    grad in the graph that clipped them: their gradients must reach the leaves."""
    nn = torch.nn
    critic = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))

    def step(real, fake, lr: float = 0.05, clip: float = 0.1):
        for p in critic.parameters():
            p.data.clamp_(-clip, clip)
        loss = critic(fake).mean() - critic(real).mean()
        loss.backward()
        with torch.no_grad():
            for p in critic.parameters():
                p.data -= lr * p.grad
                p.grad = None
        return loss.detach()

    return step, (_rand(torch, 6, 4), _rand(torch, 6, 4, seed=5)), \
        lambda: _param_state(critic)


def byol_momentum_encoder(torch):
    """A BYOL/MoCo momentum encoder: the target network follows the online one through
    in-place ops on `detach()`ed parameters (`pt.detach().mul_(m).add_(po.detach(), alpha=1 -
    m)`), then encodes the second view under no_grad. `detach()` shares the version counter:
    the target parameters' versions move as eagerly."""
    nn, F = torch.nn, torch.nn.functional
    online = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    target = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    predictor = nn.Linear(4, 4)

    def step(x1, x2, m: float = 0.9):
        p = predictor(online(x1))
        with torch.no_grad():
            for pt, po in zip(target.parameters(), online.parameters()):
                pt.detach().mul_(m).add_(po.detach(), alpha=1 - m)
            z = target(x2)
        return 2 - 2 * F.cosine_similarity(p, z, dim=-1).mean()

    return step, (_rand(torch, 5, 6), _rand(torch, 5, 6, seed=2)), \
        lambda: _param_state(target, online)


# ---------------------------------------------------------------- 5. EmbeddingBag with offsets


def fasttext_offsets(torch):
    """A fastText-style classifier over variable-length documents packed as 1-D token ids
    with `offsets` (an empty document included), a weighted "sum" bag (per_sample_weights,
    include_last_offset) and a "max" bag beside the "mean" one; cross-entropy on the logits.
    Eager read the offsets on the host (one eager site); they are now registry ops."""
    nn, F = torch.nn, torch.nn.functional

    class FastText(nn.Module):
        def __init__(self, vocab=30, d=6, classes=3):
            super().__init__()
            self.mean_bag = nn.EmbeddingBag(vocab, d, mode="mean")
            self.max_bag = nn.EmbeddingBag(vocab, d, mode="max")
            self.tfidf_bag = nn.EmbeddingBag(vocab, d, mode="sum", include_last_offset=True)
            self.fc = nn.Linear(3 * d, classes)

        def forward(self, tokens, offsets, weights):
            ends = torch.cat([offsets, offsets.new_tensor([tokens.shape[0]])])
            h = torch.cat([self.mean_bag(tokens, offsets), self.max_bag(tokens, offsets),
                           self.tfidf_bag(tokens, ends, per_sample_weights=weights)], -1)
            return self.fc(h)

    m = FastText()

    def step(tokens, offsets, weights, labels):
        logits = m(tokens, offsets, weights)
        return F.cross_entropy(logits, labels), logits

    tokens = torch.tensor([3, 7, 7, 1, 29, 4, 4, 4, 12, 0, 5])
    offsets = torch.tensor([0, 3, 3, 8])
    weights = torch.tensor(np.linspace(0.5, 1.5, 11).astype(np.float32))
    return step, (tokens, offsets, weights, torch.tensor([0, 2, 1, 2])), \
        lambda: list(m.parameters())


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag_offsets_like_torch(mode, last):
    """The registry-op form of 1-D bags with offsets against torch: values and the weight's
    gradient (an empty bag; per_sample_weights in "sum" mode)."""
    torch = pytest.importorskip("torch")
    w = np.random.default_rng(0).standard_normal((10, 3)).astype(np.float32)
    idx, off = [1, 2, 4, 5, 4, 3, 2, 9], [0, 2, 2, 5] + ([8] if last else [])
    psw = np.linspace(-1, 2, 8).astype(np.float32) if mode == "sum" else None
    got = []
    for lib in (eager, torch):
        weight = lib.tensor(w, requires_grad=True)
        out = lib.nn.functional.embedding_bag(
            lib.tensor(idx), weight, lib.tensor(off), mode=mode, include_last_offset=last,
            per_sample_weights=None if psw is None else lib.tensor(psw))
        (out * lib.arange(12.0).reshape(4, 3)).sum().backward()
        got.append((out.detach().numpy(), weight.grad.numpy()))
    for a, b in zip(*got):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- 2. optimizer steps

OPTIMIZERS = [
    ("RMSprop", {"lr": 0.01}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9, "centered": True, "weight_decay": 1e-2}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.5, "maximize": True}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.1}),
    ("Adadelta", {"lr": 1.0, "weight_decay": 1e-2}),
    ("Adamax", {"lr": 0.02, "weight_decay": 0.1}),
    ("NAdam", {"lr": 0.02}),
    ("NAdam", {"lr": 0.02, "weight_decay": 0.1, "decoupled_weight_decay": True}),
    ("RAdam", {"lr": 0.02, "weight_decay": 0.1}),
    ("RAdam", {"lr": 0.02, "weight_decay": 0.1, "decoupled_weight_decay": True}),
]
OPT_IDS = [f"{n}-{'-'.join(f'{k}={v}' for k, v in kw.items() if k != 'lr')}"
           for n, kw in OPTIMIZERS]


def _classifier(lib, name, kw):
    """An MLP classifier with LayerNorm, its optimizer and a StepLR schedule (the lr is a graph
    input: a schedule's change must not recompile)."""
    nn = lib.nn
    lib.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.LayerNorm(16), nn.GELU(), nn.Linear(16, 3))
    opt = getattr(lib.optim, name)(model.parameters(), **kw)
    sched = lib.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.5)
    x, y = _rand(lib, 8, 6), lib.tensor([0, 1, 2, 0, 1, 2, 0, 1])
    return model, opt, sched, x, y


@pytest.mark.parametrize("name,kw", OPTIMIZERS, ids=OPT_IDS)
def test_optimizer_step_in_graph(name, kw):
    """`opt.step()` compiled alone, after eager's backward, equals eager's step bit for bit
    for 8 steps (the first makes the state; RAdam's rectification starts at step 6): the
    parameters, every state tensor and its key order, and the parameters' version counters."""
    model, opt, sched, x, y = _classifier(eager, name, kw)
    eager.nn.functional.cross_entropy(model(x), y).backward()
    ex = capture.explain(lambda: opt.step())()
    assert (ex.graph_count, ex.graph_break_count, ex.unique_break_reasons) == (1, 0, []), str(ex)
    runs = []
    for compiled in (False, True):
        model, opt, sched, x, y = _classifier(eager, name, kw)

        def step(opt=opt):
            opt.step()

        capture.reset()
        run = capture.compile(step) if compiled else step
        for _ in range(8):
            opt.zero_grad()
            eager.nn.functional.cross_entropy(model(x), y).backward()
            run()
            sched.step()
        params = list(model.parameters())
        runs.append((params, [p._version for p in params],
                     [(k, v) for p in params for k, v in opt.state[p].items()]))
        if compiled:  # one entry: the first step's state is made at capture (as Dynamo's
            # _init_group; Adagrad's constructor makes it), the lr's changes at steps 3 and 6
            # do not recompile
            entries = sum(len(cf.entries) for cf in run.__wick_compiled__.all_functions())
            assert entries == 1
    (pa, va, sa), (pb, vb, sb) = runs
    # each compiled step writes each parameter back once (one version bump, as torch.compile's
    # functionalized copy_); eager bumps once per in-place op (NAdam's two addcdiv_)
    assert vb == [8] * len(vb) and all(a >= b for a, b in zip(va, vb))
    assert [k for k, _ in sa] == [k for k, _ in sb]
    for a, b in zip(pa + [v for _, v in sa], pb + [v for _, v in sb]):
        assert a.dtype is b.dtype
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


@pytest.mark.parametrize("name", ["Adam", "RMSprop"])
def test_compiled_bound_step(name):
    """`compile(opt.step)` (the bound method as the target: capture traces the hooks' wrapper,
    then reaches the undecorated step) is one graph equal to eager's step."""
    runs = []
    for compiled in (False, True):
        model, opt, _, x, y = _classifier(eager, name, {"lr": 0.01})
        capture.reset()
        run = capture.compile(opt.step) if compiled else opt.step
        for _ in range(3):
            opt.zero_grad()
            eager.nn.functional.cross_entropy(model(x), y).backward()
            run()
        runs.append([p.detach().numpy().copy() for p in model.parameters()])
        assert opt._opt_called and not opt.__dict__.get("_in_step")
    for a, b in zip(*runs):
        np.testing.assert_array_equal(a, b)
    model, opt, _, x, y = _classifier(eager, name, {"lr": 0.01})
    eager.nn.functional.cross_entropy(model(x), y).backward()
    ex = capture.explain(opt.step)()
    assert (ex.graph_count, ex.graph_break_count, ex.unique_break_reasons) == (1, 0, []), str(ex)


@pytest.mark.parametrize("name,kw", OPTIMIZERS[:1] + OPTIMIZERS[3:7:2] + OPTIMIZERS[8:9],
                         ids=OPT_IDS[:1] + OPT_IDS[3:7:2] + OPT_IDS[8:9])
def test_optimizer_training_step_counts(name, kw):
    """A whole training step (zero_grad, forward, backward, step): 2 graphs and 1 break at
    `backward()`, as torch.compile; the step after the break is one graph (it was eager)."""
    model, opt, _, x, y = _classifier(eager, name, kw)

    def train_step(x, y):
        opt.zero_grad()
        loss = eager.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    capture.reset()
    ex = capture.explain(train_step)(x, y)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), str(ex)
    assert [r for r in ex.unique_break_reasons if "step" in str(r)] == [], str(ex)


@pytest.mark.parametrize("name,kw", OPTIMIZERS[:1] + OPTIMIZERS[3:7:2] + OPTIMIZERS[8:9],
                         ids=OPT_IDS[:1] + OPT_IDS[3:7:2] + OPT_IDS[8:9])
def test_optimizer_training_step_torch_counts(name, kw):
    torch = pytest.importorskip("torch")
    model, opt, _, x, y = _classifier(torch, name, kw)

    def train_step(x, y):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    torch._dynamo.reset()
    ex = torch._dynamo.explain(train_step)(x, y)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1)


# ---------------------------------------------------------------- 6. try/except handlers


def alibi_attention_cache(torch):
    """Attention with an ALiBi bias memoised per length: `try: return self.cache[n]` /
    `except KeyError:` builds the bias with tensor ops and stores it; a per-layer scale read
    from a list with `except IndexError:` falling back to a tensor computed from the scores.
    The first call runs the handlers, the second the `try` bodies (the cache is filled, the
    key's presence guarded). The handlers were run eagerly after a break."""
    import math

    nn = torch.nn

    class Attention(nn.Module):
        def __init__(self, d=8, heads=2):
            super().__init__()
            self.heads, self.qkv = heads, nn.Linear(d, 3 * d)
            self.cache, self.layer_scale = {}, [0.5]

        def alibi(self, n):
            try:
                return self.cache[n]
            except KeyError:
                slopes = torch.tensor([2.0 ** -(i + 1) for i in range(self.heads)])
                pos = torch.arange(n)
                dist = (pos[None, :] - pos[:, None]).abs().float()
                bias = -dist[None] * slopes[:, None, None]
                self.cache[n] = bias
                return bias

        def forward(self, x, layer: int = 1):
            b, n, d = x.shape
            q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
            att = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + self.alibi(n)
            out = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, d)
            try:
                scale = self.layer_scale[layer]
            except IndexError:
                scale = att.detach().std().clamp(max=1.0)
            return out * scale

    m = Attention()
    return m, (_rand(torch, 2, 5, 8),), lambda: sorted(m.cache)


def test_handler_fallbacks_stay_correct():
    """Handlers that cannot be traced fall back to the break at the raising instruction, the
    handler run by CPython: a `print` inside the handler, an `except` that does not match (the
    exception propagates), and an AttributeError (an absent attribute is not guarded: once
    the attribute exists, the `try` body must run)."""
    class Obj:
        pass

    o = Obj()
    table = {}

    def f(x):
        try:
            t = o.temperature
        except AttributeError:
            t = x.abs().max()
        try:
            s = table["scale"]
        except KeyError:
            print("no scale")
            s = x.std()
        try:
            u = table["u"]
        except IndexError:
            u = 0.0
        return x * s / t + u

    x = _rand(eager, 3, 4)
    capture.reset()
    compiled = capture.compile(f)
    with pytest.raises(KeyError):
        compiled(x)
    table["u"] = 1.5
    for change in (lambda: None, lambda: setattr(o, "temperature", 3.0),
                   lambda: table.update(scale=2.0)):
        change()
        np.testing.assert_allclose(compiled(x).numpy(), f(x).numpy(), rtol=1e-6)


# ---------------------------------------------------------------- 7. counts under Dynamo's rules


def _train_step(lib, variant):
    """A classifier's training step; `variant`: what follows `opt.step()` ("metrics": the
    accuracy computed after the step, "detach": `loss.detach()` (a view wick rebuilds after
    the graph), "item": `.item()`, "loss": the loss itself, "step": the step alone)."""
    F = lib.nn.functional
    lib.manual_seed(0)
    model = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 3))
    opt = lib.optim.Adam(model.parameters(), lr=0.01)
    x, y = _rand(lib, 5, 4), lib.tensor([0, 1, 2, 0, 1])
    if variant == "step":
        F.cross_entropy(model(x), y).backward()
        return (lambda: opt.step()), ()

    def step(x, y):
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        loss.backward()
        opt.step()
        if variant == "metrics":
            return loss.detach(), (logits.argmax(-1) == y).float().mean()
        if variant == "detach":
            return loss.detach()
        return loss.item() if variant == "item" else loss

    return step, (x, y)


# variant, wick's (graphs, breaks), Dynamo's (torch.optim's step between two graph breaks)
TRAIN_STEPS = [("metrics", (2, 1), (3, 2)), ("detach", (2, 1), (3, 2)), ("item", (2, 1), (2, 1)), ("loss", (2, 1), (2, 1)),
               ("step", (1, 0), (1, 0))]


@pytest.mark.parametrize("variant,wick,dynamo", TRAIN_STEPS, ids=[t[0] for t in TRAIN_STEPS])
def test_training_step_counts_under_dynamo_rules(variant, wick, dynamo):
    """`explain` counts wick's graphs, and beside them the graphs Dynamo would make of the same
    code (`dynamo_graph_count`): torch.optim's step is a graph of its own under torch.compile,
    so the metrics after the step are a third graph there."""
    fn, args = _train_step(eager, variant)
    capture.reset()
    ex = capture.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == wick, str(ex)
    assert (ex.dynamo_graph_count, ex.dynamo_graph_break_count) == dynamo, str(ex)


VIEW_FRAMES = [(lambda x: x.detach(), 0, 1), (lambda x: x.t(), 0, 1), (lambda x: x[0], 0, 1),
               (lambda x: (x.t(), x + 1), 1, 1)]


@pytest.mark.parametrize("k", range(len(VIEW_FRAMES)))
def test_view_only_frames_under_dynamo_rules(k):
    """A frame that only returns a view of its input: wick rebuilds the view (no graph op),
    Dynamo compiles a graph of it."""
    fn, wick, dynamo = VIEW_FRAMES[k]
    capture.reset()
    ex = capture.explain(fn)(_rand(eager, 3, 4))
    assert (ex.graph_count, ex.dynamo_graph_count) == (wick, dynamo), str(ex)


@pytest.mark.parametrize("k", range(len(VIEW_FRAMES)))
def test_view_only_frames_torch_counts(k):
    torch = pytest.importorskip("torch")
    fn, _, dynamo = VIEW_FRAMES[k]
    torch._dynamo.reset()
    assert torch._dynamo.explain(fn)(_rand(torch, 3, 4)).graph_count == dynamo


@pytest.mark.parametrize("variant,wick,dynamo", TRAIN_STEPS, ids=[t[0] for t in TRAIN_STEPS])
def test_training_step_torch_counts(variant, wick, dynamo):
    torch = pytest.importorskip("torch")
    fn, args = _train_step(torch, variant)
    torch._dynamo.reset()
    ex = torch._dynamo.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == dynamo


CASES = [
    (locked_dropout_lm, 1, 0, 2, 1),  # torch: Dynamo breaks on Tensor.random_ (wick records it)
    (manual_update_through_data, 1, 0, 1, 0),
    (wgan_critic_clipping, 2, 1, 2, 1),
    (byol_momentum_encoder, 1, 0, 1, 0),
    (fasttext_offsets, 1, 0, 1, 0),
    (alibi_attention_cache, 1, 0, 1, 0),
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)
