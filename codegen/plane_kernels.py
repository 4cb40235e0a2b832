"""Max pooling in a compiled graph as direct LLVM kernels (`codegen.direct`): the window
search `_max_pool_indices` where 2-D windows tile the planes (vectors of outputs of a row,
each window offset a shuffle of one row load; 65 -> 17 us for the CNN's pool against the
fused reductions of the tiled composite), `_plane_gather` (each window's maximum read at
its flat plane index) and its adjoint `_plane_scatter_add` (zeroed planes, then each
gradient added at its index: repeated indices add up in order), on float32 or float64
values and int64 indices, in place of numpy's take (plus the index arithmetic that makes
plane indices flat) and `add.at`: the small CNN's pool of (64, 32, 8, 8) took 28 us to
gather (now 22) and 42 us to scatter (now 20).

A task is one (sample, channel) plane. An index outside its plane is not read or written:
the kernel counts it and the step runs the library impl instead, which raises numpy's
IndexError as eager does. Semantics: `ir/ops/planes.py`. Imports only `ir` and codegen's
direct and jit.
"""

from __future__ import annotations

import math

import numpy as np

from ir.graph import Node

from . import direct

_TYPES = {"float32": ("float", 4, np.float32), "float64": ("double", 8, np.float64)}


def _loop_head(out: list, plane_in: int, plane_out: int) -> None:
    out += ["entry:", "  %empty = icmp sge i64 %lo, %hi",
            "  br i1 %empty, label %done, label %plane", "plane:",
            "  %r = phi i64 [%lo, %entry], [%r1, %next]",
            "  %acc0 = phi i64 [0, %entry], [%acc, %next]",
            f"  %base_in = mul i64 %r, {plane_in}", f"  %base_out = mul i64 %r, {plane_out}"]


def _loop_tail(out: list, length: int, bad_from: str) -> None:
    """The element loop's end, the count of bad indices stored at %bad, the plane loop."""
    out += ["  %i1 = add i64 %i, 1", f"  %ie = icmp eq i64 %i1, {length}",
            "  br i1 %ie, label %next, label %elem, !llvm.loop !0", "next:",
            "  %r1 = add i64 %r, 1", "  %re = icmp eq i64 %r1, %hi",
            "  br i1 %re, label %done, label %plane, !llvm.loop !2", "done:",
            f"  %nbad = phi i64 [0, %entry], [{bad_from}, %next]",
            "  store i64 %nbad, ptr %bad", "  ret void", "}",
            # scalar loops: vectorized, the indexed loads become gathers (~2x slower)
            "!0 = distinct !{!0, !1}", '!1 = !{!"llvm.loop.vectorize.enable", i1 false}',
            "!2 = distinct !{!2, !1}"]


def render_gather(symbol: str, ty: str, plane: int, length: int) -> str:
    """y[r, i] = x[r, idx[r, i]] over planes r in [lo, hi): x (R, plane), idx and y
    (R, length)."""
    out = [(f"define void @{symbol}(ptr noalias %x, ptr noalias %idx, ptr noalias %y, "
            "ptr noalias %bad, i64 %lo, i64 %hi) {")]
    _loop_head(out, plane, length)
    out += ["  br label %elem", "elem:",
            "  %i = phi i64 [0, %plane], [%i1, %elem]",
            "  %b = phi i64 [%acc0, %plane], [%acc, %elem]",
            "  %o = add i64 %base_out, %i", "  %ip = getelementptr i64, ptr %idx, i64 %o",
            "  %k = load i64, ptr %ip", f"  %inside = icmp ult i64 %k, {plane}",
            "  %ks = select i1 %inside, i64 %k, i64 0", "  %at = add i64 %base_in, %ks",
            f"  %xp = getelementptr {ty}, ptr %x, i64 %at", f"  %v = load {ty}, ptr %xp",
            f"  %yp = getelementptr {ty}, ptr %y, i64 %o", f"  store {ty} %v, ptr %yp",
            "  %miss = zext i1 %inside to i64", "  %miss1 = xor i64 %miss, 1",
            "  %acc = add i64 %b, %miss1"]
    _loop_tail(out, length, "%acc")
    return "\n".join(out) + "\n"


