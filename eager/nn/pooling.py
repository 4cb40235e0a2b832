"""The pooling functions of `torch.nn.functional` beyond `eager.nn.conv`'s 1-D/2-D max/avg:
3-D pooling, `*_with_indices`, adaptive max pooling, power-average (LP) pooling, fractional
max pooling and max unpooling, composed of registry ops (no new op).

Pooling over windows of varying placement (adaptive, fractional) uses one mechanism: a table
of flat input-plane positions per output element and window slot (*out, K) built with numpy
from the sizes; the values are picked with `index_select`/`gather`, reduced with `argmax` +
`gather` (the gradient goes to the first maximum, as PyTorch), and the indices are the table
entries at the argmax. Max unpooling is a `scatter` into zeros (its gradient a gather).
Semantics, argument orders, defaults, output sizes and errors: torch.nn.functional and ATen's
AdaptiveMaxPooling / FractionalMaxPool / MaxUnpooling kernels. Touches `eager` only.
"""

from __future__ import annotations

import math

import numpy as np

from ..amp.policy import autocast_function
from ..creation import as_tensor, zeros
from ..dispatch import FUNCTIONS
from ..random import rand
from .conv import _adaptive_avg_pool, _avg_pool, _max_pool, _tuple, avg_pool1d, avg_pool2d

__all__ = ["adaptive_avg_pool3d", "adaptive_max_pool1d", "adaptive_max_pool1d_with_indices",
           "adaptive_max_pool2d", "adaptive_max_pool2d_with_indices", "adaptive_max_pool3d",
           "adaptive_max_pool3d_with_indices", "avg_pool3d", "fractional_max_pool2d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d",
           "fractional_max_pool3d_with_indices", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d",
           "max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d"]


def _as_tensor(a, like):
    return as_tensor(a, device=like.device)


# ---------------------------------------------------------------- max / avg pool 3-D


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """`max_pool1d` returning (values, int64 indices) whatever return_indices says
    (`torch.nn.functional.max_pool1d_with_indices`)."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, True,
                     "max_pool1d")


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """`max_pool2d` returning (values, int64 flat h * W + w indices) always."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, True,
                     "max_pool2d")


@autocast_function("max_pool3d")
def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """3-D max pooling `torch.nn.functional.max_pool3d`: (N, C, D, H, W) or (C, D, H, W) ->
    (N, C, D_out, H_out, W_out); sizes, padding, ceil_mode, indices (d * H * W + h * W + w)
    and errors as `max_pool2d`."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool3d")


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """`max_pool3d` returning (values, int64 indices) always."""
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


@autocast_function("avg_pool3d")
def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """3-D average pooling `torch.nn.functional.avg_pool3d`: (N, C, D, H, W) or (C, D, H, W)
    -> (N, C, D_out, H_out, W_out); as `avg_pool2d`."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool3d")


@autocast_function("adaptive_avg_pool3d")
def adaptive_avg_pool3d(input, output_size):
    """`torch.nn.functional.adaptive_avg_pool3d`: (N, C, D, H, W) or (C, D, H, W) ->
    (..., *output_size); windows as `adaptive_avg_pool2d`."""
    return _adaptive_avg_pool(input, output_size, 3, "adaptive_avg_pool3d")


# ---------------------------------------------------------------- pooling over a table


def _plane_table(starts, size: int, lengths=None):
    """Per dim: (out, K) positions start + j (clipped to the window's last element, so
    shorter windows repeat an element, which changes neither the max nor its first index)."""
    starts = np.asarray(starts, dtype=np.int64)
    k = int(size if lengths is None else np.max(lengths))
    j = np.arange(k)
    ends = starts + (size if lengths is None else np.asarray(lengths)) - 1
    return np.minimum(starts[..., None] + j, ends[..., None])


