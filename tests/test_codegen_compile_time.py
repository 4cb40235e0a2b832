"""First-call compile time machinery: a graph's kernels compiled as one batch (one LLVM module,
one object, one disk entry), kernels found by their structural key without rendering, and the
fallbacks when a batch or a kernel fails. Results are compared with `ir.Interpreter`."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import codegen
import ir
from codegen import compiled, emit, jit, linkcheck
from codegen.kernel import lower_group
from codegen.kernel_key import structural_key
from codegen.partition import FusionGroup, partition
from ir import dtypes as D

R = ir.REGISTRY
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(autouse=True)
def _no_disk_cache(monkeypatch):
    monkeypatch.setenv("WICK_CACHE_DIR", "0")   # counters count compiles, not disk hits


def c(g, name, *args, **kw):
    return g.call_op(R[name], args, kw)


def ph(g, name, shape, dtype=D.float32):
    return g.placeholder(name, ir.TensorMeta(tuple(shape), dtype))


def layered(n_layers=3, scale=1.75, shape=(8, 16), dtype=D.float32):
    """x -> n_layers x (tanh(h * scale) + 1 then matmul by w): a kernel per layer, split by
    the matmuls (library calls); the layers' kernels are identical."""
    g = ir.Graph()
    h = ph(g, "x", shape, dtype)
    w = ph(g, "w", (shape[1], shape[1]), dtype)
    for _ in range(n_layers):
        h = c(g, "matmul", c(g, "add", c(g, "tanh", c(g, "mul", h, scale)), 1.0), w)
    g.output((c(g, "exp", c(g, "neg", h)),))
    return g


def inputs(shape=(8, 16), dtype=np.float32):
    rng = np.random.default_rng(0)
    return (rng.standard_normal(shape).astype(dtype),
            (rng.standard_normal((shape[1], shape[1])) / 4).astype(dtype))


def check(g, *arrays):
    cg = codegen.compile_graph(g)
    for a, b in zip(cg(*arrays), ir.Interpreter(g).run(*arrays)):
        np.testing.assert_allclose(a, np.asarray(b), rtol=1e-5, atol=1e-6)
    return cg


def groups(g):
    return [s for s in partition(g).steps if isinstance(s, FusionGroup)]


# ---------------------------------------------------------------- structural keys


def test_structural_key_is_equal_for_equal_kernels_of_different_graphs():
    a, b = groups(layered(2)), groups(layered(3))
    ka = [structural_key(lower_group(grp, f"k{i}_a")) for i, grp in enumerate(a)]
    kb = [structural_key(lower_group(grp, f"other{i}")) for i, grp in enumerate(b)]
    assert None not in ka and ka[0] == ka[1] == kb[0] == kb[1] == kb[2]
    assert ka[-1] == kb[-1] and ka[0] != ka[-1]


@pytest.mark.parametrize("change", [dict(scale=2.0), dict(scale=2), dict(dtype=D.float64),
                                    dict(shape=(8, 32)), dict(shape=(4, 16))])
def test_structural_key_differs_when_the_kernel_differs(change):
    base = lower_group(groups(layered(1))[0], "k0")
    other = lower_group(groups(layered(1, **change))[0], "k0")
    assert structural_key(base) != structural_key(other)
    if "shape" not in change:   # (the outer loop's size is a call argument: same IR)
        assert compiled.render_kernel(base, "f") != compiled.render_kernel(other, "f")


def _mixed():
    g = ir.Graph()
    x = ph(g, "x", (6, 10))
    y = ph(g, "y", (10,), D.float64)
    g.output((c(g, "softmax", x, -1), c(g, "sum", c(g, "mul", x, y), (1,)),
              c(g, "softmax", c(g, "add", x, 0.5), -1), c(g, "amax", x, (0,))))
    return g


def test_equal_structural_keys_render_equal_ir():
    kernels = [lower_group(grp, f"k{i}") for g in (_mixed(), _mixed())
               for i, grp in enumerate(groups(g))]
    by_key: dict = {}
    for k in kernels:
        by_key.setdefault(structural_key(k), set()).add(compiled.render_kernel(k, "f"))
    assert None not in by_key and len(by_key) * 2 == len(kernels) >= 4
    assert all(len(v) == 1 for v in by_key.values())


def test_structural_key_is_none_for_unknown_values():
    k = lower_group(groups(layered(1))[0], "k0")
    k.phases[0].body[0].attrs["odd"] = object()
    assert structural_key(k) is None


