"""A `Kernel` printed as CUDA C: the launch schedule chosen for it and its `__global__` functions.

The same kernel IR as the LLVM backend (`codegen.kernel`); only the printing differs. Per
kernel, `schedule(kernel)` picks one of (CODEGEN.md, "CUDA source"):

- "pointwise": a grid-stride loop over the (collapsed) outer loops, 256 threads per block,
  shapes and strides baked in as constants, div/mod only for dimensions that could not be
  collapsed; plus a `_v4` variant loading and storing 4 elements at a time (`float4`,
  `ushort4`, `uchar4`...) when there is one outer loop, every buffer has stride 1 or 0 and
  elements of at most 4 bytes (the launcher uses it when the pointers are 16-byte aligned);
- "block_rows": one block per row (grid-stride over rows) for reductions: per-thread strided
  accumulation, `__shfl_down_sync` warp reduce, `__shared__` partials, a final warp reduce,
  the result broadcast to the block, then the next phase (softmax: max; sum of exp;
  normalise; layernorm: sum; squared deviations; normalise) and the per-row epilogue stored
  by thread 0;
- "thread_rows": one thread per row, looping over the reduction serially (short rows, and
  column reductions where the outer loop is the contiguous one: coalesced across threads);
- "split": one huge row (a full reduction): per phase, a kernel of G blocks writing per-block
  partials to a scratch buffer and a one-block kernel combining them (then the epilogue).

Index arithmetic is 32-bit when every offset fits, else 64-bit. Every function is
`extern "C" __global__ void __launch_bounds__(B)` with `__restrict__` pointers: inputs, then
outputs, then (split) the scratch buffer, then (`CudaSource.checks_div`) the division-by-zero
flag `wk_err`: one `unsigned int` the launcher zeroes before the launch and reads after it,
set to 1 by an integer fmod/remainder/floordiv whose divisor is 0 (the CPU backend's flag
argument; eager raises RuntimeError("ZeroDivisionError")). The fused ops are listed in a
comment above each kernel. Imports only `ir` and the other codegen modules.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from .cuda import PRELUDE, CudaBuilder, ctype, literal, load_expr, memtype, store_expr
from .kernel import Kernel
from .trace import Const, Var, convert_number

BLOCK = 256
SPLIT_PARTS = 1024        # most blocks of a split (full) reduction's first pass
SPLIT_MIN = 1 << 16       # rnumel from which a single row is split across blocks
_VEC = {"float": "float4", "int": "int4", "unsigned int": "uint4", "short": "short4",
        "unsigned short": "ushort4", "signed char": "char4", "unsigned char": "uchar4"}
_LANES = ("x", "y", "z", "w")
_SHUFFLE = ("int", "unsigned int", "long long", "unsigned long long", "float", "double")
_DIVS = ("fmod", "remainder", "floordiv")
ERR = "wk_err"            # the division-by-zero flag argument


@dataclass
class Launch:
    """One `__global__` function of a kernel and its launch: `block` threads; `grid` fixed,
    or None for a grid from the device: ceil(work / per_block) blocks, at most 32 per SM
    (`per_block` work items per block: `block` for grid-stride loops, 1 for a block per row).
    """

    func: str
    block: int
    work: int
    grid: int | None = None
    per_block: int = 0

    def grid_for(self, sms: int) -> int:
        if self.grid is not None:
            return self.grid
        per = self.per_block or self.block
        return max(1, min(-(-self.work // per), 32 * sms))


@dataclass
class CudaSource:
    """The CUDA rendering of one `Kernel`: its schedule, source text and launches in order
    (`vector`: the 4-wide variant of a pointwise kernel and the buffers it needs aligned;
    `checks_div`: every function takes the division-by-zero flag as its last argument, a
    1-element uint32 device array to zero before and read after the launches)."""

    kernel: Kernel
    schedule: str
    source: str
    launches: list
    vector: Launch | None = None
    aligned: tuple = ()
    scratch_bytes: int = 0
    index_type: str = "int"
    notes: list = field(default_factory=list)
    checks_div: bool = False


def c_name(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _rnumel(k: Kernel) -> int:
    return int(np.prod([n for _, n in k.rloops], dtype=np.int64))


def index_type(k: Kernel) -> str:
    """"int" when the element count and every offset (plus a grid stride) fit in 31 bits."""
    limit = (1 << 31) - (1 << 26)
    if k.numel >= limit:
        return "long long"
    for b in k.inputs + k.outputs:
        span = sum((n - 1) * abs(s) for (_, n), s in zip(k.loops, b.strides) if n)
        if span >= limit:
            return "long long"
    return "int"


def checked_division(st) -> bool:
    """Whether statement `st` is an integer fmod/remainder/floordiv whose divisor may be 0
    (a Var, or the constant 0): such statements set the kernel's division-by-zero flag."""
    if st.op not in _DIVS or len(st.args) != 2 or st.args[0].dtype.is_floating_point:
        return False
    y = st.args[1]
    return not (isinstance(y, Const) and convert_number(y.value, y.dtype) != 0)


