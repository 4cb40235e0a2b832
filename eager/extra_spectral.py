"""`torch.stft` / `torch.istft` (issue 16's sweep): the short-time Fourier transform as frames
(`unfold`) times the window, then `fft.rfft`/`fft.fft`; its inverse by `irfft`/`ifft`, the window
again, overlap-add (`index_add`) and division by the summed squared window (the NOLA envelope).
Everything is registry ops, so gradients flow. Argument names, defaults, shapes and errors follow
the PyTorch documentation of `torch.stft` and `torch.istft`. Imports eager's modules only.
"""

from __future__ import annotations

import numpy as np

from . import creation, fft
from .dispatch import FUNCTIONS as _F


def _window(window, win_length, n_fft, like):
    if window is None:
        window = creation.ones(win_length, dtype=like.dtype if like.dtype.is_floating_point
                               else like.real.dtype, device=like.device)
    if window.ndim != 1 or window.shape[0] != win_length:
        raise RuntimeError(f"stft: expected a 1D window tensor of size equal to win_length="
                           f"{win_length}, but got window with size {list(window.shape)}")
    left = (n_fft - win_length) // 2
    return _F["pad"](window, (left, n_fft - win_length - left)) if win_length < n_fft \
        else window


def _sizes(n_fft, hop_length, win_length):
    win_length = n_fft if win_length is None else win_length
    hop_length = n_fft // 4 if hop_length is None else hop_length
    if hop_length <= 0:
        raise RuntimeError(f"stft: expected hop_length > 0, but got hop_length={hop_length}")
    if not 0 < win_length <= n_fft:
        raise RuntimeError(f"stft: expected 0 < win_length <= n_fft, but got win_length="
                           f"{win_length}")
    return hop_length, win_length


def stft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
         pad_mode="reflect", normalized=False, onesided=None, return_complex=None):
    """`torch.stft`: (B?, L) signal -> (B?, n_fft // 2 + 1 or n_fft, n_frames) complex
    spectrogram (`return_complex=False`: a trailing real/imag dim of 2)."""
    complex_in = input.dtype.is_complex or (window is not None and window.dtype.is_complex)
    if return_complex is None:
        if not complex_in:
            raise RuntimeError("stft requires the return_complex parameter be given for real "
                               "inputs, and will further require that return_complex=True in a "
                               "future PyTorch release.")
        return_complex = True
    if input.ndim not in (1, 2):
        raise RuntimeError(f"stft: expected a 1D or 2D tensor, but got {input.ndim}D")
    hop_length, win_length = _sizes(n_fft, hop_length, win_length)
    x = input.unsqueeze(0) if input.ndim == 1 else input
    if center:
        pad = n_fft // 2
        x = _F["pad"](x.unsqueeze(1), (pad, pad), mode=pad_mode).squeeze(1)
    if not 0 < n_fft <= x.shape[-1]:
        raise RuntimeError(f"stft: expected 0 < n_fft < {x.shape[-1]}, but got n_fft={n_fft}")
    w = _window(window, win_length, n_fft, x)
    frames = _F["mul"](_F["unfold"](x, -1, n_fft, hop_length), w)  # (B, frames, n_fft)
    onesided = (not complex_in) if onesided is None else onesided
    if onesided and complex_in:
        raise RuntimeError("Cannot have onesided output if window or input is complex")
    norm = "ortho" if normalized else "backward"
    spec = fft.rfft(frames, dim=-1, norm=norm) if onesided else fft.fft(frames, dim=-1,
                                                                         norm=norm)
    spec = spec.transpose(-1, -2)
    if input.ndim == 1:
        spec = spec.squeeze(0)
    return spec if return_complex else _F["view_as_real"](spec.contiguous())


def istft(input, n_fft, hop_length=None, win_length=None, window=None, center=True,
          normalized=False, onesided=None, length=None, return_complex=False):
    """`torch.istft`: the inverse of `stft` (complex (B?, freq, frames) -> (B?, L)) by
    overlap-add; RuntimeError where the squared window's envelope vanishes (NOLA)."""
    if not input.dtype.is_complex:
        raise RuntimeError("istft requires a complex-valued input tensor matching the output "
                           "from stft with return_complex=True.")
    hop_length, win_length = _sizes(n_fft, hop_length, win_length)
    spec = input.unsqueeze(0) if input.ndim == 2 else input
    onesided = (spec.shape[-2] != n_fft) if onesided is None else onesided
    if onesided and spec.shape[-2] != n_fft // 2 + 1:
        raise RuntimeError(f"istft: expected the frequency dimension (3rd to the last) of the "
                           f"input tensor to match n_fft / 2 + 1 when onesided=True, but got "
                           f"{spec.shape[-2]}")
    norm = "ortho" if normalized else "backward"
    frames_f = spec.transpose(-1, -2)  # (B, frames, freq)
    frames = fft.irfft(frames_f, n=n_fft, dim=-1, norm=norm) if onesided else \
        fft.ifft(frames_f, n=n_fft, dim=-1, norm=norm)
    if not return_complex and frames.dtype.is_complex:
        frames = frames.real
    w = _window(window, win_length, n_fft, frames)
    frames = _F["mul"](frames, w)
    n_frames = frames.shape[-2]
    total = n_fft + hop_length * (n_frames - 1)
    pos = (np.arange(n_frames)[:, None] * hop_length + np.arange(n_fft)[None, :]).reshape(-1)
    dev = frames.device
    idx = creation.tensor(pos, device=dev)
    out = _F["index_add"](creation.zeros(frames.shape[0], total, dtype=frames.dtype, device=dev),
                          1, idx, frames.reshape(frames.shape[0], -1))
    wsq = _F["mul"](w, w) if not w.dtype.is_complex else _F["square"](_F["abs"](w))
    env = _F["index_add"](creation.zeros(total, dtype=wsq.dtype, device=dev), 0, idx,
                          wsq.repeat(n_frames))  # the squared window's overlap-add
    start = n_fft // 2 if center else 0
    end = total - (n_fft // 2 if center else 0) if length is None else start + length
    end = min(end, total)
    env = env[start:end]
    if not env.is_meta and (env.detach().abs().numpy(force=True) < 1e-11).any():
        raise RuntimeError("istft: window overlap add min: 0. The window must satisfy the "
                           "nonzero overlap-add (NOLA) condition.")
    y = _F["div"](out[:, start:end], env)
    if length is not None and y.shape[-1] < length:
        y = _F["pad"](y, (0, length - y.shape[-1]))
    return y.squeeze(0) if input.ndim == 2 else y


FUNCTIONS = (stft, istft)
