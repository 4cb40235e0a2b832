"""Compiled max pooling against eager: windows that tile the planes exactly (`MaxPool2d(2)` on
even sizes) compile through `_max_pool_tiled_indices`' decomposition into one fused reduction
kernel (no library call for the window search), or, 2-D float32/float64 on the CPU, through
`_max_pool_indices` run by codegen's direct kernel; other geometries keep the library kernel.
Values, indices and input gradients must equal eager's (ATen's rules: first maximum on ties,
the last NaN of a window, -inf windows), and eager's must equal the brute-force reference."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import capture
import eager
from codegen import compiled as C
from codegen import direct
from codegen.kernel import Kernel
from ir.ops.pooling import _max_pool_indices_ref

F = eager.nn.functional


def _hard_input(shape, dtype, seed):
    """Small integers (many ties), two NaNs in one window, a window of -inf."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-2, 3, shape).astype(dtype)
    flat = x.reshape(x.shape[0], x.shape[1], -1)
    flat[0, 0, 0] = flat[0, 0, 1] = np.nan
    x[(1 % x.shape[0], 1 % x.shape[1]) + (slice(0, 2),) * (x.ndim - 2)] = -np.inf
    return x


def _pool(nd):
    return {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[nd]


def _run(fn, x, nd, kw):
    t = eager.tensor(x, requires_grad=True)
    y, idx = fn(t)
    g = eager.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(x.dtype))
    (y * g).sum().backward()
    return y.detach().numpy(), idx.numpy(), t.grad.numpy()


CASES = [((4, 3, 8, 8), {"kernel_size": 2}, True),
         ((2, 5, 6, 9), {"kernel_size": (2, 3)}, True),
         ((3, 2, 12), {"kernel_size": 4}, True),
         ((2, 2, 4, 6, 4), {"kernel_size": (2, 3, 1)}, True),
         ((4, 3, 9, 8), {"kernel_size": 2}, False),               # 9 rows: not tiled
         ((4, 3, 8, 8), {"kernel_size": 3, "stride": 2, "padding": 1}, False)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape, kw, tiled", CASES)
def test_compiled_max_pool_matches_eager(shape, kw, tiled, dtype):
    nd = len(shape) - 2
    pool = _pool(nd)

    def f(x):
        return pool(x, return_indices=True, **kw)

    x = _hard_input(shape, dtype, seed=len(shape) * 7 + int(tiled))
    cf = capture.compile(f)
    want = _run(f, x, nd, kw)
    got = _run(cf, x, nd, kw)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    k = kw["kernel_size"]
    k = (k,) * nd if isinstance(k, int) else tuple(k)
    s = kw.get("stride", k)
    s = (s,) * nd if isinstance(s, int) else tuple(s)
    p = kw.get("padding", 0)
    p = (p,) * nd if isinstance(p, int) else tuple(p)
    out = want[1].shape[2:]
    ref = _max_pool_indices_ref(x, k, s, p, (1,) * nd, out)
    np.testing.assert_array_equal(want[1], ref)


def _graphs_with(shape):
    return [g for g in gc.get_objects() if isinstance(g, C.CompiledGraph)
            and any(n.op == "call_function" and n.target.name == "_plane_gather"
                    for n in g.graph.nodes) and tuple(g.graph.placeholders[0].meta["val"].shape)
            == shape]


def test_tiled_pooling_compiles_to_one_fused_kernel():
    # 1-D (and CUDA, other dtypes): the composite's decomposition, one fused kernel
    def f(x):
        return F.max_pool1d(x, 2)

    x = eager.tensor(np.random.default_rng(3).standard_normal((8, 4, 6)).astype(np.float32))
    cf = capture.compile(f)
    np.testing.assert_array_equal(cf(x).numpy(), f(x).numpy())
    graphs = _graphs_with((8, 4, 6))
    assert graphs
    for g in graphs:
        names = [str(st) for st in g.steps if not isinstance(st, Kernel)]
        assert not any("_max_pool" in n for n in names), names
        assert any(isinstance(st, Kernel) and "amax" in st.name for st in g.steps)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tiled_2d_pooling_on_the_cpu_runs_the_direct_kernel(dtype, monkeypatch):
    # 2-D float32/float64 on the CPU: `_max_pool_indices`, run by codegen's direct kernel
    monkeypatch.setenv("WICK_COMPILE_THREADS", "1")   # (compiled before the first call)

    def f(x):
        return F.max_pool2d(x, 2, return_indices=True)

    x = _hard_input((8, 4, 6, 10), dtype, seed=5)
    cf = capture.compile(f)
    want = _run(f, x, 2, {"kernel_size": 2})
    got = _run(cf, x, 2, {"kernel_size": 2})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
    graphs = _graphs_with((8, 4, 6, 10))
    assert graphs
    ty = "float" if dtype == np.float32 else "double"
    assert ("pool", ty, 6, 10, 2, 2) in direct._kernels
    assert direct._kernels[("pool", ty, 6, 10, 2, 2)].done()


def test_tiled_pooling_matches_torch():
    torch = pytest.importorskip("torch")
    x = _hard_input((3, 4, 6, 8), np.float32, seed=11)
    out = []
    for lib, fn in ((eager, capture.compile(lambda t: F.max_pool2d(t, 2, return_indices=True))),
                    (torch, lambda t: torch.nn.functional.max_pool2d(t, 2, return_indices=True))):
        t = lib.tensor(x, requires_grad=True)
        y, idx = fn(t)
        y.sum().backward()
        out.append((y.detach().numpy(), idx.numpy(), t.grad.numpy()))
    for a, b in zip(*out):
        np.testing.assert_array_equal(a, b)
