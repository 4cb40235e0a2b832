"""Ordinary model code that capture got wrong or broke on (issue 14's bar, a fourth held-out
set of programs): each case is a model or training step written as PyTorch code and built by
`build(lib)` for `lib` = wick's `eager` or the real torch. It runs eagerly and compiled (twice:
capture, then the cache hit) from the same seed, comparing outputs (values and dtypes) and the
state it names (parameters, buffers); its graph and break counts from `capture.explain` are
checked, and when torch is installed torch._dynamo.explain's counts on the same code are too.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field

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
    if hasattr(v, "__dict__") and not isinstance(v, type):  # an object the case made
        return [type(v).__qualname__] + _flat(vars(v))
    return [v]


def _same(a, b):
    same(a, b, _flat)


# ---------------------------------------------------------------- cases


def unet_avg_pool(torch):
    """A U-Net down path with `F.avg_pool2d` (eager's composition computes its divisor with
    numpy: `np.ones((), dtype=np.int64)`, `np.multiply.outer`)."""
    nn, F = torch.nn, torch.nn.functional

    class Down(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.conv = nn.Conv2d(cin, cout, 3, padding=1)

        def forward(self, x):
            x = F.avg_pool2d(x, 2)
            return F.silu(self.conv(x)) + F.avg_pool2d(x, 3, 1, 1, count_include_pad=False)[:, :1]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.d1, self.d2 = Down(2, 4), Down(4, 4)

        def forward(self, x):
            h = self.d2(self.d1(x))
            return F.interpolate(h, scale_factor=4.0, mode="nearest") + x.mean(1, keepdim=True)

    m = Net()
    return m, (_rand(torch, 2, 2, 8, 8),), list


def gqa_repeat_interleave(torch):
    """Grouped-query attention: keys and values repeated per query group with an int count."""
    nn, F = torch.nn, torch.nn.functional

    class GQA(nn.Module):
        def __init__(self, d=16, n_heads=4, n_kv=2):
            super().__init__()
            self.nh, self.nkv, self.hd = n_heads, n_kv, d // n_heads
            self.q = nn.Linear(d, d, bias=False)
            self.kv = nn.Linear(d, 2 * n_kv * self.hd, bias=False)
            self.o = nn.Linear(d, d, bias=False)

        def forward(self, x):
            B, T, _ = x.shape
            q = self.q(x).view(B, T, self.nh, self.hd).transpose(1, 2)
            k, v = self.kv(x).view(B, T, 2, self.nkv, self.hd).permute(2, 0, 3, 1, 4)
            k = k.repeat_interleave(self.nh // self.nkv, dim=1)
            v = torch.repeat_interleave(v, repeats=self.nh // self.nkv, dim=-3)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.o(y.transpose(1, 2).reshape(B, T, -1))

    m = GQA()
    return m, (_rand(torch, 2, 5, 16),), list


def sliding_window_cache(torch):
    """A decoder's sliding-window KV cache: a `@torch.no_grad()` method pushes each step's key
    and value (roll + setitem, roll + index_copy_) and counts the filled slots."""
    nn, F = torch.nn, torch.nn.functional

    class SlidingAttn(nn.Module):
        def __init__(self, d=8, window=3):
            super().__init__()
            self.window = window
            self.qkv = nn.Linear(d, 3 * d)
            self.register_buffer("k_cache", torch.zeros(1, window, d))
            self.register_buffer("v_cache", torch.zeros(1, window, d))
            self.register_buffer("filled", torch.zeros((), dtype=torch.long))

        @torch.no_grad()
        def push(self, k, v):
            self.k_cache.copy_(torch.roll(self.k_cache, shifts=-1, dims=1))
            self.k_cache[:, -1] = k
            self.v_cache.copy_(self.v_cache.roll(-1, 1))
            self.v_cache.index_copy_(1, torch.tensor([self.window - 1]), v.unsqueeze(1))
            self.filled.add_(1).clamp_(max=self.window)

        def forward(self, x):
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            self.push(k, v)
            valid = torch.arange(self.window) >= (self.window - self.filled)
            scores = (self.k_cache @ q.unsqueeze(-1)).squeeze(-1) / math.sqrt(q.shape[-1])
            w = F.softmax(scores.masked_fill(~valid, float("-inf")), dim=-1)
            return (w.unsqueeze(-1) * self.v_cache).sum(1)

    m = SlidingAttn()

    def decode(xs):
        return torch.stack([m(xs[:, t]) for t in range(xs.shape[1])], dim=1)

    return decode, (_rand(torch, 1, 5, 8),), lambda: [m.k_cache, m.v_cache, m.filled]


def train_then_eval(torch):
    """A ResNet basic-block stack run in training mode (BatchNorm's running statistics) and
    then, in the same function, switched to eval mode: `m.train()` / `m.eval()` set every
    module's flag after the graph, and the second forward sees eval mode."""
    nn, F = torch.nn, torch.nn.functional

    class Block(nn.Module):
        def __init__(self, cin, cout, stride=1):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)), inplace=True)
            return F.relu(self.bn2(self.conv2(out)) + self.down(x))

    net = nn.Sequential(Block(2, 4, 2), Block(4, 4), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                        nn.Dropout(0.3), nn.Linear(4, 3))
    net.eval()

    def train_then_predict(x):
        net.train()
        a = net(x)
        net.eval()
        return a, net(x), net.training, net[0].bn1.training

    def state():
        return [b for _, b in sorted(net.named_buffers())] + [m.training for m in net.modules()]

    return train_then_predict, (_rand(torch, 3, 2, 6, 6),), state


