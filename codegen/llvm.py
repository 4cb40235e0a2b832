"""LLVM rendering: the scalar builder over llvmlite.ir, and a `Kernel` printed as an LLVM function.

`LLVMBuilder` implements every primitive of the scalar-builder protocol (`ir/scalar.py`) on
llvmlite IR values with numpy's semantics: float32 is `float`, float64 `double`, int64 `i64`,
bool `i1` in registers and `i8` in memory; maximum/minimum propagate NaN (`llvm.maximum`),
float comparisons are ordered except `ne`, exp/log/sqrt/pow are LLVM intrinsics, tanh and erf
call libm. No fast-math flags: results match eager to float32 rounding.

`render_kernel` prints a `codegen.kernel.Kernel` as `void name(T* noalias in0, ..., T* noalias
out0, ...)`: sizes and strides are constants, one loop per kernel loop (the innermost stride-1
loop is left for LLVM's loop vectorizer), the SSA body rendered statement by statement. All
decisions were made on the Kernel; this module only prints. Imports only `ir` and llvmlite.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ir import dtypes as D
from ir.dtypes import DType
from ir.opdef import is_number

from .kernel import Const, Var, binary_dtype, convert_number

I1, I8, I64 = ll.IntType(1), ll.IntType(8), ll.IntType(64)
F32, F64 = ll.FloatType(), ll.DoubleType()
PTR = ll.PointerType()
VOID = ll.VoidType()

_LLTYPE = {"float32": F32, "float64": F64, "int64": I64, "bool": I1}
_SUFFIX = {"float32": "f32", "float64": "f64", "int64": "i64"}
_FCMP = {"lt": "<", "le": "<=", "gt": ">", "ge": ">=", "eq": "=="}
_LIBM = {("tanh", "float32"): "tanhf", ("tanh", "float64"): "tanh",
         ("erf", "float32"): "erff", ("erf", "float64"): "erf"}


def lltype(dtype: DType) -> ll.Type:
    """The register type of a wick dtype (bool is i1)."""
    return _LLTYPE[dtype.name]


def memtype(dtype: DType) -> ll.Type:
    """The in-memory type of a wick dtype (bool is one byte, as in numpy)."""
    return I8 if dtype is D.bool_ else _LLTYPE[dtype.name]


def constant(value, dtype: DType) -> ll.Constant:
    return ll.Constant(lltype(dtype), convert_number(value, dtype))


class LLVMBuilder:
    """The scalar-builder protocol emitting LLVM IR at the position of an `ll.IRBuilder`.

    Binary primitives accept a Python number on either side (it becomes a constant of the other
    operand's dtype, numpy's weak-scalar rule); values of different dtypes are promoted first.
    Raises TypeError for a primitive numpy does not define on the dtype (e.g. sub on bool).
    """

    def __init__(self, builder: ll.IRBuilder):
        self.b = builder
        self.module = builder.module

    # ---- values and dtypes

    def dtype(self, x) -> DType:
        t = x.type
        if t == F32:
            return D.float32
        if t == F64:
            return D.float64
        if t == I64:
            return D.int64
        if t == I1:
            return D.bool_
        raise TypeError(f"codegen: no wick dtype for LLVM type {t}")

    def _typed(self, x):
        """Adapter for `binary_dtype`: an object with `.dtype`."""
        return Const(None, self.dtype(x)) if not is_number(x) else x

    def _pair(self, x, y, float_only=False):
        dt = binary_dtype(self._typed(x), self._typed(y))
        if float_only and not dt.is_floating_point:
            dt = D.float64
        return self._as(x, dt), self._as(y, dt), dt

    def _as(self, x, dtype: DType):
        if is_number(x):
            return constant(x, dtype)
        return self.cast(x, dtype)

    def _fn(self, name: str, ret: ll.Type, args: list, internal=False) -> ll.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ll.Function(self.module, ll.FunctionType(ret, args), name)
            if internal:
                fn.linkage = "internal"
        return fn

    def _intrinsic(self, name: str, dtype: DType, *args):
        t = lltype(dtype)
        return self.b.call(self._fn(f"llvm.{name}.{_SUFFIX[dtype.name]}", t, [t] * len(args)),
                           args)

    @staticmethod
    def _no(name: str, dtype: DType):
        raise TypeError(f"codegen: {name} is not defined on {dtype.name} (numpy raises too)")

    # ---- binary arithmetic

    def add(self, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            return self.b.fadd(x, y)
        return self.b.or_(x, y) if dt is D.bool_ else self.b.add(x, y)

    def sub(self, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            return self.b.fsub(x, y)
        if dt is D.bool_:
            self._no("sub", dt)
        return self.b.sub(x, y)

    def mul(self, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            return self.b.fmul(x, y)
        return self.b.and_(x, y) if dt is D.bool_ else self.b.mul(x, y)

    def div(self, x, y):
        x, y, _ = self._pair(x, y, float_only=True)
        return self.b.fdiv(x, y)

    def pow(self, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            return self._intrinsic("pow", dt, x, y)
        if dt is D.bool_:
            self._no("pow", dt)
        return self.b.call(self._ipow(), [x, y])

    def maximum(self, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            return self._intrinsic("maximum", dt, x, y)
        return self.b.or_(x, y) if dt is D.bool_ else self._intrinsic("smax", dt, x, y)

    def minimum(self, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            return self._intrinsic("minimum", dt, x, y)
        return self.b.and_(x, y) if dt is D.bool_ else self._intrinsic("smin", dt, x, y)

    # ---- comparisons (-> bool)

    def _cmp(self, name, x, y):
        x, y, dt = self._pair(x, y)
        if dt.is_floating_point:
            if name == "ne":  # NaN != anything is True: unordered
                return self.b.fcmp_unordered("!=", x, y)
            return self.b.fcmp_ordered(_FCMP[name], x, y)
        op = "!=" if name == "ne" else _FCMP[name]
        if dt is D.bool_:  # i1 is signed -1/0 for icmp signed: compare unsigned
            return self.b.icmp_unsigned(op, x, y)
        return self.b.icmp_signed(op, x, y)

    def lt(self, x, y):
        return self._cmp("lt", x, y)

    def le(self, x, y):
        return self._cmp("le", x, y)

    def gt(self, x, y):
        return self._cmp("gt", x, y)

    def ge(self, x, y):
        return self._cmp("ge", x, y)

    def eq(self, x, y):
        return self._cmp("eq", x, y)

    def ne(self, x, y):
        return self._cmp("ne", x, y)

    # ---- unary

    def neg(self, x):
        dt = self.dtype(x)
        if dt.is_floating_point:
            return self.b.fneg(x)
        if dt is D.bool_:
            self._no("neg", dt)
        return self.b.sub(ll.Constant(I64, 0), x)

    def abs(self, x):
        dt = self.dtype(x)
        if dt.is_floating_point:
            return self._intrinsic("fabs", dt, x)
        if dt is D.bool_:
            return x
        fn = self._fn("llvm.abs.i64", I64, [I64, I1])
        return self.b.call(fn, [x, ll.Constant(I1, 0)])

    def sign(self, x):
        dt = self.dtype(x)
        if dt is D.bool_:
            self._no("sign", dt)
        one, zero = constant(1, dt), constant(0, dt)
        pos, negv = self.gt(x, zero), self.lt(x, zero)
        # NaN and +-0 fall through to x itself (numpy: sign(nan) = nan)
        rest = x if dt.is_floating_point else zero
        return self.b.select(pos, one, self.b.select(negv, constant(-1, dt), rest))

    def _float(self, x):
        return x if self.dtype(x).is_floating_point else self.cast(x, D.float64)

    def exp(self, x):
        x = self._float(x)
        return self._intrinsic("exp", self.dtype(x), x)

    def log(self, x):
        x = self._float(x)
        return self._intrinsic("log", self.dtype(x), x)

    def sqrt(self, x):
        x = self._float(x)
        return self._intrinsic("sqrt", self.dtype(x), x)

    def _libm(self, name, x):
        x = self._float(x)
        t = x.type
        return self.b.call(self._fn(_LIBM[name, self.dtype(x).name], t, [t]), [x])

    def tanh(self, x):
        return self._libm("tanh", x)

    def erf(self, x):
        return self._libm("erf", x)

    def where(self, c, x, y):
        c = self._as(c, D.bool_)
        if is_number(x) and is_number(y):
            dt = binary_dtype(x, y)
            x, y = constant(x, dt), constant(y, dt)
        else:
            x, y, _ = self._pair(x, y)
        return self.b.select(c, x, y)

    def logical_not(self, x):
        return self.b.xor(self.cast(x, D.bool_), ll.Constant(I1, 1))

    def cast(self, x, dtype: DType):
        """numpy's astype: floats truncate toward zero to int64; nonzero (and NaN) is True."""
        if is_number(x):
            return constant(x, dtype)
        src = self.dtype(x)
        if src is dtype:
            return x
        t = lltype(dtype)
        b = self.b
        if dtype is D.bool_:
            if src.is_floating_point:
                return b.fcmp_unordered("!=", x, ll.Constant(x.type, 0.0))
            return b.icmp_signed("!=", x, ll.Constant(x.type, 0))
        if src is D.bool_:
            return b.uitofp(x, t) if dtype.is_floating_point else b.zext(x, t)
        if src.is_floating_point and dtype.is_floating_point:
            return b.fpext(x, t) if dtype is D.float64 else b.fptrunc(x, t)
        if src.is_floating_point:
            return b.fptosi(x, t)
        return b.sitofp(x, t)

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


