"""Elementwise op declarations: arithmetic, comparisons, logic and bits, clamp, casts (unary
math is in `ir/ops/unary.py`; `Promo`, `unary`/`binary` and the shared helpers in
`ir/ops/declare.py`).

Each primitive gives a `scalar` formula over the primitives of `ir/scalar.py` (eager's kernel and
codegen's both come from it), a `backward` written in registry ops (PyTorch's derivatives.yaml),
an independent numpy/scipy `ref`, and a `Promo` rule: PyTorch's type promotion plus the dtypes it
has no kernel for (its "not implemented for 'Bool'" errors). Composites give a `decomp`.
Semantics follow the PyTorch documentation of each op. Imports only `ir`, numpy and scipy.
"""

from __future__ import annotations

import cmath
import math

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, is_number, register
from ..promotion import Kind
from .declare import (  # noqa: F401  (re-exported: the op families import them from here)
    BOOL,
    COMPLEX,
    FLOATING,
    FLOATS,
    INTEGER,
    LN2,
    LN10,
    NO_BOOL,
    NO_COMPLEX,
    REAL_FLOAT,
    TWO_OVER_SQRT_PI,
    Promo,
    _attr_samples,
    _conj,
    _grad,
    _int_checked,
    _reject_name,
    _title,
    _to_real,
    _zero_grad,
    binary,
    dtype_of,
    float_ref,
    prim,
    unary,
)

# ---------------------------------------------------------------- binary arithmetic


def _check_sub(name):
    def rule(ops, attrs):
        if any((o[0] if isinstance(o, tuple) else D.bool_ if isinstance(o, bool) else None)
               is D.bool_ for o in ops):
            both = all(isinstance(o, tuple) and o[0] is D.bool_ for o in ops)
            raise RuntimeError(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the "
                "`^` or `logical_xor()` operator instead." if both else
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are "
                "trying to invert a mask, use the `~` or `logical_not()` operator instead.")
        base = D.result_type(*ops)
        return base, base
    rule.__name__ = f"{name}_promotion"
    return rule


binary(
    "add", lambda b, x, y, alpha=1: b.add(x, y if alpha == 1 else b.mul(y, alpha)),
    lambda F, g, out, x, y, alpha=1: (_grad(x, g),
                                      _grad(y, g if alpha == 1 else F.mul(g, _conj(F, alpha)))),
    lambda x, y, alpha=1: np.add(x, np.multiply(y, alpha) if alpha != 1 else y).astype(
        np.result_type(x, y)),
    dunders=("__add__", "__radd__"), sig="input, other, *, alpha=1", samples=({}, {"alpha": 2}),
)
binary(
    "sub", lambda b, x, y, alpha=1: b.sub(x, y if alpha == 1 else b.mul(y, alpha)),
    lambda F, g, out, x, y, alpha=1: (_grad(x, g), _grad(y, F.mul(g, _conj(F, -alpha)))),
    lambda x, y, alpha=1: np.subtract(x, np.multiply(y, alpha) if alpha != 1 else y),
    promotion=_check_sub("sub"), dunders=("__sub__", "__rsub__"), aliases=("subtract",),
    sig="input, other, *, alpha=1", samples=({}, {"alpha": 2}),
)
binary(
    "mul", lambda b, x, y: b.mul(x, y),
    lambda F, g, out, x, y: (_grad(x, F.mul(g, _conj(F, y))), _grad(y, F.mul(g, _conj(F, x)))),
    np.multiply, dunders=("__mul__", "__rmul__"), aliases=("multiply",),
)


def _div_promotion(base, attrs):
    mode = attrs.get("rounding_mode")
    if mode is None and base.category < FLOATING:
        return D.get_default_dtype(), D.get_default_dtype()
    if mode is not None and base.category in (BOOL, COMPLEX):
        raise NotImplementedError(f'"div_{mode}" not implemented for \'{_title(base)}\'')
    return base, base


def _div_attrs(inputs, attrs):
    mode = attrs["rounding_mode"]
    if mode not in (None, "trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{mode}'")
    return attrs


def _trunc_div(b, x, y):
    """Integer division rounding toward zero, exactly, from floor division and its remainder."""
    q = b.floordiv(x, y)
    r = b.remainder(x, y)
    return b.where(b.bitwise_and(b.ne(r, 0), b.ne(b.lt(x, 0), b.lt(y, 0))), b.add(q, 1), q)


