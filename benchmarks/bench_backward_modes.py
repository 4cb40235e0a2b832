"""Side-by-side timing of eager backward with whole-pass programs and traced plans switched on
and off (issue 15's measurement), against torch eager, in one process, interleaved.

Run: `python benchmarks/bench_backward_modes.py [--repeat N]`.
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

from bench_autograd import medians_us, mlp_data, mlp_lib, tiny_step
from bench_train import make_lstm_step, make_step

import eager

try:
    from eager.autograd import plans, programs
except ImportError:  # the mechanisms are gone: only the plain engine
    plans = programs = None

try:
    import torch
except ImportError:
    torch = None

_ORIG = {}


def set_mode(mode: str) -> None:
    """'all': as shipped; 'no programs'; 'plain': no programs, no plans."""
    if programs is None:
        return
    if not _ORIG:
        _ORIG.update(run=programs.run, run_known=programs.run_known,
                     run_arrays=plans.run_arrays, prun=plans.run)
    off_p = mode in ("no programs", "plain")
    programs.run = (lambda *a: False) if off_p else _ORIG["run"]
    programs.run_known = (lambda *a: False) if off_p else _ORIG["run_known"]
    plans.run_arrays = (lambda *a: None) if mode == "plain" else _ORIG["run_arrays"]
    plans.run = (lambda *a: None) if mode == "plain" else _ORIG["prun"]


def moded(mode, fn):
    def call():
        set_mode(mode)
        fn()
    return call


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=300)
    args = ap.parse_args(argv)
    modes = ["all", "no programs", "plain"] if programs is not None else ["plain"]
    if torch is not None:
        torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    x, y, params = mlp_data()
    cases = []

    def tiny(lib):
        xe, we = lib.tensor(x0, requires_grad=True), lib.tensor(w0)
        return lambda: tiny_step(lib, xe, we)

    def mlp(lib):
        pe = tuple(lib.tensor(p, requires_grad=True) for p in params)
        xe, ye = lib.tensor(x), lib.tensor(y)
        return lambda: mlp_lib(lib, xe, ye, pe)

    cases.append(("autograd tiny", tiny, args.repeat))
    cases.append(("autograd mlp", mlp, args.repeat // 3))
    cases.append(("train small SGD", lambda lib: make_step(lib, (64, 32, 10), "sgd", 0.05)[0],
                  args.repeat))
    cases.append(("train mnist Adam",
                  lambda lib: make_step(lib, (784, 256, 10), "adam", 1e-3)[0], args.repeat // 3))
    cases.append(("train LSTM", lambda lib: make_lstm_step(lib)[0], 10))
    print(f"{'case':20s} " + " ".join(f"{m:>14s}" for m in modes) + f" {'torch':>10s}  (us)")
    for name, make, rep in cases:
        fns = {m: moded(m, make(eager)) for m in modes}
        if torch is not None:
            fns["torch"] = make(torch)
        t = medians_us(fns, rep, rounds=min(15, rep), warmup=5 if rep > 30 else 2)
        print(f"{name:20s} " + " ".join(f"{t[m]:14.1f}" for m in modes)
              + (f" {t['torch']:10.1f}" if "torch" in t else ""), flush=True)
    set_mode("all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
