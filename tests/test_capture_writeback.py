"""In-place ops on graph inputs that do not require grad, captured with a write-back (issue 14
item 3): BatchNorm training updating its running stats, a KV-cache write into an argument,
`x.add_(1)` on an input, an SGD-style update under `no_grad`. Each case runs compiled
(backends "eager" and "llvm") and eagerly on copies of the same inputs: results, the mutated
tensors' values afterwards, their version counters (> 0 as eager), an eager view of a mutated
input seeing the change, and the graph/break counts (torch's from `torch._dynamo.explain`
written beside). Cases that must stay graph breaks (an input requiring grad mutated with grad
on, the same tensor passed twice, a view of the input mutated in place) check values only
beside their break counts.
"""

import numpy as np
import pytest

import capture
import eager
from eager import nn

BACKENDS = ["eager", "llvm"]


def _t(a, rg=False):
    return eager.tensor(np.array(a, dtype=np.float32), requires_grad=rg)


def _clone(v):
    if isinstance(v, eager.Tensor):
        return eager.tensor(v.detach().numpy().copy(), requires_grad=v.requires_grad)
    return v


def _np(v):
    return v.detach().numpy() if isinstance(v, eager.Tensor) else v


def _check(fn, make, mutated, backend, counts, calls=2):
    """Run `fn` compiled and eagerly on fresh inputs from `make()`; compare results, the
    mutated arguments (indices `mutated`), their versions and a view of each."""
    ref_args, got_args = make(), make()
    cf = capture.compile(fn, backend=backend)
    for _ in range(calls):
        views = [got_args[i][..., :1] for i in mutated]
        vers = [(ref_args[i]._version, got_args[i]._version) for i in mutated]
        want = fn(*ref_args)
        got = cf(*got_args)
        np.testing.assert_allclose(_np(got), _np(want), rtol=1e-5, atol=1e-6)
        for i, v, (rv, gv) in zip(mutated, views, vers):
            np.testing.assert_allclose(_np(got_args[i]), _np(ref_args[i]), rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(_np(v), _np(got_args[i])[..., :1])
            assert got_args[i]._version > gv and ref_args[i]._version > rv
    report = capture.explain(fn, backend=backend)(*make())
    assert (report.graph_count, report.graph_break_count) == counts, str(report)


# ---------------------------------------------------------------- captured (1 graph, 0 breaks)

def add_then_use(x, y):
    x.add_(1)
    return x * y + x


def kv_write(cache, k, q, pos):
    cache[:, pos:pos + 2] = k
    att = (q @ cache.transpose(-1, -2)) * 0.5
    return att.softmax(-1) @ cache


def sgd_step(p, g, lr):
    with eager.no_grad():
        p.add_(g, alpha=-lr)
    return p.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_add_on_input_then_used(backend):  # torch: 1 graph, 0 breaks
    x0 = np.random.default_rng(0).standard_normal((3, 4))
    _check(add_then_use, lambda: [_t(x0), _t(np.ones((3, 4)))],
           [0], backend, (1, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_kv_cache_write_into_argument(backend):  # torch: 1 graph, 0 breaks
    rng = np.random.default_rng(1)
    k = rng.standard_normal((2, 2, 4))
    q = rng.standard_normal((2, 1, 4))
    _check(kv_write, lambda: [_t(np.zeros((2, 6, 4))), _t(k), _t(q), 2], [0], backend, (1, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_sgd_update_under_no_grad(backend):  # torch: 1 graph, 0 breaks
    rng = np.random.default_rng(2)
    p0, g0 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3))
    _check(sgd_step, lambda: [_t(p0, rg=True), _t(g0), 0.1], [0], backend, (1, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_batchnorm2d_training_running_stats(backend):  # torch: 1 graph, 0 breaks
    rng = np.random.default_rng(3)
    x0 = rng.standard_normal((4, 3, 5, 5)).astype(np.float32)
    ref, got = nn.BatchNorm2d(3), nn.BatchNorm2d(3)
    ref.train(), got.train()
    cf = capture.compile(got, backend=backend)
    for _ in range(2):
        vref, vgot = ref.running_mean._version, got.running_mean._version
        view = got.running_var[:2]
        want = ref(_t(x0))
        out = cf(_t(x0))
        np.testing.assert_allclose(_np(out), _np(want), rtol=1e-4, atol=1e-5)
        for name in ("running_mean", "running_var", "num_batches_tracked"):
            np.testing.assert_allclose(_np(getattr(got, name)), _np(getattr(ref, name)),
                                       rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(_np(view), _np(got.running_var)[:2])
        assert got.running_mean._version > vgot and ref.running_mean._version > vref
    report = capture.explain(nn.BatchNorm2d(3), backend=backend)(_t(x0))
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)


# ---------------------------------------------------------------- must stay breaks

def mutate_requires_grad(p, y):
    p.mul_(2)
    return p * y


def same_twice(a, b):
    a.add_(1)
    return a + b


def view_mutated(x):
    v = x[:, :2]
    v.mul_(3)
    return x + 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_input_requiring_grad_mutated_stays_a_break(backend):
    cf = capture.compile(mutate_requires_grad, backend=backend)
    with pytest.raises(RuntimeError):  # eager: a leaf requiring grad used in-place
        mutate_requires_grad(_t(np.ones(3), rg=True), _t(np.ones(3)))
    with pytest.raises(RuntimeError):
        cf(_t(np.ones(3), rg=True), _t(np.ones(3)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_same_tensor_twice_is_one_graph_input(backend):
    cf = capture.compile(same_twice, backend=backend)
    for _ in range(2):
        a, b = _t(np.arange(3.0)), _t(np.arange(3.0))
        want = same_twice(a, a)
        got = cf(b, b)
        np.testing.assert_allclose(_np(got), _np(want))
        np.testing.assert_allclose(_np(b), _np(a))
    # distinct tensors: one graph; then the same tensor twice: the identity guard fails, and
    # the new entry reads it as one graph input (one tracker per tensor object, as Dynamo)
    a, b = _t(np.arange(3.0)), _t(np.ones(3))
    np.testing.assert_allclose(_np(cf(a, b)), [2, 3, 4])
    c = _t(np.arange(3.0))
    np.testing.assert_allclose(_np(cf(c, c)), [2, 4, 6])
    np.testing.assert_allclose(_np(c), [1, 2, 3])
    report = capture.explain(same_twice, backend=backend)(c, c)
    assert report.graph_count == 1 and not report.break_reasons, str(report)
    np.testing.assert_allclose(_np(report.result), [4, 6, 8])


@pytest.mark.parametrize("backend", BACKENDS)
def test_view_of_input_mutated_in_one_graph(backend):
    """`x[:, :2].mul_(3)` on an input, the input read after: functionalized (the view's new
    value scattered into the input, written back after the graph), 1 graph as torch.compile."""
    cf = capture.compile(view_mutated, backend=backend)
    for _ in range(2):
        a, b = _t(np.ones((2, 3))), _t(np.ones((2, 3)))
        want, got = view_mutated(a), cf(b)
        np.testing.assert_allclose(_np(got), _np(want))
        np.testing.assert_allclose(_np(b), _np(a))
    report = capture.explain(view_mutated, backend=backend)(_t(np.ones((2, 3))))
    assert report.graph_count == 1 and not report.break_reasons, str(report)


def test_torch_counts():
    torch = pytest.importorskip("torch")
    import torch._dynamo as dynamo

    def tadd(x, y):
        x.add_(1)
        return x * y + x

    def tbn(m, x):
        return m(x)

    dynamo.reset()
    e = dynamo.explain(tadd)(torch.ones(3), torch.ones(3))
    assert (e.graph_count, e.graph_break_count) == (1, 0)
    dynamo.reset()
    m = torch.nn.BatchNorm2d(3).train()
    e = dynamo.explain(m)(torch.randn(4, 3, 5, 5))
    assert (e.graph_count, e.graph_break_count) == (1, 0)


# ---------------------------------------------------------------- more shapes of the same rule

def mutate_break_mutate(x, y):
    x.mul_(2)
    print("", end="")  # a graph break: the write-back runs before the print
    x.add_(y)
    return x * 3


def returns_the_input(x):
    return x.add_(1)


def add_then_mul(x):
    x.add_(1)
    x.mul_(2)
    return x.sum()


def returns_a_view_of_the_mutated(x):
    x.add_(1)
    return x[0]


@pytest.mark.parametrize("backend", BACKENDS)
def test_mutation_across_a_graph_break(backend):
    _check(mutate_break_mutate, lambda: [_t(np.ones(3)), _t(np.arange(3.0))], [0], backend,
           (2, 1))


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_input_is_the_callers_tensor(backend):
    cf = capture.compile(returns_the_input, backend=backend)
    for _ in range(2):
        x = _t(np.ones(3))
        assert cf(x) is x
        np.testing.assert_allclose(_np(x), [2, 2, 2])
    _check(returns_the_input, lambda: [_t(np.ones(3))], [0], backend, (1, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_mutations_of_one_input(backend):
    _check(add_then_mul, lambda: [_t(np.arange(6.0).reshape(2, 3))], [0], backend, (1, 0))


@pytest.mark.parametrize("backend", BACKENDS)
def test_returned_view_of_a_mutated_input_stays_eager(backend):
    cf = capture.compile(returns_a_view_of_the_mutated, backend=backend)
    for _ in range(2):
        a, b = _t(np.ones((2, 3))), _t(np.ones((2, 3)))
        want, got = returns_a_view_of_the_mutated(a), cf(b)
        np.testing.assert_allclose(_np(got), _np(want))
        assert got._base is b  # a real eager view of the caller's tensor
        b.mul_(5)
        np.testing.assert_allclose(_np(got), [10, 10, 10])


@pytest.mark.parametrize("backend", BACKENDS)
def test_uncastable_in_place_result_raises_as_eager(backend):
    def f(x):
        x.add_(1.5)
        return x

    cf = capture.compile(f, backend=backend)
    with pytest.raises(RuntimeError):
        f(eager.tensor(np.array([1, 2])))
    x = eager.tensor(np.array([1, 2]))
    with pytest.raises(RuntimeError):
        cf(x)
    np.testing.assert_array_equal(_np(x), [1, 2])
