"""Tensor subscripts: `__getitem__` / `__setitem__` and `index_put(_)`, installed on Tensor.

A key is split as PyTorch does: ints, slices (positive steps), None and Ellipsis make a basic
index, run as the `getitem` view op (shares memory); integer tensors, lists and bool masks
(turned into integer indices by `argwhere`) then make an advanced index, run as the `index`
op (a copy; numpy's rule for where the indexed dims go, applied after the ints). Ints are
applied first, so `x[0, :, [0, 1]]` has shape (3, 2) for x of shape (2, 3, 4), as in PyTorch.
`x[key] = v` writes in place (`index_put`), bumps `_version` and records autograd history;
on a leaf that requires grad it raises PyTorch's error. Semantics: PyTorch's "Tensor Indexing
API" notes and numpy's indexing rules. Touches `eager.dispatch` and `ir.ops.indexing`.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D
from ir.opdef import broadcast_shapes
from ir.ops.indexing import _adv_key, _adv_shape

from . import grad_mode
from .dispatch import FUNCTIONS
from .tensor import Tensor, bump_version

_INDEX_KINDS = "iub"


class _EagerOps:
    """`F.getitem(...)` as eager's generated function (its fast path; the namespace that
    `index_ops`/`put_ops` run against when called by eager)."""

    def __getattr__(self, name):
        fn = FUNCTIONS[name]
        setattr(self, name, fn)  # found directly from now on
        return fn


EAGER_F = _EagerOps()


def _as_index_tensor(k):
    """Lists, numpy arrays and Tensors used as indices -> an int64 or bool Tensor."""
    if isinstance(k, Tensor):
        t = k
    else:
        a = np.asarray(k)
        if a.dtype == object or (a.size == 0 and a.dtype.kind == "f"):
            a = np.asarray(k, dtype=np.int64) if a.size == 0 else a
        t = Tensor._make(a.astype(np.int64) if a.dtype.kind in "iu" else a)
    if t.dtype.category > D.INTEGER:
        raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if t.dtype is D.uint8:
        t = FUNCTIONS["cast"](t, D.bool_)
    return t


def _key_entries(x, key, as_index, tensor_type):
    """`parse_key`'s first pass: (entries, used) with each key item checked and normalised
    (None, Ellipsis, a slice, an int, ("bool", b) for a Python bool, or an index tensor) and
    `used`, the number of x's dims the entries consume; IndexError for an invalid item, a
    second Ellipsis or too many indices."""
    if not isinstance(key, tuple):
        key = (key,)
    entries = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, slice):
            entries.append(k)
        elif isinstance(k, bool):
            entries.append(("bool", k))
        elif isinstance(k, (int, np.integer)):
            entries.append(int(k))
        elif isinstance(k, (tensor_type, np.ndarray, list, tuple, range)):
            entries.append(as_index(k))
        else:
            raise IndexError("only integers, slices (`:`), ellipsis (`...`), None and long or "
                             f"byte Variables are valid indices (got {type(k).__name__})")
    used = sum(1 if isinstance(e, (int, slice)) else e.ndim if isinstance(e, tensor_type)
               and e.dtype is D.bool_ else 1 if isinstance(e, tensor_type) else 0
               for e in entries)
    if sum(e is Ellipsis for e in entries) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if used > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim}")
    return entries, used


def parse_key(x, key, F=EAGER_F, as_index=_as_index_tensor, tensor_type=Tensor):
    """Split `key` into (basic index tuple, [index tensors], [view dims they index]).

    Bool masks become integer index tensors (one per masked dim, via `argwhere`). Raises
    IndexError for too many indices, a second Ellipsis, a mask of the wrong shape, and
    ValueError for a negative slice step, as PyTorch does. `F` (an `OpNamespace`), `as_index`
    (list / array / tensor -> an int64 or bool index tensor) and `tensor_type` let capture
    run the same parse on its trackers (`x` and tensors need only `shape`, `ndim`, `dtype`).
    """
    entries, used = _key_entries(x, key, as_index, tensor_type)
    basic, idx, dims = [], [], []
    src = out = 0  # the next dim of x, and of the basic view
    for e in entries:
        if e is Ellipsis:
            n = x.ndim - used
            basic += [slice(None)] * n
            src, out = src + n, out + n
        elif e is None:
            basic.append(None)
            out += 1
        elif isinstance(e, tuple):  # a Python bool: a new dim of size 1 (True) or 0 (False)
            basic.append(None)
            if not e[1]:
                idx.append(as_index([]))
                dims.append(out)
            out += 1
        elif isinstance(e, int):
            n = x.shape[src]
            if not -n <= e < n:
                raise IndexError(f"index {e} is out of bounds for dimension {src} with size {n}")
            basic.append(e)
            src += 1
        elif isinstance(e, slice):
            if e.step is not None and e.step <= 0:
                raise ValueError("step must be greater than zero")
            basic.append(e)
            src, out = src + 1, out + 1
        elif e.dtype is D.bool_:
            shape = tuple(x.shape[src:src + e.ndim])
            for j, (a, b) in enumerate(zip(e.shape, shape)):
                if a != b:
                    raise IndexError(f"The shape of the mask {list(e.shape)} at index {j} does "
                                     f"not match the shape of the indexed tensor "
                                     f"{list(x.shape)} at index {src + j}")
            if e.ndim == 0:  # a 0-d mask adds a dim of size 1 or 0
                basic.append(None)
                if not bool(e._data):
                    idx.append(as_index([]))
                    dims.append(out)
                out += 1
                continue
            nz = F.argwhere(e)
            for j in range(e.ndim):
                basic.append(slice(None))
                idx.append(F.select(nz, 1, j))
                dims.append(out + j)
            src, out = src + e.ndim, out + e.ndim
        else:
            basic.append(slice(None))
            idx.append(e)
            dims.append(out)
            src, out = src + 1, out + 1
    return tuple(basic), idx, dims


def _trivial(basic) -> bool:
    return all(isinstance(k, slice) and k == slice(None) for k in basic)


def index_ops(F, x, basic, idx, dims):
    """`x[key]` as registry ops, from `parse_key`'s split: the `getitem` view for the basic
    part, then the `index` gather for the advanced part. Eager (`F` = eager's namespace) and
    capture (`F` recording graph nodes) both build subscripts with this one function."""
    out = x if idx and _trivial(basic) else F.getitem(x, basic)
    if idx:
        out = F.index([out, *idx], tuple(dims))
    return out


def getitem(self: Tensor, key):
    """`self[key]`: a view for basic keys, a copy for advanced ones (PyTorch semantics)."""
    if type(key) is Tensor and key.dtype is D.bool_ and key.shape == self.shape and key.ndim:
        return FUNCTIONS["masked_select"](self, key)  # x[mask]: one op instead of four
    basic, idx, dims = parse_key(self, key)
    return index_ops(EAGER_F, self, basic, _on_device(self, idx), dims)


def _on_device(self: Tensor, idx: list) -> list:
    """Index tensors on self's device: CPU ones join a CUDA or meta `self`, as PyTorch's."""
    if idx and type(self._data) is not np.ndarray:
        return [i.to(self.device) for i in idx]
    return idx


def put_ops(F, x, basic, idx, dims, value, accumulate=False):
    """The functional `x[key] = value` (a new tensor) as the `_index_put` registry op, from
    `parse_key`'s split; `value` already has x's dtype (or is a Python number)."""
    return F._index_put([x, value, *idx], basic, tuple(dims), accumulate=accumulate)


def _value(self: Tensor, value):
    if isinstance(value, Tensor):
        return value if value.dtype is self.dtype else FUNCTIONS["cast"](value, self.dtype)
    if isinstance(value, (list, tuple, np.ndarray)):
        return Tensor._make(np.asarray(value).astype(self.dtype.np)).to(self.device)
    if isinstance(value, np.generic):
        return value.item()
    return value


def _put(self: Tensor, basic, idx, dims, value, accumulate=False) -> Tensor:
    self._check_inplace()
    value = _value(self, value)
    needs_grad = grad_mode.is_grad_enabled() and (
        self.requires_grad or (isinstance(value, Tensor) and value.requires_grad))
    if needs_grad or type(self._data) is not np.ndarray:  # autograd, or another device
        result = put_ops(EAGER_F, self, basic, _on_device(self, idx), dims, value, accumulate)
        return self._inplace_update(result)
    # no autograd: write straight into self's memory, after every check
    view = self._data[basic + (Ellipsis,)]
    v = value._data if isinstance(value, Tensor) else value
    key, target = Ellipsis, view.shape
    if idx:
        key = _adv_key(np, view, [i._data for i in idx], tuple(dims))
        target = _adv_shape(view.shape, [i._data.shape for i in idx], tuple(dims))
    vshape = tuple(getattr(v, "shape", ()))
    try:
        ok = broadcast_shapes(vshape, target) == tuple(target)
    except RuntimeError:
        ok = False
    if not ok:
        raise RuntimeError(f"shape mismatch: value tensor of shape {list(vshape)} cannot be "
                           f"broadcast to indexing result of shape {list(target)}")
    if accumulate:
        np.add.at(view, key, np.broadcast_to(v, view[key].shape))
    else:
        view[key] = v
    bump_version(self)
    return self


def setitem(self: Tensor, key, value) -> None:
    """`self[key] = value`: in place (values cast to self's dtype, broadcast to the indexed
    shape); RuntimeError on a leaf that requires grad or a value of the wrong shape."""
    basic, idx, dims = parse_key(self, key)
    _put(self, basic, idx, dims, value)


def index_put_(self: Tensor, indices, values, accumulate=False) -> Tensor:
    """`Tensor.index_put_(indices, values, accumulate=False)`: `self[indices] = values` (or
    `+=` with repeated indices accumulated). `indices` is a tuple of index tensors."""
    basic, idx, dims = parse_key(self, tuple(indices))
    return _put(self, basic, idx, dims, values, accumulate)


def index_put(self: Tensor, indices, values, accumulate=False) -> Tensor:
    """`torch.index_put`: the out-of-place `index_put_` (a new tensor; autograd through it)."""
    basic, idx, dims = parse_key(self, tuple(indices))
    return put_ops(EAGER_F, self, basic, _on_device(self, idx), dims, _value(self, values),
                   accumulate)


def install(tensor_cls) -> None:
    """Define the indexing methods on `tensor_cls` (called once by `eager/__init__.py`), and
    PyTorch's `eager.index_put(input, indices, values, accumulate)` function."""
    import sys

    tensor_cls.__getitem__ = getitem
    tensor_cls.__setitem__ = setitem
    tensor_cls.index_put_ = index_put_
    tensor_cls.index_put = index_put
    pkg = sys.modules.get(__name__.rpartition(".")[0])
    if pkg is not None:
        pkg.index_put = index_put
