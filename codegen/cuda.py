"""CUDA C rendering of the scalar primitives: every primitive of `ir/scalar.py` as a C expression.

`CudaBuilder.emit(op, out_dtype, in_dtype, args, attrs)` renders one statement of a traced
kernel body (`codegen.trace`) as a CUDA C expression over the C names of its operands, which
already have the one dtype the primitive computes in (`in_dtype`); this module only prints,
with numpy's (eager's) semantics, as `codegen.llvm` does for the CPU:

- registers: bool is `bool`, (u)intN the C integer of that width, float32 `float`, float64
  `double`; float16 and bfloat16 values live in `float` registers holding a value exactly
  representable in the half type (every half result is rounded once, as numpy rounds each
  float16 op computed in float32); in memory bool is one byte and half types are 16-bit
  patterns converted by the header-free helpers of `PRELUDE` (PTX `cvt` for float16, integer
  round-to-nearest-even for bfloat16), so no CUDA header is needed (NVRTC from pip has none);
- integer add/sub/mul/neg/shifts are computed in the unsigned type of the same width (numpy
  wraps; signed overflow is undefined in C); integer division by zero gives 0 (numpy's
  result, never undefined behaviour) and, when the builder's `err` names the kernel's flag
  argument, sets that flag (`wk_dz`) so that the launcher raises PyTorch's (and eager's)
  RuntimeError("ZeroDivisionError"); MIN / -1 wraps; floor division and remainder follow
  numpy's `npy_divmod`; shifts past the width give 0 (or -1);
- maximum/minimum propagate NaN; comparisons are ordered except `ne`; float math calls the
  CUDA math library (`expf`, `erfinvf`, `hypotf`...: within 2 ulp, correctly rounded
  `sqrt`/division since no fast-math option is used), double math the double functions.

Imports only `ir`.
"""

from __future__ import annotations

import math

from ir import dtypes as D
from ir.dtypes import DType

from .trace import PrimitiveRenderer, convert_number, is_unsigned

_CTYPE = {
    ("b", 1): "bool", ("i", 1): "signed char", ("u", 1): "unsigned char",
    ("i", 2): "short", ("u", 2): "unsigned short", ("i", 4): "int", ("u", 4): "unsigned int",
    ("i", 8): "long long", ("u", 8): "unsigned long long",
    ("f", 4): "float", ("f", 8): "double",
}
_UNSIGNED = {"signed char": "unsigned char", "short": "unsigned short", "int": "unsigned int",
             "long long": "unsigned long long"}
_CMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "==", "ne": "!="}
# CUDA math library functions of float arguments (float32 name: + "f")
_MATH = ("exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "asin", "acos",
         "atan", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv",
         "atan2", "hypot", "sqrt", "floor", "ceil", "trunc")

HALF_PTX = r"""// wick: header-free half helpers (16-bit patterns in memory, float in registers)
static __device__ __forceinline__ float wk_h2f(unsigned short h) {
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
static __device__ __forceinline__ unsigned short wk_f2h(float f) {
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
}
static __device__ __forceinline__ unsigned short wk_d2h(double d) {
  unsigned short h; asm("cvt.rn.f16.f64 %0, %1;" : "=h"(h) : "d"(d)); return h;
}
"""

# the portable helpers (plain C++: the host emulation of the tests compiles them too)
HELPERS = r"""static __device__ __forceinline__ float wk_b2f(unsigned short b) {
  return __uint_as_float(((unsigned int)b) << 16);
}
static __device__ __forceinline__ unsigned short wk_f2b(float f) {  // round to nearest even
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
static __device__ __forceinline__ float wk_rh(float f) { return wk_h2f(wk_f2h(f)); }
static __device__ __forceinline__ float wk_rhd(double d) { return wk_h2f(wk_d2h(d)); }
static __device__ __forceinline__ float wk_rb(float f) { return wk_b2f(wk_f2b(f)); }
static __device__ __forceinline__ float wk_rbd(double d) { return wk_rb((float)d); }
// numpy's npy_divmod for floats: floor division and remainder (sign of the divisor)
template <typename T> static __device__ __forceinline__ T wk_fdivmod(T a, T b, bool want_mod) {
  T mod = fmod(a, b);
  if (b == (T)0) return want_mod ? mod : a / b;
  T div = (a - mod) / b;
  if (mod != (T)0) {
    if ((b < (T)0) != (mod < (T)0)) { mod += b; div -= (T)1; }
  } else {
    mod = copysign((T)0, b);
  }
  if (want_mod) return mod;
  T fl;
  if (div != (T)0) {
    fl = floor(div);
    if (div - fl > (T)0.5) fl += (T)1;
  } else {
    fl = copysign((T)0, a / b);
  }
  return fl;
}
// an integer division by zero: set the kernel's flag (the launcher raises RuntimeError
// ("ZeroDivisionError") as eager does); every writer writes 1, so a plain store is enough
static __device__ __forceinline__ bool wk_dz(bool z, unsigned int* f) {
  if (z) *f = 1u;
  return z;
}
// integer power by squaring; a negative exponent gives 1/base**-e truncated (as the CPU)
static __device__ __forceinline__ unsigned long long wk_ipow(unsigned long long base,
                                                             long long e) {
  if (e < 0) {
    long long sb = (long long)base;
    return sb == 1 ? 1ull : (sb == -1 ? ((e & 1) ? ~0ull : 1ull) : 0ull);
  }
  unsigned long long r = 1;
  while (e > 0) { if (e & 1) r *= base; base *= base; e >>= 1; }
  return r;
}
"""

