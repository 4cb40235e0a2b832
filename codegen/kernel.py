"""Kernel IR: a fusion group lowered to loops, strided loads, an SSA body and stores.

A `Kernel` is the target-independent description of one fused elementwise kernel (Inductor's
`Pointwise`): its loop nest over the group's output shape (dimensions contiguous for every
operand collapsed, the innermost loop the stride-1 vector loop), one `Buffer` per input it loads
(element strides per loop; a broadcast dimension has stride 0) and per output it stores
(C-contiguous), and an SSA body recorded by running each op's `scalar` formula on a
`TraceBuilder`. All decisions (dtypes, casts, strides, loop collapse) are made here; renderers
(`codegen/llvm.py`, later CUDA) only print. Imports only `ir`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ir import dtypes as D
from ir.dtypes import DType
from ir.graph import Node
from ir.opdef import is_number
from ir.scalar import ArrayBuilder

_SHORT = {"float32": "f32", "float64": "f64", "int64": "i64", "bool": "b8"}


# ---------------------------------------------------------------- SSA values


@dataclass(frozen=True, eq=False)
class Var:
    """An SSA value of the kernel body (one element per loop iteration)."""

    name: str
    dtype: DType

    def __str__(self) -> str:
        return f"%{self.name}"


@dataclass(frozen=True)
class Const:
    """A typed constant (a Python number given the dtype it takes part in)."""

    value: object
    dtype: DType

    def __str__(self) -> str:
        return repr(self.value)


@dataclass(eq=False)
class Stmt:
    """`out = op(*args, **attrs)`; `op` is a scalar primitive, or "load" (attrs: input index)."""

    out: Var
    op: str
    args: tuple
    attrs: dict = field(default_factory=dict)

    def format(self) -> str:
        if self.op == "load":
            return f"{self.out} = load in{self.attrs['input']}  {_SHORT[self.out.dtype.name]}"
        parts = [str(a) for a in self.args]
        parts += [f"{k}={v.name if isinstance(v, DType) else v}" for k, v in self.attrs.items()]
        return f"{self.out} = {self.op}({', '.join(parts)})  {_SHORT[self.out.dtype.name]}"


def is_value(x) -> bool:
    return isinstance(x, (Var, Const))


def python_dtype(x) -> DType:
    """The dtype numpy gives a lone Python number (bool, int64, float64)."""
    if isinstance(x, bool):
        return D.bool_
    if isinstance(x, int):
        return D.int64
    if isinstance(x, float):
        return D.float64
    raise TypeError(f"codegen: unsupported Python constant {x!r} of type {type(x).__name__}")


def binary_dtype(x, y) -> DType:
    """numpy's result dtype of a binary ufunc on values (`.dtype`) and Python numbers.

    Two values promote as `np.promote_types` (int64 with float32 is float64, as in numpy). A
    Python number is weak (NEP 50): it takes the value's dtype unless its category is higher
    (an int with a bool value gives int64, a float with an integer value gives float64).
    """
    if is_number(x) and is_number(y):
        return D.from_numpy(np.result_type(x, y))
    if is_number(x) or is_number(y):
        v, n = (y, x) if is_number(x) else (x, y)
        cat = D.scalar_category(n)
        if cat <= v.dtype.category:
            return v.dtype
        return D.int64 if cat == D.INTEGER else D.float64
    return D.from_numpy(np.promote_types(x.dtype.np, y.dtype.np))


def convert_number(x, dtype: DType):
    """A Python number converted as numpy would convert it to `dtype` (float32 rounds)."""
    if dtype is D.bool_:
        return bool(x)
    if dtype is D.int64:
        return int(x)
    return float(np.array(x, dtype=dtype.np))


# ---------------------------------------------------------------- the recording builder


class TraceBuilder:
    """The scalar-builder protocol (`ir/scalar.py`) recording a typed SSA body.

    Dtypes follow numpy's rules exactly as `ArrayBuilder` gets them on arrays, so a formula
    traced here computes what eager computes; every mixed-dtype operand gets an explicit `cast`
    statement, so each primitive statement sees operands of one dtype. Operations on Python
    numbers only are evaluated in Python (through `ArrayBuilder(numpy)`).
    """

    _FLOAT_UNARY = ("exp", "log", "sqrt", "tanh", "erf")

    def __init__(self):
        self.body: list[Stmt] = []
        self._count = 0
        self._np = ArrayBuilder(np)

    def emit(self, op: str, args: tuple, out_dtype: DType, **attrs) -> Var:
        out = Var(f"t{self._count}", out_dtype)
        self._count += 1
        self.body.append(Stmt(out, op, tuple(args), attrs))
        return out

    def dtype(self, x) -> DType:
        return x.dtype if is_value(x) else python_dtype(x)

    def _fold(self, name, *args, **attrs):
        r = getattr(self._np, name)(*args, **attrs)
        return r.item() if isinstance(r, (np.generic, np.ndarray)) else r

    def as_dtype(self, x, dtype: DType):
        """`x` (value or number) as an operand of `dtype`."""
        if is_number(x):
            return Const(convert_number(x, dtype), dtype)
        return x if x.dtype is dtype else self.cast(x, dtype)

    def _binary(self, name: str, x, y, result: DType | None = None, float_only=False):
        if is_number(x) and is_number(y):
            return self._fold(name, x, y)
        dt = binary_dtype(x, y)
        if float_only and not dt.is_floating_point:
            dt = D.float64  # numpy's true_divide of integers
        return self.emit(name, (self.as_dtype(x, dt), self.as_dtype(y, dt)), result or dt)

    def _unary(self, name: str, x, float_only=False):
        if is_number(x):
            return self._fold(name, x)
        if float_only and not x.dtype.is_floating_point:
            x = self.cast(x, D.float64)  # numpy computes exp(int64) in float64
        return self.emit(name, (x,), x.dtype)

    # binary arithmetic
    def add(self, x, y):
        return self._binary("add", x, y)

    def sub(self, x, y):
        return self._binary("sub", x, y)

    def mul(self, x, y):
        return self._binary("mul", x, y)

    def div(self, x, y):
        return self._binary("div", x, y, float_only=True)

    def pow(self, x, y):
        return self._binary("pow", x, y)

    def maximum(self, x, y):
        return self._binary("maximum", x, y)

    def minimum(self, x, y):
        return self._binary("minimum", x, y)

    # comparisons
    def lt(self, x, y):
        return self._binary("lt", x, y, D.bool_)

    def le(self, x, y):
        return self._binary("le", x, y, D.bool_)

    def gt(self, x, y):
        return self._binary("gt", x, y, D.bool_)

    def ge(self, x, y):
        return self._binary("ge", x, y, D.bool_)

    def eq(self, x, y):
        return self._binary("eq", x, y, D.bool_)

    def ne(self, x, y):
        return self._binary("ne", x, y, D.bool_)

    # unary
    def neg(self, x):
        return self._unary("neg", x)

    def abs(self, x):
        return self._unary("abs", x)

    def sign(self, x):
        return self._unary("sign", x)

    def exp(self, x):
        return self._unary("exp", x, float_only=True)

    def log(self, x):
        return self._unary("log", x, float_only=True)

    def sqrt(self, x):
        return self._unary("sqrt", x, float_only=True)

    def tanh(self, x):
        return self._unary("tanh", x, float_only=True)

    def erf(self, x):
        return self._unary("erf", x, float_only=True)

    def where(self, c, x, y):
        if is_number(c):
            return x if c else y
        c = self.as_dtype(c, D.bool_)
        if is_number(x) and is_number(y):
            dt = D.from_numpy(np.result_type(np.array(x), np.array(y)))
        else:
            dt = binary_dtype(x, y)
        return self.emit("where", (c, self.as_dtype(x, dt), self.as_dtype(y, dt)), dt)

    def logical_not(self, x):
        if is_number(x):
            return not x
        return self.emit("logical_not", (x,), D.bool_)

    def cast(self, x, dtype: DType):
        if is_number(x):
            return convert_number(x, dtype)
        if x.dtype is dtype:
            return x
        return self.emit("cast", (x,), dtype, dtype=dtype)


# ---------------------------------------------------------------- kernels


@dataclass(eq=False)
class Buffer:
    """A kernel argument: the graph value `node` read (inN) or written (outN), C-contiguous.

    `strides` are element strides per kernel loop (0 where the buffer is broadcast).
    """

    name: str
    node: Node
    dtype: DType
    shape: tuple
    strides: tuple


@dataclass(eq=False)
class Kernel:
    """One fused elementwise kernel over `shape` (the fusion group's output shape)."""

    name: str
    nodes: list
    shape: tuple
    loops: list            # [(var, size)], outermost first; product == numel
    inputs: list           # [Buffer]
    outputs: list          # [Buffer]
    body: list             # [Stmt], loads first used where needed
    stores: list           # [(output index, Var | Const)]
    llvm_ir: str = ""      # optimised LLVM IR (set by the LLVM backend)
    source_ir: str = ""    # LLVM IR before O3
    symbol: str = ""       # the JIT symbol
    cfunc: object = None   # the ctypes callable: cfunc(*input pointers, *output pointers)

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    def format(self) -> str:
        """Readable kernel IR: arguments, the loop nest with sizes, loads, the body, stores."""
        shape = "x".join(map(str, self.shape)) or "scalar"
        nodes = ", ".join("%" + n.name for n in self.nodes)
        lines = [f"kernel {self.name}  numel={self.numel}  shape={shape}  nodes: {nodes}"]
        for b in self.inputs + self.outputs:
            lines.append(f"  {b.name}: %{b.node.name} {_SHORT[b.dtype.name]}"
                         f"[{', '.join(map(str, b.shape))}]  strides {b.strides}")
        ind = "  "
        for var, size in self.loops:
            lines.append(f"{ind}for {var} in range({size}):")
            ind += "  "
        for st in self.body:
            line = st.format()
            if st.op == "load":
                buf = self.inputs[st.attrs["input"]]
                idx = " + ".join(f"{v}*{s}" for (v, _), s in zip(self.loops, buf.strides) if s)
                line = f"{st.out} = load {buf.name}[{idx or 0}]  {_SHORT[buf.dtype.name]}"
            lines.append(ind + line)
        for i, val in self.stores:
            buf = self.outputs[i]
            idx = " + ".join(f"{v}*{s}" for (v, _), s in zip(self.loops, buf.strides) if s)
            lines.append(f"{ind}store {buf.name}[{idx or 0}] = {val}  (%{buf.node.name})")
        return "\n".join(lines)


def contiguous_strides(shape) -> tuple:
    """Element strides of a C-contiguous array of `shape`."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def broadcast_strides(buf_shape, out_shape) -> tuple:
    """Element strides of a contiguous `buf_shape` read over `out_shape` (0 = broadcast)."""
    lead = len(out_shape) - len(buf_shape)
    cs = contiguous_strides(buf_shape)
    out = []
    for d, n in enumerate(out_shape):
        k = d - lead
        out.append(0 if k < 0 or buf_shape[k] == 1 or n == 1 else cs[k])
    return tuple(out)


def collapse_loops(shape, strides_list) -> tuple:
    """Drop size-1 dimensions and merge neighbours contiguous in every operand.

    Dimensions d, d+1 merge when `stride[d] == stride[d+1] * size[d+1]` for every operand (this
    holds for broadcast pairs with both strides 0). Returns (sizes, [strides per operand]).
    """
    dims = [d for d, n in enumerate(shape) if n != 1]
    sizes = [shape[d] for d in dims]
    strides = [[s[d] for d in dims] for s in strides_list]
    i = len(sizes) - 2
    while i >= 0:
        if all(s[i] == s[i + 1] * sizes[i + 1] for s in strides):
            sizes[i] *= sizes[i + 1]
            del sizes[i + 1]
            for s in strides:
                s[i] = s[i + 1]
                del s[i + 1]
        i -= 1
    return tuple(sizes), [tuple(s) for s in strides]


def lower_group(group, name: str) -> Kernel:
    """Lower a fusion group (`codegen.partition.FusionGroup`) to a `Kernel`.

    Per node, as `ir.interpreter.run_kernel` does for eager: tensor operands from
    `op.promote_from` on are cast to the op's compute dtype, the `scalar` formula runs, and the
    result is cast to the node's result dtype. Python numbers stay weak numbers.
    """
    tb = TraceBuilder()
    values: dict = {}
    loads: dict = {}
    inputs: list[Buffer] = []
    shape = tuple(group.shape)

    def operand(a: Node):
        if a in values:
            return values[a]
        if a not in loads:
            meta = a.meta["val"]
            buf = Buffer(f"in{len(inputs)}", a, meta.dtype, tuple(meta.shape),
                         broadcast_strides(tuple(meta.shape), shape))
            loads[a] = tb.emit("load", (), meta.dtype, input=len(inputs))
            inputs.append(buf)
        return loads[a]

    for node in group.nodes:
        op = node.target
        metas = tuple(a.meta["val"] if isinstance(a, Node) else a for a in node.args)
        compute, result = op.dtypes(metas, node.kwargs)
        xs = []
        for i, a in enumerate(node.args):
            if isinstance(a, Node):
                v = operand(a)
                if i >= op.promote_from and v.dtype is not compute:
                    v = tb.cast(v, compute)
                xs.append(v)
            else:
                xs.append(a)
        r = op.scalar(tb, *xs, **node.kwargs)
        values[node] = tb.as_dtype(r, result)

    outputs, stores = [], []
    for node in group.stored:
        meta = node.meta["val"]
        outputs.append(Buffer(f"out{len(outputs)}", node, meta.dtype, shape,
                              contiguous_strides(shape)))
        stores.append((len(outputs) - 1, values[node]))

    sizes, strides = collapse_loops(shape, [b.strides for b in inputs + outputs])
    loops = [(f"i{d}", n) for d, n in enumerate(sizes)]
    for b, s in zip(inputs + outputs, strides):
        b.strides = s
    return Kernel(name, list(group.nodes), shape, loops, inputs, outputs, tb.body, stores)
