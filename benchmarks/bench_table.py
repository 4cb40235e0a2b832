"""The speed table of issue 7: every workload against numpy, torch eager and torch.compile.

Rows (float32): GELU-tanh on 2**24 elements (and its peak memory), the 7-op polynomial chain vs
`x.copy()` (the memory floor), softmax over rows and layernorm (decomposed as users write it)
on 4096x1024, an MLP training step (784-256-10, batch 64) compiled forward+backward vs eager
wick, the first call of a new 16-op graph (cold, and from the disk cache in a new process), and
the per-call time of 10 ops on 8 elements. Prints one markdown table of medians and ratios
(ratio = wick time / peer time: below 1 means wick is faster). torch is optional.

    python benchmarks/bench_table.py [--repeat 7] [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import tracemalloc

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench_fusion import chain_graph, chain_numpy, gelu_numpy

import codegen
import ir

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # an optional peer
    torch = None

R = ir.REGISTRY


def c(g, name, *args, **kw):
    return g.call_op(R[name], args, kw)


def median_ms(fn, repeat, warm=2):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def tcompile(f):
    if torch is None:
        return None
    try:
        return torch.compile(f)
    except Exception:  # noqa: BLE001
        return None


def gelu_graph(n):
    g = ir.Graph("gelu_tanh")
    x = g.placeholder("x", ir.TensorMeta((n,), ir.float32))
    inner = c(g, "mul", c(g, "add", x, c(g, "mul", c(g, "mul", c(g, "mul", x, x), x), 0.044715)),
              math.sqrt(2 / math.pi))
    g.output((c(g, "mul", c(g, "mul", x, 0.5), c(g, "add", c(g, "tanh", inner), 1.0)),))
    return g


def softmax_graph(shape):
    g = ir.Graph("softmax")
    x = g.placeholder("x", ir.TensorMeta(shape, ir.float32))
    g.output((c(g, "softmax", x, -1),))
    return g


def layernorm_graph(shape):
    g = ir.Graph("layernorm")
    x = g.placeholder("x", ir.TensorMeta(shape, ir.float32))
    w = g.placeholder("w", ir.TensorMeta(shape[-1:], ir.float32))
    b = g.placeholder("b", ir.TensorMeta(shape[-1:], ir.float32))
    m = c(g, "mean", x, -1, keepdim=True)
    xc = c(g, "sub", x, m)
    v = c(g, "mean", c(g, "mul", xc, xc), -1, keepdim=True)
    g.output((c(g, "add", c(g, "mul", c(g, "mul", xc, c(g, "rsqrt", c(g, "add", v, 1e-5))), w),
                b),))
    return g


def row(rows, workload, impl, ms, ref=None):
    rows.append((workload, impl, ms, ref))


def elementwise_rows(rows, repeat, n):
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    xt = torch.from_numpy(x) if torch is not None else None
    # GELU
    cg = codegen.compile_graph(gelu_graph(n))
    np.testing.assert_allclose(cg(x)[0], gelu_numpy(x), rtol=1e-4, atol=1e-5)
    t = median_ms(lambda: cg(x), repeat)
    row(rows, "GELU-tanh 16.7M", "wick llvm", t)
    row(rows, "GELU-tanh 16.7M", "numpy", median_ms(lambda: gelu_numpy(x), max(3, repeat // 2)),
        "ratio")
    if torch is not None:
        f = lambda v: TF.gelu(v, approximate="tanh")
        row(rows, "GELU-tanh 16.7M", "torch eager", median_ms(lambda: f(xt), repeat), "ratio")
        fc = tcompile(f)
        if fc is not None:
            row(rows, "GELU-tanh 16.7M", "torch.compile", median_ms(lambda: fc(xt), repeat),
                "ratio")
    tracemalloc.start()
    cg(x)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rows.append(("GELU-tanh 16.7M", f"peak memory / (in + out) = {peak / (2 * x.nbytes):.2f}",
                 None, None))
    # 7-op chain
    cg = codegen.compile_graph(chain_graph(n))
    np.testing.assert_allclose(cg(x)[0], chain_numpy(x), rtol=1e-4, atol=1e-4)
    row(rows, "7-op chain 16.7M", "wick llvm", median_ms(lambda: cg(x), repeat))
    row(rows, "7-op chain 16.7M", "x.copy() (memory floor)", median_ms(x.copy, repeat), "ratio")
    row(rows, "7-op chain 16.7M", "numpy", median_ms(lambda: chain_numpy(x), repeat), "ratio")
    if torch is not None:
        fc = tcompile(lambda v: torch.abs((((v * 2.0 + 1.0) * v) - 3.0) * v + 0.5))
        if fc is not None:
            row(rows, "7-op chain 16.7M", "torch.compile", median_ms(lambda: fc(xt), repeat),
                "ratio")


def row_kernel_rows(rows, repeat):
    shape = (4096, 1024)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape[-1]).astype(np.float32)
    b = rng.standard_normal(shape[-1]).astype(np.float32)

    def np_softmax(v):
        e = np.exp(v - v.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def np_layernorm(v):
        m = v.mean(-1, keepdims=True)
        xc = v - m
        return xc / np.sqrt((xc * xc).mean(-1, keepdims=True) + 1e-5) * w + b

    cg = codegen.compile_graph(softmax_graph(shape))
    np.testing.assert_allclose(cg(x)[0], np_softmax(x), rtol=1e-5, atol=1e-7)
    row(rows, "softmax 4096x1024", f"wick llvm ({len(cg.kernels)} kernel)",
        median_ms(lambda: cg(x), repeat))
    row(rows, "softmax 4096x1024", "numpy", median_ms(lambda: np_softmax(x), repeat), "ratio")
    cl = codegen.compile_graph(layernorm_graph(shape))
    np.testing.assert_allclose(cl(x, w, b)[0], np_layernorm(x), rtol=1e-4, atol=1e-4)
    lrows = [("layernorm 4096x1024", f"wick llvm ({len(cl.kernels)} kernel)",
              median_ms(lambda: cl(x, w, b), repeat), None),
             ("layernorm 4096x1024", "numpy", median_ms(lambda: np_layernorm(x), repeat),
              "ratio")]
    if torch is not None:
        xt, wt, bt = (torch.from_numpy(a) for a in (x, w, b))
        row(rows, "softmax 4096x1024", "torch.softmax (ATen)",
            median_ms(lambda: torch.softmax(xt, -1), repeat), "ratio")
        fc = tcompile(lambda v: torch.softmax(v, -1))
        if fc is not None:
            row(rows, "softmax 4096x1024", "torch.compile", median_ms(lambda: fc(xt), repeat),
                "ratio")
        lrows.append(("layernorm 4096x1024", "F.layer_norm (ATen)",
                      median_ms(lambda: TF.layer_norm(xt, (1024,), wt, bt), repeat), "ratio"))

        def tl(v):
            m = v.mean(-1, keepdim=True)
            xc = v - m
            return xc * torch.rsqrt((xc * xc).mean(-1, keepdim=True) + 1e-5) * wt + bt
        fc = tcompile(tl)
        if fc is not None:
            lrows.append(("layernorm 4096x1024", "torch.compile (decomposed)",
                          median_ms(lambda: fc(xt), repeat), "ratio"))
    rows.extend(lrows)


def mlp_rows(rows, repeat):
    import eager
    from capture.aot import aot_function
    from eager import dispatch

    g = ir.Graph("mlp_step")
    x = g.placeholder("x", ir.TensorMeta((64, 784), ir.float32))
    y = g.placeholder("y", ir.TensorMeta((64, 10), ir.float32))   # one-hot targets
    w1 = g.placeholder("w1", ir.TensorMeta((784, 256), ir.float32))
    b1 = g.placeholder("b1", ir.TensorMeta((256,), ir.float32))
    w2 = g.placeholder("w2", ir.TensorMeta((256, 10), ir.float32))
    b2 = g.placeholder("b2", ir.TensorMeta((10,), ir.float32))
    h = c(g, "clamp_min", c(g, "add", c(g, "matmul", x, w1), b1), 0.0)
    o = c(g, "add", c(g, "matmul", h, w2), b2)
    loss = c(g, "mean", c(g, "sum", c(g, "mul", c(g, "log_softmax", o, -1), y), -1), None)
    g.output((c(g, "neg", loss),))
    rng = np.random.default_rng(2)
    arrays = [rng.standard_normal(p.meta["val"].shape).astype(np.float32) * 0.05
              for p in g.placeholders]
    arrays[1] = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]
    aot = aot_function(g, codegen.compile_graph)

    def tensors():
        ts = [eager.from_numpy(a) for a in arrays]
        for t in ts[2:]:
            t.requires_grad_(True)
        return ts

    def compiled_step():
        ts = tensors()
        (lv,) = aot(*ts)
        lv.backward()
        return ts

    def eager_step():
        ts = tensors()
        env = dict(zip(g.placeholders, ts))
        for n in g.nodes:
            if n.op == "call_function":
                env[n] = dispatch.apply(n.target, tuple(env[a] if isinstance(a, ir.Node) else a
                                                        for a in n.args), dict(n.kwargs))
        env[g.output_node.args[0][0]].backward()
        return ts

    a, e = compiled_step(), eager_step()
    for p, q in zip(a[2:], e[2:]):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)
    row(rows, "MLP train step 784-256-10 b64", "wick compiled fwd+bwd (AOT)",
        median_ms(compiled_step, repeat * 3))
    row(rows, "MLP train step 784-256-10 b64", "eager wick", median_ms(eager_step, repeat * 3),
        "ratio")
    if torch is not None:
        tw = [torch.from_numpy(a.copy()) for a in arrays]
        for t in tw[2:]:
            t.requires_grad_(True)

        def tstep():
            xx, yy, a1, c1, a2, c2 = tw
            out = torch.relu(xx @ a1 + c1) @ a2 + c2
            (-(torch.log_softmax(out, -1) * yy).sum(-1).mean()).backward()
        row(rows, "MLP train step 784-256-10 b64", "torch eager", median_ms(tstep, repeat * 3),
            "ratio")


FIRST_CALL = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    import numpy as np, eager, capture
    x = eager.from_numpy(np.linspace(-1, 1, 64, dtype=np.float32).reshape(8, 8))
    def f(x):
        a = x * 1.5 + 0.25
        b = a.tanh() * x - 1.0
        c = (b * b + a).exp() / (x * x + 1.0)
        d = c.sqrt() - b.abs()
        e = (d * 0.5 + c) * (a - 0.125)
        return e.sigmoid() + d
    t1 = time.perf_counter()
    if sys.argv[1] == "warm":   # imports, JIT start-up: paid once per process
        capture.compile(lambda v: v * 2.0 - 1.0, backend="llvm")(eager.ones(3))
    t2 = time.perf_counter()
    cf = capture.compile(f, backend="llvm")
    cf(x)
    t3 = time.perf_counter()
    print((t3 - t1 if sys.argv[1] == "cold" else t3 - t2) * 1e3)
""")


