"""Reading and writing positions of the planes of (N, C, *spatial) arrays: `_plane_gather`
(max pooling's values: each window's maximum read at the flat plane index `_max_pool_indices`
found, in `conv.py`; grid_sample's taps) and its adjoint `_plane_scatter_add` (repeated
positions add up). Split from `conv.py`. Imports nothing outside `ir`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .elementwise import FLOATS
from .indexing import arr, declare


def _plane_positions(xp, index, plane):
    """index (N, C, *out) of positions in each plane as flat positions in the whole
    (N, C, plane) array."""
    n, c = index.shape[:2]
    return index.reshape(n * c, -1) + xp.arange(0, n * c * plane, plane)[:, None]


def _plane_gather_impl(xp, x, index):
    # one flat take (take_along_axis builds broadcast index arrays: ~4x slower)
    pos = _plane_positions(xp, index, math.prod(x.shape[2:]))
    return xp.take(x.reshape(-1), pos).reshape(index.shape)


def _plane_scatter_add_impl(xp, g, index, input_size):
    # numpy >= 1.25's add.at on a 1-D target is ~2x faster than a float64 bincount and adds
    # in g's dtype
    out = xp.zeros(math.prod(input_size), g.dtype)
    xp.add.at(out, _plane_positions(xp, index, math.prod(input_size[2:])).reshape(-1),
              g.reshape(-1))
    return out.reshape(input_size)


def _plane_ref(x, index):
    n, c = index.shape[:2]
    return np.stack([np.stack([x[i, j].reshape(-1)[index[i, j]] for j in range(c)])
                     for i in range(n)])


def _plane_scatter_ref(g, index, input_size):
    out = np.zeros(input_size, g.dtype)
    for i, j in itertools.product(range(input_size[0]), range(input_size[1])):
        np.add.at(out[i, j].reshape(-1), index[i, j].reshape(-1), g[i, j].reshape(-1))
    return out


def _plane_index(rng, shape, plane):
    return rng.integers(0, plane, size=shape).astype(np.int64)


# `_plane_gather(input, index)`: input (N, C, *spatial), index int64 (N, C, *out) of flat
# positions in each input plane -> (N, C, *out) (max pooling's values)
declare(
    "_plane_gather", "indexing", "input, index", 2, data=(0,), method=False, scalar_ok=False,
    shape=lambda s, i: tuple(i), impl=_plane_gather_impl, ref=_plane_ref,
    backward=lambda F, g, out, x, index: (F._plane_scatter_add(g, index, tuple(x.shape)), None),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (2, 3, 4, 5), dt),
                                          _plane_index(rng, (2, 3, 2, 3), 20)), {})]),
    test_dtypes=FLOATS,
)

# `_plane_scatter_add(grad, index, input_size)`: the adjoint of `_plane_gather` (repeated
# positions add up)
declare(
    "_plane_scatter_add", "indexing", "grad, index, input_size", 2, data=(0,), method=False,
    scalar_ok=False, shape=lambda s, i, input_size: tuple(input_size),
    impl=_plane_scatter_add_impl, ref=_plane_scatter_ref,
    backward=lambda F, h, out, g, index, input_size: (F._plane_gather(h, index), None),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (2, 3, 2, 3), dt),
                                          _plane_index(rng, (2, 3, 2, 3), 4)),
                                         {"input_size": (2, 3, 2, 2)})]),
    test_dtypes=FLOATS,
)
