"""The convolution kernels (`ir/ops/conv.py`: channels-last im2col + GEMM, the stride-1 input
gradient as a flipped-weight convolution, col2im by strided additions otherwise) and
the pooling / batch norm paths against PyTorch: values and every gradient (input, weight, bias,
and the double backward) over stride, padding, dilation, groups, with and without bias, in
float32 and float64, for conv1d/2d/3d."""

from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")
TF = torch.nn.functional

TOL = {np.float32: {"rtol": 2e-4, "atol": 2e-4}, np.float64: {"rtol": 1e-10, "atol": 1e-10}}

CASES = [  # (input shape, weight shape, kwargs)
    ((4, 1, 8, 8), (16, 1, 3, 3), {"padding": 1}),
    ((3, 4, 9, 7), (6, 4, 3, 3), {"stride": 2, "padding": 1}),
    ((2, 4, 9, 8), (6, 2, 3, 2), {"stride": (2, 1), "padding": (2, 1), "dilation": (2, 1), "groups": 2}),
    ((2, 6, 7, 7), (6, 1, 3, 3), {"padding": 1, "groups": 6}),  # depthwise
    ((2, 3, 6, 6), (4, 3, 1, 1), {}),
    ((2, 3, 8, 7), (4, 3, 4, 3), {"padding": "same"}),  # odd total: extra on the right
    ((2, 3, 10, 10), (5, 3, 3, 3), {"stride": 3, "padding": 0, "dilation": 2}),  # uncovered tail
    ((2, 3, 11), (4, 3, 3), {"stride": 2, "padding": 1}),
    ((2, 3, 17, 16), (4, 3, 3, 3), {"padding": 1}),
    # stride 1: the input gradient is a convolution of the padded gradient with the flipped
    # weight; padding beyond the kernel's reach crops the gradient instead
    ((2, 3, 6, 5), (4, 3, 1, 2), {"padding": (2, 1)}),
    ((2, 4, 9, 8), (6, 2, 3, 2), {"padding": (3, 0), "dilation": (2, 3), "groups": 2}),
    # strided: per-offset GEMMs added into the channels-last input gradient, per group
    ((2, 4, 7, 9), (4, 2, 2, 3), {"stride": (3, 2), "padding": (1, 2), "groups": 2}),
    ((2, 2, 40, 20), (3, 2, 3, 3), {"stride": (2, 1), "padding": (1, 2), "dilation": (1, 2)}),
    ((2, 2, 300), (3, 2, 5), {"padding": 2}),
    ((2, 4, 5, 6, 4), (4, 2, 3, 2, 2), {"padding": (1, 0, 1), "groups": 2, "stride": (1, 2, 1)}),
]


def _conv(lib, x, w, b, kw):
    f = lib.nn.functional
    fn = {3: f.conv1d, 4: f.conv2d, 5: f.conv3d}[x.ndim]
    return fn(x, w, b, **kw)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs, ws, kw", CASES)
def test_conv_values_and_gradients_match_torch(xs, ws, kw, bias, dtype):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs).astype(dtype), rng.standard_normal(ws).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype) if bias else None
    results = []
    for lib in (eager, torch):
        ts = [lib.tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
        y = _conv(lib, *ts, kw)
        g = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(dtype))
        grads = lib.autograd.grad((y * g).sum(), [t for t in ts if t is not None],
                                  create_graph=True)
        # double backward: the gradient of a function of the first-order gradients
        second = sum((gr * gr).sum() for gr in grads)
        grads2 = lib.autograd.grad(second, [t for t in ts if t is not None], allow_unused=True)
        results.append([y] + list(grads) + list(grads2))
    for got, want in zip(*results):
        assert (got is None) == (want is None)
        if got is None:  # the bias gradient does not depend on any operand
            continue
        assert got.dtype == eager.float32 if dtype == np.float32 else eager.float64
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **TOL[dtype])


