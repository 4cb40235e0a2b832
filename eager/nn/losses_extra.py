"""The remaining losses of `torch.nn.functional` (margin, embedding, Poisson/Gaussian NLL, CTC,
linear cross entropy) and `gumbel_softmax`, composed from registry ops.

Each is written as PyTorch writes it: the Python-level ones after `torch/nn/functional.py`,
the ATen composites after `aten/src/ATen/native/Loss.cpp` (margin ranking, hinge embedding,
cosine embedding, soft margin, Poisson NLL, triplet margin) and the CPU kernels'
formulas (`LossMultiMargin.cpp`, `LossMultiLabelMargin.cpp`), so autograd goes through the
registry ops. Where a kernel's backward takes no gradient at a hinge's corner (z > 0 strictly)
the composition uses `where(z > 0, z, 0)`; where ATen clamps with `clamp_min` (gradient at the
corner) so does this file. The CTC loss's recursions are registry ops (`ir/ops/ctc.py`); the
extra exp(log_probs) term of PyTorch's CTC gradient is added here. Errors have PyTorch's types
and messages. Touches `eager` only; re-exported by `eager.nn.functional`.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from ir import dtypes as D

from ..amp.policy import autocast_function
from ..creation import arange, as_tensor, empty_like, ones_like, zeros_like
from ..dispatch import FUNCTIONS as _F
from ..grad_mode import no_grad
from ..tensor import Tensor
from .distance import pairwise_distance
from .losses import _reduce, _reduction, cross_entropy, value_check

_where = _F["where"]
_logsigmoid = _F["logsigmoid"]
_gather = _F["gather"]


def _same_ndim(name, *tensors):
    if len({t.ndim for t in tensors}) != 1:
        sizes = ", ".join(f"{n}: {t.shape}" for n, t in zip(("input1", "input2", "target"),
                                                          tensors))
        raise RuntimeError(f"{name} : All input tensors should have same dimension but got "
                           f"sizes: {sizes} ")


def _hinge(z):
    """max(z, 0) with no gradient at z == 0 (the kernels' `if (z > 0)`)."""
    return _where(z > 0, z, 0.0)


# ---------------------------------------------------------------- regression-style losses


@value_check
def _check_var(var) -> None:
    """ValueError for a negative variance (PyTorch's check, on the host)."""
    if (var._host() < 0).any():
        raise ValueError("var has negative entry/entries")


def gaussian_nll_loss(input, target, var, full=False, eps=1e-6, reduction="mean"):
    """0.5 * (log(max(var, eps)) + (input - target)**2 / max(var, eps)) (+ 0.5 log(2 pi) with
    `full`), reduced (`torch.nn.functional.gaussian_nll_loss`). var: input's shape, input's
    shape without the last dim, broadcastable with one mismatched size, or a number. The clamp
    at eps carries no gradient (PyTorch clamps under no_grad). ValueError for negative var,
    a var of incorrect size or an unknown reduction."""
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("var has negative entry/entries")
        var = float(var) * ones_like(input)
    else:
        _check_var(var)
    ishape, vshape = tuple(input.shape), tuple(var.shape)
    if vshape != ishape:
        if ishape[:-1] == vshape:
            var = var.unsqueeze(-1)
        elif not (input.ndim == var.ndim and
                  sum(y for x, y in zip(ishape, vshape) if x != y) == 1):
            raise ValueError("var is of incorrect size")
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    var = var + (var.clamp_min(eps) - var).detach()
    d = input - target
    loss = 0.5 * (_F["log"](var) + d * d / var)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _reduce(loss, reduction)


@autocast_function("poisson_nll_loss")
def poisson_nll_loss(input, target, log_input=True, full=False, size_average=None, eps=1e-8,
                     reduce=None, reduction="mean"):
    """exp(input) - target * input (`log_input`), else input - target * log(input + eps); with
    `full` the Stirling term t log t - t + 0.5 log(2 pi t) where t > 1
    (`torch.nn.functional.poisson_nll_loss`). ValueError for an unknown reduction."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not a valid value for reduction")
    if log_input:
        loss = _F["exp"](input) - target * input
    else:
        loss = input - target * _F["log"](input + eps)
    if full:
        log = _F["log"]
        stirling = target * log(target) - target + 0.5 * log(2 * math.pi * target)
        loss = loss + _where(target <= 1, 0.0, stirling)
    return _reduce(loss, reduction)


@autocast_function("soft_margin_loss")
def soft_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """log(1 + exp(-target * input)), reduced (`torch.nn.functional.soft_margin_loss`); target
    +1/-1 of input's shape (broadcasting)."""
    reduction = _reduction(reduction, size_average, reduce)
    return _reduce(_F["log1p"](_F["exp"](-(input * target))), reduction)


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction="mean"):
    """-(t log sigmoid(x) + (1 - t) log sigmoid(-x)), times `weight`, averaged over the
    classes (last dim), then reduced over the samples
    (`torch.nn.functional.multilabel_soft_margin_loss`). input, target (N, C) or (C,)."""
    if size_average is not None or reduce is not None:
        reduction = _reduction(reduction, size_average, reduce)
    loss = -(target * _logsigmoid(input) + (1 - target) * _logsigmoid(-input))
    if weight is not None:
        loss = loss * weight
    class_dim = input.ndim - 1
    loss = loss.sum(class_dim) / input.shape[class_dim]
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(reduction + " is not valid")
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- margin and embedding losses


