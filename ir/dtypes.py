"""dtypes, type promotion and numeric limits, shared by every layer.

A `DType` is one object per element type (`ir.float32` is `eager.float32`); it knows its numpy
dtype (bfloat16 comes from the `ml_dtypes` package), its category (bool < integer < floating <
complex) and PyTorch's names for it. Promotion follows `torch.promote_types` (the pairwise
lattice) and `torch.result_type` (tensors with dimensions decide the dtype within a category;
zero-dim tensors and then Python scalars only raise the category), as PyTorch's
`c10/core/ScalarType.h` and `ATen/native/TypeProperties.cpp` define them. `finfo`/`iinfo` are
`torch.finfo`/`torch.iinfo`. Imports nothing of wick's.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

BOOL, INTEGER, FLOATING, COMPLEX = 0, 1, 2, 3


class DType:
    """An element type. `name` is PyTorch's (`float32`), `np` the numpy dtype, `title` the name
    PyTorch's error messages use (`Float`), `category` one of BOOL < INTEGER < FLOATING <
    COMPLEX."""

    __slots__ = ("bits", "category", "itemsize", "name", "np", "title")

    def __init__(self, name: str, np_dtype, category: int, title: str):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category
        self.itemsize = self.np.itemsize
        self.bits = 8 * self.itemsize
        self.title = title

    @property
    def is_floating_point(self) -> bool:
        """True for float16/bfloat16/float32/float64 (not complex), as PyTorch."""
        return self.category == FLOATING

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    @property
    def is_signed(self) -> bool:
        return self.category != BOOL and self is not uint8

    def to_real(self) -> DType:
        """complex64 -> float32, complex128 -> float64; other dtypes unchanged."""
        return _TO_REAL.get(self, self)

    def to_complex(self) -> DType:
        """float32 (and float16/bfloat16) -> complex64, float64 -> complex128."""
        if self.category == COMPLEX:
            return self
        if self is float64:
            return complex128
        if self is float16:
            raise TypeError("complex32 (ComplexHalf) is not supported by wick")
        return complex64

    def __repr__(self) -> str:
        return f"eager.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = DType("bool", np.bool_, BOOL, "Bool")
uint8 = DType("uint8", np.uint8, INTEGER, "Byte")
int8 = DType("int8", np.int8, INTEGER, "Char")
int16 = DType("int16", np.int16, INTEGER, "Short")
int32 = DType("int32", np.int32, INTEGER, "Int")
int64 = DType("int64", np.int64, INTEGER, "Long")
float16 = DType("float16", np.float16, FLOATING, "Half")
bfloat16 = DType("bfloat16", ml_dtypes.bfloat16, FLOATING, "BFloat16")
float32 = DType("float32", np.float32, FLOATING, "Float")
float64 = DType("float64", np.float64, FLOATING, "Double")
complex64 = DType("complex64", np.complex64, COMPLEX, "ComplexFloat")
complex128 = DType("complex128", np.complex128, COMPLEX, "ComplexDouble")

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64, complex64,
       complex128)
HALF = (float16, bfloat16)
_TO_REAL = {complex64: float32, complex128: float64}
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
# PyTorch's aliases (torch.half, torch.cfloat, ...)
ALIASES = {"half": float16, "float": float32, "double": float64, "cfloat": complex64,
           "cdouble": complex128, "short": int16, "int": int32, "long": int64}
_BY_NAME.update(ALIASES)

_default_float = [float32]
# called with no argument after the default dtype changes (eager's fast path clears its caches)
DEFAULT_DTYPE_LISTENERS: list = []


def get_default_dtype() -> DType:
    """The dtype Python floats and integer true division become (PyTorch: float32)."""
    return _default_float[0]


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype (float16, bfloat16, float32 or float64), as
    `torch.set_default_dtype`; raises TypeError for any other dtype."""
    if not isinstance(d, DType) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float[0] = d
    for fn in DEFAULT_DTYPE_LISTENERS:
        fn()


def default_complex_dtype() -> DType:
    """The complex counterpart of the default float dtype (Python complex scalars' dtype)."""
    return complex128 if _default_float[0] is float64 else complex64


def from_name(name: str) -> DType:
    try:
        return _BY_NAME[name.removeprefix("torch.").removeprefix("eager.")]
    except KeyError:
        raise TypeError(f"unknown dtype name {name!r}") from None


def from_numpy(np_dtype) -> DType:
    """The wick dtype of a numpy dtype; raises TypeError for a dtype wick does not support."""
    d = _BY_NP.get(np_dtype)
    if d is None:
        d = _BY_NP.get(np.dtype(np_dtype))
        if d is None:
            raise TypeError(
                f"numpy dtype {np.dtype(np_dtype)} is not supported; "
                f"supported: {', '.join(x.name for x in ALL)}"
            )
    return d


def to_dtype(x) -> DType:
    """Accept a DType, a numpy dtype/type, a name, or a Python type (float, int, bool, complex)."""
    if isinstance(x, DType):
        return x
    if x is float:
        return get_default_dtype()
    if x is int:
        return int64
    if x is bool:
        return bool_
    if x is complex:
        return default_complex_dtype()
    if isinstance(x, str):
        return from_name(x)
    return from_numpy(x)


# ---------------------------------------------------------------- promotion


