"""Capture speed: cache-hit overhead (guards, inputs, outputs) and capture time.

    python benchmarks/bench_capture.py [--no-torch]

Goals (issue 6): the overhead of a cache hit of a function of three tensor arguments under
5 us per call; capturing a 100-op function (symbolic interpretation into an `ir.Graph`, no
codegen) under 20 ms. Reports medians over repeated, interleaved runs:

- `guard`: the entry's guard closure alone, called with the three tensors;
- `hit overhead`: a compiled call of a trivial `x + y + z` minus the backend's own call on the
  same arrays (what capture adds: dispatch, guards, input fetch, output wrapping). Measured
  with a callable backend returning a numpy function (cheap, so the difference is not lost in
  the backend's noise), and with the "eager" (IR interpreter) and "llvm" backends;
- `numpy x+y+z`: the same arithmetic in numpy, for scale;
- `capture 100 ops`: `CompiledFunction._translate` of a generated 100-op function;
- `capture+compile 100 ops`: the full miss path with the IR interpreter backend;
- `10 elementwise ops`: a compiled call of 10 elementwise ops on three 8-element float32
  tensors, llvm backend, against `torch.compile` (inductor, CPU) on the same function (target:
  wick <= 0.6x torch.compile's per-call time). Skipped when torch is not installed.
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import capture
import eager
from capture.compiler import CompiledFunction
from capture.output_graph import OutputGraph


def median_us(fn, repeat: int = 2000, inner: int = 20) -> float:
    times = []
    for _ in range(repeat // inner):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        times.append((time.perf_counter() - t0) / inner)
    return statistics.median(times) * 1e6


def interleaved_us(fns, rounds: int = 15, repeat: int = 600) -> list:
    """Median per-call time of each of `fns`, measured in alternating rounds (drift and
    frequency changes hit all of them alike)."""
    per = [[] for _ in fns]
    for _ in range(rounds):
        for k, fn in enumerate(fns):
            per[k].append(median_us(fn, repeat))
    return [statistics.median(p) for p in per]


def hit_overhead(backend, x, y, z):
    """(compiled call, backend call, guard closure) of `trivial` with `backend`, in us."""
    cf = capture.compile(trivial, backend=backend)
    cf(x, y, z)
    entry = cf.__wick_compiled__.entries[0]
    compiled = entry.runner.compiled
    arrays = [t._data for t in entry.fetch(x, y, z)]
    fast = getattr(compiled, "__call__", compiled)  # noqa: B004 - bound: skips the type slot
    call_us, b1, b2, guard_us = interleaved_us([
        lambda: cf(x, y, z), lambda: compiled(*arrays), lambda: fast(*arrays),
        lambda: entry.guard(x, y, z)])
    return call_us, min(b1, b2), guard_us


def trivial(x, y, z):
    return x + y + z


def make_100_op_function():
    lines = ["def f(x, y):", "    a = x"]
    for i in range(100):
        op = ("a = a + y", "a = a * 1.5", "a = eager.tanh(a)", "a = a - x")[i % 4]
        lines.append("    " + op)
    lines.append("    return a")
    ns = {"eager": eager}
    exec("\n".join(lines), ns)  # noqa: S102 - a generated benchmark function
    return ns["f"]


def numpy_backend(graph):
    """A callable backend: the trivial function's graph as one numpy expression."""

    def run(a, b, c):
        return (a + b + c,)

    return run


TEN_OPS = """
def ten_ops(x, y, z):
    a = x + y
    a = a * z
    a = a - x
    a = m.tanh(a)
    a = a * 0.5
    a = m.exp(a)
    a = a + y
    a = m.abs(a)
    a = m.sigmoid(a)
    return a * z
"""


def ten_ops_for(module):
    ns = {"m": module}
    exec(TEN_OPS, ns)  # noqa: S102 - the same source for wick and torch
    return ns["ten_ops"]


