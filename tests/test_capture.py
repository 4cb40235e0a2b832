"""capture: compiled functions against the same functions run eagerly.

Every value test runs the function eagerly and compiled (backend "eager" = the IR interpreter,
and "llvm" when codegen provides `compile_graph`) and compares with numpy.testing; nothing is
compared against recorded outputs. Break tests check the recorded reason against the test's own
source lines (found with `inspect`).
"""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import capture
import codegen
import eager
import ir

capture.config.debug = True  # assert every instruction's symbolic stack effect

HAS_LLVM = hasattr(codegen, "compile_graph")
BACKENDS = ["eager", pytest.param("llvm", marks=pytest.mark.skipif(
    not HAS_LLVM, reason="codegen.compile_graph is not available yet"))]

SCALE = 0.5
W = eager.randn(4, 3)


def same(got, want):
    """Compare a compiled result with the eager one (tensors by value, the rest by ==)."""
    if isinstance(want, eager.Tensor):
        assert isinstance(got, eager.Tensor)
        assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    else:
        assert type(got) is type(want) and got == want


def check(fn, *args, backend="eager", **kwargs):
    """Run `fn` eagerly and compiled; compare; return the compiled function's cache object."""
    want = fn(*args, **kwargs)
    compiled = capture.compile(fn, backend=backend)
    same(compiled(*args, **kwargs), want)
    cf = compiled.__wick_compiled__
    return cf


def entries(compiled):
    return compiled.__wick_compiled__.entries


