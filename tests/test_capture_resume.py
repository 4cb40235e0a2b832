"""capture: graph breaks that resume, gradients through them, automatic dynamic shapes,
recompile reasons and the limit, WICK_LOGS, fullgraph, breakpoint(), `wick dump/explain`.

Values are compared with the same function run eagerly; gradients with eager's gradients;
report fields with the test's own source lines (found with `inspect`).
"""

from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import capture
import codegen
import eager
from eager import nn

capture.config.debug = True

BACKENDS = ["eager", pytest.param("llvm", marks=pytest.mark.skipif(
    not hasattr(codegen, "compile_graph"), reason="codegen.compile_graph is not available"))]


def close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


def line_of(fn, text: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


@pytest.mark.parametrize("backend", BACKENDS)
def test_branch_on_tensor_picks_one_of_two_resume_functions(backend):
    def f(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    cf = capture.compile(f, backend=backend)
    pos, neg = eager.ones(3), -eager.ones(3)
    close(cf(pos), f(pos))
    close(cf(neg), f(neg))
    root = cf.__wick_compiled__
    assert root.entries[0].mode == "resume" and len(root.entries) == 1
    names = sorted(c.fn.__name__ for c in root.children)
    assert names == sorted({f"__resume_in_f_at_{line_of(f, 'y + 1')}",
                            f"__resume_in_f_at_{line_of(f, 'y - 1')}"})
    assert all(len(c.entries) == 1 for c in root.children)  # each compiled once


def test_loop_with_break_keeps_code_around_it_compiled(capsys):
    def f(x):
        y = x * 2
        for i in range(3):
            y = y + i
            print("step", i)
        return eager.exp(y)

    cf = capture.compile(f, backend="eager")
    x = eager.randn(4)
    close(cf(x), f(x))
    root = cf.__wick_compiled__
    ops = [n.target.name for n in root.entries[0].graph.nodes if n.op == "call_function"]
    assert ops == ["mul"]
    after = root.children[0].entries[0].graph
    assert [n.target.name for n in after.nodes if n.op == "call_function"] == ["exp"]
    assert capsys.readouterr().out.count("step") == 6


def test_loop_with_break_in_a_function_with_a_closure(capsys):
    """An argument a closure reads is both a local and a cell: the loop's exits once listed
    it twice as a parameter (co_varnames too small), so the rest of the frame ran eagerly;
    the in-place update of it in the loop's first pass must not be written back twice."""
    def f(x, w):
        y = x * 2
        for i in range(3):
            w += 1.0
            y = y + i
            print("step", i)
        def scaled():
            return w * 3
        return eager.exp(y) + scaled()

    cf = capture.compile(f, backend="eager")
    x = eager.randn(4)
    w_plain, w_comp = eager.zeros(4), eager.zeros(4)
    close(cf(x, w_comp), f(x, w_plain))
    close(w_comp, w_plain)
    root = cf.__wick_compiled__
    after = root.children[0].entries[0].graph
    assert {n.target.name for n in after.nodes if n.op == "call_function"} >= {"exp", "mul"}
    assert capsys.readouterr().out.count("step") == 6


def test_break_inside_callee_compiles_the_callee_on_its_own():
    def inner(x):
        y = x + 1
        print("inner")
        return y * 3

    def f(x):
        return inner(x * 2) - 1

    x = eager.randn(3)
    report = capture.explain(f)(x)
    close(report.result, f(x))
    assert any(n.endswith(".inner") for n in report.functions)
    assert report.graph_count == 4 and report.graph_break_count == 3  # (torch: 4, 3)
    assert len(report.break_reasons) == 2  # inner's print, in inner and at f's call


def test_gradients_through_graph_breaks_equal_eager():
    def f(x, w):
        h = eager.tanh(x @ w)
        if h.sum() > -100:  # a branch break
            h = h * 2
        print("between the graphs")
        s = (h * h).sum(dim=1)
        return (s * s).sum(), h

    def grads(fn):
        x = eager.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=eager.float64)
        w = eager.tensor(np.linspace(0, 1, 12).reshape(3, 4), dtype=eager.float64,
                         requires_grad=True)
        loss, _h = fn(x, w)
        loss.backward()
        return loss, w.grad

    want = grads(f)
    got = grads(capture.compile(f))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=1e-12)


def test_module_parameters_are_graph_inputs_and_gradients_match():
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    compiled = capture.compile(model, backend="eager")
    x = eager.randn(5, 4)
    out = compiled(x)
    close(out, model(x))
    entry = compiled.__wick_compiled__.entries[0]
    assert entry.mode == "graph" and len(entry.graph.placeholders) == 5  # x + 4 parameters
    out.sum().backward()
    got = [p.grad.numpy().copy() for p in model.parameters()]
    model.zero_grad()
    model(x).sum().backward()
    for g, p in zip(got, model.parameters()):
        np.testing.assert_allclose(g, p.grad.numpy(), rtol=1e-6)
    assert compiled._orig_mod is model


@pytest.mark.parametrize("backend", BACKENDS)
def test_automatic_dynamic_shapes_one_entry_serves_all_sizes(backend):
    def f(x, w):
        h = (x @ w).relu()
        return h.reshape(-1).sum() + h.mean(dim=1).sum() + x.shape[1]

    cf = capture.compile(f, backend=backend)
    w = eager.randn(4, 3)
    for n in (2, 3, 5, 8, 3, 5, 8, 1):
        x = eager.randn(n, 4)
        close(cf(x, w), f(x, w))
    root = cf.__wick_compiled__
    # the static entry for n=2, one dynamic entry for n >= 2, and n=1 specialised
    assert [e.dynamic_dims for e in root.entries] == [{}, {"x": {0}}, {}]
    # one graph per size: 3 (the capture's), 5 and 8 (compiled on their second call)
    assert len(root.entries[1].runner.specs.by_shape) == 3
    assert "x.shape == (2, 4)" in root.recompile_reasons[0]


