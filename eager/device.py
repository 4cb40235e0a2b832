"""Devices: `eager.device("cpu")`, `"cuda"`, `"cuda:0"`, and moving arrays between them.

CPU tensors hold numpy arrays, CUDA tensors hold cupy arrays; cupy is imported only when a CUDA
device is used, so wick runs without it. Semantics: `torch.device` (type, index, equality,
repr) and PyTorch's device errors. Imports only numpy (and cupy lazily).
"""

from __future__ import annotations

import numpy as np


class device:
    """`eager.device("cuda:1")`, `device("cuda", 0)`, `device(other_device)`.

    `type` is "cpu" or "cuda"; `index` an int or None. Raises RuntimeError for an unknown
    device string, as `torch.device`.
    """

    __slots__ = ("index", "type")

    def __init__(self, spec="cpu", index=None):
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        if isinstance(spec, int) and not isinstance(spec, bool):
            self.type, self.index = "cuda", spec
            return
        kind, _, idx = str(spec).partition(":")
        if kind not in ("cpu", "cuda") or (idx and not idx.isdigit()):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                               f"string: {spec}")
        self.type = kind
        self.index = int(idx) if idx else index

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other) -> bool:
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")
_CUDA = {}


def cuda_device(index: int) -> device:
    d = _CUDA.get(index)
    if d is None:
        d = _CUDA[index] = device("cuda", index)
    return d


def device_of_array(a) -> device:
    """The device an array lives on (numpy -> cpu, cupy -> cuda:N)."""
    if isinstance(a, np.ndarray):
        return CPU
    return cuda_device(a.device.id)


def cupy():
    """The cupy module; RuntimeError (as PyTorch without CUDA) when it is missing or sees no
    GPU."""
    try:
        import cupy as cp

        if cp.cuda.runtime.getDeviceCount() > 0:
            return cp
    except (ImportError, RuntimeError, OSError) as e:  # no cupy, or no CUDA driver
        raise RuntimeError("Found no NVIDIA driver on your system (cupy with a CUDA device is "
                           f"needed for cuda tensors): {e}") from None
    raise RuntimeError("Found no NVIDIA driver on your system (cupy with a CUDA device is "
                       "needed for cuda tensors)")


def cuda_is_available() -> bool:
    """`torch.cuda.is_available()`: cupy importable and at least one GPU visible."""
    try:
        cupy()
        return True
    except RuntimeError:
        return False


def to_device(arr, dev: device):
    """`arr` moved to `dev` (the same array when already there; a copy otherwise)."""
    if dev.type == "cpu":
        if isinstance(arr, np.ndarray):
            return arr
        return arr.get()
    cp = cupy()
    index = 0 if dev.index is None else dev.index
    if not isinstance(arr, np.ndarray) and arr.device.id == index:
        return arr
    with cp.cuda.Device(index):
        return cp.asarray(arr) if isinstance(arr, np.ndarray) else arr.copy()


def resolve(dev) -> device:
    """A device argument (None, str, int or device) as a concrete device ("cuda" -> cuda:0)."""
    if dev is None:
        return CPU
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda" and d.index is None:
        return cuda_device(0)
    return d


class _CudaModule:
    """`eager.cuda`: `is_available()`, `device_count()`, `current_device()` (torch.cuda)."""

    @staticmethod
    def is_available() -> bool:
        return cuda_is_available()

    @staticmethod
    def device_count() -> int:
        return cupy().cuda.runtime.getDeviceCount() if cuda_is_available() else 0

    @staticmethod
    def current_device() -> int:
        return cupy().cuda.runtime.getDevice()


cuda = _CudaModule()
