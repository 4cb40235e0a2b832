"""3-D and transposed convolutions, `conv_tbc`, and im2col / col2im (`unfold` / `fold`) of
`torch.nn.functional`, composed of registry ops (no new op).

A transposed convolution is the adjoint of a convolution: each input position scatters
`weight^T @ x` (one batched `matmul` per group) into a window of the output, which is col2im.
col2im (`fold`) is the adjoint of the im2col window view: per spatial dim the registry's
`_adjoint` of an `unfold` view (strided adds; dilated kernels spread to their effective size
with zeros first), whose own backward is the unfold view again, so gradients and double
gradients need nothing new. `conv3d` is `eager.nn.conv`'s im2col + GEMM
convolution with three spatial dims.
Semantics, argument orders, defaults and error messages: torch.nn.functional (conv3d,
conv_transpose1d/2d/3d, conv_tbc, unfold, fold). Touches `eager` only.
"""

from __future__ import annotations

import math

from ..amp.policy import autocast_function
from ..creation import zeros
from ..dispatch import FUNCTIONS
from .conv import _batched, _conv, _pad_list, _tuple, _windows

__all__ = ["conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "fold", "unfold"]

_matmul = FUNCTIONS["matmul"]


@autocast_function("conv3d")
def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """3-D convolution (cross-correlation) `torch.nn.functional.conv3d`: input
    (N, C_in, D, H, W) or unbatched (C_in, D, H, W), weight (C_out, C_in / groups, kD, kH,
    kW), bias (C_out,) -> (N, C_out, D_out, H_out, W_out); sizes, padding strings and errors
    as `conv2d`."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _col2im(cols, out_shape, kernel, stride, dilation, pads):
    """Sum the windows `cols` (N, C, *blocks, *kernel) into a zero (N, C, *padded) image
    (padded = out + lo + hi per dim) and crop the padding: the adjoint of `_windows`, as one
    `unfold` adjoint per dim (k strided adds each). A dilated kernel is first spread to its
    effective size dl * (k - 1) + 1 with zeros between the taps."""
    nd = len(kernel)
    padded = tuple(o + lo + hi for o, (lo, hi) in zip(out_shape, pads))
    img = _spread_taps(cols, dilation)
    for d in range(nd - 1, -1, -1):
        shape = tuple(img.shape[:2 + d]) + (padded[d],) + tuple(img.shape[3 + d:-1])
        attrs = (("dimension", 2 + d), ("size", img.shape[-1]), ("step", stride[d]))
        img = FUNCTIONS["_adjoint"](img, shape, "unfold", attrs)
    return _crop(img, out_shape, pads)


def _spread_taps(cols, dilation):
    """(N, C, *blocks, *kernel) -> (N, C, *blocks, *effective kernel): tap j of a dim with
    dilation dl moves to j * dl, zeros between. (Loop bodies stay short: capture cannot
    follow a loop whose FOR_ITER needs an EXTENDED_ARG.)"""
    nd = len(dilation)
    for d, dl in enumerate(dilation):
        cols = _spread_axis(cols, 2 + nd + d, dl)
    return cols


def _spread_axis(cols, axis, dl):
    if dl == 1:
        return cols
    k = cols.shape[axis]
    gap = tuple(cols.shape[:axis + 1]) + (dl - 1,) + tuple(cols.shape[axis + 1:])
    spread = FUNCTIONS["cat"]([cols.unsqueeze(axis + 1),
                               zeros(gap, dtype=cols.dtype, device=cols.device)], axis + 1)
    shape = tuple(cols.shape[:axis]) + (k * dl,) + tuple(cols.shape[axis + 1:])
    return spread.reshape(shape).narrow(axis, 0, dl * (k - 1) + 1)


def _crop(img, out_shape, pads):
    if any(lo or hi for lo, hi in pads):
        img = img[(slice(None), slice(None)) +
                  tuple(slice(lo, lo + o) for o, (lo, _) in zip(out_shape, pads))]
    return img


def _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation,
                    nd: int, name: str):
    expected = f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input"
    x, unbatched = _batched(input, nd, name, expected)
    if weight.ndim != nd + 2:
        raise RuntimeError(f"Expected {nd + 2}-dimensional weight for {nd + 2}-dimensional "
                           f"input {list(x.shape)}, but got {weight.ndim}-dimensional weight "
                           f"of size {list(weight.shape)} instead")
    stride = _tuple(stride, nd, "stride")
    padding = _tuple(padding, nd, "padding")
    output_padding = _tuple(output_padding, nd, "output_padding")
    dilation = _tuple(dilation, nd, "dilation")
    if groups <= 0:
        raise RuntimeError("non-positive groups is not supported")
    if any(s <= 0 for s in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(d <= 0 for d in dilation):
        raise RuntimeError("dilation should be greater than zero")
    if any(p < 0 for p in padding):
        raise RuntimeError("negative padding is not supported")
    for op, s, dl in zip(output_padding, stride, dilation):
        if op < 0 or (op >= s and op >= dl):
            raise RuntimeError(f"output padding must be smaller than either stride or "
                               f"dilation, but got output_padding={list(output_padding)}, "
                               f"stride={list(stride)}, dilation={list(dilation)}")
    cin, cout_g = weight.shape[0], weight.shape[1]
    kernel = tuple(weight.shape[2:])
    if x.shape[1] != cin:
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"input{list(x.shape)} to have {cin} channels, but got "
                           f"{x.shape[1]} channels instead")
    if cin % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by "
                           f"{groups} at dimension 0, but got weight of size "
                           f"[{list(weight.shape)}] instead")
    cout = cout_g * groups
    if bias is not None and (bias.ndim != 1 or bias.shape[0] != cout):
        raise RuntimeError(f"Given transposed=1, weight of size {list(weight.shape)}, expected "
                           f"bias to be 1-dimensional with {cout} elements, but got bias of "
                           f"size {list(bias.shape)} instead")
    spatial = tuple(x.shape[2:])
    out = tuple((i - 1) * s - 2 * p + dl * (k - 1) + op + 1 for i, s, p, dl, k, op in
                zip(spatial, stride, padding, dilation, kernel, output_padding))
    if any(o <= 0 for o in out):
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, spatial))})"
                           f". Calculated output size per channel: "
                           f"({' x '.join(map(str, out))}). Output size is too small")
    n, cin_g, kk, sp = x.shape[0], cin // groups, math.prod(kernel), math.prod(spatial)
    # one GEMM per group over the whole batch: (G, O/G * K, C/G) @ (G, C/G, N * L); numpy's
    # matmul of a transposed or broadcast stack skips BLAS, so both operands are contiguous
    w = weight.reshape(groups, cin_g, cout_g * kk).transpose(1, 2).contiguous()
    xs = x.reshape(n, groups, cin_g, sp).permute(1, 2, 0, 3).reshape(groups, cin_g, n * sp)
    cols = _matmul(w, xs).reshape((groups, cout_g) + kernel + (n,) + spatial)
    # -> (N, C_out, *spatial, *kernel): the windows of `_col2im`
    order = (2 + nd, 0, 1) + tuple(range(3 + nd, 3 + 2 * nd)) + tuple(range(2, 2 + nd))
    cols = cols.permute(order).reshape((n, cout) + spatial + kernel)
    pads = tuple((p, p) for p in padding)
    y = _col2im(cols, out, kernel, stride, dilation, pads)
    if bias is not None:
        y = y + bias.reshape((cout,) + (1,) * nd)
    return y.squeeze(0) if unbatched else y


@autocast_function("conv_transpose1d")
def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """1-D transposed convolution `torch.nn.functional.conv_transpose1d` ("deconvolution",
    the gradient of conv1d w.r.t. its input): input (N, C_in, L) or (C_in, L), weight
    (C_in, C_out / groups, kW), bias (C_out,) -> (N, C_out, L_out), L_out = (L - 1) * stride
    - 2 * padding + dilation * (kW - 1) + output_padding + 1. RuntimeError for a wrong rank,
    channels that do not match the weight, output_padding not smaller than stride or
    dilation, or a non-positive output size."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 1, "conv_transpose1d")


@autocast_function("conv_transpose2d")
def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """2-D transposed convolution `torch.nn.functional.conv_transpose2d`: input
    (N, C_in, H, W) or (C_in, H, W), weight (C_in, C_out / groups, kH, kW) -> (N, C_out,
    H_out, W_out), sizes and errors as `conv_transpose1d` per dim."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 2, "conv_transpose2d")


@autocast_function("conv_transpose3d")
def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0,
                     groups=1, dilation=1):
    """3-D transposed convolution `torch.nn.functional.conv_transpose3d`: input
    (N, C_in, D, H, W) or unbatched, weight (C_in, C_out / groups, kD, kH, kW); see
    `conv_transpose1d`."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups,
                           dilation, 3, "conv_transpose3d")


