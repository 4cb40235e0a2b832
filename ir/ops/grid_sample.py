"""`_grid_sample(input, grid, mode, padding_mode, align_corners)`: the body of
`torch.nn.functional.grid_sample` as one composite of registry ops, so that eager, capture
(one graph, no break), codegen and autograd (gradients for input and grid) share it.

Semantics: ATen's CPU grid sampler (`GridSampler.h`, `GridSamplerKernel.cpp`): each output
point's grid entry (x, y[, z]) in [-1, 1] is unnormalized to a pixel coordinate of its dim,
`(c + 1) * ((size - 1) / 2)` with align_corners, else `(c + 1) * (size / 2) - 0.5`; bilinear and
nearest then apply `compute_coordinates` (border clips to [0, size - 1], reflection folds
about the edges, then clips; the clip's gradient is 0 on the borders, as ATen's), bicubic
applies it to each of its 4 x 4 integer taps instead. Taps outside the input read 0.

The decomposition works per spatial dim on (N, 1, K, M) tensors (K taps of the dim, M output
points): tap positions `floor(c) + k` (nearest: `round(c)`, half to even as `nearbyint`),
their weights (bilinear: `c - p` and `(p + 1) - c`; bicubic: ATen's cubic convolution with
A = -0.75; zeros padding: 0 for a tap outside the input), then the dims' positions combine
into flat plane positions and their weights into products (K^nd taps), and `_plane_gather`
reads the taps of every channel: out = sum over taps of weight * value. Gradients reach the
input through `_plane_gather`'s backward (a scatter-add) and the grid through the weights
(positions come from floor/round: no gradient, as in ATen; nearest gives the grid none).
Eager runs the decomposition op by op (an `eager_impl` running it on arrays through
`ir.execute.apply_arrays` was slower: that path checks every op's metas on every call). Imports
nothing outside `ir`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import dtypes as D
from .declare import _title
from .indexing import declare

MODES = ("bilinear", "nearest", "bicubic")
PADDING_MODES = ("zeros", "border", "reflection")
_A = -0.75  # ATen's cubic convolution coefficient


# ---------------------------------------------------------------- coordinates


def _unnormalize(F, c, size, align_corners):
    """ATen's `grid_sampler_unnormalize` (the vectorized kernel's order of operations)."""
    if align_corners:
        return F.mul(F.add(c, 1), (size - 1) / 2)
    return F.sub(F.mul(F.add(c, 1), size / 2), 0.5)


def _clip(F, c, size):
    """ATen's `clip_coordinates` to [0, size - 1]; its gradient is 0 on and beyond the borders
    (`clip_coordinates_get_grad`: "borders are considered out of bounds")."""
    hi = float(size - 1)
    return F.where(F.le(c, 0), 0.0, F.where(F.ge(c, hi), hi, c))


def _reflect(F, c, twice_low, twice_high):
    """ATen's `reflect_coordinates`: c folded into [low, high] about its ends."""
    if twice_low == twice_high:
        return F.mul(c, 0)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    x = F.abs(F.sub(c, low))
    extra = F.fmod(x, span)
    even = F.eq(F.fmod(F.floor(F.div(x, span)), 2), 0)
    return F.where(even, F.add(extra, low), F.add(F.add(F.neg(extra), span), low))


def _padded(F, c, size, padding_mode, align_corners):
    """ATen's `compute_coordinates`: border clips, reflection folds then clips."""
    if padding_mode == "border":
        return _clip(F, c, size)
    if padding_mode == "reflection":
        c = _reflect(F, c, 0, 2 * (size - 1)) if align_corners \
            else _reflect(F, c, -1, 2 * size - 1)
        return _clip(F, c, size)
    return c


class _Offsets:
    """(K, 1) int64 constants (a tap offset per row) on `like`'s device, made once per call."""

    def __init__(self, F, like):
        self.F, self.like, self.made = F, like, {}

    def __call__(self, values: tuple):
        if values not in self.made:
            self.made[values] = self.F._index_const(self.like, tuple((v,) for v in values))
        return self.made[values]


# ---------------------------------------------------------------- taps of one dim


def _bilinear_dim(F, c, offsets):
    """(positions, weights) of the 2 taps: floor(c) + (0, 1), weights (p + 1) - c, c - p."""
    p0 = F.floor(c)
    pos = F.add(p0, offsets((0, 1)))
    w = F.mul(F.sub(c, F.add(p0, offsets((1, 0)))), offsets((-1, 1)))
    return pos, w


