"""LLVM rendering of the scalar primitives: every primitive of `ir/scalar.py` on llvmlite values.

`LLVMBuilder.emit(op, out_dtype, in_dtype, args, attrs)` renders one statement of a traced
kernel body (`codegen.trace`): the operands already have the one dtype the primitive computes
in (`in_dtype`), so this module only prints, with numpy's semantics: float16 is `half`
(arithmetic rounded per op, as numpy does; math computed wider; converted by the integer IR of
`codegen.fp16`, never by `fpext`/`fptrunc` of `half`, which LLVM lowers to runtime calls on
some CPUs), bfloat16 its `i16` bits (arithmetic in float32 rounded per op, as ml_dtypes;
converted by `codegen.fp16`; to it from float64 and integers through float32, as ml_dtypes),
float32 `float`, float64 `double`, (u)intN `iN` (signedness from the dtype), bool
`i1` in registers and `i8` in memory;
maximum/minimum propagate NaN, comparisons are ordered except `ne`; integer division by zero
gives 0 as in numpy (never LLVM's undefined behaviour); floor division and remainder follow
numpy's `npy_divmod`; shifts past the width give 0 (or -1), as numpy's `npy_lshift`. Float32
exp/exp2/expm1/log/log2/log1p/tanh/erf/erfc/sin/cos/tan/atan/atan2/pow are the vectorizable
polynomials of `codegen.vecmath` (exp and tanh computed in float32 itself); float64
exp/exp2/expm1/log/log2/log1p/tanh/erf/erfc have float64 polynomials there too; the other
transcendentals call libm. No fast-math flags:
results match eager to rounding. Imports only `ir` and llvmlite.
"""

from __future__ import annotations

import math

import numpy as np
from llvmlite import ir as ll

from ir import dtypes as D
from ir.dtypes import DType

from . import fp16
from .linkcheck import LIBM as _LIBM
from .trace import PrimitiveRenderer, convert_number, is_unsigned
from .vecmath import FUNCTIONS as VEC_FUNCTIONS
from .vecmath import FUNCTIONS_F64 as VEC_FUNCTIONS_F64
from .vecmath import VecMath

I1, I8, I16, I32, I64 = (ll.IntType(n) for n in (1, 8, 16, 32, 64))
F16, F32, F64 = ll.HalfType(), ll.FloatType(), ll.DoubleType()
PTR = ll.PointerType()
VOID = ll.VoidType()

_FCMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=="}
_FLOAT_SUFFIX = {2: "f16", 4: "f32", 8: "f64"}


def lltype(dtype: DType) -> ll.Type:
    """The register type of a wick dtype (bool is i1); TypeError for other dtypes."""
    if dtype is D.bfloat16:
        return I16  # (its bits: every operation converts them, `fp16.bfloat16_to_float`)
    k, size = dtype.np.kind, dtype.np.itemsize
    if k == "b":
        return I1
    if k in "iu":
        return ll.IntType(8 * size)
    if k == "f":
        return {2: F16, 4: F32, 8: F64}[size]
    raise TypeError(f"codegen: no LLVM type for dtype {dtype.name}")


def memtype(dtype: DType) -> ll.Type:
    """The in-memory type of a wick dtype (bool is one byte, as in numpy)."""
    return I8 if dtype is D.bool_ else lltype(dtype)


def constant(value, dtype: DType) -> ll.Constant:
    v = convert_number(value, dtype)
    if dtype is D.bfloat16:
        return ll.Constant(I16, int(np.asarray(v, dtype.np).view(np.uint16)))
    if dtype.category == D.INTEGER and v < 0:
        v &= (1 << (8 * dtype.itemsize)) - 1  # llvmlite wants the two's complement bits
    return ll.Constant(lltype(dtype), v)