def render_scatter_add(symbol: str, ty: str, plane: int, length: int,
                       onto: bool = False) -> str:
    """out[r] = 0 (with `onto`: a copy of base[r]), then out[r, idx[r, i]] += g[r, i] in
    order of i, over planes r in [lo, hi): g and idx (R, length), out and base (R, plane)."""
    out = [(f"define void @{symbol}(ptr noalias %g, ptr noalias %idx, ptr noalias %y, "
            "ptr noalias %bad, " + ("ptr noalias %base, " if onto else "")
            + "i64 %lo, i64 %hi) {")]
    _loop_head(out, length, plane)
    out.append(f"  %zp = getelementptr {ty}, ptr %y, i64 %base_out")
    if onto:
        out += [f"  %bp = getelementptr {ty}, ptr %base, i64 %base_out",
                (f"  call void @llvm.memcpy.p0.p0.i64(ptr %zp, ptr %bp, i64 "
                f"{plane * _size(ty)}, i1 0)")]
    else:
        out.append(f"  call void @llvm.memset.p0.i64(ptr %zp, i8 0, i64 "
                   f"{plane * _size(ty)}, i1 0)")
    out += ["  br label %elem", "elem:",
            "  %i = phi i64 [0, %plane], [%i1, %elem]",
            "  %b = phi i64 [%acc0, %plane], [%acc, %elem]",
            "  %o = add i64 %base_in, %i", "  %ip = getelementptr i64, ptr %idx, i64 %o",
            "  %k = load i64, ptr %ip", f"  %inside = icmp ult i64 %k, {plane}",
            f"  %gp = getelementptr {ty}, ptr %g, i64 %o", f"  %gv = load {ty}, ptr %gp",
            f"  %gz = select i1 %inside, {ty} %gv, {ty} 0.0",
            "  %ks = select i1 %inside, i64 %k, i64 0", "  %at = add i64 %base_out, %ks",
            f"  %yp = getelementptr {ty}, ptr %y, i64 %at", f"  %yv = load {ty}, ptr %yp",
            f"  %ys = fadd {ty} %yv, %gz", f"  store {ty} %ys, ptr %yp",
            "  %miss = zext i1 %inside to i64", "  %miss1 = xor i64 %miss, 1",
            "  %acc = add i64 %b, %miss1"]
    _loop_tail(out, length, "%acc")
    out.append("declare void @llvm.memcpy.p0.p0.i64(ptr, ptr, i64, i1)" if onto else
               "declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)")
    return "\n".join(out) + "\n"


def _size(ty: str) -> int:
    return 4 if ty == "float" else 8


def _meta(node):
    return node.meta.get("val") if isinstance(node, Node) else None


def _plan(node: Node):
    """(kind, llvm type, numpy dtype, plane, length, rows) of a plane node run here, else
    None."""
    name = node.target.name
    if name not in ("_plane_gather", "_plane_scatter_add") or len(node.args) < 2:
        return None
    a, idx = _meta(node.args[0]), _meta(node.args[1])
    if a is None or idx is None or a.dtype.name not in _TYPES or idx.dtype.name != "int64" \
            or len(a.shape) < 2 or len(idx.shape) != len(a.shape):
        return None
    ty, _, np_dt = _TYPES[a.dtype.name]
    if name == "_plane_gather":
        if tuple(a.shape[:2]) != tuple(idx.shape[:2]):
            return None
        plane, length = math.prod(a.shape[2:]), math.prod(idx.shape[2:])
        return "gather", ty, np_dt, plane, length, tuple(idx.shape)
    size = tuple(node.kwargs.get("input_size", node.args[2] if len(node.args) > 2 else ()))
    if tuple(a.shape) != tuple(idx.shape) or len(size) != len(a.shape) or \
            tuple(size[:2]) != tuple(a.shape[:2]):
        return None
    return "scatter", ty, np_dt, math.prod(size[2:]), math.prod(a.shape[2:]), size


def direct_factory(node: Node, slot, library):
    """The `CompiledGraph` step factory of a plane gather or scatter-add run by its kernel;
    `library` itself for other nodes."""
    try:
        plan = _plan(node)
    except Exception:  # noqa: BLE001 (an unexpected node form: the library impl runs)
        plan = None
    if plan is None or min(plan[3], plan[4]) < 1:
        return library
    kind, ty, np_dt, plane, length, shape = plan
    render = render_gather if kind == "gather" else render_scatter_add
    pending = direct.start(("plane", kind, ty, plane, length),
                           lambda sym: render(sym, ty, plane, length), f"wick_{kind}", 4)
    rows = shape[0] * shape[1]
    lib_run = library(())   # (a runner of the library impl for bad indices: frees nothing)
    ins, out_slot = (slot[node.args[0]], slot[node.args[1]]), slot[node]

    def call(kernel, a, idx):
        ac, ic = np.ascontiguousarray(a, np_dt), np.ascontiguousarray(idx)
        out = np.empty(shape, np_dt)
        bad = np.zeros(1, np.int64)
        kernel(ac.ctypes.data, ic.ctypes.data, out.ctypes.data, bad.ctypes.data, 0, rows)
        if bad[0]:  # an index outside its plane: the library impl decides (numpy's
            env = _Env({ins[0]: a, ins[1]: idx})   # IndexError, or a negative index's
            lib_run(env)                            # wrap-around), as eager
            return env[out_slot]
        return out

    return direct.factory(pending, library, out_slot, ins, call)


