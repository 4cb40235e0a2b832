"""eager.autograd's engine: backward/grad arguments and errors, graph release, higher order,
grad modes, hooks, retain_grad, leaf rules, memory.

References: PyTorch when importable (the same code run side by side through `LIBS`), otherwise
closed-form derivatives checked by central differences; never values recorded from wick."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import eager
from eager import autograd

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
RNG = np.random.default_rng(0)


def _t(lib, a, rg=False):
    return lib.tensor(np.asarray(a), requires_grad=rg)


def _np(t):
    return t.detach().numpy()


def both(fn):
    """Run `fn(lib)` with eager and (when importable) torch; return the two results."""
    got = fn(eager)
    want = fn(torch) if torch is not None else None
    return got, want


def _check(got, want, rtol=1e-10, atol=1e-12):
    if want is None:
        return
    if isinstance(got, (tuple, list)):
        assert len(got) == len(want)
        for g, w in zip(got, want):
            _check(g, w, rtol, atol)
        return
    if got is None or want is None:
        assert got is None and want is None
        return
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol, atol=atol)


def _numeric_grad(f, x0, eps=1e-6):
    g = np.zeros_like(x0)
    for i in np.ndindex(x0.shape):
        hi, lo = x0.copy(), x0.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


# ---------------------------------------------------------------- backward and grad


def test_backward_matches_torch_and_finite_differences():
    x0 = RNG.standard_normal((3, 4))
    w0 = RNG.standard_normal(4)

    def run(lib):
        x, w = _t(lib, x0, True), _t(lib, w0, True)
        y = (lib.tanh(x * w) + (x * x).exp() / (w * w + 1)).sum()
        y.backward()
        return _np(x.grad), _np(w.grad)

    got, want = both(run)
    _check(got, want)

    def f(a):
        return float(np.sum(np.tanh(a * w0) + np.exp(a * a) / (w0 * w0 + 1)))

    np.testing.assert_allclose(got[0], _numeric_grad(f, x0), rtol=1e-6, atol=1e-6)


def test_grad_returns_tuple_and_leaves_dot_grad_untouched():
    def run(lib):
        x = _t(lib, [0.5, -1.0, 2.0], True)
        y = _t(lib, [1.5, 2.0, -0.5], True)
        gx, gy = lib.autograd.grad((x * y).sum(), (x, y))
        return _np(gx), _np(gy), x.grad is None and y.grad is None

    got, want = both(run)
    assert got[2]
    _check(got[:2], want[:2] if want else None)
    np.testing.assert_allclose(got[0], [1.5, 2.0, -0.5])


def test_grad_single_input_and_repeated_inputs():
    x = _t(eager, [1.0, 2.0], True)
    (g,) = autograd.grad((x * x).sum(), x)
    np.testing.assert_allclose(_np(g), [2.0, 4.0])
    y = (x * 3).sum()
    g1, g2 = autograd.grad(y, [x, x])
    np.testing.assert_allclose(_np(g1), [3.0, 3.0])
    np.testing.assert_allclose(_np(g2), [3.0, 3.0])


def test_grad_of_non_leaf_input_and_pruning():
    def run(lib):
        x = _t(lib, [1.0, 2.0, 3.0], True)
        h = x * 2
        y = (h * h).sum()
        (gh,) = lib.autograd.grad(y, h)
        return _np(gh)

    got, want = both(run)
    _check(got, want)
    np.testing.assert_allclose(got, [4.0, 8.0, 12.0])


def test_grad_only_runs_the_part_leading_to_inputs():
    x = _t(eager, [1.0, 2.0], True)
    z = _t(eager, [3.0, 4.0], True)
    a = x * 2
    b = z * z
    y = (a + b).sum()
    with eager.no_grad():
        z.mul_(2)  # b's saved z is stale; grad w.r.t. x must not need it
    (gx,) = autograd.grad(y, x)
    np.testing.assert_allclose(_np(gx), [2.0, 2.0])


def test_grad_errors():
    x = _t(eager, [1.0, 2.0], True)
    c = _t(eager, [1.0, 2.0])
    u = _t(eager, [5.0], True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        autograd.grad((x * 2).sum(), c)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        autograd.grad((x * 2).sum(), [x, u])
    _, gu = autograd.grad((x * 2).sum(), [x, u], allow_unused=True)
    assert gu is None
    _, gu = autograd.grad((x * 2).sum(), [x, u], materialize_grads=True)
    np.testing.assert_array_equal(_np(gu), [0.0])
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar"):
        autograd.grad(x * 2, x)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        autograd.grad(x * 2, x, eager.ones(3))
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad"):
        autograd.grad(c * 2, x)
    with pytest.raises(ValueError, match="allow_unused"):
        autograd.grad((x * 2).sum(), x, allow_unused=False, materialize_grads=True)


@needs_torch
def test_error_types_match_torch():
    cases = [
        lambda lib: lib.autograd.grad((_t(lib, [1.0], True) * 2).sum(), _t(lib, [1.0])),
        lambda lib: (_t(lib, [1.0, 2.0], True) * 2).backward(),
        lambda lib: _t(lib, [1.0]).sum().backward(),
        lambda lib: (_t(lib, [1.0, 2.0], True) * 2).backward(lib.ones(3)),
    ]
    for case in cases:
        kinds = []
        for lib in (eager, torch):
            with pytest.raises(Exception) as info:
                case(lib)
            kinds.append(type(info.value))
        assert kinds[0] is kinds[1]


def test_backward_with_gradient_argument_and_several_roots():
    def run(lib):
        x = _t(lib, [1.0, 2.0, 3.0], True)
        y1 = x * x
        y2 = (x * 3).sum()
        lib.autograd.backward([y1, y2], [_t(lib, [1.0, 0.5, 2.0]), None])
        return _np(x.grad)

    got, want = both(run)
    _check(got, want)
    np.testing.assert_allclose(got, [2 * 1 + 3, 2 * 2 * 0.5 + 3, 2 * 3 * 2 + 3])


def test_backward_inputs_argument_restricts_accumulation():
    def run(lib):
        x = _t(lib, [1.0, 2.0], True)
        w = _t(lib, [3.0, 4.0], True)
        h = x * w
        (h * h).sum().backward(inputs=[w, h])
        return _np(w.grad), _np(h.grad), x.grad is None

    got, want = both(run)
    assert got[2]
    _check(got[:2], want[:2] if want else None)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (_t(eager, [1.0], True) * 2).sum().backward(inputs=[])


def test_freed_graph_raises_and_retain_graph_keeps_it():
    x = _t(eager, [1.0, 2.0], True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.backward()
    z = x.exp().sum()
    z.backward(retain_graph=True)
    z.backward()
    np.testing.assert_allclose(_np(x.grad), 2 * np.array([1.0, 2.0]) + 2 * np.exp([1.0, 2.0]))


def test_create_graph_higher_order_matches_torch():
    x0 = np.array([0.3, -1.2, 2.0])

    def run(lib):
        x = _t(lib, x0, True)
        y = (lib.tanh(x) * x.exp()).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        (t3,) = lib.autograd.grad(h.sum(), x)
        return _np(g), _np(h), _np(t3), g.requires_grad

    got, want = both(run)
    assert got[3]
    _check(got[:3], want[:3] if want else None, rtol=1e-9)
    t, e = np.tanh(x0), np.exp(x0)
    np.testing.assert_allclose(got[0], (1 - t**2) * e + t * e, rtol=1e-12)


def test_backward_create_graph_accumulates_grad_with_history():
    x = _t(eager, [1.0, 2.0], True)
    (x * x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad
    (gg,) = autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(_np(gg), 6 * np.array([1.0, 2.0]))


def test_accumulation_and_grad_not_aliased():
    x = _t(eager, [1.0, 2.0], True)
    y = _t(eager, [3.0, 4.0], True)
    v = eager.tensor([1.0, 1.0])
    (x + y).backward(v)
    assert x.grad is not v and y.grad is not v
    assert not np.shares_memory(_np(x.grad), _np(y.grad))
    assert not np.shares_memory(_np(x.grad), v.numpy())
    x.grad.zero_()
    np.testing.assert_array_equal(_np(y.grad), [1.0, 1.0])
    np.testing.assert_array_equal(v.numpy(), [1.0, 1.0])
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_array_equal(_np(x.grad), [5.0, 5.0])


def test_long_chain_does_not_recurse():
    import sys

    x = _t(eager, [1.0], True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(300)  # far below the chain's length: the engine must be iterative
    try:
        (g,) = autograd.grad(y.sum(), x, create_graph=True)
        y.sum().backward()
    finally:
        sys.setrecursionlimit(limit)
    assert x.grad.item() == 1.0 and g.item() == 1.0


def test_broadcast_gradients_reduce_to_operand_shapes():
    a0, b0 = RNG.standard_normal((4, 1, 3)), RNG.standard_normal((5, 1))

    def run(lib):
        a, b = _t(lib, a0, True), _t(lib, b0, True)
        (a * b + b).sum().backward()
        return _np(a.grad), _np(b.grad)

    got, want = both(run)
    _check(got, want)
    np.testing.assert_allclose(got[1], (a0.sum() + 12) * np.ones((5, 1)), rtol=1e-12)


def test_complex_root_and_integer_leaves():
    with pytest.raises(RuntimeError, match="Only Tensors of floating point"):
        eager.tensor([1, 2], requires_grad=True)
    with pytest.raises(RuntimeError, match="floating point"):
        eager.tensor([True, False]).requires_grad_()
    if hasattr(eager, "complex128"):
        z = eager.tensor(np.array([1 + 2j]), requires_grad=True)
        with pytest.raises(RuntimeError, match="real scalar outputs"):
            (z * 2).sum().backward()


# ---------------------------------------------------------------- memory


def test_saved_tensors_freed_after_backward():
    x = _t(eager, RNG.standard_normal(5), True)
    h = x.exp()
    hw = weakref.ref(h)
    aw = weakref.ref(h._data)
    y = (h.sin() * 2).sum()
    del h
    gc.collect()
    assert hw() is not None  # the graph keeps it for backward
    y.backward()
    gc.disable()  # refcounting alone must free it: no cycles through the graph
    try:
        assert hw() is None and aw() is None
    finally:
        gc.enable()


def test_graph_dropped_without_backward_is_freed_by_refcount():
    x = _t(eager, RNG.standard_normal(5), True)
    gc.disable()
    try:
        h = x.exp()
        y = h.tanh().sum()
        refs = [weakref.ref(h), weakref.ref(y), weakref.ref(y.grad_fn)]
        del h, y
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


def test_retain_graph_keeps_saved_tensors():
    x = _t(eager, [1.0, 2.0], True)
    h = x.exp()
    hw = weakref.ref(h)
    y = h.sin().sum()
    del h
    y.backward(retain_graph=True)
    assert hw() is not None


# ---------------------------------------------------------------- grad modes


def test_grad_modes_context_and_decorator():
    x = _t(eager, [1.0], True)
    with eager.no_grad():
        assert not eager.is_grad_enabled()
        assert not (x * 2).requires_grad
        with eager.enable_grad():
            assert (x * 2).requires_grad
    assert eager.is_grad_enabled()

    @eager.no_grad()
    def f(t):
        return t * 2

    assert not f(x).requires_grad

    @eager.enable_grad()
    def g(t):
        return t * 2

    with eager.no_grad():
        assert g(x).requires_grad

    eager.set_grad_enabled(False)
    assert not eager.is_grad_enabled()
    eager.set_grad_enabled(True)
    with eager.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert eager.is_grad_enabled()

    @eager.set_grad_enabled(False)
    def h(t):
        return t * 2

    assert eager.is_grad_enabled() and not h(x).requires_grad


def test_no_grad_decorates_generators():
    x = _t(eager, [1.0], True)

    @eager.no_grad()
    def gen():
        yield (x * 2).requires_grad
        yield eager.is_grad_enabled()

    assert list(gen()) == [False, False]
    assert eager.is_grad_enabled()


def test_inference_mode():
    x = _t(eager, [1.0, 2.0], True)
    with autograd.inference_mode():
        assert autograd.is_inference_mode_enabled() and not eager.is_grad_enabled()
        t = x * 2
        made = eager.ones(2)
        assert not t.requires_grad
        with autograd.inference_mode(False):
            assert not autograd.is_inference_mode_enabled()
            n = eager.ones(2)
    assert t.is_inference() and made.is_inference() and not n.is_inference()
    assert not x.is_inference() and eager.is_grad_enabled()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (t * x).sum()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside"):
        t.add_(1)
    (t.clone() * x).sum().backward()  # a clone is a normal tensor
    np.testing.assert_allclose(_np(x.grad), [2.0, 4.0])

    @autograd.inference_mode()
    def f(a):
        return a * 2

    @autograd.inference_mode
    def g(a):
        return a * 2

    assert f(x).is_inference() and g(x).is_inference()


# ---------------------------------------------------------------- leaves, detach


def test_leaf_rules_and_detach():
    def run(lib):
        x = _t(lib, [1.0, 2.0], True)
        y = x * 2
        z = y.detach()
        out = [x.is_leaf, y.is_leaf, z.is_leaf, z.requires_grad, y.requires_grad_(True) is y]
        z.requires_grad_()
        out.append(z.requires_grad)
        d = (x * 3)
        d.detach_()
        out += [d.is_leaf, d.requires_grad, d.grad_fn is None]
        return out

    got, want = both(run)
    assert got == (want if want is not None else got)
    y = _t(eager, [1.0], True) * 2
    with pytest.raises(RuntimeError, match="only change requires_grad flags of leaf"):
        y.requires_grad_(False)
    v = (_t(eager, [1.0, 2.0], True) * 2).reshape(2, 1)
    with pytest.raises(RuntimeError, match="Can't detach views in-place"):
        v.detach_()


def test_detach_shares_data_and_version():
    x = _t(eager, [1.0, 2.0], True)
    d = x.detach()
    d.add_(1)
    np.testing.assert_array_equal(_np(x), [2.0, 3.0])
    assert x._version == d._version == 1


# ---------------------------------------------------------------- hooks


def test_tensor_hooks_on_leaf_and_non_leaf_match_torch():
    def run(lib):
        seen = []
        x = _t(lib, [1.0, 2.0], True)
        h = x * 3
        h1 = h.register_hook(lambda g: seen.append(_np(g).tolist()))
        h.register_hook(lambda g: g * 10)
        x.register_hook(lambda g: seen.append(_np(g).tolist()))
        (h * h).sum().backward(retain_graph=True)
        h1.remove()
        x.grad = None
        h2 = h * 1
        h2.sum().backward()
        return seen, _np(x.grad)

    got, want = both(run)
    if want is not None:
        assert got[0] == want[0]
        _check(got[1], want[1])
    assert got[0][0] == [6.0, 12.0] and got[0][1] == [180.0, 360.0]


def test_hook_errors_and_handle_context():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't"):
        eager.ones(2).register_hook(lambda g: g)
    x = _t(eager, [1.0], True)
    calls = []
    with x.register_hook(lambda g: calls.append(1)):
        (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert calls == [1]


def test_node_hooks_and_post_accumulate_hook():
    x = _t(eager, [1.0, 2.0], True)
    y = x * 2
    log = []
    y.grad_fn.register_prehook(lambda go: log.append(("pre", _np(go[0]).tolist())))
    y.grad_fn.register_hook(lambda gi, go: (gi[0] * 0 + 7,))
    x.register_post_accumulate_grad_hook(lambda t: log.append(("acc", _np(t.grad).tolist())))
    y.sum().backward()
    assert log == [("pre", [1.0, 1.0]), ("acc", [7.0, 7.0])]
    y.grad_fn.metadata["tag"] = 1
    assert y.grad_fn.metadata == {"tag": 1}
    assert y.grad_fn.name() == "MulBackward0"
    assert y.grad_fn.next_functions[0][0].variable is x


def test_retain_grad_matches_torch():
    def run(lib):
        x = _t(lib, [1.0, 2.0], True)
        h = x * x
        h.retain_grad()
        h.retain_grad()
        y = (h * 3).sum()
        y.backward(retain_graph=True)
        first = _np(h.grad).copy()
        y.backward()
        x.retain_grad()  # no-op on leaves
        return first, _np(h.grad), h.retains_grad, x.retains_grad

    got, want = both(run)
    assert got[2] and not got[3]
    _check(got[:2], want[:2] if want else None)
    with pytest.raises(RuntimeError, match="can't retain_grad on Tensor that has requires_grad"):
        eager.ones(2).retain_grad()


def test_grad_fn_graph_structure():
    x = _t(eager, [1.0], True)
    w = _t(eager, [2.0])
    y = (x * w + 1).exp()
    fn = y.grad_fn
    assert fn.name() == "ExpBackward0"
    add = fn.next_functions[0][0]
    assert add.name() == "AddBackward0"
    mul = add.next_functions[0][0]
    assert mul.next_functions[1] == (None, 0)
    assert isinstance(mul.next_functions[0][0], autograd.AccumulateGrad)
    assert mul.next_functions[0][0] is (x * 3).grad_fn.next_functions[0][0]  # one per leaf


def test_mean_one_node_matches_decomposition():
    """Eager records mean as one MeanBackward0 (ir eager_backward); values and gradients are the
    decomposition's (sum, then div) bit for bit, first and second order."""
    from eager.dispatch import F
    from ir import REGISTRY

    rng = np.random.default_rng(3)
    for dt in (np.float32, np.float64):
        x0 = rng.standard_normal((3, 4, 5)).astype(dt)
        for kw in ({}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}):
            a = eager.tensor(x0, requires_grad=True)
            m = a.mean(**kw)
            assert m.grad_fn.name() == "MeanBackward0"
            b = eager.tensor(x0, requires_grad=True)
            attrs = {"dim": kw.get("dim"), "keepdim": kw.get("keepdim", False)}
            d = REGISTRY["mean"].decomp(F, b, **attrs)
            assert np.array_equal(m.detach().numpy(), d.detach().numpy())
            g = eager.tensor(rng.standard_normal(tuple(m.shape)).astype(dt))
            (ga,) = eager.autograd.grad(m, a, g, create_graph=True)
            (gb,) = eager.autograd.grad(d, b, g, create_graph=True)
            assert np.array_equal(ga.detach().numpy(), gb.detach().numpy())


