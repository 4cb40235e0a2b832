"""capture: every kind of callable as a compile/explain target and as a callee, and the
`OptimizedModule` that `compile(module)` returns, checked against plain calls and torch's.

Targets: functions, lambdas, bound methods of plain classes (issue 14: 'UnboundLocalError
... self', 0 graphs), classmethods, staticmethods, `functools.partial` (TypeError before),
callable objects, modules (`explain(model)(x)` raised AttributeError '__code__'). Callees inside
compiled code: the same kinds plus `super().forward(x)` and `Base.forward(self, x)`.
"""

from __future__ import annotations

import copy
import functools

import numpy as np
import pytest
from capture_corpus_modules import build, train_steps

import capture
import eager
from eager import nn

capture.config.debug = True


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


def close(got, want):
    assert type(got) is type(want)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6,
                               atol=1e-7)


class Plain:
    scale = 3.0

    def __init__(self):
        self.b = eager.ones(4)

    def bias(self, x):
        return x + self.b

    def apply(self, x):
        return self.bias(x) * 2

    @classmethod
    def cm(cls, x):
        return x.cos() * cls.scale

    @staticmethod
    def sm(x):
        return x.exp() - 1

    def __call__(self, x, k=1.0):
        return x.sin() * k


def f(x, k=1.0, *, shift=0.0):
    return x * k + shift


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()


class Child(Base):
    def forward(self, x):
        return super().forward(x) + 1


class Child2(Base):
    def forward(self, x):
        return super(Child2, self).forward(x) * Base.forward(self, x)


P = Plain()
PARTIAL = functools.partial(f, k=2.0, shift=0.5)


def targets():
    return {
        "function": f,
        "lambda": lambda x: x * 2 + 1,
        "bound_method": P.apply,
        "classmethod": Plain.cm,
        "classmethod_via_instance": P.cm,
        "staticmethod": Plain.sm,
        "partial_kw": PARTIAL,
        "partial_pos": functools.partial(f, k=-1.5),
        "partial_of_partial": functools.partial(functools.partial(f, shift=1.0), k=4.0),
        "partial_of_method": functools.partial(P.__call__, k=0.5),
        "callable_object": P,
        "module_super": Child(),
    }


@pytest.mark.parametrize("name", list(targets()))
def test_every_callable_compiles_and_explains(name):
    fn = targets()[name]
    x = eager.randn(3, 4)
    want = fn(x)
    compiled = capture.compile(fn, backend="eager")
    close(compiled(x), want)
    close(compiled(x), want)  # a cache hit
    e = capture.explain(fn)(x)
    close(e.result, want)
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)


def test_partial_arguments_are_guarded_and_override():
    c = capture.compile(PARTIAL, backend="eager")
    x = eager.randn(2, 4)
    close(c(x), f(x, k=2.0, shift=0.5))
    close(c(x, shift=-1.0), f(x, k=2.0, shift=-1.0))  # a call keyword overrides the partial's
    close(c(x, k=3.0), f(x, k=3.0, shift=0.5))


def test_bound_method_guards_the_instance_state():
    p = Plain()
    c = capture.compile(p.apply, backend="eager")
    x = eager.randn(2, 4)
    close(c(x), p.apply(x))
    p.b = eager.full((4,), 5.0)  # new tensor: an input, not a constant
    close(c(x), p.apply(x))


def callee_cases():
    ch, ch2 = Child(), Child2()
    method = P.apply
    return {
        "method": lambda x: P.apply(x),
        "method_in_variable": lambda x: method(x),
        "global_partial": lambda x: PARTIAL(x),
        "local_partial": lambda x: functools.partial(f, k=3.0)(x),
        "classmethod": lambda x: Plain.cm(x) + P.cm(x),
        "staticmethod": lambda x: Plain.sm(x) + P.sm(x),
        "callable_object": lambda x: P(x, k=2.0),
        "super_zero_arg": lambda x: ch(x),
        "super_two_arg_and_base_call": lambda x: ch2(x),
        "local_lambda": lambda x: (lambda y: y * 3)(x),
    }


@pytest.mark.parametrize("name", list(callee_cases()))
def test_callees_inline_without_breaks(name):
    fn = callee_cases()[name]
    x = eager.randn(3, 4)
    want = fn(x)
    e = capture.explain(fn)(x)
    close(e.result, want)
    assert (e.graph_count, e.graph_break_count) == (1, 0), str(e)


def test_super_guard_follows_the_class_hierarchy():
    class A(nn.Module):
        def forward(self, x):
            return x + 1

    class B(A):
        def forward(self, x):
            return super().forward(x) * 2

    b = B()
    c = capture.compile(b, backend="eager")
    x = eager.ones(2)
    close(c(x), eager.full((2,), 4.0))
    A.forward = lambda self, x: x - 1  # the method super() resolved to changed
    try:
        close(c(x), eager.full((2,), 0.0))
    finally:
        del A.forward


# ---------------------------------------------------------------- OptimizedModule


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.bn = nn.BatchNorm1d(8)
        self.drop = nn.Dropout(0.5)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        h = self.bn(self.fc1(x)).relu()
        if self.training:
            h = h * 0.5
        return self.fc2(h)


