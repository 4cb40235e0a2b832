"""DLPack: zero-copy exchange of tensors with numpy, cupy, torch, JAX and anything else that
speaks the protocol (the Python array API standard's `__dlpack__` / `__dlpack_device__` /
`from_dlpack`, DLPack 1.0 with versioned capsules).

- `Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)` exports the
  tensor's array (numpy on the CPU, cupy on CUDA) through that library's own DLPack export, so
  strides, byte offsets and the versioned capsule are theirs; the consumer sees the same memory.
  As torch's, a tensor that requires grad is refused ("use tensor.detach()").
- `Tensor.__dlpack_device__()` is (kDLCPU=1, 0) or (kDLCUDA=2, device index).
- `eager.from_dlpack(obj)` takes any object with `__dlpack__` (or a legacy capsule) and returns
  a tensor over the same memory: numpy's importer for CPU producers, cupy's for CUDA ones.
  From an eager tensor it returns a tensor sharing its storage with requires_grad False (it
  shares memory, not the autograd graph); writes on either side are seen by the other, and, as
  in torch, writes made by another library do not bump wick's version counter.

bfloat16 has no numpy DLPack code, so bfloat16 tensors cannot be exported or imported this way
(BufferError naming the dtype); every other wick dtype can.
"""

from __future__ import annotations

import numpy as np

from .tensor import Tensor

__all__ = ["from_dlpack", "install"]

KDL_CPU, KDL_CUDA = 1, 2


def _dlpack(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """The DLPack capsule of this tensor (see the module docstring)."""
    if self.requires_grad:
        raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
    arr = self._data
    if arr.dtype.kind == "V" or arr.dtype.name == "bfloat16":
        raise BufferError("DLPack export of bfloat16 tensors is not supported by wick's numpy "
                          "storage; convert with .float() first")
    kwargs = {}
    if max_version is not None:
        kwargs["max_version"] = max_version
    if dl_device is not None:
        kwargs["dl_device"] = dl_device
    if copy is not None:
        kwargs["copy"] = copy
    if isinstance(arr, np.ndarray):
        if stream is not None:
            raise BufferError("stream must be None for CPU tensors")
        return arr.__dlpack__(**kwargs)
    return arr.__dlpack__(stream=stream, **kwargs)  # cupy


def _dlpack_device(self):
    """(device type, device index): (1, 0) on the CPU, (2, i) on CUDA device i."""
    arr = self._data
    if isinstance(arr, np.ndarray):
        return (KDL_CPU, 0)
    return (KDL_CUDA, int(arr.device.id))


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor over the memory of `ext_tensor` (an object with `__dlpack__`, or a DLPack
    capsule), zero-copy; `copy=True` forces a copy. Raises BufferError/TypeError as the
    producer and numpy/cupy do for what they cannot share."""
    if isinstance(ext_tensor, Tensor):
        out = Tensor._make(ext_tensor._data if not copy else ext_tensor._data.copy())
        return out if device is None else out.to(device)
    dev_type = None
    if hasattr(ext_tensor, "__dlpack_device__"):
        dev_type = int(ext_tensor.__dlpack_device__()[0])
    if dev_type in (None, KDL_CPU):
        if type(ext_tensor).__name__ == "PyCapsule":
            arr = np.from_dlpack(_Capsule(ext_tensor))
        else:
            arr = np.from_dlpack(ext_tensor, copy=copy) if copy is not None else \
                np.from_dlpack(ext_tensor)
    elif dev_type == KDL_CUDA:
        try:
            import cupy
        except ImportError as e:
            raise RuntimeError("from_dlpack of a CUDA tensor needs cupy (pip install "
                               "'wick[cuda]')") from e
        arr = cupy.from_dlpack(ext_tensor)
    else:
        raise BufferError(f"from_dlpack: unsupported DLPack device type {dev_type}")
    out = Tensor._make(arr)
    return out if device is None else out.to(device)


class _Capsule:
    """A legacy DLPack capsule presented as a producer (numpy's importer wants an object)."""

    def __init__(self, capsule):
        self._capsule = capsule

    def __dlpack__(self, **kwargs):
        return self._capsule

    def __dlpack_device__(self):
        return (KDL_CPU, 0)


def install(tensor_cls) -> None:
    tensor_cls.__dlpack__ = _dlpack
    tensor_cls.__dlpack_device__ = _dlpack_device