@autocast_function("margin_ranking_loss")
def margin_ranking_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                        reduction="mean"):
    """max(0, -target * (input1 - input2) + margin), reduced
    (`torch.nn.functional.margin_ranking_loss`); operands of one ndim, broadcasting.
    RuntimeError for different ndims."""
    reduction = _reduction(reduction, size_average, reduce)
    _same_ndim("margin_ranking_loss", input1, input2, target)
    return _reduce((-target * (input1 - input2) + margin).clamp_min(0), reduction)


@autocast_function("hinge_embedding_loss")
def hinge_embedding_loss(input, target, margin=1.0, size_average=None, reduce=None,
                         reduction="mean"):
    """input where target != -1, plus max(0, margin - input) where target != 1, reduced
    (`torch.nn.functional.hinge_embedding_loss`); target of +1/-1, broadcasting."""
    reduction = _reduction(reduction, size_average, reduce)
    out_margin = _where(target != 1, (margin - input).clamp_min(0), 0.0)
    out_self = _where(target != -1, input, 0.0)
    return _reduce(out_margin + out_self, reduction)


@autocast_function("cosine_embedding_loss")
def cosine_embedding_loss(input1, input2, target, margin=0, size_average=None, reduce=None,
                          reduction="mean"):
    """1 - cos(x1, x2) where target == 1, max(0, cos(x1, x2) - margin) where target == -1
    (`torch.nn.functional.cosine_embedding_loss`); cos = <x1, x2> / sqrt((|x1|^2 + 1e-12)
    (|x2|^2 + 1e-12)). input1, input2 (N, D) with target (N,), or (D,) with a 0-d target;
    RuntimeError otherwise."""
    reduction = _reduction(reduction, size_average, reduce)
    td = target.ndim
    if td not in (0, 1):
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    want = 2 if td == 1 else 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"{td}D target tensor expects {want}D input tensors, but found "
                           f"inputs with sizes {list(input1.shape)} and {list(input2.shape)}.")
    eps = 1e-12
    prod = (input1 * input2).sum(td)
    m1 = (input1 * input1).sum(td) + eps
    m2 = (input2 * input2).sum(td) + eps
    cos = prod / _F["sqrt"](m1 * m2)
    pos = _where(target == 1, 1 - cos, 0.0)
    neg = _where(target == -1, (cos - margin).clamp_min(0), 0.0)
    return _reduce(pos + neg, reduction)


def _class_target_1d(name, input, target):
    """The checks of multi_margin_loss on input (N, C)/(C,) and target (N,)/()/(1,)."""
    if input.ndim > 2 or input.ndim == 0 or input.numel() == 0:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    n = input.shape[0] if input.ndim == 2 else 1
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.title}")
    if target.numel() != n or target.ndim > 1:
        raise RuntimeError(f"{name}: target tensor should be 1-D with size equal to the "
                           f"number of input samples (batch size). Expected target size "
                           f"[{n}], but got {list(target.shape)}. Input has shape "
                           f"{list(input.shape)}.")


