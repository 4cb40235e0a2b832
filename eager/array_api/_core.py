"""The array API standard's functions over eager (see the package docstring): creation, data
types, elementwise, indexing, linear algebra, manipulation, searching, sets, sorting,
statistics and utilities, with the standard's names and signatures."""

from __future__ import annotations

import builtins
import math

import numpy as np

import eager as _e
from ir import dtypes as _D

_T = _e.Tensor

__all__ = [
    # creation
    "arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
    "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # data types
    "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    # elementwise
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1",
    "floor", "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf",
    "isnan", "less", "less_equal", "log", "log1p", "log2", "log10", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round",
    "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
    # indexing
    "take", "take_along_axis",
    # linear algebra
    "matmul", "matrix_transpose", "tensordot", "vecdot",
]

_DTYPES = (_e.bool, _e.int8, _e.int16, _e.int32, _e.int64, _e.uint8, _e.float32, _e.float64,
           _e.complex64, _e.complex128)


def _wrap(a) -> _T:
    """A tensor over a numpy result (numpy scalars and 0-d arrays included; C order)."""
    if isinstance(a, _T):
        return a
    a = np.asarray(a)
    return _e.from_numpy(a if a.flags.c_contiguous else a.copy())


def _default_float():
    return _D.get_default_dtype()


def _scalar_dtype(v, like=None):
    """The dtype a Python scalar takes: that of `like` when compatible (the standard's rule),
    else the default of its kind."""
    if isinstance(v, builtins.bool):
        return _e.bool
    if isinstance(v, int):
        return like if like is not None and (like.is_floating_point or like.is_complex or
                                            like not in (_e.bool,)) else _e.int64
    if isinstance(v, float):
        return like if like is not None and (like.is_floating_point or like.is_complex) \
            else _default_float()
    if isinstance(v, complex):
        if like is not None and like.is_complex:
            return like
        return _e.complex128 if like is _e.float64 else _e.complex64
    raise TypeError(f"unsupported scalar type {type(v).__name__}")


