"""`_cross_entropy`: the common case of `torch.nn.functional.cross_entropy` as one composite
that eager runs whole - logits (N, C), class indices (N,), no class weights, no label
smoothing.

Declared by its decomposition, `nll_loss(log_softmax(input, 1), target, ignore_index,
reduction)` (the registry ops capture, codegen and compiled autograd see), plus eager's kernel
(`eager_impl`: the decomposition's kernels in one call on float32/float64 arrays, its exact
results, without the full (N, C) log-probabilities: only the picked entries are subtracted)
and one backward rule for the whole (`eager_backward`: PyTorch's fused formula, softmax(x)
minus the one-hot target, scaled by the incoming gradient), so eager records one autograd
node instead of two. The target's values are checked once, by the caller
(`eager.nn.functional.cross_entropy`'s `check_class_indices`, PyTorch's "Target 5 is out of
bounds."); the kernel's own indexing keeps every read in bounds. Imports nothing outside `ir`.
"""

from __future__ import annotations

import numpy as np

from ..opdef import OpDef, register
from .elementwise import FLOATS
from .indexing import arr, check_index, ints

_REDUCTIONS = ("none", "mean", "sum")


def _ce_attrs(inputs, attrs):
    x, t = inputs[0], inputs[1]
    check_index("cross_entropy", t, "target")
    if attrs["reduction"] not in _REDUCTIONS:
        raise ValueError(f"{attrs['reduction']} is not a valid value for reduction")
    if x.ndim != 2 or tuple(t.shape) != (x.shape[0],):
        raise RuntimeError(f"Expected input (N, C) and target (N,), got {list(x.shape)} and "
                           f"{list(t.shape)}")
    return attrs


def _ce_grad_attrs(inputs, attrs):
    g, x, t = inputs
    _ce_attrs((x, t), attrs)
    want = (x.shape[0],) if attrs["reduction"] == "none" else ()
    if tuple(g.shape) != want:
        raise RuntimeError(f"Expected grad of shape {list(want)}, got {list(g.shape)}")
    return attrs


def _ce_decomp(F, x, target, ignore_index=-100, reduction="mean"):
    return F.nll_loss(F.log_softmax(x, 1), target, ignore_index=ignore_index,
                      reduction=reduction)


def _ce_whole(np_type, size: int) -> bool:
    """Where eager runs `_cross_entropy` (and its backward) whole: float32/float64 logits
    (their numpy scalar type), not empty."""
    return np_type in (np.float32, np.float64) and size != 0


def _shifted(x):
    """x - amax(x, 1, keepdims=True) on (N, C), the row maximum read at argmax (its exact value,
    NaN where a row holds one; numpy's maximum.reduce along a short last axis is 3x slower)."""
    rows = np.arange(x.shape[0])
    return x - x[rows, x.argmax(1)].reshape(-1, 1), rows


def _kept(target, ignore_index: int, n_classes: int):
    """The kept targets' mask, or None when every target is kept (all in [0, C): one
    reduction over the int64 indices seen as uint64, and `ignore_index` outside [0, C))."""
    if target.dtype == np.int64 and not 0 <= ignore_index < n_classes and \
            np.maximum.reduce(target.view(np.uint64), axis=None) < n_classes:
        return None
    return target != ignore_index


def _ce_eager(xp, x, target, ignore_index=-100, reduction="mean"):
    """log_softmax's and nll_loss's eager kernels in one call on float32/float64 numpy arrays
    (their exact results: the picked log-probabilities are the same subtractions); None
    otherwise."""
    if xp is not np or not _ce_whole(x.dtype.type, x.size):
        return None
    # (IEEE results without warnings: ir.execute's warnings filter, as every ir kernel)
    shifted, rows = _shifted(x)
    lse = np.log(np.add.reduce(np.exp(shifted), axis=1))
    keep = _kept(target, ignore_index, x.shape[1])
    if keep is None:
        loss = -(shifted[rows, target] - lse)
        count = x.shape[0]
    else:
        loss = np.where(keep, -(shifted[rows, target * keep] - lse), x.dtype.type(0))
        count = np.add.reduce(keep, axis=None)
    if reduction == "none":
        return loss
    total = np.asarray(np.add.reduce(loss, axis=None))
    if reduction == "sum":
        return total
    return np.asarray(total / x.dtype.type(count))


def _ce_backward(F, g, out, x, target, ignore_index=-100, reduction="mean"):
    """The whole op's gradient: `_cross_entropy_backward` (no gradient for the target)."""
    return F._cross_entropy_backward(g, x, target, ignore_index=ignore_index,
                                     reduction=reduction), None


