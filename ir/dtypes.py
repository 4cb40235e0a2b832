"""dtypes and type promotion, shared by every layer.

A `DType` is one object per element type (`ir.float32` is `eager.float32`); it knows its numpy
dtype, its category (bool < integer < floating < complex) and its LLVM/C names are derived from
it by codegen. Promotion follows `torch.result_type`: tensors with dimensions decide the dtype
within a category; zero-dim tensors and Python scalars only raise the category.
Imports nothing of wick's.
"""

from __future__ import annotations

import numpy as np

BOOL, INTEGER, FLOATING, COMPLEX = 0, 1, 2, 3


class DType:
    """An element type. `name` is PyTorch's (`float32`), `np` the numpy dtype."""

    __slots__ = ("name", "np", "category", "itemsize")

    def __init__(self, name: str, np_dtype, category: int):
        self.name = name
        self.np = np.dtype(np_dtype)
        self.category = category
        self.itemsize = self.np.itemsize

    @property
    def is_floating_point(self) -> bool:
        return self.category == FLOATING

    @property
    def is_complex(self) -> bool:
        return self.category == COMPLEX

    @property
    def is_signed(self) -> bool:
        return self.category != BOOL

    def __repr__(self) -> str:
        return f"eager.{self.name}"

    def __reduce__(self):
        return (from_name, (self.name,))


bool_ = DType("bool", np.bool_, BOOL)
int64 = DType("int64", np.int64, INTEGER)
float32 = DType("float32", np.float32, FLOATING)
float64 = DType("float64", np.float64, FLOATING)

ALL = (bool_, int64, float32, float64)
_BY_NP = {d.np: d for d in ALL}
_BY_NAME = {d.name: d for d in ALL}
# PyTorch aliases
_BY_NAME.update({"float": float32, "double": float64, "long": int64})

_default_float = [float32]


def get_default_dtype() -> DType:
    """The dtype Python floats and integer true division become (PyTorch: float32)."""
    return _default_float[0]


def set_default_dtype(d: DType) -> None:
    """Set the default floating dtype; raises TypeError for a non-floating dtype."""
    if not isinstance(d, DType) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    _default_float[0] = d


def from_name(name: str) -> DType:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise TypeError(f"unknown dtype name {name!r}") from None


def from_numpy(np_dtype) -> DType:
    """The wick dtype of a numpy dtype; raises TypeError for a dtype wick does not support."""
    d = _BY_NP.get(np.dtype(np_dtype))
    if d is None:
        raise TypeError(
            f"numpy dtype {np.dtype(np_dtype)} is not supported; "
            f"supported: {', '.join(x.name for x in ALL)}"
        )
    return d


def to_dtype(x) -> DType:
    """Accept a DType, a numpy dtype/type, or a Python type (float, int, bool)."""
    if isinstance(x, DType):
        return x
    if x is float:
        return get_default_dtype()
    if x is int:
        return int64
    if x is bool:
        return bool_
    if isinstance(x, str):
        return from_name(x)
    return from_numpy(x)


def promote_types(a: DType, b: DType) -> DType:
    """`torch.promote_types`: the smallest dtype both can be cast to without losing category."""
    if a is b:
        return a
    if a.category != b.category:
        return a if a.category > b.category else b
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
    return {BOOL: bool_, INTEGER: int64, FLOATING: get_default_dtype()}[cat]


def result_type(*operands) -> DType:
    """`torch.result_type` over operands that are (dtype, ndim) pairs or Python scalars.

    Dimensioned tensors promote among themselves; zero-dim tensors and then Python scalars
    change the result only when their category is higher.
    """
    dim_t = zero_t = None
    scal_cat = -1
    for op in operands:
        if isinstance(op, tuple):
            dt, ndim = op
            if ndim > 0:
                dim_t = dt if dim_t is None else promote_types(dim_t, dt)
            else:
                zero_t = dt if zero_t is None else promote_types(zero_t, dt)
        else:
            scal_cat = max(scal_cat, scalar_category(op))
    out = dim_t
    if zero_t is not None and (out is None or zero_t.category > out.category):
        out = zero_t
    if scal_cat >= 0 and (out is None or scal_cat > out.category):
        out = default_for_category(scal_cat)
    if out is None:
        raise TypeError("result_type needs at least one operand")
    return out
