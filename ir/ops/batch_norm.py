"""Batch normalization with the batch's statistics as one composite that eager runs whole:
`_batch_norm_train(input, weight, bias, eps)`, the training-mode body of
`torch.nn.functional.batch_norm` without the running-statistics update (which
`eager/nn/conv.py` does under `no_grad`).

Declared by its decomposition (mean, centered, mean of squares, rsqrt, the per-channel affine:
the registry ops that capture, codegen and compiled autograd see), plus eager's kernel
(`eager_impl`: the same formula in one call, its reductions as einsum sums over the batch and
spatial dims, equal to the decomposition's up to rounding) and one backward rule for the whole
(`eager_backward`, PyTorch's `native_batch_norm_backward` in training: with xhat = (x - mean) *
rstd, dx = w * rstd * (g - mean(g) - xhat * mean(g * xhat)), dweight = sum(g * xhat), dbias =
sum(g)), so that eager records one autograd node instead of about twenty, and compiled
backward graphs run three reductions instead of six. `_batch_stats(input, correction)` is the
statistics alone (mean and variance per channel) for the running-statistics update, a
composite too (fused in compiled graphs, one einsum call in eager). Imports nothing outside `ir`.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from .. import dtypes as D
from .indexing import arr, declare


def _dims(x) -> tuple:
    """The reduced dims (every one but the channels, dim 1)."""
    return (0,) + tuple(range(2, len(x.shape)))


def _channel_shape(x) -> tuple:
    return (x.shape[1],) + (1,) * (len(x.shape) - 2)


def _count(x) -> int:
    return math.prod(x.shape) // x.shape[1]


def _affine(F, out, x, weight, bias):
    if weight is not None:
        out = F.mul(out, F.reshape(weight, _channel_shape(x)))
    return out if bias is None else F.add(out, F.reshape(bias, _channel_shape(x)))


def _bn_decomp(F, x, weight=None, bias=None, eps=1e-5):
    dims = _dims(x)
    centered = F.sub(x, F.mean(x, dims, True))
    var = F.mean(F.mul(centered, centered), dims, True)
    return _affine(F, F.mul(centered, F.rsqrt(F.add(var, eps))), x, weight, bias)


def _bn_whole(dts, x) -> bool:
    """Where eager runs `_batch_norm_train` whole: every operand float32, or every one float64
    (`dts`: their numpy dtypes), at least two dims and a value to normalize per channel."""
    return (dts[0].type in (np.float32, np.float64) and all(d == dts[0] for d in dts)
            and len(x.shape) >= 2 and math.prod(x.shape) != 0)


def _bn_eager(xp, x, weight=None, bias=None, eps=1e-5):
    """The decomposition's formula in one call on float32/float64 numpy arrays of one dtype
    (the per-channel sums as einsum over an (N, C, L) view, the affine folded into one scale);
    None otherwise."""
    dts = (x.dtype,) + tuple(t.dtype for t in (weight, bias) if t is not None)
    if xp is not np or not _bn_whole(dts, x):
        return None
    n, c = x.shape[:2]
    x3 = x.reshape(n, c, -1)
    count = _count(x)
    with np.errstate(all="ignore"):
        out = x3 - (np.einsum("ncl->c", x3) / x.dtype.type(count))[:, None]
        var = np.einsum("ncl,ncl->c", out, out) / x.dtype.type(count)
        scale = 1 / np.sqrt(var + x.dtype.type(eps))
        if weight is not None:
            scale *= weight
        out *= scale[:, None]
        if bias is not None:
            out += bias[:, None]
    return out.reshape(x.shape)


def _bn_backward(F, g, out, x, weight=None, bias=None, eps=1e-5):
    """PyTorch's training-mode batch norm backward, with per-channel (C, 1, ...) factors:
    s1 = sum(g), s2 = sum(g * (x - mean)); dx = k (g - s1 / n) - (x - mean) k rstd^2 s2 / n
    with k = w rstd; dweight = s2 rstd; dbias = s1."""
    dims, shape, n = _dims(x), _channel_shape(x), _count(x)
    centered = F.sub(x, F.mean(x, dims, True))
    rstd = F.rsqrt(F.add(F.mean(F.mul(centered, centered), dims, True), eps))  # (1, C, 1...)
    s1 = F.sum(g, dims, True)
    s2 = F.sum(F.mul(g, centered), dims, True)
    k = rstd if weight is None else F.mul(rstd, F.reshape(weight, shape))
    dx = F.sub(F.mul(F.sub(g, F.div(s1, n)), k),
               F.mul(centered, F.div(F.mul(F.mul(k, F.mul(rstd, rstd)), s2), n)))
    dw = None if weight is None else F.reshape(F.mul(s2, rstd), (x.shape[1],))
    db = None if bias is None else F.reshape(s1, (x.shape[1],))
    return dx, dw, db


def _bn_ref(x, weight=None, bias=None, eps=1e-5):
    dims = (0,) + tuple(range(2, x.ndim))
    shape = (x.shape[1],) + (1,) * (x.ndim - 2)
    x64 = x.astype(np.float64)
    with warnings.catch_warnings():  # (an empty batch: NaN statistics, an empty result)
        warnings.simplefilter("ignore", RuntimeWarning)
        out = (x64 - x64.mean(axis=dims, keepdims=True)) / np.sqrt(
            x64.var(axis=dims, keepdims=True) + eps)
    out = out if weight is None else out * weight.reshape(shape)
    out = out if bias is None else out + bias.reshape(shape)
    return out.astype(np.result_type(*(a for a in (x, weight, bias) if a is not None)))


def _bn_samples(rng, dt):
    yield (arr(rng, (4, 3, 5, 2), dt), arr(rng, (3,), dt), arr(rng, (3,), dt)), {}
    yield (arr(rng, (6, 4), dt), arr(rng, (4,), dt)), {"eps": 1e-3}
    yield (arr(rng, (2, 3, 7), dt),), {}
    yield (arr(rng, (0, 3), dt), arr(rng, (3,), dt)), {}  # empty: the decomposition runs


# `_batch_norm_train(input, weight=None, bias=None, eps=1e-5)`: input (N, C, *) normalized per
# channel by the batch's mean and biased variance, then * weight (C,) + bias (C,)
declare(
    "_batch_norm_train", "composite", "input, weight=None, bias=None, eps=1e-05", 3,
    scalar_ok=False, method=False, decomp=_bn_decomp, eager_impl=_bn_eager,
    eager_impl_rounding=True, eager_backward=_bn_backward, node_name="NativeBatchNormBackward0",
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _bn_whole(tuple(m.dtype.np for m in metas), metas[0]),
    ref=_bn_ref, sample_inputs=_bn_samples, test_dtypes=(D.float32, D.float64),
)


# ---------------------------------------------------------------- the statistics alone


def _stats_decomp(F, x, correction=1):
    # the nodes of `_bn_decomp`'s statistics, the same calls on the same values (mean, x -
    # mean, its square's mean), so that common-subexpression elimination after decomposition
    # computes a training batch norm's statistics once for both; then the correction's scale
    dims, count = _dims(x), _count(x)
    mean = F.mean(x, dims, True)
    centered = F.sub(x, mean)
    biased = F.mean(F.mul(centered, centered), dims, True)
    var = F.mul(biased, count / (count - correction)) if count > correction else \
        F.div(F.mul(biased, count), 0)  # (0 / 0: NaN, c / 0: inf, as the sum's division)
    return F.cat((F.reshape(mean, (1, x.shape[1])), F.reshape(var, (1, x.shape[1]))), 0)


def _stats_eager(xp, x, correction=1):
    """The decomposition's formula in one call (einsum sums over an (N, C, L) view) on
    float32/float64 numpy arrays; None otherwise."""
    if xp is not np or not _bn_whole((x.dtype,), x):
        return None
    n, c = x.shape[:2]
    x3 = x.reshape(n, c, -1)
    count = _count(x)
    with np.errstate(all="ignore"):  # (one value per channel and correction 1: inf / NaN)
        mean = np.einsum("ncl->c", x3) / x.dtype.type(count)
        centered = x3 - mean[:, None]
        var = np.einsum("ncl,ncl->c", centered, centered) / x.dtype.type(
            max(count - correction, 0))
    return np.stack([mean, var])


def _stats_ref(x, correction=1):
    dims = (0,) + tuple(range(2, x.ndim))
    x64 = x.astype(np.float64)
    return np.stack([x64.mean(axis=dims), x64.var(axis=dims, ddof=correction)]).astype(x.dtype)


# `_batch_stats(input, correction=1)`: input (N, C, *) -> (2, C): each channel's mean over the
# batch and spatial dims and its variance with `correction` (1: unbiased, PyTorch's running
# variance). A composite: compiled graphs fuse its reductions, eager runs it whole
declare(
    "_batch_stats", "composite", "input, correction=1", 1, method=False, scalar_ok=False,
    decomp=_stats_decomp, eager_impl=_stats_eager, eager_impl_rounding=True, ref=_stats_ref,
    sample_inputs=lambda rng, dt: iter([((arr(rng, (4, 3, 5), dt),), {}),
                                        ((arr(rng, (6, 2), dt),), {"correction": 0})]),
    test_dtypes=(D.float32, D.float64),
)
