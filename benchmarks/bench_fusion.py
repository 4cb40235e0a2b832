"""Fusion benchmark: elementwise chains on 2**24 float32 elements, numpy vs wick's LLVM backend.

Two workloads from CODEGEN.md's yardsticks: a 7-op polynomial chain (memory-bound: numpy
makes a temporary per op, the fused kernel reads x once and writes once) and GELU with the tanh
approximation (transcendental-bound). Prints the median of several runs per implementation and
its ratio to numpy; PyTorch eager and torch.compile are timed too when `import torch` works.
Graphs are built by hand with `ir` (codegen does not depend on capture).

    python benchmarks/bench_fusion.py [--log2n 24] [--repeat 7]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from functools import partial

import numpy as np

import codegen
import ir

R = ir.REGISTRY


def call(g, name, args, **kwargs):
    op = R[name]
    inputs, attrs = op.bind(args, kwargs)
    metas = tuple(a.meta["val"] if isinstance(a, ir.Node) else a for a in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    return g.call_function(op, inputs, attrs, val=op.meta(metas, attrs))


def chain_graph(n):
    g = ir.Graph("chain7")
    x = g.placeholder("x", ir.TensorMeta((n,), ir.float32))
    t = call(g, "mul", (x, 2.0))
    t = call(g, "add", (t, 1.0))
    t = call(g, "mul", (t, x))
    t = call(g, "sub", (t, 3.0))
    t = call(g, "mul", (t, x))
    t = call(g, "add", (t, 0.5))
    t = call(g, "abs", (t,))
    g.output((t,))
    return g


def chain_numpy(x):
    return np.abs((((x * 2.0 + 1.0) * x) - 3.0) * x + 0.5)


def gelu_graph(n):
    g = ir.Graph("gelu_tanh")
    x = g.placeholder("x", ir.TensorMeta((n,), ir.float32))
    if "gelu" in R:
        g.output((call(g, "gelu", (x,), approximate="tanh"),))
        return g
    inner = call(g, "mul", (call(g, "add", (x, call(g, "mul", (call(g, "mul", (
        call(g, "mul", (x, x)), x)), 0.044715)))), math.sqrt(2 / math.pi)))
    g.output((call(g, "mul", (call(g, "mul", (x, 0.5)), call(g, "add", (call(
        g, "tanh", (inner,)), 1.0)))),))
    return g


def gelu_numpy(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def median_ms(fn, repeat):
    fn()  # warm up (first touch of output pages, lazy compilation)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3


def torch_fns(name):
    try:
        import torch
    except ImportError:
        return {}
    if name == "chain7":
        def f(x):
            return torch.abs((((x * 2.0 + 1.0) * x) - 3.0) * x + 0.5)
    else:
        def f(x):
            return torch.nn.functional.gelu(x, approximate="tanh")
    fns = {"torch eager": f}
    try:
        fns["torch.compile"] = torch.compile(f)
    except Exception as e:  # noqa: BLE001 (an optional reference)
        print(f"torch.compile unavailable: {e}")
    return fns


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log2n", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    n = 1 << args.log2n
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)

    rows = []
    for build, ref in [(chain_graph, chain_numpy), (gelu_graph, gelu_numpy)]:
        g = build(n)
        t0 = time.perf_counter()
        cg = codegen.compile_graph(g)
        compile_ms = (time.perf_counter() - t0) * 1e3
        got, want = cg(x)[0], ref(x)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(got, ir.Interpreter(g).run(x)[0], rtol=1e-5, atol=1e-6)
        base = median_ms(partial(ref, x), args.repeat)
        rows.append((g.name, "numpy", base, 1.0))
        t = median_ms(partial(cg, x), args.repeat)
        label = f"wick llvm ({len(cg.kernels)} kernel, compile {compile_ms:.0f} ms)"
        rows.append((g.name, label, t, base / t))
        for label, fn in torch_fns(g.name).items():
            import torch

            xt = torch.from_numpy(x)
            t = median_ms(partial(fn, xt), args.repeat)
            rows.append((g.name, label, t, base / t))

    print(f"n = 2**{args.log2n} float32, median of {args.repeat} runs")
    print(f"| {'workload':<10} | {'implementation':<40} | {'ms':>8} | {'speed-up vs numpy':>17} |")
    print(f"| {'-' * 10} | {'-' * 40} | {'-' * 8} | {'-' * 17} |")
    for w, impl, ms, ratio in rows:
        print(f"| {w:<10} | {impl:<40} | {ms:8.1f} | {ratio:16.2f}x |")


if __name__ == "__main__":
    main()
