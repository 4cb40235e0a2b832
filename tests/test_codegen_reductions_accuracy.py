"""Fused float sums are as accurate as numpy's pairwise sum, and blocking does not change values.

Regression: the compiled sum of 10**7 float32 values of 0.1 was off by 1.5e-3 relative (one
vectorized accumulator per lane; numpy: 1e-7). Float sums over more than `SUM_BLOCK`
elements are now accumulated in blocks whose sums are combined pairwise (`schedule.cascaded`).
References are float64 sums of the same values (`math.fsum`, exact); every graph must run as
an LLVM kernel (no eager fallback), so the kernel's own accuracy is what is measured.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from opinfo import record_op

import capture
import codegen
import eager
import ir
from codegen.schedule import SUM_BLOCK

call = record_op


def compiled(build, *arrays):
    """Compile `build(g, *placeholders) -> output node` for `arrays` and run it as fused
    kernels only (no fallback, no library call); returns (result, the first kernel)."""
    g = ir.Graph("acc")
    xs = [g.placeholder(f"x{i}", ir.TensorMeta(a.shape, ir.dtypes.from_numpy(a.dtype)))
          for i, a in enumerate(arrays)]
    g.output((build(g, *xs),))
    cg = codegen.compile_graph(g)
    assert cg.fallbacks == [] and len(cg.kernels) == len(cg.steps), cg.partition.format()
    return cg(*arrays)[0], cg.kernels[0]


def rel(got, want):
    return abs(float(got) - want) / abs(want)


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-14)])
def test_sum_of_ten_million_tenths(dtype, tol):
    x = np.full(10**7, 0.1, dtype)
    ref = math.fsum(x.astype(np.float64))
    got, k = compiled(lambda g, v: call(g, "sum", v), x)
    assert k.sum_block == SUM_BLOCK
    assert rel(got, ref) <= tol
    got, _ = compiled(lambda g, v: call(g, "mean", v), x)
    assert rel(got, ref / x.size) <= tol


def test_the_reported_case_through_capture():
    x = eager.tensor(np.full(10**7, 0.1, np.float32))
    got = capture.compile(lambda t: t.sum(), backend="llvm")(x).item()
    assert rel(got, math.fsum(np.full(10**7, 0.1, np.float32).astype(np.float64))) <= 1e-6


def test_random_sums_mean_and_variance():
    rng = np.random.default_rng(1)
    x = rng.uniform(0.0, 1.0, 3 * 10**6 + 17).astype(np.float32)
    x64 = x.astype(np.float64)
    got, _ = compiled(lambda g, v: call(g, "sum", v), x)
    assert rel(got, math.fsum(x64)) <= 1e-6
    got, _ = compiled(lambda g, v: call(g, "sum", call(g, "mul", v, v)), x)
    assert rel(got, math.fsum(x64 * x64)) <= 1e-6
    m = np.float32(x64.mean())   # a variance: the sum of squared deviations

    got, _ = compiled(lambda g, v: call(g, "mean", call(g, "mul", call(g, "sub", v, float(m)),
                                                          call(g, "sub", v, float(m)))), x)
    d = x64 - float(m)
    assert rel(got, math.fsum(d * d) / x.size) <= 2e-6


@pytest.mark.parametrize("dtype,tol", [(np.float32, 1e-6), (np.float64, 1e-14)])
def test_long_rows_columns_and_several_reduced_dims(dtype, tol):
    rng = np.random.default_rng(2)
    cases = [((3, 2**20 + 3), -1), ((2**20 + 5, 3), 0), ((700, 3, 1001), (0, 2)),
             ((5, 300, 7), (0, 1))]
    for shape, dim in cases:
        x = (rng.uniform(0.5, 1.5, shape)).astype(dtype)
        got, _ = compiled(lambda g, v: call(g, "sum", v, dim), x)
        dims = (dim,) if isinstance(dim, int) else dim
        rows = np.moveaxis(x.astype(np.float64), dims, range(-len(dims), 0))
        want = np.array([math.fsum(r) for r in rows.reshape(got.size, -1)]).reshape(got.shape)
        # (an fsum: numpy's float64 sum across rows is not exact enough)
        np.testing.assert_allclose(got, want, rtol=tol, atol=0, err_msg=str((shape, dim)))


@pytest.mark.parametrize("n", [SUM_BLOCK - 1, SUM_BLOCK, SUM_BLOCK + 1, 2 * SUM_BLOCK - 1,
                               2 * SUM_BLOCK, 3 * SUM_BLOCK + 5, 7 * SUM_BLOCK + 3])
def test_block_boundaries_keep_every_element(n):
    # integers in float: every partial sum is exact, so any lost or repeated element shows
    x = np.arange(1, n + 1, dtype=np.float32) % 7
    got, _ = compiled(lambda g, v: call(g, "sum", v), x)
    assert float(got) == float(x.astype(np.float64).sum())
    y = np.stack([x, 2 * x, 3 * x])
    got, _ = compiled(lambda g, v: call(g, "sum", v, -1), y)
    np.testing.assert_array_equal(got, y.astype(np.float64).sum(-1))
    got, _ = compiled(lambda g, v: call(g, "sum", v, 0), y.T.copy())
    np.testing.assert_array_equal(got, y.astype(np.float64).sum(-1))


def test_a_row_kernel_over_long_rows():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 50000)).astype(np.float32)
    got, k = compiled(lambda g, v: call(g, "softmax", v, -1), x)
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(-1, keepdims=True))
    np.testing.assert_allclose(got, e / e.sum(-1, keepdims=True), rtol=1e-5, atol=0)
    np.testing.assert_allclose(got.sum(-1, dtype=np.float64), 1.0, rtol=1e-6)


def test_non_sum_reductions_are_not_blocked():
    x = np.linspace(0.999, 1.001, 5 * SUM_BLOCK, dtype=np.float32)
    for name in ("amax", "amin", "prod"):
        got, k = compiled(lambda g, v: call(g, name, v), x)
        assert k.sum_block == 0
        want = getattr(np, {"amax": "max", "amin": "min"}.get(name, name))(x.astype(np.float64))
        np.testing.assert_allclose(got, want, rtol=1e-5 if name == "prod" else 0)
    xi = np.arange(5 * SUM_BLOCK, dtype=np.int64)
    got, k = compiled(lambda g, v: call(g, "sum", v), xi)
    assert k.sum_block == 0 and int(got) == int(xi.sum())