# ---------------------------------------------------------------- batches


def test_a_graphs_kernels_compile_as_one_object_rendered_once_per_structure(monkeypatch):
    calls = []
    real = compiled.render_kernel
    monkeypatch.setattr(compiled, "render_kernel",
                        lambda k, s: calls.append(k.name) or real(k, s))
    g = layered(4, scale=1.3125)   # a constant no other test uses: a fresh kernel
    before = dict(jit.stats)
    x, w = inputs()
    cg = check(g, x, w)
    assert len(cg.kernels) == 5
    assert len(calls) == 2          # 4 equal layer kernels + the last: two renders
    assert jit.stats["compiled"] - before["compiled"] == 2
    assert jit.stats["memory_hits"] - before["memory_hits"] == 3
    assert len({k.address for k in cg.kernels}) == 2
    calls.clear()
    cg2 = check(layered(2, scale=1.3125), x, w)   # found by structure: nothing rendered
    assert calls == [] and cg2.kernels[0].address == cg.kernels[0].address


def test_a_failing_kernel_fails_alone_in_its_batch():
    def bogus(sym):
        return (f"declare double @wick_no_such_helper(double)\n"
                f"define void @{sym}(ptr %a, ptr %b, i64 %lo, i64 %hi) {{\n"
                f"  %x = load double, ptr %a\n"
                f"  %y = call double @wick_no_such_helper(double %x)\n"
                f"  store double %y, ptr %b\n  ret void\n}}\n")

    def good(k):
        return lambda sym: (f"define void @{sym}(ptr %a, ptr %b, i64 %lo, i64 %hi) {{\n"
                            f"  %x = load double, ptr %a\n  %y = fmul double %x, {k}.0\n"
                            f"  store double %y, ptr %b\n  ret void\n}}\n")

    def broken(sym):
        raise ValueError("no rendering")

    out = jit.compile_batch([(good(3), "good3", 2), (bogus, "bogus", 2), (good(5), "good5", 2),
                             (broken, "broken", 2), (good(3), "again3", 2)])
    assert isinstance(out[1], linkcheck.UnresolvedSymbolError)
    assert isinstance(out[3], ValueError)
    assert out[4] is out[0]
    for fn, k in ((out[0], 3), (out[2], 5)):
        a, b = np.array([1.5]), np.zeros(1)
        fn.cfunc(a.ctypes.data, b.ctypes.data, 0, 1)
        assert b[0] == 1.5 * k


def test_function_texts_splits_a_printed_module():
    mod = jit.optimize_many([
        "define void @f1(ptr %a) {\n  store i8 1, ptr %a\n  ret void\n}\n",
        "define void @f2(ptr %a) {\n  store i8 2, ptr %a\n  ret void\n}\n"])
    texts = jit.function_texts(str(mod))
    assert set(texts) == {"f1", "f2"}
    assert "store i8 2" in texts["f2"] and "store i8 2" not in texts["f1"]
    assert all(t.startswith("define ") and t.rstrip().endswith("}") for t in texts.values())


_SCRIPT = textwrap.dedent("""
    import numpy as np, ir, codegen
    from codegen import jit
    R = ir.REGISTRY
    g = ir.Graph()
    h = g.placeholder("x", ir.TensorMeta((5, 6), ir.float32))
    w = g.placeholder("w", ir.TensorMeta((6, 6), ir.float32))
    want = np.linspace(-2, 2, 30, dtype=np.float32).reshape(5, 6)
    x, wv = want.copy(), np.eye(6, dtype=np.float32) * 0.5
    for i, op in enumerate(["sin", "cos", "tanh", "exp", "abs"]):
        h = g.call_op(R["matmul"], (g.call_op(R[op], (g.call_op(R["mul"], (h, 1.125 + i)),)),
                                    w))
        y = want * np.float32(1.125 + i)
        want = getattr(np, op)(y) @ wv
    g.output((g.call_op(R["neg"], (h,)),))
    out = codegen.compile_graph(g)(x, wv)[0]
    assert np.allclose(out, -want, rtol=1e-4, atol=1e-5), (out, -want)
    print(jit.stats["compiled"], jit.stats["disk_hits"])
""")


