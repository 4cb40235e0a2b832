"""More elementwise math and one scan from PyTorch's top level (issue 16's sweep): copysign,
heaviside, logaddexp2, ldexp, float_power, deg2rad/rad2deg, isposinf/isneginf/isreal, signbit,
gcd/lcm, nextafter, logcumsumexp.

Formulas over the scalar primitives where they exist (codegen fuses them); integer and bit-level
kernels without a primitive (gcd, lcm, nextafter) are library calls (numpy/cupy ufuncs, kind
"special"). Semantics, dtypes and gradients follow the PyTorch documentation and
derivatives.yaml of each op (heaviside, gcd, lcm, nextafter and the predicates have no gradient,
as in PyTorch). Imports only `ir` and numpy.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import REGISTRY, OpDef, is_number, register
from .elementwise import (
    BOOL,
    COMPLEX,
    FLOATING,
    FLOATS,
    INTEGER,
    NO_COMPLEX,
    REAL_FLOAT,
    Promo,
    _grad,
    binary,
    unary,
)
from .reductions import _int_dim_attrs, scalar_as_vector

LN2 = math.log(2.0)


# ---------------------------------------------------------------- sign manipulation


def _negative(b, y):
    """Whether `y`'s sign bit is set, -0.0 included (1 / -0.0 = -inf), from primitives."""
    if is_number(y):
        return math.copysign(1.0, y) < 0
    if b.dtype(y).category < FLOATING:
        return b.lt(y, 0)
    return b.bitwise_or(b.lt(y, 0), b.lt(b.div(1.0, y), 0))


def _copysign_scalar(b, x, y):
    ax = b.abs(float(x) if is_number(x) else x)  # (a bool or int number: a float result)
    neg = _negative(b, y)
    if isinstance(neg, bool):
        return b.neg(ax) if neg else ax
    return b.where(neg, b.neg(ax), ax)


def _tensor_first(name):
    def rule(inputs, attrs):
        if is_number(inputs[0]):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(inputs[0]).__name__}")
        return attrs
    return rule


def _copysign_samples(rng, dt):
    for xs, a in _two_operand_samples(rng, dt):
        if dt is D.bool_:
            xs = tuple(x > 0 if not is_number(x) else True for x in xs)
        yield xs, a
    yield (rng.standard_normal((2, 3)).astype(dt.np) if dt.category >= FLOATING else
           rng.integers(-3, 4, (2, 3)).astype(dt.np), -0.0), {}


binary(
    "copysign", _copysign_scalar,
    # derivatives.yaml: grad * result / self where self != 0, else 0; none for `other`
    lambda F, g, out, x, y: (_grad(x, F.mul(g, F.where(F.eq(x, 0), 0.0, F.div(out, x)))),
                             _grad(y, F.mul(g, 0.0))),
    np.copysign, kind="int_to_float", reject=NO_COMPLEX, attrs_rule=_tensor_first("copysign"),
    sample_inputs=_copysign_samples, impl=lambda xp, x, y: xp.copysign(x, y),
)


def _signbit_scalar(b, x):
    if b.dtype(x).category < FLOATING:
        return b.lt(x, 0) if b.dtype(x) is not D.bool_ else b.ne(x, x)
    return _negative(b, x)


unary("signbit", _signbit_scalar, None, np.signbit, kind="always_bool", reject=NO_COMPLEX,
      impl=lambda xp, x: xp.signbit(x), inplace=False)


def _heaviside_promo(ops, attrs):
    dts = [o[0] for o in ops if isinstance(o, tuple)]
    if len(set(dts)) > 1:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes")
    if dts[0].category == COMPLEX:
        raise RuntimeError("heaviside is not yet implemented for complex tensors.")
    return dts[0], dts[0]


def _heaviside_scalar(b, x, v):
    step = b.cast(b.gt(x, 0), b.dtype(x))
    return b.where(b.eq(x, 0), v, step)


