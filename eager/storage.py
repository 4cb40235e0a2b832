"""`eager.Size` (a tensor's shape) and `UntypedStorage` (the bytes a tensor and its views live
in), with the two array facts they rest on: the array owning a view's memory (`_root`) and its
data address (`_ptr`, through numpy's public `__array_interface__` or cupy's `data.ptr`).
Imports only `device`.
"""

from __future__ import annotations

import numpy as np

from .device import device, device_of_array


class Size(tuple):
    """`tensor.shape`: a tuple of ints that prints as `eager.Size([2, 3])`."""

    def __repr__(self) -> str:
        return f"eager.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


def _root(arr):
    """The array owning the memory `arr` views (numpy/cupy keep the chain in `.base`)."""
    while True:
        b = getattr(arr, "base", None)
        if not isinstance(b, type(arr)):  # stride tricks keep the array behind a DummyArray
            b = getattr(b, "base", None)
            if not isinstance(b, type(arr)):
                return arr
        arr = b


def _ptr(arr) -> int:
    if isinstance(arr, np.ndarray):
        return arr.__array_interface__["data"][0]
    return arr.data.ptr


class UntypedStorage:
    """`tensor.untyped_storage()`: the bytes a tensor and its views live in.

    `size()` and `nbytes()` give the byte count, `data_ptr()` the address of its first byte,
    as `torch.UntypedStorage`."""

    __slots__ = ("_array",)

    def __init__(self, array):
        self._array = array

    def size(self) -> int:
        return int(self._array.nbytes)

    nbytes = size

    def data_ptr(self) -> int:
        return _ptr(self._array)

    @property
    def device(self) -> device:
        return device_of_array(self._array)

    def __len__(self) -> int:
        return self.size()

    def __repr__(self) -> str:
        return f"eager.UntypedStorage of {self.size()} bytes on {self.device}"


class TypedStorage:
    """`tensor.storage()` (PyTorch's legacy `TypedStorage`): the tensor's memory as elements
    of its dtype - `size()`/`len()` count elements, `tolist()`/indexing read them, `dtype`,
    `element_size()`, `nbytes()`, `data_ptr()`, `untyped()`."""

    __slots__ = ("_array", "dtype")

    def __init__(self, array, dtype):
        self._array, self.dtype = array, dtype

    def _flat(self):
        """The memory as a flat array of the dtype (on the host)."""
        a = self._array
        if not isinstance(a, np.ndarray):
            a = a.get()
        return np.ascontiguousarray(a).reshape(-1).view(self.dtype.np)

    def size(self) -> int:
        return int(self._array.nbytes) // self.element_size()

    def __len__(self) -> int:
        return self.size()

    def element_size(self) -> int:
        return int(np.dtype(self.dtype.np).itemsize)

    def nbytes(self) -> int:
        return int(self._array.nbytes)

    def data_ptr(self) -> int:
        return _ptr(self._array)

    @property
    def device(self) -> device:
        return device_of_array(self._array)

    def untyped(self) -> UntypedStorage:
        return UntypedStorage(self._array)

    def tolist(self) -> list:
        return self._flat().tolist()

    def __getitem__(self, i):
        return self._flat()[i].item() if isinstance(i, int) else self._flat()[i].tolist()

    def __iter__(self):
        return iter(self.tolist())

    def __repr__(self) -> str:
        body = "\n".join(f" {v}" for v in self.tolist())
        return (f"{body}\n[eager.storage.TypedStorage(dtype={self.dtype}, device={self.device}) "
                f"of size {self.size()}]")
