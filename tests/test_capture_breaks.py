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

import capture
import eager


def _rand(lib, *shape, seed=1):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def _same(a, b):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        if isinstance(x, eager.Tensor):
            assert isinstance(y, eager.Tensor) and x.dtype is y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-5, atol=1e-6)
        else:
            assert x == y


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


CASES = [
    (locked_dropout_lm, 1, 0, 2, 1),  # torch: Dynamo breaks on Tensor.random_ (wick records it)
]

IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize("case,graphs,breaks,tg,tb", CASES, ids=IDS)
def test_compiled_like_eager(case, graphs, breaks, tg, tb):
    eager.manual_seed(0)
    fn, args, _ = case(eager)
    capture.reset()
    ex = capture.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), str(ex)
    if breaks == 0:
        assert not ex.unique_break_reasons, str(ex)
    eager.manual_seed(0)
    fe, ae, se = case(eager)
    eager.manual_seed(0)
    fc, ac, sc = case(eager)
    capture.reset()
    compiled = capture.compile(fc)
    for _ in range(2):
        eager.manual_seed(1)
        want = (fe(*ae), se())
        eager.manual_seed(1)
        got = (compiled(*ac), sc())
        _same(want, got)


@pytest.mark.parametrize("case,graphs,breaks,tg,tb", CASES, ids=IDS)
def test_torch_compile_counts(case, graphs, breaks, tg, tb):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    fn, args, _ = case(torch)
    torch._dynamo.reset()
    ex = torch._dynamo.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (tg, tb)
