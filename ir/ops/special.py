"""Special functions (`torch.special` and the top-level `lgamma`, `digamma`, `polygamma`,
`igamma`, `i0`, ...): elementwise ops whose kernels are library calls (`scipy.special` on numpy
arrays, `cupyx.scipy.special` on cupy), kind "special", so compiled graphs keep them as calls
rather than fusing a formula. Integer and bool inputs promote to the default float dtype, as
PyTorch's; complex input is refused.

Backward rules are PyTorch's (derivatives.yaml): lgamma' = digamma, digamma' = polygamma(1),
polygamma(n)' = polygamma(n + 1), i0' = i1, i0e' = i1e - sgn(x) i0e, i1' = i0 - i1 / x (1/2 at
0), i1e' = i0e - i1e (sgn(x) + 1 / x) (1/2 at 0), ndtri' = sqrt(2 pi) exp(ndtri^2 / 2),
erfcx' = 2 x erfcx - 2 / sqrt(pi), log_ndtr' = exp(-x^2 / 2 - log_ndtr) / sqrt(2 pi); igamma
and igammac are differentiable in `other` (x) by the closed form and in `input` (a) by a
float64 central difference (PyTorch raises "not implemented" there). Imports nothing of wick's outside `ir`.
"""

from __future__ import annotations

import math

import numpy as np

from ..opdef import OpDef, register, sum_to_shape
from .. import dtypes as D
from .elementwise import FLOATS, NO_COMPLEX, Promo
from .indexing import declare

SQRT_2PI = math.sqrt(2 * math.pi)
TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


def _sp(xp):
    if xp is np:
        import scipy.special as sp
    else:  # pragma: no cover - cupy
        import cupyx.scipy.special as sp
    return sp


def _impl(fn_name):
    def impl(xp, *xs, **attrs):
        out = getattr(_sp(xp), fn_name)(*xs)
        return out.astype(xs[-1].dtype, copy=False) if hasattr(xs[-1], "dtype") else out
    return impl


def _ref(fn_name):
    def ref(*xs, **attrs):
        import scipy.special as sp

        return getattr(sp, fn_name)(*xs)
    return ref


def _samples(lo, hi, n_args=1, ints=False):
    def gen(rng, dt):
        for shape in ((5,), (3, 4), ()):
            xs = [rng.uniform(lo, hi, size=shape).astype(dt.np) for _ in range(n_args)]
            yield tuple(xs), {}
        if n_args == 2:
            yield (rng.uniform(lo, hi, (3, 1)).astype(dt.np),
                   rng.uniform(lo, hi, (4,)).astype(dt.np)), {}
    return gen


def _unary(name, fn_name, dfdx, lo=0.1, hi=4.0, **kw):
    """One-operand special function `name` = scipy.special.`fn_name`; `dfdx(F, x, out)`."""
    register(OpDef(name, "special", "input", 1, Promo(name, "int_to_float", NO_COMPLEX),
                   impl=_impl(fn_name),
                   backward=(lambda F, g, out, x: (F.mul(g, dfdx(F, x, out)),))
                   if dfdx is not None else None,
                   ref=_ref(fn_name), sample_inputs=_samples(lo, hi), test_dtypes=FLOATS, **kw))


def _i1_grad(F, x, out):
    safe = F.where(F.eq(x, 0.0), 1.0, x)
    return F.where(F.eq(x, 0.0), 0.5, F.sub(F.i0(x), F.div(out, safe)))


def _i1e_grad(F, x, out):
    safe = F.where(F.eq(x, 0.0), 1.0, x)
    d = F.sub(F.special_i0e(x), F.mul(out, F.add(F.sign(x), F.reciprocal(safe))))
    return F.where(F.eq(x, 0.0), 0.5, d)


_unary("lgamma", "gammaln", lambda F, x, out: F.digamma(x))
_unary("digamma", "digamma", lambda F, x, out: F.polygamma(x, 1))
_unary("i0", "i0", lambda F, x, out: F.special_i1(x), lo=-3.0, hi=3.0)
_unary("special_i0e", "i0e", lambda F, x, out: F.sub(F.special_i1e(x),
                                                    F.mul(F.sign(x), out)), lo=-3.0, hi=3.0)
_unary("special_i1", "i1", _i1_grad, lo=-3.0, hi=3.0)
_unary("special_i1e", "i1e", _i1e_grad, lo=-3.0, hi=3.0)
_unary("special_ndtri", "ndtri",
       lambda F, x, out: F.mul(F.exp(F.mul(F.mul(out, out), 0.5)), SQRT_2PI), lo=0.05, hi=0.95)
_unary("special_erfcx", "erfcx",
       lambda F, x, out: F.sub(F.mul(F.mul(x, out), 2.0), TWO_OVER_SQRT_PI), lo=-2.0, hi=3.0)
