"""N-d convolution as three library-kernel ops: `_conv_nd` (the forward), `_conv_nd_input_grad`
(its adjoint in the input: a transposed convolution) and `_conv_nd_weight_grad` (its adjoint in
the weight), each differentiable by the other two (PyTorch's `convolution` /
`convolution_backward` and `_convolution_double_backward`).

The kernels work channels last: the padded input is copied as (N, *padded, C) (a copy inside
each sample; a batch-last layout costs a strided pass over the whole batch), so its windows
are one strided view (N, *out, G, *kernel, C/G) and im2col is one copy into a
(N * L, G, K) matrix with runs of kernel width * C/G, per batch chunk of about `_CHUNK`
elements (cache-sized). The forward is one 2-D BLAS GEMM per group and chunk (cols @ W^T), the
weight gradient g @ cols with g moved to (G, O/G, N * L) (on the forward's columns where the
batch is one chunk: the forward keeps them beside its input, `workspace.keep`, as frameworks
save them for backward), the input gradient at stride 1 the convolution of the padded g with
the flipped weight (no col2im), or, strided or with few input channels, per-offset GEMMs
added into strided windows of a channels-last buffer. Where kernel width * C/G is shorter
than the output width (a 1-channel first layer), the columns are channels first instead
((G, K, N * L), runs of output width; `_few_channels`). Dtypes are kept (no float64
temporaries); `xp` is numpy or cupy. Semantics: torch.nn.functional.conv1d/2d/3d
(cross-correlation; symmetric zero padding; argument checks with PyTorch's messages live in
`eager/nn/conv.py`). Max pooling's window search is in `pooling.py` (it shares the layout
helpers here). Imports nothing outside `ir`.
"""

from __future__ import annotations

import functools
import itertools
import math

import numpy as np

from .elementwise import FLOATS
from .indexing import arr, declare
from .workspace import keep, kept, padded, scratch

_ATTRS = "stride, padding, dilation, groups"


def _out_sizes(spatial, kernel, stride, padding, dilation) -> tuple:
    return tuple((n + 2 * p - d * (k - 1) - 1) // s + 1
                 for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation))


def _last(a):
    """a (N, C, *rest) viewed as (N, *rest, C) (`moveaxis(a, 1, -1)` without its argument
    checks, ~3 us a call)."""
    return a.transpose((0,) + tuple(range(2, a.ndim)) + (1,))


def _first(a):
    """a (N, *rest, C) viewed as (N, C, *rest): the inverse of `_last`."""
    return a.transpose((0, a.ndim - 1) + tuple(range(1, a.ndim - 1)))


def _strided(xp, a, shape, strides):
    """A view of the contiguous `a` with `shape` and byte `strides` (numpy: the ndarray
    constructor, ~0.3 us against as_strided's ~2 us)."""
    if xp is np:
        return np.ndarray(shape, a.dtype, a, 0, strides)
    return xp.lib.stride_tricks.as_strided(a, shape, strides)


def _windows(kernel, stride, dilation, out):
    """For each kernel offset, its slices of the padded spatial dims (one strided window)."""
    for off in itertools.product(*map(range, kernel)):
        yield tuple(slice(o * d, o * d + s * (n - 1) + 1, s)
                    for o, d, s, n in zip(off, dilation, stride, out))


@functools.lru_cache(maxsize=256)
def _pad_geometry(spatial, pads, size):
    """For `_channels_last`: the padded extents, the box the input lands in, and the input's
    slices (None where the whole input is taken)."""
    if size is None:
        size = tuple(s + lo + hi for s, (lo, hi) in zip(spatial, pads))
    dst, src = [], []
    for s, (lo, hi) in zip(spatial, pads):
        a, b = max(-lo, 0), s - max(-hi, 0)
        dst.append(slice(max(lo, 0), max(lo, 0) + max(b - a, 0)))
        src.append(slice(a, max(b, a)))
    whole = all(v.start == 0 and v.stop == s for v, s in zip(src, spatial))
    return size, tuple(dst), None if whole else (slice(None),) * 2 + tuple(src)


