"""capture: a break inside a callee breaks only the callee (issue 14 item 4).

A submodule's `forward`, a method of a plain object, `super().forward`, a callable object or a
helper two or three calls deep that breaks (print, logging, `.item()`, `graph_break()`, a builtin
capture does not model) ends the caller's graph at the call; the callee runs as its own compiled
frame (its own graphs, guards and breaks, cached per function and bound instance) and the caller
resumes after it. Before, any break inside a submodule made `compile(model)` run the whole call
eagerly (0 graphs), or ran the callee uncompiled. Checked against eager for values, for what is
printed (once per call, in order), and with torch._dynamo.explain's counts on the same code.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import capture
from capture import targets
import eager
from eager import nn

import capture_corpus_callees as corpus


def close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def run(fn, *args):
    """(result, what it printed)."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        r = fn(*args)
    return r, buf.getvalue()


CASES = corpus.build(eager)


@pytest.mark.parametrize("name", list(CASES))
def test_callee_corpus(name):
    cls, make, (graphs, breaks), _, lines = CASES[name]
    eager.manual_seed(0)
    m = cls()
    c = capture.compile(m, backend="eager")
    for _ in range(3):
        args = make()
        got, out = run(c, *args)
        want, ref_out = run(m, *args)
        close(got, want)
        assert out == ref_out  # each print once per call, in order
        assert out.splitlines() == lines
    e = capture.explain(m)(*make())
    assert (e.graph_count, e.graph_break_count) == (graphs, breaks), str(e)
    assert graphs >= 1
    for f in c.__wick_compiled__.all_functions():  # none run eagerly; a number read by
        assert len(f.entries) <= 2 and f.eager_runs == 0, f.name  # .item() becomes dynamic


@pytest.mark.parametrize("name", list(CASES))
def test_callee_corpus_torch_counts(name):
    torch = pytest.importorskip("torch")
    cls, make, _, torch_counts, _ = corpus.build(torch)[name]
    torch.manual_seed(0)
    torch._dynamo.reset()
    e = torch._dynamo.explain(cls())(*make())
    assert (e.graph_count, e.graph_break_count) == torch_counts


# ---------------------------------------------------------------- each kind of break


def _print(h):
    h = h + 1
    print("child", tuple(h.shape))
    return h * 3


def _item(h):
    h = h + 1
    s = h.mean().item()
    return h * (1.0 + abs(s))


def _graph_break(h):
    h = h + 1
    capture.graph_break()
    return h * 3


def _builtin(h):
    h = h + 1
    k = id(h) > 0  # a C function capture does not model
    return h * (3 if k else 1)


KINDS = {"print": _print, "item": _item, "graph_break": _graph_break, "builtin": _builtin}