@value_check
def _check_range(target, lo: int, hi: int, message: str) -> None:
    t = target._host()
    if t.size and (t.min() < lo or t.max() >= hi):
        raise RuntimeError(message)


@autocast_function("multi_margin_loss")
def multi_margin_loss(input, target, p=1, margin=1.0, weight=None, size_average=None,
                      reduce=None, reduction="mean"):
    """sum over i != y of max(0, margin - x[y] + x[i])**p * weight[y], divided by C, reduced
    over the samples (`torch.nn.functional.multi_margin_loss`). input (N, C) or (C,); target
    int64 (N,) or 0-d. ValueError for p not 1 or 2 or a weight not 1-D; RuntimeError for
    shapes, a target out of range or a weight not of size C."""
    reduction = _reduction(reduction, size_average, reduce)
    if p not in (1, 2):
        raise ValueError("only p == 1 and p == 2 supported")
    if weight is not None and weight.ndim != 1:
        raise ValueError("weight must be one-dimensional")
    _class_target_1d("multi_margin_loss", input, target)
    c = input.shape[-1]
    if weight is not None and weight.numel() != c:
        raise RuntimeError(f"inconsistent weight size, expected {c} but got "
                           f"{list(weight.shape)}")
    _check_range(target, 0, c, "target out of range")
    x = input if input.ndim == 2 else input.reshape(1, c)
    y = target.reshape(-1, 1)
    z = margin - _gather(x, 1, y) + x
    h = _hinge(z)
    if p == 2:
        h = h * h
    if weight is not None:
        h = h * _F["index_select"](weight, 0, y.reshape(-1)).reshape(-1, 1)
    other = arange(c, device=input.device) != y  # i != y
    loss = _where(other, h, 0.0).sum(1) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@autocast_function("multilabel_margin_loss")
def multilabel_margin_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """sum over the target classes j (target's entries before the first -1) and the other
    classes i of max(0, 1 - (x[j] - x[i])), divided by C, reduced over the samples
    (`torch.nn.functional.multilabel_margin_loss`). input (N, C) or (C,); target int64 of
    input's shape. RuntimeError for shapes, dtypes or targets outside [-1, C)."""
    reduction = _reduction(reduction, size_average, reduce)
    if input.ndim > 2 or input.ndim == 0 or input.numel() == 0:
        raise RuntimeError("Expected non-empty vector or matrix with optional 0-dim batch "
                           f"size, but got: {list(input.shape)}")
    if tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"inconsistent target size: {list(target.shape)} for input of "
                           f"size: {list(input.shape)}")
    if target.dtype is not D.int64:
        raise RuntimeError(f"expected scalar type Long but found {target.dtype.title}")
    c = input.shape[-1]
    _check_range(target, -1, c, "argument #2 'target' is out of range")
    x = input if input.ndim == 2 else input.reshape(1, c)
    t = target.reshape(x.shape)
    listed = _F["cumprod"](t != -1, 1) > 0  # the entries before the first -1
    safe = _where(listed, t, 0)
    is_target = _F["scatter_add"](zeros_like(t), 1, safe, listed.long()) > 0
    z = 1 - _gather(x, 1, safe).unsqueeze(2) + x.unsqueeze(1)  # (N, K, C)
    keep = listed.unsqueeze(2) & ~is_target.unsqueeze(1)
    loss = _where(keep, _hinge(z), 0.0).sum((1, 2)) / c
    if input.ndim == 1:
        loss = loss.reshape(())
    return _reduce(loss, reduction)


