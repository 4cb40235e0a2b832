"""capture: compiled functions called with bad arguments raise what the plain function raises.

Wrong shapes (matmul, broadcasting, cat), wrong dtypes, devices, `None`, lists, numpy arrays
and Python scalars where tensors were seen, wrong numbers of arguments and wrong keyword names,
each on the first call and after the function was compiled for good arguments: on a cache hit,
after a guard-miss recompile, after automatic dynamic shapes made an entry dynamic, and past
the recompile limit. Every case is checked against the plain call of the same function:
`pytest.raises` with the plain call's exception type, and the same message. Also: a bad call
leaves no cache entry behind (it used to disable compilation for good), and a failure of the
backend, of the guards or of a dynamic entry's compile falls back to eager (logged).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import capture
import codegen
import eager
from capture import backends, compiler
from eager import nn

HAS_LLVM = hasattr(codegen, "compile_graph")
BACKENDS = ["eager", pytest.param("llvm", marks=pytest.mark.skipif(
    not HAS_LLVM, reason="codegen.compile_graph is not available"))]


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recompile-limit warning
        yield
    capture.reset()


def T(*shape, dtype=None, grad=False):
    t = eager.randn(*shape) if dtype is None else eager.ones(*shape, dtype=dtype)
    return t.requires_grad_(True) if grad else t


# ---------------------------------------------------------------- the functions and bad calls


def matmul_add(a, b):
    return a @ b + 1


def with_break(a, b):
    y = a @ b
    s = y.sum().item()  # graph break: the rest runs in a resume function
    return y * s + b.mean()


def keywords(x, w=None, *, scale=1.0, bias=0.0):
    y = x * scale + bias
    return y @ w if w is not None else y


def varargs(*xs, **kw):
    out = xs[0]
    for t in xs[1:]:
        out = out + t
    return out * kw.get("k", 1.0)


def with_grad(x, w):
    return (x @ w).relu().sum()


def index(x, i):
    return x[i] + 1


def concat(xs):
    return eager.cat(xs, 0).sum(0)


def methods(x):
    return x.softmax(-1).max(0)


def to_device(x, dev):
    return x.to(dev) * 2


LINEAR = nn.Linear(4, 3)


def linear(x):
    return LINEAR(x)


# name -> (function, good arguments for leading size n, bad calls as (args, kwargs) makers)
CASES = {
    "matmul_add": (matmul_add, lambda n: ((T(n, 4), T(4, 5)), {}), [
        lambda: ((T(3, 4), T(3, 5)), {}),  # inner sizes differ
        lambda: ((T(3, 4), T(4)), {}),
        lambda: ((T(3, 4), None), {}),
        lambda: ((T(3, 4), [[1.0] * 5] * 4), {}),
        lambda: ((T(3, 4), np.ones((4, 5), np.float32)), {}),
        lambda: ((T(3, 4), 2.0), {}),
        lambda: ((T(3, 4), T(4, 5, dtype=eager.int64)), {}),  # mixed dtypes
        lambda: ((T(3, 4),), {}),  # too few arguments
        lambda: ((T(3, 4), T(4, 5), 1), {}),  # too many
        lambda: ((T(3, 4),), {"c": T(4, 5)}),  # unknown keyword
        lambda: ((T(3, 4), T(4, 5)), {"b": T(4, 5)}),  # given twice
    ]),
    "with_break": (with_break, lambda n: ((T(n, 4), T(4, 4)), {}), [
        lambda: ((T(3, 4), T(3, 4)), {}),
        lambda: ((T(3, 4), None), {}),
        lambda: ((T(3, 4), T(4, 4, dtype=eager.int64)), {}),
        lambda: ((T(3, 4), [[1.0] * 4] * 4), {}),
        lambda: ((T(3, 4), T(4, 4), T(4)), {}),
    ]),
    "keywords": (keywords, lambda n: ((T(n, 4),), {"scale": 2.0}), [
        lambda: ((T(3, 4), T(3, 4)), {}),
        lambda: ((T(3, 4),), {"sclae": 2.0}),
        lambda: ((T(3, 4),), {"scale": "a"}),
        lambda: ((T(3, 4),), {"scale": None}),
        lambda: ((T(3, 4), T(4, 2), 1.0), {}),  # keyword-only given positionally
        lambda: ((T(3, 4),), {"bias": T(5)}),  # broadcasting mismatch
        lambda: ((None,), {}),
        lambda: ((), {"scale": 2.0}),
    ]),
    "varargs": (varargs, lambda n: ((T(n, 4), T(n, 4)), {}), [
        lambda: ((T(3, 4), T(2, 4)), {}),
        lambda: ((), {}),
        lambda: ((T(3, 4), None), {}),
        lambda: ((T(3, 4), T(3, 4)), {"k": None}),
        lambda: ((T(3, 4), 1), {"k": T(2)}),
        lambda: ((T(3, 4), T(3, 4, dtype=eager.bool)), {"k": "x"}),
    ]),
    "with_grad": (with_grad, lambda n: ((T(n, 4, grad=True), T(4, 5, grad=True)), {}), [
        lambda: ((T(3, 4, grad=True), T(3, 5, grad=True)), {}),
        lambda: ((T(3, 4, grad=True), None), {}),
        lambda: ((T(3, 4, grad=True), T(4, 5, dtype=eager.int64)), {}),
        lambda: ((T(3, 4, grad=True), T(4, 5, grad=True).detach().numpy()), {}),
    ]),
    "index": (index, lambda n: ((T(n, 4), 1), {}), [
        lambda: ((T(3, 4), 5), {}),
        lambda: ((T(3, 4), -4), {}),
        lambda: ((T(3, 4), "a"), {}),
        lambda: ((T(3, 4), 1.5), {}),
        lambda: ((T(3, 4), (0, 0, 0)), {}),
        lambda: ((T(3, 4), T(2)), {}),  # a float tensor as index
        lambda: ((3.0, 0), {}),
    ]),
    "concat": (concat, lambda n: (([T(n, 4), T(3, 4)],), {}), [
        lambda: (([T(2, 4), T(3, 5)],), {}),
        lambda: (([],), {}),
        lambda: (([T(2, 4), None],), {}),
        lambda: ((T(2, 4),), {}),
        lambda: ((None,), {}),
    ]),
    "methods": (methods, lambda n: ((T(n, 4),), {}), [
        lambda: ((T(3, 4, dtype=eager.int64),), {}),
        lambda: ((np.ones((3, 4)),), {}),
        lambda: (([1.0],), {}),
        lambda: ((T(0, 4),), {}),
        lambda: ((1.0,), {}),
    ]),
    "to_device": (to_device, lambda n: ((T(n, 4), "cpu"), {}), [
        lambda: ((T(3, 4), "tpu"), {}),
        lambda: ((T(3, 4), "cuda:0"), {}),
        lambda: ((T(3, 4), 3), {}),
        lambda: ((T(3, 4), eager.float64), {"non_blocking": 1}),
    ]),
    "linear": (linear, lambda n: ((T(n, 4),), {}), [
        lambda: ((T(2, 5),), {}),
        lambda: ((T(2, 4, dtype=eager.int64),), {}),
        lambda: ((None,), {}),
        lambda: (([[1.0] * 4],), {}),
    ]),
}

PHASES = ("first", "hit", "recompile", "dynamic", "limit")


def outcome(fn, args, kwargs):
    try:
        return None, fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001
        return e, None


def same_value(got, want):
    if isinstance(want, tuple):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same_value(g, w)
        return
    if not isinstance(want, eager.Tensor):  # e.g. numpy's result for `tensor @ ndarray`
        assert type(got) is type(want)
        np.testing.assert_allclose(np.asarray(got, dtype=float),
                                   np.asarray(want, dtype=float), rtol=1e-5, atol=1e-5)
        return
    assert isinstance(got, eager.Tensor) and got.dtype is want.dtype
    assert got.requires_grad == want.requires_grad
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                               atol=1e-5)


def compiled_for(phase, fn, good, backend, monkeypatch):
    """`fn` compiled and brought to `phase` with good arguments (checked against eager)."""
    dynamic = {"recompile": False, "limit": False}.get(phase)
    if phase == "limit":
        monkeypatch.setattr(capture.config, "cache_size_limit", 2)
    c = capture.compile(fn, backend=backend, dynamic=dynamic)
    sizes = {"first": [], "hit": [3], "recompile": [3, 5], "dynamic": [3, 5, 6],
             "limit": [3, 5, 6, 7]}[phase]
    for n in sizes:
        args, kwargs = good(n)
        same_value(c(*args, **kwargs), fn(*args, **kwargs))
    cf = c.__wick_compiled__
    if phase == "limit":
        assert len(cf.entries) == 2 and cf.warned_limit
    if phase == "dynamic" and fn not in (methods,):  # (softmax's max specialises)
        assert any(e.runner is not None and e.runner.specs is not None for e in cf.entries)
    return c


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("backend", BACKENDS)
def test_bad_calls_raise_what_the_plain_call_raises(case, phase, backend, monkeypatch):
    fn, good, bads = CASES[case]
    c = compiled_for(phase, fn, good, backend, monkeypatch)
    for make in bads:
        args, kwargs = make()
        want, want_value = outcome(fn, args, kwargs)
        if want is None:  # (a call eager accepts: the compiled one returns the same)
            same_value(c(*args, **kwargs), want_value)
            continue
        with pytest.raises(type(want)) as got:
            c(*args, **kwargs)
        assert type(got.value) is type(want)
        assert str(got.value) == str(want), (args, kwargs)
    # the bad calls did not spoil the cache: good arguments still run compiled and right
    cf = c.__wick_compiled__
    runs = cf.graph_runs
    args, kwargs = good(3)
    same_value(c(*args, **kwargs), fn(*args, **kwargs))
    if phase != "first":
        assert cf.graph_runs > runs


# ---------------------------------------------------------------- regressions


def test_wrong_arity_on_the_first_call_does_not_disable_compilation():
    """A first call with a missing argument used to cache an eager entry whose only guards
    were grad mode and the default dtype: every later call then ran eagerly."""
    c = capture.compile(matmul_add, backend="eager")
    with pytest.raises(TypeError) as e:
        c(T(3, 4))
    with pytest.raises(TypeError) as want:
        matmul_add(T(3, 4))
    assert str(e.value) == str(want.value)
    cf = c.__wick_compiled__
    assert cf.entries == []
    a, b = T(3, 4), T(4, 5)
    same_value(c(a, b), matmul_add(a, b))
    assert [e.mode for e in cf.entries] == ["graph"] and cf.graph_runs == 1


def test_bad_shapes_use_no_cache_slot_and_mark_no_dimension_dynamic():
    """Ten calls with mismatched matmul shapes used to fill the cache with eager entries and
    mark both operands' dimensions dynamic; a good call then ran eagerly."""
    c = capture.compile(matmul_add, backend="eager")
    cf = c.__wick_compiled__
    a, b = T(3, 4), T(4, 5)
    same_value(c(a, b), matmul_add(a, b))
    for n in range(10):
        with pytest.raises(RuntimeError):
            c(T(3, 4 + n), T(5 + n, 5))
    assert len(cf.entries) == 1 and cf.dynamic_dims == {} and cf.recompile_reasons == []
    assert not cf.warned_limit
    a, b = T(6, 4), T(4, 5)
    same_value(c(a, b), matmul_add(a, b))
    assert cf.eager_runs == 10 and [e.mode for e in cf.entries] == ["graph", "graph"]


