"""The top-level loss functions of `torch` (`torch.ctc_loss`, `torch.kl_div`, ...): the ATen
forms of the `torch.nn.functional` losses, whose `reduction` is an int (0 "none", 1 "mean",
2 "sum", PyTorch's `at::Reduction`; called without it they do not reduce, as PyTorch's Python
bindings do). Each is the functional loss under another calling convention. Touches `eager`
only; re-exported by `eager`.
"""

from __future__ import annotations

import warnings

from . import losses as _L
from . import losses_extra as _X

_NAMES = ("none", "mean", "sum")


def _name(reduction) -> str:
    if isinstance(reduction, str):
        return reduction
    if reduction not in (0, 1, 2):
        raise ValueError(f"{reduction} is not a valid value for reduction")
    return _NAMES[reduction]


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None,
                                     reduction=0):
    """`torch.binary_cross_entropy_with_logits`: F.binary_cross_entropy_with_logits."""
    return _L.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                               reduction=_name(reduction))


def kl_div(input, target, reduction=0, *, log_target=False):
    """`torch.kl_div`: F.kl_div ("mean" is the mean over elements, without F's warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _L.kl_div(input, target, reduction=_name(reduction), log_target=log_target)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=0):
    """`torch.cosine_embedding_loss`: F.cosine_embedding_loss."""
    return _X.cosine_embedding_loss(input1, input2, target, margin, reduction=_name(reduction))


def hinge_embedding_loss(input, target, margin=1.0, reduction=0):
    """`torch.hinge_embedding_loss`: F.hinge_embedding_loss."""
    return _X.hinge_embedding_loss(input, target, margin, reduction=_name(reduction))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=0):
    """`torch.margin_ranking_loss`: F.margin_ranking_loss."""
    return _X.margin_ranking_loss(input1, input2, target, margin, reduction=_name(reduction))


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """`torch.poisson_nll_loss` (every argument required, as PyTorch's): F.poisson_nll_loss."""
    return _X.poisson_nll_loss(input, target, log_input, full, eps=eps,
                               reduction=_name(reduction))


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2.0, eps=1e-6, swap=False,
                        reduction=0):
    """`torch.triplet_margin_loss`: F.triplet_margin_loss."""
    return _X.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                  reduction=_name(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=0,
             zero_infinity=False):
    """`torch.ctc_loss`: F.ctc_loss."""
    return _X.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                       _name(reduction), zero_infinity)