def _cubic_dim(F, c, size, padding_mode, align_corners, offsets):
    """(positions, weights) of the 4 taps floor(c) - 1 .. floor(c) + 2, each position passed
    through `compute_coordinates` (ATen's `get_value_bounded`)."""
    p0 = F.floor(c)
    t = F.sub(c, p0)

    def conv1(x):  # |x| <= 1
        return F.add(F.mul(F.mul(F.sub(F.mul(x, _A + 2), _A + 3), x), x), 1)

    def conv2(x):  # 1 < |x| < 2
        return F.sub(F.mul(F.add(F.mul(F.sub(F.mul(x, _A), 5 * _A), x), 8 * _A), x), 4 * _A)

    one_minus = F.add(F.neg(t), 1)
    w = F.cat([conv2(F.add(t, 1)), conv1(t), conv1(one_minus),
               conv2(F.add(one_minus, 1))], 2)
    pos = _padded(F, F.add(p0, offsets((-1, 0, 1, 2))), size, padding_mode, align_corners)
    return pos, w


def _dim_taps(F, c, size, mode, padding_mode, align_corners, dtype, offsets):
    """(int64 positions, weights or None) of one dim's taps, both (N, 1, K, M)."""
    if mode == "bicubic":
        pos, w = _cubic_dim(F, c, size, padding_mode, align_corners, offsets)
    else:
        c = _padded(F, c, size, padding_mode, align_corners)
        pos, w = (F.round(c), None) if mode == "nearest" else _bilinear_dim(F, c, offsets)
    if padding_mode == "zeros" or mode == "bilinear":  # (bilinear: a clipped c = size - 1
        inside = F.clamp(pos, 0, size - 1)             # has a second tap of weight 0)
        if padding_mode == "zeros":  # taps outside the input read 0
            valid = F.eq(inside, pos)
            w = F.cast(valid, dtype) if w is None else F.where(valid, w, 0.0)
        pos = inside
    return F.cast(pos, D.int64), w


# ---------------------------------------------------------------- the op


def _grid_sample_decomp(F, x, grid, mode="bilinear", padding_mode="zeros",
                        align_corners=False):
    n, ch = x.shape[0], x.shape[1]
    sizes = tuple(x.shape[2:])
    nd = len(sizes)
    out_sp = tuple(grid.shape[1:-1])
    m = math.prod(out_sp)
    if n * ch * m == 0:  # an empty result, still a function of both (zero gradients)
        tie = F.mul(F.add(F.sum(x), F.sum(grid)), 0)
        return F.expand(F.reshape(tie, (1,) * x.ndim), (n, ch) + out_sp)
    g = F.reshape(grid, (n, 1, 1, m, nd))
    index = weight = None
    offsets = _Offsets(F, grid)
    for d, size in enumerate(sizes):  # grid's last entry is the first spatial dim
        c = _unnormalize(F, F.select(g, 4, nd - 1 - d), size, align_corners)
        pos, w = _dim_taps(F, c, size, mode, padding_mode, align_corners, x.dtype, offsets)
        k = pos.shape[2]
        tap_shape = (n, 1) + (1,) * d + (k,) + (1,) * (nd - 1 - d) + (m,)
        stride = math.prod(sizes[d + 1:])
        pos = F.reshape(pos if stride == 1 else F.mul(pos, stride), tap_shape)
        index = pos if index is None else F.add(index, pos)
        if w is not None:
            w = F.reshape(w, tap_shape)
            weight = w if weight is None else F.mul(weight, w)
    taps = math.prod(index.shape[2:-1])
    index = F.expand(F.reshape(index, (n, 1, taps, m)), (n, ch, taps, m))
    vals = F._plane_gather(x, index)
    if weight is not None:  # (every dim has weights: its shape is the index's)
        vals = F.mul(vals, F.reshape(weight, (n, 1, taps, m)))
    out = F.sum(vals, 2) if taps > 1 else F.reshape(vals, (n, ch, m))
    return F.reshape(out, (n, ch) + out_sp)


def _grid_sample_attrs(inputs, attrs):
    x, grid = inputs[0], inputs[1]
    mode, padding = attrs["mode"], attrs["padding_mode"]
    if mode not in MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding not in PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding}'")
    if x.ndim not in (4, 5) or grid.ndim != x.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same "
                           f"number of dimensions, but got input with sizes "
                           f"{list(x.shape)} and grid with sizes {list(grid.shape)}")
    if grid.shape[0] != x.shape[0]:
        raise RuntimeError(f"grid_sampler(): expected grid and input to have same batch size, "
                           f"but got input with sizes {list(x.shape)} and grid with sizes "
                           f"{list(grid.shape)}")
    if grid.shape[-1] != x.ndim - 2:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {x.ndim - 2} in last "
                           f"dimension, but got grid with sizes {list(grid.shape)}")
    if mode == "bicubic" and x.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")
    if x.dtype.category < D.FLOATING or x.dtype.is_complex:
        raise NotImplementedError(f'"grid_sampler_{x.ndim - 2}d_cpu_kernel_impl" not '
                                  f"implemented for '{_title(x.dtype)}'")
    if grid.dtype != x.dtype:
        raise RuntimeError(f"expected scalar type {_title(x.dtype)} but found "
                           f"{_title(grid.dtype)}")
    empty = [d for d in range(2, x.ndim) if x.shape[d] == 0]
    if empty:
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(x.shape)} with dimension "
                           f"{empty[0]} being empty")
    attrs["align_corners"] = bool(attrs["align_corners"])
    return attrs


