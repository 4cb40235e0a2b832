"""Layers of `torch.nn` that rearrange or combine features: `Bilinear`, `ChannelShuffle`,
`PixelShuffle`/`PixelUnshuffle`, `Fold`/`Unfold`, `EmbeddingBag`, with their functional
forms, and `F.multi_head_attention_forward` (the functional core of `MultiheadAttention`).
All are compositions of registry ops: reshapes and permutations, `matmul`, `index_select`
over a padded table of bag members. Semantics, parameter names, initialisation, reprs and
errors: torch.nn.functional and the torch.nn classes of the same names. Touches `eager` only.
"""

from __future__ import annotations

import math

import numpy as np

from ir import dtypes as D

from ..creation import arange, as_tensor, empty, full, zeros
from ..dispatch import FUNCTIONS
from ..random import normal_, randn
from .conv_transpose import fold, unfold
from .functional_base import _embedding_renorm, check_embedding_indices
from .init import uniform_
from .losses import value_check
from .module import Module, Parameter

__all__ = ["bilinear", "channel_shuffle", "embedding_bag",
           "native_channel_shuffle", "pixel_shuffle", "pixel_unshuffle"]
MODULES = ["Bilinear", "ChannelShuffle", "EmbeddingBag", "Fold", "PixelShuffle",
           "PixelUnshuffle", "Unfold"]


def _const(a, like):
    return as_tensor(a, device=like.device)


# ---------------------------------------------------------------- rearrangements


def pixel_shuffle(input, upscale_factor):
    """(*, C * r^2, H, W) -> (*, C, H * r, W * r) (`torch.nn.functional.pixel_shuffle`,
    Shi et al., 2016). RuntimeError for fewer than 3 dims, r <= 0 or channels not divisible by
    r^2."""
    r = int(upscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_shuffle expects a positive upscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c}"
                           f" is not divisible by {r * r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    return x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))


