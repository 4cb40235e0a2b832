"""GPU benchmark of the cuda backend against cupy eager, torch eager and torch.compile (Triton).

    python benchmarks/bench_cuda.py [--quick]

Workloads (float32, the goals of issue 8):
- GELU-tanh on 64M elements: achieved bandwidth (read + write bytes / time) as a fraction of
  the device's measured copy bandwidth (goal >= 85%);
- softmax and layernorm on 8192x4096: time / torch's fused kernel (`torch.softmax`,
  `F.layer_norm`; goal <= 1.2);
- a compiled call of 10 elementwise ops on small tensors: per-call wall time (Python overhead
  plus launch) / torch.compile's (goal <= 0.6).
GPU times are medians of CUDA-event timings after warm-up; per-call overhead is the median
wall time of a call followed by nothing (launches are asynchronous), measured over many calls.
Without cupy or a GPU the script prints why and exits 0; torch columns are left out when torch
has no CUDA. Imports wick's `codegen`, `ir`, `eager` and `capture` (and cupy, torch).
"""

from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import codegen
import ir

R = ir.REGISTRY
QUICK = "--quick" in sys.argv
REPS = 5 if QUICK else 20


def gpu():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            return cupy, ""
        return None, "cupy sees no CUDA device"
    except Exception as e:  # noqa: BLE001
        return None, f"cupy with a CUDA device is needed ({type(e).__name__}: {e})"


def torch_cuda():
    try:
        import torch

        if torch.cuda.is_available():
            return torch, ""
        return None, "torch has no CUDA device"
    except ImportError as e:
        return None, f"torch is not installed ({e})"


def event_ms(cp, fn, reps=REPS) -> float:
    """Median GPU time of `fn()` in milliseconds (CUDA events on the current stream)."""
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def torch_ms(torch, fn, reps=REPS) -> float:
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def wall_us(fn, sync, calls=2000) -> float:
    """Median per-call wall time (microseconds) over batches of calls."""
    for _ in range(50):
        fn()
    sync()
    batches = []
    n = calls // 10 if QUICK else calls
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(n):
            fn()
        batches.append((time.perf_counter() - t) / n * 1e6)
        sync()
    return statistics.median(batches)


def c(g, name, *args, **kw):
    return g.call_op(R[name], args, kw)


def ph(g, name, shape):
    return g.placeholder(name, ir.TensorMeta(tuple(shape), ir.float32, "cuda:0"))


def gelu_graph(n):
    g = ir.Graph("gelu_tanh")
    x = ph(g, "x", (n,))
    inner = c(g, "mul", c(g, "add", x, c(g, "mul", c(g, "mul", c(g, "mul", x, x), x),
                                         0.044715)), 0.7978845608028654)
    g.output((c(g, "mul", c(g, "mul", x, 0.5), c(g, "add", c(g, "tanh", inner), 1.0)),))
    return g


def softmax_graph(shape):
    g = ir.Graph("softmax")
    g.output((c(g, "softmax", ph(g, "x", shape), -1),))
    return g


def layernorm_graph(shape):
    g = ir.Graph("layernorm")
    x, w, b = ph(g, "x", shape), ph(g, "w", shape[-1:]), ph(g, "b", shape[-1:])
    m = c(g, "mean", x, -1, keepdim=True)
    xc = c(g, "sub", x, m)
    v = c(g, "mean", c(g, "mul", xc, xc), -1, keepdim=True)
    g.output((c(g, "add", c(g, "mul", c(g, "mul", xc, c(g, "rsqrt", c(g, "add", v, 1e-5))), w),
                b),))
    return g


def ten_ops(x, y):
    """10 elementwise ops (the per-call overhead workload); works on eager and torch."""
    t = x * y + 1.0
    t = t.tanh() * 0.5 - y
    t = t.exp() / (1.0 + t.abs())
    return (t * t).sqrt() + x


def bench_gelu(cp, torch, rng) -> dict:
    """GELU-tanh on 64M float32 vs the device's copy bandwidth."""
    n = (1 << 24) if QUICK else (1 << 26)
    a = cp.asarray(rng.standard_normal(n).astype(np.float32))
    b = cp.empty_like(a)
    nbytes = 2 * a.nbytes
    copy_ms = min(event_ms(cp, lambda: b.data.copy_from_device(a.data, a.nbytes)),
                  event_ms(cp, lambda: cp.copyto(b, a)))
    copy_bw = nbytes / copy_ms / 1e6
    g = gelu_graph(n)
    cg = codegen.compile_graph(g, backend="cuda")
    interp = ir.Interpreter(g)
    row = {"workload": f"GELU-tanh {n >> 20}M", "copy": copy_ms,
           "wick": event_ms(cp, lambda: cg(a)), "cupy eager": event_ms(cp, lambda: interp.run(a))}
    if torch:
        ta = torch.as_tensor(a, device="cuda")
        gelu = torch.nn.functional.gelu
        row["torch eager"] = torch_ms(torch, lambda: gelu(ta, approximate="tanh"))
        tc = torch.compile(lambda x: gelu(x, approximate="tanh"))
        row["torch.compile"] = torch_ms(torch, lambda: tc(ta))
    wick_bw = nbytes / row["wick"] / 1e6
    row["goal"] = (f"{wick_bw:.0f} GB/s = {100 * wick_bw / copy_bw:.0f}% of copy "
                   f"{copy_bw:.0f} GB/s (goal >= 85%)")
    return row


