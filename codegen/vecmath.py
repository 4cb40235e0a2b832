"""Branch-free vector math emitted as LLVM IR: exp, exp2, expm1, log, log2, log1p, tanh, erf,
erfc, sin, cos, tan, atan, atan2 and pow.

A libm call blocks loop vectorization and llvmlite's LLVM has no vector math library
(CODEGEN.md, "Transcendentals"), so float32 (and float16) kernels compute these functions as
plain IR that the loop vectorizer widens: range reduction, a polynomial and exponent bit tricks
(the approach of SLEEF and tinygrad), evaluated in double precision so that the float32 result
is within 1 ulp of the correctly rounded value over the whole domain, with inf, -inf, NaN, -0.0,
underflow and overflow selected explicitly (never by branches). Every function takes and returns
a `double` value of an `ll.IRBuilder`; the caller converts. float64 kernels use the `*_f64`
methods of `vecmath_f64.py` (FUNCTIONS_F64: exp, exp2, expm1, log, log2, log1p, tanh, erf, erfc;
within 3 ulp of numpy/mpmath float64); the other float64 functions call libm. The erf/erfc
polynomials are Chebyshev fits (near-minimax) of erf(x)/x in x**2 on [0, 1] and of erfcx(x) =
exp(x**2) * erfc(x) on [1, 3] and [3, 10.5], made with numpy from scipy's double references; exp
and log use their Taylor and atanh series. sin, cos and tan reduce |x| modulo pi/2 exactly
enough for every float32: Cody-Waite with a three-part pi/2 below 2**25, and above it a
Payne-Hanek step that multiplies the 24-bit mantissa by four 24-bit chunks of 2/pi picked by the
exponent from a constant table (a gather: still branch-free), then Taylor polynomials on [-pi/4,
pi/4]. atan reduces by 1/x and by pi/4 + atan((t - 1)/(t + 1)); atan2 and pow build on atan, exp
and log with C99's special cases selected explicitly. The constants and coefficient tables are
in `vecmath_tables.py`. Imports llvmlite only.
"""

from __future__ import annotations

import math

from llvmlite import ir as ll

from .vecmath_f64 import Float64Functions
from .vecmath_tables import (  # noqa: F401  (the f64 tables re-exported: their old home)
    ERF_SMALL,
    ERF_TAYLOR_F64,
    ERFCX_F64,
    ERFCX_F64_N,
    ERFCX_MID,
    ERFCX_TAIL,
    EXP2_TAYLOR_F64,
    EXP_TAYLOR_F64,
    EXPM1_TAYLOR_F64,
    F32,
    F64,
    I1,
    I32,
    I64,
    INF,
    LN2,
    LN2_HI,
    LN2_HI_F32,
    LN2_LO,
    LN2_LO_F32,
    LOG2E,
    LOG2E_LO,
    MSUN_LG,
    NAN,
    PIO2,
    PIO2_1,
    PIO2_2,
    PIO2_3,
    TAN_PI_8,
    TANH_SMALL,
    TANH_SMALL_F32,
    TWO_OVER_PI,
    _c,
)

# exponent-field layout per float type: (integer type, bias, mantissa bits)
_EXP_FIELD = {"double": (I64, 1023, 52), "float": (I32, 127, 23)}


