"""Distance speed goal (issue 17): `cdist` of 4096 x 64 against 4096 x 64 rows (float32, p = 2,
the default compute mode: the matmul form), wick eager vs torch eager vs
scipy.spatial.distance.cdist, in one run; goal: wick <= 1.2x the best of them. A smaller
direct-form case (p = 1, 1024 x 1024 x 64) and pdist are reported beside it.

These are library calls (a BLAS matmul, scipy's C loops): what is measured is the work wick
adds around them. Run: `python benchmarks/bench_distances.py [--repeat N] [--threads T]`.
Prints a table; exits 0 (goals are reported, not asserted). Peers are timed interleaved, in
rounds, with the same BLAS thread count (torch's `set_num_threads` too).
"""

from __future__ import annotations

import argparse
import os
import sys


def _threads() -> str:
    for i, a in enumerate(sys.argv):
        if a == "--threads" and i + 1 < len(sys.argv):
            return sys.argv[i + 1]
    return "1"


os.environ.setdefault("OPENBLAS_NUM_THREADS", _threads())
os.environ.setdefault("OMP_NUM_THREADS", _threads())

import statistics
import time
from pathlib import Path

import numpy as np
from scipy.spatial import distance as ssd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eager

try:
    import torch
except ImportError:  # an optional peer
    torch = None


def medians_ms(fns: dict, repeat: int) -> dict:
    """Median time per call (ms) of each peer, timed interleaved over `repeat` rounds after
    one warm-up call each."""
    for fn in fns.values():
        fn()
    times = {k: [] for k in fns}
    for _ in range(repeat):
        for k, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1e3 for k, v in times.items()}


def case(name, a, b, p, repeat, scipy_metric, pdist=False):
    ea, eb = eager.from_numpy(a), eager.from_numpy(b)
    if pdist:
        fns = {"wick": lambda: eager.pdist(ea, p),
               "scipy": lambda: ssd.pdist(a, scipy_metric)}
    else:
        fns = {"wick": lambda: eager.cdist(ea, eb, p),
               "scipy": lambda: ssd.cdist(a, b, scipy_metric)}
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        fns["torch"] = (lambda: torch.pdist(ta, p)) if pdist else \
            (lambda: torch.cdist(ta, tb, p))
    # same numbers first
    ref = ssd.pdist(a, scipy_metric) if pdist else ssd.cdist(a, b, scipy_metric)
    np.testing.assert_allclose(fns["wick"]().numpy(), ref, rtol=1e-3, atol=1e-3)
    t = medians_ms(fns, repeat)
    best = min(v for k, v in t.items() if k != "wick")
    row = f"| {name:<34} | " + " | ".join(
        f"{t[k]:8.1f}" if k in t else "       -" for k in ("wick", "torch", "scipy"))
    return row + f" | {t['wick'] / best:5.2f}x |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    if torch is not None:
        torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    big = [rng.standard_normal((4096, 64)).astype(np.float32) for _ in range(2)]
    small = [rng.standard_normal((1024, 64)).astype(np.float32) for _ in range(2)]
    print(f"BLAS threads: {args.threads}; median of {args.repeat} (ms)")
    print("| case                               |     wick |    torch |    scipy | wick/best |")
    print("| ---------------------------------- | -------- | -------- | -------- | --------- |")
    print(case("cdist 4096x4096x64 f32 p=2 (goal)", *big, 2.0, args.repeat, "euclidean"))
    print(case("cdist 1024x1024x64 f32 p=1", *small, 1.0, args.repeat, "cityblock"))
    print(case("pdist 1024x64 f32 p=2", small[0], small[0], 2.0, args.repeat, "euclidean",
               pdist=True))
    print("goal: the first row's wick/best <= 1.2")


if __name__ == "__main__":
    main()
