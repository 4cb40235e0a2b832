"""Convolution, pooling and batch norm of `torch.nn.functional`, composed of registry ops.

No op here is new: a convolution is the registry's `_conv_nd` (`ir/ops/conv.py`: im2col and one
GEMM, its gradients the two adjoint ops) plus a bias add; max pooling is the registry's
`_max_pool_indices` (each window's maximum as a flat index into its input plane) and a
`_plane_gather` (the gradient goes to that maximum, as in PyTorch); average pooling is a
window `sum` divided by PyTorch's divisor; adaptive average pooling is a reshape-`mean`
(divisible sizes) or a product with an averaging matrix; batch norm in training is the
registry's `_batch_norm_train` (`ir/ops/batch_norm.py`: one composite, one backward node in
eager) plus in-place updates of the running statistics (`_batch_stats`) under `no_grad`, in
evaluation `rsqrt` of the running statistics and a multiply-add.
Autograd therefore works unchanged and capture can trace every function.
Semantics, argument names, defaults and error messages: torch.nn.functional (conv1d, conv2d,
max_pool1d/2d, avg_pool1d/2d, adaptive_avg_pool1d/2d, batch_norm). Touches `eager` only.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from ..amp.policy import autocast_function
from ..creation import as_tensor
from ..dispatch import FUNCTIONS
from ..grad_mode import no_grad

__all__ = ["adaptive_avg_pool1d", "adaptive_avg_pool2d", "avg_pool1d", "avg_pool2d",
           "batch_norm", "conv1d", "conv2d", "max_pool1d", "max_pool2d"]

_pad = FUNCTIONS["pad"]
_matmul = FUNCTIONS["matmul"]
_conv_nd = FUNCTIONS["_conv_nd"]
_HALF = (D.float16, D.bfloat16)
_max_pool_indices = FUNCTIONS["_max_pool_indices"]
_plane_gather = FUNCTIONS["_plane_gather"]
_max_pool_tiled_indices = FUNCTIONS["_max_pool_tiled_indices"]
_batch_norm_train = FUNCTIONS["_batch_norm_train"]
_batch_stats = FUNCTIONS["_batch_stats"]


# ---------------------------------------------------------------- argument normalisation


def _tuple(value, n: int, name: str) -> tuple:
    """An int or a sequence of n ints, as PyTorch's `_ntuple` / `expand_param_if_needed`."""
    if isinstance(value, int):
        return (value,) * n
    value = tuple(int(v) for v in value)
    if len(value) == 1:
        return value * n
    if len(value) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got {name}="
                           f"{list(value)}")
    return value


def _batched(input, nd: int, name: str, expected: str):
    """(input with a batch dim, whether one was added): unbatched inputs get a batch of 1."""
    if input.ndim == nd + 2:
        return input, False
    if input.ndim == nd + 1:
        return input.unsqueeze(0), True
    raise RuntimeError(f"{expected} to {name}, but got input of size: {list(input.shape)}")


def _windows(x, kernel, stride, dilation):
    """The sliding windows of x (N, C, *spatial) as a strided view (N, C, *out, *kernel)."""
    nd = len(kernel)
    for d in range(nd):
        x = x.unfold(2 + d, dilation[d] * (kernel[d] - 1) + 1, stride[d])
    if any(dl != 1 for dl in dilation):
        x = x[(Ellipsis,) + tuple(slice(None, None, dl) for dl in dilation)]
    return x


def _pad_list(pads) -> list:
    """F.pad's argument (last dim first) from per-dim (left, right) pairs in dim order."""
    out = []
    for lo, hi in reversed(pads):
        out += [lo, hi]
    return out


# ---------------------------------------------------------------- convolution