register(OpDef(
    "heaviside", "elementwise", "input, values", 2, _heaviside_promo,
    scalar=_heaviside_scalar, ref=np.heaviside, scalar_ok=False, inplace=True,
    test_dtypes=(D.int64, D.float32, D.float64),
))

# ---------------------------------------------------------------- logs and powers of two


def _logaddexp2_scalar(b, x, y):
    m = b.maximum(x, y)
    r = b.add(m, b.div(b.log1p(b.exp2(b.neg(b.abs(b.sub(x, y))))), LN2))
    return b.where(b.bitwise_and(b.isinf(m), b.eq(x, y)), m, r)  # inf + inf: no inf - inf


binary(
    "logaddexp2", _logaddexp2_scalar,
    lambda F, g, out, x, y: (_grad(x, F.mul(g, F.exp2(F.sub(x, out)))),
                             _grad(y, F.mul(g, F.exp2(F.sub(y, out))))),
    np.logaddexp2, reject=REAL_FLOAT, scalar_ok=False,
)


def _angle_unit(name, factor):
    unary(name, lambda b, x: b.mul(x, factor), lambda F, g, out, x: (F.mul(g, factor),),
          lambda x: x * factor, reject=(COMPLEX,))


_angle_unit("deg2rad", math.pi / 180.0)
_angle_unit("rad2deg", 180.0 / math.pi)


def _two_operand_samples(rng, dt, lo=-2.0, hi=2.0, ints=False):
    def arr(shape, d=dt):
        if ints or d.category <= INTEGER:
            return rng.integers(-3, 4, size=shape).astype(d.np)
        return rng.uniform(lo, hi, size=shape).astype(d.np)
    yield (arr((3, 4)), arr((4,))), {}
    yield (arr((3, 1)), arr((1, 4))), {}
    yield (arr((2, 3)), 2), {}


def _ldexp_decomp(F, x, other):
    """PyTorch's definition: input * 2 ** other (a float result for integer inputs)."""
    two = F.exp2(other) if not is_number(other) else 2.0 ** other
    return F.mul(x, two)


register(OpDef(
    "ldexp", "composite", "input, other", 2, "int_to_float", decomp=_ldexp_decomp,
    ref=lambda x, o: (x * np.exp2(o.astype(np.float64) if hasattr(o, "astype") else o)),
    sample_inputs=lambda rng, dt: ((xs, a) for xs, a in _two_operand_samples(rng, dt)
                                   if not is_number(xs[1])),
    scalar_ok=False, inplace=True, test_dtypes=FLOATS,
))


def _float_power_dtype(v):
    if is_number(v):
        return D.complex128 if isinstance(v, complex) else D.float64
    return D.complex128 if v.dtype.is_complex else D.float64


def _float_power_decomp(F, x, y):
    """PyTorch's definition: pow computed in double precision (complex128 when an operand is
    complex), whatever the inputs' dtypes."""
    dt = D.complex128 if D.complex128 in (_float_power_dtype(x), _float_power_dtype(y)) \
        else D.float64
    x = x if is_number(x) else F.cast(x, dt)
    y = y if is_number(y) else F.cast(y, dt)
    return F.pow(x, y)


def _float_power_samples(rng, dt):
    for xs, a in _two_operand_samples(rng, dt, lo=0.5, hi=2.0):
        if xs[0].dtype.kind in "iu":
            xs = (np.abs(xs[0]) + 1,) + xs[1:]
        yield xs, a


register(OpDef(
    "float_power", "composite", "input, exponent", 2, "default", decomp=_float_power_decomp,
    ref=lambda x, y: np.power(np.asarray(x, np.float64), np.asarray(y, np.float64)),
    sample_inputs=_float_power_samples, inplace=True, test_dtypes=(D.int64,) + FLOATS,
))

# ---------------------------------------------------------------- predicates


unary("isposinf", lambda b, x: b.bitwise_and(b.isinf(x), b.gt(x, 0)), None, np.isposinf,
      kind="always_bool", reject=NO_COMPLEX, inplace=False)