def bench_row(cp, torch, rng, label: str) -> dict:
    """softmax or layernorm over 8192x4096 float32 vs torch's fused kernel."""
    shape = (2048, 4096) if QUICK else (8192, 4096)
    x = cp.asarray(rng.standard_normal(shape).astype(np.float32))
    w = cp.asarray(rng.standard_normal(shape[-1:]).astype(np.float32))
    bias = cp.asarray(rng.standard_normal(shape[-1:]).astype(np.float32))
    if label == "softmax":
        g, args = softmax_graph(shape), (x,)
    else:
        g, args = layernorm_graph(shape), (x, w, bias)
    cg = codegen.compile_graph(g, backend="cuda")
    interp = ir.Interpreter(g)
    row = {"workload": f"{label} {shape[0]}x{shape[1]}",
           "wick": event_ms(cp, lambda: cg(*args)),
           "cupy eager": event_ms(cp, lambda: interp.run(*args))}
    if torch:
        tx, tw, tb = (torch.as_tensor(v, device="cuda") for v in (x, w, bias))
        if label == "softmax":
            def plain(t):
                return torch.softmax(t, -1)
        else:
            def plain(t):
                return torch.nn.functional.layer_norm(t, shape[-1:], tw, tb)
        row["torch eager"] = torch_ms(torch, lambda: plain(tx))
        tc = torch.compile(plain)
        row["torch.compile"] = torch_ms(torch, lambda: tc(tx))
        row["goal"] = f"wick / torch fused = {row['wick'] / row['torch eager']:.2f} (goal <= 1.2)"
    return row


def bench_overhead(cp, torch, rng) -> dict:
    """Per-call wall time of 10 elementwise ops on 16 elements."""
    import capture
    import eager

    xs = rng.standard_normal((16,)).astype(np.float32)
    ys = rng.uniform(0.5, 1.5, (16,)).astype(np.float32)
    ex, ey = eager.from_numpy(xs).cuda(), eager.from_numpy(ys).cuda()
    sync = cp.cuda.Device().synchronize
    row = {"workload": "10 ops on 16 elements, us/call",
           "cupy eager": wall_us(lambda: ten_ops(ex, ey), sync)}
    try:   # capture + guards + the cuda backend, as users call it
        wick_fn = capture.compile(ten_ops, backend="cuda")
        np.testing.assert_allclose(wick_fn(ex, ey).cpu().numpy(),
                                   ten_ops(ex, ey).cpu().numpy(), rtol=1e-5)
        row["wick"] = wall_us(lambda: wick_fn(ex, ey), sync)
    except Exception as e:  # noqa: BLE001 (report it; the CudaGraph column still runs)
        print(f"capture.compile(backend='cuda') failed: {type(e).__name__}: {e}")
    g = ir.Graph("ten_ops")
    gx, gy = ph(g, "x", (16,)), ph(g, "y", (16,))
    t = c(g, "add", c(g, "mul", gx, gy), 1.0)
    t = c(g, "sub", c(g, "mul", c(g, "tanh", t), 0.5), gy)
    t = c(g, "div", c(g, "exp", t), c(g, "add", c(g, "abs", t), 1.0))
    g.output((c(g, "add", c(g, "sqrt", c(g, "mul", t, t)), gx),))
    cg = codegen.compile_graph(g, backend="cuda")
    assert len(cg.kernels) == 1, cg.dump("fusion")
    dx, dy = cp.asarray(xs), cp.asarray(ys)
    row["wick CudaGraph only"] = wall_us(lambda: cg(dx, dy), sync)
    if torch:
        tx, ty = torch.as_tensor(xs, device="cuda"), torch.as_tensor(ys, device="cuda")
        row["torch eager"] = wall_us(lambda: ten_ops(tx, ty), torch.cuda.synchronize)
        tc = torch.compile(ten_ops)
        row["torch.compile"] = wall_us(lambda: tc(tx, ty), torch.cuda.synchronize)
        best = row.get("wick", row["wick CudaGraph only"])
        row["goal"] = f"wick / torch.compile = {best / row['torch.compile']:.2f} (goal <= 0.6)"
    return row


def main() -> int:
    cp, why = gpu()
    if cp is None:
        print(f"bench_cuda: skipped: {why}")
        return 0
    torch, twhy = torch_cuda()
    dev = cp.cuda.Device()
    props = cp.cuda.runtime.getDeviceProperties(dev.id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"device: {name}, {dev.attributes['MultiProcessorCount']} SMs; torch: "
          f"{'yes' if torch else twhy}")
    rng = np.random.default_rng(0)
    rows = [bench_gelu(cp, torch, rng), bench_row(cp, torch, rng, "softmax"),
            bench_row(cp, torch, rng, "layernorm"), bench_overhead(cp, torch, rng)]
    cols = ["workload", "copy", "wick", "wick CudaGraph only", "cupy eager", "torch eager",
            "torch.compile", "goal"]
    print("\n| " + " | ".join(cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        cells = []
        for col in cols:
            v = r.get(col, "-")
            cells.append(f"{v:.3f}" if isinstance(v, float) else str(v))
        print("| " + " | ".join(cells) + " |")
    print("\ntimes in ms (GPU events) except the last row (us per call, wall time)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
