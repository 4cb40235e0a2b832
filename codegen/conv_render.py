"""LLVM IR of direct 2-D convolution kernels on channels-last float32 arrays (a template, as
Inductor's and oneDNN's register-blocked convolutions): no im2col matrix, no BLAS.

`render_conv(symbol, geo)`: y = the convolution of a padded channels-last xh (N, Hp, Wp, C)
with a weight packed as (KH, KW, C, O), stored (N, OH, OW, O), or (N, O, OH, OW) with
`geo.nchw` (each tile transposed in registers first). One task is one batch sample's block
of R output rows; per task, tiles of R rows x JB pixels x VB vectors of 16 output channels
are accumulated in registers (R * JB * VB <= 24 vectors: the register file of AVX-512 holds
32) over the kernel offsets and input channels: per (offset, channel) VB weight vectors are
loaded and each pixel's input broadcast and fused-multiply-added, then the tile is stored.
On a 2-core Zen 5 the small CNN's 16 -> 32 channel 3x3 convolution of 64 8x8 images runs at
240-270 GFLOP/s on one thread, about the FMA peak (numpy's BLAS on the AVX2 kernels this
environment forces: ~110, plus the im2col copy).

`render_weight_grad(symbol, geo)`: dw (KH * KW, C, O) = sum over samples and output pixels of
g (channels-last, read at an offset inside a padded copy) times the input windows. One task
is one (kernel offset, block of CB input channels, block of VB output vectors); PJ pixels of
a row are unrolled with their own accumulators (CB * VB * PJ <= 24), summed at the end.

Kernels take `(ptr in, ptr w_or_g, ptr out, i64 lo, i64 hi)` and run tasks [lo, hi), the
JIT's calling convention (`jit.compile_function`). Vectors are <16 x float>: LLVM splits
them on CPUs without AVX-512 (correct, not the point). Imports nothing of ours.
"""

from __future__ import annotations

from dataclasses import dataclass

_FMA = "declare <16 x float> @llvm.fma.v16f32(<16 x float>, <16 x float>, <16 x float>)"
_ACC = 24   # accumulator vectors per tile


