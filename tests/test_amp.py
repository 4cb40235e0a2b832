"""eager.amp against torch.amp on the CPU: autocast's output dtype per op (bfloat16 and
float16 regions), values, gradients through autocast regions, nesting, disabled regions, the
decorator form, the state functions, custom_fwd/custom_bwd, GradScaler's scale/growth-tracker
sequences on the same gradients with infs injected, its errors and state_dict; a compiled
function whose body opens an autocast region gives eager's results."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import eager  # noqa: E402

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((8, 8)).astype(np.float32)
B = RNG.standard_normal(8).astype(np.float32)
IMG = RNG.standard_normal((2, 3, 6, 6)).astype(np.float32)
K = RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)
T = np.array([0, 3, 5, 7])


def _cases(lib):
    """name -> thunk computing one op under the current autocast state with `lib`."""
    F = lib.nn.functional
    x, w, b = lib.tensor(X), lib.tensor(W), lib.tensor(B)
    h = x.to(lib.bfloat16)
    img, k, t = lib.tensor(IMG), lib.tensor(K), lib.tensor(T)
    return {
        "matmul": lambda: x @ w, "mm": lambda: lib.mm(x, w), "linear": lambda: F.linear(x, w, b),
        "bmm": lambda: lib.bmm(x[None], w[None]), "addmm": lambda: lib.addmm(b, x, w),
        "baddbmm": lambda: lib.baddbmm(x[None], x[None], w[None]),
        "conv2d": lambda: F.conv2d(img, k), "conv1d": lambda: F.conv1d(img[:, :, 0], k[:, :, 0]),
        "Linear module": lambda: _linear_module(lib)(x),
        "matmul f64": lambda: x.double() @ w.double(), "matmul int": lambda: t[None] @ t[:, None],
        "softmax bf16": lambda: lib.softmax(h, -1), "log_softmax bf16": lambda: h.log_softmax(-1),
        "exp bf16": lambda: h.exp(), "sum bf16": lambda: h.sum(), "cumsum bf16": lambda: h.cumsum(0),
        "prod": lambda: h.prod(), "prod f32": lambda: x.prod(), "relu": lambda: F.relu(h),
        "layer_norm": lambda: F.layer_norm(h, (8,)),
        "mse_loss": lambda: F.mse_loss(h, h * 2), "l1_loss": lambda: F.l1_loss(h, h * 2),
        "cross_entropy": lambda: F.cross_entropy(h, t), "nll_loss": lambda: F.nll_loss(h, t),
        "bce_with_logits": lambda: F.binary_cross_entropy_with_logits(h, h.sigmoid()),
        "smooth_l1": lambda: F.smooth_l1_loss(h, h * 2), "huber": lambda: F.huber_loss(h, h),
        "kl_div": lambda: F.kl_div(h, h.softmax(-1)),
        "cat mixed": lambda: lib.cat([x, h]), "stack mixed": lambda: lib.stack([x, h]),
        "cat f32": lambda: lib.cat([x, x]), "add mixed": lambda: x + h,
        "einsum": lambda: lib.einsum("ij,jk->ik", x, w), "dot": lambda: lib.dot(x[0], x[1]),
        "trace": lambda: lib.trace(h), "mean": lambda: h.mean(),
        "conv3d": lambda: F.conv3d(img[:, :, None].expand(2, 3, 2, 6, 6), k[:, :, None]),
        "conv_transpose2d": lambda: F.conv_transpose2d(img, k.transpose(0, 1)),
        "soft_margin_loss": lambda: F.soft_margin_loss(h, h.sign()),
        "triplet_margin_loss": lambda: F.triplet_margin_loss(h, h * 2, h * 3),
        "max_pool3d": lambda: F.max_pool3d(img[:, :, None].to(lib.bfloat16), (1, 2, 2)),
        "group_norm": lambda: F.group_norm(h.reshape(2, 4, 4), 2),
    }


def _linear_module(lib):
    m = lib.nn.Linear(8, 8)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(W))
        m.bias.copy_(lib.tensor(B))
    return m


def _dtype_name(r):
    return str(r.dtype).split(".")[-1]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("name", list(_cases(eager)))
def test_output_dtype_and_value_per_op(name, dtype):
    with torch.autocast("cpu", dtype=getattr(torch, dtype)):
        want = _cases(torch)[name]()
    with eager.autocast("cpu", dtype=getattr(eager, dtype)):
        got = _cases(eager)[name]()
    assert _dtype_name(got) == _dtype_name(want), name
    tol = 2e-2 if _dtype_name(want) in ("bfloat16", "float16") else 1e-2
    np.testing.assert_allclose(got.detach().double().numpy(), want.detach().double().numpy(),
                               rtol=tol, atol=tol * 4)


def test_outside_a_region_nothing_is_cast():
    x, w = eager.tensor(X), eager.tensor(W)
    with eager.autocast("cpu"):
        pass
    assert (x @ w).dtype is eager.float32
    from eager import dispatch

    assert dispatch.autocast_hook is None and not dispatch.POST_HOOKS


def test_nested_and_disabled_regions_and_state_functions():
    x, w = eager.tensor(X), eager.tensor(W)
    seen = []
    for lib, xs, ws in ((torch, torch.tensor(X), torch.tensor(W)), (eager, x, w)):
        row = [lib.is_autocast_enabled("cpu"), str(lib.get_autocast_dtype("cpu"))[-8:]]
        with lib.autocast("cpu", dtype=lib.float16):
            row += [str((xs @ ws).dtype)[-8:], lib.is_autocast_enabled("cpu")]
            with lib.autocast("cpu", enabled=False):
                row += [str((xs @ ws).dtype)[-8:], lib.is_autocast_enabled("cpu")]
                with lib.autocast("cpu", dtype=lib.bfloat16):
                    row += [str((xs @ ws).dtype)[-8:], str(lib.get_autocast_dtype("cpu"))[-8:]]
            row += [str((xs @ ws).dtype)[-8:], str(lib.get_autocast_dtype("cpu"))[-8:]]
        row += [lib.is_autocast_enabled("cpu"), str((xs @ ws).dtype)[-8:]]
        lib.set_autocast_enabled("cpu", True)
        row += [lib.is_autocast_enabled("cpu"), str((xs @ ws).dtype)[-8:]]
        lib.set_autocast_enabled("cpu", False)
        row += [str((xs @ ws).dtype)[-8:], lib.is_autocast_enabled()]
        seen.append(row)
    assert seen[0] == seen[1]


def test_decorator_form_and_amp_alias():
    @eager.autocast("cpu")
    def f(a, b):
        return a @ b, eager.is_autocast_enabled("cpu")

    out, on = f(eager.tensor(X), eager.tensor(W))
    assert out.dtype is eager.bfloat16 and on and not eager.is_autocast_enabled("cpu")
    with eager.amp.autocast(device_type="cpu"):
        assert (eager.tensor(X) @ eager.tensor(W)).dtype is eager.bfloat16
    assert eager.amp.is_autocast_available("cpu") == torch.amp.is_autocast_available("cpu")
    assert eager.amp.is_autocast_available("cuda") == torch.amp.is_autocast_available("cuda")


def test_unsupported_dtype_and_bad_device_type():
    for lib in (torch, eager):
        with pytest.warns(UserWarning, match="not supported"):
            region = lib.autocast("cpu", dtype=lib.float64)
        with region:
            assert (lib.ones(2, 2) @ lib.ones(2, 2)).dtype is lib.float32
        with pytest.raises(ValueError, match="device_type"):
            lib.autocast(0)


def _mlp_grads(lib, dtype):
    m1, m2 = _linear_module(lib), _linear_module(lib)
    x, t = lib.tensor(X), lib.tensor(T)
    with lib.autocast("cpu", dtype=getattr(lib, dtype)):
        logits = m2(lib.relu(m1(x)))
        loss = lib.nn.functional.cross_entropy(logits, t)
    loss.backward()
    return logits, loss, [p.grad for p in list(m1.parameters()) + list(m2.parameters())]


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_training_step_under_autocast_matches_torch(dtype):
    lt, losst, gt = _mlp_grads(torch, dtype)
    le, losse, ge = _mlp_grads(eager, dtype)
    assert _dtype_name(le) == _dtype_name(lt) and _dtype_name(losse) == _dtype_name(losst)
    np.testing.assert_allclose(losse.item(), losst.item(), rtol=2e-2)
    for a, b in zip(ge, gt):
        assert _dtype_name(a) == _dtype_name(b) == "float32"
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=5e-2, atol=5e-2)


def test_parameter_casts_are_cached_within_a_region():
    m = _linear_module(eager)
    x = eager.tensor(X)
    with eager.autocast("cpu"):
        a, b = m(x), m(x)
        from eager.amp.policy import STATE

        assert len(STATE.cache) == 2  # weight and bias, cast once
    assert not STATE.cache  # dropped on leaving the outermost region
    (a.float().sum() + b.float().sum()).backward()
    assert m.weight.grad.dtype is eager.float32


def _custom_fn(lib, cast_inputs):
    class MyMM(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a.mm(b), lib.is_autocast_enabled("cpu")

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g, _):
            a, b = ctx.saved_tensors
            return g.mm(b.t()), a.t().mm(g)

    a = lib.tensor(X, requires_grad=True)
    b = lib.tensor(W, requires_grad=True)
    with lib.autocast("cpu"):
        out, on = MyMM.apply(a, b)
    out.float().sum().backward()
    return str(out.dtype)[-8:], on, str(a.grad.dtype)[-8:], a.grad.float().numpy()


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_bwd(cast_inputs):
    ct = None if cast_inputs is None else torch.float32
    ce = None if cast_inputs is None else eager.float32
    t, e = _custom_fn(torch, ct), _custom_fn(eager, ce)
    assert t[:3] == e[:3]
    np.testing.assert_allclose(e[3], t[3], rtol=2e-2, atol=2e-2)


# ---------------------------------------------------------------- GradScaler


def _scaler_run(lib, inject, **kw):
    """A few scaled steps of a linear model; `inject[i]` puts inf/nan in step i's grads."""
    m = _linear_module(lib)
    opt = lib.optim.SGD(m.parameters(), lr=0.1)
    scaler = lib.amp.GradScaler("cpu", **kw)
    x = lib.tensor(X)
    seq = []
    for i, bad in enumerate(inject):
        opt.zero_grad()
        loss = (m(x) ** 2).mean()
        scaler.scale(loss).backward()
        if bad is not None:
            with lib.no_grad():
                m.weight.grad[0, 0] = bad
        if i % 3 == 1:  # an explicit unscale_ before step on some iterations
            scaler.unscale_(opt)
        before = m.weight.detach().clone()
        scaler.step(opt)
        stepped = not bool((m.weight.detach() == before).all())
        scaler.update()
        seq.append((scaler.get_scale(), scaler._get_growth_tracker(), stepped))
    return seq, scaler, m.weight.detach().numpy()


