"""Eager's API as graph vocabulary (issue 14 items 1 and 5): factories, Tensor methods and
nn.functional compositions become graph nodes without tracing into eager or numpy; results keep
their types (named tuples across breaks, `Tensor.__format__`). Compiled results are compared
with eager's (values, dtypes, requires_grad), counts with `capture.explain` and, where torch is
installed, with `torch._dynamo.explain` on the same code."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from capture_corpus_vocab import build

CASES = build(eager)


def same(got, want):
    if isinstance(want, eager.Tensor):
        assert isinstance(got, eager.Tensor)
        assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
        assert got.requires_grad == want.requires_grad
        np.testing.assert_allclose(got.numpy(force=True), want.numpy(force=True), rtol=1e-5,
                                   atol=1e-6)
    elif isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        assert got == want


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


@pytest.mark.parametrize("name", list(CASES))
def test_vocab_case(name):
    fn, make, (graphs, breaks), _ = CASES[name]
    eager.manual_seed(0)
    args = make()
    if name == "rand_named":
        eager.manual_seed(1)
        want = fn(*args)
        eager.manual_seed(1)
        e = capture.explain(fn)(*args)
        same(e.result, want)
    else:
        want = fn(*args)
        e = capture.explain(fn)(*args)
        same(e.result, want)
        compiled = capture.compile(fn)
        same(compiled(*args), want)
        same(compiled(*args), want)  # a cache hit
    assert (e.graph_count, e.graph_break_count) == (graphs, breaks), str(e)
    for r in e.break_reasons:  # never a trace into eager's or numpy's own code
        assert "/eager/" not in r.filename and "numpy" not in r.filename, str(e)


def test_torch_counts_match_the_corpus():
    torch = pytest.importorskip("torch")
    import torch._dynamo

    for name, (fn, make, _, want) in build(torch).items():
        torch._dynamo.reset()
        torch.manual_seed(0)
        e = torch._dynamo.explain(fn)(*make())
        assert (e.graph_count, e.graph_break_count) == want, name


def test_factories_are_fresh_per_call_and_equal_eager():
    def f(x):
        a = eager.zeros(2, 3)
        b = eager.zeros(2, 3)
        return a, b, eager.arange(0, 1, 0.25), eager.linspace(-1, 1, 7, dtype=eager.float64), \
            eager.full((2,), float("inf")), eager.eye(3, 2, dtype=eager.int32), \
            eager.tensor([1, 2]) + x.sum().long()

    c = capture.compile(f)
    x = eager.ones(2)
    r1, r2 = c(x), c(x)
    same(r1, f(x))
    assert r1[0] is not r1[1] and r1[0] is not r2[0]
    np.testing.assert_array_equal(r1[3].numpy(), f(x)[3].numpy())  # eager's values, bit-exact
    assert capture.explain(f)(x).graph_break_count == 0


def test_like_factories_dtypes():
    def f(x, i):
        return (eager.full_like(x, 3), eager.full_like(i, 7), eager.ones_like(i, dtype=eager.bool),
                eager.zeros_like(x, dtype=eager.float64), eager.full_like(x, -0.0),
                eager.full_like(x, float("nan")), eager.empty_like(i).shape)

    x, i = eager.randn(2, 3), eager.arange(6).reshape(2, 3)
    e = capture.explain(f)(x, i)
    same(e.result, f(x, i))
    assert (e.graph_count, e.graph_break_count) == (1, 0)
    assert np.signbit(e.result[4].numpy()).all()


def test_detach_stops_gradients_and_in_place_on_it_is_exact():
    w = eager.randn(3, requires_grad=True)

    def f(x):
        return (x * w).sum() + (x * w.detach()).sum()

    x = eager.randn(3)
    out = capture.compile(f)(x)
    out.backward()
    np.testing.assert_allclose(w.grad.numpy(), x.numpy(), rtol=1e-6)

    def g(x):
        y = x.detach()
        y.add_(1)  # writes x: a graph break, run eagerly (never a lost write)
        return x * 2

    a, b = eager.zeros(2), eager.zeros(2)
    same(capture.compile(g)(a), g(b))
    same(a, b)


def test_cross_entropy_out_of_range_target_raises_as_eager():
    def f(x, t):
        return eager.nn.functional.cross_entropy(x, t)

    x, t = eager.randn(3, 4), eager.tensor([0, 9, 1])
    with pytest.raises(IndexError):
        f(x, t)
    with pytest.raises(IndexError):
        capture.compile(f)(x, t)


def test_other_eager_api_is_one_named_break():
    def f(x):
        y = x * 2
        y = eager.nn.functional.one_hot(y.long().abs() % 3)  # classes inferred: reads values
        return y + 1

    x = eager.randn(4)
    e = capture.explain(f)(x)
    same(e.result, f(x))
    assert e.graph_break_count == 1, str(e)
    assert "eager.nn.functional.one_hot has no graph form" in e.break_reasons[0].reason
    assert e.break_reasons[0].filename == __file__


def test_format_of_0d_tensor():
    t = eager.tensor(1.23456)
    assert f"{t:.3f}" == "1.235" and f"{eager.tensor(7):>3}" == "  7"
    assert f"{eager.ones(2)}" == str(eager.ones(2))
    with pytest.raises(TypeError):
        f"{eager.ones(2):.2f}"


@pytest.mark.parametrize("method", ["max", "min", "sort", "topk", "kthvalue", "mode", "median"])
def test_named_tuples_keep_their_type(method):
    args = {"topk": (2,), "kthvalue": (2,)}.get(method, ())

    def f(x):
        r = getattr(x, method)(*args, dim=-1)
        print(end="")  # a break: r crosses it
        return r.values * 1, r.indices, r

    x = eager.randn(3, 5)
    want = f(x)
    got = capture.compile(f)(x)
    same(got, want)
    assert type(got[2]).__name__ == type(want[2]).__name__