def ten_op_rows(with_torch: bool) -> list:
    rows = []
    xs = [eager.randn(8, dtype=eager.float32) for _ in range(3)]
    wick_fn = capture.compile(ten_ops_for(eager), backend="llvm")
    wick_fn(*xs)
    entry = wick_fn.__wick_compiled__.entries[0]
    arrays = [t._data for t in xs]
    fns = [lambda: wick_fn(*xs), lambda: entry.runner.compiled(*arrays)]
    torch_fn = None
    if with_torch:
        try:
            import torch
        except ImportError:
            torch = None
        if torch is not None:
            ts = [torch.from_numpy(a.copy()) for a in arrays]
            torch_fn = torch.compile(ten_ops_for(torch))
            with torch.no_grad():
                torch_fn(*ts)
                torch_fn(*ts)
            np.testing.assert_allclose(torch_fn(*ts).numpy(), wick_fn(*xs).numpy(),
                                       rtol=1e-5, atol=1e-6)
            eager_fn = ten_ops_for(torch)
            fns += [lambda: torch_fn(*ts), lambda: eager_fn(*ts)]
    got = interleaved_us(fns, rounds=9, repeat=400)
    rows.append(("10 elementwise ops, 3 x float32[8]: wick (llvm)", got[0], ""))
    rows.append(("  of which the llvm backend's own call", got[1], ""))
    rows.append(("  wick hit overhead (call - backend)", got[0] - got[1], ""))
    if len(got) > 2:
        rows.append(("  torch.compile (inductor, CPU)", got[2], ""))
        rows.append(("  torch eager", got[3], ""))
        rows.append(("  wick / torch.compile", got[0] / got[2], "<= 0.6x"))
    return rows


def main() -> int:
    rows = []
    x, y, z = (eager.randn(16, 16) for _ in range(3))
    call_us, backend_us, guard_us = hit_overhead(numpy_backend, x, y, z)
    rows.append(("guard check (3 tensors)", guard_us, "< 5 us"))
    rows.append(("cache-hit overhead (call - backend)", call_us - backend_us, "< 5 us"))
    rows.append(("  compiled call (numpy backend)", call_us, ""))
    rows.append(("  backend call (numpy a + b + c)", backend_us, ""))
    for name in ("eager", "llvm"):
        call_us, backend_us, _ = hit_overhead(name, x, y, z)
        rows.append((f"cache-hit overhead, {name} backend", call_us - backend_us, ""))
        rows.append((f"  compiled call / backend call ({name})", call_us, f"{backend_us:.2f} us"))
    xn, yn, zn = x._data, y._data, z._data
    rows.append(("numpy x + y + z", median_us(lambda: xn + yn + zn), ""))

    f = make_100_op_function()
    a, b = eager.randn(8, 8), eager.randn(8, 8)
    cfn = CompiledFunction(f, "eager", register=False)

    def translate():
        cfn._translate(OutputGraph(f), (a, b), {})

    translate()
    cap = [0.0] * 7
    for i in range(len(cap)):
        t0 = time.perf_counter()
        translate()
        cap[i] = (time.perf_counter() - t0) * 1e3
    full = [0.0] * 5
    for i in range(len(full)):
        c = CompiledFunction(f, "eager", register=False)
        t0 = time.perf_counter()
        c(a, b)
        full[i] = (time.perf_counter() - t0) * 1e3
    rows.append(("capture 100 ops (bytecode -> graph)", statistics.median(cap) * 1e3,
                 "< 20 ms"))
    rows.append(("capture + guards + interpreter run, 100 ops", statistics.median(full) * 1e3,
                 ""))
    rows += ten_op_rows("--no-torch" not in sys.argv)
    print(f"python {sys.version.split()[0]}")
    print(f"{'measure':52} {'median':>12}  goal")
    for name, us, goal in rows:
        if name.endswith("torch.compile"):
            shown = f"{us:9.2f} x "
        else:
            shown = f"{us:9.2f} us" if us < 1000 else f"{us / 1e3:9.2f} ms"
        print(f"{name:52} {shown:>12}  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
