"""Unary math as registry ops: abs/neg/sign, exp/log/trig/hyperbolic/erf families, rounding,
frac, square, and the floating-point classes (isnan, isinf, isfinite, nan_to_num).

Same conventions as `ir/ops/elementwise.py` (whose helpers it uses): a scalar formula over the
primitives of `ir/scalar.py`, a backward in registry ops (PyTorch's derivatives.yaml), a
numpy/scipy ref, and a `Promo` rule naming the dtypes PyTorch refuses. Imports only `ir`, numpy
and scipy.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, is_number, register
from ..scalar import ArrayBuilder
from .elementwise import (
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
    _title,
    _to_real,
    _zero_grad,
    dtype_of,
    unary,
)

# ---------------------------------------------------------------- unary math

def _abs_backward(F, g, out, x):
    """g * sgn(x): sign for real x, x / |x| (0 at 0) for complex x (PyTorch's abs_backward)."""
    return (F.mul(g, F.sgn(x) if x.dtype.is_complex else F.sign(x)),)


unary("abs", lambda b, x: b.abs(x), _abs_backward, np.abs,
      kind=lambda base, attrs: (base, _to_real(base)), reject=NO_BOOL, dunders=("__abs__",),
      aliases=("absolute",))
unary("neg", lambda b, x: b.neg(x), lambda F, g, out, x: (F.neg(g),), np.negative,
      promotion=Promo("neg", reject=NO_BOOL, error=(
          RuntimeError, ("Negation, the `-` operator, on a bool tensor is not supported. If "
                         "you are trying to invert a mask, use the `~` or `logical_not()` "
                         "operator instead."))),
      dunders=("__neg__",), aliases=("negative",))
unary("clone", lambda b, x: x, lambda F, g, out, x: (g,), np.copy, kind="default", reject=(),
      impl=lambda xp, x: xp.copy(x))


def _sign_scalar(b, x):
    dt = b.dtype(x)
    if dt is D.bool_:
        return x
    if dt.category == INTEGER:
        return b.sign(x)
    return b.where(b.isnan(x), 0, b.sign(x))  # PyTorch: sign(nan) = 0


def _sign_ref(x):
    return x.copy() if x.dtype == bool else np.nan_to_num(np.sign(x), nan=0.0)


def _sgn_scalar(b, x):
    if b.dtype(x).category != COMPLEX:
        return _sign_scalar(b, x)
    r = b.abs(x)
    return b.where(b.eq(r, 0), b.mul(x, 0), b.div(x, r))


def _sign_impl(xp, x):
    """`_sign_scalar` in one pass and a read: sign(nan) is nan in numpy, and max propagates
    NaN, so NaNs exist only when the max of the signs is NaN; only then are they zeroed."""
    if x.dtype.kind != "f":
        return x.copy() if x.dtype == np.bool_ else xp.sign(x)
    r = xp.asarray(xp.sign(x))  # a 0-d input gives a numpy scalar: make it an array
    if r.size and xp.isnan(r.max()):
        r = xp.where(xp.isnan(r), r.dtype.type(0), r)  # PyTorch: sign(nan) = 0
    return r


unary("sign", _sign_scalar, _zero_grad, _sign_ref, kind="default", impl=_sign_impl)


def _sgn_backward(F, g, out, x):
    """Real x: zero (sign is piecewise constant). Complex x, s = x / |x|: (g - s * Re(g *
    conj(s))) / |x|, zero where x == 0 (PyTorch's sgn_backward in FunctionsManual.cpp)."""
    if not x.dtype.is_complex:
        return _zero_grad(F, g, out, x)
    r = F.abs(x)
    along = F.mul(out, F.real(F.mul(g, F.conj(out))))
    d = F.div(F.sub(g, along), r)
    return (F.where(F.eq(r, 0.0), 0.0, d),)


unary("sgn", _sgn_scalar, _sgn_backward, _sign_ref, kind="default", reject=())


def _float_unary(name, scalar, dfdx, ref, domain=(None, None), aliases=(), reject=(),
                 **kw):
    """A floating-point math function (integers and bools are promoted to the default float);
    `dfdx(F, x, out)` is its derivative, the backward is `g * dfdx`, `g * conj(dfdx)` for
    complex x (holomorphic f, PyTorch's convention)."""
    unary(name, scalar, lambda F, g, out, x: (F.mul(g, _conj(F, dfdx(F, x, out))),), ref,
          reject=reject, domain=domain, aliases=aliases, **kw)


def _special(name):
    def ref(x):
        import scipy.special

        return getattr(scipy.special, name)(x)
    return ref


def _one_minus_sq(F, x):
    return F.sub(1.0, F.mul(x, x))


_U = _float_unary
_U("sqrt", lambda b, x: b.sqrt(x), lambda F, x, out: F.div(0.5, out), np.sqrt, (0.1, 5.0))
_U("rsqrt", lambda b, x: b.rsqrt(x), lambda F, x, out: F.mul(F.mul(F.mul(out, out), out), -0.5),
   lambda x: 1 / np.sqrt(x), (0.1, 5.0))
_U("exp", lambda b, x: b.exp(x), lambda F, x, out: out, np.exp)
_U("exp2", lambda b, x: b.exp2(x), lambda F, x, out: F.mul(out, LN2), np.exp2)
_U("expm1", lambda b, x: b.expm1(x), lambda F, x, out: F.add(out, 1.0), np.expm1)
_U("log", lambda b, x: b.log(x), lambda F, x, out: F.reciprocal(x), np.log, (0.1, 5.0))
_U("log2", lambda b, x: b.log2(x), lambda F, x, out: F.div(1.0 / LN2, x), np.log2, (0.1, 5.0))
_U("log10", lambda b, x: b.mul(b.log(x), 1.0 / LN10), lambda F, x, out: F.div(1.0 / LN10, x),
   np.log10, (0.1, 5.0))
_U("log1p", lambda b, x: b.log1p(x), lambda F, x, out: F.reciprocal(F.add(x, 1.0)), np.log1p,
   (-0.5, 5.0))
_U("sin", lambda b, x: b.sin(x), lambda F, x, out: F.cos(x), np.sin)
_U("cos", lambda b, x: b.cos(x), lambda F, x, out: F.neg(F.sin(x)), np.cos)
_U("tan", lambda b, x: b.tan(x), lambda F, x, out: F.add(F.mul(out, out), 1.0), np.tan,
   (-1.2, 1.2))
_U("asin", lambda b, x: b.asin(x), lambda F, x, out: F.rsqrt(_one_minus_sq(F, x)), np.arcsin,
   (-0.9, 0.9), ("arcsin",))
_U("acos", lambda b, x: b.acos(x), lambda F, x, out: F.neg(F.rsqrt(_one_minus_sq(F, x))),
   np.arccos, (-0.9, 0.9), ("arccos",))
_U("atan", lambda b, x: b.atan(x), lambda F, x, out: F.reciprocal(F.add(F.mul(x, x), 1.0)),
   np.arctan, aliases=("arctan",))
_U("sinh", lambda b, x: b.sinh(x), lambda F, x, out: F.cosh(x), np.sinh)
_U("cosh", lambda b, x: b.cosh(x), lambda F, x, out: F.sinh(x), np.cosh)
_U("tanh", lambda b, x: b.tanh(x), lambda F, x, out: _one_minus_sq(F, out), np.tanh)
_U("asinh", lambda b, x: b.asinh(x), lambda F, x, out: F.rsqrt(F.add(F.mul(x, x), 1.0)),
   np.arcsinh, aliases=("arcsinh",))
_U("acosh", lambda b, x: b.acosh(x), lambda F, x, out: F.rsqrt(F.sub(F.mul(x, x), 1.0)),
   np.arccosh, (1.2, 4.0), ("arccosh",))
_U("atanh", lambda b, x: b.atanh(x), lambda F, x, out: F.reciprocal(_one_minus_sq(F, x)),
   np.arctanh, (-0.9, 0.9), ("arctanh",))


def _sigmoid_scalar(b, x):
    return b.div(1.0, b.add(b.exp(b.neg(x)), 1.0))


_EXPIT = []


def _sigmoid_impl(xp, x):
    """One pass on float32/float64 numpy arrays: scipy's `expit` ufunc computes 1 / (1 + e^-x)
    to within an ulp, as PyTorch's kernel does (inf -> 1, -inf -> 0, nan -> nan); four passes
    of the formula otherwise (complex, cupy)."""
    if xp is np and x.dtype.kind == "f" and x.dtype.itemsize >= 4:
        if not _EXPIT:
            from scipy.special import expit

            _EXPIT.append(expit)
        return _EXPIT[0](x)
    return _sigmoid_scalar(ArrayBuilder(xp), x)


_U("sigmoid", _sigmoid_scalar, lambda F, x, out: F.mul(out, F.sub(1.0, out)),
   lambda x: 1 / (1 + np.exp(-x)), impl=_sigmoid_impl)
_U("erf", lambda b, x: b.erf(x),
   lambda F, x, out: F.mul(F.exp(F.neg(F.mul(x, x))), TWO_OVER_SQRT_PI), _special("erf"), reject=NO_COMPLEX)
_U("erfc", lambda b, x: b.erfc(x),
   lambda F, x, out: F.mul(F.exp(F.neg(F.mul(x, x))), -TWO_OVER_SQRT_PI), _special("erfc"), reject=NO_COMPLEX)
_U("erfinv", lambda b, x: b.erfinv(x),
   lambda F, x, out: F.mul(F.exp(F.mul(out, out)), 1.0 / TWO_OVER_SQRT_PI), _special("erfinv"),
   (-0.9, 0.9), reject=NO_COMPLEX)
_U("reciprocal", lambda b, x: b.div(1.0, x), lambda F, x, out: F.neg(F.mul(out, out)),
   np.reciprocal, (0.5, 2.0))


def _logit_scalar(b, x, eps=None):
    if eps is not None:
        x = b.minimum(b.maximum(x, eps), 1.0 - eps)
    return b.log(b.div(x, b.sub(1.0, x)))


def _logit_backward(F, g, out, x, eps=None):
    d = F.div(g, F.mul(x, F.sub(1.0, x)))
    if eps is None:
        return (d,)
    return (F.where(F.logical_and(F.ge(x, eps), F.le(x, 1.0 - eps)), d, 0.0),)


def _logit_ref(x, eps=None):
    x = x.astype(np.float64) if x.dtype.kind != "f" else x
    if eps is not None:
        x = np.clip(x, eps, 1 - eps)
    return np.log(x / (1 - x))


unary("logit", _logit_scalar, _logit_backward, _logit_ref, sig="input, eps=None",
      domain=(0.05, 0.95), samples=({}, {"eps": 0.2}))

# rounding: integers pass through unchanged (PyTorch), bools are refused


def _rounding(name, prim, ref, aliases=()):
    unary(name, lambda b, x: x if b.dtype(x).category <= INTEGER else getattr(b, prim)(x),
          _zero_grad, ref, kind="default", reject=(BOOL, COMPLEX), aliases=aliases)


_rounding("floor", "floor", np.floor)
_rounding("ceil", "ceil", np.ceil)
_rounding("trunc", "trunc", np.trunc, aliases=("fix",))


def _round_scalar(b, x, decimals=0):
    if b.dtype(x).category <= INTEGER:
        return x
    if decimals == 0:
        return b.round(x)
    if decimals > 0:  # PyTorch: nearbyint(x * 10^d) / 10^d, and x / 10^-d for negative d
        p = 10.0 ** decimals
        return b.div(b.round(b.mul(x, p)), p)
    p = 10.0 ** -decimals
    return b.mul(b.round(b.div(x, p)), p)


def _round_attrs(inputs, attrs):
    if attrs["decimals"] != 0 and inputs[0].dtype.category <= INTEGER:
        raise NotImplementedError(f"\"round\" not implemented for '{_title(inputs[0].dtype)}'")
    return attrs


def _round_ref(x, decimals=0):
    if x.dtype.kind != "f" or decimals == 0:
        return np.round(x)
    p = 10.0 ** abs(decimals)
    return (np.round(x * p) / p if decimals > 0 else np.round(x / p) * p).astype(x.dtype)


unary("round", _round_scalar, _zero_grad, _round_ref, kind="default", reject=(BOOL, COMPLEX),
      sig="input, *, decimals=0", attrs_rule=_round_attrs, sample_inputs=_attr_samples(
          lambda dt: ({},) if dt.category <= INTEGER else ({}, {"decimals": 2},
                                                          {"decimals": -1}), 1))
unary("frac", lambda b, x: b.sub(x, b.trunc(x)), lambda F, g, out, x: (g,),
      lambda x: x - np.trunc(x), kind="default", reject=REAL_FLOAT)
register(OpDef(
    "square", "composite", "input", 1,
    decomp=lambda F, x: F.mul(F.cast(x, D.int64), F.cast(x, D.int64)) if dtype_of(x) is D.bool_
    else F.mul(x, x),
    ref=lambda x: np.square(x.astype(np.int64) if x.dtype == bool else x), inplace=True,
))

# ---------------------------------------------------------------- floating-point classes


def _finite_scalar(b, x):
    if b.dtype(x).category < FLOATING:
        return b.eq(x, x)
    return b.logical_not(b.bitwise_or(b.isnan(x), b.isinf(x)))


for _name, _scalar, _ref in [
    ("isnan", lambda b, x: b.isnan(x) if b.dtype(x).category >= FLOATING else b.ne(x, x),
     np.isnan),
    ("isinf", lambda b, x: b.isinf(x) if b.dtype(x).category >= FLOATING else b.ne(x, x),
     np.isinf),
    ("isfinite", _finite_scalar, np.isfinite),
]:
    unary(_name, _scalar, None, _ref, kind="always_bool", reject=())


def _finfo(dt):
    return D.finfo(dt) if hasattr(D, "finfo") else np.finfo(dt.np)


def _nan_to_num_attrs(inputs, attrs):
    dt = inputs[0].dtype
    if dt.category >= FLOATING:  # the defaults are the input dtype's largest finite values
        fi = _finfo(dt.to_real() if hasattr(dt, "to_real") else dt)
        attrs["posinf"] = fi.max if attrs["posinf"] is None else attrs["posinf"]
        attrs["neginf"] = fi.min if attrs["neginf"] is None else attrs["neginf"]
    return attrs


def _nan_to_num_scalar(b, x, nan=0.0, posinf=None, neginf=None):
    if b.dtype(x).category < FLOATING:
        return x
    x = b.where(b.isnan(x), nan, x)
    return b.where(b.isinf(x), b.where(b.gt(x, 0), posinf, neginf), x)


def _nan_to_num_ref(x, nan=0.0, posinf=None, neginf=None):
    return np.nan_to_num(x, nan=nan, posinf=posinf, neginf=neginf)


def _nan_to_num_samples(rng, dtype):
    x = rng.standard_normal((3, 4)).astype(dtype.np)
    if dtype.category >= FLOATING:
        x[0, 0], x[1, 1], x[2, 2] = np.nan, np.inf, -np.inf
    elif dtype is D.bool_:
        x = x > 0
    else:
        x = (x * 3).astype(dtype.np)
    if dtype not in getattr(D, "HALF", ()):  # (half types: references run in float32)
        y = x.copy()
        if dtype.category >= FLOATING:
            y[1, 1] = y[2, 2] = 0.5  # NaN only: the dtype's largest values are tested below
        yield (y,), {}
    yield (x,), {"nan": 1.5, "posinf": 2.0, "neginf": -3.0}


unary("nan_to_num", _nan_to_num_scalar,
      lambda F, g, out, x, **_: (F.where(F.isfinite(x), g, 0.0),), _nan_to_num_ref,
      kind="default", sig="input, nan=0.0, posinf=None, neginf=None",
      attrs_rule=_nan_to_num_attrs,
      sample_inputs=_nan_to_num_samples)

del _name, _scalar, _ref


# ---------------------------------------------------------------- isclose


def _isclose_attrs(inputs, attrs):
    a, b = inputs
    if not is_number(a) and not is_number(b) and a.dtype is not b.dtype:
        raise RuntimeError(f"{a.dtype.title} did not match {b.dtype.title}")
    if attrs["rtol"] < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got "
                           f"{attrs['rtol']}")
    if attrs["atol"] < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got "
                           f"{attrs['atol']}")
    return attrs