def test_compiled_module_is_an_optimized_module():
    m = Net()
    c = capture.compile(m, backend="eager")
    assert isinstance(c, nn.Module) and type(c).__name__ == "OptimizedModule"
    assert c._orig_mod is m and c.fc1 is m.fc1  # __getattr__ forwards
    assert list(c.parameters()) == list(m.parameters())
    assert [n for n, _ in c.named_parameters()] == [f"_orig_mod.{n}"
                                                  for n, _ in m.named_parameters()]
    assert list(c.state_dict()) == [f"_orig_mod.{k}" for k in m.state_dict()]
    assert capture.compile(c, backend="eager")._orig_mod is m  # compiling it again: the module
    c.new_attr = 5  # writes go to the original
    assert m.new_attr == 5


def test_load_state_dict_takes_prefixed_keys():
    m, other = Net(), Net()
    c = capture.compile(m, backend="eager")
    sd = capture.compile(other, backend="eager").state_dict()
    result = c.load_state_dict(sd)
    assert not result.missing_keys and not result.unexpected_keys
    for (n, p), (_, q) in zip(m.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy(), err_msg=n)
    with pytest.raises(RuntimeError):
        c.load_state_dict(m.state_dict())  # unprefixed keys are unexpected, as in torch


def test_train_eval_switch_through_guards():
    eager.manual_seed(0)
    m = Net()
    m.drop.p = 0.0
    ref = copy.deepcopy(m)
    c = capture.compile(m, backend="eager")
    x = eager.randn(6, 4)
    for mode in (True, False, True, False):
        c.train(mode)
        ref.train(mode)
        assert c.training is mode and m.training is mode and m.bn.training is mode
        close(c(x), ref(x))
    np.testing.assert_allclose(m.bn.running_mean.numpy(), ref.bn.running_mean.numpy(),
                               rtol=1e-6)
    modes = {e.guards_text.count("training is True") > 0
             for e in c.__wick_compiled__.entries}
    assert modes == {True, False}  # one entry per mode, picked by the guards


def test_optimized_module_matches_torch_api():
    torch = pytest.importorskip("torch")

    class TNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(4, 8)
            self.bn = torch.nn.BatchNorm1d(8)
            self.drop = torch.nn.Dropout(0.5)
            self.fc2 = torch.nn.Linear(8, 3)

        def forward(self, x):
            return self.fc2(self.bn(self.fc1(x)).relu())

    t = torch.compile(TNet())
    w = capture.compile(Net(), backend="eager")
    assert list(w.state_dict()) == list(t.state_dict())
    assert [n for n, _ in w.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert len(list(w.parameters())) == len(list(t.parameters()))
    assert [n for n, _ in w.named_modules()] == [n for n, _ in t.named_modules()]
    assert w.eval() is w and t.eval() is t and not w.training and not t.training
    assert type(w).__name__ == type(t).__name__ == "OptimizedModule"
    assert callable(torch.compile(functools.partial(lambda x, k: x * k, k=2.0)))


def test_compiled_module_trains_like_eager():
    eager.manual_seed(1)
    m = nn.Sequential(nn.Linear(4, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 2))
    ref = copy.deepcopy(m)
    c = capture.compile(m, backend="eager")
    opt = eager.optim.SGD(c.parameters(), lr=0.1)
    ref_opt = eager.optim.SGD(ref.parameters(), lr=0.1)
    x, y = eager.randn(8, 4), eager.randn(8, 2)
    for _ in range(4):
        for model, o in ((c, opt), (ref, ref_opt)):
            o.zero_grad()
            loss = ((model(x) - y) ** 2).mean()
            loss.backward()
            o.step()
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-7)
    assert c.__wick_compiled__.graph_runs >= 3


# ---------------------------------------------------------------- corpus of whole modules

MODULES = build(eager)


@pytest.mark.parametrize("name", list(MODULES))
def test_module_corpus(name):
    cls, calls, (graphs, breaks), torch_counts = MODULES[name]
    eager.manual_seed(0)
    m = cls()
    c = capture.compile(m, backend="eager")
    args = calls()
    e = capture.explain(m)(*args[0])
    assert (e.graph_count, e.graph_break_count) == (graphs, breaks), str(e)
    for a in args:
        close(c(*a), m(*a))
    cf = c.__wick_compiled__
    assert len(cf.entries) <= 2 and cf.eager_runs == 0  # numbers that change: one more entry
    assert cf.graph_runs == len(args)


@pytest.mark.parametrize("name", list(MODULES))
def test_module_corpus_torch_counts(name):
    torch = pytest.importorskip("torch")
    cls, calls, _, torch_counts = build(torch)[name]
    torch.manual_seed(0)
    e = torch._dynamo.explain(cls())(*calls()[0])
    assert (e.graph_count, e.graph_break_count) == torch_counts


def test_module_corpus_trains_compiled_like_eager():
    eager.manual_seed(3)
    m = MODULES["mlp"][0]()
    ref = copy.deepcopy(m)
    eager.manual_seed(4)
    got = train_steps(eager, m, capture.compile(m, backend="eager"))
    eager.manual_seed(4)
    want = train_steps(eager, ref, ref)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for p, q in zip(m.parameters(), ref.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-7)