def router_new_tensor(torch):
    """A router's entropy penalty weighted per head by `ent.new_tensor([...])` (constant data in
    the router's dtype) and a long counter made by `labels.new_tensor(0)`."""
    F = torch.nn.functional
    gate = torch.nn.Linear(6, 4)

    def route(x, labels):
        probs = F.softmax(gate(x), -1)
        ent = -(probs * probs.clamp_min(1e-9).log()).sum(-1)
        weights = ent.new_tensor([1.0, 0.5, 0.25])
        zero = labels.new_tensor(0)
        hits = (probs.argmax(-1) == labels).sum() + zero
        return (ent.view(3, -1).mean(1) * weights).sum(), hits, weights.dtype, zero.dtype

    labels = torch.tensor(np.random.default_rng(4).integers(0, 4, (6,)))
    return route, (_rand(torch, 6, 6), labels), list


def dataclass_lm_output(torch):
    """A GPT-style LM (tied embedding, causal-mask buffer) returning a dataclass of outputs made
    in forward (a field default, a `default_factory` list, `__post_init__`, a property, a
    method, `hasattr`), as HuggingFace's ModelOutput-style code does."""
    nn, F = torch.nn, torch.nn.functional

    @dataclass
    class LMOutput:
        logits: object
        loss: object = None
        hidden: list = field(default_factory=list)
        temperature: float = 1.0

        def __post_init__(self):
            self.vocab = self.logits.shape[-1]

        @property
        def probs(self):
            return F.softmax(self.logits / self.temperature, dim=-1)

        def top1(self):
            return self.logits.argmax(-1)

    class TinyLM(nn.Module):
        def __init__(self, vocab=12, d=8, block=6):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(block, d)
            self.qkv, self.ln = nn.Linear(d, 3 * d), nn.LayerNorm(d)
            self.head = nn.Linear(d, vocab, bias=False)
            self.head.weight = self.wte.weight
            self.register_buffer("mask", torch.tril(torch.ones(block, block)).bool())

        def forward(self, idx, targets=None):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T))
            q, k, v = self.qkv(self.ln(x)).chunk(3, -1)
            att = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
            att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
            h = x + att @ v
            out = LMOutput(self.head(h), temperature=0.5)
            out.hidden.append(h)
            if targets is not None:
                out.loss = F.cross_entropy(out.logits.flatten(0, 1), targets.flatten())
            return out

    m = TinyLM()

    def run(idx, targets):
        out = m(idx, targets)
        assert isinstance(out, LMOutput) and hasattr(out, "vocab")
        return out.loss, out.probs, out.top1(), out.hidden, out.vocab, out

    rng = np.random.default_rng(5)
    idx, tgt = (torch.tensor(rng.integers(0, 12, (2, 5))) for _ in range(2))
    return run, (idx, tgt), list