def checks_div(k: Kernel) -> bool:
    """Whether kernel `k` takes the division-by-zero flag (`Kernel.checks_div`, less the
    divisions by non-zero constants, which cannot fail: no flag, no read-back)."""
    return any(checked_division(st) for st in k.body)


def schedule(k: Kernel) -> str:
    """The launch schedule of `k` (see the module docstring)."""
    if not k.rloops:
        return "pointwise"
    rows, rn = k.outer_numel, _rnumel(k)
    if rows == 1 and rn >= SPLIT_MIN:
        return "split"
    nout = len(k.outer)
    column = nout > 0 and any(b.strides[nout - 1] == 1 for b in k.inputs) and not any(
        b.strides[-1] == 1 for b in k.inputs)
    if rn <= 16 or (column and rows >= 1024):
        return "thread_rows"
    return "block_rows"


def row_block(rn: int) -> int:
    """Threads per row: a warp for short rows, up to 512 (about 8 elements per thread)."""
    b = 32
    while b < 512 and b * 8 < rn:
        b *= 2
    return b


def render(k: Kernel, name: str | None = None) -> CudaSource:
    """CUDA C of kernel `k` (functions named after `name`, default the kernel's name)."""
    name = c_name(name or k.name)
    sched = schedule(k)
    r = _Renderer(k, name)
    if sched == "pointwise":
        src = r.pointwise()
    elif sched == "split":
        src = r.split()
    else:
        src = r.rows(sched)
    src.checks_div = r.flag is not None
    return src


def module_source(sources: list) -> str:
    """One CUDA module (one NVRTC compile) holding every kernel of `sources`."""
    return PRELUDE + "\n" + "\n".join(s.source for s in sources)