class Child(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.fc, self.kind = nn.Linear(4, 4), kind

    def forward(self, x):
        h = self.fc(x).relu()
        h = KINDS[self.kind](h)
        return h * 2


class Parent(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.pre, self.child, self.post = nn.Linear(4, 4), Child(kind), nn.Linear(4, 3)

    def forward(self, x):
        return self.post(self.child(self.pre(x).sin()) + 1).cos()


@pytest.mark.parametrize("kind", list(KINDS))
def test_break_kinds_in_a_submodule(kind):
    eager.manual_seed(1)
    m = Parent(kind)
    c = capture.compile(m, backend="eager")
    x = eager.randn(2, 4)
    for _ in range(2):
        got, out = run(c, x)
        want, ref_out = run(m, x)
        close(got, want)
        assert out == ref_out
    e = capture.explain(m)(x)
    # the parent, the child and the helper (KINDS[...]) each: a graph before the call or the
    # break and one after it; breaks counted as torch's, graph_count - 1
    assert (e.graph_count, e.graph_break_count) == (6, 5), str(e)
    assert len(e.unique_break_reasons) == 1 and len(e.break_reasons) == 3, str(e)
    names = [f.name for f in c.__wick_compiled__.all_functions()]
    assert "Child.forward" in names and f"_{kind}" in names


# ---------------------------------------------------------------- the kinds of callee


class Scaler:
    def __init__(self, k):
        self.k = k

    def apply(self, x):
        x = x + 1
        print("apply", self.k)
        return x * self.k

    def __call__(self, x):
        return self.apply(x) - 1


def method_caller(s, x):
    return s.apply(x * 2).cos()


def object_caller(s, x):
    return s(x.exp()).sum()


def test_method_of_a_plain_object_is_its_own_frame():
    fn = capture.compile(method_caller, backend="eager")
    s, x = Scaler(3.0), eager.randn(3)
    for _ in range(2):
        got, out = run(fn, s, x)
        want, ref_out = run(method_caller, s, x)
        close(got, want)
        assert out == ref_out == "apply 3.0\n"
    e = capture.explain(method_caller)(s, x)
    assert (e.graph_count, e.graph_break_count) == (4, 3), str(e)  # was 2: apply ran eagerly
    # a second instance: the one compiled callee of Scaler.apply gets a second entry (its
    # guards read the instance), as Dynamo keeps one cache per code object
    s2 = Scaler(5.0)
    got, out = run(fn, s2, x)
    close(got, method_caller(s2, x))
    assert out == "apply 5.0\n"
    cf = fn.__wick_compiled__
    applies = [f for f in cf.all_functions() if f.name == "Scaler.apply"]
    assert len(applies) == 1 and len(applies[0].entries) == 2


def test_new_instances_every_call_are_not_kept_alive():
    """A caller handed a new object on every call (whose method breaks) keeps a bounded number
    of bound callees and one compiled child, not one per instance (memory, issue 13)."""
    import gc
    import weakref

    fn = capture.compile(method_caller, backend="eager")
    x = eager.randn(3)
    refs = []
    for i in range(3 * targets.CALLEE_LIMIT):
        s = Scaler(float(i % 3))
        refs.append(weakref.ref(s))
        got, _ = run(fn, s, x)
        close(got, method_caller(s, x))
    del s
    gc.collect()
    cf = fn.__wick_compiled__
    # the bound callees kept, and the instances the cache entries' guards of the caller and
    # the child hold (at most cache_size_limit entries each)
    bound = targets.CALLEE_LIMIT + 2 * capture.config.cache_size_limit
    assert sum(r() is not None for r in refs) <= bound < len(refs)
    assert sum(f.name == "Scaler.apply" for f in cf.all_functions()) == 1


def test_callable_object_and_two_deep():
    fn = capture.compile(object_caller, backend="eager")
    s, x = Scaler(2.0), eager.randn(3)
    got, out = run(fn, s, x)
    want, ref_out = run(object_caller, s, x)
    close(got, want)
    assert out == ref_out
    names = [f.name for f in fn.__wick_compiled__.all_functions()]
    assert "Scaler.__call__" in names and "Scaler.apply" in names


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        capture.graph_break()
        return h.relu()


class Sub(Base):
    def forward(self, x):
        return super().forward(x * 3) - x


def test_super_forward_breaking():
    m = Sub()
    c = capture.compile(m, backend="eager")
    x = eager.randn(2, 4)
    close(c(x), m(x))
    close(c(x), m(x))
    e = capture.explain(m)(x)
    assert (e.graph_count, e.graph_break_count) == (4, 3), str(e)


def loop_helper(h, i):
    if i % 2:
        print("odd", i)
    return h + i


def long_loop(x, n):
    for i in range(n):
        x = loop_helper(x, i)
    return x * 2


def test_breaking_callee_in_a_long_loop_has_no_chain_of_frames():
    fn = capture.compile(long_loop, backend="eager")
    x = eager.randn(3)
    for _ in range(2):
        got, out = run(fn, x, 400)  # a resume frame per iteration would overflow the stack
        want, ref_out = run(long_loop, x, 400)
        close(got, want)
        assert out == ref_out