def _flat_table(per_dim, spatial):
    """Combine per-dim tables [(..., out_d, K_d)] into flat plane positions
    (..., *out, prod K) with C-order strides of `spatial`."""
    nd = len(per_dim)
    lead = per_dim[0].shape[:-2]
    total = np.zeros(lead + (1,) * (2 * nd), dtype=np.int64)
    stride = 1
    for d in range(nd - 1, -1, -1):
        t = per_dim[d]
        o, k = t.shape[-2], t.shape[-1]
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = o, k
        total = total + t.reshape(lead + tuple(shape)) * stride
        stride *= spatial[d]
    outs = total.shape[len(lead):len(lead) + nd]
    return total.reshape(lead + outs + (-1,))


def _table_max(x, table, return_indices):
    """Max over table windows of x (N, C, *spatial): table (*out, K) shared by all planes or
    (N, C, *out, K) per plane -> values (N, C, *out) [, int64 indices]."""
    n, c = x.shape[0], x.shape[1]
    flat = x.reshape(n, c, -1)
    shared = table.ndim == len(x.shape) - 2 + 1
    t = _as_tensor(table, x)
    if shared:
        win = FUNCTIONS["index_select"](flat, 2, t.reshape(-1))
        win = win.reshape((n, c) + tuple(table.shape))
    else:
        win = FUNCTIONS["gather"](flat, 2, t.reshape(n, c, -1)).reshape(tuple(table.shape))
    arg = win.argmax(-1, keepdim=True)
    y = FUNCTIONS["gather"](win, -1, arg).squeeze(-1)
    if not return_indices:
        return y
    if shared:
        t = t.expand(tuple(win.shape))
    return y, FUNCTIONS["gather"](t, -1, arg).squeeze(-1)


def _unbatch(result, unbatched):
    if not unbatched:
        return result
    if isinstance(result, tuple):
        return tuple(r.squeeze(0) for r in result)
    return result.squeeze(0)


def _adaptive_max_pool(input, output_size, return_indices, nd, name):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be {nd}")
    first = input.ndim - nd
    for d in range(first, input.ndim):
        if input.shape[d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes "
                               f"{list(input.shape)} with dimension {d} being empty")
    spatial = tuple(input.shape[first:])
    sizes = tuple(n if o is None else int(o) for n, o in zip(spatial, sizes))
    x = input.unsqueeze(0) if input.ndim == nd + 1 else input
    per_dim = []
    for n, o in zip(spatial, sizes):
        i = np.arange(o)
        starts, ends = (i * n) // o, -((-(i + 1) * n) // o)
        per_dim.append(_plane_table(starts, 0, ends - starts))
    res = _table_max(x, _flat_table(per_dim, spatial), return_indices)
    return _unbatch(res, input.ndim == nd + 1)


def adaptive_max_pool1d(input, output_size, return_indices=False):
    """`torch.nn.functional.adaptive_max_pool1d`: (N, C, L) or (C, L) -> (N, C, size);
    windows as `adaptive_max_pool2d`."""
    return _adaptive_max_pool(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """`torch.nn.functional.adaptive_max_pool2d`: (N, C, H, W) or (C, H, W) -> (..., oH, oW);
    output row i is the max over input rows [floor(i * H / oH), ceil((i + 1) * H / oH))
    (likewise columns); return_indices adds the int64 flat h * W + w position of each max.
    RuntimeError for another rank or an empty spatial dim."""
    return _adaptive_max_pool(input, output_size, return_indices, 2, "adaptive_max_pool2d")


def adaptive_max_pool3d(input, output_size, return_indices=False):
    """`torch.nn.functional.adaptive_max_pool3d`: (N, C, D, H, W) or (C, D, H, W)."""
    return _adaptive_max_pool(input, output_size, return_indices, 3, "adaptive_max_pool3d")


def adaptive_max_pool1d_with_indices(input, output_size, return_indices=False):
    """`adaptive_max_pool1d` returning (values, int64 indices) always."""
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """`adaptive_max_pool2d` returning (values, int64 indices) always."""
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices=False):
    """`adaptive_max_pool3d` returning (values, int64 indices) always."""
    return adaptive_max_pool3d(input, output_size, True)