def pixel_unshuffle(input, downscale_factor):
    """(*, C, H * r, W * r) -> (*, C * r^2, H, W) (`torch.nn.functional.pixel_unshuffle`, the
    inverse of pixel_shuffle). RuntimeError for fewer than 3 dims, r <= 0 or sizes not
    divisible by r."""
    r = int(downscale_factor)
    if input.ndim < 3:
        raise RuntimeError(f"pixel_unshuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if r <= 0:
        raise RuntimeError(f"pixel_unshuffle expects a positive downscale_factor, but got {r}")
    *lead, c, h, w = input.shape
    if h % r:
        raise RuntimeError(f"pixel_unshuffle expects height to be divisible by "
                           f"downscale_factor, but input.size(-2)={h} is not divisible by {r}")
    if w % r:
        raise RuntimeError(f"pixel_unshuffle expects width to be divisible by "
                           f"downscale_factor, but input.size(-1)={w} is not divisible by {r}")
    k = len(lead)
    x = input.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    return x.reshape(tuple(lead) + (c * r * r, h // r, w // r))


def channel_shuffle(input, groups):
    """(N, C, *) with channels regrouped: channel g * (C / groups) + i moves to
    i * groups + g (`torch.nn.functional.channel_shuffle`, ShuffleNet). RuntimeError for
    fewer than 3 dims, groups <= 0 or C not divisible by groups."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle expects input to have at least 3 dimensions, but "
                           f"got input with {input.ndim} dimension(s)")
    if groups <= 0:
        raise RuntimeError(f"Number of groups to divide channels in must be positive. Value of "
                           f"groups:{groups}")
    n, c = input.shape[0], input.shape[1]
    if c % groups:
        raise RuntimeError(f"Number of channels must be divisible by groups. Got {c} channels "
                           f"and {groups} groups.")
    rest = tuple(input.shape[2:])
    x = input.reshape((n, groups, c // groups) + rest).transpose(1, 2)
    return x.reshape((n, c) + rest)


native_channel_shuffle = channel_shuffle


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]
    (`torch.nn.functional.bilinear`): input1 (*, in1), input2 (*, in2), weight (out, in1,
    in2), bias (out,). RuntimeError for sizes that do not match."""
    if weight.ndim != 3:
        raise RuntimeError(f"bilinear(): weight must be three-dimensional, got "
                           f"{weight.ndim}D")
    if tuple(input1.shape[:-1]) != tuple(input2.shape[:-1]):
        raise RuntimeError(f"bilinear(): input batch dimensions do not match: got "
                           f"{list(input1.shape[:-1])} and {list(input2.shape[:-1])}")
    o, i1, i2 = weight.shape
    if input1.shape[-1] != i1:
        raise RuntimeError(f"bilinear(): input1 size does not match weight size: got "
                           f"{input1.shape[-1]} but expected {i1}")
    if input2.shape[-1] != i2:
        raise RuntimeError(f"bilinear(): input2 size does not match weight size: got "
                           f"{input2.shape[-1]} but expected {i2}")
    if bias is not None and tuple(bias.shape) != (o,):
        raise RuntimeError(f"bilinear(): bias size does not match weight size: got "
                           f"{bias.shape[-1] if bias.ndim else 0} but expected {o}")
    t = FUNCTIONS["matmul"](input1, weight.permute(1, 0, 2).reshape(i1, o * i2))
    y = (t.reshape(tuple(input1.shape[:-1]) + (o, i2)) * input2.unsqueeze(-2)).sum(-1)
    return y + bias if bias is not None else y


# ---------------------------------------------------------------- embedding_bag


def _bag_args(input, offsets, per_sample_weights):
    """(flat indices, flat per-sample weights); ValueError for bad shapes, as PyTorch."""
    if input.ndim == 2:
        if offsets is not None:
            raise ValueError(f"if input is 2D, then offsets has to be None, as input is "
                             f"treated is a mini-batch of fixed length sequences. However, "
                             f"found offsets of type {type(offsets).__name__}")
        return input.reshape(-1), per_sample_weights.reshape(-1) \
            if per_sample_weights is not None else None
    if input.ndim != 1:
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    return input, per_sample_weights


@value_check
def _check_offsets(offsets, n: int) -> None:
    """RuntimeError, as PyTorch, for offsets that do not start at 0 or decrease or pass n."""
    off = offsets._host().astype(np.int64)
    if off.size and off[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the "
                           f"mini-batch has to start from position 0. However, got {off[0]}")
    if off.size and (np.any(np.diff(off) < 0) or off[-1] > n):
        raise RuntimeError(f"offsets has to be a non-decreasing sequence within [0, {n}]")


def _bag_bounds(input, offsets, include_last_offset):
    """(bag starts, bag ends) on the host."""
    if input.ndim == 2:
        b, length = input.shape
        starts = np.arange(b) * length
        return starts, starts + length
    off = offsets._host().astype(np.int64)
    n = input.shape[0]
    if include_last_offset:  # as ATen's CPU kernel, the last bag runs to the end
        return off[:-1], np.append(off[1:-1], n)[:max(off.size - 1, 0)]
    return off, np.append(off[1:], n)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False,
                  per_sample_weights=None, include_last_offset=False, padding_idx=None):
    """Sums, means or maxima of bags of embedding rows (`torch.nn.functional.embedding_bag`)
    without building the (bag, member, dim) lookups of `embedding`: input (B, L) of fixed
    bags, or 1-D indices with `offsets` (bag starts; with include_last_offset the last entry
    is the end) -> (B, embedding_dim). Entries equal to padding_idx are left out (and not
    counted by "mean"); empty bags give zeros; per_sample_weights (input's shape) scale rows,
    "sum" mode only; scale_grad_by_freq divides each row's gradient by its index's count. ValueError / NotImplementedError / RuntimeError as PyTorch."""
    if per_sample_weights is not None and tuple(input.shape) != \
            tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({tuple(per_sample_weights.shape)}"
                         f") is not None, then it must have the same shape as the input "
                         f"({tuple(input.shape)})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    idx, psw = _bag_args(input, offsets, per_sample_weights)
    if input.ndim == 1:
        _check_offsets(offsets, input.shape[0])
    if mode not in ("sum", "mean", "max"):
        raise ValueError("mode has to be one of sum, mean or max")
    if scale_grad_by_freq and mode == "max":
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' (got "
                                  f"mode='{mode}'). Please open a feature request on GitHub.")
    num, dim = weight.shape
    check_embedding_indices(idx, num)
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("padding_idx must be within the number of embeddings")
        padding_idx %= num
    if input.ndim == 2 and input.shape[1] and max_norm is None and not scale_grad_by_freq:
        return _fixed_bags(input, weight, idx, mode, psw, padding_idx)
    if input.ndim == 1 and padding_idx is None and max_norm is None and not scale_grad_by_freq:
        return _offset_bags(input, weight, offsets, mode, psw, include_last_offset)
    starts, ends = _bag_bounds(input, offsets, include_last_offset)
    a = idx._host().astype(np.int64)
    if max_norm is not None:
        _embedding_renorm(weight, idx, max_norm, norm_type)
    keep = np.ones(a.shape, dtype=bool) if padding_idx is None else a != padding_idx
    counts = np.array([int(keep[s:e].sum()) for s, e in zip(starts, ends)], dtype=np.int64)
    bags, width = len(starts), max(int(counts.max(initial=0)), 1)
    table = np.full((bags, width), a.size, dtype=np.int64)  # a.size: the filler row
    for b, (s, e) in enumerate(zip(starts, ends)):
        members = np.nonzero(keep[s:e])[0] + s
        table[b, :members.size] = members
    rows = FUNCTIONS["index_select"](weight, 0, idx.reshape(-1))
    if scale_grad_by_freq:  # gradients / the index's count in the batch (torch's docs)
        freq = np.bincount(a, minlength=num)[a].astype(weight.dtype.np)[:, None]
        fixed = rows.detach()
        rows = fixed + (rows - fixed) * _const(1.0 / freq, weight)
    if psw is not None:
        rows = rows * psw.reshape(-1, 1)
    rows = FUNCTIONS["cat"]([rows, zeros(1, dim, dtype=weight.dtype, device=weight.device)])
    g = FUNCTIONS["index_select"](rows, 0, _const(table.reshape(-1), weight))
    g = g.reshape(bags, width, dim)
    if mode == "max":
        valid = _const((table < a.size)[..., None], weight)
        best = FUNCTIONS["masked_fill"](g, ~valid, float("-inf")).max(1)[0]
        return FUNCTIONS["masked_fill"](best, _const((counts == 0)[:, None], weight), 0.0)
    total = g.sum(1)
    if mode == "sum":
        return total
    return total / _const(np.maximum(counts, 1).astype(weight.dtype.np)[:, None], weight)


def _fixed_bags(input, weight, idx, mode, psw, padding_idx):
    """Fixed-length bags (input (B, L)) in registry ops only (no host read, so capture keeps
    them in the graph): entries equal to padding_idx are masked out of the sum, the mean's
    count and the max; a bag of padding only is zeros, as PyTorch's."""
    dim = weight.shape[1]
    rows = FUNCTIONS["index_select"](weight, 0, idx).reshape(input.shape[0], -1, dim)
    if psw is not None:
        rows = rows * psw.reshape(input.shape[0], -1, 1)
    if padding_idx is None:
        return rows.max(1)[0] if mode == "max" else rows.mean(1) if mode == "mean" \
            else rows.sum(1)
    keep = (input != padding_idx).unsqueeze(-1)                  # (B, L, 1)
    count = keep.sum(1)                                           # (B, 1)
    if mode == "max":
        best = FUNCTIONS["masked_fill"](rows, ~keep, float("-inf")).max(1)[0]
        return FUNCTIONS["masked_fill"](best, count == 0, 0.0)
    total = (rows * keep.to(rows.dtype)).sum(1)
    return total if mode == "sum" else total / count.clamp(min=1).to(rows.dtype)


def _offset_bags(input, weight, offsets, mode, psw, include_last_offset):
    """1-D indices in bags given by `offsets` (checked on the host by `_check_offsets`), in registry
    ops only (no host read of the indices or offsets, so capture keeps it in the graph): each
    index's bag is `searchsorted(starts, position, right=True) - 1`, and the bags are
    `index_add` sums (mean: divided by the counts, at least 1) or `scatter_reduce` maxima
    (empty bags 0), as ATen's CPU kernel."""
    n, dim = input.shape[0], weight.shape[1]
    bags = offsets.shape[0] - (1 if include_last_offset else 0)
    if bags <= 0:  # (no bag: every index lies outside)
        return zeros(0, dim, dtype=weight.dtype, device=weight.device)
    starts = offsets[:bags].to(D.int64)
    seg = FUNCTIONS["searchsorted"](starts, arange(n, device=input.device), right=True) - 1
    rows = FUNCTIONS["index_select"](weight, 0, input)
    if psw is not None:
        rows = rows * psw.reshape(-1, 1)
    if mode == "max":
        where = seg.reshape(-1, 1).expand(n, dim)
        best = full((bags, dim), float("-inf"), dtype=weight.dtype, device=weight.device)
        best = best.scatter_reduce(0, where, rows, "amax")
        return best.masked_fill(best == float("-inf"), 0.0) if n else best.fill_(0.0)
    total = zeros(bags, dim, dtype=weight.dtype, device=weight.device).index_add(0, seg, rows)
    if mode == "sum":
        return total
    ones = full((n,), 1.0, dtype=weight.dtype, device=weight.device)
    counts = zeros(bags, dtype=weight.dtype, device=weight.device).index_add(0, seg, ones)
    return total / counts.clamp(min=1).reshape(-1, 1)


class EmbeddingBag(Module):
    """`F.embedding_bag` with a learnt `weight` (num_embeddings, embedding_dim) initialised
    N(0, 1), row padding_idx zero (`torch.nn.EmbeddingBag`); forward(input, offsets=None,
    per_sample_weights=None)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq = scale_grad_by_freq
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.padding_idx = padding_idx
        if _weight is None:
            self.weight = Parameter(randn(num_embeddings, embedding_dim, dtype=dtype,
                                          device=device))
            self._fill_padding_idx_with_zero()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight)
        self.mode, self.sparse = mode, sparse
        self.include_last_offset = include_last_offset

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def reset_parameters(self) -> None:
        normal_(self.weight.data)
        self._fill_padding_idx_with_zero()

    def forward(self, input, offsets=None, per_sample_weights=None):
        return embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                             self.scale_grad_by_freq, self.mode, self.sparse,
                             per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        """An EmbeddingBag whose weight is `embeddings` (2-D), frozen unless freeze=False."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse,
                  embeddings, include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


# ---------------------------------------------------------------- modules


class Bilinear(Module):
    """`F.bilinear` with learnt weight (out_features, in1_features, in2_features) and bias
    (out_features,), both U(-1/sqrt(in1_features), 1/sqrt(in1_features)) (`torch.nn.Bilinear`).
    """

    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(empty(out_features, in1_features, in2_features, dtype=dtype,
                                      device=device))
        if bias:
            self.bias = Parameter(empty(out_features, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = 1 / math.sqrt(self.weight.shape[1]) if self.weight.shape[1] else 0.0
        uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


class ChannelShuffle(Module):
    """`F.channel_shuffle(input, groups)` (`torch.nn.ChannelShuffle`)."""

    def __init__(self, groups: int):
        super().__init__()
        self.groups = groups

    def forward(self, input):
        return channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        return f"groups={self.groups}"


class PixelShuffle(Module):
    """`F.pixel_shuffle(input, upscale_factor)` (`torch.nn.PixelShuffle`)."""

    def __init__(self, upscale_factor: int):
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input):
        return pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """`F.pixel_unshuffle(input, downscale_factor)` (`torch.nn.PixelUnshuffle`)."""

    def __init__(self, downscale_factor: int):
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input):
        return pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        return f"downscale_factor={self.downscale_factor}"


class Fold(Module):
    """`F.fold` (col2im) with fixed sizes (`torch.nn.Fold`)."""

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size, self.kernel_size = output_size, kernel_size
        self.dilation, self.padding, self.stride = dilation, padding, stride

    def forward(self, input):
        return fold(input, self.output_size, self.kernel_size, self.dilation, self.padding,
                    self.stride)

    def extra_repr(self) -> str:
        return (f"output_size={self.output_size}, kernel_size={self.kernel_size}, "
                f"dilation={self.dilation}, padding={self.padding}, stride={self.stride}")


class Unfold(Module):
    """`F.unfold` (im2col) with fixed sizes (`torch.nn.Unfold`)."""

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size, self.dilation = kernel_size, dilation
        self.padding, self.stride = padding, stride

    def forward(self, input):
        return unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"padding={self.padding}, stride={self.stride}")