def _div_scalar(b, x, y, rounding_mode=None):
    if rounding_mode is None:
        return b.div(x, y)
    if rounding_mode == "floor":
        return b.floordiv(x, y)
    dt = b.dtype(y) if is_number(x) else b.dtype(x)
    if dt.category >= FLOATING or isinstance(x, float) or isinstance(y, float):
        return b.trunc(b.div(x, y))
    return _trunc_div(b, x, y)


def _div_ref(x, y, rounding_mode=None):
    if rounding_mode is None:
        return np.true_divide(x, y)
    if rounding_mode == "floor":
        return np.floor_divide(x, y)
    q = np.true_divide(x, y)
    return np.trunc(q) if np.result_type(x, y).kind == "f" else \
        (np.abs(x) // np.abs(y)) * np.sign(x) * np.sign(y)


def _div_backward(F, g, out, x, y):
    """grad_x = g / conj(y), grad_y = -g * conj(out / y) (PyTorch's div_tensor_self_backward
    and div_tensor_other_backward)."""
    yc = _conj(F, y)
    gy = None if is_number(y) else F.neg(F.div(F.mul(g, _conj(F, out)), yc))
    return _grad(x, F.div(g, yc)), gy


binary(
    "div", _div_scalar,
    lambda F, g, out, x, y, rounding_mode=None: _zero_grad(F, g, out, x, y) if rounding_mode
    else _div_backward(F, g, out, x, y),
    _div_ref, promotion=Promo("div", _div_promotion), impl=_int_checked(_div_scalar),
    attrs_rule=_div_attrs, dunders=("__truediv__", "__rtruediv__"),
    aliases=("true_divide", "divide"), sig="input, other, *, rounding_mode=None",
    domain=(0.5, 2.0), sample_inputs=_attr_samples(
        lambda dt: ({},) if dt.category in (BOOL, COMPLEX) else
        ({}, {"rounding_mode": "trunc"}, {"rounding_mode": "floor"}), 2, lo=0.5),
)
NO_BOOL_COMPLEX = (BOOL, COMPLEX)  # integer and floating kernels only
binary("floor_divide", lambda b, x, y: b.floordiv(x, y), None, np.floor_divide, reject=NO_BOOL_COMPLEX,
       impl=_int_checked(lambda b, x, y: b.floordiv(x, y)),
       dunders=("__floordiv__", "__rfloordiv__"), domain=(0.5, 2.0))
binary(
    "remainder", lambda b, x, y: b.remainder(x, y),
    lambda F, g, out, x, y: (_grad(x, g), _grad(y, F.neg(F.mul(g, F.floor_divide(x, y))))),
    np.remainder, reject=NO_BOOL_COMPLEX, impl=_int_checked(lambda b, x, y: b.remainder(x, y)),
    dunders=("__mod__", "__rmod__"), domain=(0.5, 2.0),
)
binary(
    "fmod", lambda b, x, y: b.fmod(x, y),
    lambda F, g, out, x, y: (_grad(x, g), _grad(y, F.neg(F.mul(
        g, F.div(x, y, rounding_mode="trunc"))))),
    np.fmod, reject=NO_BOOL_COMPLEX, impl=_int_checked(lambda b, x, y: b.fmod(x, y)), domain=(0.5, 2.0),
)


def _pow_scalar(b, x, y):
    dt = b.dtype(y) if is_number(x) else b.dtype(x)  # the compute dtype
    if dt.category != INTEGER or is_number(y):  # (negative int scalars raise in _pow_attrs)
        return b.pow(x, y)
    # integer powers: a negative exponent gives 1 / x**n truncated: 0 unless |x| == 1
    pos = b.pow(x, b.maximum(y, 0))
    odd = b.ne(b.remainder(y, 2), 0)
    if is_number(x):
        neg = x if x == 1 else b.where(odd, -1, 1) if x == -1 else 0
    else:
        neg = b.where(b.eq(x, 1), x, b.where(b.eq(x, -1), b.where(odd, x, b.neg(x)),
                                             b.mul(x, 0)))
    return b.where(b.lt(y, 0), neg, pos)


def _pow_attrs(inputs, attrs):
    x, y = inputs
    if not is_number(x) and x.dtype.category == INTEGER and isinstance(y, int) and \
            not isinstance(y, bool) and y < 0:
        raise RuntimeError("Integers to negative integer powers are not allowed.")
    return attrs


def _pow_backward(F, g, out, x, y):
    """d/dx = y * x**(y - 1), d/dy = out * log(x); each conjugated for complex operands."""
    gx = gy = None
    if not is_number(x):
        gx = F.mul(g, _conj(F, F.mul(y, F.pow(x, y - 1 if is_number(y) else F.sub(y, 1)))))
        if is_number(y) and y == 0:
            gx = F.mul(g, 0.0)
    if not is_number(y):
        log_x = (cmath.log(x) if isinstance(x, complex) else math.log(x)) if is_number(x) \
            else F.log(x)
        gy = F.mul(g, _conj(F, F.mul(out, log_x)))
    return gx, gy


def _pow_ref(x, y):
    if np.result_type(x, y).kind in "iu" and np.any(np.asarray(y) < 0):
        x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        with np.errstate(all="ignore"):
            pos = np.power(x, np.maximum(y, 0))
        neg = np.where(x == 1, 1, np.where(x == -1, np.where(y % 2 == 1, -1, 1), 0))
        return np.where(y < 0, neg, pos)
    return np.power(x, y)


binary("pow", _pow_scalar, _pow_backward, _pow_ref, reject=NO_BOOL, attrs_rule=_pow_attrs,
       sig="input, exponent", dunders=("__pow__", "__rpow__"), domain=(0.5, 2.0))


def _maxmin_backward(keep):
    """maximum/minimum: the gradient goes to the winning operand, half each on ties."""
    def backward(F, g, out, x, y):
        half = F.mul(g, 0.5)
        return (_grad(x, F.where(keep(F, x, y), g, F.where(F.eq(x, y), half, 0.0))),
                _grad(y, F.where(keep(F, y, x), g, F.where(F.eq(x, y), half, 0.0))))
    return backward


binary("maximum", lambda b, x, y: b.maximum(x, y),
       _maxmin_backward(lambda F, a, c: F.gt(a, c)), np.maximum, reject=NO_COMPLEX,
       scalar_ok=False)
binary("minimum", lambda b, x, y: b.minimum(x, y),
       _maxmin_backward(lambda F, a, c: F.lt(a, c)), np.minimum, reject=NO_COMPLEX,
       scalar_ok=False)


def _fmax_scalar(pick):
    def scalar(b, x, y):
        if b.dtype(x).category < FLOATING:
            return getattr(b, pick)(x, y)
        return b.where(b.isnan(y), x, b.where(b.isnan(x), y, getattr(b, pick)(x, y)))
    return scalar


def _fmax_backward(cmp):
    def backward(F, g, out, x, y):
        first = F.logical_or(cmp(F, x, y), F.isnan(y))  # PyTorch: (self >= other) | isnan(other)
        return _grad(x, F.where(first, g, 0.0)), _grad(y, F.where(first, 0.0, g))
    return backward


binary("fmax", _fmax_scalar("maximum"), _fmax_backward(lambda F, a, c: F.ge(a, c)), np.fmax,
       reject=NO_COMPLEX, scalar_ok=False)
binary("fmin", _fmax_scalar("minimum"), _fmax_backward(lambda F, a, c: F.le(a, c)), np.fmin,
       reject=NO_COMPLEX, scalar_ok=False)
binary(
    "atan2", lambda b, x, y: b.atan2(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.div(F.mul(g, y), F.add(F.mul(x, x), F.mul(y, y)))),
        _grad(y, F.div(F.mul(g, F.neg(x)), F.add(F.mul(x, x), F.mul(y, y))))),
    np.arctan2, kind="int_to_float", reject=NO_COMPLEX, sig="input, other", aliases=("arctan2",),
    scalar_ok=False,
)
binary(
    "hypot", lambda b, x, y: b.hypot(x, y),
    lambda F, g, out, x, y: (_grad(x, F.mul(g, F.div(x, out))), _grad(y, F.mul(g, F.div(y, out)))),
    np.hypot, reject=REAL_FLOAT, scalar_ok=False,
)