def conv_tbc(input, weight, bias, pad=0):
    """Time-batch-channel 1-D convolution `torch.conv_tbc`: input (T, B, C_in), weight
    (kW, C_in, C_out), bias (C_out,), zero padding `pad` on both ends of time -> (T_out, B,
    C_out), T_out = T + 2 * pad - kW + 1. RuntimeError for ranks other than 3/3/1."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output "
                           "channels).")
    y = _conv(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad, 1, 1, 1,
              "conv_tbc")
    return y.permute(2, 0, 1)


# ---------------------------------------------------------------- im2col / col2im


def _fold_args(kernel_size, dilation, padding, stride):
    return (_tuple(kernel_size, 2, "kernel_size"), _tuple(dilation, 2, "dilation"),
            _tuple(padding, 2, "padding"), _tuple(stride, 2, "stride"))


def _check_fold_args(kernel, dilation, padding, stride) -> None:
    if any(k <= 0 for k in kernel):
        raise RuntimeError(f"kernel size should be greater than zero, but got kernel_height: "
                           f"{kernel[0]} kernel_width: {kernel[1]}")
    if any(d <= 0 for d in dilation):
        raise RuntimeError(f"dilation should be greater than zero, but got dilation_height: "
                           f"{dilation[0]} dilation_width: {dilation[1]}")
    if any(p < 0 for p in padding):
        raise RuntimeError(f"padding should be non-negative, but got pad_height: "
                           f"{padding[0]} pad_width: {padding[1]}")
    if any(s <= 0 for s in stride):
        raise RuntimeError(f"stride should be greater than zero, but got stride_height: "
                           f"{stride[0]} stride_width: {stride[1]}")


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Sliding local blocks, im2col (`torch.nn.functional.unfold`): input (N, C, H, W) or
    (C, H, W) -> (N, C * kH * kW, L), L the number of blocks, channel-major then kernel
    position (as PyTorch). Zero padding. RuntimeError for another rank, bad sizes, or blocks
    that do not fit."""
    if input.ndim not in (3, 4):
        raise NotImplementedError(f"Input Error: Only 3D or 4D input Tensors are supported "
                                  f"(got {input.ndim}D)")
    kernel, dilation, padding, stride = _fold_args(kernel_size, dilation, padding, stride)
    _check_fold_args(kernel, dilation, padding, stride)
    x, unbatched = _batched(input, 2, "unfold", "")
    if any(padding):
        x = FUNCTIONS["pad"](x, _pad_list([(p, p) for p in padding]))
    blocks = tuple((x.shape[2 + d] - dilation[d] * (kernel[d] - 1) - 1) // stride[d] + 1
                   for d in range(2))
    if any(b < 1 for b in blocks):
        raise RuntimeError(f"Given input with spatial size ({input.shape[-2]}, "
                           f"{input.shape[-1]}), kernel_size=({kernel[0]}, {kernel[1]}), "
                           f"dilation=({dilation[0]}, {dilation[1]}), padding=({padding[0]}, "
                           f"{padding[1]}), calculated shape of the array of sliding blocks "
                           f"as ({blocks[0]}, {blocks[1]}), but its components must be at "
                           f"least one.")
    cols = _windows(x, kernel, stride, dilation)  # (N, C, oH, oW, kH, kW)
    n, c = x.shape[0], x.shape[1]
    out = cols.permute(0, 1, 4, 5, 2, 3).reshape(n, c * kernel[0] * kernel[1],
                                                  blocks[0] * blocks[1])
    return out.squeeze(0) if unbatched else out


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """Sum sliding local blocks into an image, col2im (`torch.nn.functional.fold`, the
    adjoint of `unfold`): input (N, C * kH * kW, L) or (C * kH * kW, L) -> (N, C, *output_size)
    (overlaps are added). RuntimeError for another rank, a channel count not divisible by
    kH * kW, or L different from the number of blocks output_size holds."""
    if input.ndim not in (2, 3):
        raise NotImplementedError(f"Input Error: Only unbatched (2D) or batched (3D) input "
                                  f"Tensors are supported (got {input.ndim}D)")
    out_hw = _tuple(output_size, 2, "output_size")
    kernel, dilation, padding, stride = _fold_args(kernel_size, dilation, padding, stride)
    _check_fold_args(kernel, dilation, padding, stride)
    x = input.unsqueeze(0) if input.ndim == 2 else input
    kk = kernel[0] * kernel[1]
    if x.shape[1] % kk:
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the "
                           f"product of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size=({kernel[0]}, {kernel[1]})")
    blocks = tuple((out_hw[d] + 2 * padding[d] - dilation[d] * (kernel[d] - 1) - 1)
                   // stride[d] + 1 for d in range(2))
    if any(b < 1 for b in blocks) or x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size=({out_hw[0]}, {out_hw[1]}), kernel_size="
                           f"({kernel[0]}, {kernel[1]}), dilation=({dilation[0]}, "
                           f"{dilation[1]}), padding=({padding[0]}, {padding[1]}), stride=("
                           f"{stride[0]}, {stride[1]}), expected size of input's dimension 2 "
                           f"to match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got input.size(2)="
                           f"{x.shape[2]}.")
    n, c = x.shape[0], x.shape[1] // kk
    cols = x.reshape(n, c, kernel[0], kernel[1], blocks[0], blocks[1]).permute(0, 1, 4, 5, 2, 3)
    y = _col2im(cols, out_hw, kernel, stride, dilation, tuple((p, p) for p in padding))
    return y.squeeze(0) if input.ndim == 2 else y
