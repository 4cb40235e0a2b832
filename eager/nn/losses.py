"""The loss functions of `torch.nn.functional`, composed from registry ops (no new ops).

Each loss is written the way PyTorch's Python-level functional and its ATen composites write it
(`torch/nn/functional.py`, `aten/src/ATen/native/Loss*.cpp`), so autograd and capture go
through the registry ops with no backward of their own. Where a plain composition would be
numerically worse than PyTorch's kernel, the stable form is written out: BCE-with-logits uses
`logsigmoid` (the log-sum-exp form), `binary_cross_entropy` clamps its log terms at -100, and the
`x * log(x)` of `kl_div` is 0 at x = 0 (xlogy). Shape, dtype and reduction errors are raised with
PyTorch's error types and messages. Checks of tensor *values* (class indices in range, BCE input
in [0, 1]) live in functions marked `__wick_value_check__` (they read the data on the host and
return nothing). Touches `eager` only; re-exported by `eager.nn.functional`.
"""

from __future__ import annotations

import functools
import warnings

import numpy as np

from ir import dtypes as D
from ir.meta_array import MetaArray

from ..amp.policy import autocast_function
from ..dispatch import FUNCTIONS as _F

REDUCTIONS = ("none", "mean", "sum")

_log_softmax = _F["log_softmax"]
_logsigmoid = _F["logsigmoid"]
_where = _F["where"]
_gather = _F["gather"]
_index_select = _F["index_select"]
_cross_entropy = _F["_cross_entropy"]  # (ir/ops/losses.py)


def value_check(fn):
    """Mark `fn` as a check of tensor values that returns nothing. Eager runs it; capture runs
    it eagerly as one call (`__wick_disable__`, the mark `capture.disable` sets: one graph
    break, not one per numpy line). `__wick_value_check__` tells capture it may instead skip
    it or make it a runtime assert, since nothing after it depends on its result. On meta
    tensors (no values) nothing is checked, as PyTorch's meta kernels."""
    @functools.wraps(fn)
    def check(*args, **kwargs):
        for a in args:
            if type(getattr(a, "_data", None)) is MetaArray:
                return None
        return fn(*args, **kwargs)

    check.__wick_value_check__ = True
    check.__wick_disable__ = True
    return check


# ---------------------------------------------------------------- reductions


def legacy_reduction(size_average, reduce) -> str:
    """PyTorch's `_Reduction.legacy_get_string`: the deprecated `size_average`/`reduce` pair as
    a `reduction` string (a UserWarning says so)."""
    warnings.warn("size_average and reduce args will be deprecated, please use "
                  "reduction='{}' instead.", UserWarning, stacklevel=3)
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _reduction(reduction, size_average=None, reduce=None, allowed=REDUCTIONS) -> str:
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return reduction


def _reduce(loss, reduction: str):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    return loss


def _weighted_reduce(loss, weight, reduction: str, mean_by_weight: bool):
    """The `weight=` form of the pointwise losses (PyTorch's Python-level code): mse/l1 divide
    by `weight.sum()` for "mean", huber by the number of elements."""
    if tuple(weight.shape) != tuple(loss.shape):
        raise ValueError("Weights and input must have the same size.")
    loss = loss * weight
    if reduction == "mean" and mean_by_weight:
        return loss.sum() / weight.sum()
    return _reduce(loss, reduction)


def _warn_size(input, target) -> None:
    if tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"Using a target size ({target.shape}) that is different to the input "
                      f"size ({input.shape}). This will likely lead to incorrect results due "
                      "to broadcasting. Please ensure they have the same size.", stacklevel=3)


def _floating(name: str, input) -> None:
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise NotImplementedError(f'"{name}" not implemented for \'{input.dtype.title}\'')


# ---------------------------------------------------------------- pointwise regression losses