def record_across_break(torch):
    """A plain record object made in forward stays live across a `print` (a graph break):
    the code after the break reads and updates it, and it is returned."""
    nn = torch.nn

    class Stats:
        def __init__(self, mean, scale=1.0):
            self.mean, self.scale = mean, scale

        def normalize(self, x):
            return (x - self.mean) * self.scale

    lin = nn.Linear(5, 5)

    def forward(x):
        st = Stats(x.mean(0), scale=2.0)
        h = lin(st.normalize(x))
        print("normalized")
        st.scale = st.scale * 0.5
        return st.normalize(h), st

    return forward, (_rand(torch, 4, 5),), list


def gumbel_noise_sampling(torch):
    """A discrete-latent encoder in training: straight-through `F.gumbel_softmax` (eager draws
    its noise with `empty_like(logits).exponential_()`), Gaussian noise injection by
    `empty_like(h).normal_(0, sigma)` and a uniform jitter `torch.empty(...).uniform_(a, b)`;
    the state read after each call draws again, so the generator must be where eager left it."""
    nn, F = torch.nn, torch.nn.functional

    class DiscreteEncoder(nn.Module):
        def __init__(self, d=6, codes=4, sigma=0.1):
            super().__init__()
            self.sigma = sigma
            self.to_logits = nn.Linear(d, codes)
            self.codebook = nn.Parameter(torch.randn(codes, d))

        def forward(self, x, tau: float = 0.7):
            h = x + torch.empty_like(x).normal_(0.0, self.sigma)
            jitter = torch.empty(x.shape[0], 1).uniform_(-0.5, 0.5)
            onehot = F.gumbel_softmax(self.to_logits(h) + jitter, tau=tau, hard=True)
            return onehot @ self.codebook, onehot.argmax(-1)

    m = DiscreteEncoder()

    def step(x):
        z, codes = m(x)
        return z.pow(2).mean(), codes

    return step, (_rand(torch, 5, 6),), lambda: [torch.rand(3)]


class NormType(enum.Enum):
    LAYER = "layer"
    RMS = "rms"


def hf_mask_enum_config(torch):
    """A HuggingFace-style self-attention: the padding mask extended with
    `torch.finfo(dtype).min`, and the norm chosen by an enum member of a dataclass config
    (`self.cfg.norm == NormType.RMS`: enum members compare by identity)."""
    nn, F = torch.nn, torch.nn.functional

    @dataclass
    class Cfg:
        d: int = 12
        heads: int = 3
        norm: NormType = NormType.RMS

    class Layer(nn.Module):
        def __init__(self, cfg):
            super().__init__()
            self.cfg = cfg
            self.qkv, self.w = nn.Linear(cfg.d, 3 * cfg.d), nn.Parameter(torch.ones(cfg.d))

        def norm(self, x):
            if self.cfg.norm == NormType.RMS:
                return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.w
            if self.cfg.norm != NormType.LAYER:
                raise ValueError(self.cfg.norm)
            return F.layer_norm(x, x.shape[-1:], self.w)

        def forward(self, x, attention_mask):
            q, k, v = (t.unflatten(-1, (self.cfg.heads, -1)).transpose(1, 2)
                       for t in self.qkv(self.norm(x)).chunk(3, -1))
            scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(q.size(-1))
            ext = attention_mask[:, None, None, :].to(dtype=scores.dtype)
            scores = scores + (1.0 - ext) * torch.finfo(scores.dtype).min
            return x + (scores.softmax(-1) @ v).transpose(1, 2).flatten(2)

    rms, ln = Layer(Cfg()), Layer(Cfg(norm=NormType.LAYER))
    mask = np.ones((2, 5), dtype=np.int64)
    mask[1, 3:] = 0

    def run(x, attention_mask):
        return rms(x, attention_mask), ln(x, attention_mask)

    return run, (_rand(torch, 2, 5, 12), torch.tensor(mask)), list