# ---------------------------------------------------------------- reference and samples


def _ref_pad(c, size, padding_mode, align_corners):
    """`compute_coordinates` on one pixel coordinate."""
    if padding_mode == "zeros":
        return c
    if padding_mode == "reflection":
        lo, hi = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
        if hi == lo:
            return 0.0
        k, r = divmod(abs(c - lo), hi - lo)
        c = lo + r if k % 2 == 0 else hi - r
    return min(max(c, 0.0), size - 1.0)


def _ref_unnormalize(c, size, align_corners):
    return (c + 1) / 2 * (size - 1) if align_corners else ((c + 1) * size - 1) / 2


def _ref_cubic(t):
    def conv1(x):
        return ((_A + 2) * x - (_A + 3)) * x * x + 1

    def conv2(x):
        return ((_A * x - 5 * _A) * x + 8 * _A) * x - 4 * _A

    return [conv2(t + 1), conv1(t), conv1(1 - t), conv2(2 - t)]


def _grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Point by point in float64, from the formulas of ATen's scalar `grid_sampler_2d/3d`."""
    n, ch, sizes = x.shape[0], x.shape[1], x.shape[2:]
    nd = len(sizes)
    out = np.zeros((n, ch) + grid.shape[1:-1])
    for b in range(n):
        for o in np.ndindex(*grid.shape[1:-1]):
            gc = [float(grid[(b,) + o + (nd - 1 - d,)]) for d in range(nd)]
            taps = []  # (position per dim, weight)
            cs = [_ref_unnormalize(c, s, align_corners) for c, s in zip(gc, sizes)]
            if mode == "bicubic":
                base = [math.floor(c) for c in cs]
                ws = [_ref_cubic(c - b0) for c, b0 in zip(cs, base)]
                for ks in itertools.product(range(4), repeat=nd):
                    pos = [int(_ref_pad(b0 - 1 + k, s, padding_mode, align_corners))
                           for b0, k, s in zip(base, ks, sizes)]
                    taps.append((pos, math.prod(w[k] for w, k in zip(ws, ks))))
            else:
                cs = [_ref_pad(c, s, padding_mode, align_corners) for c, s in zip(cs, sizes)]
                if mode == "nearest":
                    taps.append(([int(np.rint(c)) for c in cs], 1.0))
                else:
                    base = [math.floor(c) for c in cs]
                    for ks in itertools.product((0, 1), repeat=nd):
                        w = math.prod((c - b0) if k else (b0 + 1 - c)
                                      for c, b0, k in zip(cs, base, ks))
                        taps.append(([b0 + k for b0, k in zip(base, ks)], w))
            for pos, w in taps:
                if all(0 <= p < s for p, s in zip(pos, sizes)):
                    out[(b, slice(None)) + o] += w * x[(b, slice(None)) + tuple(pos)]
    return out.astype(x.dtype)


def _grid_sample_samples(rng, dt):
    # (values in [0.5, 1.5): float32 sums of 16 signed bicubic terms near 0 would cancel)
    x4 = rng.uniform(0.5, 1.5, (2, 2, 4, 5)).astype(dt.np)
    x5 = rng.uniform(0.5, 1.5, (1, 2, 3, 4, 3)).astype(dt.np)
    g4 = rng.uniform(-1.3, 1.3, (2, 3, 2, 2)).astype(dt.np)
    g5 = rng.uniform(-1.3, 1.3, (1, 2, 2, 2, 3)).astype(dt.np)
    for mode, pad, ac in itertools.product(MODES, PADDING_MODES, (False, True)):
        yield (x4, g4), {"mode": mode, "padding_mode": pad, "align_corners": ac}
        if mode != "bicubic":
            yield (x5, g5), {"mode": mode, "padding_mode": pad, "align_corners": ac}


# `_grid_sample(input, grid, mode="bilinear", padding_mode="zeros", align_corners=False)`:
# input (N, C, H, W) sampled at grid (N, H_out, W_out, 2) -> (N, C, H_out, W_out), or 5-D
# input (N, C, D, H, W) with grid (N, D_out, H_out, W_out, 3) (bilinear: trilinear)
declare(
    "_grid_sample", "composite", "input, grid, mode='bilinear', padding_mode='zeros', "
    "align_corners=False", 2, data=(0, 1), method=False, scalar_ok=False,
    attrs_rule=_grid_sample_attrs, decomp=_grid_sample_decomp,
    ref=_grid_sample_ref, sample_inputs=_grid_sample_samples, test_dtypes=(D.float32, D.float64),
)
