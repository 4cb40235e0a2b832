"""A `Kernel` printed as one LLVM function: loops, strided loads, phases, reductions, stores.

`render_kernel(kernel, symbol)` prints `void symbol(ptr noalias in0, ..., ptr noalias out0,
..., i64 lo, i64 hi)`: the outermost parallel loop runs over [lo, hi) (the thread pool splits
it; with no parallel loop the body runs once when lo < hi), the other sizes and every stride
are constants, so the innermost stride-1 loop is left to LLVM's loop vectorizer. Reduction
accumulators live in allocas (promoted to registers by SROA) and their updates carry the
`reassoc` fast-math flag, the one flag that lets a float reduction vectorize; nothing else
gets fast-math flags. A float16 accumulator is kept in float32 (as numpy's half reductions)
and rounded to half where it is read. With `kernel.sum_block`, float sums run the innermost
reduction loop in chunks and push each block's sum into a binary counter of partial sums
(pairwise summation of blocks, see `schedule.cascaded`). An output read back by a later phase
(`load_out`) is still `noalias` (no other argument aliases it; it is never marked write-only).
With `kernel.col_block` (a reduction over a strided dimension) the loops are interchanged:
per tile of the innermost parallel loop, stack arrays hold one accumulator per column, the
reduction loops run outside and the tile's contiguous columns inside (`col_tiles`).
All decisions were made on the Kernel; this module only prints. Imports only `ir` and
llvmlite.
"""

from __future__ import annotations

from llvmlite import ir as ll

from ir import dtypes as D

from .kernel import Const, Kernel, Var
from .llvm import I8, I64, PTR, VOID, LLVMBuilder, constant, lltype, memtype
from .schedule import SUM_BLOCK, cascaded

_REASSOC = ("reassoc",)
_LEVELS = 64


def render_kernel(kernel: Kernel, symbol: str) -> str:
    """LLVM IR text of `kernel` as function `symbol` (see the module docstring)."""
    module = ll.Module(name="wick")  # neutral: the IR hash must not depend on the name
    bufs = kernel.inputs + kernel.outputs
    extra = [PTR] if kernel.checks_div else []
    fn = ll.Function(module, ll.FunctionType(VOID, [PTR] * len(bufs) + extra + [I64, I64]),
                     symbol)
    for arg, buf in zip(fn.args, bufs):
        arg.name = buf.name
        arg.add_attribute("noalias")
    lo, hi = fn.args[-2], fn.args[-1]
    lo.name, hi.name = "lo", "hi"
    fn.attributes.add("nounwind")
    entry = fn.append_basic_block("entry")
    b = ll.IRBuilder(entry)
    r = _Renderer(kernel, b, fn, bufs)
    allocas = [b.alloca(lltype(_acc_dtype(dt)), name=f"acc{i}")
               for i, (dt, _) in enumerate(kernel.accs)]
    r.allocas = allocas
    if len(kernel.rloops) > 1 and (not kernel.col_block or kernel.col_inner):   # `row_loop`
        r.rows = [b.alloca(lltype(_acc_dtype(dt)), name=f"row{i}")
                  for i, (dt, _) in enumerate(kernel.accs)]
    if kernel.sum_block:   # blocked float sums: a binary counter of partial sums per acc
        r.stacks = {a: b.alloca(ll.ArrayType(lltype(_acc_dtype(dt)), _LEVELS), name=f"levels{a}")
                    for a, (dt, _) in enumerate(kernel.accs) if cascaded(kernel, a)}
        r.nblk = b.alloca(I64, name="nblocks")
        r.cnt = b.alloca(I64, name="inblock")
    if kernel.checks_div:
        r.sb.err = b.alloca(ll.IntType(1), name="divzero")
        b.store(ll.Constant(ll.IntType(1), 0), r.sb.err)
    if kernel.numel == 0 and not kernel.accs:
        b.ret_void()
        return str(module)
    zero = ll.Constant(I64, 0)
    offsets = [zero] * len(bufs)
    if kernel.col_block:
        r.col_setup()
        if len(kernel.outer) > 1:
            r.loop_nest(kernel.outer[:-1], 0, offsets, r.col_tiles, lo=lo, hi=hi)
        else:
            r.col_tiles(offsets, lo, hi)
    elif kernel.outer:
        r.loop_nest(kernel.outer, 0, offsets, r.phases, lo=lo, hi=hi)
    else:
        # no parallel loop: the body runs once when the range is not empty
        body = fn.append_basic_block("once")
        done = fn.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", lo, hi), body, done)
        b.position_at_end(body)
        r.phases(offsets)
        b.branch(done)
        b.position_at_end(done)
    if kernel.checks_div:   # report a division by zero through the flag argument
        flag, ret = fn.append_basic_block("divzero"), fn.append_basic_block("ret")
        b.cbranch(b.load(r.sb.err, typ=ll.IntType(1)), flag, ret)
        b.position_at_end(flag)
        b.store(ll.Constant(I8, 1), fn.args[len(bufs)])
        b.branch(ret)
        b.position_at_end(ret)
    b.ret_void()
    return str(module)


