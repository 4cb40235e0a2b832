"""`eager.fft`: PyTorch's `torch.fft` namespace.

Each transform is the generated function of a registry op (`ir/ops/fft.py`: `fft.rfft` is
`fft_rfft`), so autograd, capture and the test matrix see one definition; the kernels are
scipy.fft (numpy arrays) or cupy.fft (cupy arrays). `fftfreq` and `rfftfreq` are creation
functions (no tensor input), as `arange`. Semantics: the torch.fft documentation.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from .creation import _finish
from .dispatch import FUNCTIONS

fft = FUNCTIONS["fft_fft"]
ifft = FUNCTIONS["fft_ifft"]
rfft = FUNCTIONS["fft_rfft"]
irfft = FUNCTIONS["fft_irfft"]
hfft = FUNCTIONS["fft_hfft"]
ihfft = FUNCTIONS["fft_ihfft"]
fft2 = FUNCTIONS["fft_fft2"]
ifft2 = FUNCTIONS["fft_ifft2"]
rfft2 = FUNCTIONS["fft_rfft2"]
irfft2 = FUNCTIONS["fft_irfft2"]
hfft2 = FUNCTIONS["fft_hfft2"]
ihfft2 = FUNCTIONS["fft_ihfft2"]
fftn = FUNCTIONS["fft_fftn"]
ifftn = FUNCTIONS["fft_ifftn"]
rfftn = FUNCTIONS["fft_rfftn"]
irfftn = FUNCTIONS["fft_irfftn"]
hfftn = FUNCTIONS["fft_hfftn"]
ihfftn = FUNCTIONS["fft_ihfftn"]
fftshift = FUNCTIONS["fft_fftshift"]
ifftshift = FUNCTIONS["fft_ifftshift"]


def _freq(name, n, d, dtype, device, requires_grad, out, onesided):
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        raise RuntimeError(f"{name}: n must be a non-negative integer, got {n!r}")
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if not (dt.is_floating_point or dt.is_complex):
        raise RuntimeError(f"{name} requires a floating point or complex dtype, got "
                           f"{dt.title}")
    k = np.arange(n // 2 + 1 if onesided else n, dtype=np.float64)
    if not onesided:
        k[(n + 1) // 2:] -= n
    return _finish((k / (n * d)).astype(dt.np), device, requires_grad, out)


def fftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
            requires_grad=False):
    """`torch.fft.fftfreq`: the sample frequencies of a length-`n` transform with sample
    spacing `d`: [0, 1, ..., (n-1)//2, -(n//2), ..., -1] / (d n), in `dtype` (default: the
    default float dtype)."""
    return _freq("fftfreq", n, d, dtype, device, requires_grad, out, False)


def rfftfreq(n, d=1.0, *, out=None, dtype=None, layout=None, device=None,
             requires_grad=False):
    """`torch.fft.rfftfreq`: the non-negative sample frequencies of `rfft` of length `n`:
    [0, 1, ..., n//2] / (d n)."""
    return _freq("rfftfreq", n, d, dtype, device, requires_grad, out, True)


__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "hfft2", "hfftn", "ifft",
           "ifft2", "ifftn", "ifftshift", "ihfft", "ihfft2", "ihfftn", "irfft", "irfft2",
           "irfftn", "rfft", "rfft2", "rfftfreq", "rfftn"]
