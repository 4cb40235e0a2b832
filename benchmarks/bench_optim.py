"""Optimizer step speed (eager.optim), as ratios of medians measured in one run.

Workloads (float32, every parameter with a gradient):
1. `mlp`: the parameters of a 784-256-10 MLP (4 tensors, ~200k elements): the arrays' work
   dominates; goal: within 1.5x of numpy doing the documented update by hand.
2. `small`: 20 tensors of 64 elements: per-op overhead dominates; reported against torch.optim
   (single-tensor path, as torch uses on the CPU) when torch is installed.

Optimizers: SGD (momentum 0.9), Adam, AdamW (amsgrad), RMSprop (centered), Adagrad.
Run: `python benchmarks/bench_optim.py [--repeat N]`. Prints a markdown table; exits 0 (goals
are reported, not asserted). Peers are timed interleaved, in rounds; BLAS/OpenMP on one thread.
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

import eager
import eager.optim

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # an optional peer
    torch = None

CONFIGS = {
    "SGD": ("SGD", {"lr": 0.01, "momentum": 0.9}),
    "Adam": ("Adam", {"lr": 1e-3}),
    "AdamW-amsgrad": ("AdamW", {"lr": 1e-3, "amsgrad": True}),
    "RMSprop-centered": ("RMSprop", {"lr": 1e-3, "centered": True}),
    "Adagrad": ("Adagrad", {"lr": 1e-2}),
}
SHAPES = {"mlp": [(256, 784), (256,), (10, 256), (10,)], "small": [(64,)] * 20}


def numpy_step(name, kw, ps, gs, st):
    """The documented update, by hand, in place where numpy allows it."""
    st["t"] = t = st.get("t", 0) + 1
    lr = kw["lr"]
    for i, (p, g) in enumerate(zip(ps, gs)):
        s = st.setdefault(i, {})
        if name == "SGD":
            b = s.get("b")
            if b is None:
                s["b"] = b = g.copy()
            else:
                b *= kw["momentum"]
                b += g
            p -= lr * b
        elif name in ("Adam", "AdamW"):
            if name == "AdamW":
                p *= 1 - lr * 1e-2
            m = s.setdefault("m", np.zeros_like(p))
            v = s.setdefault("v", np.zeros_like(p))
            m += 0.1 * (g - m)
            v *= 0.999
            v += 0.001 * g * g
            if kw.get("amsgrad"):
                vm = s.setdefault("vm", np.zeros_like(p))
                np.maximum(vm, v, out=vm)
                v = vm
            denom = np.sqrt(v) / (1 - 0.999 ** t) ** 0.5 + 1e-8
            p -= lr / (1 - 0.9 ** t) * m / denom
        elif name == "RMSprop":
            v = s.setdefault("v", np.zeros_like(p))
            ga = s.setdefault("ga", np.zeros_like(p))
            v *= 0.99
            v += 0.01 * g * g
            ga += 0.01 * (g - ga)
            p -= lr * g / (np.sqrt(v - ga * ga) + 1e-8)
        else:  # Adagrad
            acc = s.setdefault("s", np.zeros_like(p))
            acc += g * g
            p -= lr * g / (np.sqrt(acc) + 1e-10)


def peers(workload: str, cfg: str):
    name, kw = CONFIGS[cfg]
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in SHAPES[workload]]
    grads = [rng.standard_normal(s).astype(np.float32) * 0.01 for s in SHAPES[workload]]
    fns = {}
    for lib in [eager] + ([torch] if torch is not None else []):
        ps = [lib.tensor(a.copy(), requires_grad=True) for a in arrays]
        for p, g in zip(ps, grads):
            p.grad = lib.tensor(g)
        fns[lib.__name__] = getattr(lib.optim, name)(ps, **kw).step
    nps, st = [a.copy() for a in arrays], {}
    fns["numpy"] = lambda: numpy_step(name, kw, nps, grads, st)
    return fns


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    cols = ["numpy", "eager"] + (["torch"] if torch is not None else [])
    print("| workload | optimizer | " + " | ".join(f"{c} (us)" for c in cols)
          + " | eager/numpy |" + (" eager/torch |" if torch is not None else ""))
    print("|" + " --- |" * (len(cols) + 3 + (torch is not None)))
    for workload in SHAPES:
        for cfg in CONFIGS:
            t = medians_us(peers(workload, cfg), args.repeat)
            row = f"| {workload} | {cfg} | " + " | ".join(f"{t[c]:.0f}" for c in cols)
            row += f" | {t['eager'] / t['numpy']:.2f} |"
            if torch is not None:
                row += f" {t['eager'] / t['torch']:.2f} |"
            print(row)


if __name__ == "__main__":
    main()
