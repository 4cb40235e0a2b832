"""The float64 functions of `codegen.vecmath` (`VecMath.exp_f64` ... `erfc_f64`, listed in
`vecmath.FUNCTIONS_F64`): within ~1-3 ulp of numpy/mpmath float64, every lane branch-free.
Cody-Waite with LN2_HI/LN2_LO and Taylor polynomials of degree 13-14 for exp/exp2/expm1, msun's
log reduction with Lg1..Lg7 and double-double steps, msun-style expm1 and tanh, and erfc as
exp(-hi)(1 - lo) erfcx(x) with x**2 = hi + lo and erfcx from a gathered table of per-interval
polynomials. A mixin of `VecMath`: the methods build on its type-generic blocks (`horner`,
`select`, `_cody_waite`, `_gather`...). Imports llvmlite and `vecmath_tables` only.
"""

from __future__ import annotations

from llvmlite import ir as ll

from .vecmath_tables import (
    ERF_TAYLOR_F64,
    ERFCX_F64,
    ERFCX_F64_N,
    EXP2_TAYLOR_F64,
    EXP_TAYLOR_F64,
    EXPM1_TAYLOR_F64,
    I64,
    LN2_HI,
    LN2_LO,
    LOG2E,
    LOG2E_LO,
    MSUN_LG,
    _c,
)


