"""Realistic model programs for measuring capture (issue 14), written once as PyTorch code and
built for either library (`eager` as wick's torch, or `torch`).

`CASES` maps a name to `build(lib) -> (fn, args, state)`: `fn` is what a user would compile
(a module or a step function), `args` its arguments (fresh tensors), `state()` the tensors whose
values after the call must match eager's (parameters, buffers, caches). Weights come from
`lib.manual_seed(0)`, so two builds with the same library are identical. Used by
`capture_counts.py`; not a test module (the project's tests live in tests/).
"""

from __future__ import annotations

import math

import numpy as np


def _t(lib, a):
    return lib.tensor(a)


def _rand(shape, seed=1):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def prenorm_block(lib):
    """Pre-norm transformer block, attention written by hand with a causal mask buffer."""
    nn, F = lib.nn, lib.nn.functional

    class Block(nn.Module):
        def __init__(self, d=32, heads=4, t=16):
            super().__init__()
            self.heads = heads
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
            self.register_buffer("mask", lib.tril(lib.ones(t, t)).view(1, 1, t, t))

        def attn(self, x):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=2)
            q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.shape[-1]))
            att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
            return self.proj(y)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.mlp(self.ln2(x))

    lib.manual_seed(0)
    m = Block()
    return m, (_t(lib, _rand((2, 16, 32))),), lambda: []


def gpt_kv_decode(lib):
    """GPT-style ModuleList stack decoding one token with a KV cache held in buffers."""
    nn, F = lib.nn, lib.nn.functional

    class Layer(nn.Module):
        def __init__(self, d, heads, tmax):
            super().__init__()
            self.heads = heads
            self.ln = nn.LayerNorm(d)
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.o = nn.Linear(d, d)
            self.register_buffer("k_cache", lib.zeros(1, heads, tmax, d // heads))
            self.register_buffer("v_cache", lib.zeros(1, heads, tmax, d // heads))

        def forward(self, x, pos: int):
            b, t, c = x.shape
            h = self.ln(x)
            q = self.q(h).view(b, t, self.heads, -1).transpose(1, 2)
            k = self.k(h).view(b, t, self.heads, -1).transpose(1, 2)
            v = self.v(h).view(b, t, self.heads, -1).transpose(1, 2)
            self.k_cache[:, :, pos:pos + t] = k
            self.v_cache[:, :, pos:pos + t] = v
            keys, vals = self.k_cache[:, :, :pos + t], self.v_cache[:, :, :pos + t]
            att = F.softmax(q @ keys.transpose(-2, -1) / math.sqrt(c // self.heads), dim=-1)
            return x + self.o((att @ vals).transpose(1, 2).reshape(b, t, c))

    class GPT(nn.Module):
        def __init__(self, vocab=64, d=32, heads=4, n=2, tmax=16):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList([Layer(d, heads, tmax) for _ in range(n)])
            self.head = nn.Linear(d, vocab)

        def forward(self, idx, pos: int):
            x = self.emb(idx)
            for layer in self.layers:
                x = layer(x, pos)
            return self.head(x)[:, -1]

    lib.manual_seed(0)
    m = GPT()
    idx = _t(lib, np.array([[3]]))
    return m, (idx, 5), lambda: [b for _, b in sorted(m.named_buffers())]


def cnn_bn_train(lib):
    """A CNN with BatchNorm in training mode (running statistics are updated)."""
    nn = lib.nn
    lib.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Flatten(), nn.Linear(8 * 4 * 4, 10))
    m.train()
    return m, (_t(lib, _rand((4, 1, 8, 8))),), lambda: [b for _, b in sorted(m.named_buffers())]


def lm_train_step(lib):
    """An embedding + linear LM training step: forward, cross entropy, backward, SGD step."""
    nn, F = lib.nn, lib.nn.functional
    lib.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50, 16), nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 50))
    opt = lib.optim.SGD(model.parameters(), lr=0.1)

    def train_step(idx, targets):
        logits = model(idx)
        loss = F.cross_entropy(logits.view(-1, 50), targets.view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    rng = np.random.default_rng(2)
    args = (_t(lib, rng.integers(0, 50, (4, 8))), _t(lib, rng.integers(0, 50, (4, 8))))
    return train_step, args, lambda: [p for _, p in sorted(model.named_parameters())]


def moe_moduledict(lib):
    """Dense mixture of experts: a softmax router weighting experts held in a ModuleDict."""
    nn, F = lib.nn, lib.nn.functional

    class MoE(nn.Module):
        def __init__(self, d=16, names=("a", "b", "c")):
            super().__init__()
            self.router = nn.Linear(d, len(names))
            self.experts = nn.ModuleDict({n: nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(),
                                                           nn.Linear(2 * d, d)) for n in names})

        def forward(self, x):
            gates = F.softmax(self.router(x), dim=-1)
            out = lib.zeros_like(x)
            for i, (name, expert) in enumerate(self.experts.items()):
                out = out + gates[:, i:i + 1] * expert(x)
            return out

    lib.manual_seed(0)
    m = MoE()
    return m, (_t(lib, _rand((8, 16))),), lambda: []


def print_in_submodule(lib):
    """A model whose middle submodule prints a statistic (a real break in both)."""
    nn = lib.nn

    class Noisy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            h = self.lin(x).relu()
            print("noisy: mean activation computed")
            return h * 2

    lib.manual_seed(0)
    m = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), Noisy(), nn.Linear(8, 4))
    return m, (_t(lib, _rand((3, 8))),), lambda: []


def counter_and_list(lib):
    """`self.steps += 1` and appending activations to a list argument."""
    nn = lib.nn

    class Tracked(nn.Module):
        def __init__(self):
            super().__init__()
            self.l1, self.l2 = nn.Linear(8, 8), nn.Linear(8, 8)
            self.steps = 0

        def forward(self, x, acts):
            self.steps += 1
            h = self.l1(x).relu()
            acts.append(h)
            h = self.l2(h)
            acts.append(h)
            return h.sum(-1)

    lib.manual_seed(0)
    m = Tracked()
    acts = []
    return m, (_t(lib, _rand((3, 8))), acts), lambda: list(acts)


CASES = {
    "pre-norm block, masked attention": prenorm_block,
    "GPT ModuleList + KV-cache decode": gpt_kv_decode,
    "CNN + BatchNorm (train)": cnn_bn_train,
    "embedding + CE LM train step": lm_train_step,
    "MoE routing, ModuleDict": moe_moduledict,
    "print in a submodule": print_in_submodule,
    "self counter + list.append arg": counter_and_list,
}
