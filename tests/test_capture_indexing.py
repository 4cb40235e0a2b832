"""capture: tensor subscripts in the graph (issue 14 item 2).

A sweep of index expressions (ints incl. negative, slices with steps and negative bounds, None,
Ellipsis, int tensors, lists, bool masks, combinations) on 1-4 d tensors: compiled on the
"llvm" and "eager" backends against eager and against torch (values and gradients), with
`capture.explain`'s counts (one graph, no break; a bool mask is one named break). Item
assignment: on a tensor the graph computed it is a functional `_index_put` in the graph; on an
input (a KV cache) it is one break, with eager's aliasing and version counter. Errors are
PyTorch's (type and message), compiled and eager. The model-code cases of
`tests/capture_corpus_indexing.py` (rotary halves, GPT last-token logits with a sliced causal
mask, embedding gathers, KV-cache steps) run compiled vs eager, torch's counts beside wick's.
"""

from __future__ import annotations

import numpy as np
import pytest
from capture_corpus_indexing import build

import capture
import eager

try:  # the torch references are compared where torch is installed
    import torch
except ImportError:
    torch = None

SHAPES = {1: (5,), 2: (4, 5), 3: (3, 4, 5), 4: (2, 3, 4, 5)}

# (ndim, key expression); `i` = [0, 2, 1], `j` = [[1, 0], [0, 1]] (int64 tensors)
CASES = [
    (1, "[0]"), (1, "[-1]"), (1, "[1:4]"), (1, "[::2]"), (1, "[-3:]"), (1, "[:-1]"),
    (1, "[-4:-1:2]"), (1, "[None]"), (1, "[...]"), (1, "[i]"), (1, "[[0, 2, -1]]"),
    (1, "[None, 1:, None]"), (1, "[j]"), (1, "[10:]"),
    (2, "[:, :2]"), (2, "[1]"), (2, "[-1, 2]"), (2, "[:, -1]"), (2, "[1:, ::2]"),
    (2, "[..., 0]"), (2, "[None, :, None]"), (2, "[i]"), (2, "[:, i]"), (2, "[i, i]"),
    (2, "[[0, 1], [2, 3]]"), (2, "[i, 1:]"), (2, "[1, [0, 3]]"), (2, "[j, 0]"),
    (2, "[..., [4, 0]]"), (2, "[-2:, [1, 2]]"), (2, "[True]"), (2, "[False]"),
    (2, "[1][::-2 + 4]"), (2, "[i][:, 1:3]"),
    (3, "[:, 1:3, ::2]"), (3, "[..., :2]"), (3, "[0, ..., -1]"), (3, "[:, None, 1]"),
    (3, "[i, :, i]"), (3, "[:, i, i]"), (3, "[1, :, [0, 4]]"), (3, "[0, [1, 2], [3, 4]]"),
    (3, "[:, j]"), (3, "[..., None]"), (3, "[-1][1:]"), (3, "[:, :, 2:-1]"),
    (3, "[i[:2], None, 0]"), (3, "[j, ..., j]"),
    (4, "[:, :, -1, :]"), (4, "[..., 1:3, None]"), (4, "[1, :, [0, 2], 2:]"),
    (4, "[:, i, :, i]"), (4, "[None, ..., 0, None]"), (4, "[:, 0, :, ::3]"),
    (4, "[1, 2, 3, 4]"), (4, "[..., -1, :][:, None]"),
]
MASKS = [(1, "[x > 0]"), (2, "[m]"), (2, "[:, m[0]]"), (3, "[:, m]"), (2, "[:, x[0] > 0]"),
         (2, "[[True, False, True, False]]"), (3, "[1, m, None]")]
ERRORS = [(2, "[10]", IndexError), (2, "[0, 0, 0]", IndexError), (2, "[::-1]", ValueError),
          (2, "[:, -6]", IndexError), (2, "[i * 3]", IndexError),
          (2, "[i.double()]", IndexError), (2, "[m[:3]]", IndexError)]


def _fn(expr: str, mask=False):
    if mask:  # a graph before the break and one after it
        return eval(f"lambda x, i, j, m: (x + 1){expr} * 2")  # noqa: S307
    # (a view of an input alone would be no graph: `test_views_of_inputs_are_eager_views`)
    return eval(f"lambda x, i, j, m: (x * 1){expr}")  # noqa: S307 (test expressions)