def _conv(input, weight, bias, stride, padding, dilation, groups, nd: int, name: str):
    expected = f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input"
    x, unbatched = _batched(input, nd, name, expected)
    if weight.ndim != nd + 2:
        raise RuntimeError("weight should have at least three dimensions" if nd + 2 < 3 else
                           f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional "
                           f"input {list(x.shape)}, but got {weight.ndim}-dimensional weight "
                           f"of size {list(weight.shape)} instead")
    stride = _tuple(stride, nd, "stride")
    dilation = _tuple(dilation, nd, "dilation")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    out_ch, cin_g = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if out_ch % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{list(weight.shape)}] instead")
    if x.shape[1] != cin_g * groups:
        raise RuntimeError(f"Given groups={groups}, weight of size {list(weight.shape)}, "
                           f"expected input{list(x.shape)} to have {cin_g * groups} channels, "
                           f"but got {x.shape[1]} channels instead")
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != out_ch):
        raise RuntimeError(f"Given weight of size {list(weight.shape)}, expected bias to be "
                           f"1-dimensional with {out_ch} elements, but got bias of size "
                           f"{list(bias.shape)} instead")
    if isinstance(padding, str):
        if padding == "valid":
            pads = ((0, 0),) * nd
        elif padding == "same":
            if any(s != 1 for s in stride):
                raise RuntimeError("padding='same' is not supported for strided convolutions")
            # the extra element of an odd total goes on the right, as PyTorch does
            pads = tuple((dl * (k - 1) // 2, dl * (k - 1) - dl * (k - 1) // 2)
                         for k, dl in zip(kernel, dilation))
        else:
            raise RuntimeError(f"Invalid padding string: '{padding}'")
    else:
        padding = _tuple(padding, nd, "padding")
        if any(p < 0 for p in padding):
            raise RuntimeError("negative padding is not supported")
        pads = tuple((p, p) for p in padding)
    spatial = tuple(x.shape[2 + d] + pads[d][0] + pads[d][1] for d in range(nd))
    eff = tuple(dl * (k - 1) + 1 for k, dl in zip(kernel, dilation))
    if any(e > s for e, s in zip(eff, spatial)):
        raise RuntimeError(f"Calculated padded input size per channel: "
                           f"({' x '.join(map(str, spatial))}). Kernel size: "
                           f"({' x '.join(map(str, eff))}). Kernel size can't be greater than "
                           f"actual input size")
    if any(lo != hi for lo, hi in pads):  # "same" with an odd total: the extra on the right
        x = _pad(x, _pad_list(tuple((0, hi - lo) for lo, hi in pads)))
    low = bias is not None and x.dtype in _HALF and weight.dtype is x.dtype
    if low:  # (PyTorch adds a half type's bias to the float32 sums and rounds once)
        x, weight, bias = x.float(), weight.float(), bias.float()
    y = _conv_nd(x, weight, stride=stride, padding=tuple(lo for lo, _ in pads),
                 dilation=dilation, groups=groups)
    if bias is not None:
        y = y + bias.reshape((out_ch,) + (1,) * nd)
        if low:
            y = y.to(input.dtype)
    return y.squeeze(0) if unbatched else y


@autocast_function("conv1d")
def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """1-D convolution (cross-correlation) `torch.nn.functional.conv1d`: input
    (N, C_in, L) or unbatched (C_in, L), weight (C_out, C_in / groups, kW), bias (C_out,) ->
    (N, C_out, L_out), L_out = (L + 2 * padding - dilation * (kW - 1) - 1) // stride + 1.
    padding: int, 1-tuple, "valid" or "same" (stride 1 only). Floating dtypes of the input.
    RuntimeError, with PyTorch's message, for a wrong input rank, channels that do not match
    the weight or groups, a bias of the wrong size, non-positive stride/dilation, negative
    padding, or a kernel larger than the padded input."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


@autocast_function("conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-D convolution (cross-correlation) `torch.nn.functional.conv2d`: input
    (N, C_in, H, W) or unbatched (C_in, H, W), weight (C_out, C_in / groups, kH, kW), bias
    (C_out,) -> (N, C_out, H_out, W_out), H_out = (H + 2 * padH - dilH * (kH - 1) - 1) //
    strideH + 1 (and likewise W). stride, padding, dilation: int or pair; padding also
    "valid" or "same" (stride 1 only; an odd total padding puts the extra row/column at the
    bottom/right). Errors as `conv1d` ("Calculated padded input size per channel: (2 x 2).
    Kernel size: (3 x 3). Kernel size can't be greater than actual input size", ...)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


# ---------------------------------------------------------------- pooling


def _pool_geometry(x, nd, kernel_size, stride, padding, dilation, ceil_mode):
    """(kernel, stride, padding, dilation, out sizes, extra right padding per dim) following
    ATen's `pooling_output_shape` and `pool2d_shape_check`."""
    kernel = _tuple(kernel_size, nd, "kernel_size")
    stride = kernel if stride is None or (not isinstance(stride, int) and len(stride) == 0) \
        else _tuple(stride, nd, "stride")
    padding = _tuple(padding, nd, "padding")
    dilation = _tuple(dilation, nd, "dilation")
    if any(k <= 0 for k in kernel):
        raise RuntimeError("kernel size should be greater than zero, but got "
                           + ", ".join(f"k{i}: {k}" for i, k in enumerate(kernel)))
    if any(s <= 0 for s in stride):
        raise RuntimeError("stride should not be zero")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    for k, p, dl in zip(kernel, padding, dilation):
        if p < 0 or p > (dl * (k - 1) + 1) // 2:
            raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                               f"pad={p}, kernel_size={k} and dilation={dl}")
    sizes, extra = [], []
    for d in range(nd):
        n, k, s, p, dl = x.shape[2 + d], kernel[d], stride[d], padding[d], dilation[d]
        span = n + 2 * p - dl * (k - 1) - 1
        o = (span + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (o - 1) * s >= n + p:
            o -= 1
        sizes.append(o)
        extra.append(max((o - 1) * s + dl * (k - 1) + 1 - (n + 2 * p), 0))
    if any(o < 1 for o in sizes):
        c = x.shape[1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c,) + tuple(x.shape[2:])))})"
                           f". Calculated output size: ({'x'.join(map(str, [c] + sizes))}). "
                           f"Output size is too small")
    return kernel, stride, padding, dilation, tuple(sizes), tuple(extra)


