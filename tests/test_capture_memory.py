"""capture: repeated calls and recompiles do not grow memory without bound.

Each scenario runs in a fresh subprocess that warms up, measures its resident set size (Linux
`/proc/self/statm`), repeats the pattern many times and reports the growth, which must stay
under `BOUND_MB`. Before the fixes: a dynamic entry compiled (and kept) kernels for every size
it ever saw (+200 MB for 1000 sizes), and the registry of compiled functions kept every
compiled closure alive forever (+27 MB for 1000).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import codegen

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/statm"),
                                reason="RSS is read from /proc/self/statm (Linux)")
BACKEND = "llvm" if hasattr(codegen, "compile_graph") else "eager"
BOUND_MB = 5.0

PRELUDE = """
import gc, json, os, sys, warnings
import eager, capture
warnings.simplefilter("ignore")
BACKEND = sys.argv[1]

def rss_mb():
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

def measure(step, warm, reps):
    for i in range(warm):
        step(i)
    gc.collect()
    before = rss_mb()
    for i in range(warm, warm + reps):
        step(i)
    gc.collect()
    return rss_mb() - before

def f(x, y):
    return eager.relu(x * 2 + y).sum(0)

def g(x, y):
    z = x * y
    if z.sum().item() > 0:
        return z + 1
    return z - 1
"""

SCENARIOS = {
    # 10^4 calls of a graph entry and of a resume entry (graph break) with the same shapes
    "same_shape": """
        cf_, cg_ = capture.compile(f, backend=BACKEND), capture.compile(g, backend=BACKEND)
        x, y = eager.ones(4, 3), eager.ones(4, 3)
        out = {"graph": measure(lambda i: cf_(x, y), 500, 10000),
               "resume": measure(lambda i: cg_(x, y), 500, 10000)}
    """,
    # new shapes past the recompile limit, over and over (static shapes: each is a miss)
    "past_the_limit": """
        c = capture.compile(f, backend=BACKEND, dynamic=False)
        out = measure(lambda i: c(eager.ones(i + 2, 3), eager.ones(i + 2, 3)), 100, 2000)
    """,
    # automatic dynamic shapes: a new size on every call
    "dynamic_sizes": """
        c = capture.compile(f, backend=BACKEND)
        out = measure(lambda i: c(eager.ones(i + 2, 3), eager.ones(i + 2, 3)), 100, 600)
    """,
    # a function compiled afresh on every call (a closure), then dropped
    "fresh_closures": """
        x = eager.ones(4, 3)
        def step(i):
            def h(x):
                return eager.relu(x * 2 + 1).sum(0)
            capture.compile(h, backend=BACKEND)(x)
        out = measure(step, 100, 1000)
        gc.collect()
        out = {"growth": out, "registered": len(capture.registry.COMPILED)}
    """,
    # bad arguments, again and again (each one is captured and raises eager's error)
    "bad_calls": """
        c = capture.compile(lambda a, b: (a @ b).relu(), backend=BACKEND)
        c(eager.ones(3, 4), eager.ones(4, 5))
        a, b = eager.ones(3, 4), eager.ones(3, 5)
        def step(i):
            for args in ((a, b), (a,), (a, None)):
                try:
                    c(*args)
                except (RuntimeError, TypeError):
                    pass
        out = measure(step, 100, 1000)
    """,
}


def run(name: str):
    script = PRELUDE + textwrap.dedent(SCENARIOS[name]) + "\nprint(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-c", script, BACKEND], capture_output=True,
                          text=True, timeout=500)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_repeated_calls_do_not_grow_memory():
    out = run("same_shape")
    assert out["graph"] < BOUND_MB and out["resume"] < BOUND_MB, out


def test_calls_past_the_recompile_limit_do_not_grow_memory():
    assert run("past_the_limit") < BOUND_MB


def test_a_dynamic_entry_keeps_a_bounded_number_of_shapes():
    assert run("dynamic_sizes") < BOUND_MB


def test_dropped_compiled_functions_are_freed():
    out = run("fresh_closures")
    assert out["growth"] < BOUND_MB and out["registered"] == 0, out


def test_repeated_bad_calls_do_not_grow_memory():
    assert run("bad_calls") < BOUND_MB


def test_a_compiled_callee_that_breaks_gets_one_child():
    """A compiled function called from compiled code, breaking inside: the caller used to
    look its child up under the wrapper but store it under the wrapped function, so every
    call made (and kept) a new child CompiledFunction."""
    import capture
    import eager

    @capture.compile(backend="eager")
    def inner(y):
        s = y.sum().item()  # graph break inside the callee
        return y * s

    def outer(x):
        return inner(x * 2) + 1

    c = capture.compile(outer, backend="eager")
    x = eager.ones(3)
    for _ in range(30):
        assert (c(x) - outer(x)).abs().max().item() == 0
    cf = c.__wick_compiled__
    assert len(cf.callees) == 1 and sum(1 for _ in cf.all_functions()) <= 4


def test_dynamic_shape_limit_runs_new_shapes_eagerly_and_warns_once(monkeypatch):
    import warnings

    import numpy as np

    import capture
    import eager

    monkeypatch.setattr(capture.config, "dynamic_shape_limit", 3)

    def f(x):
        return (x * 2).relu().sum(0)

    c = capture.compile(f, backend="eager", dynamic=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for n in [*range(2, 10)] * 2:  # (a shape compiles on its second call)
            x = eager.randn(n, 3)
            np.testing.assert_allclose(c(x).numpy(), f(x).numpy(), rtol=1e-6)
    (entry,) = c.__wick_compiled__.entries
    assert len(entry.runner.specs.by_shape) == 3
    assert len([x for x in w if "dynamic_shape_limit" in str(x.message)]) == 1
    capture.reset()