class VecMath(Float64Functions):
    """The functions above on `double` values at the position of builder `b` (the `*_f64`
    methods come from `vecmath_f64.Float64Functions`)."""

    def __init__(self, b: ll.IRBuilder):
        self.b = b
        self.module = b.module

    # ---- type-generic building blocks (the float type is that of the operands)

    @staticmethod
    def _k(like, v):
        """The constant v in the float type of value `like`."""
        return ll.Constant(like.type, v)

    def _intr(self, name, *args):
        ty = args[0].type
        full = f"llvm.{name}.{'f64' if ty == F64 else 'f32'}"
        fn = self.module.globals.get(full)
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(ty, [ty] * len(args)), full)
        return self.b.call(fn, list(args))

    def horner(self, x, coeffs):
        """coeffs[0] + coeffs[1] x + ... in fma steps, in the type of x."""
        acc = self._k(x, coeffs[-1])
        for c in reversed(coeffs[:-1]):
            acc = self._intr("fma", acc, x, self._k(x, c))
        return acc

    def cheb_poly(self, x, table):
        """A fitted polynomial (lo, hi, power coefficients in t = (x - mid) / half)."""
        lo, hi, coeffs = table
        t = self.b.fmul(self.b.fsub(x, _c((lo + hi) / 2)), _c(2 / (hi - lo)))
        return self.horner(t, coeffs)

    def cheb_poly2(self, x, first, table1, table2):
        """cheb_poly(x, table1) where `first` (an i1) holds, else cheb_poly(x, table2), as one
        polynomial with its interval and coefficients selected per lane (the shorter table
        padded with leading zeros: fma(0, t, c) = c exactly, so the values are bit for bit
        those of the two separate polynomials at about half the fma count)."""
        (lo1, hi1, c1), (lo2, hi2, c2) = table1, table2
        n = max(len(c1), len(c2))
        c1, c2 = list(c1) + [0.0] * (n - len(c1)), list(c2) + [0.0] * (n - len(c2))
        b = self.b

        def pick(u, v):
            return b.select(first, self._k(x, u), self._k(x, v))

        t = b.fmul(b.fsub(x, pick((lo1 + hi1) / 2, (lo2 + hi2) / 2)),
                   pick(2 / (hi1 - lo1), 2 / (hi2 - lo2)))
        acc = pick(c1[-1], c2[-1])
        for u, v in zip(reversed(c1[:-1]), reversed(c2[:-1])):
            acc = self._intr("fma", acc, t, pick(u, v))
        return acc

    def select(self, c, x, y):
        return self.b.select(c, x, y)

    def cmp(self, op, x, y):
        return self.b.fcmp_ordered(op, x, self._k(x, y) if isinstance(y, float) else y)

    def isnan(self, x):
        return self.b.fcmp_unordered("uno", x, x)

    def _nan_through(self, x, y):
        """y, or x itself where x is NaN."""
        return self.select(self.isnan(x), x, y)

    def _lower(self, x, lo):
        """max(x, lo); NaN stays NaN."""
        return self.select(self.cmp("<", x, lo), self._k(x, lo), x)

    def _upper(self, x, hi):
        """min(x, hi); NaN stays NaN."""
        return self.select(self.cmp(">", x, hi), self._k(x, hi), x)

    def clamp(self, x, lo, hi):
        """min(max(x, lo), hi); NaN stays NaN."""
        return self._upper(self._lower(x, lo), hi)

    def _exp_bits(self, k, fty):
        """2**k for an integer k (of the integer type matching fty) in fty's normal exponent
        range, from the exponent bits."""
        b = self.b
        ity, bias, mant = _EXP_FIELD[str(fty)]
        return b.bitcast(b.shl(b.add(k, ll.Constant(ity, bias)), ll.Constant(ity, mant)), fty)

    def pow2i(self, n):
        """2**n for an integral double n in [-1022, 1023] (exponent bits)."""
        return self._exp_bits(self.b.fptosi(n, I64), F64)

    def _cody_waite(self, xc, ln2_hi, ln2_lo):
        """(n, r) with n = round(xc / ln2), r = xc - n ln2 by the two-part ln2 (hi, lo)."""
        n = self._intr("roundeven", self.b.fmul(xc, self._k(xc, LOG2E)))
        r = self._intr("fma", n, self._k(xc, -ln2_hi), xc)
        return n, self._intr("fma", n, self._k(xc, -ln2_lo), r)

    def _exp2_parts(self, x, lo, hi):
        """(n, r) with x = n + r exactly, n = round(x), x clamped to [lo, hi]."""
        xc = self.clamp(x, lo, hi)
        n = self._intr("roundeven", xc)
        return n, self.b.fsub(xc, n)

    def _const_table(self, name, values):
        """An internal constant global array of doubles (created once per module)."""
        g = self.module.globals.get(name)
        if g is None:
            ty = ll.ArrayType(F64, len(values))
            g = ll.GlobalVariable(self.module, ty, name)
            g.global_constant = True
            g.linkage = "internal"
            g.initializer = ll.Constant(ty, list(values))
        return g

    def _gather(self, tab, base, j):
        """tab[base + j] (base an i64 value): a per-lane load."""
        b = self.b
        ptr = b.gep(tab, [b.add(base, ll.Constant(I64, j))], inbounds=True, source_etype=F64)
        return b.load(ptr, typ=F64)

    # ---- exp family

    def _exp_reduced(self, r):
        """exp(r) for |r| <= ln2/2: Taylor series to degree 10 (relative error < 2e-13)."""
        return self.horner(r, [1 / math.factorial(k) for k in range(11)])

    def exp(self, x):
        """exp(x) to double accuracy for the float32 range; clamped so that 2**n is normal."""
        n, r = self._exp_parts_f64(x, -745.0, 709.0)
        # split 2**n in two factors so that n down to -1074 stays representable
        y = self._scale_f64(self._exp_reduced(r), n)
        y = self.select(self.cmp(">", x, 709.0), _c(INF), y)
        return self._nan_through(x, y)

    def exp2(self, x):
        n, r = self._exp2_parts(x, -1075.0, 1024.0)
        y = self._scale_f64(self._exp_reduced(self.b.fmul(r, _c(LN2))), n)
        y = self.select(self.cmp(">", x, 1023.0), _c(INF), y)
        return self._nan_through(x, y)

    def expm1(self, x):
        """x + x**2/2 + ... near 0 (relative accuracy), exp(x) - 1 elsewhere."""
        small = self.b.fmul(x, self.horner(x, [1 / math.factorial(k + 1) for k in range(16)]))
        big = self.b.fsub(self.exp(x), _c(1.0))
        return self.select(self.cmp("<", self._intr("fabs", x), 0.5), small, big)

    # ---- log family

    def _log_reduce(self, x):
        """(k, m) with x = 2**k m, m in [sqrt(1/2), sqrt(2)), k a double, for finite x > 0
        (subnormal doubles scaled up by 2**54 first so that the exponent field is meaningful)."""
        b = self.b
        sub = self.cmp("<", x, 2.2250738585072014e-308)
        xs = self.select(sub, b.fmul(x, _c(2.0 ** 54)), x)
        bits = b.bitcast(xs, I64)
        e = b.sub(b.lshr(bits, ll.Constant(I64, 52)), ll.Constant(I64, 1023))
        mbits = b.or_(b.and_(bits, ll.Constant(I64, (1 << 52) - 1)),
                      ll.Constant(I64, 1023 << 52))
        m = b.bitcast(mbits, F64)
        big = self.cmp(">", m, 1.4142135623730951)
        m = self.select(big, b.fmul(m, _c(0.5)), m)
        k = b.sitofp(e, F64)
        k = b.fadd(k, self.select(big, _c(1.0), _c(0.0)))
        k = b.fsub(k, self.select(sub, _c(54.0), _c(0.0)))
        return k, m

    def _log_special(self, x, y, at_zero=0.0):
        """inf at inf, -inf at `at_zero`, NaN below it and at NaN."""
        y = self.select(self.cmp("==", x, INF), _c(INF), y)
        y = self.select(self.cmp("==", x, at_zero), _c(-INF), y)
        y = self.select(self.cmp("<", x, at_zero), _c(NAN), y)
        return self._nan_through(x, y)

    def log(self, x):
        """log(x) = e*ln2 + 2*atanh(s), s = (m - 1)/(m + 1), m in [sqrt(1/2), sqrt(2))."""
        b = self.b
        ef, m = self._log_reduce(x)
        s = b.fdiv(b.fsub(m, _c(1.0)), b.fadd(m, _c(1.0)))
        s2 = b.fmul(s, s)
        series = self.horner(s2, [2 / (2 * k + 1) for k in range(11)])
        y = self._intr("fma", ef, _c(LN2), b.fmul(s, series))
        return self._log_special(x, y)

    def log2(self, x):
        return self.b.fmul(self.log(x), _c(LOG2E))

    def log1p(self, x):
        """log(u) * x / (u - 1) with u = 1 + x (exact where u == 1: then x)."""
        b = self.b
        u = b.fadd(x, _c(1.0))
        um1 = b.fsub(u, _c(1.0))
        corr = b.fmul(self.log(u), b.fdiv(x, um1))
        y = self.select(self.cmp("==", um1, 0.0), x, corr)
        return self._log_special(x, y, at_zero=-1.0)

    # ---- tanh, erf, erfc

    def _tanh_from(self, x, a, small, e, cut):
        """tanh(x) from a = |x|, small = tanh(a) for a < cut and e = exp(2a):
        1 - 2/(e + 1) beyond cut; the sign copied from x (NaN in, NaN out; -0.0 kept)."""
        b = self.b
        big = b.fsub(self._k(x, 1.0), b.fdiv(self._k(x, 2.0), b.fadd(e, self._k(x, 1.0))))
        t = self.select(self.cmp("<", a, cut), small, big)
        return self._intr("copysign", t, x)

    def tanh(self, x):
        """|x| < 0.55: x * P(x**2) (a Chebyshev fit of tanh(x)/x); else 1 - 2/(exp(2|x|) + 1),
        |x| clamped to 20 (tanh = 1 beyond); the sign copied from x."""
        b = self.b
        a = self.clamp(self._intr("fabs", x), 0.0, 20.0)
        small = b.fmul(a, self.cheb_poly(b.fmul(a, a), TANH_SMALL))
        return self._tanh_from(x, a, small, self.exp(b.fmul(a, _c(2.0))), 0.55)

    def _erfc_tail(self, a):
        """erfc(a) for a >= 1: exp(-a**2) erfcx(a) (a clamped to 10.5, where erfc is below
        every float32), erfcx's fits on [1, 3] and [3, 10.5] as one selected polynomial."""
        b = self.b
        ac = self.clamp(a, 0.0, 10.5)
        return b.fmul(self.exp(b.fneg(b.fmul(ac, ac))),
                      self.cheb_poly2(ac, self.cmp("<", ac, 3.0), ERFCX_MID, ERFCX_TAIL))

    def _erfc_pos(self, a):
        """erfc(a) for a >= 0: 1 - erf(a) below 1, the tail from 1 on."""
        ac = self.clamp(a, 0.0, 10.5)
        head = self.b.fsub(_c(1.0), self._erf_small(ac))
        return self.select(self.cmp("<", ac, 1.0), head, self._erfc_tail(a))

    def _erf_small(self, a):
        return self.b.fmul(a, self.cheb_poly(self.b.fmul(a, a), ERF_SMALL))

    def _erf_from(self, x, cut, small, erfc_pos):
        """small(|x|) below cut, 1 - erfc_pos(|x|) from it on, the sign copied from x."""
        a = self._intr("fabs", x)
        y = self.select(self.cmp("<", a, cut), small(a), self.b.fsub(_c(1.0), erfc_pos(a)))
        return self._intr("copysign", y, x)

    def _erfc_reflect(self, x, pos):
        """erfc(x) from pos = erfc(|x|): 2 - pos for x < 0."""
        return self.select(self.cmp("<", x, 0.0), self.b.fsub(_c(2.0), pos), pos)

    def erf(self, x):
        return self._erf_from(x, 1.0, self._erf_small, self._erfc_tail)

    def erfc(self, x):
        pos = self._erfc_pos(self._intr("fabs", x))
        return self._nan_through(x, self._erfc_reflect(x, pos))

    # ---- sin, cos, tan (float32 arguments, computed in double)

    def signbit(self, x):
        return self.b.icmp_signed("<", self.b.bitcast(x, I64), ll.Constant(I64, 0))

    def _reduce_pio2(self, x):
        """(r, q) with |x| = (4k + q) * pi/2 + r, |r| <= pi/4 (a hair more at ties), q an i64
        in 0..3, for x a float32 value held in a double; r relative error ~1e-16."""
        b = self.b
        a = self._intr("fabs", x)
        n = self._intr("roundeven", b.fmul(a, _c(2 / math.pi)))
        r = self._intr("fma", b.fneg(n), _c(PIO2_1), a)
        r = self._intr("fma", b.fneg(n), _c(PIO2_2), r)
        r = self._intr("fma", b.fneg(n), _c(PIO2_3), r)
        # Payne-Hanek for |x| >= 2**25 (exponent field >= 152)
        bits = b.bitcast(b.fptrunc(a, F32), I32)
        ex = b.lshr(bits, ll.Constant(I32, 23))
        m = b.uitofp(b.or_(b.and_(bits, ll.Constant(I32, 0x7FFFFF)), ll.Constant(I32, 0x800000)),
                     F64)
        idx = b.sub(ex, ll.Constant(I32, 152))
        idx = b.select(b.icmp_signed("<", idx, ll.Constant(I32, 0)), ll.Constant(I32, 0), idx)
        idx = b.select(b.icmp_signed(">", idx, ll.Constant(I32, 103)), ll.Constant(I32, 103), idx)
        idx = b.zext(b.shl(idx, ll.Constant(I32, 2)), I64)
        tab = self._table()
        ts = [self._gather(tab, idx, j) for j in range(4)]

        def mod4(v):
            return b.fsub(v, b.fmul(self._intr("floor", b.fmul(v, _c(0.25))), _c(4.0)))

        r01 = mod4(b.fadd(mod4(b.fmul(m, ts[0])), b.fmul(m, ts[1])))   # exact
        p2, p3 = b.fmul(m, ts[2]), b.fmul(m, ts[3])
        nb = self._intr("roundeven", b.fadd(r01, p2))
        f = b.fadd(b.fadd(b.fsub(r01, nb), p2), p3)
        big = b.icmp_unsigned(">=", ex, ll.Constant(I32, 152))
        r = self.select(big, b.fmul(f, _c(PIO2)), r)
        n = self.select(big, nb, n)
        q = b.and_(b.fptosi(n, I64), ll.Constant(I64, 3))
        return r, q

    def _table(self):
        return self._const_table("wick_two_over_pi", TWO_OVER_PI)

    def _sincos_poly(self, r):
        b = self.b
        z = b.fmul(r, r)
        s = self._intr("fma", b.fmul(r, z), self.horner(
            z, [(-1) ** (k + 1) / math.factorial(2 * k + 3) for k in range(7)]), r)
        c = self.horner(z, [(-1) ** k / math.factorial(2 * k) for k in range(9)])
        return s, c

    def _bit(self, q, k):
        return self.b.icmp_unsigned("!=", self.b.and_(q, ll.Constant(I64, k)),
                                    ll.Constant(I64, 0))

    def _trig_special(self, x, y):
        """NaN for inf and NaN arguments."""
        bad = self.b.fcmp_unordered("ueq", self._intr("fabs", x), _c(INF))
        return self.select(bad, _c(NAN), y)

    def sin(self, x):
        b = self.b
        r, q = self._reduce_pio2(x)
        s, c = self._sincos_poly(r)
        v = self.select(self._bit(q, 1), c, s)
        v = self.select(self._bit(q, 2), b.fneg(v), v)
        v = self.select(self.signbit(x), b.fneg(v), v)
        return self._trig_special(x, v)

    def cos(self, x):
        b = self.b
        r, q = self._reduce_pio2(x)
        s, c = self._sincos_poly(r)
        v = self.select(self._bit(q, 1), s, c)
        v = self.select(self._bit(b.add(q, ll.Constant(I64, 1)), 2), b.fneg(v), v)
        return self._trig_special(x, v)

    def tan(self, x):
        b = self.b
        r, q = self._reduce_pio2(x)
        s, c = self._sincos_poly(r)
        v = self.select(self._bit(q, 1), b.fneg(b.fdiv(c, s)), b.fdiv(s, c))
        v = self.select(self.signbit(x), b.fneg(v), v)
        return self._trig_special(x, v)

    # ---- atan, atan2, pow

    def _atan01(self, t):
        """atan(t) for t in [0, 1] (t > tan(pi/8) goes through pi/4 + atan((t-1)/(t+1)))."""
        b = self.b
        mid = self.cmp(">", t, TAN_PI_8)
        u = self.select(mid, b.fdiv(b.fsub(t, _c(1.0)), b.fadd(t, _c(1.0))), t)
        z = b.fmul(u, u)
        p = self._intr("fma", b.fmul(u, z), self.horner(
            z, [(-1) ** (k + 1) / (2 * k + 3) for k in range(13)]), u)
        return self.select(mid, b.fadd(p, _c(math.pi / 4)), p)

    def atan(self, x):
        b = self.b
        a = self._intr("fabs", x)
        inv = self.cmp(">", a, 1.0)
        v = self._atan01(self.select(inv, b.fdiv(_c(1.0), a), a))
        v = self.select(inv, b.fsub(_c(PIO2), v), v)
        v = self._intr("copysign", v, x)
        return self.select(self.isnan(x), x, v)

    def atan2(self, y, x):
        b = self.b
        ax, ay = self._intr("fabs", x), self._intr("fabs", y)
        swap = self.cmp(">", ay, ax)
        t = b.fdiv(self.select(swap, ax, ay), self.select(swap, ay, ax))
        t = self.select(self.cmp("==", ax, ay), _c(1.0), t)                # both inf
        t = self.select(self.cmp("==", self.select(swap, ay, ax), 0.0), _c(0.0), t)  # both 0
        v = self._atan01(t)
        v = self.select(swap, b.fsub(_c(PIO2), v), v)
        v = self.select(self.signbit(x), b.fsub(_c(math.pi), v), v)
        v = self._intr("copysign", v, y)
        return self.select(b.or_(self.isnan(x), self.isnan(y)), _c(NAN), v)

    def pow(self, x, y):
        """exp(y * log|x|) (in double: exact enough for float32), the sign from odd integer y,
        NaN for negative x and non-integral y, and C99's special cases (pow(x, 0) = 1,
        pow(1, y) = 1, pow(-1, +-inf) = 1)."""
        b = self.b
        a = self._intr("fabs", x)
        v = self.exp(b.fmul(y, self.log(a)))
        fl = self._intr("floor", y)
        integral = self.cmp("==", fl, y)
        odd = b.and_(integral, self.cmp("!=", b.fmul(self._intr("floor", b.fmul(y, _c(0.5))),
                                                      _c(2.0)), y))
        neg = self.signbit(x)
        v = self.select(b.and_(neg, odd), b.fneg(v), v)
        nonint = b.xor(integral, ll.Constant(I1, 1))
        finite = b.and_(self.cmp(">", a, 0.0), self.cmp("<", a, INF))   # 0 and inf: exp does it
        v = self.select(b.and_(b.and_(neg, nonint), finite), _c(NAN), v)
        v = self.select(b.and_(self.cmp("==", a, 1.0), self.cmp("==", self._intr("fabs", y),
                                                               INF)), _c(1.0), v)
        v = self.select(self.cmp("==", x, 1.0), _c(1.0), v)
        return self.select(self.cmp("==", y, 0.0), _c(1.0), v)

    # ---- float32-native exp and tanh (the GELU-tanh path: twice the lanes of double)

    def _exp_poly_f32(self, r):
        """e**r by its Taylor polynomial to degree 7, in float32."""
        return self.horner(r, [1 / math.factorial(k) for k in range(8)])

    def exp_f32(self, x):
        """float32 exp within 1 ulp, computed in float32 (twice the lanes of double): Cody-Waite
        reduction n = round(x / ln2), r = x - n ln2 (|r| <= 0.347), Taylor degree 7, times
        2**n as two normal factors 2**h * 2**(n - h) (so subnormal results round once and n up
        to 128 overflows to inf); x clamped to [-104, 89], NaN passed through."""
        b = self.b
        n, r = self._cody_waite(self.clamp(x, -104.0, 89.0), LN2_HI_F32, LN2_LO_F32)
        p = self._exp_poly_f32(r)
        ni = b.fptosi(n, I32)
        h = b.ashr(ni, ll.Constant(I32, 1))
        y = b.fmul(b.fmul(p, self._exp_bits(h, F32)), self._exp_bits(b.sub(ni, h), F32))
        return self._nan_through(x, y)

    def tanh_f32(self, x):
        """float32 tanh within 2 ulp, computed in float32: |x| < 0.55: x * P(x**2); else
        1 - 2 / (exp(2|x|) + 1) with a float32 exp (Cody-Waite reduction, Taylor degree 7,
        exponent bits; 2|x| is in [1.1, 40], so 2**n is always normal)."""
        b = self.b
        a = self._upper(self._intr("fabs", x), 20.0)
        small = b.fmul(a, self.horner(b.fmul(a, a), TANH_SMALL_F32))
        t = self._lower(b.fmul(a, self._k(x, 2.0)), 1.1)
        n, r = self._cody_waite(t, LN2_HI_F32, LN2_LO_F32)
        p = self._exp_poly_f32(r)
        e = b.fmul(p, self._exp_bits(b.fptosi(n, I32), F32))
        return self._tanh_from(x, a, small, e, 0.55)
FUNCTIONS_F64 = ("exp", "exp2", "expm1", "log", "log2", "log1p", "tanh", "erf", "erfc")
FUNCTIONS = ("exp", "exp2", "expm1", "log", "log2", "log1p", "tanh", "erf", "erfc", "sin", "cos",
             "tan", "atan", "atan2", "pow")
