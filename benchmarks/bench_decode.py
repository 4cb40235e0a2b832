"""GPT-style decoding with a KV cache: per-token time under wick eager, wick compiled
(`capture.compile`), torch eager and `torch.compile`, in one process (issue 14 item 8).

The model (float32, written once as PyTorch code, built by `eager` and by `torch`, wick's
weights copied from torch's): token embedding + 2 pre-LayerNorm blocks (d_model 128, 4 heads,
hand-written attention over per-layer `k_cache`/`v_cache` buffers of 256 positions written by
`cache[:, :, pos:pos + T] = k` and read as `cache[:, :, :pos + T]`, a causal mask sliced by
`pos`, GELU MLP 512) + linear head, vocab 256, batch 1. A decode is `model(prompt, 0)` for an
8-token prompt, then `model(tok, pos)` for one token a step, under `no_grad`: `pos` is a Python
int that changes every call (torch.compile marks it dynamic at its second value).

Reported per peer: the first decode's per-token time (captures and compiles included: torch
compiles one dynamic graph; wick runs each new position's op tape eagerly), the second
decode's (wick compiles one specialisation per position there, on its second call:
`capture.config.dynamic_compile_after`), the steady per-token time of later decodes over the
same positions (median over interleaved rounds, the peers alternating), and the cache entries
after the decodes. The logits of every peer are checked against torch
eager at the last step. First decodes start from empty disk caches (temporary WICK_CACHE_DIR
and TORCHINDUCTOR_CACHE_DIR) unless --warm-cache. torch is optional. BLAS and torch use one
thread.

    python benchmarks/bench_decode.py [--tokens N] [--rounds R] [--no-inductor] [--warm-cache]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

if "--warm-cache" not in sys.argv:  # first decodes from empty disk caches (wick's, inductor's)
    _CACHE = tempfile.mkdtemp(prefix="bench_decode_")
    os.environ["WICK_CACHE_DIR"] = os.path.join(_CACHE, "wick")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_CACHE, "inductor")

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import capture
import eager

try:
    import torch
except ImportError:  # an optional peer
    torch = None

D_MODEL, HEADS, LAYERS, MAX, VOCAB, PROMPT = 128, 4, 2, 256, 256, 8


def gpt(lib):
    """The decoder (see the module docstring) of `lib` (eager or torch)."""
    nn, F = lib.nn, lib.nn.functional
    hd = D_MODEL // HEADS

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(D_MODEL, 3 * D_MODEL)
            self.proj = nn.Linear(D_MODEL, D_MODEL)
            self.register_buffer("k_cache", lib.zeros(1, HEADS, MAX, hd))
            self.register_buffer("v_cache", lib.zeros(1, HEADS, MAX, hd))
            self.register_buffer("mask", lib.tril(lib.ones(MAX, MAX)).view(1, 1, MAX, MAX))

        def forward(self, x, pos):
            b, t, c = x.shape
            q, k, v = self.qkv(x).split(c, dim=-1)
            q = q.view(b, t, HEADS, hd).transpose(1, 2)
            k = k.view(b, t, HEADS, hd).transpose(1, 2)
            v = v.view(b, t, HEADS, hd).transpose(1, 2)
            self.k_cache[:, :, pos:pos + t] = k
            self.v_cache[:, :, pos:pos + t] = v
            keys = self.k_cache[:, :, :pos + t]
            vals = self.v_cache[:, :, :pos + t]
            att = (q @ keys.transpose(-2, -1)) * (1.0 / hd ** 0.5)
            att = att.masked_fill(self.mask[:, :, pos:pos + t, :pos + t] == 0, float("-inf"))
            y = F.softmax(att, dim=-1) @ vals
            return self.proj(y.transpose(1, 2).reshape(b, t, c))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(D_MODEL), nn.LayerNorm(D_MODEL)
            self.attn = Attn()
            self.fc, self.out = nn.Linear(D_MODEL, 4 * D_MODEL), nn.Linear(4 * D_MODEL, D_MODEL)

        def forward(self, x, pos):
            x = x + self.attn(self.ln1(x), pos)
            return x + self.out(F.gelu(self.fc(self.ln2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB, D_MODEL)
            self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
            self.ln = nn.LayerNorm(D_MODEL)
            self.head = nn.Linear(D_MODEL, VOCAB)

        def forward(self, tok, pos):
            h = self.emb(tok)
            for blk in self.blocks:
                h = blk(h, pos)
            return self.head(self.ln(h))

    return GPT()


def tokens(lib, n: int):
    """The calls of a decode: the prompt at 0, then one token a step."""
    rng = np.random.default_rng(0)
    calls = [(lib.tensor(rng.integers(0, VOCAB, (1, PROMPT))), 0)]
    calls += [(lib.tensor(rng.integers(0, VOCAB, (1, 1))), PROMPT + i) for i in range(n)]
    return calls


def decode(fn, calls, ng) -> tuple[float, object]:
    """Seconds per generated token (the prompt call excluded) and the last logits."""
    with ng():
        fn(*calls[0])
        t0 = time.perf_counter()
        for c in calls[1:]:
            out = fn(*c)
        return (time.perf_counter() - t0) / (len(calls) - 1), out


def peers(args):
    """{name: (callable, calls, no_grad, entries())}."""
    out = {}
    if torch is not None:
        torch.set_num_threads(1)
        torch.manual_seed(0)
        tm = gpt(torch)
        state = {k: eager.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()}
    wm = gpt(eager)
    if torch is not None:
        wm.load_state_dict(state)
    wc = gpt(eager)
    wc.load_state_dict(wm.state_dict())
    compiled = capture.compile(wc)
    out["wick eager"] = (wm, tokens(eager, args.tokens), eager.no_grad, None)
    out["wick compiled"] = (compiled, tokens(eager, args.tokens), eager.no_grad,
                            lambda: len(compiled.__wick_compiled__.entries))
    if torch is not None:
        out["torch eager"] = (tm, tokens(torch, args.tokens), torch.no_grad, None)
        if not args.no_inductor:
            tc = gpt(torch)
            tc.load_state_dict(tm.state_dict())
            counted = []

            def backend(gm, example_inputs):
                counted.append(gm)
                from torch._inductor.compile_fx import compile_fx  # lazy: optional peer

                return compile_fx(gm, example_inputs)

            out["torch.compile"] = (torch.compile(tc, backend=backend),
                                    tokens(torch, args.tokens), torch.no_grad,
                                    lambda: len(counted))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tokens", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--warm-cache", action="store_true")
    args = ap.parse_args()
    ps = peers(args)
    first, second, steady, last = {}, {}, {k: [] for k in ps}, {}
    for name, (fn, calls, ng, _) in ps.items():
        first[name], last[name] = decode(fn, calls, ng)
    for name, (fn, calls, ng, _) in ps.items():
        second[name], last[name] = decode(fn, calls, ng)
    for _ in range(args.rounds):
        for name, (fn, calls, ng, _) in ps.items():
            t, last[name] = decode(fn, calls, ng)
            steady[name].append(t)
    ref = last.get("torch eager", last["wick eager"])
    ref = np.asarray(ref.detach().numpy() if hasattr(ref, "detach") else ref)
    print(f"decode: d_model {D_MODEL}, {LAYERS} layers, {HEADS} heads, cache {MAX}, prompt "
          f"{PROMPT}, {args.tokens} tokens, {args.rounds} rounds")
    print("| peer | first decode ms/token | second decode ms/token | steady ms/token | "
          "cache entries | max |diff| |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (fn, calls, ng, entries) in ps.items():
        got = np.asarray(last[name].detach().numpy())
        diff = float(np.max(np.abs(got - ref)))
        print(f"| {name} | {first[name] * 1e3:.2f} | {second[name] * 1e3:.2f} | "
              f"{statistics.median(steady[name]) * 1e3:.2f} | "
              f"{entries() if entries else '-'} | {diff:.1e} |")


if __name__ == "__main__":
    main()
