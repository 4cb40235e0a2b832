"""The array API `fft` extension over eager.fft (`axis`/`axes` for torch's `dim`, `s`)."""

from __future__ import annotations

from eager import fft as _f

__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft",
           "irfft", "irfftn", "rfft", "rfftfreq", "rfftn"]


def _one(fn):
    def f(x, /, *, n=None, axis=-1, norm="backward"):
        return fn(x, n=n, dim=axis, norm=norm)
    f.__name__ = fn.__name__
    return f


def _many(fn):
    def f(x, /, *, s=None, axes=None, norm="backward"):
        return fn(x, s=s, dim=axes, norm=norm)
    f.__name__ = fn.__name__
    return f


fft, ifft, rfft, irfft = _one(_f.fft), _one(_f.ifft), _one(_f.rfft), _one(_f.irfft)
hfft, ihfft = _one(_f.hfft), _one(_f.ihfft)
fftn, ifftn, rfftn, irfftn = _many(_f.fftn), _many(_f.ifftn), _many(_f.rfftn), _many(_f.irfftn)


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _f.fftfreq(n, d=d, dtype=dtype, device=device)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    return _f.rfftfreq(n, d=d, dtype=dtype, device=device)


def fftshift(x, /, *, axes=None):
    return _f.fftshift(x, dim=axes)


def ifftshift(x, /, *, axes=None):
    return _f.ifftshift(x, dim=axes)