@pytest.mark.parametrize("threads", ["1", "3"])
def test_a_batch_is_one_disk_entry_that_a_new_process_loads(tmp_path, threads):
    env = dict(os.environ, WICK_CACHE_DIR=str(tmp_path), PYTHONPATH=ROOT,
               WICK_COMPILE_THREADS=threads)

    def run():
        out = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=240, check=False)
        assert out.returncode == 0, out.stderr[-3000:]
        return tuple(map(int, out.stdout.split()))

    assert run() == (6, 0)
    kernel_entries = [f for f in os.listdir(tmp_path) if f.endswith(".wkc")]
    assert run() == (0, 6)
    assert sorted(f for f in os.listdir(tmp_path) if f.endswith(".wkc")) == sorted(
        kernel_entries)   # nothing rewritten or added
    for f in kernel_entries:   # damaged: rebuilt, never trusted
        with open(tmp_path / f, "r+b") as fh:
            fh.seek(-8, 2)
            fh.write(b"\0" * 8)
    assert run() == (6, 0)
    assert run() == (0, 6)


def test_split_balances_parts():
    sizes = [50, 10, 40, 30, 20, 5]
    parts = emit.split(sizes, 3)
    assert sorted(i for p in parts for i in p) == list(range(6))
    assert all(p == sorted(p) for p in parts) and len(parts) == 3
    assert max(sum(sizes[i] for i in p) for p in parts) <= 55
    assert emit.split([7], 4) == [[0]] and emit.split([1, 2], 0) == [[0, 1]]


def test_kernels_compiled_on_threads_equal_those_compiled_serially(monkeypatch):
    def job(k):
        return (lambda sym: f"define void @{sym}(ptr %a, ptr %b, i64 %lo, i64 %hi) {{\n"
                f"  %x = load float, ptr %a\n  %y = fmul float %x, {k}.5\n"
                f"  %z = call float @llvm.sqrt.f32(float %y)\n"
                f"  store float %z, ptr %b\n  ret void\n}}\n"
                "declare float @llvm.sqrt.f32(float)\n", f"thr{k}", 2)

    got = {}
    for threads in ("1", "4"):
        monkeypatch.setenv("WICK_COMPILE_THREADS", threads)
        base = 1000 + 100 * int(threads)   # fresh kernels each time
        fns = jit.compile_batch([job(base + k) for k in range(9)])
        for k, fn in enumerate(fns):
            a, b = np.array([2.0], np.float32), np.zeros(1, np.float32)
            fn.cfunc(a.ctypes.data, b.ctypes.data, 0, 1)
            got.setdefault(threads, []).append(float(b[0]))
            assert b[0] == np.sqrt(np.float32(2.0) * np.float32(base + k + 0.5))
    assert len(got["1"]) == len(got["4"]) == 9


# ---------------------------------------------------------------- layouts met while running


def _strided_graph():
    g = ir.Graph()
    x, y = ph(g, "x", (6, 5)), ph(g, "y", (6, 5))
    g.output((c(g, "add", c(g, "mul", x, 1.0625), y),))
    return g


def _addresses(monkeypatch):
    from codegen import threads

    seen = []
    real = threads.run

    def spy(fn, args, n_outer, work):
        seen.append(args[0])   # the kernel's address (the trampoline's first argument)
        return real(fn, args, n_outer, work)

    monkeypatch.setattr(threads, "run", spy)
    return seen


@pytest.mark.parametrize("threads", ["1", "2"])
def test_a_layout_variant_compiles_off_the_running_graph(monkeypatch, threads):
    import time

    monkeypatch.setenv("WICK_COMPILE_THREADS", threads)
    seen = _addresses(monkeypatch)
    g = _strided_graph()
    cg = codegen.compile_graph(g)
    if cg.kernels[0].address == 0 or compiled._DATA_OFFSET is None:
        pytest.skip("no trampoline calls on this platform")
    x = np.random.default_rng(1).standard_normal((5, 6)).astype(np.float32).T   # a view
    y = np.ones((6, 5), np.float32)
    want = np.asarray(ir.Interpreter(g).run(x, y)[0])
    for _ in range(400):   # copies (the contiguous kernel) until the variant is ready
        np.testing.assert_array_equal(cg(x, y)[0], want)
        if seen[-1] != cg.kernels[0].address:
            break
        assert threads == "2"   # serially, the very first call has its variant
        time.sleep(0.01)
    assert seen[-1] != cg.kernels[0].address
    np.testing.assert_array_equal(cg(x, y)[0], want)