class _Renderer:
    def __init__(self, k: Kernel, name: str):
        self.k = k
        self.name = name
        self.cb = CudaBuilder()
        self.idx = index_type(k)
        self.nout = len(k.outer)
        self.flag = ERR if checks_div(k) else None

    # ---- pieces

    def header(self, func: str, block: int, scratch: bool = False) -> list:
        k = self.k
        args = [f"const {memtype(b.dtype)}* __restrict__ {b.name}" for b in k.inputs]
        args += [f"{memtype(b.dtype)}* __restrict__ {b.name}" for b in k.outputs]
        if scratch:
            args.append("unsigned char* __restrict__ scratch")
        if self.flag:
            args.append(f"unsigned int* __restrict__ {self.flag}")
        return [f'extern "C" __global__ void __launch_bounds__({block})',
                f"{func}({', '.join(args)}) {{"]

    def comment(self) -> list:
        k = self.k
        shape = "x".join(map(str, k.shape)) or "scalar"
        par = ", ".join(f"{v} < {n}" for v, n in k.outer) or "-"
        red = ", ".join(f"{v} < {n}" for v, n in k.rloops) or "-"
        lines = [f"// kernel {k.name}: shape {shape}; parallel {par}; reduction {red}"]
        for n in k.nodes:
            args = ", ".join("%" + a.name if hasattr(a, "op") else repr(a) for a in n.args)
            lines.append(f"//   %{n.name} = {n.target.name}({args})")
        return lines

    def decompose(self, var: str, loops: list, ind: str) -> list:
        """`loops` variables from linear index `var` (innermost fastest)."""
        t = self.idx
        if not loops:
            return []
        if len(loops) == 1:
            return [f"{ind}const {t} {loops[0][0]} = {var};"]
        out = [f"{ind}{t} {var}_rem = {var};"]
        for j in range(len(loops) - 1, 0, -1):
            v, n = loops[j]
            out.append(f"{ind}const {t} {v} = {var}_rem % {n}; {var}_rem /= {n};")
        out.append(f"{ind}const {t} {loops[0][0]} = {var}_rem;")
        return out

    def offset(self, buf, first: int, count: int) -> str:
        """Offset of `buf` over loops [first, first + count) (a "0" when none vary)."""
        loops = self.k.loops[first:first + count]
        terms = []
        for (v, _), s in zip(loops, buf.strides[first:first + count]):
            if s == 1:
                terms.append(v)
            elif s:
                terms.append(f"{v} * {s}")
        return " + ".join(terms) or "0"

    def body(self, stmts, ind: str, load, suffix: str = "") -> list:
        """`const T tN = ...;` for each statement; `load(input index)` gives a memory ref."""
        k, out = self.k, []
        for st in stmts:
            t = ctype(st.out.dtype)
            name = st.out.name + suffix
            if st.op == "load":
                i = st.attrs["input"]
                expr = load_expr(k.inputs[i].dtype, load(i))
            elif st.op == "load_out":   # stored by an earlier phase, read by the same thread
                i = st.attrs["output"]
                expr = load_expr(k.outputs[i].dtype, load(("out", i)))
            elif st.op == "acc":
                expr = f"acc{st.attrs['acc']}"
            else:
                self.cb.err = self.flag if checked_division(st) else None
                vals = [self.value(a, suffix) for a in st.args]
                dts = [a.dtype for a in st.args if isinstance(a, (Var, Const))]
                in_dt = dts[1] if st.op == "where" else (dts[0] if dts else st.out.dtype)
                expr = self.cb.emit(st.op, st.out.dtype, in_dt, vals, st.attrs)
                self.cb.err = None
            out.append(f"{ind}const {t} {name} = {expr};")
        return out

    def buf(self, i):
        """Input `i`, or output `j` for `i == ("out", j)` (a `load_out`)."""
        return self.k.outputs[i[1]] if isinstance(i, tuple) else self.k.inputs[i]

    def value(self, a, suffix: str = "") -> str:
        if isinstance(a, Var):
            return a.name + suffix
        if isinstance(a, Const):
            return literal(a.value, a.dtype)
        raise TypeError(f"codegen: unexpected operand {a!r}")

    def stored(self, i: int, val, suffix: str = "") -> str:
        """Memory value of output `i` from kernel value `val` (cast when dtypes differ)."""
        buf = self.k.outputs[i]
        v = self.value(val, suffix)
        if isinstance(val, (Var, Const)) and val.dtype is not buf.dtype:
            v = self.cb.cast(v, val.dtype, buf.dtype)
        return store_expr(buf.dtype, v)

    def combine(self, a: int, comb: str, cur: str, x: str) -> str:
        dt = self.k.accs[a][0]
        return self.cb.emit(comb, dt, dt, [cur, x], {})

    def acc_init(self, a: int, ind: str) -> str:
        dt, ident = self.k.accs[a]
        return f"{ind}acc{a} = {literal(ident, dt)};"

    def block_reduce(self, accs: list, ind: str, nthreads: int) -> list:
        """Combine each thread's `acc{a}` across the block; every thread gets the result."""
        lines = []
        for a, comb, _ in accs:
            dt = self.k.accs[a][0]
            t = ctype(dt)
            st = t if t in _SHUFFLE else "int"
            sh = f"(({t}*)wk_sh)"
            ident = literal(self.k.accs[a][1], dt)

            # the shuffle is read into a variable first: every lane must execute it
            warp_loop = (f"for (int wk_o = 16; wk_o > 0; wk_o >>= 1) {{ const {t} wk_v = "
                         f"({t})__shfl_down_sync(0xffffffffu, ({st})acc{a}, wk_o); "
                         f"acc{a} = {self.combine(a, comb, f'acc{a}', 'wk_v')}; }}")
            lines.append(f"{ind}{warp_loop}")
            if nthreads > 32:
                lines += [
                    f"{ind}if ((threadIdx.x & 31) == 0) {sh}[threadIdx.x >> 5] = acc{a};",
                    f"{ind}__syncthreads();",
                    f"{ind}if (threadIdx.x < 32) {{",
                    f"{ind}  acc{a} = threadIdx.x < {nthreads // 32} ? "
                    + f"{sh}[threadIdx.x] : {ident};",
                    f"{ind}  {warp_loop}",
                    f"{ind}}}",
                ]
            lines += [f"{ind}if (threadIdx.x == 0) {sh}[0] = acc{a};",
                      f"{ind}__syncthreads();",
                      f"{ind}acc{a} = {sh}[0];",
                      f"{ind}__syncthreads();"]
        return lines

    # ---- pointwise

    def pointwise(self) -> CudaSource:
        k, t = self.k, self.idx
        n = k.outer_numel if k.outer else 1
        ph = k.phases[0]
        stmts = ph.body + k.epilogue
        stores = ph.stores + k.epi_stores
        nloops = len(k.outer)
        lines = self.comment() + self.header(self.name, BLOCK)
        lines.append(f"  for ({t} i = ({t})blockIdx.x * {BLOCK} + threadIdx.x; i < {n}; "
                     f"i += ({t})gridDim.x * {BLOCK}) {{")
        lines += self.decompose("i", k.outer, "    ")
        offs = {b.name: self.offset(b, 0, nloops) for b in k.inputs + k.outputs}
        lines += self.body(stmts, "    ", lambda i: f"{k.inputs[i].name}[{offs[k.inputs[i].name]}]")
        for i, val in stores:
            o = k.outputs[i]
            lines.append(f"    {o.name}[{offs[o.name]}] = {self.stored(i, val)};")
        lines += ["  }", "}", ""]
        src = CudaSource(k, "pointwise", "\n".join(lines), [Launch(self.name, BLOCK, n)],
                         index_type=t)
        vec = self.vector(stmts, stores, n)
        if vec is not None:
            src.source += vec[0]
            src.vector, src.aligned = vec[1], vec[2]
        return src

    def vector(self, stmts, stores, n: int):
        """The 4-wide variant, or None when the layout does not allow it: the innermost loop
        has stride 1 or 0 in every buffer, its size is a multiple of 4 (or it is the only
        loop: the n % 4 tail runs on block 0), the other strides of the stride-1 buffers are
        multiples of 4 (so every vector is 4-element aligned) and their elements have at
        most 4 bytes."""
        k, t = self.k, self.idx
        if not k.outer or n < 8:
            return None
        bufs = k.inputs + k.outputs
        last = len(k.outer) - 1
        wide = [b for b in bufs if b.strides[last] == 1]
        if not wide or any(b.strides[last] not in (0, 1) for b in bufs):
            return None
        if any(memtype(b.dtype) not in _VEC or any(s % 4 for s in b.strides[:last])
               for b in wide):
            return None
        if last and k.outer[last][1] % 4:
            return None
        func = self.name + "_v4"
        nv = n // 4
        lines = self.header(func, BLOCK)
        lines.append(f"  for ({t} v = ({t})blockIdx.x * {BLOCK} + threadIdx.x; v < {nv}; "
                     f"v += ({t})gridDim.x * {BLOCK}) {{")
        lines.append(f"    const {t} e = v * 4;")
        lines += self.decompose("e", k.outer, "    ")
        offs = {b.name: self.offset(b, 0, len(k.outer)) for b in bufs}
        for b in k.inputs:
            if b.strides[last] == 1:
                vt = _VEC[memtype(b.dtype)]
                lines.append(f"    const {vt} {b.name}_v = "
                             f"*reinterpret_cast<const {vt}*>({b.name} + {offs[b.name]});")
        for c in _LANES:
            def load(i, c=c):
                b = k.inputs[i]
                return f"{b.name}_v.{c}" if b.strides[last] == 1 else \
                    f"{b.name}[{offs[b.name]}]"

            lines += self.body(stmts, "    ", load, suffix=f"_{c}")
        for i, val in stores:
            o = k.outputs[i]
            vt = _VEC[memtype(o.dtype)]
            parts = ", ".join(f"({memtype(o.dtype)}){self.stored(i, val, f'_{c}')}"
                              for c in _LANES)
            lines.append(f"    *reinterpret_cast<{vt}*>({o.name} + {offs[o.name]}) = "
                         f"make_{vt}({parts});")
        lines.append("  }")
        tail = n - 4 * nv
        if tail:   # one loop only: the last n % 4 elements, one per thread of block 0
            lines.append(f"  if (blockIdx.x == 0 && threadIdx.x < {tail}) {{")
            lines.append(f"    const {t} i0 = {4 * nv} + threadIdx.x;")
            toffs = {b.name: ("i0" if b.strides[0] else "0") for b in bufs}
            lines += self.body(stmts, "    ",
                               lambda i: f"{k.inputs[i].name}[{toffs[k.inputs[i].name]}]")
            for i, val in stores:
                o = k.outputs[i]
                lines.append(f"    {o.name}[{toffs[o.name]}] = {self.stored(i, val)};")
            lines.append("  }")
        lines += ["}", ""]
        return "\n".join(lines), Launch(func, BLOCK, nv), tuple(b.name for b in wide)

    # ---- rows

    def rows(self, sched: str) -> CudaSource:
        k, t = self.k, self.idx
        rows, rn = k.outer_numel if k.outer else 1, _rnumel(k)
        block = BLOCK if sched == "thread_rows" else row_block(rn)
        per_thread = sched == "thread_rows"
        lines = self.comment() + self.header(self.name, block)
        lines.append("  __shared__ unsigned long long wk_sh[32];")
        if per_thread:
            lines.append(f"  for ({t} row = ({t})blockIdx.x * {block} + threadIdx.x; "
                         f"row < {rows}; row += ({t})gridDim.x * {block}) {{")
        else:
            lines.append(f"  for ({t} row = blockIdx.x; row < {rows}; row += gridDim.x) {{")
        lines += self.decompose("row", k.outer, "    ")
        lines += self.row_phases("    ", None if per_thread else block,
                                 "threadIdx.x" if not per_thread else "0",
                                 block if not per_thread else 1)
        lines += ["  }", "}", ""]
        launch = Launch(self.name, block, rows, per_block=block if per_thread else 1)
        return CudaSource(k, sched, "\n".join(lines), [launch], index_type=t,
                          notes=[f"{block} threads per {'block' if not per_thread else 'row'}"])

    def bases(self, ind: str) -> tuple:
        """Row base offset of each buffer (from the outer loop variables)."""
        k = self.k
        out, names = [], {}
        for b in k.inputs + k.outputs:
            off = self.offset(b, 0, self.nout)
            if off == "0":
                names[b.name] = None
            else:
                out.append(f"{ind}const {self.idx} {b.name}_row = {off};")
                names[b.name] = f"{b.name}_row"
        return out, names

    def row_phases(self, ind: str, block, start: str, step: int) -> list:
        """Every phase over the reduction loops (r from `start` by `step`), block reductions
        when `block`, then the epilogue (stored by thread 0 of the block)."""
        k, t = self.k, self.idx
        rn = _rnumel(k)
        lines, base = self.bases(ind)
        for a, (dt, _) in enumerate(k.accs):
            lines.append(f"{ind}{ctype(dt)} acc{a};")

        def ref(b, roff):
            parts = [p for p in (base[b.name], roff) if p and p != "0"]
            return f"{b.name}[{' + '.join(parts) or '0'}]"

        roffs = {b.name: self.offset(b, self.nout, len(k.rloops)) for b in k.inputs + k.outputs}
        for p, ph in enumerate(k.phases):
            lines.append(f"{ind}// phase {p}")
            for a, _, _ in ph.accs:
                lines.append(self.acc_init(a, ind))
            lines.append(f"{ind}for ({t} r = {start}; r < {rn}; r += {step}) {{")
            inner = ind + "  "
            lines += self.decompose("r", k.rloops, inner)
            lines += self.body(ph.body, inner, lambda i: ref(self.buf(i), roffs[self.buf(i).name]))
            for a, comb, v in ph.accs:
                new = self.combine(a, comb, f"acc{a}", self.value(v))
                lines.append(f"{inner}acc{a} = {new};")
            for i, val in ph.stores:
                o = k.outputs[i]
                lines.append(f"{inner}{ref(o, roffs[o.name])} = {self.stored(i, val)};")
            lines.append(f"{ind}}}")
            if block and ph.accs:
                lines += self.block_reduce(ph.accs, ind, block)
        if k.epilogue or k.epi_stores:
            lines.append(f"{ind}// epilogue (per row)")
            lines += self.body(k.epilogue, ind, lambda i: ref(k.inputs[i], "0"))
            guard = "if (threadIdx.x == 0) " if block else ""
            for i, val in k.epi_stores:
                o = k.outputs[i]
                lines.append(f"{ind}{guard}{ref(o, '0')} = {self.stored(i, val)};")
        return lines

    # ---- split (full) reductions

    def split(self) -> CudaSource:
        k, t = self.k, self.idx
        rn = _rnumel(k)
        block = BLOCK
        grid = min(-(-rn // block), SPLIT_PARTS)
        slot = 8 * (grid + 1)          # per acc: grid partials, then the final value
        launches, chunks = [], []
        offs = {b.name: self.offset(b, self.nout, len(k.rloops)) for b in k.inputs + k.outputs}

        def load(i):
            return f"{self.buf(i).name}[{offs[self.buf(i).name]}]"

        for p, ph in enumerate(k.phases):
            last = p == len(k.phases) - 1
            done = [a for q in k.phases[:p] for a, _, _ in q.accs]
            # first pass: grid-stride over the row, per-block partials
            func = f"{self.name}_p{p}"
            lines = self.header(func, block, scratch=True)
            lines.append("  __shared__ unsigned long long wk_sh[32];")
            lines += self.load_finals(done, "  ", slot, grid)
            for a, _, _ in ph.accs:
                lines.append(f"  {ctype(k.accs[a][0])} acc{a};")
                lines.append(self.acc_init(a, "  "))
            lines.append(f"  for ({t} r = ({t})blockIdx.x * {block} + threadIdx.x; r < {rn}; "
                         f"r += ({t})gridDim.x * {block}) {{")
            lines += self.decompose("r", k.rloops, "    ")
            lines += self.body(ph.body, "    ", load)
            for a, comb, v in ph.accs:
                new = self.combine(a, comb, f"acc{a}", self.value(v))
                lines.append(f"    acc{a} = {new};")
            for i, val in ph.stores:
                o = k.outputs[i]
                lines.append(f"    {o.name}[{offs[o.name]}] = {self.stored(i, val)};")
            lines.append("  }")
            lines += self.block_reduce(ph.accs, "  ", block)
            for a, _, _ in ph.accs:
                lines.append(f"  if (threadIdx.x == 0) (({ctype(k.accs[a][0])}*)(scratch + "
                             f"{a * slot}))[blockIdx.x] = acc{a};")
            lines += ["}", ""]
            chunks.append("\n".join(lines))
            launches.append(Launch(func, block, rn, grid))
            if not ph.accs and not last:
                continue
            # second pass: one block combines the partials (and runs the epilogue)
            func = f"{self.name}_f{p}"
            lines = self.header(func, block, scratch=True)
            lines.append("  __shared__ unsigned long long wk_sh[32];")
            lines += self.load_finals(done, "  ", slot, grid)
            for a, comb, _ in ph.accs:
                ct = ctype(k.accs[a][0])
                part = f"(({ct}*)(scratch + {a * slot}))[j]"
                lines.append(f"  {ct} acc{a};")
                lines.append(self.acc_init(a, "  "))
                lines.append(f"  for (int j = threadIdx.x; j < {grid}; j += {block}) "
                             f"acc{a} = {self.combine(a, comb, f'acc{a}', part)};")
            lines += self.block_reduce(ph.accs, "  ", block)
            for a, _, _ in ph.accs:
                lines.append(f"  if (threadIdx.x == 0) (({ctype(k.accs[a][0])}*)(scratch + "
                             f"{a * slot}))[{grid}] = acc{a};")
            if last and (k.epilogue or k.epi_stores):
                lines.append("  // epilogue")
                lines += self.body(k.epilogue, "  ", lambda i: f"{k.inputs[i].name}[0]")
                for i, val in k.epi_stores:
                    o = k.outputs[i]
                    lines.append(f"  if (threadIdx.x == 0) {o.name}[0] = {self.stored(i, val)};")
            lines += ["}", ""]
            chunks.append("\n".join(lines))
            launches.append(Launch(func, block, 1, 1))
        source = "\n".join(self.comment()) + "\n" + "\n".join(chunks)
        return CudaSource(k, "split", source, launches, scratch_bytes=slot * max(len(k.accs), 1),
                          index_type=t, notes=[f"{grid} partial blocks"])

    def load_finals(self, accs, ind, slot, grid) -> list:
        out = []
        for a in accs:
            ct = ctype(self.k.accs[a][0])
            out.append(f"{ind}const {ct} acc{a} = (({ct}*)(scratch + {a * slot}))[{grid}];")
        return out


__all__ = ["BLOCK", "ERR", "CudaSource", "Launch", "c_name", "checked_division", "checks_div",
           "index_type", "module_source", "render", "row_block", "schedule"]
