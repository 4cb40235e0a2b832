"""Capture speed: cache-hit overhead (guard check) and capture time (bytecode to graph).

    python benchmarks/bench_capture.py

Goals (issue 6): checking the guards of a function of three tensor arguments under 5 us per
call; capturing a 100-op function (symbolic interpretation into an `ir.Graph`, no codegen)
under 20 ms. Reports medians over repeated runs:

- `guard`: the entry's guard closure alone, called with the three tensors;
- `hit overhead`: a compiled call of a trivial function minus the backend's own call on the
  same arrays (guard + input fetch + output wrapping);
- `numpy x+y+z`: the same arithmetic in numpy, for scale;
- `capture 100 ops`: `CompiledFunction._translate` of a generated 100-op function;
- `capture+compile 100 ops`: the full miss path with the IR interpreter backend.
"""

from __future__ import annotations

import statistics
import sys
import time

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


def main() -> int:
    rows = []
    x, y, z = (eager.randn(16, 16) for _ in range(3))
    cf = capture.compile(trivial, backend="eager")
    cf(x, y, z)
    entry = cf.__wick_compiled__.entries[0]
    guard_us = median_us(lambda: entry.guard(x, y, z))
    call_us = median_us(lambda: cf(x, y, z))
    arrays = [t._data for t in entry.fetch(x, y, z)]
    backend_us = median_us(lambda: entry.runner.compiled(*arrays))
    xn, yn, zn = x._data, y._data, z._data
    numpy_us = median_us(lambda: xn + yn + zn)
    rows.append(("guard check (3 tensors)", guard_us, "< 5 us"))
    rows.append(("cache-hit overhead (call - backend)", call_us - backend_us, "< 5 us"))
    rows.append(("  compiled call", call_us, ""))
    rows.append(("  backend call (IR interpreter)", backend_us, ""))
    rows.append(("  numpy x + y + z", numpy_us, ""))

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
    print(f"python {sys.version.split()[0]}")
    print(f"{'measure':48} {'median':>12}  goal")
    for name, us, goal in rows:
        shown = f"{us:9.2f} us" if us < 1000 else f"{us / 1e3:9.2f} ms"
        print(f"{name:48} {shown:>12}  {goal}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
