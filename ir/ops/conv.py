"""N-d convolution as three library-kernel ops: `_conv_nd` (the forward), `_conv_nd_input_grad`
(its adjoint in the input: a transposed convolution) and `_conv_nd_weight_grad` (its adjoint in
the weight), each differentiable by the other two (PyTorch's `convolution` /
`convolution_backward` and `_convolution_double_backward`).

The kernels are im2col + one batched GEMM (BLAS) per call: the padded input's window at each
kernel offset is one strided slice, copied into a (G, C/G * prod(kernel), N * L) column matrix
(prod(kernel) slice copies, no index arrays); the forward is W (G, O/G, K) @ cols, the weight
gradient g @ cols^T, the input gradient W^T @ g followed by col2im as prod(kernel) strided
additions into the padded input. Dtypes are kept (no float64 temporaries); `xp` is numpy or
cupy. Semantics: torch.nn.functional.conv1d/2d/3d (cross-correlation; symmetric zero padding;
argument checks with PyTorch's messages live in `eager/nn/conv.py`). Max pooling's window
search is `_max_pool_indices` (the flat input-plane index of each window's maximum, found by
prod(kernel) strided comparisons; the values are a `gather` of them, so the gradient is the
gather's scatter-add). Imports nothing outside `ir`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .. import dtypes as D
from .elementwise import FLOATS
from .indexing import arr, declare

_ATTRS = "stride, padding, dilation, groups"


def _out_sizes(spatial, kernel, stride, padding, dilation) -> tuple:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))


def _windows(kernel, stride, dilation, out):
    """For each kernel offset, its slices of the padded spatial dims (one strided window)."""
    for off in itertools.product(*map(range, kernel)):
        yield tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                    for o, d, s, n in zip(off, dilation, stride, out))


def _batch_last(xp, x, padding):
    """x (N, C, *spatial) as a new contiguous (C, *padded spatial, N) array, zeros around.
    With the batch innermost, a window's rows are long contiguous runs (out width * N) for
    the slice copies and additions, however small the images."""
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    out = (xp.zeros if any(padding) else xp.empty)(
        (c,) + tuple(s + 2 * p for s, p in zip(spatial, padding)) + (n,), x.dtype)
    inner = tuple(slice(p, p + s) for s, p in zip(spatial, padding))
    out[(slice(None),) + inner] = xp.moveaxis(x, 0, -1)
    return out


def _at(win):
    return (slice(None),) + win + (slice(None),)


def _cols(xp, x, kernel, stride, padding, dilation, groups):
    """im2col of x (N, C, *spatial): (G, C/G * prod(kernel), L * N) and the output sizes."""
    n, c = x.shape[:2]
    out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    xt = _batch_last(xp, x, padding)
    cols = xp.empty((c, math.prod(kernel)) + out + (n,), x.dtype)
    for i, win in enumerate(_windows(kernel, stride, dilation, out)):
        cols[:, i] = xt[_at(win)]
    return cols.reshape(groups, -1, n * math.prod(out)), out


def _grad_rows(xp, g, groups):
    """g (N, O, *out) as a contiguous (G, O/G, L * N) (also makes real strides of a broadcast
    g, as the gradient of a sum: BLAS needs them)."""
    n, o = g.shape[:2]
    rows = xp.ascontiguousarray(xp.moveaxis(g, 0, -1))
    return rows.reshape(groups, o // groups, n * math.prod(g.shape[2:]))


def _gemm(xp, a, b, out_shape):
    """a (G, m, k) @ b (G, k, n) as G two-dimensional BLAS calls (numpy's stacked matmul
    leaves BLAS for transposed operands) into a new (G, m, n) array."""
    if a.shape[0] == 1:
        return xp.matmul(a[0], b[0]).reshape(out_shape)
    out = xp.empty((a.shape[0], a.shape[1], b.shape[2]), xp.result_type(a, b))
    for i in range(a.shape[0]):
        xp.matmul(a[i], b[i], out=out[i])
    return out.reshape(out_shape)


def _conv_sample_major(xp, x, w, stride, padding, dilation, out):
    """groups = 1 with long output rows: per-sample columns (N, K, L) and N GEMMs writing
    (N, O, L) in place (no transposing copies of the input and output)."""
    n, c = x.shape[:2]
    size = tuple(s + 2 * p for s, p in zip(x.shape[2:], padding))
    xpad = x
    if any(padding):
        xpad = xp.zeros((n, c) + size, x.dtype)
        xpad[(slice(None),) * 2 + tuple(slice(p, p + s) for s, p in
                                        zip(x.shape[2:], padding))] = x
    kernel = w.shape[2:]
    cols = xp.empty((n, c, math.prod(kernel)) + out, x.dtype)
    for i, win in enumerate(_windows(kernel, stride, dilation, out)):
        cols[:, :, i] = xpad[(slice(None),) * 2 + win]
    y = xp.matmul(w.reshape(w.shape[0], -1), cols.reshape(n, -1, math.prod(out)))
    return y.reshape((n, w.shape[0]) + out)


def _conv_impl(xp, x, w, stride, padding, dilation, groups):
    out = _out_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation)
    if groups == 1 and math.prod(out) >= 256:
        return _conv_sample_major(xp, x, w, stride, padding, dilation, out)
    cols, out = _cols(xp, x, w.shape[2:], stride, padding, dilation, groups)
    o = w.shape[0]
    y = _gemm(xp, w.reshape(groups, o // groups, -1), cols, (o,) + out + (x.shape[0],))
    return xp.ascontiguousarray(xp.moveaxis(y, -1, 0))


def _input_grad_impl(xp, g, w, input_size, stride, padding, dilation, groups):
    n, c = input_size[:2]
    kernel, out = w.shape[2:], g.shape[2:]
    wt = w.reshape(groups, w.shape[0] // groups, -1).swapaxes(1, 2)  # (G, K, O/G)
    dcols = _gemm(xp, wt, _grad_rows(xp, g, groups), (c, math.prod(kernel)) + out + (n,))
    spatial = input_size[2:]
    buf = xp.zeros((c,) + tuple(s + 2 * p for s, p in zip(spatial, padding)) + (n,), g.dtype)
    for i, win in enumerate(_windows(kernel, stride, dilation, out)):
        buf[_at(win)] += dcols[:, i]
    crop = tuple(slice(p, p + s) for s, p in zip(spatial, padding))
    return xp.ascontiguousarray(xp.moveaxis(buf[_at(crop)], -1, 0))


def _weight_grad_impl(xp, x, g, weight_size, stride, padding, dilation, groups):
    cols, _ = _cols(xp, x, weight_size[2:], stride, padding, dilation, groups)
    # (cols g^T)^T: the (K, N * L) @ (N * L, O/G) product is the one BLAS runs fast
    gwt = _gemm(xp, cols, _grad_rows(xp, g, groups).swapaxes(1, 2),
                (groups, cols.shape[1], weight_size[0] // groups))
    return xp.ascontiguousarray(gwt.swapaxes(1, 2)).reshape(weight_size)


def _conj(F, t):
    return F.conj(t) if t.dtype.is_complex else t


def _conv_backward(F, g, out, x, w, stride, padding, dilation, groups):
    a = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    return (F._conv_nd_input_grad(g, _conj(F, w), tuple(x.shape), **a),
            F._conv_nd_weight_grad(_conj(F, x), g, tuple(w.shape), **a))


def _input_grad_backward(F, h, out, g, w, input_size, stride, padding, dilation, groups):
    # out = A_w^H g with A_w the forward in x: linear in g and in w
    a = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    return (F._conv_nd(h, _conj(F, w), **a),
            _conj(F, F._conv_nd_weight_grad(_conj(F, h), g, tuple(w.shape), **a)))


def _weight_grad_backward(F, h, out, x, g, weight_size, stride, padding, dilation, groups):
    a = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    return (_conj(F, F._conv_nd_input_grad(g, _conj(F, h), tuple(x.shape), **a)),
            F._conv_nd(x, h, **a))


def _conv_shape(xs, ws, stride, padding, dilation, groups):
    return (xs[0], ws[0]) + _out_sizes(xs[2:], ws[2:], stride, padding, dilation)


# ---------------------------------------------------------------- references and samples


def _conv_ref(x, w, stride, padding, dilation, groups):
    """Direct sum over kernel offsets, per group, in float64 (independent of the kernels)."""
    x64 = x.astype(np.complex128 if x.dtype.kind == "c" else np.float64)
    xp_ = np.pad(x64, ((0, 0), (0, 0)) + tuple((p, p) for p in padding))
    out = _out_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation)
    o, cg = w.shape[:2]
    y = np.zeros((x.shape[0], o) + out, x64.dtype)
    og = o // groups
    for off, win in zip(itertools.product(*map(range, w.shape[2:])),
                        _windows(w.shape[2:], stride, dilation, out)):
        for gi in range(groups):
            xs = xp_[(slice(None), slice(gi * cg, (gi + 1) * cg)) + win]
            wk = w[(slice(gi * og, (gi + 1) * og), slice(None)) + off]
            y[:, gi * og:(gi + 1) * og] += np.einsum("nc...,oc->no...", xs, wk)
    return y.astype(x.dtype)


def _grad_ref(which):
    """The adjoint of the reference forward, by its Jacobian (small samples only)."""
    def ref(a, b, stride, padding, dilation, groups, **size_attr):
        (size,) = size_attr.values()
        g = a if which == "input" else b
        fixed = b if which == "input" else a
        attrs = {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
        res = np.zeros(size, np.float64)
        flat = res.reshape(-1)
        for i in range(flat.size):
            e = np.zeros(size, np.float64)
            e.reshape(-1)[i] = 1.0
            y = _conv_ref(e, fixed.astype(np.float64), **attrs) if which == "input" else \
                _conv_ref(fixed.astype(np.float64), e, **attrs)
            flat[i] = np.sum(y * g)
        return res.astype(g.dtype)
    return ref


_CASES = [  # (input, weight, stride, padding, dilation, groups)
    ((2, 3, 5), (4, 3, 3), (1,), (1,), (1,), 1),
    ((2, 2, 5, 6), (3, 2, 3, 2), (1, 1), (1, 0), (1, 1), 1),
    ((1, 4, 7, 6), (4, 2, 3, 3), (2, 1), (1, 2), (1, 2), 2),
    ((2, 2, 4, 4, 3), (2, 1, 2, 2, 1), (1, 2, 1), (0, 1, 0), (1, 1, 1), 2),
]


def _samples(rng, dt):
    for xs, ws, s, p, d, g in _CASES:
        yield (arr(rng, xs, dt), arr(rng, ws, dt)), {"stride": s, "padding": p, "dilation": d,
                                                          "groups": g}


def _input_grad_samples(rng, dt):
    for xs, ws, s, p, d, g in _CASES:
        out = (xs[0], ws[0]) + _out_sizes(xs[2:], ws[2:], s, p, d)
        yield (arr(rng, out, dt), arr(rng, ws, dt)), {"input_size": xs, "stride": s, "padding": p,
                                                           "dilation": d, "groups": g}


def _weight_grad_samples(rng, dt):
    for xs, ws, s, p, d, g in _CASES:
        out = (xs[0], ws[0]) + _out_sizes(xs[2:], ws[2:], s, p, d)
        yield (arr(rng, xs, dt), arr(rng, out, dt)), {"weight_size": ws, "stride": s, "padding": p,
                                                           "dilation": d, "groups": g}


# `_conv_nd(input, weight, stride, padding, dilation, groups)`: input (N, C, *spatial), weight
# (O, C / groups, *kernel), per-dim tuples (symmetric padding) -> (N, O, *out)
declare(
    "_conv_nd", "linalg", f"input, weight, {_ATTRS}", 2, method=False, scalar_ok=False,
    shape=_conv_shape, impl=_conv_impl, backward=_conv_backward, ref=_conv_ref,
    sample_inputs=_samples, test_dtypes=FLOATS,
)

# `_conv_nd_input_grad(grad, weight, input_size, ...)`: the transposed convolution of grad
# (N, O, *out) to input_size (N, C, *spatial)
declare(
    "_conv_nd_input_grad", "linalg", f"grad, weight, input_size, {_ATTRS}", 2, method=False,
    scalar_ok=False, shape=lambda gs, ws, input_size, **a: tuple(input_size),
    impl=_input_grad_impl, backward=_input_grad_backward,
    ref=_grad_ref("input"), sample_inputs=_input_grad_samples, test_dtypes=FLOATS,
)

# `_conv_nd_weight_grad(input, grad, weight_size, ...)`: sum over the batch and the output
# positions of grad times the input windows -> weight_size (O, C / groups, *kernel)
declare(
    "_conv_nd_weight_grad", "linalg", f"input, grad, weight_size, {_ATTRS}", 2, method=False,
    scalar_ok=False, shape=lambda xs, gs, weight_size, **a: tuple(weight_size),
    impl=_weight_grad_impl, backward=_weight_grad_backward,
    ref=_grad_ref("weight"), sample_inputs=_weight_grad_samples, test_dtypes=FLOATS,
)


# ---------------------------------------------------------------- max pooling's window search


def _max_pool_indices_impl(xp, x, kernel_size, stride, padding, dilation, output_size):
    spatial = x.shape[2:]
    low = -xp.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    size = tuple(max(s + 2 * p, (o - 1) * st + d * (k - 1) + 1) for s, p, o, st, d, k in zip(
        spatial, padding, output_size, stride, dilation, kernel_size))
    # batch innermost (C, *size, N), as the conv kernels: long runs for the comparisons
    xt = xp.full((x.shape[1],) + size + (x.shape[0],), low, x.dtype)
    xt[(slice(None),) + tuple(slice(p, p + s) for s, p in zip(spatial, padding))] = \
        xp.moveaxis(x, 0, -1)
    views = [xt[_at(win)] for win in _windows(kernel_size, stride, dilation, output_size)]
    best = views[0].copy()
    for v in views[1:]:  # the maximum (NaN propagates)
        xp.maximum(best, v, out=best)
    # the first offset reaching it: offsets last to first, each overwriting (ATen's strict >)
    arg = xp.zeros(best.shape, xp.int64)
    for i in range(len(views) - 1, -1, -1):
        arg = xp.where(views[i] == best, i, arg)
    if x.dtype.kind == "f" and xp.isnan(best).any():  # ATen's isnan(val): the last NaN
        for i, v in enumerate(views):
            xp.copyto(arg, i, where=xp.isnan(v))
    best, arg = xp.moveaxis(best, -1, 0), xp.moveaxis(arg, -1, 0)
    # window offset -> flat displacement in the plane; window start -> flat base index
    plane = [math.prod(spatial[d + 1:]) for d in range(len(spatial))]
    disp = np.array([sum(o * dl * st for o, dl, st in zip(off, dilation, plane))
                     for off in itertools.product(*map(range, kernel_size))], np.int64)
    base = first = np.zeros(output_size, np.int64)
    for d, (o, st, p, dl) in enumerate(zip(output_size, stride, padding, dilation)):
        shape = [1] * len(output_size)
        shape[d] = o
        start = np.arange(o) * st - p
        base = base + (start * plane[d]).reshape(shape)
        # the window's first element inside the input (ATen's index when nothing beats low)
        inside = start + np.maximum(-(start // dl), 0) * dl
        first = first + (inside * plane[d]).reshape(shape)
    idx = xp.asarray(disp)[arg] + xp.asarray(base)
    if any(padding):
        xp.copyto(idx, xp.broadcast_to(xp.asarray(first), idx.shape), where=best == low)
    return idx


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


# ---------------------------------------------------------------- reading and writing planes


def _plane_gather_impl(xp, x, index):
    n, c = index.shape[:2]
    flat = xp.take_along_axis(x.reshape(n, c, -1), index.reshape(n, c, -1), -1)
    return flat.reshape(index.shape)


def _plane_scatter_add_impl(xp, g, index, input_size):
    n, c = input_size[:2]
    plane = math.prod(input_size[2:])
    pos = (index.reshape(n * c, -1) + (xp.arange(n * c) * plane)[:, None]).reshape(-1)
    if g.dtype.kind == "f":  # one bincount (np.add.at is ~10x slower)
        out = xp.bincount(pos, weights=g.reshape(-1), minlength=n * c * plane)
        return out.astype(g.dtype, copy=False).reshape(input_size)
    out = xp.zeros(n * c * plane, g.dtype)
    xp.add.at(out, pos, g.reshape(-1))
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
