"""Elementwise op declarations: arithmetic, comparisons, math, activations, casts.

Elementwise ops give a `scalar` formula (their eager kernel and their codegen come from it),
a `backward` in registry ops and a numpy/scipy `ref`. Composites give a `decomp`. See
`ir/opdef.py` for the fields. Semantics follow the PyTorch documentation of each op.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import (
    OpDef, is_number, register,
)

SQRT1_2 = 0.7071067811865476
SQRT_2_PI = 0.7978845608028654  # sqrt(2 / pi)
INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi)
FLOATS = (D.float32, D.float64)


def _erf_ref(x):
    from scipy.special import erf

    return erf(x)


def unary(name, scalar, backward, ref, promotion="int_to_float", **kw):
    return register(OpDef(name, "elementwise", "input", 1, promotion, scalar=scalar,
                          backward=backward, ref=ref, **kw))


def binary(name, scalar, backward, ref, promotion="default", dunders=(), sig="input, other",
           **kw):
    return register(OpDef(name, "elementwise", sig, 2, promotion, scalar=scalar,
                          backward=backward, ref=ref, dunders=dunders, **kw))


def _grad(x, g):
    """The gradient of a Python-number operand is None (it is not a tensor)."""
    return None if is_number(x) else g


# ---------------------------------------------------------------- binary arithmetic

binary(
    "add", lambda b, x, y, alpha=1: b.add(x, y if alpha == 1 else b.mul(y, alpha)),
    lambda F, g, out, x, y, alpha=1: (_grad(x, g), _grad(y, g if alpha == 1 else F.mul(g, alpha))),
    lambda x, y, alpha=1: x + alpha * y,
    dunders=("__add__", "__radd__"), sig="input, other, *, alpha=1", samples=({}, {"alpha": 2}),
)
binary(
    "sub", lambda b, x, y, alpha=1: b.sub(x, y if alpha == 1 else b.mul(y, alpha)),
    lambda F, g, out, x, y, alpha=1: (_grad(x, g), _grad(y, F.mul(g, -alpha))),
    lambda x, y, alpha=1: x - alpha * y,
    dunders=("__sub__", "__rsub__"), sig="input, other, *, alpha=1", test_dtypes=(D.int64,) + FLOATS,
)
binary(
    "mul", lambda b, x, y: b.mul(x, y),
    lambda F, g, out, x, y: (_grad(x, F.mul(g, y)), _grad(y, F.mul(g, x))),
    np.multiply, dunders=("__mul__", "__rmul__"),
)
binary(
    "div", lambda b, x, y: b.div(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.div(g, y)), _grad(y, F.neg(F.div(F.mul(g, out), y)))
    ),
    np.true_divide, promotion="int_to_float", dunders=("__truediv__", "__rtruediv__"),
    domain=(0.5, 2.0),
)
def _pow_backward(F, g, out, x, y):
    gx = gy = None
    if not is_number(x):
        gx = F.mul(g, F.mul(y, F.pow(x, y - 1 if is_number(y) else F.sub(y, 1))))
    if not is_number(y):
        gy = F.mul(g, F.mul(out, math.log(x) if is_number(x) else F.log(x)))
    return gx, gy


binary(
    "pow", lambda b, x, y: b.pow(x, y), _pow_backward,
    np.power, sig="input, exponent", dunders=("__pow__", "__rpow__"), domain=(0.5, 2.0),
    test_dtypes=FLOATS,
)
binary(
    "maximum", lambda b, x, y: b.maximum(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.where(F.gt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
        _grad(y, F.where(F.lt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
    ),
    np.maximum, scalar_ok=False,
)
binary(
    "minimum", lambda b, x, y: b.minimum(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.where(F.lt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
        _grad(y, F.where(F.gt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
    ),
    np.minimum, scalar_ok=False,
)

for _name, _ref, _dunder in [
    ("eq", np.equal, "__eq__"), ("ne", np.not_equal, "__ne__"), ("lt", np.less, "__lt__"),
    ("le", np.less_equal, "__le__"), ("gt", np.greater, "__gt__"),
    ("ge", np.greater_equal, "__ge__"),
]:
    binary(_name, (lambda n: lambda b, x, y: getattr(b, n)(x, y))(_name), None, _ref,
           promotion="always_bool", dunders=(_dunder,))

register(OpDef(
    "where", "elementwise", "condition, input, other", 3,
    scalar=lambda b, c, x, y: b.where(c, x, y),
    backward=lambda F, g, out, c, x, y: (
        None, _grad(x, F.where(c, g, 0.0)), _grad(y, F.where(c, 0.0, g))
    ),
    ref=np.where, method=False, promote_from=1,
))

# ---------------------------------------------------------------- unary math

unary("neg", lambda b, x: b.neg(x), lambda F, g, out, x: (F.neg(g),), np.negative,
      promotion="default", dunders=("__neg__",), test_dtypes=(D.int64,) + FLOATS)
unary("abs", lambda b, x: b.abs(x), lambda F, g, out, x: (F.mul(g, F.sign(x)),), np.abs,
      promotion="default", dunders=("__abs__",))
unary("clone", lambda b, x: x, lambda F, g, out, x: (g,), np.copy, promotion="default",
      impl=lambda xp, x: xp.copy(x))
unary("sign", lambda b, x: b.sign(x), None, np.sign, promotion="default")
unary("exp", lambda b, x: b.exp(x), lambda F, g, out, x: (F.mul(g, out),), np.exp)
unary("log", lambda b, x: b.log(x), lambda F, g, out, x: (F.div(g, x),), np.log,
      domain=(0.1, 5.0))
unary("sqrt", lambda b, x: b.sqrt(x), lambda F, g, out, x: (F.div(g, F.mul(out, 2.0)),),
      np.sqrt, domain=(0.1, 5.0))
unary("tanh", lambda b, x: b.tanh(x),
      lambda F, g, out, x: (F.mul(g, F.sub(1.0, F.mul(out, out))),), np.tanh)
unary("erf", lambda b, x: b.erf(x),
      lambda F, g, out, x: (F.mul(g, F.mul(F.exp(F.neg(F.mul(x, x))), 2 / math.sqrt(math.pi))),),
      _erf_ref)
unary("sigmoid", lambda b, x: b.div(1.0, b.add(b.exp(b.neg(x)), 1.0)),
      lambda F, g, out, x: (F.mul(g, F.mul(out, F.sub(1.0, out))),),
      lambda x: 1 / (1 + np.exp(-x)))
unary("relu", lambda b, x: b.where(b.gt(x, 0), x, b.mul(x, 0)),
      lambda F, g, out, x: (F.where(F.gt(x, 0), g, 0.0),),
      lambda x: np.maximum(x, 0), promotion="default")


def _gelu_scalar(b, x, approximate="none"):
    if approximate == "tanh":
        inner = b.mul(b.add(x, b.mul(b.mul(b.mul(x, x), x), 0.044715)), SQRT_2_PI)
        return b.mul(b.mul(x, 0.5), b.add(b.tanh(inner), 1.0))
    return b.mul(b.mul(x, 0.5), b.add(b.erf(b.mul(x, SQRT1_2)), 1.0))


def _gelu_backward(F, g, out, x, approximate="none"):
    if approximate == "tanh":
        x2 = F.mul(x, x)
        t = F.tanh(F.mul(F.add(x, F.mul(F.mul(x2, x), 0.044715)), SQRT_2_PI))
        dinner = F.mul(F.add(F.mul(x2, 3 * 0.044715), 1.0), SQRT_2_PI)
        d = F.add(F.mul(F.add(t, 1.0), 0.5),
                  F.mul(F.mul(F.mul(x, 0.5), F.sub(1.0, F.mul(t, t))), dinner))
        return (F.mul(g, d),)
    cdf = F.mul(F.add(F.erf(F.mul(x, SQRT1_2)), 1.0), 0.5)
    pdf = F.mul(F.exp(F.mul(F.mul(x, x), -0.5)), INV_SQRT_2PI)
    return (F.mul(g, F.add(cdf, F.mul(x, pdf))),)


def _gelu_ref(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf_ref(x / math.sqrt(2)))


register(OpDef(
    "gelu", "elementwise", "input, approximate='none'", 1, "int_to_float",
    scalar=_gelu_scalar, backward=_gelu_backward, ref=_gelu_ref, method=False,
    samples=({}, {"approximate": "tanh"}), test_dtypes=FLOATS,
))


def _cast_attrs(inputs, attrs):
    attrs["dtype"] = D.to_dtype(attrs["dtype"])
    return attrs


register(OpDef(
    "cast", "elementwise", "input, dtype", 1, "attr",
    scalar=lambda b, x, dtype: b.cast(x, dtype),
    backward=lambda F, g, out, x, dtype: (F.cast(g, x.dtype),),
    ref=lambda x, dtype: x.astype(dtype.np), attrs_rule=_cast_attrs, method=False,
    samples=({"dtype": D.float64}, {"dtype": D.int64}),
))

del _name, _ref, _dunder
