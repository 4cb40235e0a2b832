"""Eager per-op overhead and large-tensor throughput: wick eager vs numpy (and PyTorch eager).

Three measurements, each a ratio of medians over interleaved repeats (so that machine noise
hits every contender alike):

- small: the same 10 elementwise ops on 8-element float32 tensors; goals: wick <= 2.5x numpy
  and <= 0.6x PyTorch eager (the per-op overhead of dispatch, checks and Tensor creation);
  beside them the floor of any numpy-backed Python tensor (`floors.Bare`: one ufunc and one
  object per op, none of PyTorch's semantics);
- large: each elementwise op and reduction on 2**24 float32 elements; goal: <= 1.15x numpy
  (no hidden copies or dtype round trips);
- views: each view op's result shares memory with its input (never a copy).

    python benchmarks/bench_eager.py [--repeat 21] [--log2n 24] [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import eager

sys.path.insert(0, str(Path(__file__).resolve().parent))
import floors  # (benchmarks/floors.py: the floor of a Python tensor)

try:
    import torch
except ImportError:  # optional reference
    torch = None


def ten_ops(a, b, exp, tanh, sqrt, sigmoid):
    return (a + b, a * b, a - b, a / b, -a, exp(a), tanh(a), sqrt(a), abs(a), sigmoid(a))


def np_sigmoid(x):
    return 1.0 / (np.exp(-x) + 1.0)


def median_times(fns: dict, repeat: int, number: int) -> dict:
    """Median seconds per call of each zero-argument function, runs interleaved."""
    samples = {k: [] for k in fns}
    for _ in range(repeat):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(number):
                f()
            samples[k].append((time.perf_counter() - t0) / number)
    return {k: statistics.median(v) for k, v in samples.items()}


def small(repeat: int) -> list:
    na, nb = np.random.default_rng(0).random((2, 8), dtype=np.float32) + 0.5
    ea, eb = eager.from_numpy(na), eager.from_numpy(nb)
    ba, bb = floors.Bare(na), floors.Bare(nb)
    fns = {
        "numpy": lambda: ten_ops(na, nb, np.exp, np.tanh, np.sqrt, np_sigmoid),
        "wick": lambda: ten_ops(ea, eb, eager.exp, eager.tanh, eager.sqrt, eager.sigmoid),
        "bare": lambda: ten_ops(ba, bb, floors.bare_exp, floors.bare_tanh, floors.bare_sqrt,
                                floors.bare_sigmoid),
    }
    if torch is not None:
        ta, tb = torch.from_numpy(na), torch.from_numpy(nb)
        fns["torch"] = lambda: ten_ops(ta, tb, torch.exp, torch.tanh, torch.sqrt, torch.sigmoid)
    t = median_times(fns, repeat, 2000)
    rows = [("10 ops, 8 x f32", "numpy", t["numpy"], 1.0, "")]
    rows.append(("10 ops, 8 x f32", "wick", t["wick"], t["wick"] / t["numpy"],
                 "goal <= 2.5x numpy"))
    rows.append(("10 ops, 8 x f32", "bare", t["bare"], t["bare"] / t["numpy"],
                 "benchmarks/floors.py"))
    if "torch" in t:
        rows.append(("10 ops, 8 x f32", "torch", t["torch"], t["torch"] / t["numpy"], ""))
        rows.append(("10 ops, 8 x f32", "wick/torch", t["wick"], t["wick"] / t["torch"],
                     "goal <= 0.6x torch"))
        rows.append(("10 ops, 8 x f32", "bare/torch", t["bare"], t["bare"] / t["torch"],
                     "floor: bare Python wrapper"))
    return rows


LARGE = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "neg": (lambda a, b: -a, lambda a, b: -a),
    "exp": (lambda a, b: a.exp(), lambda a, b: np.exp(a)),
    "tanh": (lambda a, b: a.tanh(), lambda a, b: np.tanh(a)),
    "sqrt": (lambda a, b: a.sqrt(), lambda a, b: np.sqrt(a)),
    "abs": (lambda a, b: abs(a), lambda a, b: np.abs(a)),
    "add scalar": (lambda a, b: a + 2.0, lambda a, b: a + 2.0),
    "maximum": (lambda a, b: eager.maximum(a, b), lambda a, b: np.maximum(a, b)),
    "gt": (lambda a, b: a > b, lambda a, b: a > b),
    "sum": (lambda a, b: a.sum(), lambda a, b: a.sum()),
    "sum(dim=1)": (lambda a, b: a.view(4096, -1).sum(1), lambda a, b: a.reshape(4096, -1).sum(1)),
    "mean": (lambda a, b: a.mean(), lambda a, b: a.mean()),
    "amax": (lambda a, b: a.amax(), lambda a, b: a.max()),
    "var": (lambda a, b: a.var(correction=0), lambda a, b: a.var()),
}


def large(repeat: int, log2n: int) -> list:
    rng = np.random.default_rng(0)
    na = rng.random(2**log2n, dtype=np.float32) + 0.5
    nb = rng.random(2**log2n, dtype=np.float32) + 0.5
    ea, eb = eager.from_numpy(na), eager.from_numpy(nb)
    rows = []
    for name, (fe, fn) in LARGE.items():
        t = median_times({"numpy": lambda fn=fn: fn(na, nb), "wick": lambda fe=fe: fe(ea, eb)},
                         repeat, 1)
        rows.append((f"{name}, 2**{log2n} x f32", "wick", t["wick"], t["wick"] / t["numpy"],
                     "goal <= 1.15x numpy"))
    return rows


def views() -> list:
    x = eager.arange(24.0).reshape(2, 3, 4)
    z = eager.complex(eager.ones(3), eager.zeros(3))
    cases = {
        "view": lambda: x.view(6, 4), "reshape": lambda: x.reshape(4, 6),
        "transpose": lambda: x.transpose(0, 2), "unsqueeze": lambda: x.unsqueeze(1),
        "expand": lambda: x[:1] if hasattr(x, "__getitem__") else x,
        "as_strided": lambda: x.as_strided((2, 2), (1, 4)),
        "real": lambda: z.real, "imag": lambda: z.imag,
        "view_as_real": lambda: eager.view_as_real(z), "detach": lambda: x.detach(),
    }
    cases["expand"] = lambda: x.unsqueeze(0).expand(3, 2, 3, 4)
    rows = []
    for name, f in cases.items():
        v = f()
        base = z if name in ("real", "imag", "view_as_real") else x
        shared = np.shares_memory(v.numpy(), base.numpy())
        rows.append((name, "shares memory", shared, v._version == base._version,
                     "goal: True"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--quick", action="store_true", help="fewer repeats, 2**20 elements")
    args = ap.parse_args()
    if args.quick:
        args.repeat, args.log2n = 5, 20
    print(f"{'workload':28s} {'impl':12s} {'median':>12s} {'ratio':>7s}  goal")
    for w, impl, t, r, goal in small(args.repeat):
        print(f"{w:28s} {impl:12s} {t * 1e6:10.2f}us {r:7.2f}  {goal}")
    for w, impl, t, r, goal in large(max(5, args.repeat // 3), args.log2n):
        print(f"{w:28s} {impl:12s} {t * 1e3:10.2f}ms {r:7.2f}  {goal}")
    print(f"{'view':28s} {'shares memory':14s} {'same _version cell':>18s}")
    for name, _, shared, vc, _ in views():
        print(f"{name:28s} {shared!s:14s} {vc!s:>18s}")


if __name__ == "__main__":
    main()
