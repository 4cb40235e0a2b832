"""Compiled autograd equals eager's (issue 13, item 5): gradient values, `None`-ness, the
`requires_grad` of outputs, errors on a second backward, and saved tensors freed after
`backward()`. Each function runs plainly and compiled (backend "llvm", and "eager" where the
path differs) on fresh leaves; the plain run is the reference."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import capture
import eager


def _leaves(*vals, rg=True):
    return [eager.tensor(v, requires_grad=rg) for v in vals]


def _run(f, vals, loss=lambda out: out[0].sum(), backend="llvm"):
    """(outputs' requires_grad, grads) of f on fresh leaves, plainly and compiled."""
    res = []
    for fn in (f, capture.compile(f, backend=backend)):
        args = _leaves(*vals)
        out = fn(*args)
        out = out if isinstance(out, tuple) else (out,)
        loss(out).backward()
        res.append(([o.requires_grad for o in out],
                    [None if a.grad is None else a.grad.numpy() for a in args]))
    return res


def _assert_same(res):
    (rg0, g0), (rg1, g1) = res
    assert rg0 == rg1
    assert [g is None for g in g0] == [g is None for g in g1]
    for a, b in zip(g0, g1):
        if a is not None:
            assert a.dtype == b.dtype
            np.testing.assert_allclose(b, a, rtol=1e-6)


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_output_unused_by_the_loss_gives_no_nan(backend):
    """An output the loss does not use gets no gradient: a non-finite value on its path must
    not turn into NaN gradients (was: NaN; eager: the loss path's finite gradient)."""
    def f(x, y):
        z = y / 0.0              # inf: its backward times a zero gradient would be NaN
        return x * y, z
    res = _run(f, ([1.0, 2.0], [3.0, 0.0]), backend=backend)
    _assert_same(res)
    assert np.isfinite(res[1][1][1]).all()


def test_leaf_reaching_only_an_unused_output_gets_none():
    """A leaf whose only path is to an output the loss ignores: grad None (was: zeros)."""
    def f(x, y):
        return x * 2, y.exp()
    res = _run(f, ([1.0, 2.0], [3.0, 4.0]))
    _assert_same(res)
    assert res[1][1][1] is None


def test_loss_over_both_outputs_still_reaches_every_leaf():
    def f(x, y):
        return x * 2, (y * x).exp()
    _assert_same(_run(f, ([1.0, 2.0], [0.5, -1.0]), loss=lambda o: o[0].sum() + o[1].sum()))


def test_ones_like_of_an_input_requiring_grad_does_not_require_grad():
    def f(x):
        return x * 2, eager.ones_like(x) * 3, x.to(eager.int64).to(eager.float32) + 1
    res = _run(f, ([1.0, 2.0],))
    _assert_same(res)
    assert res[1][0] == [True, False, False]


def test_cumsum_of_a_0d_tensor_in_the_compiled_backward():
    def f(x):
        return (x.cumsum(0) * x).exp()
    _assert_same(_run(f, (0.5,)))


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_graph_break_inside_no_grad_keeps_requires_grad(backend):
    def before(x):
        y = x * 2
        with eager.no_grad():
            capture.graph_break()
        return y * 3

    def after(x):
        with eager.no_grad():
            capture.graph_break()
        return x * 3

    def nested(x):
        with eager.enable_grad():
            with eager.no_grad():
                capture.graph_break()
            y = x + 1
        return x * y
    for f in (before, after, nested):
        res = _run(f, ([1.0, 2.0],), backend=backend)
        _assert_same(res)
        assert res[1][0] == [True]


def test_second_backward_raises_as_eager():
    def f(x):
        return (x * x).exp()
    errors = []
    for fn in (f, capture.compile(f, backend="llvm")):
        (x,) = _leaves([1.0, 2.0])
        loss = fn(x).sum()
        loss.backward()
        with pytest.raises(RuntimeError) as e:
            loss.backward()
        errors.append(str(e.value).split(".")[0])
    assert errors[0] == errors[1]


def test_retain_graph_allows_a_second_backward():
    f = capture.compile(lambda x: (x * x).exp(), backend="llvm")
    (x,) = _leaves([1.0, 2.0])
    loss = f(x).sum()
    loss.backward(retain_graph=True)
    g1 = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1)


