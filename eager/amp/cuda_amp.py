"""`eager.cuda.amp` (`torch.cuda.amp`): the legacy CUDA spellings of `eager.amp`:
`autocast(enabled=True, dtype=float16, cache_enabled=True)` for device "cuda", `GradScaler`
defaulting to device "cuda", `custom_fwd` / `custom_bwd` with device_type "cuda". PyTorch
deprecates them in favour of `torch.amp`; they behave the same.
"""

from __future__ import annotations

import functools

from ir import dtypes as D

from . import autocast_mode
from .grad_scaler import GradScaler as _GradScaler

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]


class autocast(autocast_mode.autocast):
    """`torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)`."""

    def __init__(self, enabled: bool = True, dtype=D.float16, cache_enabled: bool = True):
        super().__init__("cuda", enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)


class GradScaler(_GradScaler):
    """`torch.cuda.amp.GradScaler(init_scale=2.**16, growth_factor=2.0, backoff_factor=0.5,
    growth_interval=2000, enabled=True)`: `eager.amp.GradScaler` on "cuda"."""

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        super().__init__("cuda", init_scale, growth_factor, backoff_factor, growth_interval,
                         enabled)


def custom_fwd(fwd=None, *, cast_inputs=None):
    """`torch.cuda.amp.custom_fwd`: `eager.amp.custom_fwd(device_type="cuda")`."""
    if fwd is None:
        return functools.partial(custom_fwd, cast_inputs=cast_inputs)
    return autocast_mode.custom_fwd(fwd, device_type="cuda", cast_inputs=cast_inputs)


def custom_bwd(bwd):
    """`torch.cuda.amp.custom_bwd`: `eager.amp.custom_bwd(device_type="cuda")`."""
    return autocast_mode.custom_bwd(bwd, device_type="cuda")