unary("isneginf", lambda b, x: b.bitwise_and(b.isinf(x), b.lt(x, 0)), None, np.isneginf,
      kind="always_bool", reject=NO_COMPLEX, inplace=False)


def _isreal_samples(rng, dt):
    x = rng.integers(-3, 4, (3, 4)).astype(np.float64)
    if dt.is_complex:
        x = x + 1j * (rng.random((3, 4)) < 0.5)
    yield (x.astype(dt.np),), {}


register(OpDef("isreal", "special", "input", 1, "always_bool", impl=lambda xp, x: xp.isreal(x),
               ref=np.isreal, inplace=False, sample_inputs=_isreal_samples))

# ---------------------------------------------------------------- integer and bit kernels


def _library(name, ufunc, reject, samples):
    register(OpDef(
        name, "special", "input, other", 2, Promo(name, "default", reject),
        impl=lambda xp, x, y: getattr(xp, ufunc)(x, y), ref=getattr(np, ufunc),
        scalar_ok=False, inplace=True, sample_inputs=samples,
    ))


def _int_samples(rng, dt):
    yield (rng.integers(-20, 21, (3, 4)).astype(dt.np),
           rng.integers(-20, 21, (4,)).astype(dt.np)), {}
    yield (rng.integers(0, 30, (3, 1)).astype(dt.np),
           rng.integers(0, 30, (1, 4)).astype(dt.np)), {}


_library("gcd", "gcd", (BOOL, FLOATING, COMPLEX), _int_samples)
_library("lcm", "lcm", (BOOL, FLOATING, COMPLEX), _int_samples)
_library("nextafter", "nextafter", (BOOL, INTEGER, COMPLEX),
         lambda rng, dt: ((xs, a) for xs, a in _two_operand_samples(rng, dt)
                          if not is_number(xs[1])))
REGISTRY["nextafter"].test_dtypes = FLOATS  # (half precision: one ulp of the stored dtype)

# ---------------------------------------------------------------- logcumsumexp


def _logcumsumexp_backward(F, g, out, x, dim):
    """PyTorch's rule (FunctionsManual logcumsumexp_backward): the positive and negative parts
    of `g` summed in log space, grad_i = sum_{j >= i} g_j exp(x_i - out_j), nothing overflows."""
    def rev(t):
        return F.flip(F.logcumsumexp(F.flip(t, (dim,)), dim), (dim,))

    logabs = F.log(F.abs(g))
    pos = F.where(F.gt(g, 0), logabs, -math.inf)
    neg = F.where(F.lt(g, 0), logabs, -math.inf)
    return (F.sub(F.exp(F.add(rev(F.sub(pos, out)), x)),
                  F.exp(F.add(rev(F.sub(neg, out)), x))),)


def _logcumsumexp_jvp(F, tangents, out, x, dim):
    """d out_j = sum_{i <= j} t_i exp(x_i - out_j), with the row maximum factored out."""
    t = tangents[0]
    if t is None:
        return None
    m = F.amax(x, (dim,), keepdim=True)
    return F.mul(F.cumsum(F.mul(t, F.exp(F.sub(x, m))), dim), F.exp(F.sub(m, out)))


register(OpDef(
    "logcumsumexp", "scan", "input, dim", 1,
    Promo("logcumsumexp", "default", (BOOL, INTEGER, COMPLEX), error=(
        NotImplementedError, ("logcumsumexp: integer and complex inputs are not supported by "
                              "wick (PyTorch: floating and complex)"))),
    shape=lambda s, dim: s, attrs_rule=_int_dim_attrs, jvp=_logcumsumexp_jvp,
    test_dtypes=FLOATS,
    impl=scalar_as_vector(lambda xp, x, dim: xp.logaddexp.accumulate(x, axis=dim)),
    backward=_logcumsumexp_backward,
    ref=lambda x, dim: np.logaddexp.accumulate(x.astype(np.float64), axis=dim),
    samples=({"dim": 1}, {"dim": -1}),
))
