"""float16 conversions as plain integer IR, bit for bit as numpy's `astype`.

LLVM lowers `fpext half` / `fptrunc ... to half` to compiler-rt calls (`__extendhfsf2`,
`__truncsfhf2`, `__truncdfhf2`) on CPUs without the conversion instruction (no F16C, and for
double<->half on every x86 CPU without AVX512-FP16); MCJIT does not provide them (see
`codegen.linkcheck`). So the renderer never emits those instructions: these functions convert
through the bits instead (integer ops, selects and one float add, all of which the loop
vectorizer widens), with numpy's semantics (`npy_floatbits_to_halfbits` and friends):
round-to-nearest-even, subnormals kept, overflow to inf, NaN payloads truncated (a NaN stays a
NaN, its sign kept, never quieted). double->half rounds once: the double is first rounded to
float32 with round-to-odd (exact enough for the second rounding to be correct), never
double-rounded. bfloat16 <-> float32 (`float_to_bfloat16`, `bfloat16_to_float`) follow
ml_dtypes in the same way. Each function takes and returns scalar llvmlite values at the
position of an `ll.IRBuilder`. Imports llvmlite only.
"""

from __future__ import annotations

from llvmlite import ir as ll

I1, I16, I32, I64 = ll.IntType(1), ll.IntType(16), ll.IntType(32), ll.IntType(64)
F16, F32, F64 = ll.HalfType(), ll.FloatType(), ll.DoubleType()


def _i(t, v):
    return ll.Constant(t, v)


def _fabs(b: ll.IRBuilder, x):
    name = "llvm.fabs.f64" if x.type == F64 else "llvm.fabs.f32"
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ll.Function(b.module, ll.FunctionType(x.type, [x.type]), name)
    return b.call(fn, [x])


def _half_bits_of_float(b: ll.IRBuilder, f):
    """i32 (low 16 bits used) of the half nearest float `f` (sign not included), and f's
    sign bit moved to bit 15."""
    u = b.bitcast(f, I32)
    sign = b.and_(u, _i(I32, 0x80000000))
    a = b.xor(u, sign)
    # normal half: rebias the exponent and round the 13 dropped bits to nearest even
    odd = b.and_(b.lshr(a, _i(I32, 13)), _i(I32, 1))
    normal = b.lshr(b.add(b.add(a, _i(I32, (15 - 127) * (1 << 23) + 0xFFF)), odd),
                    _i(I32, 13))
    # subnormal half (|f| < 2**-14): adding 0.5 rounds |f| to a multiple of 2**-24 in place
    magic = 126 << 23
    sub = b.sub(b.bitcast(b.fadd(b.bitcast(a, F32), ll.Constant(F32, 0.5)), I32),
                _i(I32, magic))
    # NaN: the top 10 payload bits, and never the payload 0 (that would read as inf)
    payload = b.lshr(b.and_(a, _i(I32, 0x7FFFFF)), _i(I32, 13))
    nan = b.or_(_i(I32, 0x7C00), b.select(b.icmp_unsigned("==", payload, _i(I32, 0)),
                                          _i(I32, 1), payload))
    r = b.select(b.icmp_unsigned("<", a, _i(I32, 113 << 23)), sub, normal)
    r = b.select(b.icmp_unsigned(">=", a, _i(I32, 143 << 23)), _i(I32, 0x7C00), r)
    r = b.select(b.icmp_unsigned(">", a, _i(I32, 0x7F800000)), nan, r)
    return r, b.lshr(sign, _i(I32, 16))


def float_to_half(b: ll.IRBuilder, f):
    """`half` nearest the float32 value `f` (numpy's float32 -> float16 astype)."""
    r, sign = _half_bits_of_float(b, f)
    return b.bitcast(b.trunc(b.or_(r, sign), I16), F16)