def _logaddexp_scalar(b, x, y):
    m = b.maximum(x, y)
    r = b.add(m, b.log1p(b.exp(b.neg(b.abs(b.sub(x, y))))))
    return b.where(b.bitwise_and(b.isinf(m), b.eq(x, y)), m, r)  # inf + inf: no inf - inf


binary(
    "logaddexp", _logaddexp_scalar,
    lambda F, g, out, x, y: (_grad(x, F.mul(g, F.exp(F.sub(x, out)))),
                             _grad(y, F.mul(g, F.exp(F.sub(y, out))))),
    np.logaddexp, reject=REAL_FLOAT, scalar_ok=False,
)

# ---------------------------------------------------------------- three operands


def _lerp_scalar(b, x, end, weight):
    diff = b.sub(end, x)
    small = b.add(x, b.mul(weight, diff))
    big = b.sub(end, b.mul(diff, b.sub(1, weight)))
    return small if is_number(weight) and abs(weight) < 0.5 else \
        big if is_number(weight) else b.where(b.lt(b.abs(weight), 0.5), small, big)


register(OpDef(
    "lerp", "elementwise", "input, end, weight", 3,
    Promo("lerp", reject=(BOOL, INTEGER), tensors_only=True),
    scalar=_lerp_scalar,
    backward=lambda F, g, out, x, end, w: (
        F.mul(g, _conj(F, F.sub(1.0, w) if not is_number(w) else 1.0 - w)),
        _grad(end, F.mul(g, _conj(F, w))), _grad(w, F.mul(g, _conj(F, F.sub(end, x))))),
    ref=float_ref(lambda x, end, w: x + np.multiply(w, end - x), False), scalar_ok=True,
))