def test_saved_tensors_are_freed_after_backward():
    """The compiled backward's saved values die with backward(), while the loss is alive."""
    f = capture.compile(lambda x: (x.sin() * x.cos()).exp(), backend="llvm")
    (x,) = _leaves(np.linspace(0, 1, 1000))
    loss = f(x).sum()
    node = loss.grad_fn.next_functions[0][0]
    refs = [weakref.ref(t) for t in node.saved_tensors if t is not None]
    loss.backward()
    gc.collect()
    assert node._saved is None
    with pytest.raises(RuntimeError):
        node.saved_tensors
    assert all(r() is None for r in refs if r() is not x)


def test_inplace_change_of_a_saved_input_is_detected_as_eager():
    def f(x, y):
        return x * y
    for fn in (f, capture.compile(f, backend="llvm")):
        x, = _leaves([1.0, 2.0])
        y = eager.tensor([3.0, 4.0])
        out = fn(x, y)
        y.add_(1.0)
        with pytest.raises(RuntimeError, match="inplace"):
            out.sum().backward()


def test_half_broadcast_gradient_keeps_the_leaf_dtype():
    """Eager's gradient of a broadcast float16 leaf is float16 (was float32: the fast sum of
    the plan kept its float32 accumulator)."""
    def f(x, y):
        return x + y
    for fn in (f, capture.compile(f, backend="llvm")):
        x = eager.tensor([0.5, 1.0, 2.0], dtype=eager.float16, requires_grad=True)
        fn(x, eager.zeros((2, 3), dtype=eager.float16)).sum().backward()
        assert x.grad.dtype is eager.float16
        np.testing.assert_array_equal(x.grad.numpy(), [2, 2, 2])


# ---------------------------------------------------------------- composites eager runs whole
# Eager records softmax, log_softmax, nll_loss, linear and mean as one node with their own
# backward (`eager_backward`, PyTorch's rules) where `eager_applies`; compiled graphs hold their
# decompositions, differentiated by that same rule, so the gradients put NaN and inf where
# eager's do (the primitives' chain rule does not: softmax(x, 2) / x at x = 0 gave NaN where
# eager gives -inf).

F = eager.nn.functional
_X0 = [[[-0.0, -1.143], [0.0, 0.752]], [[-0.788, 3.444], [-0.342, -0.233]],
       [[-4.328, 1.384], [-0.203, 1.137]]]   # (fuzz seed 6 case 239)
_W0 = [[[-0.56, -0.77], [1.36, -1.94]], [[1.55, -1.29], [-1.36, -1.54]],
       [[1.13, -0.84], [1.13, 0.37]]]


def _grads_of(fn, arrays, dtype, weights, rg):
    args = [eager.tensor(a, dtype=dtype if r else None, requires_grad=r)
            for a, r in zip(arrays, rg)]
    out = fn(*args)
    (out * eager.tensor(weights, dtype=eager.float64)).sum().backward()
    return out.detach().numpy(), [None if a.grad is None else a.grad.numpy() for a in args]


def _assert_same_nonfinite(f, arrays, dtype, weights, backend, rg=None, rtol=1e-5,
                           dynamic=None):
    """f's outputs and gradients, plainly and compiled: same dtype, NaN, +inf and -inf at the
    same places, finite values within rtol."""
    rg = rg or [True] * len(arrays)
    want = _grads_of(f, arrays, dtype, weights, rg)
    got = _grads_of(capture.compile(f, backend=backend, dynamic=dynamic), arrays, dtype,
                    weights, rg)
    for a, b in zip([want[0]] + want[1], [got[0]] + got[1]):
        assert (a is None) == (b is None)
        if a is None:
            continue
        assert a.dtype == b.dtype
        a64, b64 = a.astype(np.float64), b.astype(np.float64)
        for kind in (np.isnan, np.isposinf, np.isneginf):
            np.testing.assert_array_equal(kind(b64), kind(a64), err_msg=kind.__name__)
        fin = np.isfinite(a64)
        np.testing.assert_allclose(b64[fin], a64[fin], rtol=rtol, atol=rtol)
    return want