def half_to_float(b: ll.IRBuilder, h):
    """The float32 value of `half` h (exact; NaN payloads as numpy)."""
    hb = b.zext(b.bitcast(h, I16), I32)
    o = b.shl(b.and_(hb, _i(I32, 0x7FFF)), _i(I32, 13))
    exp = b.and_(o, _i(I32, 0x7C00 << 13))
    o1 = b.add(o, _i(I32, (127 - 15) << 23))
    infnan = b.add(o1, _i(I32, (128 - 16) << 23))
    # zero or subnormal: 2**-14 * (1 + m/1024) - 2**-14 renormalises exactly
    den = b.bitcast(b.fsub(b.bitcast(b.add(o1, _i(I32, 1 << 23)), F32),
                           ll.Constant(F32, 2.0 ** -14)), I32)
    o = b.select(b.icmp_unsigned("==", exp, _i(I32, 0x7C00 << 13)), infnan,
                 b.select(b.icmp_unsigned("==", exp, _i(I32, 0)), den, o1))
    return b.bitcast(b.or_(o, b.shl(b.and_(hb, _i(I32, 0x8000)), _i(I32, 16))), F32)


def _is_nan_half(b, hb):
    return b.icmp_unsigned(">", b.and_(hb, _i(hb.type, 0x7FFF)), _i(hb.type, 0x7C00))


def half_to_double(b: ll.IRBuilder, h):
    """The float64 value of `half` h (exact; a NaN keeps its payload, as numpy)."""
    d = b.fpext(half_to_float(b, h), F64)   # exact, but hardware quiets NaNs: rebuild them
    hb = b.zext(b.bitcast(h, I16), I64)
    nan = b.or_(b.or_(b.shl(b.and_(hb, _i(I64, 0x8000)), _i(I64, 48)),
                      _i(I64, 0x7FF0000000000000)),
                b.shl(b.and_(hb, _i(I64, 0x3FF)), _i(I64, 42)))
    return b.select(_is_nan_half(b, hb), b.bitcast(nan, F64), d)


def double_to_half(b: ll.IRBuilder, d):
    """`half` nearest the float64 value `d`, rounded once (numpy's float64 -> float16)."""
    f = b.fptrunc(d, F32)
    back = b.fpext(f, F64)
    # round to odd: truncate toward zero, then set the last bit when inexact (NaN excluded)
    over = b.zext(b.fcmp_ordered(">", _fabs(b, back), _fabs(b, d)), I32)
    inexact = b.zext(b.fcmp_ordered("!=", back, d), I32)
    fb = b.or_(b.sub(b.bitcast(f, I32), over), inexact)
    r, sign = _half_bits_of_float(b, b.bitcast(fb, F32))
    h = b.trunc(b.or_(r, sign), I16)
    # NaN: numpy keeps the top 10 payload bits of the double
    db = b.bitcast(d, I64)
    payload = b.trunc(b.lshr(b.and_(db, _i(I64, 0xFFFFFFFFFFFFF)), _i(I64, 42)), I16)
    sign = b.and_(b.trunc(b.lshr(db, _i(I64, 48)), I16), _i(I16, 0x8000))
    nan = b.or_(sign, b.or_(_i(I16, 0x7C00), b.select(
        b.icmp_unsigned("==", payload, _i(I16, 0)), _i(I16, 1), payload)))
    h = b.select(b.fcmp_unordered("uno", d, d), nan, h)
    return b.bitcast(h, F16)


def float_to_bfloat16(b: ll.IRBuilder, f):
    """i16 bits of the bfloat16 nearest float32 `f` (round to nearest even; a NaN stays a
    quiet NaN 0x7fc0 with its sign, as ml_dtypes)."""
    u = b.bitcast(f, I32)
    odd = b.and_(b.lshr(u, _i(I32, 16)), _i(I32, 1))
    r = b.lshr(b.add(u, b.add(_i(I32, 0x7FFF), odd)), _i(I32, 16))
    a = b.and_(u, _i(I32, 0x7FFFFFFF))
    nan = b.or_(b.and_(b.lshr(u, _i(I32, 16)), _i(I32, 0x8000)), _i(I32, 0x7FC0))
    r = b.select(b.icmp_unsigned(">", a, _i(I32, 0x7F800000)), nan, r)
    return b.trunc(r, I16)


def bfloat16_to_float(b: ll.IRBuilder, bits):
    """The float32 value of bfloat16 bits `bits` (i16; exact)."""
    return b.bitcast(b.shl(b.zext(bits, I32), _i(I32, 16)), F32)