def _pool_input(input, nd, name):
    if input.ndim not in (nd + 1, nd + 2) or input.numel() == 0:
        raise RuntimeError(f"non-empty {nd + 1}D or {nd + 2}D (batch mode) tensor expected "
                           f"for input")
    return _batched(input, nd, name, "")


def _max_pool(input, nd, kernel_size, stride, padding, dilation, ceil_mode, return_indices,
              name):
    x, unbatched = _pool_input(input, nd, name)
    kernel, stride, padding, dilation, out, _ = _pool_geometry(
        x, nd, kernel_size, stride, padding, dilation, ceil_mode)
    if stride == kernel and not any(padding) and all(d == 1 for d in dilation) and \
            all(o * k == s for o, k, s in zip(out, kernel, x.shape[2:])) and \
            not (nd == 2 and x.device.type == "cpu" and x.dtype.name in ("float32", "float64")):
        # windows tiling the planes (MaxPool2d(2) on even sizes): one fused kernel compiled
        # (2-D float32/float64 on the CPU: `_max_pool_indices`, whose compiled step is a
        # direct kernel, codegen/plane_kernels.py, ~4x faster than the fused reductions)
        idx = _max_pool_tiled_indices(x.detach(), kernel_size=kernel)
    else:
        idx = _max_pool_indices(x.detach(), kernel_size=kernel, stride=stride,
                                padding=padding, dilation=dilation, output_size=out)
    y = _plane_gather(x, idx)  # the gradient: a scatter-add into the input planes
    if unbatched:
        y, idx = y.squeeze(0), idx.squeeze(0)
    return (y, idx) if return_indices else y


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """1-D max pooling `torch.nn.functional.max_pool1d`: (N, C, L) or (C, L) ->
    (N, C, L_out); see `max_pool2d`."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool1d")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling `torch.nn.functional.max_pool2d`: (N, C, H, W) or (C, H, W) ->
    (N, C, H_out, W_out), H_out = (H + 2 * padH - dilH * (kH - 1) - 1) / strideH + 1 rounded
    down (up with ceil_mode, dropping a last window that would start in the right padding).
    stride defaults to kernel_size; padding counts as -inf (at most half the effective
    kernel). The gradient goes to each window's first maximum. return_indices=True also
    returns the int64 flat index (h * W + w) of each maximum in its input plane.
    RuntimeError for a wrong rank or empty input, zero stride, too much padding, or an empty
    output ("Given input size: (3x2x2). Calculated output size: (3x0x0). Output size is too
    small")."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode,
                     return_indices, "max_pool2d")


def _divisor(n, k, s, p, o, include_pad):
    """ATen's avg_pool divisor along one dim: window sizes clipped to the padded input
    (include_pad) or to the input."""
    start = np.arange(o) * s - p
    end = np.minimum(start + k, n + p)
    if include_pad:
        return end - start
    return np.minimum(end, n) - np.maximum(start, 0)


def _avg_pool(input, nd, kernel_size, stride, padding, ceil_mode, count_include_pad,
              divisor_override, name):
    x, unbatched = _pool_input(input, nd, name)
    kernel, stride, padding, _, out, extra = _pool_geometry(
        x, nd, kernel_size, stride, padding, 1, ceil_mode)
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    pads = tuple((p, p + e) for p, e in zip(padding, extra))
    spatial = tuple(x.shape[2:])
    if any(lo or hi for lo, hi in pads):
        x = _pad(x, _pad_list(pads))
    win = _windows(x, kernel, stride, (1,) * nd)
    total = win.sum(tuple(range(2 + nd, 2 + 2 * nd)))
    if divisor_override is not None:
        y = total / divisor_override
    else:
        div = np.ones((), dtype=np.int64)
        for d in range(nd):
            div = np.multiply.outer(div, _divisor(spatial[d], kernel[d], stride[d], padding[d],
                                                  out[d], count_include_pad))
        if (div == div.flat[0]).all():
            y = total / int(div.flat[0])
        else:
            y = total / as_tensor(div.astype(x.dtype.np), device=x.device)
    return y.squeeze(0) if unbatched else y


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True):
    """1-D average pooling `torch.nn.functional.avg_pool1d`: (N, C, L) or (C, L) ->
    (N, C, L_out); see `avg_pool2d`."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     None, "avg_pool1d")


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling `torch.nn.functional.avg_pool2d`: (N, C, H, W) or (C, H, W) ->
    (N, C, H_out, W_out), sizes as `max_pool2d` (no dilation). Padding counts as zeros; each
    window's sum is divided by its size clipped to the padded input (count_include_pad=True)
    or by its number of input elements (False), or by `divisor_override`. Floating dtypes.
    Errors as `max_pool2d`; RuntimeError for divisor_override=0."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad,
                     divisor_override, "avg_pool2d")