@pytest.mark.parametrize("kw", [{"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
                                {"kernel_size": 3, "stride": 1, "dilation": 2, "ceil_mode": True}])
def test_max_pool2d_values_and_gradient_match_torch(kw):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 4, 9, 8)).astype(np.float32)
    x[0, 0, :2, :2] = 1.5  # ties: the gradient goes to the first maximum
    x[1, 2, :3, :3] = -np.inf  # windows of -inf and padding: the first element inside
    x[2, 1, 4, 4] = np.nan  # NaN wins, as ATen
    out = []
    for lib in (eager, torch):
        t = lib.tensor(x, requires_grad=True)
        y, idx = lib.nn.functional.max_pool2d(t, return_indices=True, **kw)
        g = lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape)).astype(np.float32))
        (y * g).sum().backward()
        out.append((y.detach().numpy(), idx.numpy(), t.grad.numpy()))
    for got, want in zip(*out):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_training_gradients_match_torch(dtype):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 5, 4, 3)).astype(dtype)
    wb = rng.standard_normal((2, 5)).astype(dtype)
    out = []
    for lib in (eager, torch):
        t, w, b = (lib.tensor(a, requires_grad=True) for a in (x, wb[0], wb[1]))
        rm, rv = lib.zeros(5, dtype=t.dtype), lib.ones(5, dtype=t.dtype)
        y = lib.nn.functional.batch_norm(t, rm, rv, w, b, training=True)
        g = lib.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape)).astype(dtype))
        (y * g).sum().backward()
        out.append((y.detach().numpy(), t.grad.numpy(), w.grad.numpy(), b.grad.numpy(),
                    rm.numpy(), rv.numpy()))
    for got, want in zip(*out):
        np.testing.assert_allclose(got, want, **TOL[dtype])


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", [(6, 3, 4, 5), (7, 4), (3, 2, 5)])
def test_batch_norm_training_double_backward_matches_torch(shape, affine):
    """`_batch_norm_train`'s backward rule (ir/ops/batch_norm.py) is written with registry
    ops: its own gradient (create_graph) matches torch's batch-norm double backward."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    wb = rng.standard_normal((2, shape[1])) if affine else (None, None)
    out = []
    for lib in (eager, torch):
        ts = [lib.tensor(a, requires_grad=True) if a is not None else None
              for a in (x, wb[0], wb[1])]
        y = lib.nn.functional.batch_norm(ts[0], None, None, ts[1], ts[2], training=True)
        g = lib.tensor(np.sin(np.arange(y.numel())).reshape(tuple(y.shape)))
        leaves = [t for t in ts if t is not None]
        grads = lib.autograd.grad((y * g).sum(), leaves, create_graph=True)
        second = sum((gr * gr.detach().sin()).sum() for gr in grads)
        grads2 = lib.autograd.grad(second, leaves, allow_unused=True)
        out.append([y] + list(grads) + [torch.zeros(()) if v is None else v for v in grads2])
    for got, want in zip(*out):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(),
                                   rtol=1e-9, atol=1e-9)


def test_compiled_cnn_step_matches_eager():
    """A conv-BatchNorm-ReLU-maxpool-linear step compiled (capture; batch norm's backward rule
    and the conv / pooling kernels inside the compiled graphs) gives eager's loss, gradients
    and running statistics."""
    import capture

    rng = np.random.default_rng(4)
    x = rng.standard_normal((8, 2, 8, 8)).astype(np.float32)
    y = rng.integers(0, 5, 8)
    nn = eager.nn
    results = []
    for compiled in (False, True):
        eager.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(2, 6, 3, padding=1), nn.BatchNorm2d(6), nn.ReLU(),
                              nn.Conv2d(6, 4, 3, stride=2, padding=1, groups=2),
                              nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(16, 5))

        def loss_fn(a, b, model=model):
            return nn.functional.cross_entropy(model(a), b)

        f = capture.compile(loss_fn) if compiled else loss_fn
        for _ in range(2):  # the second call: the compiled graph's cache hit
            model.zero_grad()
            loss = f(eager.tensor(x), eager.tensor(y))
            loss.backward()
        results.append([loss.detach().numpy()] + [p.grad.numpy() for p in model.parameters()]
                       + [b.numpy() for b in model.buffers()])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)


@pytest.mark.parametrize("xs, ws, kw", [CASES[2], CASES[3], CASES[8], CASES[10]])
def test_conv_in_batch_chunks_matches_torch(xs, ws, kw, monkeypatch):
    """The kernels split the batch into chunks of about `_CHUNK` im2col elements (cache-sized
    columns for large images); with a tiny chunk every sample is its own chunk."""
    from ir.ops import conv as kernels

    monkeypatch.setattr(kernels, "_CHUNK", 1)
    test_conv_values_and_gradients_match_torch((3,) + xs[1:], ws, kw, True, np.float64)


def test_kernel_results_never_share_scratch_memory():
    """The kernels' temporaries live in reused scratch buffers (ir/ops/workspace.py); no
    result may be one of them: a later call would overwrite it (a 1-channel input gradient
    without padding was a view of its padded buffer)."""
    from ir.ops import conv as kernels
    from ir.ops import pooling

    rng = np.random.default_rng(5)
    attrs = {"stride": (1, 1), "padding": (0, 0), "dilation": (1, 1), "groups": 1}
    x, w = rng.standard_normal((2, 1, 5, 5)), rng.standard_normal((3, 1, 2, 2))
    g = rng.standard_normal((2, 3, 4, 4))
    results = [kernels._conv_impl(np, x, w, **attrs),
               kernels._input_grad_impl(np, g, w, x.shape, **attrs),
               kernels._weight_grad_impl(np, x, g, w.shape, **attrs),
               pooling._max_pool_indices_impl(np, x, (2, 2), (1, 1), (1, 1), (1, 1), (6, 6))]
    saved = [r.copy() for r in results]
    for r in results:
        assert r.base is None or r.base.nbytes == r.nbytes, "a view of a larger buffer"
    big = rng.standard_normal((3, 4, 9, 9))  # every scratch buffer rewritten
    kernels._conv_impl(np, big, rng.standard_normal((5, 4, 3, 3)), **attrs)
    kernels._input_grad_impl(np, rng.standard_normal((3, 5, 7, 7)),
                             rng.standard_normal((5, 4, 3, 3)), big.shape, **attrs)
    pooling._max_pool_indices_impl(np, big, (3, 3), (1, 1), (1, 1), (1, 1), (9, 9))
    for r, s in zip(results, saved):
        np.testing.assert_array_equal(r, s)


def test_scratch_views_are_aligned_and_reused():
    from ir.ops.workspace import scratch

    a = scratch(np, "test", (3, 5), np.float32)
    b = scratch(np, "test", (2, 3), np.float64)  # fits in the first one's buffer
    assert a.shape == (3, 5) and b.shape == (2, 3) and b.dtype == np.float64
    assert a.ctypes.data % 64 == 0 and b.ctypes.data % 64 == 0
    assert np.shares_memory(a, b)  # one buffer per tag
    assert not np.shares_memory(a, scratch(np, "other", (3, 5), np.float32))


def test_tune_malloc_respects_the_opt_out_and_user_policy(monkeypatch):
    import ctypes
    import sys

    from ir.ops.workspace import tune_malloc

    monkeypatch.setenv("WICK_MALLOC_TUNE", "0")
    assert tune_malloc() is False
    monkeypatch.delenv("WICK_MALLOC_TUNE")
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "1000")
    assert tune_malloc() is False
    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_")
    glibc = sys.platform.startswith("linux") and hasattr(ctypes.CDLL(None),
                                                          "gnu_get_libc_version")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert tune_malloc() is glibc


@pytest.mark.parametrize("fill", [0.0, -np.inf])
def test_padded_scratch_keeps_its_border_across_calls(fill):
    """`workspace.padded` writes a buffer's border once per geometry: every later call must
    still see `fill` outside the box even after the caller wrote the inside (and a call with
    another fill or box must not get that buffer)."""
    from ir.ops.workspace import padded

    inner = (slice(None), slice(1, 4), slice(2, 5))
    rng = np.random.default_rng(3)
    for _ in range(3):
        a = padded(np, (2, 5, 7, 3), np.float32, inner, fill)
        mask = np.ones(a.shape, bool)
        mask[inner] = False
        assert np.all(a[mask] == fill)
        a[inner] = rng.standard_normal(a[inner].shape)
    other = padded(np, (2, 5, 7, 3), np.float32, inner, 7.0)
    assert not np.shares_memory(other, a)
    mask = np.ones(other.shape, bool)
    mask[inner] = False
    assert np.all(other[mask] == 7.0)
    big = padded(np, (64, 40, 40, 16), np.float64, inner, fill)  # over the per-geometry size
    mask = np.ones(big.shape, bool)
    mask[inner] = False
    assert np.all(big[mask] == fill)
