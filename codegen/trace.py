"""The recording scalar builder: an elementwise formula traced into a typed SSA body.

`TraceBuilder` implements every primitive of the scalar-builder protocol (`ir/scalar.py`) by
recording a `Stmt`; the result dtype of each primitive is numpy's, obtained by running the same
primitive of `ir.scalar.ArrayBuilder` on empty numpy arrays of the operands' dtypes (so a traced
formula computes exactly what eager computes, NEP 50 weak Python numbers included), and every
operand is given an explicit `cast` to the dtype the primitive computes in, so that renderers
see operands of one dtype and only print. Python-number-only operations fold in Python.
Imports only `ir` and numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ir import dtypes as D
from ir.dtypes import DType
from ir.opdef import is_number
from ir.scalar import PRIMITIVES, ArrayBuilder


def short(dtype: DType) -> str:
    """f32, i64, b8...: short dtype names for dumps."""
    s = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16", "bool": "b8"}
    if dtype.name in s:
        return s[dtype.name]
    return dtype.name.replace("uint", "u").replace("int", "i")


@dataclass(frozen=True, eq=False)
class Var:
    """An SSA value of the kernel body (one element per loop iteration)."""

    name: str
    dtype: DType

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Const:
    """A typed constant (a Python number given the dtype it takes part in)."""

    value: object
    dtype: DType

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(eq=False)
class Stmt:
    """`out = op(*args, **attrs)`: `op` is a scalar primitive, "load" (attrs: input index),
    "load_out" (attrs: output index; a value an earlier phase stored there at the same index)
    or "acc" (the current value of reduction accumulator attrs["acc"])."""

    out: Var
    op: str
    args: tuple
    attrs: dict = field(default_factory=dict)

    def format(self) -> str:
        parts = [str(a) for a in self.args]
        parts += [f"{k}={v.name if isinstance(v, DType) else v}" for k, v in self.attrs.items()]
        return f"{self.out} = {self.op}({', '.join(parts)})  {short(self.out.dtype)}"


def is_value(x) -> bool:
    return isinstance(x, (Var, Const))


def python_dtype(x) -> DType:
    """The dtype numpy gives a lone Python number (bool, int64, float64)."""
    if isinstance(x, bool):
        return D.bool_
    if isinstance(x, int):
        return D.int64
    if isinstance(x, float):
        return D.float64
    raise TypeError(f"codegen: unsupported Python constant {x!r} of type {type(x).__name__}")


def binary_dtype(x, y) -> DType:
    """numpy's common dtype of two operands: values (`.dtype`) and weak Python numbers."""
    a = np.empty(0, x.dtype.np) if is_value(x) else x
    b = np.empty(0, y.dtype.np) if is_value(y) else y
    return D.from_numpy(np.result_type(a, b))


def convert_number(x, dtype: DType):
    """A Python number converted as numpy converts it to `dtype` (float32 rounds, ints wrap)."""
    if dtype is D.bool_:
        return bool(x)
    if dtype.category == D.INTEGER:
        return int(np.array(int(x)).astype(dtype.np))
    return float(np.array(x, dtype=dtype.np))


def is_unsigned(dtype: DType) -> bool:
    """Whether integer arithmetic on `dtype` is unsigned (the uint dtypes and bool)."""
    return dtype.np.kind in "ub"


class PrimitiveRenderer:
    """What the LLVM and CUDA renderers (`codegen.llvm`, `codegen.cuda`) share: the error for a
    primitive numpy does not define on a dtype, and the comparison and shift primitives, which
    each renderer prints through its own `_cmp(name, dt, x, y)` and `_shift(name, dt, x, y)`."""

    @staticmethod
    def _no(name: str, dtype: DType):
        raise TypeError(f"codegen: {name} is not defined on {dtype.name} (numpy raises too)")

    def p_lt(self, dt, x, y):
        return self._cmp("lt", dt, x, y)

    def p_le(self, dt, x, y):
        return self._cmp("le", dt, x, y)

    def p_gt(self, dt, x, y):
        return self._cmp("gt", dt, x, y)

    def p_ge(self, dt, x, y):
        return self._cmp("ge", dt, x, y)

    def p_eq(self, dt, x, y):
        return self._cmp("eq", dt, x, y)

    def p_ne(self, dt, x, y):
        return self._cmp("ne", dt, x, y)

    def p_lshift(self, dt, x, y):
        return self._shift("lshift", dt, x, y)

    def p_rshift(self, dt, x, y):
        return self._shift("rshift", dt, x, y)


