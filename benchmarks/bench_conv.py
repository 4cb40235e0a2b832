"""Speed of eager.nn's conv2d (the registry's `_conv_nd`, ir/ops/conv.py: channels-last im2col
per cache-sized batch chunk + one BLAS GEMM per group, the input gradient as a flipped-weight
convolution or a col2im of strided additions) against a hand-written
numpy im2col (forward: sliding_window_view + matmul; backward: the two matmuls and a col2im of
kH * kW slice additions) and PyTorch eager, float32, 3x3 filters with padding 1: small-CNN
shapes (batch 64, 1 -> 16 -> 32 channels, 8x8 and 28x28), 64x32x28x28 -> 64 and 32x64x32x32 ->
64; also 2x2 max pooling and training batch norm at 8x8 and 28x28. PyTorch runs on one thread
(as bench_nn.py) and so does numpy's BLAS (threadpoolctl, when installed), for a like-for-like
comparison. Prints a markdown table of medians and ratios (wick / peer: below 1 means wick is
faster). torch is optional.

    python benchmarks/bench_conv.py [--repeat 7] [--only SUBSTRING]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_table import median_ms

import eager
import eager.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # an optional peer
    torch = None


def np_conv_fwd(x, w, b):
    """im2col conv (stride 1, padding 1): returns (out, cols) for the backward."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (kh, kw), axis=(2, 3))
    cols = win.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * wd, c * kh * kw)
    out = cols @ w.reshape(o, -1).T + b
    return out.reshape(n, h, wd, o).transpose(0, 3, 1, 2), cols


def np_conv_fwd_bwd(x, w, b):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    out, cols = np_conv_fwd(x, w, b)
    g = np.ones_like(out).transpose(0, 2, 3, 1).reshape(-1, o)
    dw = (g.T @ cols).reshape(w.shape)
    db = g.sum(0)
    dcols = (g @ w.reshape(o, -1)).reshape(n, h, wd, c, kh, kw)
    dxp = np.zeros((n, c, h + 2, wd + 2), x.dtype)
    for i in range(kh):
        for j in range(kw):
            dxp[:, :, i:i + h, j:j + wd] += dcols[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return dxp[:, :, 1:-1, 1:-1], dw, db


def np_max_pool(y):
    n, c, h, w = y.shape
    return y.reshape(n, c, h // 2, 2, w // 2, 2).max((3, 5))


def np_batch_norm(y):
    m = y.mean((0, 2, 3), keepdims=True)
    d = y - m
    return d / np.sqrt((d * d).mean((0, 2, 3), keepdims=True) + 1e-5)


CONVS = [((64, 1, 8, 8), 16), ((64, 16, 8, 8), 32), ((64, 1, 28, 28), 16),
         ((64, 16, 28, 28), 32), ((64, 32, 28, 28), 64), ((32, 64, 32, 32), 64)]
MAPS = [(64, 32, 8, 8), (64, 32, 28, 28)]


def workloads(rng):
    """(name, numpy forward, numpy forward+backward or None, eager fn, torch fn, arrays)."""
    for shape, out in CONVS:
        x = rng.standard_normal(shape).astype(np.float32)
        w = (rng.standard_normal((out, shape[1], 3, 3)) * 0.1).astype(np.float32)
        b = rng.standard_normal(out).astype(np.float32)
        yield (f"conv2d {'x'.join(map(str, shape))}, {out} 3x3 pad 1",
               lambda x=x, w=w, b=b: np_conv_fwd(x, w, b)[0],
               lambda x=x, w=w, b=b: np_conv_fwd_bwd(x, w, b),
               lambda x, w, b: F.conv2d(x, w, b, padding=1),
               (lambda x, w, b: TF.conv2d(x, w, b, padding=1)) if torch else None, (x, w, b))
    for shape in MAPS:
        y = rng.standard_normal(shape).astype(np.float32)
        name = "x".join(map(str, shape))
        yield (f"max_pool2d 2 of {name}", lambda y=y: np_max_pool(y), None,
               lambda y: F.max_pool2d(y, 2),
               (lambda y: TF.max_pool2d(y, 2)) if torch else None, (y,))
        yield (f"batch_norm (training) {name}", lambda y=y: np_batch_norm(y), None,
               lambda y: F.batch_norm(y, None, None, training=True),
               (lambda y: TF.batch_norm(y, None, None, training=True)) if torch else None,
               (y,))


def bench(repeat, only=""):
    rows = []
    for name, np_f, np_fb, e_fn, t_fn, arrays in workloads(np.random.default_rng(0)):
        if only not in name:
            continue
        e_in = [eager.tensor(a, requires_grad=True) for a in arrays]
        np_ms = median_ms(np_f, repeat)
        np_fb_ms = median_ms(np_fb, repeat) if np_fb else None
        e_fwd = median_ms(lambda f=e_fn, a=e_in: f(*a), repeat)

        def e_step(f=e_fn, a=e_in):
            f(*a).sum().backward()

        e_bwd = median_ms(e_step, repeat)
        t_fwd = t_bwd = None
        if t_fn is not None:
            t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
            t_fwd = median_ms(lambda f=t_fn, a=t_in: f(*a), repeat)

            def t_step(f=t_fn, a=t_in):
                f(*a).sum().backward()

            t_bwd = median_ms(t_step, repeat)
        rows.append((name, np_ms, e_fwd, t_fwd, np_fb_ms, e_bwd, t_bwd))
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--only", default="", help="run the workloads whose name contains this")
    args = ap.parse_args(argv)
    if torch is not None:
        torch.set_num_threads(1)
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1, "blas")
    except ImportError:  # numpy's BLAS keeps its threads
        pass

    def f(v):
        return "-" if v is None else f"{v:.2f}"

    def r(a, b):
        return "-" if b is None else f"{a / b:.2f}"

    print("| workload (float32) | numpy fwd ms | wick fwd ms | torch fwd ms | wick/numpy fwd | "
          "wick/torch fwd | numpy fwd+bwd ms | wick fwd+bwd ms | torch fwd+bwd ms | "
          "wick/numpy fwd+bwd | wick/torch fwd+bwd |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, np_ms, e_fwd, t_fwd, np_fb, e_bwd, t_bwd in bench(args.repeat, args.only):
        print(f"| {name} | {f(np_ms)} | {f(e_fwd)} | {f(t_fwd)} | {r(e_fwd, np_ms)} | "
              f"{r(e_fwd, t_fwd)} | {f(np_fb)} | {f(e_bwd)} | {f(t_bwd)} | {r(e_bwd, np_fb)} | "
              f"{r(e_bwd, t_bwd)} |")


if __name__ == "__main__":
    main()
