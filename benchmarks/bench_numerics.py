"""Numerics speed goals (issue 17): library calls, so what is measured is the work wick adds
around them. In one run, wick eager vs torch eager vs numpy/scipy:

- `fft`: complex64 FFT of 2^20 points; `rfft`: float32 real FFT of 2^20 points;
- `solve`: batched `linalg.solve`, 256 systems of 64 x 64 (float64, one right-hand side
  column each); `lstsq`: batched `linalg.lstsq`, 256 of 64 x 64 (default driver: gelsy);
- `cdist` (4096 x 4096 x 64, float32) and `Normal.log_prob` (16M float32 values), where wick
  has them (`hasattr`: other work adds them).

Goal: wick <= 1.2x the best peer. Run: `python benchmarks/bench_numerics.py [--repeat N]`.
Prints a markdown table; exits 0 (goals are reported, not asserted). BLAS/LAPACK and FFTs on
one thread for every peer (torch's `set_num_threads(1)` too); peers timed interleaved.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.fft
import scipy.linalg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import eager

try:
    import torch

    torch.set_num_threads(1)
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


def _tensors(*arrays):
    return [eager.from_numpy(a) for a in arrays], \
        [torch.from_numpy(a) for a in arrays] if torch is not None else None


def cases(rng):
    """{name: {peer: fn}} for every case wick has."""
    out = {}
    n = 1 << 20
    xc = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np.complex64)
    xr = rng.standard_normal(n).astype(np.float32)
    (wc, wr), tt = _tensors(xc, xr)
    out["fft 2^20 complex64"] = {"wick": lambda: eager.fft.fft(wc),
                                 "numpy": lambda: np.fft.fft(xc),
                                 "scipy": lambda: scipy.fft.fft(xc)}
    out["rfft 2^20 float32"] = {"wick": lambda: eager.fft.rfft(wr),
                                "numpy": lambda: np.fft.rfft(xr),
                                "scipy": lambda: scipy.fft.rfft(xr)}
    if tt is not None:
        out["fft 2^20 complex64"]["torch"] = lambda: torch.fft.fft(tt[0])
        out["rfft 2^20 float32"]["torch"] = lambda: torch.fft.rfft(tt[1])

    a = rng.standard_normal((256, 64, 64)) + 8 * np.eye(64)
    b = rng.standard_normal((256, 64, 1))
    (wa, wb), tl = _tensors(a, b)
    out["solve 256x64x64 float64"] = {"wick": lambda: eager.linalg.solve(wa, wb),
                                      "numpy": lambda: np.linalg.solve(a, b)}
    out["lstsq 256x64x64 float64"] = {
        "wick": lambda: eager.linalg.lstsq(wa, wb).solution,
        "scipy": lambda: [scipy.linalg.lstsq(a[i], b[i], lapack_driver="gelsy")[0]
                          for i in range(a.shape[0])]}
    if tl is not None:
        out["solve 256x64x64 float64"]["torch"] = lambda: torch.linalg.solve(tl[0], tl[1])
        out["lstsq 256x64x64 float64"]["torch"] = lambda: torch.linalg.lstsq(tl[0], tl[1])

    if hasattr(eager, "cdist"):
        p = rng.standard_normal((4096, 64)).astype(np.float32)
        q = rng.standard_normal((4096, 64)).astype(np.float32)
        (wp, wq), tp = _tensors(p, q)
        from scipy.spatial.distance import cdist as scdist
        out["cdist 4096x4096x64 float32"] = {"wick": lambda: eager.cdist(wp, wq),
                                             "scipy": lambda: scdist(p, q)}
        if tp is not None:
            out["cdist 4096x4096x64 float32"]["torch"] = lambda: torch.cdist(tp[0], tp[1])
    dist = getattr(eager, "distributions", None)
    if dist is not None and hasattr(dist, "Normal"):
        v = rng.standard_normal(1 << 24).astype(np.float32)
        (wv,), tv = _tensors(v)
        wn = dist.Normal(eager.tensor(0.5), eager.tensor(2.0))
        out["Normal.log_prob 16M float32"] = {"wick": lambda: wn.log_prob(wv),
                                              "scipy": _scipy_normal(v)}
        if tv is not None:
            tn = torch.distributions.Normal(torch.tensor(0.5), torch.tensor(2.0))
            out["Normal.log_prob 16M float32"]["torch"] = lambda: tn.log_prob(tv[0])
    return out


def _scipy_normal(v):
    from scipy.stats import norm

    return lambda: norm.logpdf(v, 0.5, 2.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    rows = []
    for name, fns in cases(np.random.default_rng(0)).items():
        ms = medians_ms(fns, args.repeat)
        best = min(v for k, v in ms.items() if k != "wick")
        peer = min((k for k in ms if k != "wick"), key=ms.get)
        ratio = ms["wick"] / best
        rows.append((name, ms, peer, ratio))
    print("| case | wick ms | torch ms | numpy ms | scipy ms | wick / best | goal <= 1.2 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, ms, peer, ratio in rows:
        cells = " | ".join(f"{ms[k]:.2f}" if k in ms else "-"
                           for k in ("wick", "torch", "numpy", "scipy"))
        print(f"| {name} | {cells} | {ratio:.2f} ({peer}) | "
              f"{'met' if ratio <= 1.2 else 'MISSED'} |")


if __name__ == "__main__":
    main()