def box_list_subclass(torch):
    """Detection-style containers made in forward: a subclass calling `super().__init__(...)`
    up to `object.__init__`, a classmethod constructor and a method returning a new object."""
    nn = torch.nn

    class Fields:
        def __init__(self, size):
            super().__init__()
            self.size = size

    class Boxes(Fields):
        def __init__(self, xyxy, size):
            super().__init__(size)
            self.xyxy = xyxy

        @classmethod
        def from_cxcywh(cls, b, size):
            return cls(torch.cat([b[:, :2] - b[:, 2:] / 2, b[:, :2] + b[:, 2:] / 2], -1), size)

        def area(self):
            wh = (self.xyxy[:, 2:] - self.xyxy[:, :2]).clamp(min=0)
            return wh[:, 0] * wh[:, 1]

        def scale(self, s):
            return Boxes(self.xyxy * s, (self.size[0] * s, self.size[1] * s))

    head = nn.Linear(6, 4)

    def detect(feats):
        boxes = Boxes.from_cxcywh(head(feats).sigmoid(), (1, 1)).scale(32)
        return boxes.area(), boxes, boxes.size

    return detect, (_rand(torch, 3, 6),), list


def device_query_and_comprehensions(torch):
    """`torch.cuda.is_available()` picks the device (a constant of the machine), and dict and
    list comprehensions collect per-layer statistics, one over `sorted(raw.items())` (a break
    inside the comprehension's iterable: on 3.11 the comprehension is a nested function made
    before the break and called from the resume function)."""
    nn = torch.nn
    layers = nn.ModuleList(nn.Linear(6, 6) for _ in range(3))

    def run(x):
        device = "cuda" if torch.cuda.is_available() else "cpu"
        x = x.to(device)
        outs = []
        for layer in layers:
            x = torch.tanh(layer(x))
            outs.append(x)
        raw = {f"layer{i}": o.abs().mean() for i, o in enumerate(outs)}
        stats = {k: v * 2 for k, v in sorted(raw.items())}  # (sorted: a break)
        norms = [o.norm(dim=-1) for o in outs if o.shape[-1] == 6]
        return stats, norms, device

    return run, (_rand(torch, 4, 6),), list


def sage_aggregation(torch):
    """GraphSAGE-style max and mean neighbour aggregation (`scatter_reduce`,
    `Tensor.index_reduce_` on a fresh tensor) and a similarity matrix with its diagonal masked
    by `fill_diagonal_` (eager's composite in-place methods, inlined)."""
    nn = torch.nn

    class SAGE(nn.Module):
        def __init__(self, d=5):
            super().__init__()
            self.lin_self, self.lin_nb = nn.Linear(d, d), nn.Linear(2 * d, d)

        def forward(self, x, edge_index):
            src, dst = edge_index
            msg = x[src]
            idx = dst.unsqueeze(-1).expand(-1, x.shape[-1])
            mx = torch.zeros_like(x).scatter_reduce(0, idx, msg, reduce="amax",
                                                    include_self=False)
            mean = torch.zeros_like(x).index_reduce_(0, dst, msg, "mean", include_self=False)
            h = self.lin_self(x) + self.lin_nb(torch.cat([mx, mean], -1))
            sim = h @ h.t()
            sim.fill_diagonal_(float("-inf"))
            return h, sim.softmax(-1)

    m = SAGE()
    edges = torch.tensor(np.array([[0, 1, 2, 3, 3, 4], [1, 0, 1, 2, 4, 3]]))
    return m, (_rand(torch, 5, 5), edges), list