# ---------------------------------------------------------------- kernels


def render_kernel(kernel, symbol: str) -> str:
    """LLVM IR text of `kernel` (a `codegen.kernel.Kernel`) as function `symbol`."""
    module = ll.Module(name="wick")  # neutral: the IR hash must not depend on the name
    bufs = kernel.inputs + kernel.outputs
    fn = ll.Function(module, ll.FunctionType(VOID, [PTR] * len(bufs)), symbol)
    for arg, buf in zip(fn.args, bufs):
        arg.name = buf.name
        arg.add_attribute("noalias")
    fn.attributes.add("nounwind")
    entry = fn.append_basic_block("entry")
    b = ll.IRBuilder(entry)
    if kernel.numel == 0:
        b.ret_void()
        return str(module)

    zero, one = ll.Constant(I64, 0), ll.Constant(I64, 1)
    offsets = [zero] * len(bufs)
    loop_vars = []
    # one do-while loop per kernel loop (sizes are static and >= 1); offsets are kept per
    # buffer and level: off_d = off_(d-1) + i_d * stride_d
    for depth, (var, size) in enumerate(kernel.loops):
        pre = b.block
        header = fn.append_basic_block(f"loop_{var}")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, name=var)
        i.add_incoming(zero, pre)
        new = []
        for off, buf in zip(offsets, bufs):
            s = buf.strides[depth]
            step = i if s == 1 else b.mul(i, ll.Constant(I64, s))
            new.append(off if s == 0 else (step if off is zero else b.add(off, step)))
        offsets = new
        loop_vars.append((i, size))

    _render_body(kernel, b, fn.args, offsets)

    for depth in reversed(range(len(loop_vars))):
        i, size = loop_vars[depth]
        nxt = b.add(i, one, name=f"{i.name}_next", flags=("nuw", "nsw"))
        i.add_incoming(nxt, b.block)
        cont = b.icmp_unsigned("<", nxt, ll.Constant(I64, size))
        after = fn.append_basic_block(f"end_{i.name}")
        b.cbranch(cont, i.parent, after)
        b.position_at_end(after)
    b.ret_void()
    return str(module)


def _render_body(kernel, b: ll.IRBuilder, args, offsets):
    sb = LLVMBuilder(b)
    env: dict = {}
    nin = len(kernel.inputs)

    def value(a):
        if isinstance(a, Var):
            return env[a]
        if isinstance(a, Const):
            return constant(a.value, a.dtype)
        return a  # a Python attribute such as a dtype

    for st in kernel.body:
        if st.op == "load":
            k = st.attrs["input"]
            dt = kernel.inputs[k].dtype
            ptr = b.gep(args[k], [offsets[k]], inbounds=True, source_etype=memtype(dt))
            v = b.load(ptr, typ=memtype(dt))
            env[st.out] = b.icmp_unsigned("!=", v, ll.Constant(I8, 0)) if dt is D.bool_ else v
            continue
        env[st.out] = getattr(sb, st.op)(*[value(a) for a in st.args], **st.attrs)

    for k, val in kernel.stores:
        dt = kernel.outputs[k].dtype
        v = sb.cast(value(val), dt)
        if dt is D.bool_:
            v = b.zext(v, I8)
        ptr = b.gep(args[nin + k], [offsets[nin + k]], inbounds=True, source_etype=memtype(dt))
        b.store(v, ptr)