@pytest.mark.parametrize("backend", ["llvm", "eager"])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_gradient_under_an_infinite_incoming_gradient(backend, name):
    """The issue's repro: softmax(x, 2) / x with x holding 0.0 (the gradient reaching softmax
    is inf there): compiled NaN/inf placement equals eager's (_softmax_backward_data)."""
    op = getattr(eager, name)
    want = _assert_same_nonfinite(lambda x: op(x, 2) / x, [_X0], eager.float32, _W0, backend)
    assert np.isinf(want[1][0]).any()  # (the case reaches the non-finite rule)
    zeros = np.zeros((3, 2, 2))
    _assert_same_nonfinite(lambda x: op(x, 2) / x, [zeros], eager.float32, _W0, backend)
    _assert_same_nonfinite(lambda x: op(x, -1) / x, [_X0], eager.float64, _W0, backend)


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_softmax_where_eager_decomposes_stays_decomposed(backend):
    """float16, bfloat16 and dtype= run the decomposition in eager, so compiled graphs keep
    the primitives' gradient (NaN where the whole rule gives -inf)."""
    f = lambda x: eager.softmax(x, 2) / x   # noqa: E731
    for dt in (eager.float16, eager.bfloat16):
        _assert_same_nonfinite(f, [_X0], dt, _W0, backend, rtol=1e-2)
    g = lambda x: eager.softmax(x, 2, dtype=eager.float64) / x  # noqa: E731
    _assert_same_nonfinite(g, [_X0], eager.float32, _W0, backend)


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_composites_run_whole_under_infinite_gradients(backend):
    """nll_loss (inside cross_entropy, with log_softmax), linear and mean: compiled gradients
    equal eager's, non-finite places included, when the gradient reaching them is inf."""
    x = np.array([[0.0, 1.5, -2.0], [0.25, -0.5, 3.0]])
    w = np.array([[0.5, -1.0, 2.0], [1.0, 0.0, -0.5]])
    z = np.array([[0.0, 2.0], [1.0, 0.0]])
    t = np.array([2, 0])
    cases = [
        (lambda x, t: F.cross_entropy(x, t, reduction="none") / x[:, 0], [x, t], [1.5, -2.0],
         [True, False]),
        (lambda x, t: F.nll_loss(x, t) / x[0, 0], [x, t], 0.5, [True, False]),
        (lambda x, w, z: F.linear(x, w) / z, [x, w, z], [[1.0, -2.0], [0.5, 3.0]],
         [True, True, False]),
        (lambda x, w, b, z: F.linear(x, w, b) / z, [x, w, [0.5, -1.0], z],
         [[1.0, -2.0], [0.5, 3.0]], [True, True, True, False]),
        (lambda x: x.mean(1, keepdim=True) / x[:, :1], [x], [[2.0], [-1.0]], None),
        (lambda x: eager.log_softmax(x, 1) / x, [x], np.ones((2, 3)), None),
    ]
    for f, arrays, weights, rg in cases:
        for dt in (eager.float32, eager.float64):
            _assert_same_nonfinite(f, arrays, dt, weights, backend, rg=rg)


def test_softmax_gradient_with_dynamic_shapes():
    """Dynamic entries with gradients run through eager ops (`run_with_autograd`): the
    composite is applied whole there too."""
    f = lambda x: eager.softmax(x, -1) / x   # noqa: E731
    cf = capture.compile(f, backend="llvm", dynamic=True)
    for shape in ((3, 2, 2), (2, 5), (4, 3)):
        x = np.zeros(shape)
        x.flat[1::3] = 0.5
        _assert_same_nonfinite(f, [x], eager.float32, np.ones(shape), "llvm", dynamic=True)
        a = eager.tensor(x, dtype=eager.float32, requires_grad=True)
        (cf(a) * 1.0).sum().backward()
        b = eager.tensor(x, dtype=eager.float32, requires_grad=True)
        f(b).sum().backward()
        np.testing.assert_array_equal(np.isnan(a.grad.numpy()), np.isnan(b.grad.numpy()))