# (case, wick graphs, wick breaks, torch.compile graphs, torch.compile breaks)
CASES = [
    (unet_avg_pool, 1, 0, 1, 0),
    (gqa_repeat_interleave, 1, 0, 1, 0),
    (sliding_window_cache, 1, 0, 1, 0),
    (train_then_eval, 1, 0, 1, 0),
    (router_new_tensor, 1, 0, 1, 0),
    (dataclass_lm_output, 1, 0, 1, 0),
    (record_across_break, 2, 1, 2, 1),
    (box_list_subclass, 1, 0, 1, 0),
    (device_query_and_comprehensions, 2, 1, 2, 1),
    (sage_aggregation, 1, 0, 1, 0),
    (gumbel_noise_sampling, 1, 0, 1, 0),
    (hf_mask_enum_config, 1, 0, 1, 0),
]
test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def test_list_builtin_makes_a_new_list_each_call():
    """A feature pyramid collecting its levels in `list()` (and its strides in
    `list((8, 16))`): each compiled call returns new lists, so a caller appending to one call's
    result does not change the next call's (they were one constant list)."""
    nn = eager.nn
    convs = nn.ModuleList(nn.Conv2d(2, 2, 3, stride=2, padding=1) for _ in range(2))

    def pyramid(x):
        feats, strides = list(), list((8, 16))
        for conv in convs:
            x = conv(x)
            feats.append(x)
        strides.append(32)
        return feats, strides

    x = _rand(eager, 1, 2, 8, 8)
    capture.reset()
    compiled = capture.compile(pyramid)
    first = compiled(x)
    first[0].append("caller's"), first[1].append(64)
    second = compiled(x)
    assert second[1] == [8, 16, 32] and len(second[0]) == 2
    _same(pyramid(x), second)
    ex = capture.explain(pyramid)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0) and not ex.unique_break_reasons


def _rel_pos_model(lib):
    """A relative-position bias memoised in a dict: `try: return self.cache[n]` /
    `except KeyError:` builds and stores it (the first call misses, later calls hit)."""
    nn = lib.nn

    class RelPosAttention(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.qk = nn.Linear(d, 2 * d)
            self.slope = nn.Parameter(lib.tensor(-0.5))
            self.cache = {}

        def distances(self, n):
            try:
                return self.cache[n]
            except KeyError:
                pos = lib.arange(n)
                dist = (pos[None, :] - pos[:, None]).abs().float()
                self.cache[n] = dist
                return dist

        def forward(self, x):
            q, k = self.qk(x).chunk(2, -1)
            scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
            scores = scores + self.slope * self.distances(x.shape[1])
            return scores.softmax(-1) @ x

    return RelPosAttention()


def test_exception_caught_by_a_try_keeps_the_graph():
    """A KeyError met while capturing inside a `try` (here in an inlined method) enters its
    `except KeyError:` handler, captured into the graph (it made the whole frame run eagerly:
    0 graphs; then a break with the handler run eagerly)."""
    eager.manual_seed(0)
    m = _rel_pos_model(eager)
    x = _rand(eager, 2, 5, 8)
    capture.reset()
    ex = capture.explain(m)(x)  # the handler is traced (capture/handlers.py), as Dynamo
    assert (ex.graph_count, ex.graph_break_count, ex.unique_break_reasons) == (1, 0, []), str(ex)
    eager.manual_seed(0)
    ref = _rel_pos_model(eager)
    eager.manual_seed(0)
    got = _rel_pos_model(eager)
    capture.reset()
    compiled = capture.compile(got)
    for n in (5, 5, 3):
        x = _rand(eager, 2, n, 8, seed=n)
        _same(ref(x), compiled(x))
        assert sorted(ref.cache) == sorted(got.cache)


def test_exception_caught_by_a_try_torch_counts():
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    ex = torch._dynamo.explain(_rel_pos_model(torch))(torch.randn(2, 5, 8))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)