def _ce_grad_decomp(F, g, x, target, ignore_index=-100, reduction="mean"):
    """PyTorch's fused rule: w * softmax(x) - w * onehot(target) per row, w the row's incoming
    gradient (divided by the kept count for "mean"), 0 where the target is ignored."""
    keep = F.ne(target, ignore_index)
    if reduction == "mean":
        g = F.div(g, F.sum(keep))
    if reduction != "none":
        g = F.expand(g, tuple(target.shape))
    w = F.unsqueeze(F.where(keep, g, 0.0), 1)
    dx = F.mul(F.softmax(x, 1), w)
    return F.scatter_add(dx, 1, F.unsqueeze(F.mul(target, keep), 1), F.neg(w))


def _ce_grad_eager(xp, g, x, target, ignore_index=-100, reduction="mean"):
    """The decomposition's kernels in one call on float32/float64 numpy arrays (its exact
    results: softmax as its eager kernel, the one-hot part subtracted at each row's target);
    None otherwise."""
    if xp is not np or not _ce_whole(x.dtype.type, x.size) or g.dtype != x.dtype:
        return None
    shifted, rows = _shifted(x)
    e = np.exp(shifted)
    p = np.divide(e, np.add.reduce(e, axis=1, keepdims=True), out=e)
    keep = _kept(target, ignore_index, x.shape[1])
    if reduction == "mean":
        g = g / x.dtype.type(x.shape[0] if keep is None else np.add.reduce(keep, axis=None))
    if keep is None:  # (w is g: 0-d, or (N,) for "none")
        dx = np.multiply(p, g.reshape(-1, 1) if reduction == "none" else g, out=p)
        dx[rows, target] -= g
        return dx
    w = np.where(keep, g, x.dtype.type(0))
    dx = np.multiply(p, w.reshape(-1, 1), out=p)
    dx[rows, target * keep] -= w
    return dx


def _ce_ref(x, t, ignore_index=-100, reduction="mean"):
    x64 = x.astype(np.float64)
    shifted = x64 - x64.max(axis=1, keepdims=True)
    logp = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    keep = t != ignore_index
    picked = np.take_along_axis(logp, np.where(keep, t, 0)[:, None], 1)[:, 0]
    loss = np.where(keep, -picked, 0.0)
    if reduction == "none":
        return loss.astype(x.dtype)
    r = loss.sum() / keep.sum() if reduction == "mean" else loss.sum()
    return np.asarray(r, x.dtype)


def _ce_grad_ref(g, x, t, ignore_index=-100, reduction="mean"):
    x64 = x.astype(np.float64)
    p = np.exp(x64 - x64.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    keep = t != ignore_index
    w = np.broadcast_to(g / keep.sum() if reduction == "mean" else g, t.shape) * keep
    p[np.arange(len(t)), np.where(keep, t, 0)] -= 1
    return (p * w[:, None]).astype(x.dtype)


def _ce_samples(rng, dt):
    t = ints(rng, (4,), 5)
    t[1] = -100
    yield (arr(rng, (4, 5), dt), ints(rng, (4,), 5)), {}
    yield (arr(rng, (4, 5), dt), t), {"reduction": "sum"}
    yield (arr(rng, (4, 5), dt), t), {"reduction": "none"}
    yield (arr(rng, (3, 4), dt), ints(rng, (3,), 4)), {"ignore_index": 1}


register(OpDef(  # (a plain OpDef: its arguments bind without IndexedOpDef's prebind)
    "_cross_entropy", "composite", "input, target, ignore_index=-100, reduction='mean'", 2,
    "keep",
    attrs_rule=_ce_attrs, decomp=_ce_decomp, eager_impl=_ce_eager,
    eager_backward=_ce_backward, node_name="NllLossBackward0", ref=_ce_ref,
    sample_inputs=_ce_samples, method=False,
    scalar_ok=False,
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _ce_whole(metas[0].dtype.np.type, metas[0].numel),
    test_dtypes=FLOATS,
))


def _ce_grad_samples(rng, dt):
    for (x, t), attrs in _ce_samples(rng, dt):
        shape = t.shape if attrs.get("reduction") == "none" else ()
        yield (arr(rng, shape, dt), x, t), attrs


register(OpDef(
    "_cross_entropy_backward", "composite",
    "grad, input, target, ignore_index=-100, reduction='mean'", 3, "keep",
    attrs_rule=_ce_grad_attrs, decomp=_ce_grad_decomp, eager_impl=_ce_grad_eager,
    ref=_ce_grad_ref, sample_inputs=_ce_grad_samples, method=False, scalar_ok=False,
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _ce_whole(metas[1].dtype.np.type, metas[1].numel) and metas[0].dtype == metas[1].dtype,
    test_dtypes=FLOATS,
))
