"""Autocast under `capture.compile` (issue 16 item 5): training steps of a small MLP and a
transformer encoder block inside `with autocast("cpu", dtype=...)`, wick eager vs wick compiled
(the region captured: casts are graph nodes), float32 / bfloat16 / float16 regions, with torch
eager beside (torch.compile is left out: its first compile takes minutes on this machine).

A step is `with autocast: loss = loss_fn(model(x), y)`, then `loss.backward()` (the compiled
function is the forward + loss, as users compile it; backward runs the AOT backward graph).
Reported: median step time (interleaved rounds, `bench_autograd.medians_us`), graph/break
counts of the compiled function. BLAS and torch use one thread.

    python benchmarks/bench_autocast_compile.py [--repeat N]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_autograd import medians_us

import capture
import eager

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # an optional peer
    torch = None


def build_mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(256, 512), nn.GELU(), nn.Linear(512, 512), nn.GELU(),
                         nn.Linear(512, 10))


def build_block(lib):
    nn = lib.nn
    return nn.TransformerEncoderLayer(128, 4, dim_feedforward=256, dropout=0.0,
                                      batch_first=True)


def make(lib, name, rng):
    F = lib.nn.functional
    lib.manual_seed(0)
    if name == "mlp":
        model = build_mlp(lib)
        x = lib.tensor(rng.standard_normal((128, 256)).astype(np.float32))
        y = lib.tensor(rng.integers(0, 10, 128))
        return model, (lambda x, y: F.cross_entropy(model(x), y)), x, y
    model = build_block(lib)
    x = lib.tensor(rng.standard_normal((8, 64, 128)).astype(np.float32))
    y = lib.tensor(rng.standard_normal((8, 64, 128)).astype(np.float32))
    return model, (lambda x, y: F.mse_loss(model(x), y)), x, y


def step_fn(lib, name, dtype, compiled):
    model, loss_fn, x, y = make(lib, name, np.random.default_rng(0))
    dt = getattr(lib, dtype)

    def forward(x, y):
        if dtype == "float32":
            return loss_fn(x, y)
        with lib.autocast("cpu", dtype=dt):
            return loss_fn(x, y)

    fwd = capture.compile(forward) if compiled else forward

    def step():
        for p in model.parameters():
            p.grad = None
        loss = fwd(x, y)
        loss.backward()
        return loss

    counts = None
    if compiled:
        e = capture.explain(forward)(x, y)
        counts = (e.graph_count, e.graph_break_count)
    return step, counts


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    rows = []
    for name, title in (("mlp", "MLP 256-512-512-10 GELU b128"),
                        ("block", "TransformerEncoderLayer d128 h4 ff256 s64 b8")):
        for dtype in ("float32", "bfloat16", "float16"):
            fns, counts = {}, None
            fns["wick eager"], _ = step_fn(eager, name, dtype, False)
            fns["wick compiled"], counts = step_fn(eager, name, dtype, True)
            if torch is not None and dtype != "float16":  # (torch's CPU fp16 GEMM is a crawl)
                fns["torch eager"], _ = step_fn(torch, name, dtype, False)
            us = medians_us(fns, args.repeat, rounds=5, warmup=3)
            rows.append((title, dtype, us, counts))
            print(f"{title:45s} {dtype:9s} " + "  ".join(f"{k} {v / 1e3:7.2f} ms"
                                                         for k, v in us.items())
                  + f"  graphs/breaks {counts}", flush=True)
    print("\n| model | region | wick eager ms | wick compiled ms | compiled/eager | torch eager ms"
          " | graphs/breaks |")
    print("|---|---|---|---|---|---|---|")
    for title, dtype, us, counts in rows:
        e, c, t = us["wick eager"], us["wick compiled"], us.get("torch eager")
        print(f"| {title} | {dtype} | {e / 1e3:.2f} | {c / 1e3:.2f} | {c / e:.2f} | "
              f"{'' if t is None else f'{t / 1e3:.2f}'} | {counts[0]}/{counts[1]} |")


if __name__ == "__main__":
    main()