class Float64Functions:
    """The `*_f64` methods of `VecMath` (see the module docstring)."""

    # ---- float64: accurate to ~1-2 ulp of the double result, every lane branch-free

    def _exp_parts_f64(self, x, lo, hi):
        """(n, r) with x = n ln2 + r, |r| <= ln2/2 (Cody-Waite: n * LN2_HI is exact, the LN2_LO
        step adds an error far below an ulp of the result), x clamped to [lo, hi]."""
        return self._cody_waite(self.clamp(x, lo, hi), LN2_HI, LN2_LO)

    def _scale_f64(self, p, n):
        """p * 2**n for integral n in [-1076, 1024]: two normal factors, so that a subnormal
        result rounds once and n = 1024 with p >= 1 overflows to inf."""
        half = self._intr("floor", self.b.fmul(n, _c(0.5)))
        return self.b.fmul(self.b.fmul(p, self.pow2i(half)), self.pow2i(self.b.fsub(n, half)))

    def exp_f64(self, x):
        """e**r by its Taylor polynomial to degree 13 (truncation < 4e-18 relative for
        |r| <= ln2/2; Horner in fma, ~1 ulp), times 2**n; x clamped to [-746, 710], where the
        result is 0 and inf."""
        n, r = self._exp_parts_f64(x, -746.0, 710.0)
        p = self.horner(r, EXP_TAYLOR_F64)
        return self._nan_through(x, self._scale_f64(p, n))

    def exp2_f64(self, x):
        """2**r = e**(r ln2) for r = x - round(x) (exact), |r| <= 1/2, by the Taylor
        polynomial in r (coefficients ln2**k / k!), times 2**n."""
        n, r = self._exp2_parts(x, -1076.0, 1025.0)
        p = self.horner(r, EXP2_TAYLOR_F64)
        return self._nan_through(x, self._scale_f64(p, n))

    def expm1_f64(self, x):
        """The reduction of FreeBSD msun's s_expm1.c without its branches: x = n ln2 + r,
        expm1(r) = r + r**2 * Q(r) (Taylor to degree 14: relative accuracy at r -> 0), then
        2**n * (1 + expm1(r)) - 1 as one fma, fma(2**n, em, 2**n - 1), where 2**n - 1 is exact
        for |n| <= 53 (beyond, the 1 is below half an ulp); n above 1000 moves its excess into
        an exact final scaling. x clamped to [-40, 710] (-1 and inf there); -0.0 kept."""
        b = self.b
        n, r = self._exp_parts_f64(x, -40.0, 710.0)
        em = self._intr("fma", b.fmul(r, r), self.horner(r, EXPM1_TAYLOR_F64), r)
        n1 = self._upper(n, 1000.0)
        n2 = b.fsub(n, n1)                          # 0..24
        s1 = self.pow2i(n1)
        y = self._intr("fma", s1, em, b.fsub(s1, self.pow2i(b.fneg(n2))))
        y = b.fmul(y, self.pow2i(n2))
        y = self.select(self.cmp("==", x, 0.0), x, y)
        return self._nan_through(x, y)

    def _log_dd(self, x):
        """(k, hi, lo) with log(x) ~ k ln2 + hi + lo for finite x > 0 (subnormals scaled by
        2**54): the reduction and minimax polynomial of FreeBSD msun's e_log.c (Lg1..Lg7,
        error < 2**-58.45 on |s| <= 0.1716): x = 2**k (1 + f), 1 + f in [sqrt(2)/2, sqrt(2)),
        s = f/(2 + f), log(1 + f) = f - hfsq + s (hfsq + R(s**2)); hi = f - hfsq rounded,
        lo its exact rounding error plus the small rest."""
        b = self.b
        k, m = self._log_reduce(x)
        f = b.fsub(m, _c(1.0))                                   # exact
        s = b.fdiv(f, b.fadd(f, _c(2.0)))
        z = b.fmul(s, s)
        rr = b.fmul(z, self.horner(z, MSUN_LG))
        hfsq = b.fmul(b.fmul(f, f), _c(0.5))
        hi = b.fsub(f, hfsq)
        lo = b.fadd(b.fsub(b.fsub(f, hi), hfsq), b.fmul(s, b.fadd(hfsq, rr)))
        return k, hi, lo

    def _fast_two_sum_add(self, a, b_, tail):
        """a + b_ + tail with a fast two-sum of a and b_ (|a| >= |b_| or a = 0)."""
        b = self.b
        w = b.fadd(a, b_)
        err = b.fadd(b.fsub(a, w), b_)
        return b.fadd(w, b.fadd(err, tail))

    def _log_combine(self, k, hi, lo):
        """k ln2 + hi + lo with k ln2 = k LN2_HI (exact) + k LN2_LO and a fast two-sum
        (|k LN2_HI| >= ln2 > |hi| unless k = 0, where it is exact anyway)."""
        t = self.b.fmul(k, _c(LN2_HI))
        return self._fast_two_sum_add(t, hi, self._intr("fma", k, _c(LN2_LO), lo))

    def log_f64(self, x):
        k, hi, lo = self._log_dd(x)
        return self._log_special(x, self._log_combine(k, hi, lo))

    def log2_f64(self, x):
        """k + (hi + lo) log2(e), with hi * LOG2E as an exact product pair (fma) and log2(e)
        in two parts, then a fast two-sum with k (the structure of msun's e_log2.c)."""
        b = self.b
        k, hi, lo = self._log_dd(x)
        ph = b.fmul(hi, _c(LOG2E))
        pl = self._intr("fma", hi, _c(LOG2E), b.fneg(ph))
        tail = b.fadd(pl, self._intr("fma", lo, _c(LOG2E), b.fmul(hi, _c(LOG2E_LO))))
        return self._log_special(x, self._fast_two_sum_add(k, ph, tail))

    def log1p_f64(self, x):
        """log(u) + c/u for u = 1 + x rounded and c its exact rounding error (two-sum), as
        msun's s_log1p.c corrects it; -0.0 kept."""
        b = self.b
        u = b.fadd(x, _c(1.0))
        bb = b.fsub(u, x)
        c = b.fadd(b.fsub(_c(1.0), bb), b.fsub(x, b.fsub(u, bb)))
        k, hi, lo = self._log_dd(u)
        y = self._log_combine(k, hi, b.fadd(lo, b.fdiv(c, u)))
        y = self.select(self.cmp("==", x, 0.0), x, y)
        return self._log_special(x, y, at_zero=-1.0)

    def tanh_f64(self, x):
        """msun's s_tanh.c without branches: a = |x| (clamped to 22, where tanh rounds to 1);
        a < 1: -t / (t + 2) with t = expm1(-2a); else 1 - 2 / (t + 2) with t = expm1(2a); one
        expm1 and one division per lane, the sign copied from x (NaN and -0.0 kept)."""
        b = self.b
        a = self.clamp(self._intr("fabs", x), 0.0, 22.0)
        small = self.cmp("<", a, 1.0)
        t = self.expm1_f64(b.fmul(a, self.select(small, _c(-2.0), _c(2.0))))
        q = b.fdiv(self.select(small, b.fneg(t), _c(2.0)), b.fadd(t, _c(2.0)))
        return self._intr("copysign", self.select(small, q, b.fsub(_c(1.0), q)), x)

    def _erfcx_table(self):
        return self._const_table("wick_erfcx_f64", ERFCX_F64)

    def _erfc_pos_f64(self, a):
        """erfc(a) for a >= 0.5: exp(-a**2) erfcx(a), a**2 = hi + lo exactly (fma), so
        exp(-a**2) = exp(-hi) (1 - lo); erfcx from the coefficients of the unit interval
        holding a (gathered: branch-free); a clamped to 28.5 (erfc = 0 beyond 27.3)."""
        b = self.b
        ac = self.clamp(a, 0.5, 28.5)
        ac = self.select(self.isnan(ac), _c(1.0), ac)     # a defined index for NaN lanes
        i = self._upper(self._intr("floor", b.fsub(ac, _c(0.5))), 27.0)
        t = b.fmul(b.fsub(ac, b.fadd(i, _c(1.0))), _c(2.0))
        base = b.mul(b.fptosi(i, I64), ll.Constant(I64, ERFCX_F64_N))
        tab = self._erfcx_table()
        g = self._gather(tab, base, ERFCX_F64_N - 1)
        for j in range(ERFCX_F64_N - 2, -1, -1):
            g = self._intr("fma", g, t, self._gather(tab, base, j))
        hi = b.fmul(ac, ac)
        lo = self._intr("fma", ac, ac, b.fneg(hi))
        g = self._intr("fma", b.fneg(lo), g, g)
        return b.fmul(self.exp_f64(b.fneg(hi)), g)

    def _erf_small_f64(self, a):
        """erf(a) / a for |a| < 0.5."""
        return self.horner(self.b.fmul(a, a), ERF_TAYLOR_F64)

    def erf_f64(self, x):
        """|x| < 0.5: x P(x**2); else 1 - erfc(|x|) (erfc < 0.48 there), sign copied."""
        y = self._erf_from(x, 0.5, lambda a: self.b.fmul(a, self._erf_small_f64(a)),
                           self._erfc_pos_f64)
        return self._nan_through(x, y)

    def erfc_f64(self, x):
        """|x| < 0.5: fma(-x, P(x**2), 1); else exp(-x**2) erfcx(|x|), and 2 - that for
        x < 0."""
        b = self.b
        a = self._intr("fabs", x)
        near = self._intr("fma", b.fneg(x), self._erf_small_f64(a), _c(1.0))
        far = self._erfc_reflect(x, self._erfc_pos_f64(a))
        y = self.select(self.cmp("<", a, 0.5), near, far)
        return self._nan_through(x, y)
