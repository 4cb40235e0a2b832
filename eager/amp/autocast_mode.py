"""`torch.autocast` / `torch.amp.autocast`: regions in which listed ops run in a lower-precision
dtype (see `policy.py` for the lists and how they are applied), the state functions
(`is_autocast_enabled`, `get_autocast_dtype`, `set_autocast_enabled`, ...) and the decorators
`custom_fwd` / `custom_bwd` for custom autograd Functions. Semantics: torch/amp/autocast_mode.py
(PyTorch 2.x). Imports `eager` modules only.
"""

from __future__ import annotations

import functools
import warnings

from ir import dtypes as D

from ..device import cuda_is_available
from ..tensor import Tensor
from . import policy
from .policy import STATE, sync

__all__ = ["autocast", "custom_bwd", "custom_fwd", "is_autocast_available"]

_DEVICES = ("cpu", "cuda")
_SUPPORTED = {"cpu": (D.bfloat16, D.float16), "cuda": (D.float16, D.bfloat16)}


def is_autocast_available(device_type: str) -> bool:
    """Whether autocast exists for `device_type` ("cpu" and "cuda" here), whether or not such
    a device is present (`torch.amp.is_autocast_available`)."""
    return device_type in _DEVICES


def _device(device_type) -> str:
    if device_type is None:
        return "cuda"  # PyTorch's legacy default for the no-argument forms
    if not isinstance(device_type, str):
        raise ValueError(  # noqa: TRY004  (PyTorch's type)
            f"Expected `device_type` of type `str`, got: `{type(device_type)}`")
    if device_type not in _DEVICES:
        raise RuntimeError(f"User specified an unsupported autocast device_type "
                           f"'{device_type}'")
    return device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether autocast is on for `device_type` on this thread (no argument: "cuda")."""
    return STATE.enabled[_device(device_type)]


def set_autocast_enabled(device_type, enabled=None) -> None:
    """`set_autocast_enabled(device_type, enabled)`, or the legacy `set_autocast_enabled(b)`
    for "cuda"."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    STATE.enabled[_device(device_type)] = bool(enabled)
    sync()


def get_autocast_dtype(device_type: str) -> D.DType:
    """The low-precision dtype of `device_type`'s regions (defaults: cpu bfloat16, cuda
    float16)."""
    return STATE.dtype[_device(device_type)]


def set_autocast_dtype(device_type: str, dtype) -> None:
    STATE.dtype[_device(device_type)] = dtype


def is_autocast_cpu_enabled() -> bool:
    return STATE.enabled["cpu"]


def set_autocast_cpu_enabled(enabled: bool) -> None:
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> D.DType:
    return STATE.dtype["cpu"]


def set_autocast_cpu_dtype(dtype) -> None:
    STATE.dtype["cpu"] = dtype


def get_autocast_gpu_dtype() -> D.DType:
    return STATE.dtype["cuda"]


def set_autocast_gpu_dtype(dtype) -> None:
    STATE.dtype["cuda"] = dtype


def is_autocast_cache_enabled() -> bool:
    return STATE.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    STATE.cache_enabled = bool(enabled)


def clear_autocast_cache() -> None:
    """Drop the cached low-precision copies of parameters (done on leaving the outermost
    region)."""
    STATE.cache.clear()


def autocast_increment_nesting() -> int:
    STATE.nesting += 1
    return STATE.nesting


def autocast_decrement_nesting() -> int:
    STATE.nesting -= 1
    return STATE.nesting


