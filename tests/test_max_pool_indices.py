"""Max pooling's window search (`ir/ops/pooling.py` `_max_pool_indices`, a tournament of strict
comparisons) against its brute-force reference (`_max_pool_indices_ref`: each window's elements
in order, ATen's first maximum, the last NaN): ties, NaNs, windows of only -inf, padding,
dilation, strides, 1-3 spatial dims, integer dtypes, more than 255 window offsets."""

from __future__ import annotations

import numpy as np
import pytest

from ir.ops import pooling as kernels


def _geometries(rng, count):
    while count:
        nd = int(rng.integers(1, 4))
        spatial = tuple(int(v) for v in rng.integers(3, 8, nd))
        k = tuple(int(v) for v in rng.integers(1, 4, nd))
        s = tuple(int(v) for v in rng.integers(1, 3, nd))
        d = tuple(int(v) for v in rng.integers(1, 3, nd))
        p = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in k)
        out = tuple((n + 2 * pp - dd * (kk - 1) - 1) // ss + 1
                    for n, kk, ss, pp, dd in zip(spatial, k, s, p, d))
        if min(out) >= 1:
            count -= 1
            yield spatial, (k, s, p, d, out)


@pytest.mark.parametrize("fill", ["ties", "nan", "-inf"])
def test_window_search_matches_reference(fill):
    rng = np.random.default_rng({"ties": 0, "nan": 1, "-inf": 2}[fill])
    for spatial, attrs in _geometries(rng, 40):
        x = rng.integers(-2, 3, (2, 3) + spatial).astype(np.float32)  # many ties
        if fill == "nan":
            x[rng.random(x.shape) < 0.2] = np.nan
        elif fill == "-inf":
            x[rng.random(x.shape) < 0.7] = -np.inf
        np.testing.assert_array_equal(kernels._max_pool_indices_impl(np, x, *attrs),
                                      kernels._max_pool_indices_ref(x, *attrs), str(attrs))


@pytest.mark.parametrize("dt", [np.int32, np.int64, np.float64])
def test_integer_and_double_inputs(dt):
    x = np.random.default_rng(3).integers(-3, 3, (2, 2, 9, 9)).astype(dt)
    attrs = ((3, 3), (2, 2), (1, 1), (1, 1), (5, 5))
    np.testing.assert_array_equal(kernels._max_pool_indices_impl(np, x, *attrs),
                                  kernels._max_pool_indices_ref(x, *attrs))


def test_more_than_255_offsets():
    x = np.random.default_rng(4).standard_normal((1, 2, 20, 20)).astype(np.float32)
    attrs = ((16, 17), (1, 1), (0, 0), (1, 1), (5, 4))  # 272 offsets: a wider arg dtype
    np.testing.assert_array_equal(kernels._max_pool_indices_impl(np, x, *attrs),
                                  kernels._max_pool_indices_ref(x, *attrs))
