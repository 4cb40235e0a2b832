"""`torch.signal.windows`: window functions of length M (`sym=True`: symmetric, for filter
design; False: periodic, for spectral analysis), with scipy.signal.windows' definitions, which
PyTorch's follow. Keyword-only parameters and errors as in the PyTorch documentation."""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from .. import creation

__all__ = ["bartlett", "blackman", "cosine", "exponential", "gaussian", "general_cosine",
           "general_hamming", "hamming", "hann", "kaiser", "nuttall"]


def _window(name, M, sym, dtype, device, requires_grad, *args):
    if M < 0:
        raise ValueError(f"{name} requires non-negative window length, got M={M}")
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    if not dt.is_floating_point:
        raise ValueError(f"{name} expects float32 or float64 dtypes, got: {dt.name}")
    import scipy.signal.windows as W

    w = getattr(W, name)(M, *args, sym=sym)
    return creation.tensor(w, dtype=dt, device=device, requires_grad=requires_grad)


def _simple(name):
    def fn(M, *, sym=True, dtype=None, layout=None, device=None, requires_grad=False):
        return _window(name, M, sym, dtype, device, requires_grad)
    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"`torch.signal.windows.{name}(M, *, sym=True, dtype=None, ...)`."
    return fn


bartlett, blackman, cosine, hamming, hann, nuttall = (
    _simple(n) for n in ("bartlett", "blackman", "cosine", "hamming", "hann", "nuttall"))


def exponential(M, *, center=None, tau=1.0, sym=True, dtype=None, layout=None, device=None,
                requires_grad=False):
    """exp(-|n - center| / tau); `center` only for periodic windows (ValueError otherwise)."""
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if center is None:  # (PyTorch's default: the middle of the symmetric or periodic window)
        center = (M if not sym and M > 1 else M - 1) / 2.0
    w = _window("hann", M, sym, dtype, device, False)  # (checks M and dtype)
    n = np.arange(M, dtype=np.float64)
    return creation.tensor(np.exp(-np.abs(n - center) / tau), dtype=w.dtype, device=device,
                           requires_grad=requires_grad)


def gaussian(M, *, std=1.0, sym=True, dtype=None, layout=None, device=None,
             requires_grad=False):
    """exp(-(n - (M - 1) / 2)^2 / (2 std^2))."""
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    return _window("gaussian", M, sym, dtype, device, requires_grad, std)


def general_cosine(M, *, a, sym=True, dtype=None, layout=None, device=None,
                   requires_grad=False):
    """sum_k (-1)^k a_k cos(2 pi k n / (M - 1))."""
    return _window("general_cosine", M, sym, dtype, device, requires_grad, list(a))


def general_hamming(M, *, alpha=0.54, sym=True, dtype=None, layout=None, device=None,
                    requires_grad=False):
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return _window("general_hamming", M, sym, dtype, device, requires_grad, alpha)


def kaiser(M, *, beta=12.0, sym=True, dtype=None, layout=None, device=None,
           requires_grad=False):
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    return _window("kaiser", M, sym, dtype, device, requires_grad, beta)