def _isclose_decomp(F, a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """PyTorch's isclose: equal, or |a - b| finite and <= atol + |rtol * b| (NaNs equal with
    equal_nan)."""
    close = F.eq(a, b)
    if equal_nan:
        close = F.logical_or(close, F.logical_and(F.isnan(a), F.isnan(b)))
    err = F.abs(F.sub(a, b))
    ok = F.logical_and(F.isfinite(err), F.le(err, F.add(F.abs(F.mul(b, rtol)), atol)))
    return F.logical_or(close, ok)


register(OpDef(
    "isclose", "composite", "input, other, rtol=1e-05, atol=1e-08, equal_nan=False", 2,
    attrs_rule=_isclose_attrs, decomp=_isclose_decomp,
    ref=lambda a, b, rtol=1e-05, atol=1e-08, equal_nan=False: np.isclose(
        a, b, rtol=rtol, atol=atol, equal_nan=equal_nan),
    sample_inputs=lambda rng, dt: iter(_isclose_samples(rng, dt)), test_dtypes=FLOATS,
))


def _isclose_samples(rng, dt):
    a = rng.standard_normal((3, 4)).astype(dt.np)
    b = (a + rng.standard_normal((3, 4)) * np.asarray([0, 1e-9, 1e-3, 1])).astype(dt.np)
    b[0, 0], a[1, 1], b[1, 1], a[2, 2], b[2, 2] = np.nan, np.nan, np.nan, np.inf, np.inf
    return [((a, b), {}), ((a, b), {"rtol": 0.5, "atol": 0.1}), ((a, b), {"equal_nan": True}),
            ((a, b[0]), {"rtol": 0, "atol": 0})]
