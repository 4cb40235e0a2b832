"""Direct kernels of compiled graphs (`codegen/direct.py`): the convolutions of
`codegen/conv_kernels.py` / `conv_render.py`, LLVM kernels that run a compiled graph's float32
2-D convolutions (forward, input gradient, weight gradient) without im2col or BLAS, and the
plane and row gathers / scatter-adds of `codegen/plane_kernels.py`. References: the registry impls (`ir/ops/conv.py`) in
float64, themselves checked against the direct-sum reference in the op tests; compiled
training steps against eager's values and gradients. The kernels run on any x86-64 CPU
(LLVM splits their 16-lane vectors without AVX-512), so the tests force the path on where
the CPU check would leave it to the library impl."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from codegen import conv_kernels as CK
from codegen import direct, plane_kernels, threads
from codegen.conv_render import ConvGeometry
from ir import dtypes as D
from ir.graph import Graph
from ir.opdef import REGISTRY, TensorMeta
from ir.ops import conv as lib
from ir.ops import planes

# (N, C, H, W), (O, C, KH, KW), stride, padding, dilation
CASES = [
    ((4, 16, 8, 8), (32, 16, 3, 3), 1, 1, 1),       # the CNN benchmark's second conv
    ((3, 1, 8, 8), (16, 1, 3, 3), 1, 1, 1),         # a one-channel first layer
    ((3, 5, 9, 7), (16, 5, 3, 3), 2, 1, 1),         # strided, odd sizes
    ((2, 16, 11, 10), (48, 16, 3, 3), 1, 0, 2),     # dilated, three output vectors
    ((2, 32, 6, 6), (16, 32, 5, 5), 1, 2, 1),       # 5x5
    ((2, 3, 30, 29), (32, 3, 3, 3), 1, 1, 1),       # rows longer than a tile
    ((2, 16, 7, 9), (16, 16, 1, 3), 1, 0, 1),       # 1x3 kernel
]


def _attrs(s, p, d):
    return {"stride": (s, s), "padding": (p, p), "dilation": (d, d), "groups": 1}


def _close(got, want):
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-6 * scale)


@pytest.mark.parametrize("xs, ws, s, p, d", CASES)
def test_forward_and_weight_grad_match_the_library_kernels(xs, ws, s, p, d):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    a = _attrs(s, p, d)
    want = lib._conv_impl(np, x.astype(np.float64), w.astype(np.float64), **a)
    geo = CK._geometry(xs, ws, a)
    y = CK.conv_forward(geo, (p, p), x, w)
    assert y.dtype == np.float32 and y.shape == want.shape and y.flags.c_contiguous
    _close(y, want)
    g = rng.standard_normal(want.shape).astype(np.float32)
    want_w = lib._weight_grad_impl(np, x.astype(np.float64), g.astype(np.float64), ws, **a)
    got_w = CK.conv_weight_grad(CK._wgrad_geometry(geo, (p, p)), (p, p), x.copy(), g)
    assert got_w.shape == ws and got_w.flags.c_contiguous
    _close(got_w, want_w)


@pytest.mark.parametrize("xs, ws, s, p, d", [c for c in CASES if c[2] == c[4] == 1
                                             and c[0][1] % 16 == 0])
def test_input_grad_then_weight_grad_on_the_kept_padded_g(xs, ws, s, p, d):
    rng = np.random.default_rng(1)
    x = rng.standard_normal(xs).astype(np.float32)
    w = rng.standard_normal(ws).astype(np.float32)
    a = _attrs(s, p, d)
    out = lib._conv_shape(xs, ws, **a)
    g = rng.standard_normal(out).astype(np.float32)
    k = ws[2]
    geo = ConvGeometry(Hp=out[2] + 2 * (k - 1 - p), Wp=out[3] + 2 * (ws[3] - 1 - p), C=ws[0],
                       O=ws[1], KH=k, KW=ws[3], OH=xs[2], OW=xs[3], N=xs[0], nchw=True)
    dx = CK.conv_input_grad(geo, (p, p), g, w)
    _close(dx, lib._input_grad_impl(np, g.astype(np.float64), w.astype(np.float64), xs, **a))
    # the weight gradient of the same g reads the padded copy the input gradient kept
    wgeo = CK._wgrad_geometry(CK._geometry(xs, ws, a), (p, p))
    got_w = CK.conv_weight_grad(wgeo, (p, p), x, g)
    _close(got_w, lib._weight_grad_impl(np, x.astype(np.float64), g.astype(np.float64), ws,
                                        **a))
    g[0, 0, 0, 0] += 1.0   # a changed g is never served from the kept copy
    got_w = CK.conv_weight_grad(wgeo, (p, p), x, g)
    _close(got_w, lib._weight_grad_impl(np, x.astype(np.float64), g.astype(np.float64), ws,
                                        **a))


def _cnn():
    nn = eager.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.Conv2d(32, 16, 3, padding=1, stride=2), nn.Flatten())


@pytest.fixture
def forced(monkeypatch):
    """The direct kernels on whatever the CPU: count the convolution nodes they run."""
    monkeypatch.setattr(CK, "_avx512", lambda: True)
    monkeypatch.setenv("WICK_COMPILE_THREADS", "1")   # kernels compiled before the first call
    taken = []
    real = CK._plan

    def spy(node):
        plan = real(node)
        if plan is not None:
            taken.append(plan[0])
        return plan

    monkeypatch.setattr(CK, "_plan", spy)
    return taken


def test_compiled_training_step_matches_eager(forced):
    rng = np.random.default_rng(2)
    x = eager.tensor(rng.standard_normal((8, 1, 8, 8)).astype(np.float32))
    eager.manual_seed(0)
    m1, m2 = _cnn(), _cnn()
    m2.load_state_dict(m1.state_dict())

    def loss(m, x):
        return (m(x) ** 2).mean()

    compiled = capture.compile(lambda x: loss(m2, x))
    for _ in range(2):
        want, got = loss(m1, x), compiled(x)
        want.backward()
        got.backward()
        np.testing.assert_allclose(got.item(), want.item(), rtol=1e-4)
        # (a conv bias before a batch norm has a zero gradient up to rounding: an absolute
        # tolerance on the scale of all the gradients)
        scale = max(np.abs(p.grad.numpy()).max() for p in m1.parameters())
        for (name, p1), p2 in zip(m1.named_parameters(), m2.parameters()):
            np.testing.assert_allclose(p2.grad.numpy(), p1.grad.numpy(), rtol=2e-3,
                                       atol=1e-5 * scale, err_msg=name)
            p1.grad = p2.grad = None
    # forward: all three convs; input gradient: the 16->32 one (the strided one and the
    # 1-channel input are left to the library); weight gradient: all three
    assert sorted(set(forced)) == ["_conv_nd", "_conv_nd_input_grad", "_conv_nd_weight_grad"]


def test_what_the_direct_kernels_leave_to_the_library(forced):
    def node(op, shapes, dtype=D.float32, **kw):
        g = Graph()
        ins = [g.placeholder(f"a{i}") for i in range(len(shapes))]
        for i, s in zip(ins, shapes):
            i.meta["val"] = TensorMeta(s, dtype)
        return g.call_function(lib_op(op), tuple(ins), kw)

    def lib_op(name):
        return REGISTRY[name]

    a = _attrs(1, 1, 1)
    assert CK._plan(node("_conv_nd", [(2, 16, 8, 8), (32, 16, 3, 3)], **a)) is not None
    assert CK._plan(node("_conv_nd", [(2, 16, 8, 8), (24, 16, 3, 3)], **a)) is None  # O % 16
    assert CK._plan(node("_conv_nd", [(2, 16, 8, 8), (32, 16, 3, 3)], D.float64, **a)) is None
    assert CK._plan(node("_conv_nd", [(2, 16, 8, 8), (32, 8, 3, 3)],
                         **{**a, "groups": 2})) is None
    assert CK._plan(node("_conv_nd_input_grad", [(2, 32, 4, 4), (32, 16, 3, 3)],
                         input_size=(2, 16, 8, 8), **_attrs(2, 1, 1))) is None  # strided
    assert CK._plan(node("_conv_nd_input_grad", [(2, 32, 8, 8), (32, 16, 3, 3)],
                         input_size=(2, 16, 8, 8), **a)) is not None


# ---------------------------------------------------------------- plane gather / scatter-add


def _plane_step(name, metas, **kw):
    """The compiled step of one plane node over slots 0, 1 -> 2, its kernel compiled first."""
    g = Graph()
    ins = [g.placeholder(f"a{i}") for i in range(len(metas))]
    for i, m in zip(ins, metas):
        i.meta["val"] = m
    node = g.call_function(REGISTRY[name], tuple(ins), kw)
    slot = {ins[0]: 0, ins[1]: 1, node: 2}

    def library(free):
        def run(env):
            env[2] = REGISTRY[name].impl(np, env[0], env[1], **kw)
        return run

    make = plane_kernels.direct_factory(node, slot, library)
    assert make is not library
    plan = plane_kernels._plan(node)
    direct.wait(direct._kernels[("plane", "gather" if "gather" in name else "scatter",
                                 plan[1], plan[3], plan[4])])
    run = make(())

    def call(a, b):
        env = [a, b, None]
        run(env)
        return env[2]

    return call


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_plane_gather_and_scatter_add_kernels_match_the_library(dt):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 4, 6, 5)).astype(dt)
    idx = rng.integers(0, 30, (3, 4, 4, 3))        # repeated positions: they add up
    g = rng.standard_normal(idx.shape).astype(dt)
    ddt = D.float32 if dt == np.float32 else D.float64
    gather = _plane_step("_plane_gather", [TensorMeta(x.shape, ddt),
                                           TensorMeta(idx.shape, D.int64)])
    got = gather(x, idx)
    assert got.dtype == dt
    np.testing.assert_array_equal(got, planes._plane_gather_impl(np, x, idx))
    scatter = _plane_step("_plane_scatter_add", [TensorMeta(g.shape, ddt),
                                                 TensorMeta(idx.shape, D.int64)],
                          input_size=x.shape)
    np.testing.assert_allclose(scatter(g, idx),
                               planes._plane_scatter_add_impl(np, g, idx, x.shape),
                               rtol=1e-6, atol=1e-6)
    bad = idx.copy()
    bad[1, 2, 0, 0] = 30    # outside its plane: the library's result (the next plane's
    np.testing.assert_array_equal(gather(x, bad),              # element), as eager
                                  planes._plane_gather_impl(np, x, bad))
    bad[2, 3, 0, 0] = 30    # past the last plane: numpy's IndexError, as eager
    with pytest.raises(IndexError):
        gather(x, bad)
    with pytest.raises(IndexError):
        scatter(g, bad)


def test_forward_never_reuses_a_padded_copy_of_an_input_written_in_place():
    # the kept padded input serves only the weight gradient of the same step: an input
    # written in place between steps (where the kept copy's probe does not look) is read anew
    rng = np.random.default_rng(4)
    x = rng.standard_normal((4, 16, 8, 8)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    a = _attrs(1, 1, 1)
    geo = CK._geometry(x.shape, w.shape, a)
    CK.conv_forward(geo, (1, 1), x, w)
    x.reshape(-1)[1 + 64 * 7] += 3.0    # not a multiple of the probe stride (size / 64)
    _close(CK.conv_forward(geo, (1, 1), x, w),
           lib._conv_impl(np, x.astype(np.float64), w.astype(np.float64), **a))


def test_kernels_split_across_threads_give_the_same_bits(monkeypatch):
    # large convolutions split their tasks over the thread pool (disjoint outputs): forced
    # here on a small one, the results equal the one-thread run exactly
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 16, 7, 6)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    a = _attrs(1, 1, 1)
    geo = CK._geometry(x.shape, w.shape, a)
    g = rng.standard_normal((3, 32, 7, 6)).astype(np.float32)
    gi = ConvGeometry(Hp=9, Wp=8, C=32, O=16, KH=3, KW=3, OH=7, OW=6, N=3, nchw=True)
    wg = CK._wgrad_geometry(geo, (1, 1))

    def all3():
        return (CK.conv_forward(geo, (1, 1), x, w), CK.conv_input_grad(gi, (1, 1), g, w),
                CK.conv_weight_grad(wg, (1, 1), x.copy(), g.copy()))

    one = all3()
    monkeypatch.setattr(threads, "MIN_PARALLEL", 1)
    monkeypatch.setenv("WICK_NUM_THREADS", "3")
    for a1, a2 in zip(one, all3()):
        np.testing.assert_array_equal(a1, a2)


def _row_step(name, arrays, dtypes):
    """The compiled step of a 2-D gather / scatter_add along dim 1, its kernel compiled."""
    g = Graph()
    ins = [g.placeholder(f"a{i}") for i in range(len(arrays))]
    for i, a, dt in zip(ins, arrays, dtypes):
        i.meta["val"] = TensorMeta(a.shape, dt)
    args = (ins[0], 1) + tuple(ins[1:])
    node = g.call_function(REGISTRY[name], args, {})
    slot = {n: k for k, n in enumerate(ins)}
    slot[node] = len(ins)

    def library(free):
        def run(env):
            env[len(ins)] = REGISTRY[name].impl(np, env[0], 1, *[env[k] for k in
                                                                 range(1, len(ins))])
        return run

    make = plane_kernels.row_factory(node, slot, library)
    assert make is not library
    for p in list(direct._kernels.values()):
        direct.wait(p)
    run = make(())

    def call(*arrs):
        env = [*arrs, None]
        run(env)
        return env[-1]

    return call


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_row_gather_and_scatter_add_kernels_match_the_library(dt):
    # cross entropy's pick of each row's target and its gradient (onto zeros, or any input)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((5, 7)).astype(dt)
    idx = rng.integers(0, 7, (5, 9))
    src = rng.standard_normal((5, 9)).astype(dt)
    ddt, i64 = (D.float32 if dt == np.float32 else D.float64), D.int64
    gather = _row_step("gather", [x, idx], [ddt, i64])
    np.testing.assert_array_equal(gather(x, idx), np.take_along_axis(x, idx, 1))
    scatter = _row_step("scatter_add", [x, idx, src], [ddt, i64, ddt])
    want = x.copy()
    np.add.at(want, (np.arange(5)[:, None], idx), src)
    np.testing.assert_allclose(scatter(x, idx, src), want, rtol=1e-6)
    neg = idx.copy()
    neg[1, 4] = -2                     # negative: the library's wrap-around, as eager
    np.testing.assert_array_equal(gather(x, neg), np.take_along_axis(x, neg % 7, 1))
    bad = idx.copy()
    bad[2, 3] = 7                      # out of range: the library's error, as eager
    with pytest.raises(IndexError):
        gather(x, bad)
    with pytest.raises(IndexError):
        scatter(x, bad, src)


class _Kernel:
    cfunc = "kernel"


def test_impl_is_chosen_by_call_position_not_timing():
    """A graph's first run takes the library runner; every later run the kernel, waiting for a
    compile still running: so two runs of a program give the same numbers whatever the
    compile's timing. A failed compile leaves the library runner for good."""
    import threading
    import time

    from codegen import jit

    for fails in (False, True):
        pending = jit.Pending()
        calls = []
        make = direct.factory(pending, lambda free: lambda env: calls.append("library"), 0,
                              (), lambda kernel: calls.append(kernel))
        run = make(())

        def finish(pending=pending, fails=fails):
            time.sleep(0.05)
            pending.result = RuntimeError("no LLVM") if fails else _Kernel()
            pending._done.set()

        run({})  # (compile not done: the library runner, as on a first run)
        t = threading.Thread(target=finish)
        t.start()
        run({})  # (still compiling: waits for it)
        run({})
        t.join()
        assert calls == ["library"] * 3 if fails else ["library", "kernel", "kernel"], calls
