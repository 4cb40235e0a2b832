"""The convolution library calls of a compiled graph (`_conv_nd`, `_conv_nd_input_grad`,
`_conv_nd_weight_grad`) as direct-convolution LLVM kernels (`conv_render`) where they apply,
in place of the registry impls' im2col + BLAS GEMM.

Applies to float32 2-D convolutions with groups 1 on a CPU with AVX-512 (where the kernels
reach its FMA peak; with AVX2 only, numpy's BLAS is as fast and the library impl runs), and:
the forward with a multiple of 16 output channels; the input gradient at stride 1 and
dilation 1 with a multiple of 16 input channels (it is the convolution of g, padded by
k - 1 - p, with the flipped weight); the weight gradient with a multiple of 16 output
channels. The layouts: the input is copied channels last and padded (the registry's
`_channels_last`, a copy inside each sample); the weight packed (KH, KW, C, O); the
result stored (N, C, H, W) by the kernel (transposed in registers). Where the input
gradient and the weight gradient read the same g (a training step's backward), the padded
channels-last g of the first is kept (`workspace.keep`) and read by the second at its
offset; so is the forward's padded input for the weight gradient. The sums run in another order than BLAS's: results
equal the library impl's up to float32 rounding. Kernels compile on `codegen.direct`'s
background worker; a graph's first run uses the library impl, so it does not wait for LLVM,
and every later run the kernel (deterministically: see `direct.factory`). Imports only `ir` and codegen's direct, jit, threads.
"""

from __future__ import annotations

import functools

import numpy as np

from ir.graph import Node
from ir.ops.conv import _channels_last, _out_sizes
from ir.ops.workspace import keep, kept

from . import direct, jit, threads
from .conv_render import ConvGeometry, render_conv, render_weight_grad

_NAMES = frozenset({"_conv_nd", "_conv_nd_input_grad", "_conv_nd_weight_grad"})


@functools.lru_cache(maxsize=1)
def _avx512() -> bool:
    try:
        _, features = jit.target_cpu()
    except Exception:  # noqa: BLE001 (no LLVM target: the library impl runs)
        return False
    return "+avx512f" in features.split(",")


def _start(kind: str, geo: ConvGeometry):
    render = render_conv if kind == "conv" else render_weight_grad
    return direct.start(("conv", kind, geo), lambda sym: render(sym, geo), f"wick_{kind}", 3)


def _kernel(kind: str, geo: ConvGeometry):
    """The compiled kernel's ctypes function (compiled now if it is not yet)."""
    return direct.wait(_start(kind, geo))


def _f32(node) -> tuple | None:
    """The (N, C, H, W)-style shape of a float32 4-d graph value, else None."""
    meta = node.meta.get("val") if isinstance(node, Node) else None
    if meta is None or meta.dtype.name != "float32" or len(meta.shape) != 4:
        return None
    return tuple(meta.shape)


def _plain(kwargs) -> bool:
    return kwargs.get("groups") == 1 and all(
        len(tuple(kwargs.get(k, ()))) == 2 for k in ("stride", "padding", "dilation"))


def _geometry(xs, ws, kw) -> ConvGeometry:
    (sh, sw), (ph, pw), (dh, dw) = kw["stride"], kw["padding"], kw["dilation"]
    oh, ow = _out_sizes(xs[2:], ws[2:], (sh, sw), (ph, pw), (dh, dw))
    return ConvGeometry(Hp=xs[2] + 2 * ph, Wp=xs[3] + 2 * pw, C=xs[1], O=ws[0], KH=ws[2],
                        KW=ws[3], OH=oh, OW=ow, sh=sh, sw=sw, dh=dh, dw=dw, N=xs[0],
                        nchw=True)


def _size(node: Node, name: str):
    return node.kwargs[name] if name in node.kwargs else node.args[2]


def _plan(node: Node):
    """(kind, geometry, padding) of a convolution node this module runs, else None."""
    kw = dict(node.kwargs)
    if node.target.name not in _NAMES or not _plain(kw) or not _avx512():
        return None
    a, b = (_f32(n) for n in node.args[:2])
    if a is None or b is None or any(p < 0 for p in kw["padding"]):
        return None
    name = node.target.name
    if name == "_conv_nd":
        geo = _geometry(a, b, kw)
        ok = geo.O % 16 == 0
    elif name == "_conv_nd_input_grad":
        xs = tuple(_size(node, "input_size"))
        (kh, kw_), (ph, pw) = b[2:], kw["padding"]
        geo = ConvGeometry(Hp=a[2] + 2 * (kh - 1 - ph), Wp=a[3] + 2 * (kw_ - 1 - pw), C=b[0],
                           O=b[1], KH=kh, KW=kw_, OH=xs[2], OW=xs[3], N=a[0], nchw=True)
        ok = (xs[1] % 16 == 0 and tuple(kw["stride"]) == (1, 1) and ph <= kh - 1
              and pw <= kw_ - 1 and tuple(kw["dilation"]) == (1, 1) and b[1] == xs[1])
    else:
        geo = _wgrad_geometry(_geometry(a, tuple(_size(node, "weight_size")), kw),
                              kw["padding"])
        ok = geo.O % 16 == 0
    if not ok or min(geo.OH, geo.OW) < 1:
        return None
    return name, geo, tuple(kw["padding"])


