"""The array API standard's set, sorting, statistical and utility functions over eager (see
the package docstring)."""

from __future__ import annotations

import math

import numpy as np

import eager as _e

from ._core import _wrap

__all__ = [
    "unique_all", "unique_counts", "unique_inverse", "unique_values",
    "argsort", "sort",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
]

_ = math


# ---------------------------------------------------------------------------- sets


def _unique(x):
    a = x.numpy().reshape(-1)
    vals, idx, inv, counts = np.unique(a, return_index=True, return_inverse=True,
                                       return_counts=True, equal_nan=False)
    return vals, idx, inv.reshape(tuple(x.shape)), counts


def unique_all(x, /):
    v, i, inv, c = _unique(x)
    from collections import namedtuple

    return namedtuple("UniqueAllResult", "values indices inverse_indices counts")(
        _wrap(v), _wrap(i.astype(np.int64)), _wrap(inv.astype(np.int64)),
        _wrap(c.astype(np.int64)))


def unique_counts(x, /):
    v, _, _, c = _unique(x)
    from collections import namedtuple

    return namedtuple("UniqueCountsResult", "values counts")(_wrap(v), _wrap(c.astype(np.int64)))


def unique_inverse(x, /):
    v, _, inv, _ = _unique(x)
    from collections import namedtuple

    return namedtuple("UniqueInverseResult", "values inverse_indices")(
        _wrap(v), _wrap(inv.astype(np.int64)))


def unique_values(x, /):
    return _wrap(_unique(x)[0])


# ---------------------------------------------------------------------------- sorting


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    if x.ndim == 0:
        return _e.zeros((), dtype=_e.int64)
    a = x.numpy()
    key = -a if descending and a.dtype.kind in "iuf" else a
    if descending and a.dtype.kind not in "iuf":
        idx = np.flip(np.argsort(np.flip(a, axis), axis=axis, kind="stable"), axis)
        idx = a.shape[axis] - 1 - idx
    else:
        idx = np.argsort(key, axis=axis, kind="stable")
    return _wrap(idx.astype(np.int64))


def sort(x, /, *, axis=-1, descending=False, stable=True):
    return _e.sort(x, dim=axis, descending=descending, stable=True).values


# ---------------------------------------------------------------------------- statistics


def _axes(axis):
    if axis is None:
        return None
    return axis if isinstance(axis, int) else tuple(axis)


def _reduce(fn, x, axis, keepdims, **kw):
    ax = _axes(axis)
    if ax is None or ax == ():
        if ax == ():
            return x.clone() if not kw.get("dtype") else x.to(kw["dtype"])
        out = fn(x, **kw)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return fn(x, dim=ax, keepdim=keepdims, **kw)


def _sum_dtype(x, dtype):
    if dtype is not None:
        return dtype
    if x.dtype in (_e.bool, _e.int8, _e.int16, _e.int32, _e.uint8):
        return _e.int64
    return x.dtype


def sum(x, /, *, axis=None, dtype=None, keepdims=False):  # noqa: A001
    return _reduce(_e.sum, x, axis, keepdims, dtype=_sum_dtype(x, dtype))


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    dt = _sum_dtype(x, dtype)
    ax = _axes(axis)
    if isinstance(ax, tuple) and ax:
        out = x.to(dt)
        for a in sorted((a % x.ndim for a in ax), reverse=True):
            out = _e.prod(out, dim=a, keepdim=keepdims).to(dt)
        return out
    return _reduce(lambda t, **kw: _e.prod(t.to(dt), **{k: v for k, v in kw.items()
                                                        if k != "dtype"}).to(dt),
                   x, axis, keepdims, dtype=dt)


def max(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_e.amax, x, axis, keepdims)


def min(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(_e.amin, x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False):
    return _reduce(_e.mean, x, axis, keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _reduce(_e.var, x, axis, keepdims, correction=correction)


def std(x, /, *, axis=None, correction=0.0, keepdims=False):
    return _reduce(_e.std, x, axis, keepdims, correction=correction)


def _cumulative(fn, x, axis, dtype, include_initial, initial):
    if axis is None:
        if x.ndim > 1:
            raise ValueError("axis is required for arrays of more than one dimension")
        axis = 0
    dt = _sum_dtype(x, dtype)
    out = fn(x.to(dt), dim=axis).to(dt)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = _e.cat([_e.full(tuple(shape), initial, dtype=dt), out], dim=axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_e.cumsum, x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    return _cumulative(_e.cumprod, x, axis, dtype, include_initial, 1)


# ---------------------------------------------------------------------------- utilities


def all(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(lambda t, **kw: _e.all(t.to(_e.bool), **kw) if kw else _e.all(t), x,
                   axis, keepdims)


def any(x, /, *, axis=None, keepdims=False):  # noqa: A001
    return _reduce(lambda t, **kw: _e.any(t.to(_e.bool), **kw) if kw else _e.any(t), x,
                   axis, keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    parts = [p for p in (prepend, x, append) if p is not None]
    y = _e.cat(parts, dim=axis) if len(parts) > 1 else x
    for _ in range(n):
        k = y.shape[axis]
        y = y.narrow(axis, 1, k - 1) - y.narrow(axis, 0, k - 1) if y.dtype is not _e.bool \
            else y.narrow(axis, 1, k - 1) ^ y.narrow(axis, 0, k - 1)
    return y

