"""The scalar-builder protocol: the per-element vocabulary of elementwise formulas.

An elementwise op's `scalar(b, *xs, **attrs)` formula is written once against a builder `b`
that provides the primitives below. `ArrayBuilder` evaluates a formula on whole numpy/cupy
arrays (this is eager's kernel for elementwise ops); codegen provides builders that emit LLVM IR
or CUDA C from the same formula (minitorch's map/zip, tinygrad's ALU ops).

Primitives (binary ones accept a Python number on either side; it takes the other operand's
dtype): add sub mul div pow maximum minimum (NaN-propagating), lt le gt ge eq ne (-> bool),
neg abs sign exp log sqrt tanh erf (float), where(cond, x, y), logical_not, cast(x, dtype),
and `dtype(x)`, the wick dtype of a value.
"""

from __future__ import annotations

from . import dtypes as D

PRIMITIVES = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum",
    "lt", "le", "gt", "ge", "eq", "ne",
    "neg", "abs", "sign", "exp", "log", "sqrt", "tanh", "erf",
    "where", "logical_not", "cast",
)


class ArrayBuilder:
    """Evaluates scalar formulas elementwise on arrays of namespace `xp` (numpy or cupy)."""

    def __init__(self, xp):
        self.xp = xp

    def dtype(self, x):
        return D.from_numpy(x.dtype)

    # arithmetic; numpy 2 treats Python numbers as weak (NEP 50), as PyTorch does
    def add(self, x, y):
        return x + y

    def sub(self, x, y):
        return x - y

    def mul(self, x, y):
        return x * y

    def div(self, x, y):
        return x / y

    def pow(self, x, y):
        return x**y

    def maximum(self, x, y):
        return self.xp.maximum(x, y)

    def minimum(self, x, y):
        return self.xp.minimum(x, y)

    def lt(self, x, y):
        return x < y

    def le(self, x, y):
        return x <= y

    def gt(self, x, y):
        return x > y

    def ge(self, x, y):
        return x >= y

    def eq(self, x, y):
        return x == y

    def ne(self, x, y):
        return x != y

    def neg(self, x):
        return -x

    def abs(self, x):
        return self.xp.abs(x)

    def sign(self, x):
        return self.xp.sign(x)

    def exp(self, x):
        return self.xp.exp(x)

    def log(self, x):
        return self.xp.log(x)

    def sqrt(self, x):
        return self.xp.sqrt(x)

    def tanh(self, x):
        return self.xp.tanh(x)

    def erf(self, x):
        if self.xp.__name__ == "numpy":
            from scipy.special import erf
        else:
            from cupyx.scipy.special import erf
        return erf(x)

    def where(self, c, x, y):
        return self.xp.where(c, x, y)

    def logical_not(self, x):
        return self.xp.logical_not(x)

    def cast(self, x, dtype):
        return self.xp.asarray(x).astype(dtype.np, copy=False)
