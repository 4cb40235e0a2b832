"""`MetaArray`: an array with a shape, a dtype, strides and a storage offset but no data, what a
tensor on PyTorch's `meta` device holds, and `run_meta`, the kernel of every registry op on it.

Eager keeps a MetaArray where a CPU tensor keeps a numpy array; `ir.execute.namespace_of` gives
its namespace `META_XP`, for which eager's dispatch and lazy backward call `run_meta` instead of
`run_kernel`. An op on meta arrays computes only its result's metadata: the shape and dtype from
the op's own registry rules (`OpDef.meta`), the strides of a view from the view's own kernel
run on a stand-in numpy array that points at no memory (`as_numpy_view`: numpy computes a
view's strides without reading an element); other results are dense (in the dimension order of
an operand of the result's shape, as PyTorch's TensorIterator lays out elementwise results).
No op is known here by its semantics: every op, decomposition and backward rule of the registry
runs on meta as declared. Reading the data (numpy conversion, `.get()`) raises PyTorch's
NotImplementedError; writes are no-ops. Semantics: PyTorch's meta device
(torch/_meta_registrations.py; "attempted to run this operator with Meta tensors" for ops whose
result's shape depends on the data). Imports numpy and `ir.opdef`/`ir.dtypes`.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .opdef import OpDef, TensorMeta

NO_DATA = "Cannot copy out of meta tensor; no data!"
# The address the stand-in arrays of `as_numpy_view` pretend to start at: never read (views
# only), far from address 0 so that a storage offset's bytes never wrap.
_FAKE_ADDRESS = 1 << 44


def contiguous_strides(shape: tuple, itemsize: int) -> tuple:
    """Row-major strides in bytes (a zero-size dimension leaves the others' strides as
    PyTorch's: computed over sizes clamped to 1)."""
    strides, step = [], itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def dense_strides_like(shape: tuple, like_strides: tuple, itemsize: int) -> tuple:
    """Dense strides for `shape` whose dimensions are ordered as `like_strides` orders them
    (largest stride outermost): PyTorch's rule for an elementwise result or `empty_like` of a
    non-overlapping, dense operand (a transposed operand gives a transposed result)."""
    order = sorted(range(len(shape)), key=lambda d: -like_strides[d])
    strides, step = [0] * len(shape), itemsize
    for d in reversed(order):
        strides[d] = step
        step *= max(shape[d], 1)
    return tuple(strides)


class _Flags:
    __slots__ = ("c_contiguous", "f_contiguous", "writeable")

    def __init__(self, shape, strides, itemsize):
        self.c_contiguous = _is_contiguous(shape, strides, itemsize)
        self.f_contiguous = _is_contiguous(shape[::-1], strides[::-1], itemsize)
        self.writeable = True


def _is_contiguous(shape, strides, itemsize) -> bool:
    """PyTorch's `is_contiguous`: row-major ignoring size-1 dims (any zero-size is True)."""
    if 0 in shape:
        return True
    step = itemsize
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1:
            if s != step:
                return False
            step *= n
    return True


class _Pointer:
    __slots__ = ("ptr",)

    def __init__(self, ptr):
        self.ptr = ptr


class MetaArray:
    """Shape, numpy dtype, strides in bytes and an offset in elements into a root MetaArray
    (`base`, None for a root), as numpy arrays show them (`shape`, `dtype`, `strides`,
    `ndim`, `size`, `itemsize`, `nbytes`, `flags.c_contiguous`, `base`, `data.ptr`: the offset
    in bytes), so the Tensor's properties read it as they read an array."""

    __slots__ = ("base", "dtype", "flags", "ndim", "offset", "shape", "size", "strides")
    __array_ufunc__ = None  # numpy never computes on it (its ops go through OpDef.meta)

    def __init__(self, shape, dtype, strides=None, offset=0, base=None):
        self.shape = tuple(int(n) for n in shape)
        self.dtype = np.dtype(dtype)
        self.strides = tuple(strides) if strides is not None else \
            contiguous_strides(self.shape, self.dtype.itemsize)
        self.offset = int(offset)
        self.base = base
        self.ndim = len(self.shape)
        n = 1
        for s in self.shape:
            n *= s
        self.size = n
        self.flags = _Flags(self.shape, self.strides, self.dtype.itemsize)

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def data(self) -> _Pointer:
        return _Pointer(self.offset * self.dtype.itemsize)

    def __repr__(self) -> str:
        return f"MetaArray(shape={self.shape}, dtype={self.dtype})"

    def __reduce__(self):
        """Pickled as its constructor's arguments (what `torch.save` keeps of a meta
        tensor)."""
        return MetaArray, (self.shape, self.dtype, self.strides, self.offset, self.base)

    # ---- no data: reads raise, writes do nothing

    def __array__(self, dtype=None, copy=None):
        raise NotImplementedError(NO_DATA)

    def get(self):
        raise NotImplementedError(NO_DATA)

    def tolist(self):
        raise NotImplementedError(NO_DATA)

    def item(self):
        raise RuntimeError("Tensor.item() cannot be called on meta tensors")

    def __setitem__(self, index, value) -> None:
        """A write into a meta array: nothing to write (PyTorch's in-place ops on meta)."""

    def fill(self, value) -> None:
        pass

    # ---- arithmetic as arrays do it (autograd's gradient sums and seeds): shapes broadcast,
    # dtypes by numpy's rule, no data

    def _binary(self, other) -> MetaArray:
        if isinstance(other, MetaArray):
            shape = np.broadcast_shapes(self.shape, other.shape)
            return MetaArray(shape, np.result_type(self.dtype, other.dtype))
        if isinstance(other, (bool, int, float, complex)):
            return MetaArray(self.shape, np.result_type(self.dtype, other))
        return NotImplemented

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _binary
    __truediv__ = __rtruediv__ = _binary

    def __neg__(self) -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    # ---- new arrays and views

    def root(self) -> MetaArray:
        return self if self.base is None else self.base

    def astype(self, dtype, copy=True) -> MetaArray:
        return MetaArray(self.shape, dtype)

    def copy(self) -> MetaArray:
        return MetaArray(self.shape, self.dtype)

    def storage_size(self) -> int:
        """Elements of the storage a root array spans (its largest offset + 1)."""
        if 0 in self.shape:
            return 0
        item = self.dtype.itemsize
        return self.offset + 1 + sum((n - 1) * s // item for n, s in zip(self.shape,
                                                                        self.strides))

    def as_numpy_view(self) -> np.ndarray:
        """A read-only numpy view of this shape and strides into a stand-in of the root's
        storage that points at no memory: for view kernels (transpose, slicing, as_strided...),
        which compute strides and never read an element. Extension dtypes (bfloat16) show as
        a void dtype of their size."""
        dt = self.dtype if self.dtype.isbuiltin else np.dtype(f"V{self.dtype.itemsize}")
        iface = {"shape": (self.root().storage_size(),), "typestr": dt.str,
                 "descr": dt.descr, "version": 3, "strides": None,
                 "data": (_FAKE_ADDRESS, True)}
        storage = np.asarray(_Interface(iface))
        return np.lib.stride_tricks.as_strided(storage[self.offset:], self.shape,
                                               self.strides, writeable=False)

    def view_of(self, view: np.ndarray, dtype) -> MetaArray:
        """The MetaArray of `view`, a view of `as_numpy_view()`'s array, with dtype `dtype`."""
        dt = np.dtype(dtype)
        offset = view.__array_interface__["data"][0] - _FAKE_ADDRESS
        if view.size and offset % dt.itemsize:
            raise RuntimeError("a meta view's storage offset is not a whole number of elements")
        return MetaArray(view.shape, dt, view.strides, offset // dt.itemsize, self.root())

    def __getitem__(self, index) -> MetaArray:
        """Basic indexing (ints, slices, None, Ellipsis): a meta view."""
        return self.view_of(self.as_numpy_view()[index], self.dtype)

    def reshape(self, shape) -> MetaArray:
        """A view when the strides allow one (numpy's rule is PyTorch's `view`), else a new
        contiguous array (as `Tensor.reshape`'s copy)."""
        try:
            v = np.reshape(self.as_numpy_view(), shape, copy=False)
        except ValueError:
            return MetaArray(_resolved(shape, self.size), self.dtype)
        return self.view_of(v, self.dtype)


def _resolved(shape, size: int) -> tuple:
    """`shape` with a -1 entry filled in for `size` elements."""
    shape = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
    if -1 in shape:
        known = 1
        for n in shape:
            if n != -1:
                known *= n
        shape = tuple(size // known if n == -1 else n for n in shape)
    return shape


class _Interface:
    __slots__ = ("__array_interface__",)

    def __init__(self, iface):
        self.__array_interface__ = iface


# ---------------------------------------------------------------- the meta kernel


class _MetaNamespace:
    """The array namespace of meta arrays (`ir.execute.namespace_of`), as far as eager asks one
    besides the kernel (`run_meta`)."""

    @staticmethod
    def may_share_memory(a, b) -> bool:
        return type(a) is MetaArray and type(b) is MetaArray and a.root() is b.root()


META_XP = _MetaNamespace()

# view ops whose kernel copies when the strides allow no view (PyTorch's `reshape`): on meta
# they view when they can and otherwise make a new dense array, reading nothing
_MAY_COPY = frozenset({"reshape"})


def _tensor_meta(a) -> TensorMeta | object:
    return TensorMeta(a.shape, D.from_numpy(a.dtype), "meta") if type(a) is MetaArray else a


def run_meta(xp, op: OpDef, arrays: tuple, attrs: dict, compute: D.DType,
             out_dtype: D.DType) -> MetaArray:
    """The meta result of primitive `op` on meta arrays and numbers (canonical `attrs`, checked
    by the caller against the same rules): what `ir.execute.run_kernel` is for numpy and cupy
    arrays, with its signature (`xp` is META_XP; `compute` plays no part).
    NotImplementedError for ops whose result's shape depends on the data (nonzero,
    masked_select, unique...) and for copies out of the meta device, as PyTorch."""
    if op.dynamic_shape:
        raise NotImplementedError(
            f"aten::{op.name}: attempted to run this operator with Meta tensors, but there was "
            "no fake impl or Meta kernel registered (its result's shape depends on the data)")
    m = op.meta(tuple(_tensor_meta(a) for a in arrays), attrs)
    if m.device != "meta":
        raise NotImplementedError("Cannot copy out of meta tensor; no data!")
    dt = out_dtype.np
    if op.kind == "view":
        return _view(op, arrays, attrs, m, dt)
    item = np.dtype(dt).itemsize
    for a in arrays:
        if type(a) is MetaArray and a.shape == m.shape and not a.flags.c_contiguous \
                and _dense(a):
            return MetaArray(m.shape, dt, dense_strides_like(m.shape, a.strides, item))
    return MetaArray(m.shape, dt)


def _view(op: OpDef, arrays: tuple, attrs: dict, m: TensorMeta, dt) -> MetaArray:
    x = arrays[0]
    if op.name in _MAY_COPY:
        r = x.reshape(m.shape)
    else:
        stand_ins = [a.as_numpy_view() if type(a) is MetaArray else a for a in arrays]
        r = x.view_of(op.impl(np, *stand_ins, **attrs), np.dtype(dt))
    if r.shape != tuple(m.shape):  # a view kernel disagreeing with its shape rule
        raise RuntimeError(f"{op.name}(): meta view of shape {r.shape}, expected {m.shape}")
    return r


def _dense(a: MetaArray) -> bool:
    """Non-overlapping and dense: some order of the dimensions is row-major without gaps."""
    dims = sorted((s, n) for n, s in zip(a.shape, a.strides) if n != 1)
    step = a.itemsize
    for s, n in dims:
        if s != step:
            return False
        step *= n
    return True