class autocast:
    """`torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`: a context
    manager (and decorator) under which the ops PyTorch lists for `device_type` run in `dtype`
    (default `get_autocast_dtype(device_type)`: cpu bfloat16, cuda float16), in float32 or at
    the widest input dtype; other ops run as usual. Regions nest, and `enabled=False` turns
    autocast off inside one. Only tensors on `device_type` are cast.

    ValueError when device_type is not a str; RuntimeError for an unknown device type. A dtype
    the device does not support, or "cuda" without a GPU, warns and disables the region (as
    PyTorch does).
    """

    def __init__(self, device_type: str, dtype=None, enabled: bool = True,
                 cache_enabled: bool | None = None):
        if not isinstance(device_type, str):
            raise ValueError(f"Expected `device_type` of type `str`, got: "  # noqa: TRY004
                             f"`{type(device_type)}`")
        self.device = _device(device_type)
        self.fast_dtype = get_autocast_dtype(self.device) if dtype is None else dtype
        self._enabled = bool(enabled)
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None \
            else bool(cache_enabled)
        if self.device == "cuda" and self._enabled and not cuda_is_available():
            warnings.warn("User provided device_type of 'cuda', but CUDA is not available. "
                          "Disabling", stacklevel=2)
            self._enabled = False
        if self._enabled and self.fast_dtype not in _SUPPORTED[self.device]:
            names = " and ".join(f"torch.{d.name}" for d in _SUPPORTED[self.device])
            kind = "CPU" if self.device == "cpu" else "CUDA"
            warnings.warn(f"In {kind} autocast, but the target dtype is not supported. "
                          f"Disabling autocast.\n{kind} Autocast only supports dtype of "
                          f"{names} currently.", stacklevel=2)
            self._enabled = False
        self._stack: list = []

    def __enter__(self):
        st = STATE
        self._stack.append((st.enabled[self.device], st.dtype[self.device], st.cache_enabled))
        st.enabled[self.device] = self._enabled
        st.dtype[self.device] = self.fast_dtype
        st.cache_enabled = self._cache_enabled
        autocast_increment_nesting()
        sync()
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        st = STATE
        if autocast_decrement_nesting() == 0:
            clear_autocast_cache()
        st.enabled[self.device], st.dtype[self.device], st.cache_enabled = self._stack.pop()
        sync()

    def __call__(self, func):
        """Use as a decorator: `func` runs inside this region."""

        @functools.wraps(func)
        def decorate_autocast(*args, **kwargs):
            with self:
                return func(*args, **kwargs)

        decorate_autocast.__wick_autocast_region__ = True  # (capture inlines it)
        return decorate_autocast

    def __repr__(self) -> str:
        return (f"autocast(device_type={self.device!r}, dtype={self.fast_dtype}, "
                f"enabled={self._enabled})")


# ---------------------------------------------------------------- custom autograd Functions


def _cast_args(value, device_type: str, dtype):
    """Floating tensors on `device_type` (not float64) in `value` (nested in lists, tuples,
    dicts) cast to `dtype` (torch.amp.autocast_mode._cast)."""
    if isinstance(value, Tensor):
        ok = value.dtype.is_floating_point and value.dtype is not D.float64 \
            and value.device.type == device_type
        return value.to(dtype) if ok else value
    if isinstance(value, dict):
        return {k: _cast_args(v, device_type, dtype) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_args(v, device_type, dtype) for v in value)
    return value


def _check_device_type(device_type) -> str:
    if not isinstance(device_type, str):
        raise ValueError("Expected `device_type` of type `str`, got: "  # noqa: TRY004
                         f"`{type(device_type)}`")
    return _device(device_type)


def custom_fwd(fwd=None, *, device_type: str, cast_inputs=None):
    """Decorator for a custom autograd Function's `forward` (`torch.amp.custom_fwd`): records
    whether autocast was on (for `custom_bwd`); with `cast_inputs`, inside an enabled region
    the floating inputs are cast to it and forward runs with autocast off."""
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)
    device_type = _check_device_type(device_type)

    @functools.wraps(fwd)
    def decorate_fwd(*args, **kwargs):
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = is_autocast_enabled(device_type)
            return fwd(*args, **kwargs)
        on = is_autocast_enabled(device_type)
        ctx._fwd_used_autocast = False
        if on:
            with autocast(device_type=device_type, enabled=False):
                return fwd(*_cast_args(args, device_type, cast_inputs),
                           **_cast_args(kwargs, device_type, cast_inputs))
        return fwd(*args, **kwargs)

    return decorate_fwd


def custom_bwd(bwd=None, *, device_type: str):
    """Decorator for a custom autograd Function's `backward` (`torch.amp.custom_bwd`): runs it
    with the autocast state its forward saw (see `custom_fwd`)."""
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)
    device_type = _check_device_type(device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args, **kwargs):
        ctx = args[0]
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast,
                      dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd


autocast_function = policy.autocast_function
