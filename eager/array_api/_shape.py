"""The array API standard's manipulation and searching functions over eager (see the package
docstring)."""

from __future__ import annotations

import numpy as np

import eager as _e

from ._core import _scalar_dtype
from ._stats import sum as _sum

_T = _e.Tensor

__all__ = [
    "broadcast_arrays",
    "broadcast_to",
    "concat",
    "expand_dims",
    "flip",
    "moveaxis",
    "permute_dims",
    "repeat",
    "reshape",
    "roll",
    "squeeze",
    "stack",
    "tile",
    "unstack",
    "argmax",
    "argmin",
    "count_nonzero",
    "nonzero",
    "searchsorted",
    "where",
]


# ---------------------------------------------------------------------------- manipulation


def broadcast_arrays(*arrays):
    return list(_e.broadcast_tensors(*arrays))


def broadcast_to(x, /, shape):
    return x.expand(tuple(shape))


def concat(arrays, /, *, axis=0):
    if axis is None:
        return _e.cat([a.reshape(-1) for a in arrays])
    return _e.cat(list(arrays), dim=axis)


def expand_dims(x, /, axis=0):
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of {x.ndim} dimensions")
    return x.unsqueeze(axis)


def flip(x, /, *, axis=None):
    dims = tuple(range(x.ndim)) if axis is None else (
        (axis,) if isinstance(axis, int) else tuple(axis))
    return _e.flip(x, dims)


def moveaxis(x, source, destination, /):
    return _e.movedim(x, source, destination)


def permute_dims(x, /, axes):
    return x.permute(*axes)


def repeat(x, repeats, /, *, axis=None):
    if axis is None:
        x, axis = x.reshape(-1), 0
    return _e.repeat_interleave(x, repeats, dim=axis)


def reshape(x, /, shape, *, copy=None):
    out = x.reshape(tuple(shape))
    if copy:
        out = out.clone()
    elif copy is False and not np.shares_memory(out.numpy(), x.numpy()):
        raise ValueError("reshape: copy=False but the reshape needs a copy")
    return out


def roll(x, /, shift, *, axis=None):
    if axis is None:
        return _e.roll(x.reshape(-1), shift).reshape(tuple(x.shape))
    return _e.roll(x, shift, axis)


def squeeze(x, /, axis):
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    for a in axes:
        if x.shape[a] != 1:
            raise ValueError(f"squeeze: axis {a} has size {x.shape[a]}, not 1")
    out = x
    for a in sorted((a % x.ndim for a in axes), reverse=True):
        out = out.squeeze(a)
    return out


def stack(arrays, /, *, axis=0):
    return _e.stack(list(arrays), dim=axis)


def tile(x, repetitions, /):
    return _e.tile(x, tuple(repetitions))


def unstack(x, /, *, axis=0):
    return tuple(_e.unbind(x, axis))


# ---------------------------------------------------------------------------- searching


def argmax(x, /, *, axis=None, keepdims=False):
    out = _e.argmax(x, dim=axis, keepdim=keepdims)
    if axis is None and keepdims:
        out = out.reshape((1,) * x.ndim)
    return out


def argmin(x, /, *, axis=None, keepdims=False):
    out = _e.argmin(x, dim=axis, keepdim=keepdims)
    if axis is None and keepdims:
        out = out.reshape((1,) * x.ndim)
    return out


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return _sum((x != 0).to(_e.int64), axis=axis, keepdims=keepdims)


def nonzero(x, /):
    if x.ndim == 0:
        raise ValueError("nonzero is not defined for zero-dimensional arrays")
    return tuple(_e.nonzero(x, as_tuple=True))


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    return _e.searchsorted(x1, x2, side=side, sorter=sorter)


def where(condition, x1, x2, /):
    if not isinstance(x1, _T) and isinstance(x2, _T):
        x1 = _e.tensor(x1, dtype=_scalar_dtype(x1, x2.dtype))
    if not isinstance(x2, _T) and isinstance(x1, _T):
        x2 = _e.tensor(x2, dtype=_scalar_dtype(x2, x1.dtype))
    return _e.where(condition, x1, x2)