def promote_types(a: DType, b: DType) -> DType:
    """`torch.promote_types`: the smallest dtype both can be cast to without losing category.

    uint8 with a signed integer goes to the next signed type that holds both (int8 -> int16);
    float16 with bfloat16 goes to float32; an integer with a float gives the float; a float
    with a complex gives the complex type of the wider precision (float64 + complex64 ->
    complex128).
    """
    if a is b:
        return a
    if a.category != b.category:
        hi, lo = (a, b) if a.category > b.category else (b, a)
        if hi.category == COMPLEX and lo is float64:
            return complex128
        return hi
    if a.category == INTEGER and uint8 in (a, b):
        other = b if a is uint8 else a
        return int16 if other is int8 else other
    if a.category == FLOATING and a in HALF and b in HALF:
        return float32
    return a if a.itemsize >= b.itemsize else b


def scalar_category(v) -> int:
    if isinstance(v, bool):
        return BOOL
    if isinstance(v, int):
        return INTEGER
    if isinstance(v, float):
        return FLOATING
    if isinstance(v, complex):
        return COMPLEX
    raise TypeError(f"expected a tensor or a Python number, got {type(v).__name__}")


def default_for_category(cat: int) -> DType:
    """The dtype a Python scalar of category `cat` takes (bool, int64, default float/complex)."""
    if cat == COMPLEX:
        return default_complex_dtype()
    return (bool_, int64, get_default_dtype())[cat]


def _combine_categories(higher: DType | None, lower: DType | None) -> DType | None:
    """PyTorch's `combine_categories`: `higher` (from a higher-priority operand group) keeps its
    dtype unless `lower` belongs to a higher category."""
    if higher is None:
        return lower
    if lower is None or higher.category == COMPLEX:
        return higher
    if lower.category == COMPLEX:
        return higher.to_complex() if higher.category == FLOATING else lower
    if higher.category == FLOATING:
        return higher
    if higher is bool_ or lower.category == FLOATING:
        return promote_types(higher, lower)
    return higher


def result_type(*operands) -> DType:
    """`torch.result_type` over operands that are (dtype, ndim) pairs or Python scalars.

    Dimensioned tensors promote among themselves; zero-dim tensors and then Python scalars
    (bool, int -> int64, float -> default dtype, complex -> default complex dtype) change the
    result only when their category is higher. Raises TypeError without operands.
    """
    dim_t = zero_t = wrapped = None
    for op in operands:
        if isinstance(op, tuple):
            dt, ndim = op
            if ndim > 0:
                dim_t = dt if dim_t is None else promote_types(dim_t, dt)
            else:
                zero_t = dt if zero_t is None else promote_types(zero_t, dt)
        else:
            dt = default_for_category(scalar_category(op))
            wrapped = dt if wrapped is None else promote_types(wrapped, dt)
    out = _combine_categories(dim_t, _combine_categories(zero_t, wrapped))
    if out is None:
        raise TypeError("result_type needs at least one operand")
    return out


def can_cast(src: DType, dst: DType) -> bool:
    """`torch.can_cast`: False from complex to non-complex, floating to integral, and from a
    non-bool to bool (the rule in-place ops and `out=` enforce)."""
    if src.category == COMPLEX and dst.category != COMPLEX:
        return False
    if src.category == FLOATING and dst.category <= INTEGER:
        return False
    return not (src is not bool_ and dst is bool_)


# ---------------------------------------------------------------- limits


class finfo:
    """`torch.finfo(dtype)`: machine limits of a floating (or complex: of its real part) dtype.

    Fields (Python floats): bits, eps, max, min, tiny (= smallest_normal), smallest_normal,
    resolution (10**-digits10); dtype is the name ('float32'). Raises TypeError for an integer
    or bool dtype. Without an argument: the default dtype.
    """

    def __init__(self, dtype: DType | None = None):
        d = get_default_dtype() if dtype is None else to_dtype(dtype)
        if d.category < FLOATING:
            raise TypeError("torch.finfo() requires a floating point input type. Use "
                            "torch.iinfo to handle 'torch.finfo'")
        d = d.to_real()
        fi = ml_dtypes.finfo(d.np) if d is bfloat16 else np.finfo(d.np)
        self.bits = d.bits
        self.eps = float(fi.eps)
        self.max = float(fi.max)
        self.min = float(fi.min)
        self.tiny = self.smallest_normal = float(fi.smallest_normal)
        self.resolution = 10.0 ** -math.floor(fi.nmant * math.log10(2))
        self.dtype = d.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.tiny:g}, tiny={self.tiny:g}, "
                f"dtype={self.dtype})")


class iinfo:
    """`torch.iinfo(dtype)`: bits, min, max (Python ints) and dtype name of an integer dtype
    (bool too, as PyTorch). Raises TypeError for floating and complex dtypes."""

    def __init__(self, dtype: DType):
        d = to_dtype(dtype)
        if d.category > INTEGER:
            raise TypeError("torch.iinfo() requires an integer input type. Use torch.finfo to "
                            "handle 'torch.iinfo'")
        self.bits = d.bits
        self.min, self.max = (0, 1) if d is bool_ else (int(np.iinfo(d.np).min),
                                                        int(np.iinfo(d.np).max))
        self.dtype = d.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