def _adaptive_avg_pool(input, output_size, nd, name):
    if input.ndim not in (nd + 1, nd + 2):
        raise RuntimeError(f"{name}(): Expected {nd + 1}D or {nd + 2}D tensor, but got "
                           f"{list(input.shape)}")
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise RuntimeError(f"{name}: output_size must be {nd}")
    first = input.ndim - nd
    sizes = tuple(input.shape[first + d] if o is None else int(o) for d, o in enumerate(sizes))
    for d in range(nd):
        if input.shape[first + d] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for "
                               f"non-batch dimensions, but input has sizes "
                               f"{list(input.shape)} with dimension {first + d} being empty")
        if sizes[d] < 0:
            raise RuntimeError(f"{name}: elements of output_size must be greater than or "
                               f"equal to 0 but received {list(sizes)}")
    y = input
    if all(o == 1 for o in sizes):
        return y.mean(tuple(range(first, input.ndim)), keepdim=True)
    for d in range(nd):
        dim, n, o = first + d, input.shape[first + d], sizes[d]
        if o == n:
            continue
        if o and n % o == 0:  # windows [i * n / o, (i + 1) * n / o): a reshape and a mean
            shape = tuple(y.shape)
            y = y.reshape(shape[:dim] + (o, n // o) + shape[dim + 1:]).mean(dim + 1)
            continue
        m = as_tensor(_adaptive_window_matrix(o, n, input.dtype.np), device=input.device)
        y = _matmul(m, y.movedim(dim, -2)).movedim(-2, dim)
    return y


def _adaptive_window_matrix(o: int, n: int, np_dtype) -> np.ndarray:
    """ATen's adaptive windows [floor(i * n / o), ceil((i + 1) * n / o)) as an (o, n) averaging
    matrix (a helper of constants, so capture folds it)."""
    mat = np.zeros((o, n), dtype=np_dtype)
    for i in range(o):
        a, b = (i * n) // o, -((-(i + 1) * n) // o)
        mat[i, a:b] = 1.0 / (b - a)
    return mat


def adaptive_avg_pool1d(input, output_size):
    """`torch.nn.functional.adaptive_avg_pool1d`: (N, C, L) or (C, L) -> (N, C, output_size);
    see `adaptive_avg_pool2d`."""
    return _adaptive_avg_pool(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input, output_size):
    """`torch.nn.functional.adaptive_avg_pool2d`: (N, C, H, W) or (C, H, W) ->
    (..., oH, oW); output_size an int or a pair (None keeps that input size). Output row i
    averages input rows [floor(i * H / oH), ceil((i + 1) * H / oH)) (likewise columns), as
    ATen. RuntimeError for another rank or an empty spatial dim."""
    return _adaptive_avg_pool(input, output_size, 2, "adaptive_avg_pool2d")


# ---------------------------------------------------------------- batch norm


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """`torch.nn.functional.batch_norm`: input (N, C, *) normalised per channel C,
    (x - mean) / sqrt(var + eps) * weight + bias. training=True uses the batch statistics
    (biased variance) and, when running_mean/running_var (C,) are given, updates them in
    place without recording gradients: r = (1 - momentum) * r + momentum * stat, with the
    unbiased variance for running_var. training=False uses the running statistics.
    ValueError "Expected more than 1 value per channel when training" for one value per
    channel; RuntimeError for statistics, weight or bias without C elements, or missing
    running statistics in evaluation mode."""
    if input.ndim < 2:
        raise ValueError(f"Expected 2D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    for label, t in (("running_mean", running_mean), ("running_var", running_var),
                     ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            raise RuntimeError(f"{label} should contain {c} elements not {t.numel()}")
    shape = (c,) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // c if c else 0
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"input size {_size_repr(input.shape)}")
        # one composite (ir/ops/batch_norm.py): eager runs it whole with one backward node
        out = _batch_norm_train(input, weight, bias, eps=eps)
        if running_mean is not None or running_var is not None:
            with no_grad():
                stats = _batch_stats(input)  # (2, C): mean, unbiased variance
                for running, stat in ((running_mean, stats[0]), (running_var, stats[1])):
                    if running is not None:
                        running.mul_(1 - momentum).add_(stat * momentum)
        return out
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("running_mean and running_var must be defined in evaluation "
                               "mode")
        out = (input - running_mean.reshape(shape)) * \
            (running_var + eps).rsqrt().reshape(shape)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _size_repr(shape) -> str:
    return f"torch.Size([{', '.join(map(str, shape))}])"