PRELUDE = HALF_PTX + HELPERS


def ctype(dtype: DType) -> str:
    """The C register type of a wick dtype (half types compute in `float`)."""
    if dtype in D.HALF:
        return "float"
    t = _CTYPE.get((dtype.np.kind, dtype.np.itemsize))
    if t is None:
        raise TypeError(f"codegen: no CUDA type for dtype {dtype.name}")
    return t


def memtype(dtype: DType) -> str:
    """The C element type of a buffer of `dtype` (bool: one byte; half types: 16-bit bits)."""
    if dtype is D.bool_:
        return "unsigned char"
    if dtype in D.HALF:
        return "unsigned short"
    return ctype(dtype)


def load_expr(dtype: DType, ref: str) -> str:
    """The register value of memory element `ref` of a `dtype` buffer."""
    if dtype is D.bool_:
        return f"({ref} != 0)"
    if dtype is D.float16:
        return f"wk_h2f({ref})"
    if dtype is D.bfloat16:
        return f"wk_b2f({ref})"
    return ref


def store_expr(dtype: DType, value: str) -> str:
    """The memory element of register `value` for a `dtype` buffer."""
    if dtype is D.bool_:
        return f"(unsigned char)({value})"
    if dtype is D.float16:
        return f"wk_f2h({value})"
    if dtype is D.bfloat16:
        return f"wk_f2b({value})"
    return value


def literal(value, dtype: DType) -> str:
    """A C literal of `value` converted to `dtype` as numpy converts it (exactly)."""
    v = convert_number(value, dtype)
    if dtype is D.bool_:
        return "true" if v else "false"
    if dtype.category == D.INTEGER:
        t = ctype(dtype)
        if t == "long long" and v == -(1 << 63):
            return "(-9223372036854775807ll - 1)"
        if t == "unsigned long long":
            return f"{v}ull"
        if t == "long long":
            return f"{v}ll"
        if t == "unsigned int":
            return f"{v}u"
        if t == "int" and v == -(1 << 31):
            return "(-2147483647 - 1)"
        return f"({t}){v}" if t not in ("int",) else str(v)
    double = dtype is D.float64
    if math.isnan(v):
        return "__longlong_as_double(0x7ff8000000000000ll)" if double else \
            "__int_as_float(0x7fc00000)"
    if math.isinf(v):
        body = "__longlong_as_double(0x7ff0000000000000ll)" if double else \
            "__int_as_float(0x7f800000)"
        return body if v > 0 else f"(-{body})"
    text = repr(float(v))
    if "e" not in text and "." not in text:
        text += ".0"
    return f"({text})" if double else f"({text}f)"


def _is_float(dt: DType) -> bool:
    return dt.is_floating_point