_ADDCDIV_INT = (RuntimeError, (
    "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
    "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
    "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) using the "
    "trunc rounding mode."))


def _addc_attrs(name):
    def rule(inputs, attrs):
        if name == "addcdiv" and all(not is_number(m) and m.dtype.category <= INTEGER
                                     for m in inputs[1:]):
            raise _ADDCDIV_INT[0](_ADDCDIV_INT[1])
        return attrs
    return rule


def _addc_value(b, v, like):
    """`value` as a number of `like`'s category (PyTorch casts it to the op's dtype)."""
    dt = b.dtype(like)
    return int(v) if dt.category <= INTEGER and not isinstance(v, bool) else v


def _addc(name, op, ref):
    def scalar(b, x, t1, t2, value=1):
        return b.add(x, b.mul(getattr(b, op)(t1, t2), _addc_value(b, value, x)))

    def backward(F, g, out, x, t1, t2, value=1):
        gv = F.mul(g, _conj(F, value))  # (complex operands: derivatives conjugated)
        t1c, t2c = _conj(F, t1), _conj(F, t2)
        if op == "mul":
            return g, F.mul(gv, t2c), F.mul(gv, t1c)
        return g, F.div(gv, t2c), F.neg(F.div(F.mul(gv, t1c), F.mul(t2c, t2c)))

    register(OpDef(
        name, "elementwise", "input, tensor1, tensor2, *, value=1", 3,
        Promo(name, reject=NO_BOOL if op == "mul" else (BOOL, INTEGER),
              error=None if op == "mul" else _ADDCDIV_INT),
        scalar=scalar, backward=backward,
        ref=float_ref(lambda x, t1, t2, value=1: x + value * ref(t1, t2), False),
        attrs_rule=_addc_attrs(name), scalar_ok=False, domain=(0.5, 2.0),
        samples=({}, {"value": 2}),
    ))


_addc("addcmul", "mul", np.multiply)
_addc("addcdiv", "div", np.true_divide)

# ---------------------------------------------------------------- comparisons, logic, bits

for _name, _ref, _dunder, _alias in [
    ("eq", np.equal, "__eq__", ()), ("ne", np.not_equal, "__ne__", ("not_equal",)),
    ("lt", np.less, "__lt__", ("less",)), ("le", np.less_equal, "__le__", ("less_equal",)),
    ("gt", np.greater, "__gt__", ("greater",)),
    ("ge", np.greater_equal, "__ge__", ("greater_equal",)),
]:
    binary(_name, prim(_name), None, _ref, kind="always_bool", reject=() if _name in ("eq", "ne") else NO_COMPLEX,
           dunders=(_dunder,), aliases=_alias)


def _truth(b, x):
    return x if not is_number(x) and b.dtype(x) is D.bool_ else b.ne(x, 0)


def _logical(combine):
    def scalar(b, x, y):
        return getattr(b, combine)(_truth(b, x), _truth(b, y))
    return scalar


for _name, _combine, _ref in [
    ("logical_and", "bitwise_and", np.logical_and), ("logical_or", "bitwise_or", np.logical_or),
    ("logical_xor", "bitwise_xor", np.logical_xor),
]:
    binary(_name, _logical(_combine), None, _ref, kind="always_bool", scalar_ok=False)
unary("logical_not", lambda b, x: b.logical_not(_truth(b, x)), None, np.logical_not,
      kind="always_bool", reject=())