def test_capture_error_is_cached_as_eager_when_the_plain_call_succeeds(monkeypatch):
    """A capture bug (eager accepts the call) still caches an eager entry: no capture per
    call."""
    calls = []

    def broken(self):
        calls.append(1)
        raise RuntimeError("capture bug")

    monkeypatch.setattr(capture.symbolic.InstructionTranslator, "run", broken)
    c = capture.compile(matmul_add, backend="eager")
    a, b = T(3, 4), T(4, 5)
    for _ in range(3):
        same_value(c(a, b), matmul_add(a, b))
    cf = c.__wick_compiled__
    assert len(calls) == 1 and [e.mode for e in cf.entries] == ["eager"]
    assert "capture bug" in cf.break_reasons[0].reason


def test_backend_failure_runs_eagerly_with_a_logged_reason(monkeypatch, capsys):
    def fail(*args, **kwargs):
        raise RuntimeError("LLVM ERROR: Symbol not found: __truncdfhf2")

    monkeypatch.setattr(backends, "compile_graph", fail)
    monkeypatch.setenv("WICK_LOGS", "graph")
    c = capture.compile(matmul_add, backend="llvm")
    a, b = T(3, 4), T(4, 5)
    same_value(c(a, b), matmul_add(a, b))
    with pytest.raises(RuntimeError) as e:
        c(T(3, 4), T(3, 5))
    assert "cannot be multiplied" in str(e.value)  # eager's error, not the backend's
    assert "__truncdfhf2" in capsys.readouterr().err
    assert [e.mode for e in c.__wick_compiled__.entries] == ["eager"]


