"""Graphs and breaks of wick's capture beside `torch._dynamo.explain`'s on the realistic model
programs of `models_corpus.py`, and whether wick's compiled run matches eager.

For each case: wick's counts (`capture.explain`), torch's (when torch is installed), and a
correctness check: the case built twice from the same seed, one run eagerly and one through
`capture.compile` (default backend), comparing outputs and the state the case names
(parameters, buffers, caches, list contents). Prints a markdown table and the first break
reason of each wick case that breaks. Counts follow torch's rule on both sides (graphs compiled
in every frame of the call; breaks = graphs - 1): they differ only where the graphs differ
(torch skips a frame whose break sits inside a loop over modules: "print in a submodule").

    python benchmarks/capture_counts.py
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import capture
import eager
from models_corpus import CASES

try:
    import torch
    import torch._dynamo as dynamo
except ImportError:  # an optional peer
    torch = None


def _arrays(v):
    if isinstance(v, (list, tuple)):
        return [a for x in v for a in _arrays(x)]
    if hasattr(v, "detach"):
        return [np.asarray(v.detach().numpy())]
    return [np.asarray(v)]


def _same(a, b) -> bool:
    xa, xb = _arrays(a), _arrays(b)
    return len(xa) == len(xb) and all(
        x.shape == y.shape and x.dtype == y.dtype and np.allclose(x, y, rtol=1e-4, atol=1e-5)
        for x, y in zip(xa, xb))


def wick_row(build):
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        fn, args, _ = build(eager)
        ex = capture.explain(fn)(*args)
        fe, ae, se = build(eager)
        fc, ac, sc = build(eager)
        out_e = fe(*ae)
        compiled = capture.compile(fc)
        out_c = compiled(*ac)
        ok = _same(out_e, out_c) and _same(se(), sc())
        # a second call: the cache hit (and the state it updates) must match too
        out_e2, out_c2 = fe(*ae), compiled(*ac)
        ok = ok and _same(out_e2, out_c2) and _same(se(), sc())
    reason = ex.unique_break_reasons[0] if ex.unique_break_reasons else None
    why = (f"{os.path.basename(reason.filename)}:{reason.lineno} {reason.reason}"
           if reason is not None else "")
    return ex.graph_count, ex.graph_break_count, ok, why


def torch_row(build):
    if torch is None:
        return None
    quiet = io.StringIO()
    with contextlib.redirect_stdout(quiet):
        dynamo.reset()
        fn, args, _ = build(torch)
        ex = dynamo.explain(fn)(*args)
    return ex.graph_count, ex.graph_break_count


def main() -> int:
    if torch is not None:
        torch.set_num_threads(1)
    rows = []
    for name, build in CASES.items():
        try:
            w = wick_row(build)
        except Exception as e:  # noqa: BLE001 (a crash is a row, not the end)
            w = (None, None, False, f"{type(e).__name__}: {e}"[:100])
        try:
            t = torch_row(build)
        except Exception as e:  # noqa: BLE001
            t = None
            print(f"torch failed on {name}: {type(e).__name__}: {e}", file=sys.stderr)
        rows.append((name, w, t))
    print("| case | wick graphs/breaks | torch graphs/breaks | wick == eager | first wick break |")
    print("| --- | --- | --- | --- | --- |")
    for name, (g, b, ok, why), t in rows:
        ts = f"{t[0]}/{t[1]}" if t else "n/a"
        print(f"| {name} | {g}/{b} | {ts} | {'yes' if ok else 'NO'} | {why} |")
    same = sum(1 for _, w, t in rows if t and (w[0], w[1]) == t)
    print(f"\nwick's counts equal torch's on {same} of {len(rows)} cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
