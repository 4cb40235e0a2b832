"""Reductions over short contiguous runs spread far apart (NCHW batch norm) run interleaved.

Regression: the fused batch-norm kernels of the issue-14 CNN (per channel of a (64, C, 8, 8)
float32 tensor: sum, centred sum of squares, normalise) took 30-70 us for 0.25-0.5 MB, walking
each channel's 64-float rows 2048 floats apart (rows the prefetchers do not follow, all in the
same cache sets). Such kernels now set `Kernel.col_inner` (`schedule.interleave_block`): per
tile of channels, the sample loop runs outside and each channel's contiguous run inside, with
per-channel accumulators; other multi-loop reductions accumulate each inner run from the
identity (`render._Renderer.row_loop`). Results are compared with eager (the registry's numpy
kernels, node by node) and float sums with exact float64 sums; every graph must run as fused
LLVM kernels only (no eager fallback).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from opinfo import record_op

import codegen
import ir
from codegen.schedule import ROW_RUN
from ir.execute import apply_arrays

RNG = np.random.default_rng(29)
call = record_op
NCHW = (0, 2, 3)


def build_graph(build, *arrays):
    g = ir.Graph("interleaved")
    xs = [g.placeholder(f"x{i}", ir.TensorMeta(a.shape, ir.dtypes.from_numpy(a.dtype)))
          for i, a in enumerate(arrays)]
    out = build(g, *xs)
    g.output(out if isinstance(out, tuple) else (out,))
    return g


def eager_run(g, arrays):
    """The graph run node by node through the registry on numpy arrays (eager semantics)."""
    env: dict = {}
    args = iter(arrays)
    for n in g.nodes:
        if n.op == "placeholder":
            env[n] = next(args)
        elif n.op == "call_function":
            ins = tuple(env[a] if isinstance(a, ir.Node) else a for a in n.args)
            env[n] = apply_arrays(np, n.target, ins, dict(n.kwargs))
        elif n.op == "output":
            return [np.asarray(env[a]) for a in n.args[0]]
    raise AssertionError("no output")


def compiled(build, *arrays, interleaved=True):
    """(compiled outputs, eager outputs, kernels); with `interleaved` some kernel must be."""
    cg = codegen.compile_graph(build_graph(build, *arrays))
    assert cg.fallbacks == [] and len(cg.kernels) == len(cg.steps), cg.partition.format()
    assert any(k.col_inner for k in cg.kernels) == interleaved, \
        [k.format() for k in cg.kernels]
    got = [np.asarray(v) for v in cg(*arrays)]
    return got, eager_run(build_graph(build, *arrays), arrays), cg.kernels


def data(shape, dtype):
    if np.dtype(dtype).kind in "iu":
        return RNG.integers(-50, 50, shape).astype(dtype)
    if np.dtype(dtype) == np.bool_:
        return RNG.random(shape) < 0.02
    return RNG.standard_normal(shape).astype(dtype)


def batch_norm(g, x, w=None):
    """Training batch norm + ReLU as the CNN's graph spells it: mean, biased variance."""
    mu = call(g, "mean", x, dim=NCHW, keepdim=True)
    d = call(g, "sub", x, mu)
    var = call(g, "mean", call(g, "mul", d, d), dim=NCHW, keepdim=True)
    y = call(g, "mul", d, call(g, "rsqrt", call(g, "add", var, 1e-5)))
    if w is not None:
        y = call(g, "mul", y, w)
    return call(g, "relu", y), mu, var


def bn_reference(x):
    x64 = x.astype(np.float64)
    mu = x64.mean(NCHW, keepdims=True)
    var = ((x64 - mu) ** 2).mean(NCHW, keepdims=True)
    return np.maximum((x64 - mu) / np.sqrt(var + 1e-5), 0), mu, var


@pytest.mark.parametrize("shape", [(64, 32, 8, 8), (64, 16, 8, 8), (5, 7, 3, 5), (3, 300, 4, 4),
                                   (2, 3, 16, 16)])
def test_batch_norm_forward_matches_float64(shape):
    x = (data(shape, np.float32) * 3 + 5).astype(np.float32)
    got, want, _ = compiled(batch_norm, x)
    ref = bn_reference(x)
    for gv, wv, rv in zip(got, want, ref):
        assert gv.shape == wv.shape and gv.dtype == wv.dtype == np.float32
        np.testing.assert_allclose(gv, rv, rtol=2e-5, atol=2e-5)
        np.testing.assert_allclose(gv, wv, rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int64])
@pytest.mark.parametrize("op", ["sum", "amax", "amin", "mean"])
def test_reductions_over_samples_and_pixels(dtype, op):
    if op == "mean" and np.dtype(dtype).kind == "i":
        return   # mean of an integer tensor is an error in eager and compiled alike
    x = data((9, 6, 5, 7), dtype)
    got, want, _ = compiled(lambda g, v: call(g, op, v, dim=NCHW, keepdim=True), x)
    exact = np.dtype(dtype).kind == "i" or op in ("amax", "amin")
    tol = {np.float16: 2e-3, np.float32: 1e-5, np.float64: 1e-12}.get(dtype, 0)
    assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
    if exact:
        np.testing.assert_array_equal(got[0], want[0])
    else:
        np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("op", ["sum", "amax", "amin"])