# ---------------------------------------------------------------- fractional max pooling


def _intervals(sample, n: int, o: int, k: int, dtype):
    """ATen's `generate_intervals` (in the input's dtype): window starts for one plane."""
    sample = np.asarray(sample, dtype=dtype)
    seq = np.empty(sample.shape + (o,), dtype=np.int64)
    if o > 1:
        alpha = dtype.type(n - k) / dtype.type(o - 1)
        i = np.arange(o - 1, dtype=dtype)
        seq[..., :-1] = ((i + sample[..., None]) * alpha).astype(np.int64) - \
            (sample * alpha).astype(np.int64)[..., None]
    seq[..., -1] = n - k
    return seq


def _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                         _random_samples, nd, name):
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         f"output_ratio")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got: "
                           f"{list(input.shape)}")
    kernel = _tuple(kernel_size, nd, "kernel_size")
    x = input.unsqueeze(0) if input.ndim == nd + 1 else input
    spatial = tuple(x.shape[2:])
    if output_size is None:
        ratio = _tuple_f(output_ratio, nd)
        output_size = tuple(int(n * r) for n, r in zip(spatial, ratio))
    out = _tuple(output_size, nd, "output_size")
    for d in range(nd):
        if out[d] + kernel[d] - 1 > spatial[d]:
            raise RuntimeError(f"{name}(): pool size {kernel[d]} too large relative to input "
                               f"size {spatial[d]} and output size {out[d]} at dimension "
                               f"{d}")
    n, c = x.shape[0], x.shape[1]
    dt = x.dtype.np
    if _random_samples is None:
        samples = rand(n, c, nd, dtype=x.dtype, device=x.device)._host()
    else:
        if _random_samples.dtype is not x.dtype:
            raise RuntimeError("Expect _random_samples to have the same dtype as input")
        samples = _random_samples._host()
        if tuple(samples.shape) != (n, c, nd):
            raise RuntimeError(f"{name}(): Expected _random_samples to have shape "
                               f"{[n, c, nd]}, but got {list(samples.shape)}")
    samples = samples.astype(dt)
    # ATen's sample order: 2-D (W, H), 3-D (T, H, W)
    which = [1, 0] if nd == 2 else list(range(nd))
    per_dim = [_plane_table(_intervals(samples[..., which[d]], spatial[d], out[d], kernel[d],
                                       np.dtype(dt)), kernel[d]) for d in range(nd)]
    res = _table_max(x, _flat_table(per_dim, spatial), return_indices)
    return _unbatch(res, input.ndim == nd + 1)