def _wgrad_geometry(geo: ConvGeometry, pads) -> ConvGeometry:
    """The weight gradient reads g inside the input gradient's padded copy (offset k - 1 - p)
    at stride and dilation 1, else a channels-last copy of g."""
    gp = geo.KH - 1 - pads[0]
    if (geo.sh, geo.sw, geo.dh, geo.dw) != (1, 1, 1, 1) or gp < 0 or \
            geo.KW - 1 - pads[1] != gp:
        gp = 0
    return ConvGeometry(**{**geo.__dict__, "GH": geo.OH + 2 * gp, "GW": geo.OW + 2 * gp,
                           "pg": gp, "nchw": False})


def _padded(x, pads, fresh_key=None):
    """x (N, C, H, W) as a padded channels-last array (N, H + 2 ph, W + 2 pw, C): a new one
    kept for `fresh_key` when given (one copy; its border zeroed face by face), else the
    registry's scratch copy. Never looked up here: a forward's array may have been written
    in place since an earlier step (the probe of `kept` samples it; only the backward of the
    same step looks its copy up, as the library path's kept columns)."""
    if fresh_key is None:
        return _channels_last(np, x, tuple((p, p) for p in pads))
    (n, c, h, w), (ph, pw) = x.shape, pads
    xh = np.empty((n, h + 2 * ph, w + 2 * pw, c), x.dtype)
    if ph:
        xh[:, :ph] = 0
        xh[:, ph + h:] = 0
    if pw:
        xh[:, ph:ph + h, :pw] = 0
        xh[:, ph:ph + h, pw + w:] = 0
    xh[:, ph:ph + h, pw:pw + w] = x.transpose(0, 2, 3, 1)
    keep(x, fresh_key, xh)
    return xh


def _run(kernel, arrays, tasks: int, geo: ConvGeometry) -> None:
    """The kernel over its tasks, split across the thread pool (`threads.run`) only when
    its multiply-adds pass ~2^28 (a few ms on one core: the small CNN's ~19 M stay on
    the calling thread, as numpy's BLAS and torch run on one in the benchmarks)."""
    macs = geo.N * geo.OH * geo.OW * geo.C * geo.O * geo.KH * geo.KW
    threads.run(kernel, [a.ctypes.data for a in arrays], tasks, macs >> 8)


def conv_forward(geo: ConvGeometry, pads, x, w, kernel=None):
    xh = _padded(x, pads, ("direct conv input", pads))
    wp = np.ascontiguousarray(w.transpose(2, 3, 1, 0))
    y = np.empty((x.shape[0], geo.O, geo.OH, geo.OW), np.float32)
    _run(kernel or _kernel("conv", geo), (xh, wp, y),
         x.shape[0] * (geo.OH // geo.blocking()[0]), geo)
    return y


def conv_input_grad(geo: ConvGeometry, pads, g, w, kernel=None):
    gp = tuple(k - 1 - p for k, p in zip((geo.KH, geo.KW), pads))
    gh = _padded(g, gp, ("direct conv grad", gp))
    # the transposed convolution's weight: (O, C, KH, KW) flipped, packed (KH, KW, O, C)
    wp = np.ascontiguousarray(w[:, :, ::-1, ::-1].transpose(2, 3, 0, 1))
    dx = np.empty((g.shape[0], geo.O, geo.OH, geo.OW), np.float32)
    _run(kernel or _kernel("conv", geo), (gh, wp, dx),
         g.shape[0] * (geo.OH // geo.blocking()[0]), geo)
    return dx


def conv_weight_grad(geo: ConvGeometry, pads, x, g, kernel=None):
    xh = kept(x, ("direct conv input", pads))   # the forward's padded copy of this x
    if xh is None:
        xh = _padded(x, pads)
    gp = (geo.pg, geo.pg)
    # g padded as the input gradient of the same g kept it (else a scratch copy)
    gh = kept(g, ("direct conv grad", gp)) if geo.pg else None
    if gh is None:
        gh = _channels_last(np, g, (gp, gp))
    dw = np.empty((geo.KH, geo.KW, geo.C, geo.O), np.float32)
    cb, vb, _ = geo.wgrad_blocking()
    _run(kernel or _kernel("wgrad", geo), (xh, gh, dw),
         geo.KH * geo.KW * (geo.C // cb) * (geo.V // vb), geo)
    return np.ascontiguousarray(dw.transpose(3, 2, 0, 1))


_RUN = {"_conv_nd": conv_forward, "_conv_nd_input_grad": conv_input_grad,
        "_conv_nd_weight_grad": conv_weight_grad}


def direct_factory(node: Node, slot, library):
    """A `CompiledGraph` step factory (free slots -> runner) for a convolution node this
    module runs: the direct kernel once its background compile is done, the `library`
    factory's runner until then (and for good where the compile failed); `library` itself
    for other nodes."""
    try:
        plan = _plan(node)
    except Exception:  # noqa: BLE001 (an unexpected node form: the library impl runs)
        plan = None
    if plan is None:
        return library
    name, geo, pads = plan
    pending = _start("wgrad" if name == "_conv_nd_weight_grad" else "conv", geo)
    run = _RUN[name]
    return direct.factory(pending, library, slot[node], (slot[node.args[0]],
                                                          slot[node.args[1]]),
                          lambda kernel, a, b: run(geo, pads, a, b, kernel))