@pytest.mark.parametrize("kw", [{}, {"init_scale": 4.0, "growth_interval": 2},
                                {"growth_factor": 3.0, "backoff_factor": 0.25,
                                 "growth_interval": 3}])
def test_grad_scaler_sequences_match_torch(kw):
    inject = [None, None, float("inf"), None, None, None, float("nan"), None, None, None]
    st, scaler_t, wt = _scaler_run(torch, inject, **kw)
    se, scaler_e, we = _scaler_run(eager, inject, **kw)
    assert se == st
    assert scaler_e.state_dict() == scaler_t.state_dict()
    np.testing.assert_allclose(we, wt, rtol=1e-5, atol=1e-6)


def test_grad_scaler_state_dict_round_trip_and_disabled():
    _, s, _ = _scaler_run(eager, [None, float("inf"), None], init_scale=8.0, growth_interval=2)
    fresh = eager.amp.GradScaler("cpu")
    fresh.load_state_dict(s.state_dict())
    assert fresh.state_dict() == s.state_dict()
    off = eager.amp.GradScaler("cpu", enabled=False)
    loss = eager.tensor(3.0)
    assert off.scale(loss) is loss and off.get_scale() == 1.0 and off.state_dict() == {}
    with pytest.raises(RuntimeError, match="empty"):
        fresh.load_state_dict({})
    tsd = torch.amp.GradScaler("cpu")
    tsd.load_state_dict(s.state_dict())
    assert tsd.state_dict() == s.state_dict()