_unary("special_log_ndtr", "log_ndtr",
       lambda F, x, out: F.div(F.exp(F.sub(F.mul(F.mul(x, x), -0.5), out)), SQRT_2PI),
       lo=-3.0, hi=3.0)


# polygamma(n, input): n is an attribute (a non-negative int), as torch.polygamma's
def _polygamma_impl(xp, x, n):
    out = _sp(xp).polygamma(n, x)
    return out.astype(x.dtype, copy=False) if x.dtype.kind == "f" else out


def _polygamma_attrs(inputs, attrs):
    n = attrs["n"]
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n." if isinstance(
            n, (int, np.integer)) else f"polygamma(): argument 'n' must be int, not "
            f"{type(n).__name__}")
    return {"n": int(n)}


def _float_result(inputs, attrs):
    d = inputs[0].dtype
    if d.is_complex:
        raise RuntimeError("polygamma is not implemented for complex tensors")
    return d if d.is_floating_point else D.get_default_dtype()


def _polygamma_prebind(args, kwargs):
    """torch.polygamma(n, input) and Tensor.polygamma(n): the operand first either way."""
    if args and isinstance(args[0], (int, np.integer)) and not isinstance(args[0], bool):
        args = args[1:2] + args[:1] + args[2:]
    return args, kwargs


declare(
    "polygamma", "special", "input, n", prebind=_polygamma_prebind, fixed=_float_result,
    attrs_rule=_polygamma_attrs, shape=lambda s, n: s,
    impl=lambda xp, x, n: _polygamma_impl(xp, x.astype(np.float64) if x.dtype.kind in "iub"
                                          else x, n),
    backward=lambda F, g, out, x, n: (F.mul(g, F.polygamma(x, n + 1)),),
    ref=lambda x, n: __import__("scipy.special").special.polygamma(n, x),
    sample_inputs=lambda rng, dt: (((rng.uniform(0.5, 4.0, (4,)).astype(dt.np),), {"n": n})
                                   for n in (0, 1, 2, 3)),
    test_dtypes=FLOATS,
)


# igamma(input, other) = P(a, x) (regularized lower incomplete gamma), igammac = Q(a, x)
def _igamma_da_impl(xp, a, x):
    """dP(a, x)/da by a central difference of P in float64 (error ~1e-9 relative): PyTorch
    has no derivative in `a` at all; a numerical one beats a silent zero."""
    sp = _sp(xp)
    a64, x64 = a.astype(np.float64), x.astype(np.float64)
    h = 1e-5 * xp.maximum(a64, 1.0)
    d = (sp.gammainc(a64 + h, x64) - sp.gammainc(a64 - h, x64)) / (2 * h)
    return d.astype(np.result_type(a.dtype, x.dtype), copy=False)


def _five_point_da(a, x):
    """An independent reference: the five-point stencil of P in `a` (error O(h^4))."""
    import scipy.special as sp

    h = 1e-3 * np.maximum(a, 1.0)
    f = [sp.gammainc(a + k * h, x) for k in (-2, -1, 1, 2)]
    return (f[0] - 8 * f[1] + 8 * f[2] - f[3]) / (12 * h)


register(OpDef(
    "_igamma_da", "special", "input, other", 2, Promo("_igamma_da", "int_to_float", NO_COMPLEX),
    impl=_igamma_da_impl, method=False,
    ref=lambda a, x: _five_point_da(a, x),
    sample_inputs=_samples(0.5, 4.0, 2), test_dtypes=(D.float64,),
))


def _igamma_backward(sign):
    def backward(F, g, out, a, x):
        # d/dx P(a, x) = x^(a-1) e^-x / Gamma(a); d/da numerically (_igamma_da)
        d = F.exp(F.sub(F.sub(F.mul(F.sub(a, 1.0), F.log(x)), x), F.lgamma(a)))
        gx = F.mul(g, d if sign > 0 else F.neg(d))
        ga = F.mul(g, F._igamma_da(a, x))
        ga = ga if sign > 0 else F.neg(ga)
        return sum_to_shape(F, ga, a.shape), sum_to_shape(F, gx, x.shape)
    return backward


for _name, _fn, _sign in (("igamma", "gammainc", 1), ("igammac", "gammaincc", -1)):
    register(OpDef(
        _name, "special", "input, other", 2, Promo(_name, "int_to_float", NO_COMPLEX),
        impl=_impl(_fn), backward=_igamma_backward(_sign), ref=_ref(_fn),
        sample_inputs=_samples(0.2, 4.0, 2), test_dtypes=FLOATS,
    ))

register(OpDef(
    "special_zeta", "special", "input, other", 2, Promo("special_zeta", "int_to_float",
                                                        NO_COMPLEX),
    impl=_impl("zeta"), ref=_ref("zeta"), sample_inputs=_samples(1.5, 4.0, 2),
    test_dtypes=FLOATS, method=False,
))
