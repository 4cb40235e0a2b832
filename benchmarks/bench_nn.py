"""Speed of eager.nn's losses and layers (eager/nn/losses.py, functional.py) against numpy
(forward only: the same formula written in numpy) and PyTorch eager (forward, and forward +
backward), float32. PyTorch runs on one thread (`set_num_threads(1)`, as bench_autograd.py),
doing the same single-core work as wick. Prints a markdown table of medians and ratios
(wick / peer: below 1 means wick is faster). torch is optional.

    python benchmarks/bench_nn.py [--repeat 15]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_table import median_ms

import eager
import eager.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # an optional peer
    torch = None


def np_log_softmax(x):
    m = x.max(1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(1, keepdims=True))


def workloads(rng):
    """(name, numpy forward, eager fn of tensors, torch fn of tensors, arrays, grad flags)."""
    for n, c in ((64, 10), (4096, 1000)):
        x = rng.standard_normal((n, c)).astype(np.float32)
        t = rng.integers(0, c, n)
        yield (f"cross_entropy {n}x{c}",
               lambda x=x, t=t: -np_log_softmax(x)[np.arange(len(t)), t].mean(),
               F.cross_entropy, TF.cross_entropy if torch else None, (x, t), (True, False))
    a = rng.standard_normal((4096, 1024)).astype(np.float32)
    b = rng.standard_normal((4096, 1024)).astype(np.float32)
    yield ("mse_loss 4096x1024", lambda: np.mean((a - b) ** 2), F.mse_loss,
           TF.mse_loss if torch else None, (a, b), (True, False))
    p = rng.random((4096, 1024)).astype(np.float32)
    yield ("bce_with_logits 4096x1024",
           lambda: np.mean((1 - p) * a + np.logaddexp(0, -a)),
           F.binary_cross_entropy_with_logits,
           TF.binary_cross_entropy_with_logits if torch else None, (a, p), (True, False))

    def np_ln():
        mu = a.mean(1, keepdims=True)
        c = a - mu
        return c / np.sqrt((c * c).mean(1, keepdims=True) + 1e-5)

    yield ("layer_norm 4096x1024", np_ln, lambda x: F.layer_norm(x, (1024,)),
           (lambda x: TF.layer_norm(x, (1024,))) if torch else None, (a,), (True,))
    yield ("dropout 4096x1024", lambda: a * ((np.random.random(a.shape) >= 0.1) / 0.9),
           lambda x: F.dropout(x, 0.1), (lambda x: TF.dropout(x, 0.1)) if torch else None,
           (a,), (True,))
    w = rng.standard_normal((50000, 128)).astype(np.float32)
    idx = rng.integers(0, 50000, (64, 128))
    yield ("embedding 64x128 of 50000x128", lambda: w[idx],
           lambda i, w: F.embedding(i, w), (lambda i, w: TF.embedding(i, w)) if torch else None,
           (idx, w), (False, True))


def bench(repeat):
    rng = np.random.default_rng(0)
    rows = []
    for name, np_fn, e_fn, t_fn, arrays, grads in workloads(rng):
        e_in = [eager.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
        np_ms = median_ms(np_fn, repeat)
        e_fwd = median_ms(lambda f=e_fn, a=e_in: f(*a), repeat)

        def e_step(f=e_fn, a=e_in):
            f(*a).sum().backward()

        e_bwd = median_ms(e_step, repeat)
        t_fwd = t_bwd = None
        if t_fn is not None:
            t_in = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
            t_fwd = median_ms(lambda f=t_fn, a=t_in: f(*a), repeat)

            def t_step(f=t_fn, a=t_in):
                f(*a).sum().backward()

            t_bwd = median_ms(t_step, repeat)
        rows.append((name, np_ms, e_fwd, t_fwd, e_bwd, t_bwd))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=15)
    args = ap.parse_args(argv)
    if torch is not None:
        torch.set_num_threads(1)
    rows = bench(args.repeat)
    print("| workload (float32) | numpy fwd ms | wick fwd ms | wick/numpy | torch fwd ms | "
          "wick/torch fwd | wick fwd+bwd ms | torch fwd+bwd ms | wick/torch fwd+bwd |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, np_ms, e_fwd, t_fwd, e_bwd, t_bwd in rows:
        def f(v):
            return "-" if v is None else f"{v:.3f}"

        def r(a, b):
            return "-" if b is None else f"{a / b:.2f}"

        print(f"| {name} | {np_ms:.3f} | {e_fwd:.3f} | {r(e_fwd, np_ms)} | {f(t_fwd)} | "
              f"{r(e_fwd, t_fwd)} | {e_bwd:.3f} | {f(t_bwd)} | {r(e_bwd, t_bwd)} |")


if __name__ == "__main__":
    main()