def test_dynamic_size_read_as_op_size_stays_dynamic():
    """`x.shape[0] * 2` as a reshape size is a symbolic size (replayed per shape); a size
    read as a Python value (`range(n)`) specialises."""
    def f(x):
        return x.reshape(x.shape[0] * 2, -1)

    def g(x):
        return sum(x[i] for i in range(x.shape[0]))

    for fn, dims in ((f, [{}, {"x": {0}}]), (g, [{}, {}, {}])):
        cf = capture.compile(fn, backend="eager")
        for n in (2, 3, 4):
            x = eager.randn(n, 4)
            close(cf(x), fn(x))
        assert [e.dynamic_dims for e in cf.__wick_compiled__.entries] == dims


def test_dynamic_true_and_false():
    def f(x):
        return x * 2 + x.sum()

    dyn = capture.compile(f, backend="eager", dynamic=True)
    static = capture.compile(f, backend="eager", dynamic=False)
    for n in (2, 3, 6):
        x = eager.randn(n, 3)
        close(dyn(x), f(x))
        close(static(x), f(x))
    assert len(dyn.__wick_compiled__.entries) == 1
    assert dyn.__wick_compiled__.entries[0].dynamic_dims == {"x": {0, 1}}
    assert len(static.__wick_compiled__.entries) == 3


def test_closure_change_is_caught_by_a_guard():
    k = 2.0

    def f(x):
        return x * k

    cf = capture.compile(f, backend="eager")
    x = eager.randn(3)
    close(cf(x), x * 2.0)
    k = 5.0
    close(cf(x), x * 5.0)
    reasons = cf.__wick_compiled__.recompile_reasons
    assert len(reasons) == 1 and "cell_k.cell_contents == 2.0" in reasons[0]


def test_recompile_limit_single_warning(monkeypatch):
    monkeypatch.setattr(capture.config, "cache_size_limit", 3)
    cf = capture.compile(lambda x, n: x + n % 100, backend="eager")  # n stays static (%)
    x = eager.randn(2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(8):
            close(cf(x, n), x + n)
    assert len(cf.__wick_compiled__.entries) == 3
    assert len([w for w in caught if "recompile limit" in str(w.message)]) == 1


def test_fullgraph_names_the_break_and_its_line():
    def f(x):
        y = x + 1
        z = y.sum().item()
        return y * z

    with pytest.raises(capture.Unsupported) as err:
        capture.compile(f, fullgraph=True)(eager.randn(3))
    assert f"{__file__}:{line_of(f, '.item()')}" in str(err.value)
    assert "item()" in str(err.value)


def test_breakpoint_runs_eagerly(monkeypatch):
    hits = []
    monkeypatch.setattr(sys, "breakpointhook", lambda *a, **k: hits.append(1))

    def f(x):
        y = x * 2
        breakpoint()  # noqa: T100
        return y + 1

    x = eager.randn(3)
    close(capture.compile(f, backend="eager")(x), x * 2 + 1)
    assert hits == [1]


def test_explain_report_fields():
    def f(x):
        y = x * 2
        print("p")
        return y.sum()

    x = eager.randn(3)
    r1 = capture.explain(f)(x)
    r2 = capture.explain(f)(x)
    (b,) = r1.break_reasons
    assert b.id == r2.break_reasons[0].id  # stable ids
    assert b.lineno == line_of(f, 'print("p")') and b.source_line == 'print("p")'
    assert "print" in b.hint and "capture_ms" in r1.compile_times[0]
    text = str(r1)
    assert b.id in text and "hint:" in text and "graph 0" in text


def test_wick_logs(monkeypatch, capsys):
    def f(x, n):
        y = x + n
        print("mid")
        return y * 2

    monkeypatch.setenv("WICK_LOGS", "graph,breaks,recompiles,guards,code")
    cf = capture.compile(f, backend="eager")
    cf(eager.randn(3), 1)
    cf(eager.randn(3), 2)
    err = capsys.readouterr().err
    for kind in ("graph", "breaks", "recompiles", "guards", "code"):
        assert f"[wick:{kind}]" in err, kind
    assert "__resume_in_f_at_" in err and "n == 1" in err
    monkeypatch.delenv("WICK_LOGS")
    capture.compile(f, backend="eager")(eager.randn(3), 1)
    assert "[wick:" not in capsys.readouterr().err  # quiet by default


SCRIPT = """
import eager, capture

def f(x):
    y = eager.relu(x) * 2
    print("midway")
    if y.sum() > 0:
        return y + 1
    return y - 1

f = capture.compile(f)
for n in (2, 3, 4):
    f(eager.ones(n, 3))
"""


def test_wick_dump_and_explain_commands(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent(SCRIPT))
    cmd = [sys.executable, "-m", "capture", "dump", str(script), "--stages",
           "guards,code,graph", "--format", "dot"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "-- guards (entry 0)" in out and "-- code (entry 0)" in out
    assert "__resume_in_f_at_6" in out and "__break_in_f_at_6" in out
    assert "function __resume_in_f_at_8" in out  # resume functions dumped under f
    assert "digraph" in out or "relu" in out
    done = subprocess.run([sys.executable, "-m", "capture", "explain", str(script)],
                          capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert "graph break [B" in done.stdout and "hint:" in done.stdout
    assert "recompile:" in done.stdout