def _channels_last(xp, x, pads, size=None, fill=0):
    """x (N, C, *spatial) as a contiguous (N, *padded, C) scratch array (`workspace.padded`:
    valid until the next one of its geometry; its border written once): `pads` per dim
    (lo, hi) (negative: cropped), `size` the padded extent where windows reach further
    (pooling's ceil mode), `fill` around. Moving the channels inside each sample is a cheap
    copy (a batch-last layout costs a strided pass over the whole batch), and it makes a
    window's row one contiguous run of kernel width * channels."""
    size, dst, src = _pad_geometry(x.shape[2:], tuple(pads), size and tuple(size))
    n, c = x.shape[:2]
    out = padded(xp, (n,) + size + (c,), x.dtype, (slice(None),) + dst, fill)
    out[(slice(None),) + dst] = _last(x if src is None else x[src])
    return out


def _window_view(xp, xh, kernel, stride, dilation, out, groups=1):
    """The windows of a channels-last xh (N, *padded, C) as one strided view
    (N, *out, G, *kernel, C/G) (no copy)."""
    st, item = xh.strides, xh.strides[-1]
    cg = xh.shape[-1] // groups
    shape = (xh.shape[0],) + tuple(out) + (groups,) + tuple(kernel) + (cg,)
    strides = ((st[0],) + tuple(s * q for s, q in zip(st[1:-1], stride)) + (cg * item,)
               + tuple(s * d for s, d in zip(st[1:-1], dilation)) + (item,))
    return _strided(xp, xh, shape, strides)


# im2col elements per batch chunk (4 MiB of float32): a chunk's columns are still in cache
# when its GEMM reads them (whole-batch columns of 64 28x28x16 images, ~30 MB: 1.4x slower;
# much smaller chunks lose more to small GEMMs than they gain)
_CHUNK = 1 << 20