def line_of(fn, text: str) -> int:
    """The line number of the first line of `fn`'s source containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


# ---------------------------------------------------------------- values


def helper(a, b, k=2.0):
    return a * k - b


@pytest.mark.parametrize("backend", BACKENDS)
def test_straight_line_scalars_and_globals(backend):
    def f(x, y, n):
        a = x * n + y / 3
        b = eager.exp(-a) + SCALE
        return (b - x) * 2 ** n + math.pi

    cf = check(f, eager.randn(3, 4), eager.randn(3, 4), 3, backend=backend)
    assert cf.entries[0].mode == "graph"


@pytest.mark.parametrize("backend", BACKENDS)
def test_tuple_returns_constants_and_attribute_reads(backend):
    def f(x):
        n = x.shape[0]
        y = x.T @ x
        if x.ndim == 2:
            y = y + n
        return (y, (x.sum(), n, None)), [x.size(1), x.dim(), x.dtype], "done"

    cf = check(f, eager.randn(5, 3), backend=backend)
    assert cf.entries[0].mode == "graph"


@pytest.mark.parametrize("backend", BACKENDS)
def test_inlined_helpers_and_functional(backend):
    def f(x, w):
        h = helper(x @ w, 1.0, k=3)
        return eager.nn.functional.gelu(h), eager.nn.functional.softmax(h, dim=-1), \
            helper(h, h)

    cf = check(f, eager.randn(2, 4), W, backend=backend)
    g = cf.entries[0].graph
    assert cf.entries[0].mode == "graph"
    # composites are decomposed: the graph holds primitive ops only
    assert all(n.target.decomp is None for n in g.nodes if n.op == "call_function")


@pytest.mark.parametrize("backend", BACKENDS)
def test_methods(backend):
    def f(x):
        s = x.sum(dim=1, keepdim=True)
        r = x.reshape(-1)
        return s, r.exp(), x.mean(dim=0), x.float().t(), eager.Tensor.add(x, 1, alpha=2), \
            x.reshape(2, 6), eager.reshape(x, shape=(6, 2)), x.transpose(0, 1)

    cf = check(f, eager.randn(3, 4), backend=backend)
    assert cf.entries[0].mode == "graph", cf.break_reasons


@pytest.mark.parametrize("backend", BACKENDS)
def test_predict_model(backend):
    def predict(x, w1, b1, w2, b2):
        h = eager.nn.functional.gelu(x @ w1 + b1)
        return eager.nn.functional.log_softmax(h @ w2 + b2, dim=-1)

    args = (eager.randn(8, 16), eager.randn(16, 32), eager.randn(32), eager.randn(32, 10),
            eager.randn(10))
    cf = check(predict, *args, backend=backend)
    assert cf.entries[0].mode == "graph"


def test_python_constructs_fold():
    def f(x, scales):
        for s in scales:
            x = x * s
        a, b = x, 2
        with eager.no_grad():
            c = x + b
        y = c * 2
        y += 1  # in-place on an intermediate: captured
        return y, a, len(scales), x.shape[-1] // 2, -b

    cf = check(f, eager.randn(3), (1.0, 2.0, 3.0))
    assert cf.entries[0].mode == "graph"


def test_closure_variables():
    w = eager.randn(3)

    def f(x):
        return x * w + SCALE

    assert check(f, eager.randn(3)).entries[0].mode == "graph"


def test_returned_input_is_the_same_object():
    f = capture.compile(lambda x, y: (x, y * 2))
    x, y = eager.randn(2), eager.randn(2)
    out = f(x, y)
    assert out[0] is x
    same(out[1], y * 2)


# ---------------------------------------------------------------- caching and guards


def test_cache_hit_and_recompiles():
    def f(x, n):
        return x * n

    cf = capture.compile(f, backend="eager")
    x = eager.randn(2, 3)
    same(cf(x, 2), f(x, 2))
    xb = eager.randn(2, 3)
    same(cf(xb, 2), f(xb, 2))
    assert len(entries(cf)) == 1
    x2 = eager.randn(4, 3)
    same(cf(x2, 2), f(x2, 2))
    assert len(entries(cf)) == 2
    same(cf(x2, 5), f(x2, 5))
    assert len(entries(cf)) == 3
    reasons = cf.__wick_compiled__.recompile_reasons
    assert "x.shape == (2, 3)" in reasons[0]
    assert "n == 2" in reasons[1]
    assert entries(cf)[1].recompile_reason == reasons[0]
    # the first variant still hits
    same(cf(x, 2), f(x, 2))
    assert len(entries(cf)) == 3


def test_grad_mode_and_dtype_guards():
    f = capture.compile(lambda x: x + 1)
    x = eager.randn(3)
    f(x)
    with eager.no_grad():
        f(x)
    f(eager.tensor(np.ones(3)))  # float64
    assert len(entries(f)) == 3


def test_global_guard_sees_a_changed_global():
    global SCALE
    f = capture.compile(lambda x: x * SCALE)
    x = eager.randn(3)
    same(f(x), x * SCALE)
    old, SCALE = SCALE, 3.0
    try:
        same(f(x), x * 3.0)
    finally:
        SCALE = old
    assert len(entries(f)) == 2


def test_recompile_limit_warns_once(monkeypatch):
    monkeypatch.setattr(capture.config, "cache_size_limit", 2)
    f = capture.compile(lambda x, n: x + n % 100)  # (`%` keeps n static)
    x = eager.randn(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(5):
            same(f(x, n), x + n)
    assert len(entries(f)) == 2
    limit = [w for w in caught if "recompile limit" in str(w.message)]
    assert len(limit) == 1 and "n == 1" in str(limit[0].message)


# ---------------------------------------------------------------- graph breaks and errors


def test_print_breaks_and_runs_eagerly(capsys):
    def f(x):
        y = x + 1
        print("value", 3)
        return y * 2

    cf = check(f, eager.randn(3))
    assert capsys.readouterr().out.count("value 3") == 2  # eager once, compiled once
    (entry,) = cf.entries
    assert entry.mode == "resume"  # graph, print eagerly, then a compiled resume function
    (resume,) = cf.children
    assert resume.fn.__name__ == f"__resume_in_f_at_{line_of(f, 'print(')}"
    assert resume.entries[0].mode == "graph"
    r = entry.break_reason
    assert "print" in r.reason and r.instruction == "CALL"
    assert r.filename == __file__ and r.lineno == line_of(f, "print(")
    assert r.source_line == 'print("value", 3)'


def test_item_breaks_with_reason():
    def f(x):
        s = x.sum()
        return x * s.item()

    cf = check(f, eager.randn(4))
    r = cf.break_reasons[0]
    assert "item()" in r.reason and r.lineno == line_of(f, ".item()")


def test_branch_on_tensor_and_graph_break_and_disable():
    @capture.disable
    def opaque(x):
        return x * 3

    def f(x):
        if x.sum() > 0:
            return x
        return -x

    def g(x):
        capture.graph_break()
        return x + 1

    def h(x):
        return opaque(x) + 1

    for fn, word in ((f, "tensor value"), (g, "graph_break"), (h, "disable")):
        cf = check(fn, eager.randn(3))
        assert word in cf.break_reasons[0].reason
    assert capture.compile(opaque) is opaque


def test_fullgraph_raises():
    def f(x):
        print(x.shape)
        return x

    with pytest.raises(capture.Unsupported, match="print"):
        capture.compile(f, fullgraph=True)(eager.randn(2))
    assert issubclass(capture.Unsupported, RuntimeError)


@pytest.mark.parametrize("fn,args", [
    (lambda x, y: (x + 1) @ y, (eager.randn(2, 3), eager.randn(4, 5))),
    (lambda x, y: x + y, (eager.randn(2, 3), eager.randn(4))),
    (lambda x, n: x * (n / 0), (eager.randn(2), 1)),
    (lambda x: x.reshape(7), (eager.randn(2, 3),)),
    (lambda x: x.sum(dim=3), (eager.randn(2, 3),)),
])
def test_user_errors_match_eager(fn, args):
    with pytest.raises(Exception) as want:
        fn(*args)
    with pytest.raises(want.type) as got:
        capture.compile(fn)(*args)
    assert str(got.value) == str(want.value)


def test_unknown_argument_types_run_eagerly():
    def f(x, a):
        return x + 1, a

    arr = np.ones(3)
    got = capture.compile(f)(eager.randn(3), arr)
    assert got[1] is arr

    def g(x, d):
        return x * d["k"]

    x = eager.randn(3)
    same(capture.compile(g)(x, {"k": 2.0}), g(x, {"k": 2.0}))


# ---------------------------------------------------------------- autograd


def test_gradients_equal_eager():
    def predict(x, w, b):
        h = eager.tanh(x @ w + b)
        with eager.no_grad():
            k = h.sum()  # not differentiated
        return eager.nn.functional.log_softmax(h * 2, dim=-1).sum(), k

    def grads(fn):
        x = eager.tensor(np.linspace(-1, 1, 12).reshape(3, 4), dtype=eager.float64)
        w = eager.tensor(np.linspace(0, 2, 20).reshape(4, 5), requires_grad=True,
                         dtype=eager.float64)
        b = eager.tensor(np.linspace(-1, 0, 5), requires_grad=True, dtype=eager.float64)
        loss, k = fn(x, w, b)
        assert not k.requires_grad
        loss.backward()
        return loss, w.grad, b.grad

    want = grads(predict)
    got = grads(capture.compile(predict))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12)


# ---------------------------------------------------------------- API


def test_decorator_forms_preserve_metadata():
    @capture.compile
    def f(x):
        """Doc of f."""
        return x + 1

    @capture.compile(backend="eager", fullgraph=True)
    def g(x):
        return x - 1

    assert f.__name__ == "f" and f.__doc__ == "Doc of f." and callable(f.__wrapped__)
    assert g.__name__ == "g"
    x = eager.randn(2)
    same(f(x), x + 1)
    same(g(x), x - 1)
    assert eager.compile(f.__wrapped__)(x).shape == x.shape
    with pytest.raises(ValueError):
        capture.compile(f.__wrapped__, backend="nope")


def test_explain_and_reset():
    def f(x):
        y = eager.relu(x) * 2
        print("side effect")
        return y

    cf = capture.compile(f)
    out = capture.explain(f)(eager.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0  # (nothing compiled after)
    assert len(out.break_reasons) == 1
    assert "print" in out.break_reasons[0].reason and "graph break" in str(out)
    assert entries(cf) == []  # explain used its own cache

    def g(x):
        return eager.relu(x) * 2 + 1

    out = capture.explain(g)(eager.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.ops_per_graph == [["relu", "mul", "add"]]
    assert isinstance(out.graphs[0], ir.Graph)

    cg = capture.compile(g)
    cg(eager.randn(3))
    assert len(entries(cg)) == 1 and capture.registry.COMPILED
    capture.reset()
    assert entries(cg) == [] and capture.registry.COMPILED == []


def test_wick_dump_command(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys
        import eager, capture

        @capture.compile
        def scaled(x, y):
            return eager.relu(x @ y) * float(sys.argv[1])

        print("result", scaled(eager.ones(2, 3), eager.ones(3, 4)).sum().item())
    """))
    cmd = [sys.executable, "-m", "capture", "dump", str(script), "--", "2"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "result 48.0" in out
    for header in ("function scaled", "-- bytecode", "-- graph (entry 0)",
                   "-- guards (entry 0)", "-- fusion", "-- kernels", "-- llvm"):
        assert header in out, header
    assert "matmul(%x, %y)" in out and "x._data.shape == (2, 3)" in out and "LOAD_GLOBAL" in out

    cmd = [sys.executable, "-m", "capture", "dump", str(script), "--stages", "graph",
           "--function", "scaled", "--", "2"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          check=False).stdout
    assert "-- graph (entry 0)" in out and "-- bytecode" not in out