BITS_ONLY = (FLOATING, COMPLEX)
for _name, _ref, _dunders in [
    ("bitwise_and", np.bitwise_and, ("__and__", "__rand__")),
    ("bitwise_or", np.bitwise_or, ("__or__", "__ror__")),
    ("bitwise_xor", np.bitwise_xor, ("__xor__", "__rxor__")),
]:
    binary(_name, prim(_name), None, _ref, reject=BITS_ONLY, dunders=_dunders)
unary("bitwise_not", lambda b, x: b.bitwise_not(x), None, np.invert, kind="default",
      reject=BITS_ONLY, dunders=("__invert__",))


def _bits(b, x, y):
    return (b.dtype(x) if not is_number(x) else b.dtype(y)).itemsize * 8


def _lshift(b, x, y):
    # shifting by the width or more, or by a negative amount, gives 0 (C leaves it undefined)
    if is_number(y):
        return b.lshift(x, y) if 0 <= y < _bits(b, x, y) else b.mul(x, 0)
    bad = b.bitwise_or(b.lt(y, 0), b.ge(y, _bits(b, x, y)))
    return b.where(bad, 0, b.lshift(x, b.where(bad, 0, y)))


def _rshift(b, x, y):
    # shifting by the width or more fills with the sign bit; a negative amount gives 0
    n = _bits(b, x, y) - 1
    if is_number(y):
        return b.rshift(x, min(y, n)) if y >= 0 else b.mul(x, 0)
    return b.where(b.lt(y, 0), 0, b.rshift(x, b.minimum(b.maximum(y, 0), n)))


def _shift_ref(f, left):
    def ref(x, y):
        x, y = np.broadcast_arrays(np.asarray(x), np.asarray(y))
        n = np.result_type(x, y).itemsize * 8
        safe = np.clip(y, 0, n - 1)
        r = f(x, safe)
        r = np.where((y >= n) if left else False, 0, r)
        return np.where(y < 0, 0, r).astype(np.result_type(x, y))
    return ref


BOOL_FLOAT = (BOOL, FLOATING, COMPLEX)
binary("bitwise_left_shift", _lshift, None, _shift_ref(np.left_shift, True), reject=BOOL_FLOAT,
       dunders=("__lshift__", "__rlshift__"))
binary("bitwise_right_shift", _rshift, None, _shift_ref(np.right_shift, False),
       reject=BOOL_FLOAT, dunders=("__rshift__", "__rrshift__"))

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}


def _held(v, dt):
    """`v` as a zero-dim array of dtype `dt` when that holds it exactly, else None."""
    try:
        a = np.array(v, dt)
    except (OverflowError, ValueError):
        return None
    return a if a == v else None


def _where_impl(xp, c, x, y):
    """`xp.where(c, x, y)` bit for bit. On numpy arrays of one real dtype (a Python number
    operand that the dtype holds exactly) the bits of x or y are selected through a mask made
    from c: no branch per element, which makes numpy's where ~10x slower on a random mask."""
    if xp is not np or type(c) is not np.ndarray or c.dtype != np.bool_:
        return xp.where(c, x, y)
    dt = x.dtype if type(x) is np.ndarray else y.dtype if type(y) is np.ndarray else None
    u = _UINT.get(getattr(dt, "itemsize", 0))
    if u is None or dt.kind not in "fiub":
        return np.where(c, x, y)
    ops = []
    for v in (x, y):
        if type(v) is np.ndarray:
            if v.dtype != dt:
                return np.where(c, x, y)
        elif type(v) is float and dt.kind == "f" or type(v) is int and dt.kind in "fiu":
            v = _held(v, dt)  # a weak scalar of the array's kind: kept when held exactly
            if v is None:
                return np.where(c, x, y)
        else:
            return np.where(c, x, y)
        ops.append(v.view(u))
    xb, yb = ops
    if type(y) is not np.ndarray and not yb:  # y is +0 (all bits clear): x's bits times c
        return np.multiply(xb, c, dtype=u).view(dt)  # (relu's and masks' backward)
    m = c.astype(u)
    np.negative(m, out=m)  # all bits set where c
    r = np.bitwise_and(np.bitwise_xor(xb, yb), m)
    if type(r) is not np.ndarray:  # all 0-d: numpy gives a scalar
        r = np.asarray(r)
    np.bitwise_xor(r, yb, out=r)  # (x ^ y) & m ^ y: x where c, else y
    return r.view(dt)


