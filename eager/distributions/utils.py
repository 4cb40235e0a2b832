"""Helpers shared by the distributions (as torch.distributions.utils): broadcasting parameters,
probs <-> logits, clamping probabilities, lazily computed attributes."""

from __future__ import annotations

import numbers

from ir.dtypes import finfo

from ..creation import tensor
from ..dispatch import FUNCTIONS as F
from ..tensor import Tensor

__all__ = ["broadcast_all", "clamp_probs", "lazy_property", "logits_to_probs",
           "probs_to_logits"]


def broadcast_all(*values):
    """Tensors (numbers become tensors of the default float dtype, or of the tensors' dtype)
    broadcast to one shape; ValueError for other types."""
    if not all(isinstance(v, (Tensor, numbers.Number)) for v in values):
        raise ValueError("Input arguments must all be instances of numbers.Number or Tensor.")
    like = next((v for v in values if isinstance(v, Tensor)), None)
    dtype = like.dtype if like is not None and like.is_floating_point() else None
    ts = [v if isinstance(v, Tensor) else tensor(float(v), dtype=dtype) for v in values]
    return tuple(F["broadcast_tensors"](*ts)) if len(ts) > 1 else (ts[0],)


def _finfo(t):
    return finfo(t.dtype)


def clamp_probs(probs):
    """Probabilities clamped to [eps, 1 - eps] of their dtype."""
    eps = float(_finfo(probs).eps)
    return probs.clamp(min=eps, max=1 - eps)


def logits_to_probs(logits, is_binary=False):
    return logits.sigmoid() if is_binary else logits.softmax(-1)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


class lazy_property:
    """Computed on first access and stored on the instance (torch's lazy_property)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        self.__doc__ = wrapped.__doc__

    def __get__(self, instance, obj_type=None):
        if instance is None:
            return self
        value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value
