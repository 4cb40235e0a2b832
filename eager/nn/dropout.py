"""Channel-wise and alpha dropout, randomized leaky ReLU and the shrink activations of
`torch.nn` (functions and modules), plus the in-place `celu_`/`selu_`, composed of registry
ops. Random masks come from eager's default generator (`eager.manual_seed`), as `dropout`.

Feature (channel-wise) dropout draws one Bernoulli(1 - p) per (sample, channel) and scales by
1 / (1 - p); alpha dropout keeps SELU's self-normalising mean and variance:
out = x * keep * a + (keep - 1) * alpha' * a + alpha' * a * p, a = ((alpha'^2 p + 1)(1 - p))
^ -1/2, alpha' = 1.7580993408473766 (ATen's `_dropout_impl`). Semantics, defaults and errors:
torch.nn.functional (dropout1d/2d/3d, alpha_dropout, feature_alpha_dropout, rrelu,
hardshrink, softshrink) and the modules of the same names. Touches `eager` only.
"""

from __future__ import annotations

import warnings

from ir import dtypes as D

from ..dispatch import FUNCTIONS
from ..random import rand
from . import functional_base as _F
from .module import Module

__all__ = ["alpha_dropout", "celu_", "dropout1d", "dropout2d", "dropout3d",
           "feature_alpha_dropout", "hardshrink", "rrelu", "rrelu_", "selu_", "softshrink"]
MODULES = ["AlphaDropout", "Dropout1d", "Dropout2d", "Dropout3d", "FeatureAlphaDropout",
           "Hardshrink", "RReLU", "Softshrink"]

_ALPHA = 1.7580993408473766  # SELU's scale * alpha


def _check_p(p) -> None:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(input, p, feature: bool):
    """Bernoulli(1 - p) mask in the input's dtype: per element, or per (N, C) for features."""
    if feature and input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    shape = tuple(input.shape[:2]) + (1,) * (input.ndim - 2) if feature \
        else tuple(input.shape)
    return (rand(shape, dtype=D.float64, device=input.device) >= p).to(input.dtype)


def _dropout_impl(input, p, training, inplace, feature: bool, alpha: bool):
    """ATen's `_dropout_impl`: identity when not training, p = 0 or empty input."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:
        out = input * 0.0
    else:
        keep = _keep_mask(input, p, feature)
        if alpha:
            a = 1.0 / ((_ALPHA * _ALPHA * p + 1) * (1 - p)) ** 0.5
            out = input * (keep * a) + ((keep - 1.0) * (_ALPHA * a) + _ALPHA * a * p)
        else:
            out = input * (keep / (1.0 - p))
    return _F._inplace(input, out) if inplace else out


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zero whole channels with probability p (`torch.nn.functional.dropout1d`): input
    (N, C, L) or (C, L), one draw per (sample, channel), kept channels scaled by 1 / (1 - p).
    ValueError for p outside [0, 1]; RuntimeError for another rank."""
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           f"input. Note that dropout1d exists to provide channel-wise dropout "
                           f"on inputs with 1 spatial dimension, a channel dimension, and an "
                           f"optional batch dimension (i.e. 2D or 3D inputs).")
    return _feature(input, p, training, inplace, input.ndim == 3, False)


def _feature(input, p, training, inplace, batched: bool, alpha: bool):
    if batched or not training or p == 0:
        return _dropout_impl(input, p, training, inplace, True, alpha)
    out = _dropout_impl(input.unsqueeze(0), p, training, False, True, alpha).squeeze(0)
    return _F._inplace(input, out) if inplace else out


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, H, W) or (C, H, W) inputs
    (`torch.nn.functional.dropout2d`); a 3-D input is taken as (N, C, L) with a warning, as
    PyTorch does."""
    _check_p(p)
    if input.ndim not in (3, 4):
        warnings.warn(f"dropout2d: Received a {input.ndim}-D input to dropout2d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. "
                      f"Note that dropout2d exists to provide channel-wise dropout on inputs "
                      f"with 2 spatial dimensions, a channel dimension, and an optional batch "
                      f"dimension (i.e. 3D or 4D inputs).", stacklevel=2)
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change "
                      "in a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise "
                      "dropout behavior, please switch to using dropout1d instead.",
                      stacklevel=2)
    return _dropout_impl(input, p, training, inplace, True, False)


def dropout3d(input, p=0.5, training=True, inplace=False):
    """Channel-wise dropout of (N, C, D, H, W) or (C, D, H, W) inputs
    (`torch.nn.functional.dropout3d`)."""
    _check_p(p)
    if input.ndim not in (4, 5):
        warnings.warn(f"dropout3d: Received a {input.ndim}-D input to dropout3d, which is "
                      f"deprecated and will result in an error in a future release. To retain "
                      f"the behavior and silence this warning, please use dropout instead. "
                      f"Note that dropout3d exists to provide channel-wise dropout on inputs "
                      f"with 3 spatial dimensions, a channel dimension, and an optional batch "
                      f"dimension (i.e. 4D or 5D inputs).", stacklevel=2)
    return _feature(input, p, training, inplace, input.ndim != 4, False)


def alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout (Klambauer et al., 2017) `torch.nn.functional.alpha_dropout`: dropped
    elements are set to SELU's negative saturation and the result is affinely rescaled so
    that zero-mean unit-variance inputs keep their mean and variance. Note training=False by
    default (as PyTorch's function)."""
    return _dropout_impl(input, p, training, inplace, False, True)