@autocast_function("triplet_margin_loss")
def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False,
                        size_average=None, reduce=None, reduction="mean"):
    """max(d(a, p) - d(a, n) + margin, 0) with d = pairwise_distance(., ., p, eps); `swap` uses
    min(d(a, n), d(p, n)) (`torch.nn.functional.triplet_margin_loss`). ValueError for
    margin <= 0; RuntimeError for operands of different ndims."""
    reduction = _reduction(reduction, size_average, reduce)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet(anchor, positive, negative,
                    lambda a, b: pairwise_distance(a, b, p, eps), margin, swap, reduction)


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin=1.0, swap=False, reduction="mean"):
    """triplet_margin_loss with any `distance_function(x, y)` (default pairwise_distance)
    (`torch.nn.functional.triplet_margin_with_distance_loss`). ValueError for an unknown
    reduction or margin <= 0; RuntimeError for operands of different ndims."""
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    return _triplet(anchor, positive, negative, distance_function or pairwise_distance,
                    margin, swap, reduction)


def _triplet(anchor, positive, negative, dist, margin, swap, reduction):
    a, p, n = anchor.ndim, positive.ndim, negative.ndim
    if not a == p == n:
        raise RuntimeError("The anchor, positive, and negative tensors are expected to have "
                           f"the same number of dimensions, but got: anchor {a}D, positive "
                           f"{p}D, and negative {n}D inputs")
    d_pos, d_neg = dist(anchor, positive), dist(anchor, negative)
    if swap:
        d_neg = _F["minimum"](d_neg, dist(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


# ---------------------------------------------------------------- CTC


def _lengths(v, device, n, name):
    """input_lengths / target_lengths: a tensor or a sequence of ints, as int64 (n,)."""
    t = v if isinstance(v, Tensor) else as_tensor(v if isinstance(v, (list, tuple)) else [v],
                                                  dtype=D.int64, device=device)
    if t.dtype.is_floating_point or t.dtype.is_complex:
        raise RuntimeError(f"{name} must be integral")
    t = t.long().reshape(-1)
    if t.shape[0] != n:
        raise RuntimeError(f"{name} must be of size batch_size")
    return t


@autocast_function("ctc_loss")
def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean",
             zero_infinity=False):
    """The Connectionist Temporal Classification loss (`torch.nn.functional.ctc_loss`).

    log_probs (T, N, C) or unbatched (T, C): log-probabilities (log_softmax output); targets
    (N, S) padded or (sum(target_lengths),) concatenated class indices (blank excluded);
    input_lengths, target_lengths: (N,) int tensors or sequences of ints. Per sample, the
    negative log likelihood of the target over all alignments (inf when none fits, 0 with
    `zero_infinity`, which also zeroes its gradient). "mean" divides each by its target length
    (at least 1) and averages. The gradient is PyTorch's: exp(log_probs) - P(alignment at
    (t, c)), times the loss's gradient, for t < input_length (0 after). RuntimeError for
    blank outside [0, C), lengths of the wrong size or out of range, targets too short;
    ValueError for an unknown reduction.
    """
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    batched = log_probs.ndim == 3
    if log_probs.ndim == 2:  # targets stay 1-D: the concatenated form, as PyTorch's
        log_probs = log_probs.unsqueeze(1)
    if not log_probs.dtype.is_floating_point:
        raise NotImplementedError(f'"ctc_loss_cpu" not implemented for '
                                  f"'{log_probs.dtype.title}'")
    t_max, n, _ = log_probs.shape
    il = _lengths(input_lengths, log_probs.device, n, "input_lengths")
    tl = _lengths(target_lengths, log_probs.device, n, "target_lengths")
    if targets.dtype.is_floating_point:
        targets = targets.long()
    nll = _F["_ctc_loss"](log_probs, targets, il, tl, blank)
    # PyTorch's gradient adds exp(log_probs) over t < input_length: a zero-valued term
    live = (arange(t_max, device=log_probs.device).unsqueeze(1) < il).unsqueeze(2)
    mass = _where(live, _F["exp"](log_probs), 0.0).sum((0, 2))
    loss = nll + (mass - mass.detach())
    if zero_infinity:
        loss = _where(nll == math.inf, 0.0, loss)
    if not batched:
        loss, tl = loss.reshape(()), tl.reshape(())
    if reduction == "mean":
        return (loss / tl.clamp_min(1).to(loss.dtype)).mean()
    return loss.sum() if reduction == "sum" else loss


# ---------------------------------------------------------------- gumbel softmax


def gumbel_softmax(logits, tau=1, hard=False, eps=1e-10, dim=-1):
    """softmax((logits + g) / tau) with g ~ Gumbel(0, 1) drawn from eager's generator
    (`torch.nn.functional.gumbel_softmax`); `hard` returns the one-hot argmax with the soft
    sample's gradient (straight-through). `eps` is deprecated (a warning when set)."""
    if eps != 1e-10:
        warnings.warn("`eps` parameter is deprecated and has no effect.", stacklevel=2)
    with no_grad():
        gumbels = -_F["log"](empty_like(logits).exponential_())
    y_soft = _F["softmax"]((logits + gumbels) / tau, dim)
    if not hard:
        return y_soft
    index = y_soft.max(dim, keepdim=True)[1]
    y_hard = zeros_like(logits).scatter_(dim, index, 1.0)
    return y_hard - y_soft.detach() + y_soft


# ---------------------------------------------------------------- linear cross entropy


@dataclass(slots=True, frozen=True)
class LinearCrossEntropyOptions:
    """`torch.nn.LinearCrossEntropyOptions`: the chunking options of PyTorch's memory-saving
    path of `linear_cross_entropy`. wick accepts them and runs the reference path (the same
    numbers: chunking only bounds PyTorch's peak memory)."""

    allow_retain_graph: bool = False
    batch_chunk_size: int | None = None
    chunking_method: str | None = "auto"
    acc_policy: str = "auto"
    acc_dtype: object = None


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction="mean", ignore_index=None, label_smoothing=0.0,
                         options=None):
    """cross_entropy(linear(input, linear_weight, linear_bias), target, ...)
    (`torch.nn.functional.linear_cross_entropy`, its reference path). input (in,) or (N, in);
    linear_weight (C, in) or (C, d1, ..., dK, in) for a K-dimensional loss (batched input
    only); linear_bias (C, d1, ..., dK). `ignore_index` None means -100 for class targets and
    is an error with probability targets. RuntimeError for mismatched shapes."""
    if input.ndim < 1 or input.ndim > 2:
        raise RuntimeError(f"expected input with dimensionality 1 or 2, got {input.ndim}")
    if linear_weight.ndim < 2:
        raise RuntimeError("expected linear_weight with dimensionality at least 2, got "
                           f"{linear_weight.ndim}")
    batches, in_features = tuple(input.shape[:-1]), input.shape[-1]
    if in_features != linear_weight.shape[-1]:
        raise RuntimeError("expected equal input and linear_weight last dimensions "
                           f"(in_features), got {in_features} and {linear_weight.shape[-1]}, "
                           "respectively")
    classes, out_features = linear_weight.shape[0], tuple(linear_weight.shape[1:-1])
    if linear_bias is not None and tuple(linear_bias.shape) != (classes,) + out_features:
        raise RuntimeError(f"expected linear_bias shape {(classes,) + out_features}, got "
                           f"{tuple(linear_bias.shape)}")
    if out_features and not batches:
        raise RuntimeError(f"K-dimensional loss defined by linear_weight shape "
                           f"{tuple(linear_weight.shape)} requires batched input, "
                           f"(N, {in_features}), got unbatched input with shape "
                           f"{tuple(input.shape)}")
    logits_shape = batches + (classes,) + out_features
    if tuple(target.shape) == logits_shape and ignore_index is not None:
        raise RuntimeError("ignore_index cannot be specified when target contains "
                           "probabilities")
    ignore_index = -100 if ignore_index is None else ignore_index
    rows = classes * math.prod(out_features)
    w = linear_weight.reshape(rows, in_features)
    b = linear_bias.reshape(rows) if linear_bias is not None else None
    logits = _F["linear"](input, w, b).reshape(logits_shape)
    return cross_entropy(logits, target, weight=weight, reduction=reduction,
                         ignore_index=ignore_index, label_smoothing=label_smoothing)


__all__ = ["cosine_embedding_loss", "ctc_loss", "gaussian_nll_loss", "gumbel_softmax",
           "hinge_embedding_loss", "linear_cross_entropy", "margin_ranking_loss",
           "multi_margin_loss", "multilabel_margin_loss", "multilabel_soft_margin_loss",
           "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss",
           "triplet_margin_with_distance_loss"]