def _tuple_f(value, n):
    return (float(value),) * n if isinstance(value, (int, float)) else tuple(value)


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """Fractional max pooling (Graham, 2014) `torch.nn.functional.fractional_max_pool2d`:
    (N, C, H, W) or (C, H, W) -> (..., oH, oW) (output_size, or int(H * ratio) from
    output_ratio); per plane, pseudo-random window starts from `_random_samples` (N, C, 2) in
    [0, 1) (drawn from eager's generator when None) by ATen's `generate_intervals`; windows
    kernel_size. ValueError without output_size and output_ratio; RuntimeError when a
    window would not fit."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 2, "fractional_max_pool2d")


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices=False, _random_samples=None):
    """`torch.nn.functional.fractional_max_pool3d`: (N, C, T, H, W) or (C, T, H, W); see
    `fractional_max_pool2d` (_random_samples (N, C, 3))."""
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, return_indices,
                                _random_samples, 3, "fractional_max_pool3d")


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """`fractional_max_pool2d` returning (values, int64 indices) always."""
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None,
                                       output_ratio=None, return_indices=False,
                                       _random_samples=None):
    """`fractional_max_pool3d` returning (values, int64 indices) always."""
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


# ---------------------------------------------------------------- LP pooling


def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, nd, pool):
    kernel = _tuple(kernel_size, nd, "kernel_size")
    if stride is not None:
        out = pool(input.pow(norm_type), kernel, stride, 0, ceil_mode)
    else:
        out = pool(input.pow(norm_type), kernel, padding=0, ceil_mode=ceil_mode)
    out = FUNCTIONS["sign"](out) * FUNCTIONS["relu"](out.abs())
    return (out * math.prod(kernel)).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """Power-average pooling `torch.nn.functional.lp_pool1d`: (sum over each window of
    x ** p) ** (1 / p), as PyTorch: avg_pool of x ** p times the window size, negative
    averages clamped to 0 (N, C, L) -> (N, C, L_out)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1, avg_pool1d)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """`torch.nn.functional.lp_pool2d`: see `lp_pool1d`; (N, C, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2, avg_pool2d)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode=False):
    """`torch.nn.functional.lp_pool3d`: see `lp_pool1d`; (N, C, D, H, W)."""
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3, avg_pool3d)


# ---------------------------------------------------------------- max unpooling


def _unpool_size(input, kernel, stride, padding, output_size, nd):
    default = tuple((input.shape[input.ndim - nd + d] - 1) * stride[d] - 2 * padding[d] +
                    kernel[d] for d in range(nd))
    if output_size is None:
        return default
    size = tuple(int(s) for s in output_size)
    if len(size) == nd + 2:
        size = size[2:]
    elif len(size) == nd + 1 and input.ndim == nd + 1:
        size = size[1:]
    if len(size) != nd:
        raise ValueError(f"output_size should be a sequence containing {nd} or {nd + 2} "
                         f"elements, but it has a length of '{len(size)}'")
    for d in range(nd):
        lo, hi = default[d] - stride[d], default[d] + stride[d]
        if not lo < size[d] < hi:
            raise ValueError(f'invalid output_size "{list(size)}" (dim {d} must be between '
                             f'{lo} and {hi})')
    return size


def _max_unpool(input, indices, kernel_size, stride, padding, output_size, nd, name):
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None else _tuple(stride, nd, "stride")
    padding = _tuple(padding, nd, "padding")
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}: Expected input to be {nd + 1}D or {nd + 2}D, but got "
                           f"{input.ndim}D")
    if tuple(indices.shape) != tuple(input.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    size = _unpool_size(input, kernel, stride, padding, output_size, nd)
    x, idx = input, indices
    if input.ndim == nd + 1:
        x, idx = x.unsqueeze(0), idx.unsqueeze(0)
    n, c = x.shape[0], x.shape[1]
    plane = math.prod(size)
    a = idx._host() if not idx.is_meta else np.zeros(0)  # (meta: no data to check)
    if a.size and (a.min() < 0 or a.max() >= plane):
        bad = int(a.max()) if a.max() >= plane else int(a.min())
        raise RuntimeError(f"Found an invalid max index: {bad} (output volumes are of size "
                           f"{'x'.join(map(str, size))}")
    out = zeros(n, c, plane, dtype=x.dtype, device=x.device)
    out = FUNCTIONS["scatter"](out, 2, idx.reshape(n, c, -1), x.reshape(n, c, -1))
    out = out.reshape((n, c) + size)
    return out.squeeze(0) if input.ndim == nd + 1 else out


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """Partial inverse of max_pool1d (`torch.nn.functional.max_unpool1d`): (N, C, L) values
    and their int64 indices from `max_pool1d(..., return_indices=True)` -> (N, C, L_out) with
    each value at its index and zeros elsewhere; L_out = (L - 1) * stride - 2 * padding +
    kernel_size unless output_size gives it (within a stride of that). RuntimeError for an
    index outside the output plane."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1,
                       "max_unpool1d")


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """`torch.nn.functional.max_unpool2d`: (N, C, H, W) values and flat indices -> (N, C,
    H_out, W_out); see `max_unpool1d`."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2,
                       "max_unpool2d")


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    """`torch.nn.functional.max_unpool3d`: (N, C, D, H, W); see `max_unpool1d`."""
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3,
                       "max_unpool3d")
