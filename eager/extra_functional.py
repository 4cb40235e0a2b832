"""The top-level aliases of `torch.nn.functional` (`torch.conv2d`, `torch.dropout(input, p,
train)`, with aten's argument orders where they differ: `torch.embedding(weight, input)`,
`torch.batch_norm(input, weight, bias, running_mean, ...)`) and the window functions
(`hann_window`, `hamming_window`, `blackman_window`, `bartlett_window`, `kaiser_window`).
`eager.extra_api.install` adds them to the top level. Semantics: the PyTorch documentation of
each name. Imports eager's modules only.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

from ir import dtypes as D

from . import creation
from .nn import functional as F


def _functional():
    return F


_SAME_ORDER = ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "channel_shuffle", "conv1d",
               "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
               "group_norm", "hardshrink", "layer_norm", "max_pool1d", "max_pool2d",
               "max_pool3d", "pixel_shuffle", "pixel_unshuffle", "prelu", "rms_norm", "rrelu",
               "native_channel_shuffle")


def _alias(name):
    def fn(*args, **kwargs):
        return getattr(_functional(), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"`torch.{name}`: `torch.nn.functional.{name}`."
    return fn


def dropout(input, p, train):
    """`torch.dropout(input, p, train)` (nn.functional.dropout with `training=train`)."""
    return _functional().dropout(input, p, train)


def alpha_dropout(input, p, train):
    """`torch.alpha_dropout(input, p, train)`."""
    return _functional().alpha_dropout(input, p, train)


def feature_dropout(input, p, train):
    """`torch.feature_dropout(input, p, train)`: whole channels (dim 1) dropped."""
    return _functional().dropout2d(input, p, train) if input.ndim != 3 else \
        _functional().dropout1d(input, p, train)


def feature_alpha_dropout(input, p, train):
    """`torch.feature_alpha_dropout(input, p, train)`."""
    return _functional().feature_alpha_dropout(input, p, train)


def _dropout_inplace(fn):
    def inplace(input, p, train):
        out = fn(input, p, train)
        input._check_inplace()
        return input._inplace_update(out)
    inplace.__name__ = fn.__name__ + "_"
    inplace.__doc__ = f"In-place `torch.{fn.__name__}`."
    return inplace


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """`torch.embedding(weight, indices, ...)` (aten's order: weight first; padding_idx -1
    means none)."""
    return _functional().embedding(indices, weight,
                                   padding_idx=None if padding_idx < 0 else padding_idx,
                                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled=True):
    """`torch.batch_norm` (aten's order: weight and bias before the running statistics)."""
    return _functional().batch_norm(input, running_mean, running_var, weight, bias, training,
                                    momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled=True):
    """`torch.instance_norm` (aten's order)."""
    return _functional().instance_norm(input, running_mean, running_var, weight, bias,
                                       use_input_stats, momentum, eps)


def adaptive_max_pool1d(input, output_size):
    """`torch.adaptive_max_pool1d`: (values, indices), always."""
    return _functional().adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False):
    """`torch.max_pool1d_with_indices`: (values, indices)."""
    return _functional().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                                    return_indices=True)


# ---------------------------------------------------------------- windows


def _window(name, formula):
    def fn(window_length, periodic=True, *, dtype=None, layout=None, device=None,
           requires_grad=False, **params):
        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got "
                               f"window_length={window_length}")
        dtype = D.get_default_dtype() if dtype is None else dtype
        if not dtype.is_floating_point:
            raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype.name}")
        if window_length <= 1:
            w = np.ones(window_length)
        else:
            n = window_length + 1 if periodic else window_length
            w = formula(np.arange(n, dtype=np.float64), n, **params)[:window_length]
        return creation.tensor(w, dtype=dtype, device=device, requires_grad=requires_grad)
    fn.__name__ = name
    fn.__doc__ = (f"`torch.{name}(window_length, periodic=True, *, dtype=None, ...)`: the "
                  "window as PyTorch defines it (periodic: the first N of N + 1 points).")
    return fn


def _cosine(*coefs):
    return lambda k, n: builtins.sum((-1) ** i * c * np.cos(2 * math.pi * i * k / (n - 1))
                                     for i, c in enumerate(coefs))


hann_window = _window("hann_window", _cosine(0.5, 0.5))
blackman_window = _window("blackman_window", _cosine(0.42, 0.5, 0.08))
bartlett_window = _window("bartlett_window",
                          lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """`torch.hamming_window`: alpha - beta cos(2 pi k / (N - 1))."""
    return _window("hamming_window", lambda k, n: alpha - beta * np.cos(2 * math.pi * k / (n - 1)))(
        window_length, periodic, dtype=dtype, device=device, requires_grad=requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """`torch.kaiser_window`: I0(beta sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", lambda k, n: np.i0(
        beta * np.sqrt(np.clip(1 - (2 * k / (n - 1) - 1) ** 2, 0, None))) / np.i0(beta))(
        window_length, periodic, dtype=dtype, device=device, requires_grad=requires_grad)