def test_zero_dim_gradients_summed_from_two_uses_stay_tensors():
    a = eager.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = eager.tensor(0.5, requires_grad=True)
    ((a + b) * (a + b)).sum().backward()
    want = 2 * (np.array([1.0, 2.0, 3.0]) + 0.5)
    np.testing.assert_allclose(a.grad.numpy(), want)
    assert b.grad.shape == () and isinstance(b.grad, eager.Tensor)
    np.testing.assert_allclose(b.grad.numpy(), want.sum())
    b.grad = None
    (b * b + b * 3.0).backward()  # three 0-d gradients meet at b
    np.testing.assert_allclose(b.grad.numpy(), 2 * 0.5 + 3.0)


@pytest.mark.parametrize("fn", [eager.relu, eager.amax, eager.nansum, eager.abs,
                                lambda t: eager.where(t > 0, t, 0.0), lambda t: t.clamp(min=0.1)])
def test_zero_dim_leaves_get_zero_dim_array_gradients(fn):
    for value in (0.75, -0.5):
        for _ in range(2):  # the second pass runs the cached plans
            x = eager.tensor(np.float32(value), requires_grad=True)
            fn(x).backward()
            assert x.grad.shape == () and type(x.grad.numpy()) is np.ndarray
            if torch is not None:
                xt = torch.tensor(np.float32(value), requires_grad=True)
                tfn = {eager.relu: torch.relu, eager.amax: torch.amax, eager.nansum: torch.nansum,
                       eager.abs: torch.abs}.get(fn)
                if tfn is not None:
                    tfn(xt).backward()
                    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy())
