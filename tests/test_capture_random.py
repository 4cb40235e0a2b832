"""Random ops compiled vs eager under the same `manual_seed`: the same values bit for bit, the
generator advanced exactly as eager (the next eager draw equals), one graph and no break;
explicit `generator=` arguments, dropout in train and eval modules, a training step with
dropout (losses and gradients equal), and two draws across a graph break."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from eager import nn
from eager.nn import functional as F

BACKENDS = ("eager", "llvm")


def _arr(v):
    if isinstance(v, (tuple, list)):
        return [_arr(x) for x in v]
    return v._data.copy() if isinstance(v, eager.Tensor) else v


def _same(a, b):
    if isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
        return
    assert type(a) is type(b)
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


def _check(fn, *args, backend, graphs=1, breaks=0, gen=None, calls=2):
    """fn compiled vs plain under the same seed, `calls` calls in a row, then the next draws
    of the default generator (and of `gen`) after them."""
    capture.reset()
    cf = capture.compile(fn, backend=backend)

    def run(f):
        eager.manual_seed(1234)
        if gen is not None:
            gen.manual_seed(99)
        outs = [_arr(f(*args)) for _ in range(calls)]
        nxt = [_arr(eager.rand(5)), _arr(eager.randint(0, 1000, (3,)))]
        if gen is not None:
            nxt.append(_arr(eager.randn(4, generator=gen)))
        return outs, nxt

    want = run(fn)
    got = run(cf)
    _same(got[0], want[0])
    _same(got[1], want[1])
    ex = capture.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), str(ex)
    return got[0]


X = eager.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=eager.float32)
P = eager.tensor([[0.1, 0.5, 0.9, 0.0], [1.0, 0.3, 0.7, 0.2], [0.5, 0.5, 0.5, 0.5]])


CASES = {
    "rand": lambda x: x + eager.rand(3, 4),
    "rand_tuple_f64": lambda x: eager.rand((2, 5), dtype=eager.float64) * 2,
    "randn": lambda x: x * eager.randn(3, 4),
    "randn_complex": lambda x: eager.randn(3, dtype=eager.complex64),
    "rand_like": lambda x: eager.rand_like(x) + x,
    "randn_like": lambda x: eager.randn_like(x) - x,
    "randint": lambda x: eager.randint(0, 10, (3, 4)) + x,
    "randint_high": lambda x: eager.randint(7, (5,)),
    "randint_dtype": lambda x: eager.randint(-3, 3, (2, 2), dtype=eager.int32),
    "randint_like": lambda x: eager.randint_like(x, 5) * x,
    "randperm": lambda x: eager.randperm(7) * 2,
    "normal": lambda x: eager.normal(2.0, 3.0, (3, 4)) + x,
    "bernoulli": lambda x: eager.bernoulli(x.sigmoid()) * x,
    "bernoulli_p": lambda x: eager.bernoulli(x, 0.3) + x,
    "multinomial": lambda x: eager.multinomial(P, 3, replacement=True) + 1,
    "multinomial_norep": lambda x: eager.multinomial(P[0] + 0.01, 4),
    "dropout": lambda x: F.dropout(x * 2, 0.4) + 1,
    "two_draws_mixed": lambda x: (eager.rand(4) * eager.randn(3, 1), eager.randperm(5),
                                  eager.randint(0, 3, (2,))),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", list(CASES))
def test_sampler_equals_eager(name, backend):
    out = _check(CASES[name], X, backend=backend)
    assert out[0] is not None


@pytest.mark.parametrize("backend", BACKENDS)
def test_explicit_generator(backend):
    g = eager.Generator()

    def f(x, gen):
        a = eager.rand(3, 4, generator=gen)
        b = eager.randn(2, generator=gen)
        c = eager.rand(2)  # the default generator, interleaved
        return x * a, b, c, eager.randperm(4, generator=gen)

    _check(f, X, g, backend=backend, gen=g)


@pytest.mark.parametrize("backend", BACKENDS)
def test_break_between_draws(backend):
    def f(x):
        a = eager.rand(3, 4) + x
        print("between")  # a graph break: two graphs, each reading the generator
        return a, eager.randn(3, 4) * a

    _check(f, X, backend=backend, graphs=2, breaks=1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.drop = nn.Dropout(0.3)
        self.fc2 = nn.Linear(8, 2)

    def forward(self, x):
        return self.fc2(self.drop(self.fc1(x).relu()))


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("training", [True, False])
def test_dropout_module(training, backend):
    eager.manual_seed(0)
    net = Net()
    net.train(training)
    _check(net, X, backend=backend)
    if not training:  # eval: the identity, no draw
        eager.manual_seed(3)
        before = _arr(eager.rand(2))
        eager.manual_seed(3)
        capture.compile(net, backend=backend)(X)
        _same(_arr(eager.rand(2)), before)


@pytest.mark.parametrize("backend", BACKENDS)
def test_training_step_with_dropout(backend):
    def losses_and_grads(compiled):
        eager.manual_seed(0)
        net = Net()
        net.train()
        model = capture.compile(net, backend=backend) if compiled else net
        opt = eager.optim.SGD(net.parameters(), lr=0.1)
        y = eager.tensor([0, 1, 1])
        out = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(X), y)
            loss.backward()
            out.append(_arr(loss))
            out += [_arr(p.grad) for p in net.parameters()]
            opt.step()
        out.append(_arr(eager.rand(3)))
        return out

    capture.reset()
    _same(losses_and_grads(True), losses_and_grads(False))


def test_state_is_a_graph_input_and_output():
    def f(x):
        return F.dropout(x, 0.5) + F.dropout(x, 0.2)  # two draws, one write-back

    capture.reset()
    cf = capture.compile(f, backend="llvm")
    eager.manual_seed(7)
    cf(X)
    eager.rand(2)
    entry = cf.__wick_compiled__.entries[0]
    names = [n.target.name for n in entry.graph.nodes if n.op == "call_function"]
    assert names.count("_rng_commit_") == 1 and names.count("_rng_sample") == 2
    states = [n for n in entry.graph.placeholders if n.val.shape == (6,)]
    assert len(states) == 1 and states[0].val.dtype is eager.int64


@pytest.mark.parametrize("backend", BACKENDS)
def test_unused_draw_still_advances(backend):
    def f(x):
        eager.rand(3)  # no graph output: the write-back alone keeps the graph running
        return 1

    _check(f, 2, backend=backend)