def _args(T, ndim, dtype, grad):
    rng = np.random.default_rng(ndim)
    x = rng.standard_normal(SHAPES[ndim])
    xs = T.tensor(x, dtype=dtype, requires_grad=grad)
    i = T.tensor([0, 2, 1])
    j = T.tensor([[1, 0], [0, 1]])
    m = T.tensor(x.reshape(-1, x.shape[-1])[:4] > 0) if ndim > 1 else T.tensor(x > 0)
    if ndim == 3:
        m = T.tensor(x[0] > 0)
    return xs, i, j, m


def _run(T, fn, ndim):
    """fn's value and x's gradient under a fixed random cotangent."""
    x, i, j, m = _args(T, ndim, T.float64, True)
    out = fn(x, i, j, m)
    w = T.tensor(np.random.default_rng(7).standard_normal(tuple(out.shape)), dtype=T.float64)
    if out.numel():
        (out * w).sum().backward()
    grad = x.grad.numpy() if x.grad is not None else np.zeros(x.shape)
    return out.detach().numpy(), grad


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


def _check(expr, ndim, breaks, backends=("llvm", "eager")):
    fn = _fn(expr, breaks > 0)
    want, gwant = _run(eager, fn, ndim)
    for backend in backends:
        got, ggot = _run(eager, capture.compile(fn, backend=backend), ndim)
        assert got.shape == want.shape and got.dtype == want.dtype, (expr, backend)
        np.testing.assert_allclose(got, want, err_msg=f"{expr} {backend}")
        np.testing.assert_allclose(ggot, gwant, err_msg=f"grad {expr} {backend}")
    e = capture.explain(fn)(*_args(eager, ndim, eager.float64, False))
    assert (e.graph_count, e.graph_break_count) == (1 + breaks, breaks), (expr, str(e))
    return want, gwant


@pytest.mark.parametrize("ndim,expr", CASES, ids=[f"{n}d{e}" for n, e in CASES])
def test_index_sweep(ndim, expr):
    want, gwant = _check(expr, ndim, 0)
    if torch is None:
        return
    ref, gref = _run(torch, _fn(expr), ndim)
    np.testing.assert_allclose(want, ref)
    np.testing.assert_allclose(gwant, gref)


BASIC = [(n, e) for n, e in CASES if not any(s in e for s in ("i", "j", "[[", ", ["))]


@pytest.mark.parametrize("ndim,expr", BASIC, ids=[f"{n}d{e}" for n, e in BASIC])
@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_views_of_inputs_are_eager_views(ndim, expr, backend):
    """A basic index of an input returns an eager view of it, as eager does (shared memory,
    `_base`, version counter): no graph is left to compile, the view is applied on the call."""
    fn = eval(f"lambda x: x{expr}")  # noqa: S307
    x = _args(eager, ndim, eager.float32, False)[0]
    want, got = fn(x), capture.compile(fn, backend=backend)(x)
    assert (got._base is x) == (want._base is x) and got.shape == want.shape
    with eager.no_grad():
        x.add_(1)
    assert got._version == want._version
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    e = capture.explain(fn)(x)
    assert e.graph_break_count == 0, str(e)


@pytest.mark.parametrize("ndim,expr", MASKS, ids=[f"{n}d{e}" for n, e in MASKS])
def test_bool_masks_are_one_named_break(ndim, expr):
    want, gwant = _check(expr, ndim, 1, backends=("eager",))
    e = capture.explain(_fn(expr, True))(*_args(eager, ndim, eager.float64, False))
    (r,) = e.break_reasons
    assert "boolean mask" in r.reason and "data-dependent" in r.reason and r.hint
    if torch is None:
        return
    ref, gref = _run(torch, _fn(expr, True), ndim)
    np.testing.assert_allclose(want, ref)
    np.testing.assert_allclose(gwant, gref)


@pytest.mark.parametrize("ndim,expr,exc", ERRORS, ids=[e for _, e, _ in ERRORS])
def test_errors_are_pytorchs(ndim, expr, exc):
    fn = _fn(expr)
    msgs = []
    for f in (fn, capture.compile(fn, backend="llvm")):
        with pytest.raises(exc) as info:
            f(*_args(eager, ndim, eager.float32, False))
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
    if torch is None:
        return
    with pytest.raises(exc) as info:
        fn(*_args(torch, ndim, torch.float32, False))
    assert str(info.value) == msgs[0]


def _setitem_fresh(x, v, i):
    y = x * 1
    y[1:, ::2] = v
    y[0] = 3.0
    y[:, i] = 0
    y[-1, [0, 4]] = x[0, :2]
    return y * 2


