"""Max pooling's window search: `_max_pool_indices`, the flat input-plane index of each
window's first maximum (PyTorch's `max_pool*d(..., return_indices=True)` indices, ATen's
semantics: strict > so ties keep the earliest offset, a NaN wins (the last one), padding
counts as -inf). Found by a tournament of strict comparisons of strided views of the
channels-last copy (`conv.py`'s layout helpers); the values are a gather of the indices
(`planes.py` `_plane_gather`), so the gradient is the gather's scatter-add. Split from
`conv.py`. Imports nothing outside `ir`.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .. import dtypes as D
from .conv import _at, _channels_last, _first, _windows
from .elementwise import FLOATS
from .indexing import arr, declare


def _first_max(xp, views, dt):
    """The maximum of same-shape `views` (NaN propagates) and the first view reaching it
    (ATen's strict >), as a tournament: two halves' winners, the second taking over only
    where its value is strictly greater (so ties stay with the earlier offset): per pair one
    maximum, one comparison and one arithmetic select (counting the offsets before the first
    equal one took four operations per view)."""
    if len(views) == 1:
        return views[0].copy(), xp.zeros(views[0].shape, dt)
    if len(views) == 2:
        a, b = views
        return xp.maximum(a, b), (b > a).astype(dt)
    half = len(views) // 2
    va, aa = _first_max(xp, views[:half], dt)
    vb, ab = _first_max(xp, views[half:], dt)
    later = vb > va
    ab += dt(half)
    xp.maximum(va, vb, out=va)
    aa += later * (ab - aa)  # the select as arithmetic (wrapping in uint8): masked copies
    return va, aa            # and `where` branch per element, ~10x slower


def _max_pool_indices_impl(xp, x, kernel_size, stride, padding, dilation, output_size):
    spatial = x.shape[2:]
    low = -xp.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    size = tuple(max(s + 2 * p, (o - 1) * st + d * (k - 1) + 1) for s, p, o, st, d, k in zip(
        spatial, padding, output_size, stride, dilation, kernel_size))
    # channels last (N, *size, C), as the conv kernels: the comparisons run over C-long rows
    xh = _channels_last(xp, x, tuple((p, m - s - p) for s, p, m in zip(spatial, padding, size)),
                        size, low)
    views = [xh[_at(win)] for win in _windows(kernel_size, stride, dilation, output_size)]
    best, arg = _first_max(xp, views, xp.uint8 if len(views) < 256 else xp.int64)
    if x.dtype.kind == "f" and xp.isnan(best).any():  # ATen's isnan(val): the last NaN
        for i, v in enumerate(views):
            xp.copyto(arg, i, where=xp.isnan(v))
    # arg moved channels first while it is bytes; the int64 result made contiguous
    arg = xp.ascontiguousarray(_first(arg))
    disp, base, first = _pool_geometry(tuple(spatial), tuple(kernel_size), tuple(stride),
                                       tuple(padding), tuple(dilation), tuple(output_size))
    idx = xp.take(xp.asarray(disp), arg)
    idx += xp.asarray(base)
    if any(padding):
        xp.copyto(idx, xp.broadcast_to(xp.asarray(first), idx.shape),
                  where=_first(best) == low)
    return idx


@functools.lru_cache(maxsize=64)
def _pool_geometry(spatial, kernel_size, stride, padding, dilation, output_size):
    """Per window offset its flat displacement in the plane, per window its start's flat
    index (base) and its first element inside the input (first: ATen's index where nothing
    beats the padding); numpy int64 arrays, shared (read only)."""
    plane = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    disp = np.array([sum(o * dl * st for o, dl, st in zip(off, dilation, plane))
                     for off in itertools.product(*map(range, kernel_size))], np.int64)
    base = first = np.zeros(output_size, np.int64)
    for d, (o, st, p, dl) in enumerate(zip(output_size, stride, padding, dilation)):
        shape = [1] * len(output_size)
        shape[d] = o
        start = np.arange(o) * st - p
        base = base + (start * plane[d]).reshape(shape)
        inside = start + np.maximum(-(start // dl), 0) * dl
        first = first + (inside * plane[d]).reshape(shape)
    for a in (disp, base, first):
        a.flags.writeable = False
    return disp, base, first


def _max_pool_indices_ref(x, kernel_size, stride, padding, dilation, output_size):
    """Each window's elements listed by brute force; first maximum, NaN as ATen (last NaN)."""
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    out = np.zeros((n, c) + tuple(output_size), np.int64)
    for pos in itertools.product(*map(range, output_size)):
        best = None
        for off in itertools.product(*map(range, kernel_size)):
            q = [o * st - p + k * dl for o, st, p, k, dl in
                 zip(pos, stride, padding, off, dilation)]
            if any(v < 0 or v >= s for v, s in zip(q, spatial)):
                continue
            val = x[(slice(None), slice(None)) + tuple(q)]
            flat = int(np.ravel_multi_index(q, spatial))
            if best is None:
                best, idx = val.copy(), np.full(val.shape, flat, np.int64)
                continue
            better = (val > best) | np.isnan(val)
            best = np.where(better, val, best)
            idx = np.where(better, flat, idx)
        out[(slice(None), slice(None)) + pos] = idx
    return out


def _tiles(spatial, kernel_size) -> tuple:
    """The output size of windows tiling `spatial` exactly (stride = kernel, no padding or
    dilation), or () where `kernel_size` does not divide it."""
    if len(spatial) != len(kernel_size) or any(s % k for s, k in zip(spatial, kernel_size)):
        return ()
    return tuple(s // k for s, k in zip(spatial, kernel_size))


def _tiled_attrs(inputs, attrs):
    x, k = inputs[0], tuple(attrs["kernel_size"])
    if not _tiles(tuple(x.shape[2:]), k):
        raise ValueError(f"_max_pool_tiled_indices(): kernel_size {k} does not tile the input "
                         f"planes {tuple(x.shape[2:])}")
    attrs["kernel_size"] = k
    return attrs


def _tiled_decomp(F, x, kernel_size):
    """Two reductions over each window's dims of the (N, C, o1, k1, o2, k2, ...) view, which
    codegen fuses into one kernel: the window's maximum m, then the largest score, where a
    NaN scores P + B (the last NaN wins, as ATen), an element equal to m scores -P (the
    first maximum wins), others -2B; P is the element's flat plane index (growing with the
    window offset, the order ATen scans in) and B the plane's size."""
    spatial = tuple(x.shape[2:])
    out = _tiles(spatial, kernel_size)
    n, c, nd = x.shape[0], x.shape[1], len(spatial)
    xr = F.reshape(x, (n, c) + tuple(v for o, k in zip(out, kernel_size) for v in (o, k)))
    rdims = tuple(3 + 2 * d for d in range(nd))
    big, pos = math.prod(spatial), None   # pos: P over (1, 1, o1, k1, ...), a constant per dim
    for d, (o, k) in enumerate(zip(out, kernel_size)):
        step = math.prod(spatial[d + 1:])
        vals = tuple(tuple(((a * k + b) * step,) for b in range(k)) for a in range(o))
        shape = (1, 1) + (1,) * (2 * d) + (o, k) + (1,) * (2 * (nd - d - 1))
        part = F.reshape(F._index_const(x, vals), shape)
        pos = part if pos is None else F.add(pos, part)
    score = F.where(F.eq(xr, F.amax(xr, rdims, keepdim=True)), F.neg(pos), -2 * big)
    if x.dtype.is_floating_point:
        score = F.where(F.isnan(xr), F.add(pos, big), score)
    s = F.amax(score, rdims, keepdim=True)
    idx = F.where(F.ge(s, big), F.sub(s, big), F.neg(s))
    return F.reshape(idx, (n, c) + out)


def _tiled_impl(xp, x, kernel_size):
    k = tuple(kernel_size)
    return _max_pool_indices_impl(xp, x, k, k, (0,) * len(k), (1,) * len(k),
                                  _tiles(x.shape[2:], k))


def _tiled_ref(x, kernel_size):
    k = tuple(kernel_size)
    return _max_pool_indices_ref(x, k, k, (0,) * len(k), (1,) * len(k), _tiles(x.shape[2:], k))


def _tiled_samples(rng, dt):
    for xs, k in [((2, 3, 4, 6), (2, 2)), ((1, 2, 6, 6), (3, 2)), ((2, 2, 8), (4,)),
                  ((1, 2, 4, 2, 6), (2, 1, 3))]:
        yield (arr(rng, xs, dt),), {"kernel_size": k}


def _max_pool_samples(rng, dt):
    for xs, k, s, p, d, o in [((2, 3, 5, 6), (2, 2), (2, 2), (0, 0), (1, 1), (2, 3)),
                              ((1, 2, 7, 7), (3, 3), (2, 2), (1, 1), (1, 1), (4, 4)),
                              ((2, 2, 8), (3,), (1,), (1,), (2,), (6,))]:
        yield (arr(rng, xs, dt),), {"kernel_size": k, "stride": s, "padding": p,
                                     "dilation": d, "output_size": o}


# `_max_pool_indices(input, kernel_size, stride, padding, dilation, output_size)`: input
# (N, C, *spatial), padding counted as -inf, output_size from eager's pooling geometry (ceil
# mode included) -> int64 (N, C, *output_size): each window's first maximum as a flat index
# into its input plane (max_pool's return_indices)
declare(
    "_max_pool_indices", "indexing", "input, kernel_size, stride, padding, dilation, "
    "output_size", method=False, fixed=D.int64,
    shape=lambda s, kernel_size, stride, padding, dilation, output_size:
        tuple(s[:2]) + tuple(output_size),
    impl=_max_pool_indices_impl, ref=_max_pool_indices_ref, sample_inputs=_max_pool_samples,
    test_dtypes=FLOATS,
)

# `_max_pool_tiled_indices(input, kernel_size)`: `_max_pool_indices` where the windows tile the
# planes exactly (stride = kernel_size, no padding or dilation, kernel_size dividing each
# spatial size; `MaxPool2d(2)` on even sizes), as a composite that compiles to one fused
# reduction kernel; eager runs the general kernel (the same indices)
declare(
    "_max_pool_tiled_indices", "composite", "input, kernel_size", method=False, fixed=D.int64,
    attrs_rule=_tiled_attrs, decomp=_tiled_decomp, eager_impl=_tiled_impl, ref=_tiled_ref,
    shape=lambda s, kernel_size: tuple(s[:2]) + _tiles(tuple(s[2:]), tuple(kernel_size)),
    sample_inputs=_tiled_samples, test_dtypes=FLOATS,
)
