"""Tensor creation: `tensor`, `from_numpy`, `zeros`, `ones`, `full`, `arange`, `rand(n)`.

Signatures, defaults and dtypes follow PyTorch's (Python floats -> the default dtype, ints ->
int64); random numbers come from one numpy Generator seeded by `manual_seed`.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from .tensor import Tensor, _to_array

_rng = [np.random.default_rng()]


def manual_seed(seed: int):
    """Seed wick's random number generator (numpy PCG64; streams differ from PyTorch's)."""
    _rng[0] = np.random.default_rng(int(seed))
    return _rng[0]


def _sizes(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, (int, np.integer)) or isinstance(s, bool):
            raise TypeError(f"size must be a sequence of ints, got {type(s).__name__}")
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: "
                               f"{list(size)}")
    return tuple(int(s) for s in size)


def _finish(arr, dtype, requires_grad, device=None):
    if device is not None and str(device) != "cpu":
        raise RuntimeError(f"device {device} is not available in this build")
    dt = D.to_dtype(dtype) if dtype is not None else None
    if dt is not None and arr.dtype != dt.np:
        arr = arr.astype(dt.np)
    return Tensor._make(arr, requires_grad)


def tensor(data, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A new tensor copying `data` (nested lists, numbers, numpy arrays, tensors)."""
    return _finish(_to_array(data, dtype), None, requires_grad, device)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    if isinstance(data, Tensor) and (dtype is None or D.to_dtype(dtype) is data.dtype):
        return data
    if isinstance(data, np.ndarray) and (dtype is None or D.to_dtype(dtype).np == data.dtype):
        return from_numpy(data)
    return tensor(data, dtype=dtype, device=device)


def from_numpy(a: np.ndarray) -> Tensor:
    """A tensor sharing memory with numpy array `a` (zero-copy); TypeError on other input."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(a).__name__})")
    D.from_numpy(a.dtype)
    return Tensor._make(a)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _finish(np.zeros(_sizes(size), dt.np), None, requires_grad, device)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    return _finish(np.ones(_sizes(size), dt.np), None, requires_grad, device)


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    if dtype is None:
        dtype = D.default_for_category(D.scalar_category(fill_value))
    return _finish(np.full(_sizes((size,)), fill_value, D.to_dtype(dtype).np), None,
                   requires_grad, device)


def zeros_like(t: Tensor, *, dtype=None, requires_grad=False) -> Tensor:
    return zeros(tuple(t.shape), dtype=dtype or t.dtype, requires_grad=requires_grad)


def ones_like(t: Tensor, *, dtype=None, requires_grad=False) -> Tensor:
    return ones(tuple(t.shape), dtype=dtype or t.dtype, requires_grad=requires_grad)


def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Values in [start, end) spaced by `step`; int64 unless any argument is a float."""
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if dtype is None:
        anyfloat = any(isinstance(v, float) for v in (start, end, step))
        dtype = D.get_default_dtype() if anyfloat else D.int64
    dt = D.to_dtype(dtype)
    n = max(0, int(np.ceil((end - start) / step)))
    return _finish((start + step * np.arange(n)).astype(dt.np), None, requires_grad, device)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Standard normal samples of shape `size`, default float dtype."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f'"normal_kernel_cpu" not implemented for \'{dt.name}\'')
    g = generator or _rng[0]
    return _finish(g.standard_normal(_sizes(size)).astype(dt.np), None, requires_grad, device)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Uniform samples in [0, 1) of shape `size`, default float dtype."""
    dt = D.to_dtype(dtype) if dtype is not None else D.get_default_dtype()
    g = generator or _rng[0]
    return _finish(g.random(_sizes(size)).astype(dt.np), None, requires_grad, device)