def test_grad_scaler_errors_as_torch():
    for lib in (torch, eager):
        m = _linear_module(lib)
        opt = lib.optim.SGD(m.parameters(), lr=0.1)
        scaler = lib.amp.GradScaler("cpu")
        with pytest.raises(AssertionError, match="_scale is None"):
            scaler.step(opt)
        scaler.scale(m(lib.tensor(X)).sum()).backward()
        scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="already been called"):
            scaler.unscale_(opt)
        scaler.step(opt)
        with pytest.raises(RuntimeError, match="after step"):
            scaler.unscale_(opt)
        with pytest.raises(RuntimeError, match="step\\(\\) has already"):
            scaler.step(opt)
        with pytest.raises(RuntimeError, match="Closure"):
            lib.amp.GradScaler("cpu").step(opt, closure=lambda: 0)
        with pytest.raises(AssertionError, match="growth factor"):
            lib.amp.GradScaler("cpu", growth_factor=1.0)
        scaler.update(2.0)
        assert scaler.get_scale() == 2.0
        scaled = scaler.scale([lib.ones(2), (lib.ones(1),)])
        assert isinstance(scaled, list) and isinstance(scaled[1], tuple)
        assert float(scaled[1][0][0]) == 2.0


def test_cuda_scaler_without_gpu_disables():
    if eager.cuda.is_available():
        pytest.skip("a GPU is present")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        s = eager.amp.GradScaler()
        legacy = eager.cuda.amp.GradScaler()
    assert not s.is_enabled() and not legacy.is_enabled() and len(w) == 2