class LLVMBuilder(PrimitiveRenderer):
    """Renders primitives at the position of an `ll.IRBuilder` (see the module docstring).

    Raises TypeError for a primitive numpy does not define on the dtype.
    """

    def __init__(self, builder: ll.IRBuilder):
        self.b = builder
        self.module = builder.module
        self.vm = VecMath(builder)
        self.err = None   # an i1 alloca: set when an integer division by zero happens

    def emit(self, op: str, out: DType, dt: DType, args: list, attrs: dict):
        if op == "cast":
            return self.cast(args[0], dt, attrs["dtype"])
        if op == "where":
            return self.b.select(args[0], args[1], args[2])
        if dt.name == "float16":
            # numpy computes each float16 op in float32 and rounds its result: so do we (LLVM
            # would otherwise keep float32 excess precision between half operations)
            r = self.emit(op, D.float32 if out is dt else out, D.float32,
                          [fp16.half_to_float(self.b, a) if a.type == F16 else a
                           for a in args], attrs)
            return fp16.float_to_half(self.b, r) if r.type == F32 else r
        if dt is D.bfloat16:  # as float16: float32 arithmetic rounded per op (ml_dtypes)
            r = self.emit(op, D.float32 if out is dt else out, D.float32,
                          [fp16.bfloat16_to_float(self.b, a) if a.type == I16 else a
                           for a in args], attrs)
            return fp16.float_to_bfloat16(self.b, r) if r.type == F32 else r
        fn = getattr(self, "p_" + op, None)
        if fn is None:
            raise TypeError(f"codegen: no LLVM rendering of primitive {op!r}")
        return fn(dt, *args)

    # ---- helpers

    def _fn(self, name: str, ret: ll.Type, args: list, internal=False) -> ll.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(ret, args), name)
            if internal:
                fn.linkage = "internal"
        return fn

    def _intr(self, name: str, t: ll.Type, *args):
        suffix = {F16: "f16", F32: "f32", F64: "f64"}.get(t) or f"i{t.width}"
        return self.b.call(self._fn(f"llvm.{name}.{suffix}", t, [t] * len(args)), list(args))

    def _zero(self, dt):
        return constant(0, dt)

    @staticmethod
    def _kind(dt: DType) -> str:
        return "f" if dt.is_floating_point else ("b" if dt is D.bool_ else "i")

    # ---- arithmetic

    def p_add(self, dt, x, y):
        k = self._kind(dt)
        return self.b.fadd(x, y) if k == "f" else self.b.or_(x, y) if k == "b" else \
            self.b.add(x, y)

    def p_sub(self, dt, x, y):
        k = self._kind(dt)
        if k == "b":
            self._no("sub", dt)
        return self.b.fsub(x, y) if k == "f" else self.b.sub(x, y)

    def p_mul(self, dt, x, y):
        k = self._kind(dt)
        return self.b.fmul(x, y) if k == "f" else self.b.and_(x, y) if k == "b" else \
            self.b.mul(x, y)

    def p_div(self, dt, x, y):
        if not dt.is_floating_point:
            self._no("div", dt)
        return self.b.fdiv(x, y)

    def p_pow(self, dt, x, y):
        if dt.is_floating_point:
            return self._wide_math("pow", dt, x, y)
        if dt is D.bool_:
            self._no("pow", dt)
        t = lltype(dt)
        ext = self.b.zext if is_unsigned(dt) else self.b.sext
        x64 = x if t == I64 else ext(x, I64)
        y64 = y if t == I64 else ext(y, I64)
        r = self.b.call(self._ipow(), [x64, y64])
        return r if t == I64 else self.b.trunc(r, t)

    def p_maximum(self, dt, x, y):
        k = self._kind(dt)
        if k == "f":
            return self._intr("maximum", x.type, x, y)
        if k == "b":
            return self.b.or_(x, y)
        return self._intr("umax" if is_unsigned(dt) else "smax", x.type, x, y)

    def p_minimum(self, dt, x, y):
        k = self._kind(dt)
        if k == "f":
            return self._intr("minimum", x.type, x, y)
        if k == "b":
            return self.b.and_(x, y)
        return self._intr("umin" if is_unsigned(dt) else "smin", x.type, x, y)

    def _int_divmod(self, dt, x, y):
        """(quotient, remainder, y == 0) with numpy's conventions; no UB for 0 and MIN/-1."""
        b = self.b
        zero, one = self._zero(dt), constant(1, dt)
        yz = b.icmp_unsigned("==", y, zero)
        if self.err is not None:   # PyTorch raises RuntimeError("ZeroDivisionError")
            b.store(b.or_(b.load(self.err, typ=I1), yz), self.err)
        if is_unsigned(dt):
            ys = b.select(yz, one, y)
            return b.udiv(x, ys), b.urem(x, ys), yz, None
        ym1 = b.icmp_signed("==", y, constant(-1, dt))
        ys = b.select(b.or_(yz, ym1), one, y)
        return b.sdiv(x, ys), b.srem(x, ys), yz, ym1

    def p_fmod(self, dt, x, y):
        if dt.is_floating_point:
            return self.b.frem(x, y)
        if dt is D.bool_:
            return self.p_fmod(D.int8 if hasattr(D, "int8") else D.int64, x, y)
        _, r, yz, ym1 = self._int_divmod(dt, x, y)
        bad = yz if ym1 is None else self.b.or_(yz, ym1)
        return self.b.select(bad, self._zero(dt), r)

    def p_remainder(self, dt, x, y):
        if dt.is_floating_point:
            return self._float_divmod(dt, x, y)[1]
        b = self.b
        _, r, yz, ym1 = self._int_divmod(dt, x, y)
        if ym1 is None:
            return b.select(yz, self._zero(dt), r)
        zero = self._zero(dt)
        fix = b.and_(b.icmp_signed("!=", r, zero),
                     b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
        r = b.select(fix, b.add(r, y), r)
        return b.select(b.or_(yz, ym1), zero, r)

    def p_floordiv(self, dt, x, y):
        if dt.is_floating_point:
            return self._float_divmod(dt, x, y)[0]
        b = self.b
        q, r, yz, ym1 = self._int_divmod(dt, x, y)
        zero = self._zero(dt)
        if ym1 is None:
            return b.select(yz, zero, q)
        fix = b.and_(b.icmp_signed("!=", r, zero),
                     b.xor(b.icmp_signed("<", r, zero), b.icmp_signed("<", y, zero)))
        q = b.select(fix, b.sub(q, constant(1, dt)), q)
        q = b.select(ym1, b.sub(zero, x), q)
        return b.select(yz, zero, q)

    def _float_divmod(self, dt, x, y):
        """numpy's npy_divmod / npy_floor_divide / npy_remainder for floats."""
        b = self.b
        t = x.type
        c = lambda v: ll.Constant(t, v)
        mod = b.frem(x, y)
        yzero = b.fcmp_ordered("==", y, c(0.0))
        div = b.fdiv(b.fsub(x, mod), y)
        modnz = b.fcmp_unordered("!=", mod, c(0.0))
        flip = b.and_(modnz, b.xor(b.fcmp_ordered("<", y, c(0.0)),
                                   b.fcmp_ordered("<", mod, c(0.0))))
        mod2 = b.select(flip, b.fadd(mod, y), mod)
        div = b.select(flip, b.fsub(div, c(1.0)), div)
        mod2 = b.select(modnz, mod2, self._intr("copysign", t, c(0.0), y))
        fl = self._intr("floor", t, div)
        fl = b.select(b.fcmp_ordered(">", b.fsub(div, fl), c(0.5)), b.fadd(fl, c(1.0)), fl)
        q = b.fdiv(x, y)
        fl = b.select(b.fcmp_unordered("!=", div, c(0.0)), fl, self._intr("copysign", t, c(0.0),
                                                                           q))
        return b.select(yzero, q, fl), b.select(yzero, mod, mod2)

    # ---- comparisons and tests (-> bool)

    def _cmp(self, name, dt, x, y):
        b = self.b
        if dt.is_floating_point:
            if name == "ne":  # NaN != anything is True: unordered
                return b.fcmp_unordered("!=", x, y)
            return b.fcmp_ordered(_FCMP[name], x, y)
        op = "!=" if name == "ne" else _FCMP[name]
        return (b.icmp_unsigned if is_unsigned(dt) else b.icmp_signed)(op, x, y)

    def p_isnan(self, dt, x):
        if not dt.is_floating_point:
            return ll.Constant(I1, 0)
        return self.b.fcmp_unordered("uno", x, x)

    def p_isinf(self, dt, x):
        if not dt.is_floating_point:
            return ll.Constant(I1, 0)
        return self.b.fcmp_ordered("==", self._intr("fabs", x.type, x),
                                   ll.Constant(x.type, math.inf))

    # ---- logic and bits

    def p_logical_not(self, dt, x):
        return self.b.xor(x, ll.Constant(I1, 1))

    def p_bitwise_and(self, dt, x, y):
        self._int_only("bitwise_and", dt)
        return self.b.and_(x, y)

    def p_bitwise_or(self, dt, x, y):
        self._int_only("bitwise_or", dt)
        return self.b.or_(x, y)

    def p_bitwise_xor(self, dt, x, y):
        self._int_only("bitwise_xor", dt)
        return self.b.xor(x, y)

    def p_bitwise_not(self, dt, x):
        self._int_only("bitwise_not", dt)
        return self.b.xor(x, ll.Constant(x.type, -1 if dt is not D.bool_ else 1))

    def _int_only(self, name, dt):
        if dt.is_floating_point:
            self._no(name, dt)

    def _shift(self, name, dt, x, y):
        self._int_only(name, dt)
        b = self.b
        width = constant(8 * dt.itemsize, dt)
        inrange = b.icmp_unsigned("<", y, width)  # negative counts are huge unsigned
        ys = b.select(inrange, y, self._zero(dt))
        if name == "lshift":
            return b.select(inrange, b.shl(x, ys), self._zero(dt))
        if is_unsigned(dt):
            return b.select(inrange, b.lshr(x, ys), self._zero(dt))
        neg = b.icmp_signed("<", x, self._zero(dt))
        over = b.select(neg, constant(-1, dt), self._zero(dt))
        return b.select(inrange, b.ashr(x, ys), over)

    # ---- unary arithmetic

    def p_neg(self, dt, x):
        k = self._kind(dt)
        if k == "b":
            self._no("neg", dt)
        return self.b.fneg(x) if k == "f" else self.b.sub(self._zero(dt), x)

    def p_abs(self, dt, x):
        k = self._kind(dt)
        if k == "f":
            return self._intr("fabs", x.type, x)
        if k == "b" or is_unsigned(dt):
            return x
        fn = self._fn(f"llvm.abs.i{x.type.width}", x.type, [x.type, I1])
        return self.b.call(fn, [x, ll.Constant(I1, 0)])

    def p_sign(self, dt, x):
        if dt is D.bool_:
            self._no("sign", dt)
        b = self.b
        zero, one = self._zero(dt), constant(1, dt)
        pos = self._cmp("gt", dt, x, zero)
        if is_unsigned(dt):
            return b.select(pos, one, zero)
        negv = self._cmp("lt", dt, x, zero)
        # numpy: x > 0 ? 1 : x < 0 ? -1 : x == 0 ? 0 : x  (NaN stays NaN)
        rest = b.select(self._cmp("eq", dt, x, zero), zero, x) if dt.is_floating_point else zero
        return b.select(pos, one, b.select(negv, constant(-1, dt), rest))

    def _rounding(self, name, dt, x):
        return self._intr(name, x.type, x) if dt.is_floating_point else x

    def p_floor(self, dt, x):
        return self._rounding("floor", dt, x)

    def p_ceil(self, dt, x):
        return self._rounding("ceil", dt, x)

    def p_trunc(self, dt, x):
        return self._rounding("trunc", dt, x)

    def p_round(self, dt, x):
        return self._rounding("roundeven", dt, x)

    def p_sqrt(self, dt, x):
        return self._intr("sqrt", x.type, x)

    def p_rsqrt(self, dt, x):
        return self.b.fdiv(ll.Constant(x.type, 1.0), self._intr("sqrt", x.type, x))

    # ---- transcendental functions

    def _wide_math(self, name, dt, *xs):
        """float16 computes in float32 (numpy does too); float32 uses the polynomials of
        `vecmath` (in double) where there is one, else libm; float64 uses vecmath's float64
        polynomials (`VEC_FUNCTIONS_F64`) where there is one, else libm."""
        b = self.b
        t = xs[0].type
        if t == F16:
            r = self._wide_math(name, D.float32, *[fp16.half_to_float(b, x) for x in xs])
            return fp16.float_to_half(b, r)
        if t == F32 and name in ("tanh", "exp"):
            return getattr(self.vm, name + "_f32")(xs[0])
        if t == F32 and name in VEC_FUNCTIONS:
            return b.fptrunc(getattr(self.vm, name)(*[b.fpext(x, F64) for x in xs]), F32)
        if t == F64 and name in VEC_FUNCTIONS_F64:
            return getattr(self.vm, name + "_f64")(*xs)
        if name == "pow":
            return self._intr("pow", t, *xs)
        if name == "erfinv":
            return self._erfinv(xs[0])
        sym = name + ("f" if t == F32 else "")
        return b.call(self._fn(sym, t, [t] * len(xs)), list(xs))

    def _erfinv(self, y):
        """Giles' single-precision estimate refined by two Newton steps on erf or erfc
        (in double, using libm erf/erfc), so float64 is accurate too."""
        b = self.b
        t = y.type
        yd = y if t == F64 else b.fpext(y, F64)
        c = lambda v: ll.Constant(F64, v)
        vm = self.vm
        a = vm._intr("fabs", yd)
        w = b.fneg(vm.log(b.fmul(b.fsub(c(1.0), a), b.fadd(c(1.0), a))))
        p1 = vm.horner(b.fsub(w, c(2.5)), [
            1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
            -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08])
        p2 = vm.horner(b.fsub(vm._intr("sqrt", w), c(3.0)), [
            2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
            -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257])
        x = b.fmul(vm.select(vm.cmp("<", w, 5.0), p1, p2), a)
        erf = self._fn("erf", F64, [F64])
        erfc = self._fn("erfc", F64, [F64])
        tail = vm.cmp(">=", a, 0.5)
        one_minus = b.fsub(c(1.0), a)   # exact for a >= 0.5 (Sterbenz)
        for _ in range(2):
            f = vm.select(tail, b.fsub(one_minus, b.call(erfc, [x])),
                          b.fsub(b.call(erf, [x]), a))
            d = b.fmul(c(1.1283791670955126), vm.exp(b.fneg(b.fmul(x, x))))
            x = b.fsub(x, b.fdiv(f, d))
        x = vm.select(vm.cmp("==", a, 1.0), c(math.inf), x)
        x = vm.select(vm.cmp(">", a, 1.0), c(math.nan), x)
        x = vm.select(vm.isnan(a), a, x)
        r = vm.select(vm.cmp("==", a, 0.0), c(0.0), vm._intr("copysign", x, yd))  # scipy: +0
        return r if t == F64 else b.fptrunc(r, t)

    def __getattr__(self, name):
        if name.startswith("p_") and (name[2:] in _LIBM or name[2:] == "erfinv"):
            fname = name[2:]

            def math_fn(dt, *xs):
                if not dt.is_floating_point:
                    raise TypeError(f"codegen: {fname} expects a float operand, got {dt.name}")
                return self._wide_math(fname, dt, *xs)

            return math_fn
        raise AttributeError(name)

    # ---- casts

    def cast(self, x, src: DType, dtype: DType):
        """numpy's astype: floats truncate toward zero to ints; nonzero (and NaN) is True;
        ints wrap; float to narrow ints goes through int64 (numpy on x86 does too)."""
        if src is dtype:
            return x
        t = lltype(dtype)
        b = self.b
        if src is D.bfloat16:  # exact in float32
            return self.cast(fp16.bfloat16_to_float(b, x), D.float32, dtype)
        if dtype is D.bfloat16:  # through float32, as ml_dtypes (Eigen's bfloat16(float(x)))
            return fp16.float_to_bfloat16(b, self.cast(x, src, D.float32))
        if src.name == "float16" or dtype.name == "float16":
            return self._cast_half(x, src, dtype)
        if dtype is D.bool_:
            if src.is_floating_point:
                return b.fcmp_unordered("!=", x, ll.Constant(x.type, 0.0))
            return b.icmp_unsigned("!=", x, ll.Constant(x.type, 0))
        if src is D.bool_:
            return b.uitofp(x, t) if dtype.is_floating_point else b.zext(x, t)
        if src.is_floating_point and dtype.is_floating_point:
            return b.fpext(x, t) if dtype.itemsize > src.itemsize else b.fptrunc(x, t)
        if src.is_floating_point:
            if dtype.itemsize == 8:
                return b.fptoui(x, t) if is_unsigned(dtype) else b.fptosi(x, t)
            return b.trunc(b.fptosi(x, I64), t)
        if dtype.is_floating_point:
            return b.uitofp(x, t) if is_unsigned(src) else b.sitofp(x, t)
        if dtype.itemsize > src.itemsize:
            return b.zext(x, t) if is_unsigned(src) else b.sext(x, t)
        if dtype.itemsize < src.itemsize:
            return b.trunc(x, t)
        return x

    def _cast_half(self, x, src: DType, dtype: DType):
        """Casts from or to float16 through float32 (or float64) by `fp16`'s bit
        conversions: LLVM would lower half conversions to compiler-rt calls on some CPUs."""
        b = self.b
        if src.name == "float16":
            if dtype is D.float64:
                return fp16.half_to_double(b, x)
            return self.cast(fp16.half_to_float(b, x), D.float32, dtype)   # exact
        if src is D.float64:
            return fp16.double_to_half(b, x)
        if src is not D.float32:   # bool and integers: exact in float32 up to 2**24, and
            x = self.cast(x, src, D.float32)   # anything larger is inf in float16 anyway
        return fp16.float_to_half(b, x)

    # ---- helpers defined in the module

    def _ipow(self) -> ll.Function:
        """`i64 wick_ipow(i64 base, i64 exp)` by squaring; exp < 0 gives 1/base**-exp truncated."""
        fn = self.module.globals.get("wick_ipow")
        if fn is not None:
            return fn
        fn = self._fn("wick_ipow", I64, [I64, I64], internal=True)
        base, e = fn.args
        entry, loop, body, done = (fn.append_basic_block(n) for n in
                                   ("entry", "loop", "body", "done"))
        b = ll.IRBuilder(entry)
        b.branch(loop)
        b.position_at_end(loop)
        r = b.phi(I64)
        p = b.phi(I64)
        k = b.phi(I64)
        r.add_incoming(ll.Constant(I64, 1), entry)
        p.add_incoming(base, entry)
        k.add_incoming(e, entry)
        b.cbranch(b.icmp_signed(">", k, ll.Constant(I64, 0)), body, done)
        b.position_at_end(body)
        odd = b.icmp_signed("!=", b.and_(k, ll.Constant(I64, 1)), ll.Constant(I64, 0))
        r.add_incoming(b.select(odd, b.mul(r, p), r), body)
        p.add_incoming(b.mul(p, p), body)
        k.add_incoming(b.ashr(k, ll.Constant(I64, 1)), body)
        b.branch(loop)
        b.position_at_end(done)
        one, m1 = ll.Constant(I64, 1), ll.Constant(I64, -1)
        e_odd = b.icmp_signed("!=", b.and_(e, one), ll.Constant(I64, 0))
        neg_exp = b.select(b.icmp_signed("==", base, one), one,
                           b.select(b.icmp_signed("==", base, m1), b.select(e_odd, m1, one),
                                    ll.Constant(I64, 0)))
        b.ret(b.select(b.icmp_signed("<", e, ll.Constant(I64, 0)), neg_exp, r))
        return fn