def _acc_dtype(dt):
    """The dtype an accumulator of dtype `dt` is kept in: float32 for float16 (numpy's half
    reductions accumulate in float; LLVM would lower half arithmetic to runtime calls on CPUs
    without F16C)."""
    return D.float32 if dt in D.HALF else dt


class _Renderer:
    def __init__(self, kernel: Kernel, b: ll.IRBuilder, fn, bufs):
        self.k = kernel
        self.b = b
        self.fn = fn
        self.bufs = bufs
        self.args = fn.args
        self.sb = LLVMBuilder(b)
        self.allocas: list = []
        self.rows: list = []      # per acc: the accumulator of one run of the innermost loop
        self.in_row = False       # the body updates `rows` instead of `allocas`
        self.stacks: dict = {}
        self.nout = len(kernel.outer)
        self._blocks = 0
        self.ivars: dict = {}
        self.col = None      # column mode: {acc: (update array, final array, dtype)}
        self.jj = None       # column mode: index in the tile

    def _store_dt(self, a, final=True):
        """The dtype accumulator `a` is kept in: updated in the loop (final=False; a row
        accumulator while `in_row`) or read (True)."""
        if self.col and not (self.in_row and not final):
            return self.col[a][2]
        return _acc_dtype(self.k.accs[a][0])

    def _acc_ptr(self, a, final):
        """Where accumulator `a` lives: updated in the loop (final=False) or read (True)."""
        if self.in_row and not final:
            return self.rows[a]
        if not self.col:
            return self.allocas[a]
        arr = self.col[a][1 if final else 0]
        return self.b.gep(arr, [ll.Constant(I64, 0), self.jj], inbounds=True)

    def _block(self, name):
        self._blocks += 1
        return self.fn.append_basic_block(f"{name}{self._blocks}")

    def loop_nest(self, loops, depth0, offsets, inner, lo=None, hi=None):
        """Top-tested loops over `loops` (strides from position depth0); calls inner(offsets)."""
        b = self.b
        if not loops:
            inner(offsets)
            return
        (var, size), rest = loops[0], loops[1:]
        depth = depth0
        start = lo if lo is not None else ll.Constant(I64, 0)
        stop = hi if hi is not None else ll.Constant(I64, size)
        pre = b.block
        header, body, after = self._block(f"{var}_head"), self._block(f"{var}_body"), \
            self._block(f"{var}_end")
        b.branch(header)
        b.position_at_end(header)
        i = b.phi(I64, name=var)
        i.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", i, stop), body, after)
        b.position_at_end(body)
        self.ivars[var] = i
        new = []
        for off, buf in zip(offsets, self.bufs):
            s = buf.strides[depth]
            if s == 0:
                new.append(off)
                continue
            step = i if s == 1 else b.mul(i, ll.Constant(I64, s), flags=("nsw",))
            new.append(step if isinstance(off, ll.Constant) and off.constant == 0
                       else b.add(off, step, flags=("nsw",)))
        self.loop_nest(rest, depth0 + 1, new, inner)
        nxt = b.add(i, ll.Constant(I64, 1), name=f"{var}_next", flags=("nuw", "nsw"))
        i.add_incoming(nxt, b.block)
        b.branch(header)
        b.position_at_end(after)

    def phases(self, offsets):
        """Per outer index: each phase's reduction loop, then the epilogue."""
        k, b = self.k, self.b
        for ph in k.phases:
            for a, _, _ in ph.accs:
                dt, ident = k.accs[a]
                b.store(constant(ident, _acc_dtype(dt)), self.allocas[a])
            casc = [a for a, _, _ in ph.accs if a in self.stacks]
            if k.rloops and casc:
                self.blocked_loops(ph, casc, offsets)
            elif k.rloops:
                self.loop_nest(k.rloops[:-1], self.nout, offsets,
                               lambda offs, ph=ph: self.row_loop(ph, offs))
            else:
                self.body(ph.body, ph.accs, ph.stores, offsets)
        self.body(k.epilogue, [], k.epi_stores, offsets)

    def row_loop(self, ph, offsets, lo=None, hi=None):
        """The innermost reduction loop of phase `ph` (over [lo, hi) when given). Nested in
        other reduction loops (`rows`: NCHW batch norm's per-channel sums run 64-element rows
        2048 apart), each run accumulates from the identity into a row accumulator that is
        combined into the phase's accumulator after the run: the vectorized run's
        horizontal reduction then no longer sits on the loop-carried chain from one run to
        the next (it starts from the identity), so runs overlap (with `interleave_block`, the
        CNN benchmark's batch-norm kernels: 69 -> 37 us and 35 -> 19 us). Combining partials
        only reassociates the reduction, as the vectorizer does."""
        k, b = self.k, self.b
        (var, n), depth = k.rloops[-1], self.nout + len(k.rloops) - 1
        rows = self.rows and ph.accs
        self.in_row = bool(rows)
        for a, _, _ in ph.accs if rows else ():
            b.store(constant(k.accs[a][1], self._store_dt(a, False)), self.rows[a])
        self.loop_nest([(var, n)], depth, offsets,
                       lambda offs: self.body(ph.body, ph.accs, ph.stores, offs), lo=lo, hi=hi)
        self.in_row = False
        for a, comb, _ in ph.accs if rows else ():
            rdt = _acc_dtype(k.accs[a][0])
            x = b.load(self.rows[a], typ=lltype(rdt))
            dt, ptr = self._store_dt(a), self._acc_ptr(a, False)
            if dt is not rdt:   # a column total kept wider (`col_setup`)
                x = self.sb.cast(x, rdt, dt)
            b.store(self._combine(a, comb, b.load(ptr, typ=lltype(dt)), x), ptr)

    def _combine(self, a, comb, cur, x):
        """acc `a`'s combine primitive on (cur, x), both in its dtype where it is updated now;
        float sums and products carry `reassoc` (the flag that lets them vectorize)."""
        dt = self._store_dt(a, False)
        if dt.is_floating_point and comb in ("add", "mul"):
            return (self.b.fadd if comb == "add" else self.b.fmul)(cur, x, flags=_REASSOC)
        return self.sb.emit(comb, dt, dt, [cur, x], {})

    def blocked_loops(self, ph, casc, offsets):
        """The reduction loops of phase `ph` with the float sums `casc` blocked (see
        `schedule.cascaded`): the innermost loop runs in chunks of at most `sum_block`; after a
        chunk, once `sum_block` elements are in the accumulators, each goes to its counter."""
        k, b = self.k, self.b
        blk = k.sum_block
        zero = ll.Constant(I64, 0)
        b.store(zero, self.nblk)
        b.store(zero, self.cnt)
        n = k.rloops[-1][1]

        def last(offs):
            if n <= blk:
                self.row_loop(ph, offs)
                self.block_end(casc, ll.Constant(I64, n))
                return
            pre = b.block
            head, body, end = self._block("chunk_head"), self._block("chunk_body"), \
                self._block("chunk_end")
            b.branch(head)
            b.position_at_end(head)
            c = b.phi(I64, name="chunk")
            c.add_incoming(zero, pre)
            b.cbranch(b.icmp_signed("<", c, ll.Constant(I64, n)), body, end)
            b.position_at_end(body)
            stop = b.add(c, ll.Constant(I64, blk), flags=("nsw",))
            stop = b.select(b.icmp_signed("<", stop, ll.Constant(I64, n)), stop,
                            ll.Constant(I64, n))
            self.row_loop(ph, offs, lo=c, hi=stop)
            self.block_end(casc, b.sub(stop, c))
            c.add_incoming(stop, b.block)
            b.branch(head)
            b.position_at_end(end)

        self.loop_nest(k.rloops[:-1], self.nout, offsets, last)
        # total = open block + the counter's levels, lowest first
        nblk = b.load(self.nblk, typ=I64)
        pre = b.block
        head, body, end = self._block("levels_head"), self._block("levels_body"), \
            self._block("levels_end")
        b.branch(head)
        b.position_at_end(head)
        lvl, m = b.phi(I64), b.phi(I64)
        lvl.add_incoming(zero, pre)
        m.add_incoming(nblk, pre)
        b.cbranch(b.icmp_unsigned("!=", m, zero), body, end)
        b.position_at_end(body)
        take = b.trunc(b.and_(m, ll.Constant(I64, 1)), ll.IntType(1))
        for a in casc:
            dt = lltype(_acc_dtype(k.accs[a][0]))
            cur = b.load(self.allocas[a], typ=dt)
            part = b.load(self._level(a, lvl), typ=dt)
            b.store(b.select(take, b.fadd(cur, part), cur), self.allocas[a])
        lvl.add_incoming(b.add(lvl, ll.Constant(I64, 1)), b.block)
        m.add_incoming(b.lshr(m, ll.Constant(I64, 1)), b.block)
        b.branch(head)
        b.position_at_end(end)

    def _level(self, a, lvl):
        return self.b.gep(self.stacks[a], [ll.Constant(I64, 0), lvl], inbounds=True)

    def block_end(self, casc, count):
        """`count` more elements are in the accumulators `casc`: when a block is full, push
        each one's value into its binary counter (merging equal levels) and restart it."""
        k, b = self.k, self.b
        zero, one = ll.Constant(I64, 0), ll.Constant(I64, 1)
        cnt = b.add(b.load(self.cnt, typ=I64), count, flags=("nsw",))
        b.store(cnt, self.cnt)
        push, done = self._block("push"), self._block("pushed")
        b.cbranch(b.icmp_signed(">=", cnt, ll.Constant(I64, k.sum_block)), push, done)
        b.position_at_end(push)
        b.store(zero, self.cnt)
        nblk = b.load(self.nblk, typ=I64)
        b.store(b.add(nblk, one), self.nblk)
        carries = []
        for a in casc:
            dt, ident = k.accs[a]
            dt = _acc_dtype(dt)
            carries.append(b.load(self.allocas[a], typ=lltype(dt)))
            b.store(constant(ident, dt), self.allocas[a])
        pre = b.block
        head, merge, put = self._block("carry_head"), self._block("carry"), self._block("put")
        b.branch(head)
        b.position_at_end(head)
        lvl, m = b.phi(I64), b.phi(I64)
        lvl.add_incoming(zero, pre)
        m.add_incoming(nblk, pre)
        phis = []
        for a, c in zip(casc, carries):
            p = b.phi(c.type)
            p.add_incoming(c, pre)
            phis.append(p)
        b.cbranch(b.trunc(b.and_(m, one), ll.IntType(1)), merge, put)
        b.position_at_end(merge)   # level lvl is occupied: carry its sum one level up
        for a, p in zip(casc, phis):
            p.add_incoming(b.fadd(b.load(self._level(a, lvl), typ=p.type), p), merge)
        lvl.add_incoming(b.add(lvl, one), merge)
        m.add_incoming(b.lshr(m, one), merge)
        b.branch(head)
        b.position_at_end(put)
        for a, p in zip(casc, phis):
            b.store(p, self._level(a, lvl))
        b.branch(done)
        b.position_at_end(done)

    def body(self, stmts, accs, stores, offsets):
        k, b, sb = self.k, self.b, self.sb
        env: dict = {}
        nin = len(k.inputs)

        def value(a):
            if isinstance(a, Var):
                return env[a]
            if isinstance(a, Const):
                return constant(a.value, a.dtype)
            return a

        for st in stmts:
            if st.op == "load":
                i = st.attrs["input"]
                dt = k.inputs[i].dtype
                ptr = b.gep(self.args[i], [offsets[i]], inbounds=True,
                            source_etype=memtype(dt))
                v = b.load(ptr, typ=memtype(dt))
                env[st.out] = b.icmp_unsigned("!=", v, ll.Constant(I8, 0)) \
                    if dt is D.bool_ else v
                continue
            if st.op == "load_out":   # a value an earlier phase stored (same offsets)
                i = st.attrs["output"]
                j = nin + i
                dt = k.outputs[i].dtype
                ptr = b.gep(self.args[j], [offsets[j]], inbounds=True,
                            source_etype=memtype(dt))
                v = b.load(ptr, typ=memtype(dt))
                env[st.out] = b.icmp_unsigned("!=", v, ll.Constant(I8, 0)) \
                    if dt is D.bool_ else v
                continue
            if st.op == "acc":
                a = st.attrs["acc"]
                dt, sdt = k.accs[a][0], self._store_dt(a, True)
                v = b.load(self._acc_ptr(a, True), typ=lltype(sdt))
                env[st.out] = sb.cast(v, sdt, dt) if sdt is not dt else v
                continue
            dts = [x.dtype for x in st.args if isinstance(x, (Var, Const))]
            in_dt = dts[1] if st.op == "where" else (dts[0] if dts else st.out.dtype)
            env[st.out] = sb.emit(st.op, st.out.dtype, in_dt, [value(x) for x in st.args],
                                  st.attrs)

        for a, comb, v in accs:
            dt, sdt = k.accs[a][0], self._store_dt(a, False)
            x = value(v)
            if sdt is not dt:   # float16 in float32 (as numpy's half loops); wide column sums
                dt, x = sdt, sb.cast(x, dt, sdt)
            ptr = self._acc_ptr(a, False)
            cur = b.load(ptr, typ=lltype(dt))
            b.store(self._combine(a, comb, cur, x), ptr)

        for i, val in stores:
            buf = k.outputs[i]
            v = value(val)
            if isinstance(val, (Var, Const)) and val.dtype is not buf.dtype:
                v = sb.cast(v, val.dtype, buf.dtype)
            if buf.dtype is D.bool_:
                v = b.zext(v, I8)
            j = nin + i
            ptr = b.gep(self.args[j], [offsets[j]], inbounds=True,
                        source_etype=memtype(buf.dtype))
            b.store(v, ptr)

    # ------------------------------------------------------------ column reductions

    def col_setup(self):
        """Stack arrays of `col_block` accumulators per acc (see `schedule.column_block`);
        chunked float sums get a second array for their total."""
        k, b = self.k, self.b
        self.col = {}
        for a, (dt, _) in enumerate(k.accs):
            wide = cascaded(k, a)
            sdt = D.float64 if wide else _acc_dtype(dt)
            ty = ll.ArrayType(lltype(sdt), k.col_block)
            upd = b.alloca(ty, name=f"cacc{a}")
            tot = b.alloca(ty, name=f"ctot{a}") if wide and self._chunk() else upd
            self.col[a] = (upd, tot, sdt)

    def _chunk(self):
        """Rows of the outermost reduction loop per chunk of a chunked float sum, or 0."""
        k = self.k
        if k.col_inner:   # the float32 sums of short rows go into float64 totals: exact enough
            return 0
        rest = 1
        for _, n in k.rloops[1:]:
            rest *= n
        if rest * k.rloops[0][1] <= SUM_BLOCK:
            return 0
        return max(1, SUM_BLOCK // rest)

    def _range(self, start, stop, step, fn):
        """for (c = start; c < stop; c += step) fn(c, min(c + step, stop))."""
        b = self.b
        pre = b.block
        head, body, end = self._block("rng_head"), self._block("rng_body"), \
            self._block("rng_end")
        b.branch(head)
        b.position_at_end(head)
        c = b.phi(I64)
        c.add_incoming(start, pre)
        b.cbranch(b.icmp_signed("<", c, stop), body, end)
        b.position_at_end(body)
        nxt = b.add(c, ll.Constant(I64, step), flags=("nsw",))
        nxt = b.select(b.icmp_signed("<", nxt, stop), nxt, stop)
        fn(c, nxt)
        c.add_incoming(nxt, b.block)
        b.branch(head)
        b.position_at_end(end)

    def _tile(self, offsets, fn):
        """Loop over the tile's columns [t0, t1): fn(offsets) with `self.jj` = j - t0."""
        var, n = self.k.outer[-1]

        def inner(offs):
            self.jj = self.b.sub(self.ivars[var], self.t0)
            fn(offs)

        self.loop_nest([(var, n)], self.nout - 1, offsets, inner, lo=self.t0, hi=self.t1)

    def col_tiles(self, offsets, lo=None, hi=None):
        """The interchanged loops over the innermost parallel loop in tiles of `col_block`."""
        k = self.k
        n = k.outer[-1][1]
        start = lo if lo is not None else ll.Constant(I64, 0)
        stop = hi if hi is not None else ll.Constant(I64, n)

        def tile(t0, t1):
            self.t0, self.t1 = t0, t1
            for ph in k.phases:
                self.col_phase(ph, offsets)
            self._tile(offsets, lambda offs: self.body(k.epilogue, [], k.epi_stores, offs))

        self._range(start, stop, k.col_block, tile)

    def _fill(self, accs, offsets, final):
        """Set the accumulators `accs` of every column of the tile to their identity."""
        k, b = self.k, self.b

        def fill(offs):
            for a in accs:
                b.store(constant(k.accs[a][1], self.col[a][2]), self._acc_ptr(a, final))

        self._tile(offsets, fill)

    def col_phase(self, ph, offsets):
        """One phase: reduction loops outside, the tile's columns inside (with
        `col_inner`, each column's run of the innermost reduction loop inside them)."""
        k, b = self.k, self.b
        mine = [a for a, _, _ in ph.accs]
        self._fill(mine, offsets, False)
        if k.col_inner:
            self.loop_nest(k.rloops[:-1], self.nout, offsets,
                           lambda offs: self._tile(offs, lambda o: self.row_loop(ph, o)))
            return
        casc = [a for a in mine if self.col[a][0] is not self.col[a][1]]

        def inner(offs):
            self._tile(offs, lambda o: self.body(ph.body, ph.accs, ph.stores, o))

        if not casc:
            self.loop_nest(k.rloops, self.nout, offsets, inner)
            return
        self._fill(casc, offsets, True)
        (var, n), depth = k.rloops[0], self.nout

        def flush(offs):
            for a in casc:
                ty = lltype(self.col[a][2])
                p, t = self._acc_ptr(a, False), self._acc_ptr(a, True)
                b.store(b.fadd(b.load(t, typ=ty), b.load(p, typ=ty)), t)
                b.store(constant(0, self.col[a][2]), p)

        def chunk(c0, c1):
            self.loop_nest([(var, n)], depth, offsets,
                           lambda offs: self.loop_nest(k.rloops[1:], depth + 1, offs, inner),
                           lo=c0, hi=c1)
            self._tile(offsets, flush)

        self._range(ll.Constant(I64, 0), ll.Constant(I64, n), self._chunk(), chunk)