def test_hit_function_that_does_not_build_runs_eagerly(monkeypatch):
    def fail(cf, entry):
        raise SyntaxError("generated code")

    monkeypatch.setattr(compiler, "build_hit", fail)
    c = capture.compile(matmul_add, backend="eager")
    a, b = T(3, 4), T(4, 5)
    for _ in range(2):
        same_value(c(a, b), matmul_add(a, b))
    with pytest.raises(RuntimeError):
        c(T(3, 4), T(3, 5))
    cf = c.__wick_compiled__
    assert [e.mode for e in cf.entries] == ["eager"] and cf.eager_runs == 3


def test_guards_that_do_not_build_run_eagerly(monkeypatch):
    """Any failure after the graph (here: the guard closure) falls back to eager; it used to
    escape from the call as an internal error of capture."""
    real = capture.guards.GuardSet.build
    state = {"fail": True}

    def build(self):
        if state["fail"]:
            state["fail"] = False
            raise SyntaxError("bad guard term")
        return real(self)

    monkeypatch.setattr(capture.guards.GuardSet, "build", build)
    c = capture.compile(matmul_add, backend="eager")
    a, b = T(3, 4), T(4, 5)
    same_value(c(a, b), matmul_add(a, b))
    assert [e.mode for e in c.__wick_compiled__.entries] == ["eager"]


