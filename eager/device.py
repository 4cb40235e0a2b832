"""Devices: `eager.device("cpu")`, `"cuda"`, `"cuda:0"`, and moving arrays between them.

CPU tensors hold numpy arrays, CUDA tensors hold cupy arrays; cupy is imported only when a CUDA
device is used, so wick runs without it. Tensors on the `meta` device hold an `ir.MetaArray`
(shape, dtype and strides, no data; see ir/meta_array.py). Semantics: `torch.device` (type,
index, equality, repr) and PyTorch's device errors. The default device of factory calls without
`device=` (`set_default_device`, `get_default_device`, `with device("cuda"):`) is kept per
thread, as PyTorch's (torch/__init__.py `_GLOBAL_DEVICE_CONTEXT`, torch/utils/_device.py
`DeviceContext`).
Imports only numpy and `ir.meta_array` (and cupy lazily).
"""

from __future__ import annotations

import threading
from typing import Self

import numpy as np

from ir.meta_array import NO_DATA, MetaArray


class device:
    """`eager.device("cuda:1")`, `device("cuda", 0)`, `device(other_device)`.

    `type` is "cpu", "cuda" or "meta" (tensors with a shape and a dtype but no data); `index`
    an int or None. Raises RuntimeError for an unknown device string, as `torch.device`.
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
        if kind not in _TYPES or (idx and not idx.isdigit()):
            raise RuntimeError(f"Expected one of cpu, cuda, meta device type at start of device "
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

    def __enter__(self) -> Self:
        """`with eager.device("cuda"):`: factory calls without `device=` inside the block
        create their tensors on this device (PyTorch's `DeviceContext`; blocks nest)."""
        _DEFAULTS.stack.append(self)
        return self

    def __exit__(self, exc_type, exc_val, exc_tb) -> None:
        _DEFAULTS.stack.pop()


_TYPES = ("cpu", "cuda", "meta")


class _Defaults(threading.local):
    """This thread's default device: `set_default_device`'s, and the `with device(...)`
    blocks open (innermost last, which wins)."""

    def __init__(self):
        self.default = None
        self.stack: list = []


_DEFAULTS = _Defaults()


def default_device():
    """The device factories use when given no `device=`, or None for the CPU."""
    d = _DEFAULTS
    return d.stack[-1] if d.stack else d.default


def set_default_device(device_) -> None:
    """`torch.set_default_device(device)`: factory calls without `device=` (`zeros`, `randn`,
    `tensor`, `arange`...) create their tensors on `device` ("cpu", "cuda", "cuda:1", an int,
    a device); None restores the CPU. Not `*_like` (they follow their input) nor `from_numpy`.
    Per thread, as PyTorch's. RuntimeError for an unknown device string; a CUDA device without
    a GPU raises PyTorch's "Found no NVIDIA driver" RuntimeError when a tensor is created."""
    _DEFAULTS.default = None if device_ is None else device(device_)


def get_default_device() -> device:
    """`torch.get_default_device()`: the device factory calls use (`device(type='cpu')`
    unless set); a CUDA default without an index names the current CUDA device (raising
    PyTorch's RuntimeError when there is no GPU, as PyTorch does)."""
    d = default_device()
    if d is None or d.type == "cpu":
        return CPU if d is None or d.index is None else d
    if d.type == "meta":
        return META
    if d.index is None:
        return cuda_device(cupy().cuda.runtime.getDevice())
    return d


CPU = device("cpu")
META = device("meta")
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
    if type(a) is MetaArray:
        return META
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
    """`arr` moved to `dev` (the same array when already there; a copy otherwise). To the meta
    device: a MetaArray of its shape and dtype; from it: NotImplementedError (no data)."""
    if dev.type == "meta":
        return arr if type(arr) is MetaArray else MetaArray(arr.shape, arr.dtype)
    if type(arr) is MetaArray:
        raise NotImplementedError(NO_DATA)
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
    """A device argument (None, str, int or device) as a concrete device ("cuda" -> cuda:0);
    None is the default device (`set_default_device`, `with device(...)`: the CPU unless set)."""
    if dev is None:
        dev = default_device()
        if dev is None:
            return CPU
    d = dev if isinstance(dev, device) else device(dev)
    if d.type == "cuda" and d.index is None:
        return cuda_device(0)
    if d.type == "meta" and d.index is not None:
        return META  # (one meta device: torch prints meta:0 tensors' device as meta)
    return d