@autocast_function("mse_loss")
def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """(input - target)**2, reduced (`torch.nn.functional.mse_loss`). Shapes broadcast (a
    UserWarning when they differ); `weight` (input's shape) scales each term and "mean" then
    divides by `weight.sum()`. ValueError for an unknown reduction; NotImplementedError for
    integer inputs."""
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    _floating("mse_loss", input)
    d = input - target
    loss = d * d
    if weight is not None:
        return _weighted_reduce(loss, weight, reduction, True)
    return _reduce(loss, reduction)


@autocast_function("l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """|input - target|, reduced (`torch.nn.functional.l1_loss`); broadcasting, `weight` and
    errors as `mse_loss`."""
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    loss = (input - target).abs()
    if weight is not None:
        return _weighted_reduce(loss, weight, reduction, True)
    return _reduce(loss, reduction)


@autocast_function("smooth_l1_loss")
def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """0.5 * d**2 / beta where |d| < beta, else |d| - 0.5 * beta, with d = input - target
    (`torch.nn.functional.smooth_l1_loss`); beta = 0 is `l1_loss`. RuntimeError for
    beta < 0."""
    _warn_size(input, target)
    reduction = _reduction(reduction, size_average, reduce)
    if beta < 0:
        raise RuntimeError("smooth_l1_loss does not support negative values for beta.")
    _floating("smooth_l1_loss", input)
    if beta == 0:
        return _reduce((input - target).abs(), reduction)
    d = input - target
    ad = d.abs()
    loss = _where(ad < beta, d * d * (0.5 / beta), ad - 0.5 * beta)
    return _reduce(loss, reduction)


@autocast_function("huber_loss")
def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """0.5 * d**2 where |d| < delta, else delta * (|d| - 0.5 * delta)
    (`torch.nn.functional.huber_loss`). RuntimeError for delta <= 0; `weight` (input's shape)
    scales each term ("mean" stays the mean over elements, as PyTorch)."""
    _warn_size(input, target)
    reduction = _reduction(reduction)
    if not delta > 0:
        raise RuntimeError("huber_loss does not support non-positive values for delta.")
    _floating("huber_loss", input)
    d = input - target
    ad = d.abs()
    loss = _where(ad < delta, d * d * 0.5, (ad - 0.5 * delta) * delta)
    if weight is not None:
        return _weighted_reduce(loss, weight, reduction, False)
    return _reduce(loss, reduction)


# ---------------------------------------------------------------- classification losses


def _class_shapes(input, target):
    """nll_loss_nd's checks of input (N, C, d1, ...) or (C,) against target (N, d1, ...);
    returns the target (0-d for a (C,) input)."""
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    tshape = tuple(target.shape)
    if input.ndim == 1:
        if len(tshape) > 1 or (len(tshape) == 1 and tshape[0] != 1):
            raise ValueError("For 1D input, 1D target must have size 1, but got target size: "
                             f"{tshape[0] if tshape else 0}")
        return target.reshape(()) if tshape else target
    n = input.shape[0]
    if (tshape[0] if tshape else 0) != n:
        raise ValueError(f"Expected input batch_size ({n}) to match target batch_size "
                         f"({tshape[0] if tshape else 0}).")
    if input.ndim == 2 and len(tshape) != 1:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
    if input.ndim == 4 and len(tshape) != 3:
        raise RuntimeError("only batches of spatial targets supported (3D tensors) but got "
                           f"targets of dimension: {len(tshape)}")
    want = (n,) + tuple(input.shape[2:])
    if tshape != want:
        raise RuntimeError(f"Expected target size {list(want)}, got {list(tshape)}")
    return target


def _class_target(input, target, weight, ignore_index: int):
    """The static checks of a class-index target (shapes, dtype, weight) as PyTorch orders
    them; returns the target (0-d for a (C,) input). The caller checks the values next (a
    direct call, so that capture breaks once, in the loss function itself)."""
    target = _class_shapes(input, target)
    if target.dtype not in (D.int64, D.uint8):
        raise RuntimeError("expected target dtype to be Long or Byte, but got "
                           f"{target.dtype.title}")
    n_classes = input.shape[0 if input.ndim == 1 else 1]
    _class_weight(weight, input, n_classes)
    return target


def _class_weight(weight, input, n_classes: int, prefix: str = ""):
    if weight is None:
        return None
    if weight.ndim != 1 or weight.shape[0] != n_classes:
        raise RuntimeError(f"{prefix}weight tensor should be defined either for all {n_classes}"
                           f" classes or no classes but got weight tensor of shape: "
                           f"{list(weight.shape)}")
    if weight.dtype is not input.dtype:
        raise RuntimeError(f"expected scalar type {input.dtype.title} but found "
                           f"{weight.dtype.title}")
    return weight


@value_check
def check_class_indices(target, n_classes: int, ignore_index: int) -> None:
    """IndexError "Target 5 is out of bounds." for a class index outside [0, C) that is not
    `ignore_index` (PyTorch's kernel check)."""
    t = target._host()
    if t.size == 0:
        return
    # (the common case in one reduction: int64 indices seen as uint64, negatives are huge)
    if np.maximum.reduce(t.view(np.uint64) if t.dtype == np.int64 else t, axis=None) \
            < n_classes:
        return
    bad = ((t < 0) | (t >= n_classes)) & (t != ignore_index)
    if bad.any():
        raise IndexError(f"Target {int(t[bad].flat[0])} is out of bounds.")


def _nll(input, target, ignore_index: int, reduction: str):
    """The registry's `nll_loss` (no class weights), on an int64 target."""
    if target.dtype is D.uint8:
        target = target.long()
    return _F["nll_loss"](input, target, ignore_index=ignore_index, reduction=reduction)


def _picked(input, target, weight, ignore_index: int, class_dim: int):
    """-input[target] per sample, weighted and zero where ignored; and the per-sample weight
    (0 where ignored; without `weight`, the bool mask of kept targets) that "mean" divides by. `input` (N, C, ...) or (C,); target (N, ...)
    checked by `_class_target`."""
    if target.dtype is D.uint8:
        target = target.long()
    keep = target != ignore_index
    safe = target * keep  # (0 where ignored: a valid index to gather)
    if class_dim == 0:  # (C,) with a 0-d target
        loss = -_gather(input, 0, safe.reshape(1)).reshape(())
    else:
        loss = -_gather(input, 1, safe.unsqueeze(1)).squeeze(1)
    if weight is not None:
        wt = _index_select(weight, 0, safe.reshape(-1)).reshape(tuple(safe.shape))
        loss = loss * wt
        w = _where(keep, wt, 0.0)
    else:
        w = keep  # (its sum, an int64 count, divides "mean" exactly as a float would)
    # `where`, not `* keep`: an ignored position may hold -inf (a masked logit), and
    # -inf * 0 would be NaN where PyTorch gives 0
    return _where(keep, loss, 0.0), w, keep


@autocast_function("nll_loss")
def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """-input[n, target[n], d...] * weight[target], reduced (`torch.nn.functional.nll_loss`).

    input: log-probabilities (N, C), (N, C, d1, ..., dk) or (C,); target: int64 (or uint8)
    class indices (N,), (N, d1, ..., dk) or 0-d. Targets equal to `ignore_index` count 0 and
    are left out of "mean", which divides by the sum of the targets' weights (NaN when every
    target is ignored). Errors as PyTorch: ValueError for a batch-size mismatch, RuntimeError
    for a wrong target shape or dtype or a weight not of shape (C,), IndexError for a class out
    of range.
    """
    reduction = _reduction(reduction, size_average, reduce)
    target = _class_target(input, target, weight, ignore_index)
    check_class_indices(target, input.shape[0 if input.ndim == 1 else 1], ignore_index)
    if weight is None:  # the registry op: one node, one kernel call
        return _nll(input, target, ignore_index, reduction)
    loss, w, _ = _picked(input, target, weight, ignore_index, 0 if input.ndim == 1 else 1)
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(loss, reduction)


@autocast_function("cross_entropy")
def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100,
                  reduce=None, reduction="mean", label_smoothing=0.0):
    """Cross entropy of unnormalised logits `input` against `target`
    (`torch.nn.functional.cross_entropy`).

    input (N, C), (N, C, d1, ..., dk) or (C,). target: class indices as for `nll_loss`
    (`nll_loss(log_softmax(input, 1))`, with `weight`, `ignore_index`), or class
    probabilities of input's shape (a floating tensor; "mean" divides by N * d1 * ... * dk).
    `label_smoothing` in [0, 1] mixes the target with the uniform distribution. RuntimeError
    for a probability target of an integer dtype, for `ignore_index` with probability targets
    and for label_smoothing outside [0, 1]; the other errors as `nll_loss`.
    """
    reduction = _reduction(reduction, size_average, reduce)
    if not 0.0 <= label_smoothing <= 1.0:
        raise RuntimeError(f"label_smoothing must be between 0.0 and 1.0. Got: "
                           f"{label_smoothing}")
    if input.ndim < 1:
        raise ValueError(f"Expected 1 or more dimensions (got {input.ndim})")
    class_dim = 0 if input.ndim == 1 else 1
    n_classes = input.shape[class_dim]
    if tuple(target.shape) == tuple(input.shape):
        return _cross_entropy_probs(_log_softmax(input, class_dim), target, weight,
                                    ignore_index, reduction, label_smoothing, class_dim)
    target = _class_target(input, target, weight, ignore_index)
    check_class_indices(target, n_classes, ignore_index)
    if weight is None and label_smoothing == 0:
        if input.ndim == 2:  # the registry's whole op: one node, one kernel call
            return _cross_entropy(input, target if target.dtype is D.int64 else target.long(),
                                  ignore_index, reduction)
        return _nll(_log_softmax(input, class_dim), target, ignore_index, reduction)
    logp = _log_softmax(input, class_dim)
    loss, w, keep = _picked(logp, target, weight, ignore_index, class_dim)
    nll = loss.sum() / w.sum() if reduction == "mean" else _reduce(loss, reduction)
    if label_smoothing == 0:
        return nll
    if weight is not None:
        logp = logp * weight.reshape((n_classes,) + (1,) * (input.ndim - class_dim - 1))
    smooth = _where(keep, -logp.sum(class_dim), 0.0)
    if reduction == "mean":
        # Normalised as nll_loss: by the targets' weights, or by the kept targets.
        smooth = smooth.sum() / (w.sum() if weight is not None else keep.sum())
    else:
        smooth = _reduce(smooth, reduction)
    return nll * (1 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _cross_entropy_probs(logp, target, weight, ignore_index, reduction, label_smoothing,
                         class_dim):
    if not target.dtype.is_floating_point:
        raise RuntimeError("Expected floating point type for target with class probabilities, "
                           f"got {target.dtype.title}")
    if ignore_index >= 0:
        raise RuntimeError("ignore_index is not supported for floating point target")
    n_classes = logp.shape[class_dim]
    weight = _class_weight(weight, logp, n_classes, "cross_entropy: ")
    if label_smoothing > 0:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    prod = logp * target
    if weight is not None:
        prod = prod * weight.reshape((n_classes,) + (1,) * (logp.ndim - class_dim - 1))
    return _reduce(-prod.sum(class_dim), reduction)


# ---------------------------------------------------------------- binary and divergence losses


@value_check
def check_probabilities(input) -> None:
    """RuntimeError unless every element is in [0, 1] (NaN fails), as PyTorch's BCE kernel."""
    x = input._host()
    if x.size and not np.all((x >= 0) & (x <= 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")


def _clamped_log(x):
    """max(log(x), -100) for x in [0, 1], with a finite gradient at x = 0 (the `where` keeps
    log's 1/x off the zeros)."""
    pos = x > 0
    return _where(pos, _F["log"](_where(pos, x, 1.0)), -100.0).clamp_min(-100.0)


@autocast_function("binary_cross_entropy")
def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """-w * (t * log(x) + (1 - t) * log(1 - x)), each log clamped at -100
    (`torch.nn.functional.binary_cross_entropy`). input: probabilities in [0, 1]; target: same
    shape and dtype; weight broadcasts to target's shape. ValueError for a target of another
    shape; RuntimeError for another dtype or inputs outside [0, 1]."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Using a target size ({target.shape}) that is different to the input "
                         f"size ({input.shape}) is deprecated. Please ensure they have the "
                         "same size.")
    _floating("binary_cross_entropy", input)
    if target.dtype is not input.dtype:
        raise RuntimeError(f"Found dtype {target.dtype.title} but expected {input.dtype.title}")
    if weight is not None:
        shape = tuple(np.broadcast_shapes(tuple(target.shape), tuple(weight.shape)))
        if shape != tuple(target.shape):
            raise RuntimeError(f"output with shape {list(target.shape)} doesn't match the "
                               f"broadcast shape {list(shape)}")
    check_probabilities(input)
    log_x = _clamped_log(input)
    log_1mx = _clamped_log(1 - input)
    loss = (target - 1) * log_1mx - target * log_x
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


@autocast_function("binary_cross_entropy_with_logits")
def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None,
                                     reduce=None, reduction="mean", pos_weight=None):
    """binary_cross_entropy(sigmoid(input), target) in the stable form
    (1 - t) * x - (1 + (pos_weight - 1) * t) * logsigmoid(x)
    (`torch.nn.functional.binary_cross_entropy_with_logits`). `weight` broadcasts over the
    loss; `pos_weight` over the classes (last dim). ValueError for a target of another shape;
    RuntimeError for an integer target."""
    reduction = _reduction(reduction, size_average, reduce)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"Target size ({target.shape}) must be the same as input size "
                         f"({input.shape})")
    _floating("binary_cross_entropy_with_logits", input)
    if not target.dtype.is_floating_point:
        raise RuntimeError(f"result type {input.dtype.title} can't be cast to the desired "
                           f"output type {target.dtype.title}")
    log_sig = _logsigmoid(input)
    if pos_weight is not None:
        log_sig = log_sig * ((pos_weight - 1) * target + 1)
    loss = (1 - target) * input - log_sig
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction)


def _xlogx(t):
    """t * log(t), 0 at t = 0 (NaN for t < 0, as `torch.xlogy`)."""
    zero = t == 0
    return _where(zero, 0.0, t * _F["log"](_where(zero, 1.0, t)))


@autocast_function("kl_div")
def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """Pointwise KL divergence target * (log(target) - input), input being log-probabilities
    (`torch.nn.functional.kl_div`); with `log_target` the target is a log-probability too:
    exp(target) * (target - input). reduction: "none", "mean" (over every element: a
    UserWarning says "batchmean" is the true KL), "batchmean" (sum / batch size) or "sum"."""
    if size_average is not None or reduce is not None:
        reduction = legacy_reduction(size_average, reduce)
    elif reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the "
                      "support size.'batchmean' divides only by the batch size, and aligns "
                      "with the KL div math definition.'mean' will be changed to behave the "
                      "same as 'batchmean' in the next major release.", stacklevel=2)
    reduction = _reduction(reduction, allowed=("none", "mean", "sum", "batchmean"))
    if log_target:
        loss = _F["exp"](target) * (target - input)
    else:
        loss = _xlogx(target) - target * input
    if reduction == "batchmean":
        return loss.sum() / input.shape[0] if input.ndim else loss.sum()
    return _reduce(loss, reduction)


__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cross_entropy",
           "huber_loss", "kl_div", "l1_loss", "mse_loss", "nll_loss", "smooth_l1_loss"]
