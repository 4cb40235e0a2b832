"""The scalar-builder protocol: the per-element vocabulary of elementwise formulas.

An elementwise op's `scalar(b, *xs, **attrs)` formula is written once against a builder `b`
that provides the primitives below. `ArrayBuilder` evaluates a formula on whole numpy/cupy
arrays (this is eager's kernel for elementwise ops); codegen provides builders that emit LLVM IR
or CUDA C from the same formula (minitorch's map/zip, tinygrad's ALU ops).

Primitives (binary ones accept a Python number on either side; it takes the other operand's
dtype). The set is closed: a new primitive touches this file and the codegen renderers only.

- arithmetic: add sub mul div pow maximum minimum (NaN-propagating), fmod (C fmod: sign of
  the dividend), remainder (Python/floor modulo: sign of the divisor), floordiv
- comparisons (-> bool): lt le gt ge eq ne; tests: isnan isinf
- logic and bits (bool/int): logical_not bitwise_and bitwise_or bitwise_xor bitwise_not
  lshift rshift
- float math: neg abs sign exp exp2 expm1 log log2 log1p sqrt rsqrt sin cos tan asin acos atan
  atan2 sinh cosh tanh asinh acosh atanh erf erfc erfinv hypot floor ceil round (half to
  even) trunc
- select and convert: where(cond, x, y), cast(x, dtype); `dtype(x)` is a value's wick dtype
"""

from __future__ import annotations

from . import dtypes as D

PRIMITIVES = (
    "add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder", "floordiv",
    "lt", "le", "gt", "ge", "eq", "ne", "isnan", "isinf",
    "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "lshift", "rshift",
    "neg", "abs", "sign", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt",
    "sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh",
    "acosh", "atanh", "erf", "erfc", "erfinv", "hypot", "floor", "ceil", "round", "trunc",
    "where", "cast",
)

# numpy/cupy ufunc of each primitive that maps one to one (the rest are methods below)
_UFUNC = {
    "fmod": "fmod", "remainder": "remainder", "floordiv": "floor_divide", "isnan": "isnan",
    "isinf": "isinf", "logical_not": "logical_not", "bitwise_and": "bitwise_and",
    "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor", "bitwise_not": "invert",
    "lshift": "left_shift", "rshift": "right_shift", "exp2": "exp2", "expm1": "expm1",
    "log2": "log2", "log1p": "log1p", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "arcsin", "acos": "arccos", "atan": "arctan", "atan2": "arctan2", "sinh": "sinh",
    "cosh": "cosh", "asinh": "arcsinh", "acosh": "arccosh", "atanh": "arctanh",
    "hypot": "hypot", "floor": "floor", "ceil": "ceil", "round": "round", "trunc": "trunc",
}
_SPECIAL = {"erf", "erfc", "erfinv"}  # scipy.special / cupyx.scipy.special

# Every primitive that is one ufunc on arrays: its name in numpy/cupy (or scipy.special). The
# one table of this fact: OpDef.ufunc is read from it at registration (ir/opdef.py).
UFUNCS = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "true_divide", "pow": "power",
    "maximum": "maximum", "minimum": "minimum", "lt": "less", "le": "less_equal",
    "gt": "greater", "ge": "greater_equal", "eq": "equal", "ne": "not_equal",
    "neg": "negative", "abs": "absolute", "sign": "sign", "exp": "exp", "log": "log",
    "sqrt": "sqrt", "tanh": "tanh", **{k: v for k, v in _UFUNC.items() if k != "round"},
    **{k: k for k in _SPECIAL},
}


def ufunc_of(name: str, xp):
    """The ufunc called `name` in namespace `xp` (numpy or cupy), or in its scipy.special."""
    if name in _SPECIAL:
        return getattr(_special(xp), name)
    return getattr(xp, name)


def _special(xp):
    """scipy.special for numpy, cupyx.scipy.special for cupy (imported on first use: scipy is
    slow to import and cupy optional)."""
    if xp.__name__ == "numpy":
        import scipy.special as special
    else:
        import cupyx.scipy.special as special
    return special


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

    def rsqrt(self, x):
        return 1 / self.xp.sqrt(x)

    def where(self, c, x, y):
        return self.xp.where(c, x, y)

    def __getattr__(self, name):
        if name in _UFUNC:
            return getattr(self.xp, _UFUNC[name])
        if name in _SPECIAL:
            return getattr(_special(self.xp), name)
        raise AttributeError(f"{name!r} is not a scalar primitive (see ir/scalar.py)")

    def cast(self, x, dtype):
        return self.xp.asarray(x).astype(dtype.np, copy=False)