def _row_plan(node: Node):
    """(kind, llvm type, numpy dtype, rows, row length, index length, arg nodes) of a 2-D
    `gather` / `scatter_add` along dim 1 whose index has the input's rows, else None."""
    name, args = node.target.name, node.args
    if name not in ("gather", "scatter_add") or len(args) != (3 if name == "gather" else 4) \
            or args[1] not in (1, -1) or node.kwargs.get("sparse_grad", False):
        return None
    metas = [_meta(a) for a in args[:1] + args[2:]]
    if any(m is None or len(m.shape) != 2 for m in metas):
        return None
    a, idx = metas[0], metas[1]
    if a.dtype.name not in _TYPES or idx.dtype.name != "int64" or idx.shape[0] != a.shape[0] \
            or any(m.dtype is not a.dtype or tuple(m.shape) != tuple(idx.shape)
                   for m in metas[2:]):
        return None
    ty, _, np_dt = _TYPES[a.dtype.name]
    return name, ty, np_dt, a.shape[0], a.shape[1], idx.shape[1], (args[0],) + args[2:]


def row_factory(node: Node, slot, library):
    """The step factory of a 2-D `gather` or `scatter_add` along dim 1 (cross entropy's pick
    of each row's target and its gradient) run by the plane kernels with one row a plane;
    `library` itself for other nodes (and, through it, bad indices: eager's error)."""
    try:
        plan = _row_plan(node)
    except Exception:  # noqa: BLE001 (an unexpected node form: the library impl runs)
        plan = None
    if plan is None or min(plan[3:6]) < 1:
        return library
    kind, ty, np_dt, rows, plane, length, nodes = plan
    if kind == "gather":
        pending = direct.start(("plane", "gather", ty, plane, length),
                               lambda sym: render_gather(sym, ty, plane, length),
                               "wick_gather", 4)
    else:
        pending = direct.start(("plane", "scatter onto", ty, plane, length),
                               lambda sym: render_scatter_add(sym, ty, plane, length, True),
                               "wick_scatter_onto", 5)
    lib_run = library(())
    ins, out_slot = tuple(slot[n] for n in nodes), slot[node]

    def call(kernel, a, idx, src=None):
        ac, ic = np.ascontiguousarray(a, np_dt), np.ascontiguousarray(idx)
        bad = np.zeros(1, np.int64)
        if src is None:
            out = np.empty(idx.shape, np_dt)
            kernel(ac.ctypes.data, ic.ctypes.data, out.ctypes.data, bad.ctypes.data, 0, rows)
        else:
            sc, out = np.ascontiguousarray(src, np_dt), np.empty(a.shape, np_dt)
            kernel(sc.ctypes.data, ic.ctypes.data, out.ctypes.data, bad.ctypes.data,
                   ac.ctypes.data, 0, rows)
        if bad[0]:  # an index outside its row: the library impl raises eager's error
            env = _Env(zip(ins, (a, idx, src)))
            lib_run(env)
            return env[out_slot]
        return out

    return direct.factory(pending, library, out_slot, ins, call)


class _Env(dict):
    """A slot environment for one library call (missing slots read as None)."""

    def __missing__(self, key):
        return None


# ---------------------------------------------------------------- tiled max-pool indices


def _pool_block(out: list, t: str, ty: str, kh: int, kw: int, j0: int, vj: int) -> None:
    """One block of `render_pool_indices`: outputs j0 .. j0 + vj of row %i."""
    first = True
    for a in range(kh):
        n = kw * vj
        out += [f"  %{t}r{a}0 = add i64 %row{a}, {j0 * kw}",
                f"  %{t}r{a}p = getelementptr {ty}, ptr %x, i64 %{t}r{a}0",
                f"  %{t}r{a} = load <{n} x {ty}>, ptr %{t}r{a}p, align 4"]
        for b in range(kw):
            v, mask = f"%{t}v{a}_{b}", ", ".join(f"i32 {jj * kw + b}" for jj in range(vj))
            out += [(f"  {v} = shufflevector <{n} x {ty}> %{t}r{a}, <{n} x {ty}> poison, "
                    f"<{vj} x i32> <{mask}>"),
                    f"  %{t}k{a}_{b}0 = add i64 %prow{a}, {j0 * kw + b}",
                    (f"  %{t}k{a}_{b}1 = insertelement <{vj} x i64> poison, i64 "
                    f"%{t}k{a}_{b}0, i64 0"),
                    (f"  %{t}k{a}_{b}2 = shufflevector <{vj} x i64> %{t}k{a}_{b}1, "
                    f"<{vj} x i64> poison, <{vj} x i32> zeroinitializer"),
                    f"  %{t}k{a}_{b} = add <{vj} x i64> %{t}k{a}_{b}2, <"
                    + ", ".join(f"i64 {jj * kw}" for jj in range(vj)) + ">"]
            if first:
                best, arg, first = v, f"%{t}k{a}_{b}", False
                continue
            s = f"%{t}s{a}_{b}"
            out += [f"  {s}g = fcmp ogt <{vj} x {ty}> {v}, {best}",
                    f"  {s}n = fcmp uno <{vj} x {ty}> {v}, {v}",
                    f"  {s}t = or <{vj} x i1> {s}g, {s}n",
                    f"  {s}b = select <{vj} x i1> {s}t, <{vj} x {ty}> {v}, <{vj} x {ty}> {best}",
                    (f"  {s}a = select <{vj} x i1> {s}t, <{vj} x i64> %{t}k{a}_{b}, "
                    f"<{vj} x i64> {arg}")]
            best, arg = f"{s}b", f"{s}a"
    out += [f"  %{t}o = add i64 %obase, {j0}",
            f"  %{t}op = getelementptr i64, ptr %idx, i64 %{t}o",
            f"  store <{vj} x i64> {arg}, ptr %{t}op, align 8"]