@dataclass(frozen=True)
class ConvGeometry:
    """Sizes of a direct convolution (all Python ints; `R` rows per task, `JB` pixels and
    `VB` output vectors per tile; `CB`, `PJ` for the weight gradient)."""

    Hp: int
    Wp: int
    C: int
    O: int
    KH: int
    KW: int
    OH: int
    OW: int
    sh: int = 1
    sw: int = 1
    dh: int = 1
    dw: int = 1
    N: int = 1
    GH: int = 0    # weight gradient: g's padded extents and the offset of its data in them
    GW: int = 0
    pg: int = 0
    nchw: bool = False   # render_conv: store y channels first (N, O, OH, OW)

    @property
    def V(self) -> int:
        return self.O // 16

    def blocking(self) -> tuple:
        """(R, JB, VB) for `render_conv`: as many accumulators as fit, R dividing OH."""
        vb = min(self.V, 4)
        jb = max(1, min(self.OW, _ACC // vb))
        r = max(d for d in range(1, self.OH + 1) if self.OH % d == 0 and d * jb * vb <= _ACC)
        return r, jb, vb

    def wgrad_blocking(self) -> tuple:
        """(CB, VB, PJ) for `render_weight_grad`: CB dividing C, PJ dividing OW."""
        vb = 2 if self.V % 2 == 0 else 1
        cb = max(d for d in range(1, self.C + 1) if self.C % d == 0 and d * vb <= 16
                 or d == 1)
        pj = max(d for d in range(1, min(self.OW, 8) + 1)
                 if self.OW % d == 0 and cb * vb * d <= _ACC)
        return cb, vb, pj


def _bcast(out: list, name: str, ptr: str, off: str) -> None:
    out += [f"  %{name}_p = getelementptr float, ptr {ptr}, i64 {off}",
            f"  %{name}_s = load float, ptr %{name}_p, align 4",
            f"  %{name}_i = insertelement <16 x float> poison, float %{name}_s, i64 0",
            (f"  %{name} = shufflevector <16 x float> %{name}_i, <16 x float> poison, "
             "<16 x i32> zeroinitializer")]


def _vload(out: list, name: str, ptr: str, off: str) -> None:
    out += [f"  %{name}_p = getelementptr float, ptr {ptr}, i64 {off}",
            f"  %{name} = load <16 x float>, ptr %{name}_p, align 4"]


def _tile(out: list, t: str, g: ConvGeometry, rows: int, j0: int, jb: int, v0: int, vb: int,
          prev: str, nxt: str) -> None:
    """One tile of `render_conv`: blocks `{t}q` (kernel offsets), `{t}c` (channels) and
    `{t}s` (stores), entered from block `prev`, leaving to `nxt`."""
    accs = [(r, j, v) for r in range(rows) for j in range(jb) for v in range(vb)]
    out += [f"  br label %{t}q", f"{t}q:",
            f"  %{t}qi = phi i64 [0, %{prev}], [%{t}qi1, %{t}cq]"]
    out += [f"  %{t}a{r}_{j}_{v} = phi <16 x float> [zeroinitializer, %{prev}], "
            f"[%{t}b{r}_{j}_{v}, %{t}cq]" for r, j, v in accs]
    out += [f"  %{t}kh = udiv i64 %{t}qi, {g.KW}", f"  %{t}kw = urem i64 %{t}qi, {g.KW}",
            f"  %{t}h0 = mul i64 %{t}kh, {g.dh}", f"  %{t}h = add i64 %hbase, %{t}h0",
            f"  %{t}w0 = mul i64 %{t}kw, {g.dw}", f"  %{t}x0 = mul i64 %{t}h, {g.Wp}",
            f"  %{t}x1 = add i64 %{t}x0, %{t}w0", f"  %{t}xq = mul i64 %{t}x1, {g.C}",
            f"  %{t}wq = mul i64 %{t}qi, {g.C * g.O}", f"  br label %{t}c", f"{t}c:",
            f"  %{t}ci = phi i64 [0, %{t}q], [%{t}ci1, %{t}c]"]
    out += [f"  %{t}b{r}_{j}_{v}_in = phi <16 x float> [%{t}a{r}_{j}_{v}, %{t}q], "
            f"[%{t}b{r}_{j}_{v}, %{t}c]" for r, j, v in accs]
    out += [f"  %{t}wc0 = mul i64 %{t}ci, {g.O}", f"  %{t}wc = add i64 %{t}wq, %{t}wc0",
            f"  %{t}xc = add i64 %{t}xq, %{t}ci"]
    for v in range(vb):
        out.append(f"  %{t}wo{v} = add i64 %{t}wc, {16 * (v0 + v)}")
        _vload(out, f"{t}wv{v}", "%w", f"%{t}wo{v}")
    for r in range(rows):
        for j in range(jb):
            out.append(f"  %{t}xo{r}_{j} = add i64 %{t}xc, "
                       f"{(r * g.sh * g.Wp + (j0 + j) * g.sw) * g.C}")
            _bcast(out, f"{t}x{r}_{j}", "%x", f"%{t}xo{r}_{j}")
            out += [f"  %{t}b{r}_{j}_{v} = call <16 x float> @llvm.fma.v16f32(<16 x float> "
                    f"%{t}x{r}_{j}, <16 x float> %{t}wv{v}, <16 x float> %{t}b{r}_{j}_{v}_in)"
                    for v in range(vb)]
    out += [f"  %{t}ci1 = add i64 %{t}ci, 1", f"  %{t}ce = icmp eq i64 %{t}ci1, {g.C}",
            f"  %{t}qi1 = add i64 %{t}qi, 1",
            f"  %{t}qe = icmp eq i64 %{t}qi1, {g.KH * g.KW}",
            f"  br i1 %{t}ce, label %{t}cq, label %{t}c", f"{t}cq:",
            f"  br i1 %{t}qe, label %{t}s, label %{t}q", f"{t}s:"]
    if g.nchw:
        for r in range(rows):
            for v in range(vb):
                _store_first(out, f"{t}T{r}_{v}", g, [f"%{t}b{r}_{j}_{v}" for j in range(jb)],
                             r, j0, 16 * (v0 + v))
    else:
        for r, j, v in accs:
            out.append(f"  %{t}yo{r}_{j}_{v} = add i64 %ybase, "
                       f"{(r * g.OW + j0 + j) * g.O + 16 * (v0 + v)}")
            out += [f"  %{t}yp{r}_{j}_{v} = getelementptr float, ptr %y, i64 %{t}yo{r}_{j}_{v}",
                    f"  store <16 x float> %{t}b{r}_{j}_{v}, ptr %{t}yp{r}_{j}_{v}, align 4"]
    out.append(f"  br label %{nxt}")


def _store_first(out: list, t: str, g: ConvGeometry, accs: list, r: int, j0: int,
                 o0: int) -> None:
    """Store the accumulators of pixels j0.. of row r (16 channels from o0 each) into a
    channels-first y (N, O, OH, OW): transposed in registers (one wide vector, then one
    <jb x float> per channel, shuffles LLVM lowers to permutes), a run of jb per channel."""
    jb, width = len(accs), 16 * len(accs)
    cur = f"%{t}c0"
    out.append(f"  {cur} = shufflevector <16 x float> {accs[0]}, <16 x float> poison, "
               f"<{width} x i32> <" + _mask(list(range(16)) + [None] * (width - 16)) + ">")
    for j in range(1, jb):
        wide = f"%{t}w{j}"
        out.append(f"  {wide} = shufflevector <16 x float> {accs[j]}, <16 x float> poison, "
                   f"<{width} x i32> <" + _mask([None] * (16 * j) + list(range(16))
                                               + [None] * (width - 16 * j - 16)) + ">")
        keep = list(range(16 * j)) + [width + 16 * j + m for m in range(16)]
        out.append(f"  %{t}c{j} = shufflevector <{width} x float> {cur}, <{width} x float> "
                   f"{wide}, <{width} x i32> <" + _mask(keep + [None] * (width - len(keep)))
                   + ">")
        cur = f"%{t}c{j}"
    plane = g.OH * g.OW
    for o in range(16):
        out += [f"  %{t}o{o} = shufflevector <{width} x float> {cur}, <{width} x float> "
                f"poison, <{jb} x i32> <" + _mask([j * 16 + o for j in range(jb)]) + ">",
                f"  %{t}a{o} = add i64 %ycf, {(o0 + o) * plane + r * g.OW + j0}",
                f"  %{t}p{o} = getelementptr float, ptr %y, i64 %{t}a{o}",
                f"  store <{jb} x float> %{t}o{o}, ptr %{t}p{o}, align 4"]


def _mask(lanes: list) -> str:
    return ", ".join("i32 poison" if v is None else f"i32 {v}" for v in lanes)


def render_conv(symbol: str, g: ConvGeometry) -> str:
    """The forward kernel (see the module docstring); tasks: N * OH / R."""
    rows, jb, vb = g.blocking()
    blocks = g.OH // rows
    out = [(f"define void @{symbol}(ptr noalias %x, ptr noalias %w, ptr noalias %y, "
            "i64 %lo, i64 %hi) {"), "entry:", "  %empty = icmp sge i64 %lo, %hi",
           "  br i1 %empty, label %done, label %task", "task:",
           "  %t = phi i64 [%lo, %entry], [%t1, %next]",
           f"  %n = udiv i64 %t, {blocks}", f"  %ib = urem i64 %t, {blocks}",
           f"  %i0 = mul i64 %ib, {rows}", f"  %hn = mul i64 %n, {g.Hp}",
           f"  %hi0 = mul i64 %i0, {g.sh}", "  %hbase = add i64 %hn, %hi0",
           f"  %yr0 = mul i64 %n, {g.OH}", "  %yr = add i64 %yr0, %i0",
           f"  %ybase = mul i64 %yr, {g.OW * g.O}",
           f"  %ycn = mul i64 %n, {g.O * g.OH * g.OW}", f"  %yci = mul i64 %i0, {g.OW}",
           "  %ycf = add i64 %ycn, %yci"]
    tiles = [(j0, min(jb, g.OW - j0), v0, min(vb, g.V - v0))
             for j0 in range(0, g.OW, jb) for v0 in range(0, g.V, vb)]
    prev = "task"
    for k, (j0, n_j, v0, n_v) in enumerate(tiles):
        nxt = f"t{k + 1}q" if k + 1 < len(tiles) else "next"
        _tile(out, f"t{k}", g, rows, j0, n_j, v0, n_v, prev, "next" if nxt == "next"
              else f"t{k + 1}e")
        if nxt != "next":
            out += [f"t{k + 1}e:"]
        prev = f"t{k + 1}e"
    out += ["next:", "  %t1 = add i64 %t, 1", "  %te = icmp eq i64 %t1, %hi",
            "  br i1 %te, label %done, label %task", "done:", "  ret void", "}", _FMA]
    return "\n".join(out) + "\n"


def _wgrad_head(g: ConvGeometry, cb: int, vb: int) -> list:
    nc, no = g.C // cb, g.V // vb
    return [f"  %q = udiv i64 %t, {nc * no}", f"  %qr = urem i64 %t, {nc * no}",
            f"  %cblk = udiv i64 %qr, {no}", f"  %oblk = urem i64 %qr, {no}",
            f"  %c0 = mul i64 %cblk, {cb}", f"  %o0 = mul i64 %oblk, {16 * vb}",
            f"  %kh = udiv i64 %q, {g.KW}", f"  %kw = urem i64 %q, {g.KW}",
            f"  %khd = mul i64 %kh, {g.dh}", f"  %kwd = mul i64 %kw, {g.dw}",
            f"  %kwc0 = mul i64 %kwd, {g.C}", "  %xq = add i64 %kwc0, %c0"]


def render_weight_grad(symbol: str, g: ConvGeometry) -> str:
    """The weight-gradient kernel (see the module docstring); tasks: KH * KW * C / CB *
    V / VB. Arguments: xh (N, Hp, Wp, C), gh (N, GH, GW, O) with the data at offset pg, dw."""
    cb, vb, pj = g.wgrad_blocking()
    accs = [(c, v, p) for c in range(cb) for v in range(vb) for p in range(pj)]
    rows = g.N * g.OH
    out = [(f"define void @{symbol}(ptr noalias %x, ptr noalias %gr, ptr noalias %y, "
            "i64 %lo, i64 %hi) {"), "entry:", "  %empty = icmp sge i64 %lo, %hi",
           "  br i1 %empty, label %done, label %task", "task:",
           "  %t = phi i64 [%lo, %entry], [%t1, %store]"]
    out += _wgrad_head(g, cb, vb)
    out += ["  br label %row", "row:", "  %ni = phi i64 [0, %task], [%ni1, %rowend]"]
    out += [f"  %r{c}_{v}_{p} = phi <16 x float> [zeroinitializer, %task], "
            f"[%a{c}_{v}_{p}, %rowend]" for c, v, p in accs]
    out += [f"  %n = udiv i64 %ni, {g.OH}", f"  %i = urem i64 %ni, {g.OH}",
            f"  %hn = mul i64 %n, {g.Hp}", f"  %hi0 = mul i64 %i, {g.sh}",
            "  %h1 = add i64 %hn, %hi0", "  %h = add i64 %h1, %khd",
            f"  %xrow = mul i64 %h, {g.Wp * g.C}", "  %xr = add i64 %xrow, %xq",
            f"  %gn = mul i64 %n, {g.GH}", "  %gi0 = add i64 %gn, %i",
            f"  %gi = add i64 %gi0, {g.pg}", f"  %grow0 = mul i64 %gi, {g.GW}",
            f"  %grow1 = add i64 %grow0, {g.pg}", f"  %grow = mul i64 %grow1, {g.O}",
            "  %gr0 = add i64 %grow, %o0", "  br label %col", "col:",
            "  %j = phi i64 [0, %row], [%j1, %col]"]
    out += [f"  %a{c}_{v}_{p}_in = phi <16 x float> [%r{c}_{v}_{p}, %row], "
            f"[%a{c}_{v}_{p}, %col]" for c, v, p in accs]
    out += [f"  %xj0 = mul i64 %j, {g.sw * g.C}", "  %xj = add i64 %xr, %xj0",
            f"  %gj0 = mul i64 %j, {g.O}", "  %gj = add i64 %gr0, %gj0"]
    for p in range(pj):
        for v in range(vb):
            out.append(f"  %go{p}_{v} = add i64 %gj, {p * g.O + 16 * v}")
            _vload(out, f"gv{p}_{v}", "%gr", f"%go{p}_{v}")
        for c in range(cb):
            out.append(f"  %xo{p}_{c} = add i64 %xj, {p * g.sw * g.C + c}")
            _bcast(out, f"xb{p}_{c}", "%x", f"%xo{p}_{c}")
            out += [f"  %a{c}_{v}_{p} = call <16 x float> @llvm.fma.v16f32(<16 x float> "
                    f"%xb{p}_{c}, <16 x float> %gv{p}_{v}, <16 x float> %a{c}_{v}_{p}_in)"
                    for v in range(vb)]
    out += [f"  %j1 = add i64 %j, {pj}", f"  %je = icmp eq i64 %j1, {g.OW}",
            "  br i1 %je, label %rowend, label %col", "rowend:", "  %ni1 = add i64 %ni, 1",
            f"  %ne = icmp eq i64 %ni1, {rows}", "  br i1 %ne, label %store, label %row",
            "store:", f"  %yq = mul i64 %q, {g.C * g.O}", "  %yq1 = add i64 %yq, %o0"]
    _wgrad_stores(out, g, cb, vb, pj)
    out += ["  %t1 = add i64 %t, 1", "  %te = icmp eq i64 %t1, %hi",
            "  br i1 %te, label %done, label %task", "done:", "  ret void", "}", _FMA]
    return "\n".join(out) + "\n"


def _wgrad_stores(out: list, g: ConvGeometry, cb: int, vb: int, pj: int) -> None:
    """dw[q, c0 + c, o0 + 16 v] = the sum of the PJ partial accumulators."""
    for c in range(cb):
        out += [f"  %yc{c}_a = add i64 %c0, {c}", f"  %yc{c}_b = mul i64 %yc{c}_a, {g.O}",
                f"  %yc{c} = add i64 %yq1, %yc{c}_b"]
        for v in range(vb):
            acc = f"%a{c}_{v}_0"
            for p in range(1, pj):
                out.append(f"  %s{c}_{v}_{p} = fadd <16 x float> {acc}, %a{c}_{v}_{p}")
                acc = f"%s{c}_{v}_{p}"
            out += [f"  %yo{c}_{v} = add i64 %yc{c}, {16 * v}",
                    f"  %yp{c}_{v} = getelementptr float, ptr %y, i64 %yo{c}_{v}",
                    f"  store <16 x float> {acc}, ptr %yp{c}_{v}, align 4"]