def _checkpointed(lib):
    """Transformer-style MLP blocks wrapped in activation checkpointing in training mode."""
    nn, F = lib.nn, lib.nn.functional
    from importlib import import_module

    ckpt = import_module(lib.__name__ + ".utils.checkpoint")

    class Block(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.ln, self.fc1, self.fc2 = nn.LayerNorm(d), nn.Linear(d, 2 * d), nn.Linear(2 * d, d)

        def forward(self, x, scale=1.0):
            return x + scale * self.fc2(F.gelu(self.fc1(self.ln(x))))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block() for _ in range(3))
            self.gradient_checkpointing = True

        def forward(self, x):
            for i, blk in enumerate(self.blocks):
                if self.gradient_checkpointing and self.training:
                    x = ckpt.checkpoint(blk, x, scale=0.5 + i, use_reentrant=False)
                else:
                    x = blk(x, scale=0.5 + i)
            return x.pow(2).mean()

    return Net()


def test_activation_checkpointing_stays_in_the_graph():
    """`checkpoint(blk, x, use_reentrant=False)` in a training forward: one graph (torch.compile
    too), and the loss and every parameter's gradient equal eager's."""
    eager.manual_seed(0)
    ref = _checkpointed(eager)
    eager.manual_seed(0)
    got = _checkpointed(eager)
    x = _rand(eager, 4, 8)
    capture.reset()
    ex = capture.explain(got)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0) and not ex.unique_break_reasons
    compiled = capture.compile(got)
    for _ in range(2):
        for m in (ref, got):
            m.zero_grad()
        want, have = ref(x), compiled(x)
        want.backward()
        have.backward()
        _same(want, have)
        for p, q in zip(ref.parameters(), got.parameters()):
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_activation_checkpointing_torch_counts():
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    ex = torch._dynamo.explain(_checkpointed(torch))(torch.randn(4, 8))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)


def _retriever(lib):
    """A kNN retrieval step decorated with `@torch.inference_mode()`."""
    F = lib.nn.functional
    lib.manual_seed(0)
    enc = lib.nn.Linear(6, 4)

    @lib.inference_mode()
    def retrieve(queries, keys, k: int = 2):
        q, kk = F.normalize(enc(queries), dim=-1), F.normalize(enc(keys), dim=-1)
        dist, idx = lib.cdist(q, kk).topk(k, dim=-1, largest=False)
        votes = F.one_hot(idx, keys.shape[0]).float().sum(1)
        return dist, idx, votes, lib.is_inference_mode_enabled()

    return retrieve


def test_inference_mode_decorated_function():
    """`compile(f)` of an `@inference_mode()` function compiles its body (1 graph, as
    torch.compile) and runs it in inference mode: the same values, outputs that are inference
    tensors (an in-place update outside the mode raises as eagerly), the mode restored."""
    ref, fn = _retriever(eager), _retriever(eager)
    q, k = _rand(eager, 3, 6), _rand(eager, 5, 6, seed=2)
    capture.reset()
    ex = capture.explain(fn)(q, k)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0) and not ex.unique_break_reasons
    compiled = capture.compile(fn)
    for _ in range(2):
        want, got = ref(q, k), compiled(q, k)
        _same(want, got)
        assert all(t.is_inference() for t in got[:3]) and got[3] is True
        assert not eager.is_inference_mode_enabled() and eager.is_grad_enabled()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor"):
        got[0].add_(1)


def test_inference_mode_decorated_torch_counts():
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    ex = torch._dynamo.explain(_retriever(torch))(torch.randn(3, 6), torch.randn(5, 6))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)