# ---------------------------------------------------------------------------- creation


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An array from an array, a (nested) sequence of scalars, a scalar, a buffer or a DLPack
    producer. copy=False raises ValueError when a copy is needed."""
    if isinstance(obj, _T):
        out = obj
        if dtype is not None and out.dtype is not dtype:
            if copy is False:
                raise ValueError("asarray: a dtype change needs a copy (copy=False)")
            out = out.to(dtype)
        elif copy:
            out = out.clone()
        return out if device is None else out.to(device)
    if copy is False and not isinstance(obj, np.ndarray) and not hasattr(obj, "__dlpack__"):
        if not hasattr(obj, "__buffer__") and not isinstance(obj, (bytes, bytearray,
                                                                  memoryview)):
            raise ValueError("asarray: copy=False needs an object exposing its memory")
    if hasattr(obj, "__dlpack__") and not isinstance(obj, np.ndarray):
        out = _e.from_dlpack(obj)
        return asarray(out, dtype=dtype, device=device, copy=copy)
    if isinstance(obj, (bytes, bytearray, memoryview)):
        arr = np.frombuffer(obj, dtype=(dtype or _e.float64).np if dtype else np.uint8)
        return _e.from_numpy(arr)
    if isinstance(obj, np.ndarray):
        if dtype is not None and obj.dtype != dtype.np:
            if copy is False:
                raise ValueError("asarray: a dtype change needs a copy (copy=False)")
            obj = obj.astype(dtype.np)
        elif copy:
            obj = obj.copy()
        return _e.from_numpy(np.ascontiguousarray(obj)) if device is None else \
            _e.from_numpy(np.ascontiguousarray(obj)).to(device)
    if dtype is None:
        flat = list(_flatten(obj))
        if flat and builtins.all(isinstance(v, builtins.bool) for v in flat):
            dtype = _e.bool
        elif flat and builtins.any(isinstance(v, complex) for v in flat):
            dtype = _e.complex128 if _default_float() is _e.float64 else _e.complex64
        elif flat and builtins.any(isinstance(v, float) for v in flat):
            dtype = _default_float()
        elif flat and builtins.any(isinstance(v, _T) for v in flat):
            dtype = None
        else:
            dtype = _e.int64
    return _e.tensor(obj, dtype=dtype, device=device)


def _flatten(obj):
    if isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _flatten(v)
    else:
        yield obj


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    if stop is None:
        start, stop = 0, start
    if dtype is None:
        dtype = _default_float() if builtins.any(isinstance(v, float) for v in
                                                 (start, stop, step)) else _e.int64
    n = builtins.max(0, math.ceil((stop - start) / step))
    arr = (np.arange(n, dtype=np.float64 if dtype.is_floating_point else np.int64) * step
           + start)
    return _e.from_numpy(arr.astype(dtype.np)).to(device) if device else \
        _e.from_numpy(arr.astype(dtype.np))


def _shape(shape):
    return (shape,) if isinstance(shape, int) else tuple(shape)


def empty(shape, *, dtype=None, device=None):
    return _e.empty(_shape(shape), dtype=dtype, device=device)


def zeros(shape, *, dtype=None, device=None):
    return _e.zeros(_shape(shape), dtype=dtype, device=device)


def ones(shape, *, dtype=None, device=None):
    return _e.ones(_shape(shape), dtype=dtype, device=device)


def empty_like(x, /, *, dtype=None, device=None):
    return _e.empty(tuple(x.shape), dtype=dtype or x.dtype, device=device or x.device)


def zeros_like(x, /, *, dtype=None, device=None):
    return _e.zeros(tuple(x.shape), dtype=dtype or x.dtype, device=device or x.device)


def ones_like(x, /, *, dtype=None, device=None):
    return _e.ones(tuple(x.shape), dtype=dtype or x.dtype, device=device or x.device)


def full(shape, fill_value, *, dtype=None, device=None):
    if dtype is None:
        dtype = _scalar_dtype(fill_value)
    return _e.full(_shape(shape), fill_value, dtype=dtype, device=device)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    return full(tuple(x.shape), fill_value, dtype=dtype or x.dtype, device=device or x.device)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    dtype = dtype or _default_float()
    arr = np.eye(n_rows, n_cols, k=k, dtype=dtype.np)
    return _e.from_numpy(arr) if device is None else _e.from_numpy(arr).to(device)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    if dtype is None:
        dtype = _e.complex64 if builtins.any(isinstance(v, complex) for v in (start, stop)) \
            else _default_float()
        if dtype is _e.complex64 and _default_float() is _e.float64:
            dtype = _e.complex128
    arr = np.linspace(start, stop, num, endpoint=endpoint, dtype=np.result_type(
        dtype.np, np.float64 if not dtype.is_complex else np.complex128)).astype(dtype.np)
    return _e.from_numpy(arr) if device is None else _e.from_numpy(arr).to(device)


def meshgrid(*arrays, indexing="xy"):
    if indexing not in ("xy", "ij"):
        raise ValueError("indexing must be 'xy' or 'ij'")
    return list(_e.meshgrid(*arrays, indexing=indexing))


def tril(x, /, *, k=0):
    return _e.tril(x, diagonal=k)


def triu(x, /, *, k=0):
    return _e.triu(x, diagonal=k)


from_dlpack = _e.from_dlpack


# ---------------------------------------------------------------------------- data types


def astype(x, dtype, /, *, copy=True, device=None):
    if not copy and x.dtype is dtype and device is None:
        return x
    out = x.to(dtype)
    if out is x and copy:
        out = x.clone()
    return out if device is None else out.to(device)


def can_cast(from_, to, /):
    src = from_.dtype if isinstance(from_, _T) else from_
    if src.is_complex and not to.is_complex:
        return False
    if src.is_floating_point and not (to.is_floating_point or to.is_complex):
        return False
    if src is _e.bool:
        return True
    if to is _e.bool:
        return False
    return _D.promote_types(src, to) is to if hasattr(_D, "promote_types") else \
        _e.promote_types(src, to) is to


class _FInfo:
    def __init__(self, dtype):
        fi = np.finfo(dtype.np)
        self.bits, self.eps, self.max = int(fi.bits), float(fi.eps), float(fi.max)
        self.min, self.smallest_normal = float(fi.min), float(fi.smallest_normal)
        self.dtype = dtype


class _IInfo:
    def __init__(self, dtype):
        ii = np.iinfo(dtype.np)
        self.bits, self.max, self.min, self.dtype = int(ii.bits), int(ii.max), int(ii.min), dtype


def finfo(type, /):  # noqa: A002
    dt = type.dtype if isinstance(type, _T) else type
    if dt.is_complex:
        dt = dt.to_real()
    return _FInfo(dt)


def iinfo(type, /):  # noqa: A002
    return _IInfo(type.dtype if isinstance(type, _T) else type)


_KINDS = {
    "bool": lambda d: d is _e.bool,
    "signed integer": lambda d: d in (_e.int8, _e.int16, _e.int32, _e.int64),
    "unsigned integer": lambda d: d is _e.uint8,
    "integral": lambda d: d in (_e.int8, _e.int16, _e.int32, _e.int64, _e.uint8),
    "real floating": lambda d: d in (_e.float32, _e.float64, _e.float16, _e.bfloat16),
    "complex floating": lambda d: d in (_e.complex64, _e.complex128),
}
_KINDS["numeric"] = lambda d: d is not _e.bool


def isdtype(dtype, kind):
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r}")
        return _KINDS[kind](dtype)
    return dtype is kind


def result_type(*arrays_and_dtypes):
    dts = [a.dtype if isinstance(a, _T) else a for a in arrays_and_dtypes
           if not isinstance(a, (builtins.bool, int, float, complex))]
    if not dts:
        raise ValueError("result_type needs at least one array or dtype")
    out = dts[0]
    for d in dts[1:]:
        out = _e.promote_types(out, d)
    for s in arrays_and_dtypes:
        if isinstance(s, (builtins.bool, int, float, complex)):
            out = _e.result_type(_e.empty((), dtype=out), s)
    return out


# ---------------------------------------------------------------------------- elementwise


def _binary(fn):
    def f(x1, x2, /):
        if not isinstance(x1, _T) and not isinstance(x2, _T):
            raise TypeError("at least one argument must be an array")
        if not isinstance(x1, _T):
            x1 = _e.tensor(x1, dtype=_scalar_dtype(x1, x2.dtype))
        if not isinstance(x2, _T):
            x2 = _e.tensor(x2, dtype=_scalar_dtype(x2, x1.dtype))
        if x1.dtype is not x2.dtype:
            # the standard promotes by dtype alone (torch lets 0-d tensors defer to others)
            dt = _e.promote_types(x1.dtype, x2.dtype)
            x1, x2 = x1.to(dt), x2.to(dt)
        return fn(x1, x2)
    return f


def _unary(fn):
    def f(x, /):
        return fn(x)
    f.__name__ = fn.__name__
    return f


abs = _unary(_e.abs)  # noqa: A001
acos = _unary(_e.acos)
acosh = _unary(_e.acosh)
asin = _unary(_e.asin)
asinh = _unary(_e.asinh)
atan = _unary(_e.atan)
atanh = _unary(_e.atanh)
cos = _unary(_e.cos)
cosh = _unary(_e.cosh)
exp = _unary(_e.exp)
expm1 = _unary(_e.expm1)
isfinite = _unary(_e.isfinite)
isinf = _unary(_e.isinf)
isnan = _unary(_e.isnan)
log = _unary(_e.log)
log1p = _unary(_e.log1p)
log2 = _unary(_e.log2)
log10 = _unary(_e.log10)
logical_not = _unary(_e.logical_not)
negative = _unary(_e.neg)
sin = _unary(_e.sin)
sinh = _unary(_e.sinh)
sqrt = _unary(_e.sqrt)
tan = _unary(_e.tan)
tanh = _unary(_e.tanh)
bitwise_invert = _unary(_e.bitwise_not)


add = _binary(_e.add)
atan2 = _binary(_e.atan2)
bitwise_and = _binary(_e.bitwise_and)
bitwise_or = _binary(_e.bitwise_or)
bitwise_xor = _binary(_e.bitwise_xor)
bitwise_left_shift = _binary(_e.bitwise_left_shift)
bitwise_right_shift = _binary(_e.bitwise_right_shift)
divide = _binary(_e.div)
equal = _binary(_e.eq)
floor_divide = _binary(_e.floor_divide)
greater = _binary(_e.gt)
greater_equal = _binary(_e.ge)
hypot = _binary(_e.hypot)
less = _binary(_e.lt)
less_equal = _binary(_e.le)
logaddexp = _binary(_e.logaddexp)
logical_and = _binary(_e.logical_and)
logical_or = _binary(_e.logical_or)
logical_xor = _binary(_e.logical_xor)
maximum = _binary(_e.maximum)
minimum = _binary(_e.minimum)
multiply = _binary(_e.mul)
not_equal = _binary(_e.ne)
pow = _binary(_e.pow)  # noqa: A001
remainder = _binary(_e.remainder)
subtract = _binary(_e.sub)


def _int_keep(fn):
    def f(x, /):
        return x.clone() if not (x.is_floating_point() or x.is_complex()) else fn(x)
    return f


ceil, floor, trunc = _int_keep(_e.ceil), _int_keep(_e.floor), _int_keep(_e.trunc)


def round(x, /):  # noqa: A001
    if x.is_complex():
        return _e.complex(_e.round(x.real), _e.round(x.imag))
    return x.clone() if not x.is_floating_point() else _e.round(x)


def positive(x, /):
    return x.clone()


def square(x, /):
    return x * x


def reciprocal(x, /):
    return _e.reciprocal(x)


def sign(x, /):
    if x.is_complex():
        mag = _e.abs(x)
        return _e.where(mag == 0, _e.zeros_like(x), x / _e.where(mag == 0, 1.0, mag))
    out = _e.sign(x)
    return _e.where(_e.isnan(x), x, out) if x.is_floating_point() else out


def signbit(x, /):
    return _e.signbit(x)


copysign = _binary(_e.copysign)
nextafter = _binary(_e.nextafter)


def real(x, /):
    return _e.real(x).clone() if x.is_complex() else x.clone()


def imag(x, /):
    return _e.imag(x).clone() if x.is_complex() else _e.zeros_like(x)


def conj(x, /):
    return _e.conj(x).resolve_conj() if x.is_complex() else x.clone()


def clip(x, /, min=None, max=None):  # noqa: A002
    out = x
    if min is not None:
        out = _e.maximum(out, min if isinstance(min, _T) else _e.tensor(min, dtype=x.dtype))
    if max is not None:
        out = _e.minimum(out, max if isinstance(max, _T) else _e.tensor(max, dtype=x.dtype))
    return out.to(x.dtype) if out is not x else x.clone()


# ---------------------------------------------------------------------------- indexing


def take(x, indices, /, *, axis=None):
    if axis is None:
        if x.ndim != 1:
            raise ValueError("take: axis is required for arrays of more than one dimension")
        axis = 0
    return _e.index_select(x, axis, indices)


def take_along_axis(x, indices, /, *, axis=-1):
    return _e.take_along_dim(x, indices, dim=axis)


# ---------------------------------------------------------------------------- linear algebra


def matmul(x1, x2, /):
    return _e.matmul(x1, x2)


def matrix_transpose(x, /):
    if x.ndim < 2:
        raise ValueError("matrix_transpose needs at least two dimensions")
    return x.transpose(-1, -2)


def tensordot(x1, x2, /, *, axes=2):
    if x1.numel() == 0 or x2.numel() == 0:  # an empty contraction: zeros of the result shape
        dt = _e.promote_types(x1.dtype, x2.dtype)
        shape = np.tensordot(np.zeros(tuple(x1.shape)), np.zeros(tuple(x2.shape)),
                             axes=axes).shape
        return _e.zeros(shape, dtype=dt)
    return _e.tensordot(x1, x2, dims=axes)


def vecdot(x1, x2, /, *, axis=-1):
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot: x1 has size {x1.shape[axis]} and x2 size {x2.shape[axis]} "
                         f"along axis {axis}; they must be equal")
    a, b = _e.broadcast_tensors(x1, x2)
    dt = _e.promote_types(x1.dtype, x2.dtype)
    out = (_e.conj(a) * b).sum(axis) if a.is_complex() else (a * b).sum(axis)
    return out.to(dt)