# ---------------------------------------------------------------- capture


def test_compiled_function_with_an_autocast_region_gives_eager_results():
    import capture

    w = eager.tensor(W)

    def f(x):
        y = x * 2
        with eager.autocast("cpu"):
            z = y @ w
            s = z.softmax(-1)
        return z, s, (z.float() + 1).sum()

    x = eager.tensor(X)
    want = f(x)
    cf = capture.compile(f)
    for _ in range(2):  # the first call captures, the second runs the cache
        got = cf(x)
        for a, b in zip(got, want):
            assert a.dtype is b.dtype
            np.testing.assert_array_equal(a.float().numpy(), b.float().numpy())


def test_compiled_function_called_inside_a_region_gives_eager_results():
    import capture

    w = eager.tensor(W)
    cf = capture.compile(lambda x: (x @ w).relu())
    x = eager.tensor(X)
    outside = cf(x)
    with eager.autocast("cpu"):
        inside = cf(x)
        want = (x @ w).relu()
    assert outside.dtype is eager.float32
    assert inside.dtype is want.dtype is eager.bfloat16
    np.testing.assert_array_equal(inside.float().numpy(), want.float().numpy())


def test_regions_are_per_thread():
    """A region in one thread does not cast another thread's ops (PyTorch's state is
    thread-local too)."""
    import threading

    x, w = eager.tensor(X), eager.tensor(W)
    entered, done, seen = threading.Event(), threading.Event(), {}

    def other():
        entered.wait()
        seen["other"] = (x @ w).dtype
        done.set()

    t = threading.Thread(target=other)
    t.start()
    with eager.autocast("cpu"):
        entered.set()
        done.wait()
        seen["here"] = (x @ w).dtype
    t.join()
    assert seen == {"other": eager.float32, "here": eager.bfloat16}