def test_dynamic_entry_whose_new_shape_fails_to_compile_runs_eagerly(monkeypatch):
    c = capture.compile(varargs, backend="eager", dynamic=True)
    a, b = T(3, 4), T(3, 4)
    same_value(c(a, b), varargs(a, b))

    def fail(*args, **kwargs):
        raise RuntimeError("codegen failed")

    monkeypatch.setattr(backends, "compile_graph", fail)
    a, b = T(5, 4), T(5, 4)
    same_value(c(a, b), varargs(a, b))
    with pytest.raises(RuntimeError) as e:
        c(T(5, 4), T(6, 4))
    with pytest.raises(RuntimeError) as want:
        varargs(T(5, 4), T(6, 4))
    assert str(e.value) == str(want.value)


def test_past_the_limit_the_failing_guard_is_named_once(monkeypatch):
    """Past the recompile limit, each call used to re-derive the failing guard of every entry
    (a compiled function per guard term per entry): now only for the one warning."""
    monkeypatch.setattr(capture.config, "cache_size_limit", 2)
    counted = []
    real = capture.guards.GuardSet.first_failure

    def first_failure(self, args, kwargs):
        counted.append(1)
        return real(self, args, kwargs)

    monkeypatch.setattr(capture.guards.GuardSet, "first_failure", first_failure)
    c = capture.compile(matmul_add, backend="eager", dynamic=False)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in range(3, 13):
            a, b = T(n, 4), T(4, 5)
            same_value(c(a, b), matmul_add(a, b))
    assert len([x for x in w if "recompile limit" in str(x.message)]) == 1
    assert len(counted) == 1 + 2  # the recompile, then the warning (one per entry)


def test_fullgraph_bad_arguments_raise_eagers_error():
    c = capture.compile(matmul_add, backend="eager", fullgraph=True)
    with pytest.raises(RuntimeError) as e:
        c(T(3, 4), T(3, 5))
    with pytest.raises(RuntimeError) as want:
        matmul_add(T(3, 4), T(3, 5))
    assert str(e.value) == str(want.value)
    with pytest.raises(TypeError):
        c(T(3, 4))


def test_compiled_module_with_bad_input():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    c = capture.compile(model, backend="eager")
    x = T(5, 4)
    same_value(c(x), model(x))
    for bad in (T(5, 3), None, T(5, 4, dtype=eager.int64), "x", [[1.0] * 4]):
        want, value = outcome(model, (bad,), {})
        if want is None:
            same_value(c(bad), value)
            continue
        with pytest.raises(type(want)) as got:
            c(bad)
        assert str(got.value) == str(want)
    same_value(c(x), model(x))