def test_hand_built_graph_with_a_softmax_node_uses_eager_rule():
    """A graph holding the composite node itself (decomposed by the AOT bridge) gets eager's
    rule too: its backward has none of the primitives' steps back through amax and exp."""
    import codegen
    import ir
    from capture.aot import aot_function

    g = ir.Graph("sm")
    x = g.placeholder("x", ir.TensorMeta((3, 2, 2), ir.float32))
    sm = g.call_op(ir.REGISTRY["softmax"], (x, 2))
    g.output((g.call_op(ir.REGISTRY["div"], (sm, x)),))
    grads = []
    aot = aot_function(g, codegen.compile_graph)
    for run in (lambda t: aot(t)[0],
                lambda t: eager.softmax(t, 2) / t):
        t = eager.tensor(_X0, dtype=eager.float32, requires_grad=True)
        (run(t) * eager.tensor(_W0)).sum().backward()
        grads.append(t.grad.numpy())
    for kind in (np.isnan, np.isposinf, np.isneginf):
        np.testing.assert_array_equal(kind(grads[0]), kind(grads[1]))
    fin = np.isfinite(grads[1])
    np.testing.assert_allclose(grads[0][fin], grads[1][fin], rtol=1e-5)
    bwd = next(iter(aot.plans.values())).bwd_graph
    assert not {n.target.name for n in bwd.nodes if n.op == "call_function"} & {
        "amax", "eq", "exp", "where"}


def _eager_applies_cases():
    from ir import REGISTRY
    from opinfo import dtypes_of, samples

    rng = np.random.default_rng(0)
    for op in REGISTRY.values():
        if op.eager_backward is None:
            continue
        for dt in dtypes_of(op):
            for operands, attrs in samples(op, dt):
                yield op, operands, attrs
        f32 = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
        if op.name in ("softmax", "log_softmax", "mean"):
            yield op, (f32(0, 3),), {"dim": 1}
            yield op, (f32(3, 4),), {"dim": 1, "dtype": eager.float64}
            yield op, (np.float32(2.0) * np.ones(()),), {"dim": 0}
        if op.name == "mean":
            yield op, (f32(0, 3),), {"dim": 0}
        if op.name == "linear":
            yield op, (f32(2, 4), f32(3, 4).astype(np.float64)), {}
            yield op, (f32(2, 4), f32(3, 4), f32(3).astype(np.float16)), {}
            yield op, (f32(4), f32(3, 4)), {}
        if op.name in ("nll_loss", "_cross_entropy"):
            yield op, (f32(0, 3), np.zeros(0, np.int64)), {}
        if op.name == "_layer_norm":
            yield op, (f32(2, 4), f32(4).astype(np.float64)), {}
            yield op, (f32(2, 0),), {}
        if op.name == "_attention_weights":
            yield op, (f32(2, 3, 4), f32(2, 5, 4), f32(3, 5).astype(np.float16)), {}
            yield op, (f32(2, 3, 4), f32(2, 0, 4)), {}


def test_eager_applies_is_eager_impls_condition():
    """For every composite with an eager_backward, `eager_applies` on metas says exactly
    where `eager_impl` runs (not None) on arrays: compiled autograd and eager choose the same
    rule."""
    from ir import REGISTRY
    from ir.dtypes import from_numpy
    from ir.opdef import TensorMeta

    ops = {op.name for op in REGISTRY.values() if op.eager_backward is not None}
    assert {"softmax", "log_softmax", "nll_loss", "linear", "mean"} <= ops
    seen = set()
    for op, operands, attrs in _eager_applies_cases():
        arrays = tuple(np.asarray(a) for a in operands)
        inputs, attrs = op.bind(arrays, dict(attrs))
        metas = tuple(TensorMeta(a.shape, from_numpy(a.dtype)) for a in inputs)
        attrs = op.canonical_attrs(metas, attrs)
        ran = op.eager_impl(np, *inputs, **attrs) is not None
        assert op.eager_applies is not None, op.name
        assert op.eager_applies(metas, attrs) == ran, (op.name, metas, attrs)
        seen.add((op.name, ran))
    assert {(n, r) for n in ops for r in (True, False)} <= seen