# primitive families: how operands are cast before the primitive runs
CMP = ("lt", "le", "gt", "ge", "eq", "ne")
TESTS = ("isnan", "isinf")
OTHER = ("where", "cast", "logical_not")


class TraceBuilder:
    """The scalar-builder protocol recording a typed SSA body (see the module docstring).

    Raises TypeError where numpy raises for the operand dtypes (e.g. `sub` on bool), so a
    formula that eager would reject is never compiled.
    """

    def __init__(self):
        self.body: list[Stmt] = []
        self._count = 0
        self._np = ArrayBuilder(np)

    def emit(self, op: str, args: tuple, out_dtype: DType, **attrs) -> Var:
        out = Var(f"t{self._count}", out_dtype)
        self._count += 1
        self.body.append(Stmt(out, op, tuple(args), attrs))
        return out

    def dtype(self, x) -> DType:
        return x.dtype if is_value(x) else python_dtype(x)

    def as_dtype(self, x, dtype: DType):
        """`x` (value or number) as an operand of `dtype`."""
        if is_number(x):
            return Const(convert_number(x, dtype), dtype)
        return x if x.dtype is dtype else self.cast(x, dtype)

    def _numpy(self, name, *xs):
        """numpy's result of primitive `name` on empty arrays / numbers: dtype or a number."""
        args = [np.empty(0, x.dtype.np) if is_value(x) else x for x in xs]
        with np.errstate(all="ignore"):
            r = getattr(self._np, name)(*args)
        if isinstance(r, np.ndarray) and r.ndim > 0:
            return D.from_numpy(r.dtype)
        return r.item() if isinstance(r, (np.generic, np.ndarray)) else r

    def _prim(self, name, *xs):
        if all(is_number(x) for x in xs):
            return self._numpy(name, *xs)  # folded in Python, as numpy computes it
        out = self._numpy(name, *xs)
        if name in CMP:
            common = binary_dtype(*xs)
            return self.emit(name, tuple(self.as_dtype(x, common) for x in xs), out)
        if name in TESTS:
            return self.emit(name, xs, out)
        return self.emit(name, tuple(self.as_dtype(x, out) for x in xs), out)

    def __getattr__(self, name):
        if name in PRIMITIVES and name not in OTHER:
            def prim(*xs):
                return self._prim(name, *xs)

            prim.__name__ = name
            return prim
        raise AttributeError(f"{name!r} is not a scalar primitive (see ir/scalar.py)")

    def where(self, c, x, y):
        if is_number(c):
            return x if c else y
        c = self.as_dtype(c, D.bool_)
        if is_number(x) and is_number(y):
            dt = D.from_numpy(np.result_type(np.array(x), np.array(y)))
        else:
            dt = binary_dtype(x, y)
        return self.emit("where", (c, self.as_dtype(x, dt), self.as_dtype(y, dt)), dt)

    def logical_not(self, x):
        if is_number(x):
            return not x
        return self.emit("logical_not", (self.as_dtype(x, D.bool_),), D.bool_)

    def cast(self, x, dtype: DType):
        if is_number(x):
            return convert_number(x, dtype)
        if x.dtype is dtype:
            return x
        if x.dtype.is_floating_point and dtype.category == D.INTEGER:
            return self._float_to_int(x, dtype)
        return self.emit("cast", (x,), dtype, dtype=dtype)

    def _float_to_int(self, x, dtype: DType):
        """numpy's float -> integer cast on x86-64, defined for every input (LLVM's fptosi
        of NaN, inf or an out-of-range value is poison): truncation toward zero when the
        value fits the intermediate (int32 for types of 4 bytes or less, int64 otherwise),
        else the intermediate's minimum (cvttss2si's "integer indefinite"), then wrapped to
        `dtype` (int8(300.0) = 44, int8(nan) = 0, int32(nan) = int32(3e9) = -2**31,
        uint8(-1.0) = 255). Only in-range values reach the conversion itself."""
        if x.dtype.itemsize < 4:   # float16: exactly representable in float32
            x = self.emit("cast", (x,), D.float32, dtype=D.float32)
        via = D.int64 if dtype.itemsize == 8 else D.int32
        bound = float(2 ** (8 * via.itemsize - 1))
        ok = self.bitwise_and(self.ge(x, -bound), self.lt(x, bound))   # False for NaN
        safe = self.emit("cast", (self.where(ok, x, 0.0),), via, dtype=via)
        v = self.where(ok, safe, Const(-int(bound), via))
        return v if via is dtype else self.emit("cast", (v,), dtype, dtype=dtype)