def first_call_rows(rows):
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, WICK_CACHE_DIR=d)
        times = []
        for mode in ("warm", "warm", "cold"):
            out = subprocess.run([sys.executable, "-c", FIRST_CALL, mode], env=env,
                                 capture_output=True, text=True, check=False,
                                 cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
            if out.returncode != 0:
                rows.append(("first call, 16-op graph", "failed: " + out.stderr[-200:], None,
                             None))
                return
            times.append(float(out.stdout.split()[-1]))
    row(rows, "first call, new 16-op graph", "capture+fusion+LLVM (empty disk cache)", times[0])
    row(rows, "first call, new 16-op graph", "new process, from the disk cache", times[1])
    row(rows, "first call, new 16-op graph", "new process incl. imports + JIT start, disk cache",
        times[2])


def small_call_rows(rows, repeat):
    import capture
    import eager

    def f(x):
        a = x * 1.5 + 0.25
        b = a.tanh() * x - 1.0
        c = (b * b + a).exp()
        return c - b.abs() + a

    x = eager.from_numpy(np.linspace(-1, 1, 8, dtype=np.float32))
    cf = capture.compile(f, backend="llvm")
    cf(x)
    n = 2000
    t = median_ms(lambda: [cf(x) for _ in range(n)], repeat) / n * 1e3
    row(rows, "10 ops on 8 elements, per call (us)", "wick compiled", t)
    row(rows, "10 ops on 8 elements, per call (us)", "eager wick",
        median_ms(lambda: [f(x) for _ in range(n)], repeat) / n * 1e3, "ratio")
    if torch is not None:
        xt = torch.linspace(-1, 1, 8)
        fc = tcompile(f)
        if fc is not None:
            fc(xt)
            row(rows, "10 ops on 8 elements, per call (us)", "torch.compile",
                median_ms(lambda: [fc(xt) for _ in range(n)], repeat) / n * 1e3, "ratio")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--log2n", type=int, default=24)
    args = ap.parse_args()
    rows: list = []
    for part in (lambda: elementwise_rows(rows, args.repeat, 1 << args.log2n),
                 lambda: row_kernel_rows(rows, args.repeat), lambda: mlp_rows(rows, args.repeat),
                 lambda: first_call_rows(rows), lambda: small_call_rows(rows, args.repeat)):
        try:
            part()
        except Exception as e:  # noqa: BLE001 (report the row, keep the others)
            rows.append(("(error)", f"{type(e).__name__}: {e}"[:90], None, None))
    print(f"threads: {codegen.threads.num_threads()}, medians of {args.repeat} runs")
    print("| workload | implementation | time (ms; us per call for the last row) | "
          "wick / this |")
    print("| --- | --- | --- | --- |")
    wick = {}
    for w, impl, ms, ref in rows:
        if ms is None:
            print(f"| {w} | {impl} | | |")
            continue
        if ref is None:
            wick[w] = ms
            print(f"| {w} | {impl} | {ms:.3f} | |")
        else:
            print(f"| {w} | {impl} | {ms:.3f} | {wick.get(w, float('nan')) / ms:.3f}x |")


if __name__ == "__main__":
    main()