def render_pool_indices(symbol: str, ty: str, h: int, w: int, kh: int, kw: int) -> str:
    """idx[r, i, j] = the flat plane index of the first maximum (a NaN: the last NaN) of
    window (i, j) of plane r, windows kh x kw tiling the h x w planes, over planes r in
    [lo, hi) (ATen's max_pool2d_with_indices scan: strict >, or a NaN)."""
    oh, ow = h // kh, w // kw
    out = [(f"define void @{symbol}(ptr noalias %x, ptr noalias %idx, ptr noalias %unused, "
            "ptr noalias %bad, i64 %lo, i64 %hi) {"), "entry:",
           "  %empty = icmp sge i64 %lo, %hi", "  br i1 %empty, label %done, label %plane",
           "plane:", "  %r = phi i64 [%lo, %entry], [%r1, %pnext]",
           f"  %xbase = mul i64 %r, {h * w}", f"  %obase0 = mul i64 %r, {oh * ow}",
           "  br label %rowloop", "rowloop:",
           "  %i = phi i64 [0, %plane], [%i1, %rowloop]",
           f"  %io = mul i64 %i, {ow}", "  %obase = add i64 %obase0, %io"]
    for a in range(kh):
        out += [f"  %ih{a}0 = mul i64 %i, {kh}", f"  %ih{a} = add i64 %ih{a}0, {a}",
                f"  %prow{a} = mul i64 %ih{a}, {w}", f"  %row{a} = add i64 %xbase, %prow{a}"]
    vj = min(ow, 16)
    for k, j0 in enumerate(range(0, ow, vj)):
        _pool_block(out, f"b{k}_", ty, kh, kw, j0, min(vj, ow - j0))
    out += ["  %i1 = add i64 %i, 1", f"  %ie = icmp eq i64 %i1, {oh}",
            "  br i1 %ie, label %pnext, label %rowloop", "pnext:",
            "  %r1 = add i64 %r, 1", "  %re = icmp eq i64 %r1, %hi",
            "  br i1 %re, label %done, label %plane", "done:", "  ret void", "}"]
    return "\n".join(out) + "\n"


def pool_factory(node: Node, slot, library):
    """The step factory of a 2-D `_max_pool_indices` whose windows tile the planes (stride =
    kernel, no padding or dilation: eager's max_pool2d records it for float32/float64 CPU
    inputs instead of the tiled composite), run by `render_pool_indices`; `library` itself
    for other nodes."""
    if node.target.name != "_max_pool_indices":
        return library
    x, kw = _meta(node.args[0]), dict(node.kwargs)
    k = tuple(kw.get("kernel_size", ()))
    if x is None or x.dtype.name not in _TYPES or len(x.shape) != 4 or len(k) != 2 or \
            tuple(kw.get("stride", ())) != k or any(kw.get("padding", (1,))) or \
            any(d != 1 for d in kw.get("dilation", (2,))) or \
            any(s % q or s < q for s, q in zip(x.shape[2:], k)):
        return library
    ty = _TYPES[x.dtype.name][0]
    (h, w), rows = x.shape[2:], x.shape[0] * x.shape[1]
    pending = direct.start(("pool", ty, h, w) + k,
                           lambda sym: render_pool_indices(sym, ty, h, w, *k), "wick_pool", 4)
    shape = tuple(x.shape[:2]) + (h // k[0], w // k[1])
    np_dt = _TYPES[x.dtype.name][2]

    def call(kernel, a):
        a = np.ascontiguousarray(a, np_dt)
        idx = np.empty(shape, np.int64)
        kernel(a.ctypes.data, idx.ctypes.data, 0, 0, 0, rows)
        return idx

    return direct.factory(pending, library, slot[node], (slot[node.args[0]],), call)
