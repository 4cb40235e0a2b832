"""PyTorch's layouts, memory formats, constants (`torch.pi`, `torch.inf`...) and process
settings (threads, deterministic algorithms, float32 matmul precision, warn-always, flush
denormal, the default device). wick's kernels are numpy's on C-contiguous arrays: the settings
are recorded and returned as PyTorch would, and layouts/formats are accepted names.
`eager.extra_api.install` adds them to the top level. Semantics: the PyTorch documentation of
each name. Imports eager's modules only.
"""

from __future__ import annotations

import math
import warnings

from .device import get_default_device  # noqa: F401 (re-exported)


class layout:
    """`torch.layout`: wick has the strided (dense) layout only."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


class memory_format:
    """`torch.memory_format`: accepted and ignored by wick's (C-contiguous) tensors."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = memory_format("legacy_contiguous_format")

CONSTANTS = {"e": math.e, "pi": math.pi, "inf": math.inf, "nan": math.nan, "newaxis": None}

# ---------------------------------------------------------------- process settings

_SETTINGS = {"threads": 1, "interop": 1, "deterministic": False, "warn_only": False,
             "precision": "highest", "warn_always": False}


def get_num_threads() -> int:
    """`torch.get_num_threads` (wick's kernels are numpy's; this records the request)."""
    return _SETTINGS["threads"]


def set_num_threads(n: int) -> None:
    """`torch.set_num_threads(n)`: recorded; RuntimeError for n <= 0."""
    if int(n) <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _SETTINGS["threads"] = int(n)


def get_num_interop_threads() -> int:
    return _SETTINGS["interop"]


def set_num_interop_threads(n: int) -> None:
    if int(n) <= 0:
        raise RuntimeError("Expected positive number of threads")
    _SETTINGS["interop"] = int(n)


def init_num_threads() -> None:
    """`torch.init_num_threads`: nothing to initialise."""


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """`torch.use_deterministic_algorithms`: recorded (wick's kernels are deterministic)."""
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _SETTINGS["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _SETTINGS["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """`torch.set_deterministic_debug_mode`: 0/"default", 1/"warn", 2/"error"."""
    names = {"default": 0, "warn": 1, "error": 2}
    mode = names.get(debug_mode, debug_mode)
    if mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                           f"`error`, but got {debug_mode}")
    use_deterministic_algorithms(mode > 0, warn_only=mode == 1)


def get_deterministic_debug_mode() -> int:
    return 0 if not _SETTINGS["deterministic"] else 1 if _SETTINGS["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """`torch.set_float32_matmul_precision`: "highest", "high" or "medium" (recorded)."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _SETTINGS["precision"] = precision


def get_float32_matmul_precision() -> str:
    return _SETTINGS["precision"]


def set_warn_always(b: bool) -> None:
    _SETTINGS["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _SETTINGS["warn_always"]


def set_flush_denormal(mode: bool) -> bool:
    """`torch.set_flush_denormal`: False (not supported on numpy's kernels), as PyTorch on a
    CPU without the feature."""
    return False