class CudaBuilder(PrimitiveRenderer):
    """Renders primitives as C expressions (see the module docstring).

    Raises TypeError for a primitive numpy does not define on the dtype. `err`: the C name of
    the kernel's division-by-zero flag (an `unsigned int*`) that integer fmod, remainder and
    floordiv set when their divisor is 0 (the renderer sets it per statement), or None.
    """

    err: str | None = None

    def emit(self, op: str, out: DType, dt: DType, args: list, attrs: dict) -> str:
        if op == "cast":
            return self.cast(args[0], dt, attrs["dtype"])
        if op == "where":
            return f"({args[0]} ? {args[1]} : {args[2]})"
        fn = getattr(self, "p_" + op, None)
        if fn is None:
            if op in _MATH:
                fn = self._math_fn(op)
            else:
                raise TypeError(f"codegen: no CUDA rendering of primitive {op!r}")
        text = fn(dt, *args)
        if out in D.HALF and op not in _CMP and op not in ("isnan", "isinf"):
            text = f"{'wk_rh' if out is D.float16 else 'wk_rb'}({text})"  # round once
        return text

    # ---- helpers

    @staticmethod
    def _wrap(dt: DType, x: str, op: str, y: str) -> str:
        """Integer `x op y` wrapping as numpy does (through the unsigned type)."""
        t = ctype(dt)
        u = _UNSIGNED.get(t)
        if u is not None and dt.itemsize >= 4:
            return f"({t})(({u}){x} {op} ({u}){y})"
        return f"({t})({x} {op} {y})"

    # ---- arithmetic

    def p_add(self, dt, x, y):
        if dt is D.bool_:
            return f"({x} || {y})"
        return f"({x} + {y})" if _is_float(dt) else self._wrap(dt, x, "+", y)

    def p_sub(self, dt, x, y):
        if dt is D.bool_:
            self._no("sub", dt)
        return f"({x} - {y})" if _is_float(dt) else self._wrap(dt, x, "-", y)

    def p_mul(self, dt, x, y):
        if dt is D.bool_:
            return f"({x} && {y})"
        return f"({x} * {y})" if _is_float(dt) else self._wrap(dt, x, "*", y)

    def p_div(self, dt, x, y):
        if not _is_float(dt):
            self._no("div", dt)
        return f"({x} / {y})"

    def p_pow(self, dt, x, y):
        if _is_float(dt):
            return self._call("pow", dt, x, y)
        if dt is D.bool_:
            self._no("pow", dt)
        base = f"(unsigned long long)(long long)({x})" if not is_unsigned(dt) else \
            f"(unsigned long long)({x})"
        return f"({ctype(dt)})wk_ipow({base}, (long long)({y}))"

    def p_maximum(self, dt, x, y):
        if _is_float(dt):  # NaN-propagating
            return f"(({x} != {x} || {x} > {y}) ? {x} : {y})"
        if dt is D.bool_:
            return f"({x} || {y})"
        return f"({x} > {y} ? {x} : {y})"

    def p_minimum(self, dt, x, y):
        if _is_float(dt):
            return f"(({x} != {x} || {x} < {y}) ? {x} : {y})"
        if dt is D.bool_:
            return f"({x} && {y})"
        return f"({x} < {y} ? {x} : {y})"

    def _int_div_check(self, dt, name):
        if dt is D.bool_:
            self._no(name, dt)

    def _yz(self, y: str) -> str:
        """`y == 0`, also setting the flag `err` when there is one (evaluated exactly once:
        always the first operand of the test)."""
        return f"wk_dz({y} == 0, {self.err})" if self.err else f"({y} == 0)"

    def p_fmod(self, dt, x, y):
        if _is_float(dt):
            return self._call("fmod", dt, x, y)
        self._int_div_check(dt, "fmod")
        t, yz = ctype(dt), self._yz(y)
        if is_unsigned(dt):
            return f"({yz} ? ({t})0 : ({t})({x} % {y}))"
        return f"(({yz} || {y} == ({t})-1) ? ({t})0 : ({t})({x} % {y}))"

    def p_remainder(self, dt, x, y):
        if _is_float(dt):
            return f"wk_fdivmod<{ctype(dt)}>({x}, {y}, true)"
        self._int_div_check(dt, "remainder")
        t, yz = ctype(dt), self._yz(y)
        if is_unsigned(dt):
            return f"({yz} ? ({t})0 : ({t})({x} % {y}))"
        r = f"({t})({x} % {y})"
        return (f"(({yz} || {y} == ({t})-1) ? ({t})0 : "
                f"(({r} != 0 && (({r} < 0) != ({y} < 0))) ? ({t})({r} + {y}) : {r}))")

    def p_floordiv(self, dt, x, y):
        if _is_float(dt):
            return f"wk_fdivmod<{ctype(dt)}>({x}, {y}, false)"
        self._int_div_check(dt, "floordiv")
        t, yz = ctype(dt), self._yz(y)
        if is_unsigned(dt):
            return f"({yz} ? ({t})0 : ({t})({x} / {y}))"
        q, r = f"({t})({x} / {y})", f"({t})({x} % {y})"
        neg = self._wrap(dt, "0", "-", x)
        return (f"({yz} ? ({t})0 : {y} == ({t})-1 ? {neg} : "
                f"(({r} != 0 && (({r} < 0) != ({y} < 0))) ? ({t})({q} - 1) : {q}))")

    # ---- comparisons and tests (-> bool)

    def _cmp(self, name, dt, x, y):
        return f"({x} {_CMP[name]} {y})"   # C float compares are ordered, != unordered

    def p_isnan(self, dt, x):
        return f"isnan({x})" if _is_float(dt) else "false"

    def p_isinf(self, dt, x):
        return f"isinf({x})" if _is_float(dt) else "false"

    # ---- logic and bits

    def p_logical_not(self, dt, x):
        return f"(!{x})"

    def _bits(self, name, dt, x, op, y):
        if _is_float(dt):
            self._no(name, dt)
        if dt is D.bool_:
            return f"(bool)({x} {op} {y})"
        return f"({ctype(dt)})({x} {op} {y})"

    def p_bitwise_and(self, dt, x, y):
        return self._bits("bitwise_and", dt, x, "&", y)

    def p_bitwise_or(self, dt, x, y):
        return self._bits("bitwise_or", dt, x, "|", y)

    def p_bitwise_xor(self, dt, x, y):
        return self._bits("bitwise_xor", dt, x, "^", y)

    def p_bitwise_not(self, dt, x):
        if _is_float(dt):
            self._no("bitwise_not", dt)
        return f"(!{x})" if dt is D.bool_ else f"({ctype(dt)})(~{x})"

    def _shift(self, name, dt, x, y):
        if _is_float(dt) or dt is D.bool_:
            self._no(name, dt)
        t = ctype(dt)
        u = _UNSIGNED.get(t, t)
        width = 8 * dt.itemsize
        inrange = f"(({u}){y} < {width}u)"   # negative counts are huge unsigned
        if name == "lshift":
            return f"({inrange} ? ({t})(({u}){x} << {y}) : ({t})0)"
        if is_unsigned(dt):
            return f"({inrange} ? ({t})({x} >> {y}) : ({t})0)"
        return f"({inrange} ? ({t})({x} >> {y}) : ({x} < 0 ? ({t})-1 : ({t})0))"

    # ---- unary arithmetic

    def p_neg(self, dt, x):
        if dt is D.bool_:
            self._no("neg", dt)
        return f"(-{x})" if _is_float(dt) else self._wrap(dt, "0", "-", x)

    def p_abs(self, dt, x):
        if _is_float(dt):
            return self._call("fabs", dt, x)
        if dt is D.bool_ or is_unsigned(dt):
            return x
        return f"({x} < 0 ? {self._wrap(dt, '0', '-', x)} : {x})"

    def p_sign(self, dt, x):
        if dt is D.bool_:
            self._no("sign", dt)
        one, zero = literal(1, dt), literal(0, dt)
        if is_unsigned(dt):
            return f"({x} > {zero} ? {one} : {zero})"
        m1 = literal(-1, dt)
        rest = f"({x} == {zero} ? {zero} : {x})" if _is_float(dt) else zero  # NaN stays NaN
        return f"({x} > {zero} ? {one} : ({x} < {zero} ? {m1} : {rest}))"

    def p_round(self, dt, x):   # half to even: rint in the default rounding mode
        return self._call("rint", dt, x) if _is_float(dt) else x

    def p_rsqrt(self, dt, x):
        return f"({literal(1, dt)} / {self._call('sqrt', dt, x)})"

    # ---- transcendental functions

    def _call(self, name: str, dt: DType, *xs) -> str:
        """CUDA math function `name` on float operands (float32 name + "f"; half types are
        float in registers)."""
        suffix = "" if dt is D.float64 else "f"
        return f"{name}{suffix}({', '.join(xs)})"

    def _math_fn(self, name):
        def fn(dt, *xs):
            if not _is_float(dt):
                if name in ("floor", "ceil", "trunc"):
                    return xs[0]
                raise TypeError(f"codegen: {name} expects a float operand, got {dt.name}")
            return self._call(name, dt, *xs)

        return fn

    # ---- casts

    def cast(self, x: str, src: DType, dtype: DType) -> str:
        """numpy's astype: floats truncate toward zero to ints; nonzero (and NaN) is True;
        ints wrap; float to narrow ints goes through int64 (numpy on x86 does too)."""
        if src is dtype:
            return x
        if dtype is D.bool_:
            return f"({x} != 0)"
        t = ctype(dtype)
        if src is D.bool_:
            v = f"({t})({x} ? 1 : 0)"
            return v
        if dtype in D.HALF:
            rnd = "wk_rh" if dtype is D.float16 else "wk_rb"
            if src is D.float64:
                return f"{rnd}d({x})"
            return f"{rnd}((float)({x}))"
        if _is_float(src) and _is_float(dtype):
            return f"({t})({x})"
        if _is_float(src):
            if dtype.itemsize == 8:
                return f"({t})({x})"
            return f"({t})(long long)({x})"
        return f"({t})({x})"
