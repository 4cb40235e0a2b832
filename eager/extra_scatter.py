"""PyTorch's functions that write a source into a region of a copy (issue 16's sweep):
`diagonal_scatter`, `select_scatter`, `slice_scatter`, `as_strided_scatter` (the region is a view
of the copy, so gradients come from `copy_`'s rule: to `src` through the region, to `input`
elsewhere), `index_reduce` (`scatter_reduce` with the index spread over the source) and
`Tensor.fill_diagonal_`. `eager.extra` lists them as top-level functions and Tensor methods.
Semantics, argument names and errors follow the PyTorch documentation of each function.
Imports eager's modules only.
"""

from __future__ import annotations

import builtins

import numpy as np

from . import creation
from .dispatch import FUNCTIONS as _F


def _scatter_into(input, src, view):
    """A copy of `input` whose `view(copy)` region holds `src` (shapes must match exactly, as
    PyTorch's *_scatter ops); gradients: to `src` through the region, to `input` elsewhere."""
    out = input.clone()
    region = view(out)
    if tuple(region.shape) != tuple(src.shape):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(region.shape)}")
    region.copy_(src)
    return out


def diagonal_scatter(input, src, offset=0, dim1=0, dim2=1):
    """`torch.diagonal_scatter`: `input` with `diagonal(offset, dim1, dim2)` replaced by src."""
    return _scatter_into(input, src, lambda t: t.diagonal(offset, dim1, dim2))


def select_scatter(input, src, dim, index):
    """`torch.select_scatter`: `input` with `select(dim, index)` replaced by src."""
    return _scatter_into(input, src, lambda t: t.select(dim, index))


def slice_scatter(input, src, dim=0, start=None, end=None, step=1):
    """`torch.slice_scatter`: `input` with `input[.., start:end:step, ..]` (at `dim`) replaced
    by src."""
    key = (slice(None),) * (dim % input.ndim) + (slice(start, end, step),)
    return _scatter_into(input, src, lambda t: t[key])


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """`torch.as_strided_scatter`: `input` (as contiguous storage) with the elements that
    `as_strided(size, stride, storage_offset)` views replaced by src."""
    size = tuple(size)
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size "
                           f"= {list(src.shape)}, slice size = {list(size)}")
    flat = np.full(size, storage_offset or 0, dtype=np.int64)
    for d, (n, st) in enumerate(zip(size, stride)):
        view = [1] * len(size)
        view[d] = n
        flat = flat + (np.arange(n) * st).reshape(view)
    out = input.contiguous().reshape(-1).clone()
    out[creation.tensor(flat.reshape(-1))] = src.reshape(-1)
    return out.reshape(tuple(input.shape))


def index_reduce(input, dim, index, source, reduce, *, include_self=True):
    """`torch.index_reduce`: reduce ("prod", "mean", "amax", "amin") the slices of `source`
    into `input`'s slices `index` along `dim`: `scatter_reduce` with the index spread over
    source's shape (its gradients)."""
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    if index.ndim > 1:
        raise IndexError("index_reduce_(): Index is supposed to be a vector")
    d = dim % builtins.max(source.ndim, 1)
    view = [1] * source.ndim
    view[d] = -1
    idx = index.reshape(view).expand(tuple(source.shape)) if source.ndim else index
    return _F["scatter_reduce"](input, d, idx, source, reduce, include_self=include_self)


def fill_diagonal_(self, fill_value, wrap=False):
    """`Tensor.fill_diagonal_`: write `fill_value` on the main diagonal (every dim of equal size
    when ndim > 2; `wrap` restarts it every ncols + 1 rows of a tall matrix), in place."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    n = builtins.min(self.shape)
    if self.ndim == 2:
        rows = np.arange(n)
        cols = np.arange(n)
        if wrap and self.shape[0] > self.shape[1]:
            step = self.shape[1] + 1
            flat = np.arange(0, self.shape[0] * self.shape[1], step)
            rows, cols = flat // self.shape[1], flat % self.shape[1]
        key = (creation.tensor(rows), creation.tensor(cols))
    else:
        ar = creation.tensor(np.arange(n))
        key = (ar,) * self.ndim
    self[key] = fill_value
    return self