def _where_attrs(inputs, attrs):
    """PyTorch's check: the condition is a bool tensor (uint8: deprecated, accepted)."""
    c = inputs[0]
    dt = getattr(c, "dtype", None)
    if dt is not None and dt is not D.bool_ and dt.name != "uint8":
        raise RuntimeError("where expected condition to be a boolean tensor, but got a tensor "
                           f"with dtype {_title(dt)}")
    return attrs


register(OpDef(
    "where", "elementwise", "condition, input, other", 3, Kind("default", start=1),
    attrs_rule=_where_attrs,
    scalar=lambda b, c, x, y: b.where(c, x, y), impl=_where_impl,
    backward=lambda F, g, out, c, x, y: (
        None, _grad(x, F.where(c, g, 0.0)), _grad(y, F.where(c, 0.0, g))
    ),
    ref=np.where, method=False,
))

# ---------------------------------------------------------------- clamp


def _clamp_backward(keep):
    def backward(F, g, out, x, bound):
        inside = keep(F, x, bound)
        return F.where(inside, g, 0.0), _grad(bound, F.where(inside, 0.0, g))
    return backward


binary("clamp_min", lambda b, x, m: b.maximum(x, m),
       _clamp_backward(lambda F, x, m: F.ge(x, m)), np.maximum, reject=NO_BOOL_COMPLEX,
       sig="input, min")
binary("clamp_max", lambda b, x, m: b.minimum(x, m),
       _clamp_backward(lambda F, x, m: F.le(x, m)), np.minimum, reject=NO_BOOL_COMPLEX,
       sig="input, max")


def _clamp_attrs(inputs, attrs):
    lo, hi = attrs["min"], attrs["max"]
    if lo is None and hi is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    # a number with a tensor bound: PyTorch takes it when the tensor is 0-d (it binds as a
    # Number then: torch.clamp(x, min=torch.tensor(2.), max=5)); else TypeError
    if (is_number(lo) and not _number_like(hi) and hi is not None) or \
            (is_number(hi) and not _number_like(lo) and lo is not None):
        raise TypeError("clamp() received an invalid combination of arguments: min and max "
                        "must both be numbers (or 0-d tensors) or both be Tensors")
    return attrs


def _number_like(v) -> bool:
    return is_number(v) or getattr(v, "ndim", None) == 0


def _clamp_numbers_backward(F, g, out, x, min, max):
    return (F.where(F.logical_and(F.ge(x, min), F.le(x, max)), g, 0.0),)


# both bounds numbers and the input's dtype kept: one pass (numpy.clip's semantics equal
# minimum(maximum(x, min), max): NaN propagates, min > max gives max, as torch.clamp)
def _clamp_promotion(operands, attrs):
    """torch.clamp promotes over the input and both bounds; bool and complex are refused."""
    r = D.result_type(*operands, attrs["min"], attrs["max"])
    if r.category in (D.BOOL, D.COMPLEX):
        raise RuntimeError(f"\"clamp\" not implemented for '{r.name}'")
    return r, r


register(OpDef(
    "_clamp", "elementwise", "input, min, max", 1, _clamp_promotion,
    scalar=lambda b, x, min, max: b.minimum(b.maximum(x, min), max),
    impl=lambda xp, x, min, max: xp.clip(x, min, max),
    backward=_clamp_numbers_backward, ref=lambda x, min, max: np.minimum(np.maximum(x, min), max),
    method=False, inplace=False, samples=({"min": -0.5, "max": 0.5}, {"min": 1, "max": 0}),
))


def _clamp_decomp(F, x, min=None, max=None):
    if (is_number(min) and is_number(max) and not isinstance(min, bool)
            and not isinstance(max, bool) and x.dtype.category != D.BOOL
            and D.result_type((x.dtype, x.ndim), min, max) is x.dtype):
        return F._clamp(x, min, max)
    if min is not None:
        x = F.clamp_min(x, min)
    return x if max is None else F.clamp_max(x, max)


def _clamp_ref(x, min=None, max=None):
    x = x.astype(np.int64) if x.dtype == bool else x
    if min is not None:
        x = np.maximum(x, min)
    return x if max is None else np.minimum(x, max)


register(OpDef(
    "clamp", "composite", "input, min=None, max=None", 1, attrs_rule=_clamp_attrs,
    decomp=_clamp_decomp, ref=_clamp_ref, aliases=("clip",), inplace=True,
    samples=({"min": -0.5, "max": 0.5}, {"min": 0}, {"max": 1}),
))

# ---------------------------------------------------------------- casts


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

del _name, _ref, _dunder, _alias, _combine, _dunders