def _chunks(n: int, per_sample: int):
    """[lo, hi) sample ranges of about `_CHUNK` im2col elements each, of balanced sizes."""
    parts = min(n, max(1, -(-n * per_sample // _CHUNK)))
    size = -(-n // parts)
    return [(lo, min(lo + size, n)) for lo in range(0, n, size)]


def _cols(xp, x, pads, kernel, stride, dilation, out, groups, fresh=False):
    """im2col of x (N, C, *spatial) padded by `pads`: a contiguous (N * L, G, K) matrix
    (K = prod(kernel) * C/G), each group's columns ordered (kernel offset, channel). One
    channels-last copy and one strided copy whose inner runs are kernel width * C/G long.
    Scratch memory unless `fresh` (columns kept for the weight gradient)."""
    xh = _channels_last(xp, x, pads)
    view = _window_view(xp, xh, kernel, stride, dilation, out, groups)
    cols = xp.empty(view.shape, x.dtype) if fresh else scratch(xp, "cols", view.shape, x.dtype)
    cols[...] = view
    return cols.reshape(x.shape[0] * math.prod(out), groups, -1)


def _weight_rows(xp, w, groups):
    """w (O, C/G, *kernel) as (G, O/G, prod(kernel) * C/G), columns in `_cols`' order."""
    return _last(w).reshape(groups, w.shape[0] // groups, -1)


def _rows_last(xp, g, groups):
    """g (N, O, *out) as a contiguous (N * L, G, O/G) (channels last: a copy inside each
    sample; also gives a broadcast g, as the gradient of a sum, the real strides BLAS needs)."""
    n, o = g.shape[:2]
    rows = scratch(xp, "rows", (n, math.prod(g.shape[2:]), o), g.dtype)
    rows[...] = _last(g.reshape(n, o, -1))
    return rows.reshape(-1, groups, o // groups)


def _keep_key(layout, pads, kernel, stride, dilation, out, groups) -> tuple:
    """What names a forward's columns of an input for `workspace.keep` / `kept`."""
    return ("conv cols", layout, tuple(pads), tuple(kernel), tuple(stride), tuple(dilation),
            tuple(out), groups)


def _conv_cl(xp, x, pads, w, stride, dilation, out, groups, keep_cols=False):
    """The convolution of x (N, C, *spatial) padded by `pads` with w (O, C/G, *kernel), per
    batch chunk: im2col, per group one 2-D BLAS GEMM (rows, K) @ (K, O/G), and the chunk's
    (G, rows, O/G) result moved into the (N, O, *out) output while in cache. With
    `keep_cols` and one chunk, the columns are kept for the weight gradient (`keep`)."""
    n, o, og = x.shape[0], w.shape[0], w.shape[0] // groups
    wr = _weight_rows(xp, w, groups)
    length = math.prod(out)
    y = xp.empty((n, o) + tuple(out), xp.result_type(x, w))
    chunks = _chunks(n, length * wr.shape[2] * groups)
    keep_cols = keep_cols and xp is np and len(chunks) == 1
    for lo, hi in chunks:
        cols = _cols(xp, x[lo:hi], pads, w.shape[2:], stride, dilation, out, groups, keep_cols)
        if keep_cols:
            keep(x, _keep_key("cl", pads, w.shape[2:], stride, dilation, out, groups), cols)
        part = scratch(xp, "part", (groups, cols.shape[0], og), y.dtype)
        for i in range(groups):
            xp.matmul(cols[:, i], wr[i].T, out=part[i])
        y[lo:hi].reshape(hi - lo, groups, og, length)[...] = \
            part.reshape(groups, hi - lo, length, og).transpose(1, 0, 3, 2)
    return y


def _few_channels(kernel, cg, stride, out) -> bool:
    """Whether channels-first columns copy in longer runs than channels-last ones: out width
    (stride 1) against kernel width * C/G (a 1-channel input: 3 against 8 at 8x8)."""
    return stride[-1] == 1 and kernel[-1] * cg < out[-1]


def _cols_cf(xp, x, padding, kernel, stride, dilation, out, groups, fresh=False):
    """im2col of x (N, C, *spatial) channels first: a contiguous (G, K, N * L) matrix, K =
    C/G * prod(kernel) in the weight's own (channel, offset) order; copy runs of out width.
    Scratch memory unless `fresh`."""
    n, c, spatial = x.shape[0], x.shape[1], x.shape[2:]
    xpad = scratch(xp, "padded", (n, c) + tuple(s + 2 * p for s, p in zip(spatial, padding)),
                   x.dtype)
    if any(padding):
        xpad.fill(0)
    xpad[(slice(None),) * 2 + tuple(slice(p, p + s) for s, p in zip(spatial, padding))] = x
    st, cg = xpad.strides, c // groups
    shape = (groups, cg) + tuple(kernel) + (n,) + tuple(out)
    strides = ((cg * st[1], st[1]) + tuple(s * d for s, d in zip(st[2:], dilation)) + (st[0],)
               + tuple(s * q for s, q in zip(st[2:], stride)))
    cols = xp.empty(shape, x.dtype) if fresh else scratch(xp, "cols", shape, x.dtype)
    cols[...] = _strided(xp, xpad, shape, strides)
    return cols.reshape(groups, cg * math.prod(kernel), n * math.prod(out))


def _conv_cf(xp, x, padding, w, stride, dilation, out, groups):
    """`_conv_cl` on channels-first columns: per chunk and group W (O/G, K) @ cols (K, rows),
    the (G, O/G, N, L) result moved into (N, O, *out) in runs of L."""
    n, o, og = x.shape[0], w.shape[0], w.shape[0] // groups
    wr = w.reshape(groups, og, -1)
    length = math.prod(out)
    y = xp.empty((n, o) + tuple(out), xp.result_type(x, w))
    chunks = _chunks(n, length * wr.shape[2] * groups)
    fresh = xp is np and len(chunks) == 1
    for lo, hi in chunks:
        cols = _cols_cf(xp, x[lo:hi], padding, w.shape[2:], stride, dilation, out, groups,
                        fresh)
        if fresh:
            keep(x, _keep_key("cf", padding, w.shape[2:], stride, dilation, out, groups),
                 cols)
        part = scratch(xp, "part", (groups, og, cols.shape[2]), y.dtype)
        for i in range(groups):
            xp.matmul(wr[i], cols[i], out=part[i])
        y[lo:hi].reshape(hi - lo, groups, og, length)[...] = \
            part.reshape(groups, og, hi - lo, length).transpose(2, 0, 1, 3)
    return y


def _conv_impl(xp, x, w, stride, padding, dilation, groups):
    out = _out_sizes(x.shape[2:], w.shape[2:], stride, padding, dilation)
    if _few_channels(w.shape[2:], w.shape[1], stride, out):
        return _conv_cf(xp, x, padding, w, stride, dilation, out, groups)
    return _conv_cl(xp, x, tuple((p, p) for p in padding), w, stride, dilation, out, groups,
                    keep_cols=True)


def _flipped(xp, w, groups):
    """The weight of the transposed convolution: (O, C/G, *k) -> (C, O/G, *k) reversed in
    every kernel dim (per group: channels in and out swapped)."""
    o, cg, kernel = w.shape[0], w.shape[1], w.shape[2:]
    wt = w.reshape((groups, o // groups, cg) + kernel).swapaxes(1, 2)
    wt = wt[(Ellipsis,) + (slice(None, None, -1),) * len(kernel)]
    return xp.ascontiguousarray(wt).reshape((groups * cg, o // groups) + kernel)


def _input_grad_impl(xp, g, w, input_size, stride, padding, dilation, groups):
    if _few_channels(w.shape[2:], w.shape[1], stride, g.shape[2:]):
        return _input_grad_cf(xp, g, w, input_size, stride, padding, dilation, groups)
    if any(s != 1 for s in stride) or 2 * w.shape[1] < w.shape[0] // groups:
        # strided, or few input channels (the col2im columns, C/G wide, are the smaller
        # matrix: 64x16x28x28 <- 1 channel 1.6 -> 1.0 ms)
        return _input_grad_col2im(xp, g, w, input_size, stride, padding, dilation, groups)
    # stride 1: the adjoint is the convolution of g, padded by d (k - 1) - p (negative: a
    # crop), with the flipped weight; no col2im additions
    spatial = tuple(input_size[2:])
    pads = tuple((d * (k - 1) - p,) * 2 for k, p, d in zip(w.shape[2:], padding, dilation))
    return _conv_cl(xp, g, pads, _flipped(xp, w, groups), stride, dilation, spatial, groups)


def _input_grad_cf(xp, g, w, input_size, stride, padding, dilation, groups):
    """Few input channels: one GEMM per group W^T (K, O/G) @ g (O/G, N * L) into
    channels-first columns, added into the strided windows of a channels-first padded buffer
    in runs of out width (the channels-last buffer's runs are kernel width * C/G short)."""
    n, c, spatial = input_size[0], input_size[1], tuple(input_size[2:])
    kernel, out, o = tuple(w.shape[2:]), tuple(g.shape[2:]), w.shape[0]
    og, length = o // groups, math.prod(out)
    rows = scratch(xp, "rows", (o, n, length), g.dtype)
    rows[...] = g.reshape(n, o, length).transpose(1, 0, 2)
    rows = rows.reshape(groups, og, -1)
    wt = w.reshape(groups, og, -1)
    dt = xp.result_type(g, w)
    dcols = scratch(xp, "cols", (groups, wt.shape[2], n * length), dt)
    for i in range(groups):
        xp.matmul(wt[i].T, rows[i], out=dcols[i])
    dcols = dcols.reshape((c,) + kernel + (n,) + out)
    buf = scratch(xp, "padded", (n, c) + tuple(s + 2 * p for s, p in zip(spatial, padding)), dt)
    buf.fill(0)
    for off, win in zip(itertools.product(*map(range, kernel)),
                        _windows(kernel, stride, dilation, out)):
        buf[(slice(None),) * 2 + win] += xp.moveaxis(dcols[(slice(None),) + off], 1, 0)
    crop = tuple(slice(p, p + s) for s, p in zip(spatial, padding))
    return buf[(slice(None),) * 2 + crop].copy()  # (a copy: buf is scratch)


def _input_grad_col2im(xp, g, w, input_size, stride, padding, dilation, groups):
    """Strided adjoint: per group and kernel offset one GEMM (N * L, O/G) @ (O/G, C/G) added
    into that offset's strided window of a channels-last padded buffer (runs of C/G * out
    width on both sides), then cropped back to (N, C, *spatial)."""
    n, c = input_size[:2]
    spatial, kernel, out = tuple(input_size[2:]), w.shape[2:], g.shape[2:]
    rows = _rows_last(xp, g, groups)  # (N * L, G, O/G)
    cg, og = c // groups, w.shape[0] // groups
    wk = xp.ascontiguousarray(xp.moveaxis(w.reshape((groups, og, cg, -1)), -1, 1))
    # wk: (G, prod(kernel), O/G, C/G)
    buf = scratch(xp, "padded", (n,) + tuple(s + 2 * p for s, p in zip(spatial, padding))
                  + (c,), xp.result_type(g, w))
    buf.fill(0)
    part = scratch(xp, "part", (rows.shape[0], cg), buf.dtype)
    for i in range(groups):
        for k, win in enumerate(_windows(kernel, stride, dilation, out)):
            xp.matmul(rows[:, i], wk[i, k], out=part)
            buf[(slice(None),) + win + (slice(i * cg, (i + 1) * cg),)] += \
                part.reshape((n,) + tuple(out) + (cg,))
    crop = tuple(slice(p, p + s) for s, p in zip(spatial, padding))
    # a copy even where the move is a view (one channel, no padding): buf is scratch
    return _first(buf[(slice(None),) + crop]).copy()


def _rows_first(xp, g, groups):
    """g (N, O, *out) as a contiguous (G, O/G, N * L) (moved in runs of L)."""
    n, o = g.shape[:2]
    rows = scratch(xp, "rows", (o, n, math.prod(g.shape[2:])), g.dtype)
    rows[...] = g.reshape(n, o, -1).transpose(1, 0, 2)
    return rows.reshape(groups, o // groups, -1)


def _weight_grad_impl(xp, x, g, weight_size, stride, padding, dilation, groups):
    """Per batch chunk: its im2col (the forward's, kept, where the batch is one chunk) and g
    moved to (G, O/G, rows), one GEMM per group (O/G, rows) @ (rows, K) summed over the
    chunks."""
    kernel = tuple(weight_size[2:])
    out = _out_sizes(x.shape[2:], kernel, stride, padding, dilation)
    o, cg = weight_size[0], weight_size[1]
    gw = xp.zeros((groups, o // groups, math.prod(kernel) * cg), xp.result_type(x, g))
    cf = _few_channels(kernel, cg, stride, out)
    pads = padding if cf else tuple((p, p) for p in padding)
    chunks = _chunks(x.shape[0], math.prod(out) * gw.shape[2] * groups)
    whole = None
    if len(chunks) == 1:
        whole = kept(x, _keep_key("cf" if cf else "cl", pads, kernel, stride, dilation, out,
                                  groups))
    part = xp.empty(gw.shape[1:], gw.dtype)
    for lo, hi in chunks:
        if whole is not None:
            cols = whole
        elif cf:
            cols = _cols_cf(xp, x[lo:hi], pads, kernel, stride, dilation, out, groups)
        else:
            cols = _cols(xp, x[lo:hi], pads, kernel, stride, dilation, out, groups)
        rows = _rows_first(xp, g[lo:hi], groups)  # (G, O/G, rows)
        for i in range(groups):
            # channels-first columns are (G, K, rows), channels-last ones (rows, G, K)
            xp.matmul(rows[i], cols[i].T if cf else cols[:, i], out=part)
            gw[i] += part
    if cf:
        return gw.reshape((o, -1) + kernel)
    gw = gw.reshape((o,) + kernel + (cg,))
    return xp.ascontiguousarray(_first(gw))


def _at(win):
    return (slice(None),) + win + (slice(None),)


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
