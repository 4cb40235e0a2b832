"""torch.special's Bessel functions and orthogonal polynomials: `special_bessel_j0/j1/y0/y1`,
`special_modified_bessel_i0/i1/k0/k1`, `special_scaled_modified_bessel_k0/k1`,
`special_spherical_bessel_j0`, `special_airy_ai` (one operand, scipy.special kernels), and
`special_<family>_polynomial_<kind>(input, n)` for Chebyshev T/U/V/W (and their shifted forms on
[0, 1]), Hermite H (physicists') and He (probabilists'), Laguerre L and Legendre P, evaluated by
the three-term recurrences in float64 (then cast), `n` truncated to an integer and negative `n`
giving 0, as ATen's kernels. None of them has a derivative in PyTorch; neither here.
References in the tests: scipy's general-order functions (jv, yv, iv, kv), mpmath's Airy
function and numpy.polynomial's series evaluation. Imports nothing outside `ir` but
scipy/numpy.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, register
from .elementwise import FLOATS, NO_COMPLEX, Promo
from .special import _samples, _sp

__all__: list = []


def _cast(out, like):
    return out.astype(like.dtype, copy=False) if getattr(like, "dtype", None) is not None \
        and like.dtype.kind == "f" else out


_UNARY = {  # op name -> (scipy kernel of x, independent reference)
    "special_bessel_j0": (lambda sp, x: sp.j0(x), lambda sp, x: sp.jv(0, x)),
    "special_bessel_j1": (lambda sp, x: sp.j1(x), lambda sp, x: sp.jv(1, x)),
    "special_bessel_y0": (lambda sp, x: sp.y0(x), lambda sp, x: sp.yv(0, x)),
    "special_bessel_y1": (lambda sp, x: sp.y1(x), lambda sp, x: sp.yv(1, x)),
    "special_modified_bessel_i0": (lambda sp, x: sp.i0(x), lambda sp, x: sp.iv(0, x)),
    "special_modified_bessel_i1": (lambda sp, x: sp.i1(x), lambda sp, x: sp.iv(1, x)),
    "special_modified_bessel_k0": (lambda sp, x: sp.k0(x), lambda sp, x: sp.kv(0, x)),
    "special_modified_bessel_k1": (lambda sp, x: sp.k1(x), lambda sp, x: sp.kv(1, x)),
    "special_scaled_modified_bessel_k0": (lambda sp, x: sp.k0e(x),
                                          lambda sp, x: sp.kv(0, x) * np.exp(x)),
    "special_scaled_modified_bessel_k1": (lambda sp, x: sp.k1e(x),
                                          lambda sp, x: sp.kv(1, x) * np.exp(x)),
    "special_spherical_bessel_j0": (lambda sp, x: sp.spherical_jn(0, x),
                                    lambda sp, x: np.where(x == 0, 1.0, np.sin(x) / np.where(
                                        x == 0, 1.0, x))),
    "special_airy_ai": (lambda sp, x: sp.airy(x)[0], None),
}


def _airy_ref(x):
    import mpmath

    return np.vectorize(lambda v: float(mpmath.airyai(float(v))))(x)


def _unary_impl(kernel):
    def impl(xp, x):
        return _cast(kernel(_sp(xp), x), x)
    return impl


def _unary_ref(ref):
    def run(x):
        import scipy.special as sp

        return ref(sp, x)
    return run


for _name, (_kernel, _ref) in _UNARY.items():
    _lo = 0.2 if "k" in _name.split("_")[-1] or "y" in _name.split("_")[-1] else -3.0
    register(OpDef(
        _name, "special", "input", 1, Promo(_name, "int_to_float", NO_COMPLEX),
        impl=_unary_impl(_kernel), ref=_airy_ref if _ref is None else _unary_ref(_ref),
        sample_inputs=_samples(_lo, 4.0), test_dtypes=FLOATS, method=False,
    ))


# ---------------------------------------------------------------- orthogonal polynomials

# family -> (P0, P1, step(k, x, P_k, P_k-1) = P_k+1), all as float64 arrays
_FAMILIES = {
    "chebyshev_polynomial_t": (lambda x: x, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_u": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_v": (lambda x: 2 * x - 1, lambda k, x, p, q: 2 * x * p - q),
    "chebyshev_polynomial_w": (lambda x: 2 * x + 1, lambda k, x, p, q: 2 * x * p - q),
    "hermite_polynomial_h": (lambda x: 2 * x, lambda k, x, p, q: 2 * x * p - 2 * k * q),
    "hermite_polynomial_he": (lambda x: x, lambda k, x, p, q: x * p - k * q),
    "laguerre_polynomial_l": (lambda x: 1 - x,
                              lambda k, x, p, q: ((2 * k + 1 - x) * p - k * q) / (k + 1)),
    "legendre_polynomial_p": (lambda x: x,
                              lambda k, x, p, q: ((2 * k + 1) * x * p - k * q) / (k + 1)),
}


def _recurrence(family, x, n):
    """P_n(x) elementwise for integer arrays n (broadcast with x); 0 where n < 0."""
    first, step = _FAMILIES[family]
    x, n = np.broadcast_arrays(np.asarray(x, np.float64), np.asarray(n))
    n = np.trunc(n).astype(np.int64)
    q, p = np.ones_like(x), first(x)  # P_0, P_1
    out = np.where(n == 0, q, p)
    top = int(n.max()) if n.size else 0
    for k in range(1, top):
        q, p = p, step(k, x, p, q)  # p = P_{k+1}
        out = np.where(n == k + 1, p, out)
    return np.where(n < 0, 0.0, out)


def _poly_impl(family, shifted):
    def impl(xp, x, n):
        host = (lambda a: a) if xp is np else (lambda a: a.get() if hasattr(a, "get") else a)
        xv = np.asarray(host(x), np.float64)
        r = _recurrence(family, 2 * xv - 1 if shifted else xv, host(n))
        like = x if getattr(x, "dtype", None) is not None and x.dtype.kind == "f" else n
        r = _cast(r, like) if getattr(like, "dtype", None) is not None and \
            like.dtype.kind == "f" else r
        return r if xp is np else xp.asarray(r)
    return impl


def _poly_ref(family, shifted):
    """numpy.polynomial's series with the unit coefficient vector e_n (Chebyshev V/W by their
    trigonometric forms on (-1, 1))."""
    def ref(x, n):
        from numpy.polynomial import chebyshev, hermite, hermite_e, laguerre, legendre

        x = np.asarray(x, np.float64)
        x = 2 * x - 1 if shifted else x
        vals = {"chebyshev_polynomial_t": chebyshev.chebval, "chebyshev_polynomial_u": None,
                "hermite_polynomial_h": hermite.hermval, "hermite_polynomial_he":
                hermite_e.hermeval, "laguerre_polynomial_l": laguerre.lagval,
                "legendre_polynomial_p": legendre.legval}
        x, n = np.broadcast_arrays(x, np.trunc(np.asarray(n)).astype(np.int64))
        out = np.empty(x.shape)
        for i in np.ndindex(x.shape):
            k, v = int(n[i]), float(x[i])
            if k < 0:
                out[i] = 0.0
            elif vals.get(family) is not None:
                out[i] = vals[family](v, [0.0] * k + [1.0])
            else:
                t = np.arccos(np.clip(v, -1, 1))
                out[i] = {"chebyshev_polynomial_u": np.sin((k + 1) * t) / np.sin(t),
                          "chebyshev_polynomial_v": np.cos((k + 0.5) * t) / np.cos(t / 2),
                          "chebyshev_polynomial_w": np.sin((k + 0.5) * t) / np.sin(t / 2),
                          }[family]
        return out
    return ref


def _poly_samples(shifted):
    lo, hi = (0.05, 0.95) if shifted else (-0.95, 0.95)

    def gen(rng, dt):
        yield (rng.uniform(lo, hi, (6,)).astype(dt.np), np.array(3.0).astype(dt.np)), {}
        yield (rng.uniform(lo, hi, (3, 1)).astype(dt.np),
               np.array([0, 1, 2, 5, 9]).astype(dt.np)), {}
    return gen


for _family in _FAMILIES:
    for _shifted in (False, True):
        if _shifted and not _family.startswith("chebyshev"):
            continue
        _op = f"special_{'shifted_' if _shifted else ''}{_family}"
        register(OpDef(
            _op, "special", "input, n", 2, Promo(_op, "int_to_float", NO_COMPLEX),
            impl=_poly_impl(_family, _shifted), ref=_poly_ref(_family, _shifted),
            sample_inputs=_poly_samples(_shifted), test_dtypes=(D.float32, D.float64),
            method=False,
        ))
