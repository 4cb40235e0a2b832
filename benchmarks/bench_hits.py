"""Cache-hit overhead of compiled functions: what a hit adds over its kernels, per call.

    python benchmarks/bench_hits.py [--repeat N] [--profile CASE]

Cases (issue 14's Performance goal: a hit adds <= 10 us over the kernels):
- `linear`: `nn.Linear(16, 16)` compiled as a module, parameters requiring grad (AOT bridge);
- `linear no_grad`: the same under `no_grad` (the plain compiled graph);
- `mlp+ce grad`: a 16-16-4 MLP + cross entropy on 8 rows, parameters requiring grad (the
  forward builds one autograd node);
- `counter`: a tiny module with `self.num_updates += 1` in its forward (a Python side effect
  replayed after the graph), against its eager call;
- `cnn`: the small CNN+BatchNorm of `bench_compile_models.py` in training (running statistics
  written back into the buffers).

For each: the compiled call, the entry's compiled forward kernels called directly on the same
arrays, their difference (the hit overhead), the compiled call with its kernels replaced by a
replay of their last results (the overhead alone, free of the kernels' noise; measured last,
as it patches the entry) and the eager call, medians of interleaved rounds
(`bench_autograd.medians_us`). `--profile CASE` runs cProfile over `--calls` (100k) hits of
one case.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_autograd import medians_us
from bench_compile_models import build_cnn, replayed

import capture
import eager

nn, F = eager.nn, eager.nn.functional


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.num_updates = 0

    def forward(self, x):
        self.num_updates += 1
        return self.lin(x)


def _kernels(cf, args):
    """A call of the last entry's compiled forward kernels on the arrays of its inputs."""
    entry = cf.entries[-1]
    inputs = entry.fetch(*args)
    runner = entry.runner
    fwd = None
    if runner.aot is not None and runner.aot.plans:
        wrt = tuple(t.requires_grad for t in inputs)
        plan = runner.aot.plans.get(wrt)
        fwd = plan.fwd if plan is not None else runner.aot.plain
    if fwd is None:
        fwd = runner.compiled
    fwd = getattr(fwd, "run_unchecked", fwd)
    arrays = [t._data for t in inputs]
    return lambda: fwd(*arrays)


def cases():
    """{name: (compiled call, eager call, kernels call, grad mode)}."""
    out = {}
    lin = nn.Linear(16, 16)
    x = eager.randn(8, 16)
    for label, grad in (("linear", True), ("linear no_grad", False)):
        with eager.set_grad_enabled(grad):
            c = capture.compile(lin)
            c(x)
            c(x)
        out[label] = (lambda c=c: c(x), lambda: lin(x),
                      _kernels(c.__wick_compiled__, (lin, x)), grad, (c, (x,)))
    mlp = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 4))
    y = eager.randint(0, 4, (8,))

    def loss_fn(x, y):
        return F.cross_entropy(mlp(x), y)

    c = capture.compile(loss_fn)
    c(x, y)
    out["mlp+ce grad"] = (lambda: c(x, y), lambda: loss_fn(x, y),
                          _kernels(c.__wick_compiled__, (x, y)), True, (c, (x, y)))
    cnt = Counter()
    with eager.no_grad():
        cc = capture.compile(cnt)
        cc(x)
        cc(x)
        cc(x)
    cf = cc.__wick_compiled__
    kern = _kernels(cf, (cnt, x))
    out["counter"] = (lambda: cc(x), lambda: cnt(x), kern, False, (cc, (x,)))
    cnn = build_cnn(eager)
    cnn.train()
    xi, yi = eager.randn(64, 1, 8, 8), eager.randint(0, 10, (64,))

    def cnn_loss(x, y):
        return F.cross_entropy(cnn(x), y)

    c2 = capture.compile(cnn_loss)
    c2(xi, yi)
    c2(xi, yi)
    out["cnn"] = (lambda: c2(xi, yi), lambda: cnn_loss(xi, yi),
                  _kernels(c2.__wick_compiled__, (xi, yi)), True, (c2, (xi, yi)))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3000)
    ap.add_argument("--cases", default="")
    ap.add_argument("--profile", default="")
    ap.add_argument("--calls", type=int, default=100000, help="calls profiled")
    args = ap.parse_args(argv)
    all_cases = cases()
    if args.profile:
        import cProfile
        import pstats

        call, _, _, grad, _ = all_cases[args.profile]
        with eager.set_grad_enabled(grad):
            cProfile.runctx(f"for _ in range({args.calls}): call()", globals(), {"call": call},
                            "/tmp/hits.prof")
        pstats.Stats("/tmp/hits.prof").sort_stats("tottime").print_stats(25)
        return 0
    names = args.cases.split(",") if args.cases else list(all_cases)
    print("| case | compiled us | kernels us | hit overhead us | overhead, kernels replayed us "
          "| eager us |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in names:
        call, eager_call, kern, grad, (compiled, cargs) = all_cases[name]
        repeat = args.repeat if name != "cnn" else max(30, args.repeat // 20)
        fns = {"c": call, "e": eager_call}
        if kern is not None:
            fns["k"] = kern
        with eager.set_grad_enabled(grad):
            t = medians_us(fns, repeat, warmup=20)
            replay = replayed(compiled, cargs)
            r = None if replay is None else medians_us({"r": replay}, args.repeat)["r"]
        k = t.get("k")
        over = "" if k is None else f"{t['c'] - k:.1f}"
        ks = "" if k is None else f"{k:.1f}"
        rs = "" if r is None else f"{r:.1f}"
        print(f"| {name} | {t['c']:.1f} | {ks} | {over} | {rs} | {t['e']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
