"""Autograd speed goals (issue 4), as ratios of medians measured in one run.

1. `tiny`: 10 elementwise ops on 8-element float32 tensors plus `.sum().backward()`: at most
   0.7x torch eager's time (when torch is installed) and under 250 us.
2. `mlp`: one forward+backward step of a 2-layer MLP (batch 64, 784-256-10, float32, ReLU,
   mean squared error): within 1.3x of numpy doing the same math by hand.

Run: `python benchmarks/bench_autograd.py [--repeat N]`. Prints a table; exits 0 (goals are
reported, not asserted: timings are not tests). Peers are timed interleaved, in rounds, so
that the machine's drift touches them alike. BLAS runs on one thread (torch too:
`set_num_threads(1)`), so that every peer does the same single-core work and a busy machine
does not turn numpy's thread pool into noise; set OPENBLAS_NUM_THREADS to override.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import floors  # (benchmarks/floors.py)

import eager

try:
    import torch
except ImportError:  # an optional peer
    torch = None


def medians_us(fns: dict, repeat: int, rounds: int = 15, warmup: int = 20) -> dict:
    """Median time per call (us) of each of `fns` ({peer: fn}), measured interleaved: `rounds`
    rounds, each timing every peer on `repeat // rounds` calls in turn, so that the machine's
    drift (other jobs, clock changes) touches every peer alike; the median over all calls."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {k: [] for k in fns}
    per = max(1, repeat // rounds)
    for _ in range(rounds):
        for k, fn in fns.items():
            add = times[k].append
            for _ in range(per):
                t0 = time.perf_counter()
                fn()
                add(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1e6 for k, v in times.items()}


# ---------------------------------------------------------------- tiny


def tiny_step(lib, x, w):
    y = x
    for _ in range(2):
        y = y * w
        y = y + 1.0
        y = lib.tanh(y)
        y = y - w
        y = lib.exp(y)
    y.sum().backward()
    x.grad = None


def tiny_numpy(x, w):
    """The same 10 ops and their gradients by hand (for reference only)."""
    ys = [x]
    y = x
    for _ in range(2):
        a = y * w
        b = a + 1.0
        c = np.tanh(b)
        d = c - w
        y = np.exp(d)
        ys.append((a, b, c, d, y))
    g = np.ones_like(x)
    for a, b, c, d, y in reversed(ys[1:]):
        g = g * y
        g = g * (1 - c * c)
        g = g * w
    return g


# ---------------------------------------------------------------- mlp


def mlp_data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((64, 784)).astype(np.float32)
    y = rng.standard_normal((64, 10)).astype(np.float32)
    w1 = (rng.standard_normal((784, 256)) * 0.03).astype(np.float32)
    b1 = np.zeros(256, np.float32)
    w2 = (rng.standard_normal((256, 10)) * 0.06).astype(np.float32)
    b2 = np.zeros(10, np.float32)
    return x, y, (w1, b1, w2, b2)


def mlp_numpy(x, y, params):
    w1, b1, w2, b2 = params
    h = x @ w1 + b1
    a = np.maximum(h, 0)
    o = a @ w2 + b2
    d = o - y
    loss = (d * d).mean()
    do = d * (2.0 / d.size)
    gw2 = a.T @ do
    gb2 = do.sum(0)
    da = do @ w2.T
    dh = da * (h > 0)
    gw1 = x.T @ dh
    gb1 = dh.sum(0)
    return loss, (gw1, gb1, gw2, gb2)


def mlp_lib(lib, x, y, params):
    w1, b1, w2, b2 = params
    for p in params:
        p.grad = None
    o = lib.relu(x @ w1 + b1) @ w2 + b2
    d = o - y
    loss = (d * d).mean()
    loss.backward()
    return loss


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=1500)
    args = ap.parse_args(argv)
    rows = []

    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    xe, we = eager.tensor(x0, requires_grad=True), eager.tensor(w0)
    xb, wb = floors.Tape(x0), floors.Tape(w0)
    bare = SimpleNamespace(tanh=floors.tape_tanh, exp=floors.tape_exp)
    for lib, x, w in ((bare, xb, wb), (eager, xe, we)):  # both compute numpy's gradient
        y = x
        for _ in range(2):
            y = lib.exp(lib.tanh(y * w + 1.0) - w)
        y.sum().backward()
        got = x.grad if lib is bare else x.grad.numpy()
        np.testing.assert_allclose(got, tiny_numpy(x0, w0), rtol=1e-5)
        x.grad = None
    peers = {"wick": lambda: tiny_step(eager, xe, we), "numpy by hand": lambda: tiny_numpy(x0, w0),
             "bare Python tape": lambda: tiny_step(bare, xb, wb)}
    if torch is not None:
        torch.set_num_threads(1)
        xt, wt = torch.tensor(x0, requires_grad=True), torch.tensor(w0)
        peers["torch eager"] = lambda: tiny_step(torch, xt, wt)
    t = medians_us(peers, args.repeat)
    rows.append(("tiny: 10 ops + sum().backward(), 8 x f32", "wick", t["wick"], None))
    rows += [("", k, v, t["wick"] / v) for k, v in t.items() if k != "wick"]

    x, y, params = mlp_data()
    pe = tuple(eager.tensor(p, requires_grad=True) for p in params)
    xe, ye = eager.tensor(x), eager.tensor(y)
    loss, grads = mlp_numpy(x, y, params)
    got = mlp_lib(eager, xe, ye, pe)
    for p, g in zip(pe, grads):  # the benchmark computes the same thing
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=2e-3, atol=1e-5)
    assert abs(got.item() - loss) < 1e-4 * max(1.0, abs(loss))
    peers = {"wick": lambda: mlp_lib(eager, xe, ye, pe),
             "numpy by hand": lambda: mlp_numpy(x, y, params)}
    if torch is not None:
        pt = tuple(torch.tensor(p, requires_grad=True) for p in params)
        xt, yt = torch.tensor(x), torch.tensor(y)
        peers["torch eager"] = lambda: mlp_lib(torch, xt, yt, pt)
    t = medians_us(peers, max(30, args.repeat // 3))
    rows.append(("mlp: 784-256-10, batch 64, f32, fwd+bwd", "wick", t["wick"], None))
    rows += [("", k, v, t["wick"] / v) for k, v in t.items() if k != "wick"]

    print(f"{'benchmark':44s} {'peer':16s} {'median us':>10s} {'wick / peer':>12s}")
    for name, peer, t, ratio in rows:
        r = f"{ratio:12.2f}" if ratio is not None else f"{'':12s}"
        print(f"{name:44s} {peer:16s} {t:10.1f} {r}")
    print("goals: tiny <= 0.7x torch and < 250 us; mlp <= 1.3x numpy (issue 15: tiny <= 0.5x "
          "torch); the bare Python tape (benchmarks/floors.py) is the floor of a Python autograd")
    return 0


if __name__ == "__main__":
    sys.exit(main())
