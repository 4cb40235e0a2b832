"""Kernel IR: a fusion group lowered to loops, strided loads, an SSA body, reductions and stores.

A `Kernel` is the target-independent description of one fused kernel (Inductor's `Pointwise`
and `Reduction` in one shape): an iteration space of `outer` (parallel) loops and `rloops`
(reduction) loops over the group's full shape, one `Buffer` per input it loads (element strides
per loop: 0 where broadcast; transposes and slices of inputs are just other strides) and per
output it stores, and `phases`: each phase runs once per outer index, loops over the reduction
loops, evaluating its SSA body (built by running each op's registry `scalar` formula on a
`TraceBuilder`), updating its accumulators and storing full-shape values; a final `epilogue`
stores per-row values (reduction results and what is computed from them). A pointwise kernel
is one phase with no reduction loops. Softmax is three phases (max; sum of exp; normalise),
layernorm three (sum; sum of squared deviations; normalise): values needed by several phases
are recomputed from the loads (rows stay in cache), except expensive ones (a
transcendental: softmax's exp), which the last earlier phase computing them also stores into
a full-shape output of their dtype and later phases read back (`load_out`, see
`reuse_through_outputs`); a division by a per-row value in a loop is a multiply by its reciprocal
(`reciprocal_row_divisors`). Loops contiguous for every buffer are collapsed; the innermost loop
is the vector loop. All decisions are made here; renderers
(`codegen/render.py`) only print. Imports only `ir` and numpy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ir import dtypes as D
from ir.dtypes import DType
from ir.execute import opmath
from ir.graph import Node

from .schedule import SUM_BLOCK, cascaded, column_block, interleave_block
from .trace import Const, Stmt, TraceBuilder, Var, binary_dtype, convert_number, short

__all__ = [
    "Buffer",
    "Const",
    "Kernel",
    "Phase",
    "Stmt",
    "TraceBuilder",
    "Var",
    "binary_dtype",
    "convert_number",
    "lower_group",
]



@dataclass(eq=False)
class Buffer:
    """A kernel argument: graph value `node` read (inN) or written (outN).

    `strides`: element strides per kernel loop (outer loops then reduction loops; 0 where the
    buffer is broadcast or does not vary).
    """

    name: str
    node: Node
    dtype: DType
    shape: tuple
    strides: tuple


@dataclass(eq=False)
class Phase:
    """One pass over the reduction loops: `body` statements, `accs` updated each iteration
    [(acc id, combine primitive, Var)], `stores` of full-shape values [(output index, value)]."""

    body: list = field(default_factory=list)
    accs: list = field(default_factory=list)
    stores: list = field(default_factory=list)


@dataclass(eq=False)
class Kernel:
    """One fused kernel; see the module docstring. `accs[i] = (dtype, identity)`."""

    name: str
    nodes: list
    shape: tuple           # the full iteration shape
    outer: list            # [(var, size)] parallel loops, outermost first
    rloops: list           # [(var, size)] reduction loops
    inputs: list           # [Buffer]
    outputs: list          # [Buffer]
    phases: list           # [Phase]
    accs: list = field(default_factory=list)
    epilogue: list = field(default_factory=list)      # [Stmt] after the last phase
    epi_stores: list = field(default_factory=list)    # [(output index, value)]
    sum_block: int = 0     # > 0: float sums are accumulated in blocks, blocks pairwise
    col_block: int = 0     # > 0: column reduction, interchanged (see `column_block`)
    col_inner: int = 0     # with col_block: the innermost reduction loop runs per column
    llvm_ir: str = ""      # optimised LLVM IR (set by the LLVM backend)
    source_ir: str = ""    # LLVM IR before O3
    symbol: str = ""       # the JIT symbol
    cfunc: object = None   # ctypes: cfunc(*input pointers, *output pointers, lo, hi)
    address: int = 0       # the JIT address of `cfunc` (for `jit.trampoline`)

    @property
    def checks_div(self) -> bool:
        """Integer fmod/remainder/floordiv: the kernel reports a division by zero."""
        return any(st.op in ("fmod", "remainder", "floordiv") and st.args and
                   not st.args[0].dtype.is_floating_point for st in self.body)

    @property
    def loops(self) -> list:
        return self.outer + self.rloops

    @property
    def numel(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def outer_numel(self) -> int:
        return int(np.prod([n for _, n in self.outer], dtype=np.int64))

    @property
    def body(self) -> list:
        return [st for ph in self.phases for st in ph.body] + self.epilogue

    @property
    def stores(self) -> list:
        return [s for ph in self.phases for s in ph.stores] + self.epi_stores

    def _index(self, buf: Buffer) -> str:
        idx = " + ".join(f"{v}*{s}" for (v, _), s in zip(self.loops, buf.strides) if s)
        return idx or "0"

    def _stmt(self, st: Stmt) -> str:
        if st.op == "load":
            buf = self.inputs[st.attrs["input"]]
            return f"{st.out} = load {buf.name}[{self._index(buf)}]  {short(buf.dtype)}"
        if st.op == "acc":
            return f"{st.out} = acc{st.attrs['acc']}  {short(st.out.dtype)}"
        if st.op == "load_out":
            buf = self.outputs[st.attrs["output"]]
            return f"{st.out} = load {buf.name}[{self._index(buf)}]  {short(buf.dtype)}"
        return st.format()

    def format(self) -> str:
        """Readable kernel IR: arguments, loop nest with sizes, loads, body, reductions, stores."""
        shape = "x".join(map(str, self.shape)) or "scalar"
        nodes = ", ".join("%" + n.name for n in self.nodes)
        rn = int(np.prod([n for _, n in self.rloops], dtype=np.int64))
        head = f"kernel {self.name}  numel={self.numel}  rnumel={rn}  shape={shape}  "
        lines = [head + f"nodes: {nodes}"]
        for b in self.inputs + self.outputs:
            lines.append(f"  {b.name}: %{b.node.name} {short(b.dtype)}"
                         f"[{', '.join(map(str, b.shape))}]  strides {b.strides}")
        ind = "  "
        for var, size in self.outer:
            lines.append(f"{ind}for {var} in range({size}):  # parallel")
            ind += "  "
        for k, ph in enumerate(self.phases):
            inner = ind
            if self.rloops:
                for a, _, _ in ph.accs:
                    dt, ident = self.accs[a]
                    lines.append(f"{ind}acc{a} = {ident}  {short(dt)}")
                lines.append(f"{ind}# phase {k}")
                for var, size in self.rloops:
                    lines.append(f"{inner}for {var} in range({size}):  # reduction")
                    inner += "  "
            for st in ph.body:
                lines.append(inner + self._stmt(st))
            for a, comb, v in ph.accs:
                lines.append(f"{inner}acc{a} = {comb}(acc{a}, {v})")
            for i, val in ph.stores:
                buf = self.outputs[i]
                lines.append(f"{inner}store {buf.name}[{self._index(buf)}] = {val}  "
                             f"(%{buf.node.name})")
        for st in self.epilogue:
            lines.append(ind + self._stmt(st))
        for i, val in self.epi_stores:
            buf = self.outputs[i]
            lines.append(f"{ind}store {buf.name}[{self._index(buf)}] = {val}  (%{buf.node.name})")
        return "\n".join(lines)


# ---------------------------------------------------------------- strides and loops


def contiguous_strides(shape) -> tuple:
    """Element strides of a C-contiguous array of `shape`."""
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def broadcast_strides(buf_shape, out_shape, buf_strides=None) -> tuple:
    """Element strides of a buffer of `buf_shape` (strides `buf_strides`, default contiguous)
    read over `out_shape` with broadcasting (0 = broadcast)."""
    lead = len(out_shape) - len(buf_shape)
    cs = contiguous_strides(buf_shape) if buf_strides is None else buf_strides
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


def reduced_dims(node) -> tuple | None:
    """The reduced dims of a reduction node (its `dim` attribute: None or () = all, an int or
    a tuple), or None when they do not match its output shape."""
    shape = tuple(node.args[0].meta["val"].shape)
    out = tuple(node.meta["val"].shape)
    dim = node.kwargs.get("dim")
    n = len(shape)
    if dim is None or dim == ():
        dims = tuple(range(n))
    elif isinstance(dim, int):
        dims = (dim % n,) if n else ()
    elif isinstance(dim, (tuple, list)) and all(isinstance(d, int) for d in dim):
        dims = tuple(sorted({d % n for d in dim})) if n else ()
    else:
        return None
    keep = tuple(1 if d in dims else s for d, s in enumerate(shape))
    drop = tuple(s for d, s in enumerate(shape) if d not in dims)
    if out == keep and (node.kwargs.get("keepdim") or keep == drop):
        return dims
    if out == drop and not node.kwargs.get("keepdim"):
        return dims
    return None


def keep_shape(shape, rdims) -> tuple:
    """The per-row (keepdim) shape of a reduction over `rdims` of `shape`."""
    return tuple(1 if d in rdims else n for d, n in enumerate(shape))


def identity(ident, dtype: DType):
    if ident == "min":
        if dtype.is_floating_point:
            return float("-inf")
        return False if dtype is D.bool_ else int(np.iinfo(dtype.np).min)
    if ident == "max":
        if dtype.is_floating_point:
            return float("inf")
        return True if dtype is D.bool_ else int(np.iinfo(dtype.np).max)
    return convert_number(ident, dtype)


# ---------------------------------------------------------------- lowering


def lower_group(group, name: str, strides_of=None) -> Kernel:
    """Lower a fusion group (`codegen.partition.FusionGroup`) to a `Kernel`.

    Per node, as `ir.execute.run_kernel` does for eager: tensor operands from `op.promote_from`
    on are cast to the op's compute dtype, the `scalar` formula runs, and the result is cast to
    the node's result dtype; Python numbers stay weak numbers. `strides_of(node)` gives the
    element strides of an input array (default: C-contiguous), so that non-contiguous and
    broadcast views are read in place. Raises TypeError for a formula numpy rejects.
    """
    shape, rdims = tuple(group.shape), tuple(group.rdims)
    red = [n for n in group.nodes if n.target.kind == "reduction"]
    phase, ready, nphases = _phase_plan(group, shape, rdims, red)
    tracer = _GroupTracer(group, shape, strides_of, red)
    tb = TraceBuilder()
    outputs: list[Buffer] = []
    phases = []
    full_stored = [n for n in group.stored if n in phase]
    row_stored = [n for n in group.stored if n not in phase]
    for k in range(nphases):
        ph = Phase()
        start = len(tb.body)
        cache: dict = {}
        reds = [r for r in red if ready[r] == k]
        srcs = tracer.trace(tb, [r.all_input_nodes[0] for r in reds], cache)
        for r, v in zip(reds, srcs):
            a = tracer.acc_of[r]
            adt, _, comb, _, _ = tracer.accs[a]
            ph.accs.append((a, comb, tb.as_dtype(v, adt) if not isinstance(v, Var) or
                            v.dtype is not adt else v))
        mine = [n for n in full_stored if phase[n] == k]
        for n, v in zip(mine, tracer.trace(tb, mine, cache)):
            outputs.append(_out_buffer(len(outputs), n, shape))
            ph.stores.append((len(outputs) - 1, v))
        ph.body = tb.body[start:]
        phases.append(ph)
    start = len(tb.body)
    epi_stores = []
    for n, v in zip(row_stored, tracer.trace(tb, row_stored, {})):
        outputs.append(_out_buffer(len(outputs), n, shape, rdims))
        epi_stores.append((len(outputs) - 1, v))
    epilogue = tb.body[start:]
    return _make_kernel(group, name, shape, rdims, tracer, outputs, phases, epilogue,
                        epi_stores, tb)


def _phase_plan(group, shape: tuple, rdims: tuple, red: list) -> tuple[dict, dict, int]:
    """The phase of each full-shape node, the phase each per-row value is ready in (-1: it
    needs no reduction), and the number of phases (one pass over the reduced dims each)."""
    members = set(group.nodes)

    def is_full(n):
        return tuple(n.meta["val"].shape) == shape and n.target.kind != "reduction"

    phase: dict = {}
    ready: dict = {}
    for n in group.nodes:
        deps = [a for a in n.all_input_nodes if a in members]
        if n.target.kind == "reduction":
            # a reduction of a per-row value (another reduction over the same size-1 dims)
            # reads it only once it is complete: one phase after it is ready
            src = n.all_input_nodes[0]
            ready[n] = phase[src] if src in phase else ready[src] + 1 if src in ready else 0
        elif is_full(n) and rdims:
            phase[n] = max([phase.get(a, 0) for a in deps if a in phase] +
                           [ready[a] + 1 for a in deps if a in ready] + [0])
        elif rdims:
            ready[n] = max([ready[a] for a in deps if a in ready] + [-1])
        else:
            phase[n] = 0
    nphases = max(list(phase.values()) + [ready[r] for r in red] + [0]) + 1
    return phase, ready, nphases


class _GroupTracer:
    """Traces a fusion group's values into a `TraceBuilder`: loads of the values it reads
    (one input `Buffer` each, strided over the group's shape), accumulator reads of its
    reductions, and each member's `scalar` formula with its operands cast as eager does."""

    def __init__(self, group, shape: tuple, strides_of, red: list):
        self.members = set(group.nodes)
        self.shape = shape
        self.strides_of = strides_of
        self.inputs: list[Buffer] = []
        self.in_index: dict = {}
        self.accs: list = []  # (accumulator dtype, identity, combine, result dtype, meta)
        self.acc_of: dict = {}
        for r in red:
            meta = r.meta["val"]
            compute, result = r.target.dtypes((r.all_input_nodes[0].meta["val"],), r.kwargs)
            comb, ident = r.target.reduce  # (OpDef.reduce: combine primitive, identity)
            adt = compute
            self.acc_of[r] = len(self.accs)
            self.accs.append((adt, identity(ident, adt), comb, result, meta))

    def input_buffer(self, a: Node, over: tuple) -> int:
        if a not in self.in_index:
            meta = a.meta["val"]
            st = self.strides_of(a) if self.strides_of else None
            self.in_index[a] = len(self.inputs)
            self.inputs.append(Buffer(f"in{len(self.inputs)}", a, meta.dtype, tuple(meta.shape),
                                      broadcast_strides(tuple(meta.shape), self.shape, st)))
        return self.in_index[a]

    def trace(self, tb: TraceBuilder, targets, cache: dict):
        """Trace the values of `targets` (nodes) into `tb`; per-phase memo `cache`."""
        return [self._value(tb, t, cache) for t in targets]

    def _value(self, tb: TraceBuilder, n: Node, cache: dict):
        if n in cache:
            return cache[n]
        if n not in self.members:
            cache[n] = tb.emit("load", (), n.meta["val"].dtype,
                               input=self.input_buffer(n, self.shape))
            return cache[n]
        if n.target.kind == "reduction":
            a = self.acc_of[n]
            v = tb.emit("acc", (), self.accs[a][0], acc=a)
            cache[n] = tb.as_dtype(v, self.accs[a][3])
            return cache[n]
        op = n.target
        metas = tuple(x.meta["val"] if isinstance(x, Node) else x for x in n.args)
        compute = opmath(op, op.dtypes(metas, n.kwargs)[0])   # float32 for half types
        narrow_int = compute.category == D.INTEGER and compute is not D.int64
        result = n.meta["val"].dtype
        xs = []
        for i, x in enumerate(n.args):
            if isinstance(x, Node):
                v = self._value(tb, x, cache)
                if i >= op.promote_from and v.dtype is not compute:
                    v = tb.cast(v, compute)
                xs.append(v)
            elif narrow_int and type(x) is int and i >= op.promote_from:
                xs.append(Const(convert_number(x, compute), compute))  # uint8 + 300 wraps
            else:
                xs.append(x)
        cache[n] = tb.as_dtype(op.scalar(tb, *xs, **n.kwargs), result)
        return cache[n]


def _make_kernel(group, name, shape, rdims, tracer, outputs, phases, epilogue, epi_stores,
                 tb) -> Kernel:
    """The `Kernel` of a traced group: loops (outer dims then reduced dims, each class
    collapsed on its own) and the blocking and rewrites chosen for them."""
    inputs, accs = tracer.inputs, tracer.accs
    bufs = inputs + outputs
    odims = [d for d in range(len(shape)) if d not in rdims]
    osz, ost = collapse_loops([shape[d] for d in odims], [[b.strides[d] for d in odims]
                                                          for b in bufs])
    rsz, rst = collapse_loops([shape[d] for d in rdims], [[b.strides[d] for d in rdims]
                                                          for b in bufs])
    for b, so, sr in zip(bufs, ost, rst):
        b.strides = tuple(so) + tuple(sr)
    outer = [(f"i{d}", n) for d, n in enumerate(osz)]
    rloops = [(f"r{d}", n) for d, n in enumerate(rsz)]
    kernel = Kernel(name, list(group.nodes), shape, outer, rloops, inputs, outputs, phases,
                    [(a[0], a[1]) for a in accs], epilogue, epi_stores)
    rnumel = int(np.prod([n for _, n in rloops], dtype=np.int64))
    kernel.col_block = column_block(kernel)
    if not kernel.col_block:
        kernel.col_block = interleave_block(kernel)
        kernel.col_inner = int(kernel.col_block > 0)
    if (rnumel > SUM_BLOCK and not kernel.col_block and
            any(cascaded(kernel, a) for a in range(len(accs)))):
        kernel.sum_block = SUM_BLOCK
    reuse_through_outputs(kernel)
    reciprocal_row_divisors(kernel, tb)
    return kernel


def reciprocal_row_divisors(k: Kernel, tb: TraceBuilder) -> None:
    """In a reduction phase, `div(a, d)` by a per-row float value `d` (computed from
    accumulators and constants only: softmax's sum) becomes `mul(a, div(1, d))`; the
    reciprocal is loop-invariant, so LLVM hoists it and the loop multiplies instead of dividing
    (a vector divide costs several times a multiply). Within 1.5 ulp of the true quotient
    (only a divisor below 1/FLT_MAX, whose reciprocal overflows, would differ more)."""
    if not k.rloops:
        return
    for ph in k.phases:
        inv: set = set()
        body = []
        for st in ph.body:
            args = [a for a in st.args if isinstance(a, Var)]
            if st.op == "acc" or (st.op not in ("load", "load_out") and
                                  all(a in inv for a in args)):
                inv.add(st.out)
            d = st.args[1] if st.op == "div" and len(st.args) == 2 else None
            if (isinstance(d, Var) and d in inv and st.out not in inv and
                    st.out.dtype in (D.float32, D.float64) and d.dtype is st.out.dtype):
                r = Var(f"t{tb._count}", d.dtype)
                tb._count += 1
                body.append(Stmt(r, "div", (Const(convert_number(1, d.dtype), d.dtype), d),
                                 {}))
                st.op, st.args = "mul", (st.args[0], r)
            body.append(st)
        ph.body = body


# primitives worth storing once rather than computing again in a later phase
EXPENSIVE = frozenset((
    "exp", "exp2", "expm1", "log", "log2", "log1p", "sin", "cos", "tan", "asin", "acos", "atan",
    "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "erfinv", "atan2", "hypot",
    "pow"))


def _key(st: Stmt, keys: dict):
    """A structural key of statement `st` (equal keys compute equal values in a row)."""
    def arg(a):
        if isinstance(a, Var):
            return keys.get(a, ("?", a.name))
        if isinstance(a, Const):
            return ("c", repr(a.value), a.dtype.name)
        return ("p", repr(a))
    attrs = tuple(sorted((k, v.name if isinstance(v, DType) else repr(v))
                         for k, v in st.attrs.items()))
    return (st.op, st.out.dtype.name, attrs) + tuple(arg(a) for a in st.args)


def reuse_through_outputs(k: Kernel) -> None:
    """Store an expensive value once, read it back later: where a phase recomputes a value
    containing a transcendental that an earlier phase computed (softmax: exp(x - max) in the
    sum phase and again in the normalise phase), the earlier phase also stores it into an
    output of the same dtype that the later phase writes at the same index, and the later phase
    reads it back (`load_out`) instead of recomputing it. Exact: the value is stored and read
    back in its own dtype, and each element is read back by the thread that wrote it (same
    offsets; an output's elements are distinct over the reduction loops)."""
    if not k.rloops or len(k.phases) < 2:
        return
    keys: dict = {}
    defs: list = []      # per phase: key -> Var defined in that phase
    costly: set = set()  # Vars whose computation contains an expensive primitive
    for ph in k.phases:
        mine = {}
        for st in ph.body:
            keys[st.out] = _key(st, keys)
            mine.setdefault(keys[st.out], st.out)
            if st.op in EXPENSIVE or any(a in costly for a in st.args if isinstance(a, Var)):
                costly.add(st.out)
        defs.append(mine)
    used_outputs: set = set()
    for p, ph in enumerate(k.phases):
        if p == 0 or not ph.stores:
            continue
        changed = False
        for st in reversed(list(ph.body)):
            if st.out not in costly or st.op == "load_out":
                continue
            q = next((q for q in range(p - 1, -1, -1) if keys[st.out] in defs[q]), None)
            if q is None:
                continue
            slot = next((i for i, _ in ph.stores if i not in used_outputs and
                         k.outputs[i].dtype is st.out.dtype and
                         all(s != 0 for s in k.outputs[i].strides)), None)
            if slot is None:
                continue
            used_outputs.add(slot)
            k.phases[q].stores.append((slot, defs[q][keys[st.out]]))
            st.op, st.args, st.attrs = "load_out", (), {"output": slot}
            changed = True
        if changed:
            _drop_dead(ph)


def _drop_dead(ph: Phase) -> None:
    """Remove statements of `ph` whose values nothing uses."""
    live = {v for _, _, v in ph.accs if isinstance(v, Var)}
    live |= {v for _, v in ph.stores if isinstance(v, Var)}
    keep = []
    for st in reversed(ph.body):
        if st.out in live:
            keep.append(st)
            live.update(a for a in st.args if isinstance(a, Var))
    ph.body = keep[::-1]


def _out_buffer(i: int, n: Node, shape: tuple, rdims=()) -> Buffer:
    """A C-contiguous output of node `n`, indexed over the kernel's full `shape`."""
    meta = n.meta["val"]
    oshape = tuple(meta.shape)
    if not rdims or oshape == shape:
        strides = broadcast_strides(oshape, shape)
    else:
        cs = contiguous_strides(oshape)
        if len(oshape) == len(shape):      # keepdim form
            strides = tuple(0 if d in rdims else cs[d] for d in range(len(shape)))
        else:                               # reduced dims removed
            kept = [d for d in range(len(shape)) if d not in rdims]
            st = dict(zip(kept, cs))
            strides = tuple(st.get(d, 0) for d in range(len(shape)))
    return Buffer(f"out{i}", n, meta.dtype, oshape, strides)
