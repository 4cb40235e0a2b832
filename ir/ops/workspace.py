"""Reusable scratch memory for library kernels' large temporaries (the conv kernels' padded
channels-last copies, im2col columns and GEMM blocks; pooling's padded copy).

A temporary of a few MB allocated and freed on every call costs more than its copy: glibc
serves it by mmap and returns it on free, so every call page-faults it in again (the
small-CNN training step: ~2400 faults, ~3 ms of kernel time per step, against ~3 ms of
work). `scratch` instead hands out views of one grow-only byte buffer per tag and thread, as
cuDNN's workspace. A scratch array is valid until the next `scratch` call with the same tag
on the same thread: kernels use it for temporaries only, never for a result. Arrays of other
namespaces (cupy) and very large requests are plain allocations.

The same faults hit every other large temporary (eager's results, compiled kernels' outputs),
and how often depends on the process's history (glibc raises its mmap threshold after each
free of a mapped block, then trims the heap top again). `tune_malloc`, run once at import on
glibc, fixes the policy as allocators for array libraries do: blocks below 32 MiB come from
the heap and up to 256 MiB of freed heap stays mapped (the CNN step: 830-2430 faults and up
to 3 ms of kernel time per step -> none). Opt out with WICK_MALLOC_TUNE=0; a policy set by
the user (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, GLIBC_TUNABLES) is kept.

`keep` / `kept`: a forward kernel's derived array (the convolution's im2col columns) kept
beside the input it was derived from, so that the backward kernel reading the same input (the
weight gradient) reuses it instead of deriving it again, as frameworks save the columns for
backward. An entry lives while its input array does (a weak reference), at most `_KEEP`
entries and `_KEEP_BYTES` in all per thread, and is taken only for the very same array object
whose contents still match a sample taken when it was kept (a guard against writes through
numpy that bypass autograd's version counters). Imports nothing of ours.
"""

from __future__ import annotations

import ctypes
import math
import os
import sys
import threading
import weakref

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


# `padded` arrays up to this size get a buffer of their own per geometry, whose border is
# written once; at most `_PADDED` of them per thread (the least recently used goes)
_PADDED_BYTES = 4 << 20
_PADDED = 16


def _fill_outside(a, inner, fill) -> None:
    """a[...] = fill outside the box `inner` (slices of a's leading dims), face by face."""
    for d, s in enumerate(inner):
        pre, (lo, hi, _) = (slice(None),) * d, s.indices(a.shape[d])
        if lo:
            a[pre + (slice(0, lo),)] = fill
        if hi < a.shape[d]:
            a[pre + (slice(hi, None),)] = fill


def padded(xp, shape: tuple, dtype, inner: tuple, fill=0) -> np.ndarray:
    """An uninitialised C-contiguous array of `shape` and `dtype` whose elements outside the
    box `inner` (a slice with start and stop per leading dim) hold `fill`: a scratch array for
    a padded copy whose caller writes the inside only. Small ones (`_PADDED_BYTES`) are one
    buffer per (shape, dtype, inner, fill) and thread, valid until the next call with the
    same geometry, whose border is written when the buffer is made, not on every call (a
    conv's padded batch of 64 10x10x32: the fill was ~10 us of ~50); larger ones are the
    "padded" `scratch` array with its border written."""
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if xp is not np or nbytes > _PADDED_BYTES:
        out = scratch(xp, "padded", shape, dtype)
        _fill_outside(out, inner, fill)
        return out
    bufs = getattr(_local, "padded", None)
    if bufs is None:
        bufs = _local.padded = {}
    key = (shape, dtype.str, tuple((s.start, s.stop) for s in inner), fill)
    out = bufs.pop(key, None)
    if out is None:
        out = np.empty(shape, dtype)
        _fill_outside(out, inner, fill)
        while len(bufs) >= _PADDED:
            del bufs[next(iter(bufs))]  # the least recently used
    bufs[key] = out
    return out


_KEEP = 8                # kept derived arrays per thread
_KEEP_BYTES = 64 << 20   # their bytes in all
_PROBES = 64             # elements of the input compared before a kept array is taken


def _probe(x):
    flat = x.reshape(-1)
    return flat[::max(1, flat.size // _PROBES)].copy()


def keep(x, key, value) -> None:
    """Keep `value` (an array derived from the C-contiguous numpy array `x` by the computation
    named by the hashable `key`) for `kept`; nothing for other arrays or too large values."""
    if type(x) is not np.ndarray or not x.flags.c_contiguous or x.size == 0 or \
            value.nbytes > _KEEP_BYTES // 2:
        return
    entries = getattr(_local, "kept", None)
    if entries is None:
        entries = _local.kept = {}
    for k in [k for k, e in entries.items() if e[0]() is None]:
        del entries[k]
    while entries and (len(entries) >= _KEEP or value.nbytes + sum(
            e[3].nbytes for e in entries.values()) > _KEEP_BYTES):
        del entries[next(iter(entries))]  # the oldest
    entries[(id(x), key)] = (weakref.ref(x), x.shape, _probe(x), value)


def kept(x, key):
    """The array `keep` kept for this very `x` and `key`, or None."""
    entries = getattr(_local, "kept", None)
    if not entries:
        return None
    e = entries.get((id(x), key))
    if e is None or e[0]() is not x or x.shape != e[1] or not np.array_equal(_probe(x), e[2]):
        return None
    return e[3]


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters


def tune_malloc() -> bool:
    """Set glibc's mmap threshold to 32 MiB and its trim threshold to 256 MiB (see the module
    docstring); True when applied. Nothing on other platforms or C libraries, with
    WICK_MALLOC_TUNE=0, or where the user set a malloc policy in the environment."""
    if (not sys.platform.startswith("linux") or os.environ.get("WICK_MALLOC_TUNE") == "0"
            or any(k in os.environ for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                             "GLIBC_TUNABLES"))):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only (musl's mallopt does nothing)  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20) and mallopt(_M_TRIM_THRESHOLD, 256 << 20))


tune_malloc()