@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_setitem_on_a_graph_tensor_is_in_the_graph(backend):
    def run(T, fn):
        x = T.tensor(np.arange(20.0).reshape(4, 5) / 7, requires_grad=True)
        v = T.tensor(np.linspace(-1, 1, 3), requires_grad=True)
        out = fn(x, v, T.tensor([1, 3]))
        (out * out).sum().backward()
        return out.detach().numpy(), x.grad.numpy(), v.grad.numpy()

    want = run(eager, _setitem_fresh)
    got = run(eager, capture.compile(_setitem_fresh, backend=backend))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w)
    e = capture.explain(_setitem_fresh)(eager.ones(4, 5), eager.ones(3), eager.tensor([1, 3]))
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)
    assert e.ops_per_graph[0].count("_index_put") == 4
    if torch is None:
        return
    for g, w in zip(run(torch, _setitem_fresh), want):
        np.testing.assert_allclose(g, w)


def test_setitem_value_is_cast_and_broadcast():
    def f(x, v):
        y = x + 0
        y[:, 1] = v  # int64 values into float32
        y[2:, 0] = v[:2]
        return y

    x, v = eager.zeros(4, 3), eager.tensor([1, 2, 3, 4])
    got = capture.compile(f, backend="llvm")(x, v)
    want = f(x, v)
    assert got.dtype is want.dtype
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    with pytest.raises(RuntimeError, match="shape mismatch"):
        capture.compile(lambda x: (x + 0).__setitem__(0, eager.ones(2)))(eager.ones(3, 4))


def kv_write(k_cache, v, a, b):
    k_cache[:, a:b] = v
    return k_cache.sum(-1)


def test_kv_cache_write_on_an_input_mutates_it_as_eager():
    """`k_cache[:, a:b] = v` on an argument: one graph, no break (the store is written back
    into the argument after the graph, `capture/writeback.py`), the cache mutated in place: views of it see the change, its version counter moves."""
    compiled = capture.compile(kv_write, backend="llvm")
    for a, b in [(0, 2), (2, 4), (4, 6)]:
        want_cache, got_cache = eager.zeros(2, 6, 3), eager.zeros(2, 6, 3)
        view = got_cache[1]
        v0 = got_cache._version
        v = eager.randn(2, b - a, 3)
        want = kv_write(want_cache, v, a, b)
        got = compiled(got_cache, v, a, b)
        np.testing.assert_array_equal(got.numpy(), want.numpy())
        np.testing.assert_array_equal(got_cache.numpy(), want_cache.numpy())
        np.testing.assert_array_equal(view.numpy(), want_cache[1].numpy())
        assert got_cache._version > v0
    e = capture.explain(kv_write)(eager.zeros(2, 6, 3), eager.ones(2, 2, 3), 0, 2)
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)


def test_setitem_on_a_viewed_graph_tensor_keeps_the_view_right():
    def f(x):
        y = x * 2
        row = y[0]  # a view of y: the store below must show through it
        y[0, 1] = -1.0
        return row + 0

    x = eager.arange(6.0).reshape(2, 3)
    np.testing.assert_array_equal(capture.compile(f)(x).numpy(), f(x).numpy())


def _shift(x):
    y = x * 1
    y[1:] = y[:-1]  # the value is a view of y, consumed by the store
    y[0] = y[-1] * 2
    return y


def _held(x):
    y = x * 1
    a = y[0]
    y[0] = 5.0  # `a` must see it
    return a + 0


def _in_list(x):
    y = x * 1
    ys = [y[0]]
    y[0] = 5.0
    return ys[0] + 0


def _in_cell(x):
    y = x * 1
    a = y[0]
    g = lambda: a  # noqa: E731
    y[0] = 5.0
    return g() + 0


def _view_of_view(x):
    y = x * 1
    a = y[0]
    b = a[1:]
    del a
    y[0] = 5.0
    return b + 0


def _store_helper(y):
    y[1:] = y[:-1]
    return y


def _inlined(x):
    y = x * 1
    a = y[0]
    _store_helper(y)  # inlined: its caller's view `a` is out of its sight
    return a * 1, y


@pytest.mark.parametrize("fn,counts", [(_shift, (1, 0)), (_held, (1, 0)), (_in_list, (1, 0)),
                                       (_in_cell, (1, 0)), (_view_of_view, (1, 0)),
                                       (_inlined, (1, 0))],
                         ids=["shift", "held", "in_list", "in_cell", "view_of_view", "inlined"])