def test_boolean_and_uint8_inputs(op):
    x = data((16, 5, 4, 4), np.bool_)
    x[:, 2] = True                # one channel all True, one all False
    x[:, 3] = False
    for v in (x, (x * 200).astype(np.uint8)):
        got, want, _ = compiled(lambda g, t: call(g, op, t, dim=NCHW), v)
        assert got[0].dtype == want[0].dtype
        np.testing.assert_array_equal(got[0], want[0])


@pytest.mark.parametrize("op", ["sum", "amax", "amin", "mean"])
def test_nan_and_inf_propagate_as_eager(op):
    x = data((8, 6, 4, 4), np.float32)
    x[3, 1, 2, 2] = np.nan
    x[0, 2, 0, 0] = np.inf
    x[5, 3, 1, 1], x[6, 3, 1, 1] = np.inf, -np.inf
    got, want, _ = compiled(lambda g, v: call(g, op, v, dim=NCHW), x)
    np.testing.assert_array_equal(np.isnan(got[0]), np.isnan(want[0]))
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5, atol=1e-6, equal_nan=True)


def test_long_float32_sums_per_channel_are_accurate():
    """Float32 runs of at most ROW_RUN elements go into float64 totals: 2**18 values a channel
    of 0.1 (plus noise) sum to within 1e-6 of the exact sum (one float32 accumulator: ~1e-4)."""
    x = (np.float32(0.1) + RNG.random((1024, 4, 16, 16)).astype(np.float32) * 1e-3)
    got, _, _ = compiled(lambda g, v: call(g, "sum", v, dim=NCHW), x)
    x64 = x.astype(np.float64)
    ref = np.array([math.fsum(x64[:, c].ravel()) for c in range(x.shape[1])])
    assert np.max(np.abs(got[0] - ref) / ref) <= 1e-6


def test_backward_like_kernel_with_several_inputs_and_outputs():
    """The shape of the CNN's batch-norm backward: a mask, two sums in one phase, a centred
    product sum, a full-shape result and per-channel results."""
    x, y, gout = (data((32, 8, 6, 6), np.float32) for _ in range(3))
    w = data((1, 8, 1, 1), np.float32)

    def bwd(g, xv, yv, go, wv):
        gm = call(g, "where", call(g, "ne", yv, 0.0), go, 0.0)
        mu = call(g, "mean", xv, dim=NCHW, keepdim=True)
        d = call(g, "sub", xv, mu)
        sg = call(g, "sum", gm, dim=NCHW, keepdim=True)
        sgd = call(g, "sum", call(g, "mul", gm, d), dim=NCHW, keepdim=True)
        gx = call(g, "sub", call(g, "mul", call(g, "sub", gm, call(g, "div", sg, 1152.0)), wv),
                  call(g, "mul", d, sgd))
        return gx, sg, sgd

    got, want, _ = compiled(bwd, x, y, gout, w)
    for gv, wv in zip(got, want):
        np.testing.assert_allclose(gv, wv, rtol=1e-4, atol=1e-4)


def test_parallel_chunks_give_the_whole_result():
    """The thread pool splits the outer loop: [0, k) then [k, C) gives what one call gives."""
    x = (data((16, 12, 5, 5), np.float32) + 1).astype(np.float32)
    cg = codegen.compile_graph(build_graph(batch_norm, x))
    (k,) = cg.kernels
    assert k.col_inner and k.outer_numel == 12
    outs = [[np.full(b.shape, np.nan, b.dtype.np) for b in k.outputs] for _ in range(2)]
    for parts, bufs in zip(([(0, 12)], [(0, 5), (5, 7), (7, 12)]), outs):
        for lo, hi in parts:
            k.cfunc(x.ctypes.data, *[a.ctypes.data for a in bufs], lo, hi)
    for a, b in zip(*outs):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(outs[0][0], bn_reference(x)[0], rtol=2e-5, atol=2e-5)


def test_long_runs_and_contiguous_rows_are_not_interleaved():
    """Runs longer than ROW_RUN keep the per-row order (each run summed from the identity),
    a reduction whose runs are contiguous rows is an ordinary row reduction."""
    x = data((3, 4, ROW_RUN + 44), np.float32)
    got, want, ks = compiled(lambda g, v: call(g, "sum", v, dim=(0, 2)), x, interleaved=False)
    assert len(ks[0].rloops) == 2
    np.testing.assert_allclose(got[0], x.astype(np.float64).sum((0, 2)), rtol=1e-5)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
    x = data((6, 64, 8, 8), np.float32)
    got, want, _ = compiled(lambda g, v: call(g, "sum", v, dim=(1, 2, 3)), x,
                            interleaved=False)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
