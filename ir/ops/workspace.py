"""Reusable scratch memory for library kernels' large temporaries (the conv kernels' padded
channels-last copies, im2col columns and GEMM blocks; pooling's padded copy).

A temporary of a few MB allocated and freed on every call costs more than its copy: glibc
serves it by mmap and returns it on free, so every call page-faults it in again (the
small-CNN training step: ~2400 faults, ~3 ms of kernel time per step, against ~3 ms of
work). `scratch` instead hands out views of one grow-only byte buffer per tag and thread, as
cuDNN's workspace. A scratch array is valid until the next `scratch` call with the same tag
on the same thread: kernels use it for temporaries only, never for a result. Arrays of other
namespaces (cupy) and very large requests are plain allocations. Imports nothing of ours.
"""

from __future__ import annotations

import math
import threading

import numpy as np

# requests above this many bytes are not kept (a one-off huge temporary stays one-off)
_MAX_BYTES = 256 << 20

_local = threading.local()


def scratch(xp, tag: str, shape: tuple, dtype) -> np.ndarray:
    """An uninitialised C-contiguous array of `shape` and `dtype` backed by the calling
    thread's buffer for `tag` (grown when too small)."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if xp is not np or nbytes > _MAX_BYTES:
        return xp.empty(shape, dtype)
    bufs = getattr(_local, "bufs", None)
    if bufs is None:
        bufs = _local.bufs = {}
    buf = bufs.get(tag)
    if buf is None or buf.nbytes < nbytes + 64:
        # 64 bytes of slack: the view starts on a 64-byte boundary (whole cache lines)
        buf = bufs[tag] = np.empty(max(nbytes, 1) + 64, np.uint8)
    start = -buf.ctypes.data % 64
    return buf[start:start + nbytes].view(dtype).reshape(shape)