def feature_alpha_dropout(input, p=0.5, training=False, inplace=False):
    """Alpha dropout of whole channels (`torch.nn.functional.feature_alpha_dropout`): input
    (N, C, *) of >= 2 dims."""
    return _dropout_impl(input, p, training, inplace, True, True)


# ---------------------------------------------------------------- activations


def rrelu(input, lower=1.0 / 8, upper=1.0 / 3, training=False, inplace=False):
    """Randomized leaky ReLU (Xu et al., 2015) `torch.nn.functional.rrelu`: x if x > 0, else
    a * x with a ~ U(lower, upper) per element while training, (lower + upper) / 2 otherwise.
    RuntimeError when lower > upper."""
    if lower > upper:
        raise RuntimeError("Lower bound should be less than or equal to the upper bound")
    if not training:
        out = FUNCTIONS["leaky_relu"](input, (lower + upper) / 2)
    else:
        r = rand(tuple(input.shape), dtype=input.dtype, device=input.device) * \
            (upper - lower) + lower
        out = input * FUNCTIONS["where"](input <= 0, r, 1.0)
    return _F._inplace(input, out) if inplace else out


def rrelu_(input, lower=1.0 / 8, upper=1.0 / 3, training=False):
    """In-place `rrelu` (`torch.nn.functional.rrelu_`)."""
    return rrelu(input, lower, upper, training, inplace=True)


def hardshrink(input, lambd=0.5):
    """`torch.nn.functional.hardshrink`: 0 where -lambd <= x <= lambd, else x."""
    return FUNCTIONS["masked_fill"](input, (input >= -lambd) & (input <= lambd), 0)


def softshrink(input, lambd=0.5):
    """`torch.nn.functional.softshrink`: x - lambd above lambd, x + lambd below -lambd, else
    0. RuntimeError for a negative lambd."""
    if lambd < 0:
        raise RuntimeError(f"lambda must be greater or equal to 0, but found to be {lambd}.")
    where = FUNCTIONS["where"]
    return where(input > lambd, input - lambd, where(input < -lambd, input + lambd,
                                                     input * 0))


def celu_(input, alpha=1.0):
    """In-place `celu` (`torch.nn.functional.celu_`); the backward reads a copy of the
    input, which the write overwrites."""
    return _F._inplace(input, _F.celu(input.clone(), alpha))


def selu_(input):
    """In-place `selu` (`torch.nn.functional.selu_`); see `celu_`."""
    return _F._inplace(input, _F.selu(input.clone()))


# ---------------------------------------------------------------- modules


class _DropoutNd(Module):
    _fn = staticmethod(dropout1d)

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        _check_p(p)
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return self._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(_DropoutNd):
    """`F.dropout1d` while training (`torch.nn.Dropout1d`): (N, C, L) or (C, L)."""


class Dropout2d(_DropoutNd):
    """`F.dropout2d` while training (`torch.nn.Dropout2d`): (N, C, H, W) or (N, C, L)."""

    _fn = staticmethod(dropout2d)


class Dropout3d(_DropoutNd):
    """`F.dropout3d` while training (`torch.nn.Dropout3d`): (N, C, D, H, W) or (C, D, H, W)."""

    _fn = staticmethod(dropout3d)


class AlphaDropout(_DropoutNd):
    """`F.alpha_dropout` while training (`torch.nn.AlphaDropout`), for SELU networks."""

    _fn = staticmethod(alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """`F.feature_alpha_dropout` while training (`torch.nn.FeatureAlphaDropout`)."""

    _fn = staticmethod(feature_alpha_dropout)


class RReLU(Module):
    """`F.rrelu` with `training` from the module's mode (`torch.nn.RReLU`)."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        return rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + \
            (", inplace=True" if self.inplace else "")


class Hardshrink(Module):
    """`F.hardshrink(input, lambd)` (`torch.nn.Hardshrink`)."""

    _fn = staticmethod(hardshrink)

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return self._fn(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink):
    """`F.softshrink(input, lambd)` (`torch.nn.Softshrink`)."""

    _fn = staticmethod(softshrink)