def test_setitem_with_views_in_the_graph(fn, counts):
    """A store into a tensor with views: a view still held (local, list, closure cell, a view
    of it, a caller's frame) sees the store, through the functionalized store and the views
    replayed on its result (`capture/viewwrites.py`), 1 graph as torch.compile."""
    x = eager.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    want = fn(x)
    want = want if isinstance(want, tuple) else (want,)
    for backend in ("llvm", "eager"):
        capture.reset()
        got = capture.compile(fn, backend=backend)(x)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g.detach().numpy(), w.detach().numpy())
    gw = eager.autograd.grad(sum((w * w).sum() for w in want), x)[0]
    capture.reset()
    got = capture.compile(fn, backend="llvm")(x)
    got = got if isinstance(got, tuple) else (got,)
    gg = eager.autograd.grad(sum((g * g).sum() for g in got), x)[0]
    np.testing.assert_allclose(gg.numpy(), gw.numpy())
    e = capture.explain(fn)(x)
    assert (e.graph_count, e.graph_break_count) == counts, str(e)


def test_list_index_argument_is_guarded():
    compiled = capture.compile(lambda x, idx: x[idx], backend="llvm")
    x = eager.randn(5, 2)
    for idx in ([0, 3], [4, 1], [2, 2, 2]):
        np.testing.assert_array_equal(compiled(x, idx).numpy(), x[idx].numpy())


def test_index_of_a_leaf_requiring_grad_keeps_eagers_error():
    def f(x):
        x[0] = 1.0
        return x

    x = eager.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError) as a:
        f(x)
    with pytest.raises(RuntimeError) as b:
        capture.compile(f)(x)
    assert str(a.value) == str(b.value)


# ---------------------------------------------------------------- the model-code corpus

def _clone(v):
    return v.clone() if isinstance(v, eager.Tensor) else v


def _same(got, want):
    if isinstance(want, eager.Tensor):
        assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    elif isinstance(want, tuple):
        assert type(got) is tuple and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
    else:
        assert got == want


@pytest.mark.parametrize("name", list(build(eager)))
@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_corpus_case(name, backend):
    fn, make, (graphs, breaks), _ = build(eager)[name]
    args = make()
    plain = tuple(_clone(a) for a in args)
    want = fn(*plain)
    compiled = capture.compile(fn, backend=backend)
    for _ in range(2):  # a capture, then a cache hit
        mine = tuple(_clone(a) for a in args)
        _same(compiled(*mine), want)
        for m, p in zip(mine, plain):  # mutated arguments (KV caches) mutated as eagerly
            _same(m, p)
    e = capture.explain(fn)(*tuple(_clone(a) for a in args))
    assert (e.graph_count, e.graph_break_count) == (graphs, breaks), str(e)


def test_corpus_torch_counts():
    if torch is None:
        pytest.skip("torch is not installed")
    from torch import _dynamo

    for name, (fn, make, _, want) in build(torch).items():
        _dynamo.reset()
        e = _dynamo.explain(fn)(*make())
        assert (e.graph_count, e.graph_break_count) == want, name


# ---------------------------------------------------------------- outputs that are views

def _t_then_mul_(x):
    y = x * 1
    a = y.t()
    y.mul_(2)  # a break (y has views); `a` must see the product, values and gradient
    return a + 0


def _row_then_store(x):
    y = x * 1
    a = y[0]
    print(end="")  # a break: `a` and `y` cross it
    y[0] = 5.0
    return a + y


@pytest.mark.parametrize("fn", [_t_then_mul_, _row_then_store], ids=["t_mul_", "row_store"])
@pytest.mark.parametrize("backend", ["llvm", "eager"])
def test_a_view_crossing_a_break_sees_later_in_place_ops(fn, backend):
    x = eager.tensor(np.arange(12.0).reshape(4, 3), requires_grad=True)
    want = fn(x)
    gw = eager.autograd.grad((want * want).sum(), x)[0]
    got = capture.compile(fn, backend=backend)(x)
    gg = eager.autograd.grad((got * got).sum(), x)[0]
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
    np.testing.assert_allclose(gg.numpy(), gw.numpy())


def test_views_of_inputs_under_dynamic_shapes():
    compiled = capture.compile(lambda x: x[..., -1], backend="llvm")
    for n in (3, 5, 8, 11):  # the second size makes the entry dynamic
        x = eager.randn(4, n)
        out = compiled(x)
        assert out._base is x
        np.testing.assert_array_equal(out.numpy(), x[..., -1].numpy())
    assert len(compiled.__wick_compiled__.entries) <= 2
