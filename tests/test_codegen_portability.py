"""Kernels run on every CPU: no compiler-rt helper calls, an unresolvable symbol is a Python
error and an eager fallback (never an abort), float16 conversions bit for bit as numpy.

Regression tests for issue 13 item 1: `atan2` of float16 tensors aborted the process with
`LLVM ERROR: Symbol not found: __truncdfhf2` (and `atan` of int8, which computes in float16).
The portability sweep here is a fast subset of `tests/portability.py` (run in full by CI).
"""

from __future__ import annotations

import logging
import os
import platform
import subprocess
import sys

import numpy as np
import pytest
from portability import _graph, available_targets, violations

import capture
import codegen
import eager
import ir
from codegen import compiled, jit, linkcheck
from ir import dtypes as D

R = ir.REGISTRY
X86 = platform.machine().lower() in ("x86_64", "amd64")
HALF_BITS = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)


def _run_compiled(g, *arrays):
    """Compile graph `g` (checking that every group became a kernel) and run it."""
    cg = codegen.compile_graph(g)
    assert cg.fallbacks == [] and cg.kernels, cg.dump("fusion")
    return cg(*arrays)


def _interp(g, *arrays):
    return ir.Interpreter(g).run(*arrays)


def _special_doubles():
    rng = np.random.default_rng(1)
    halves = HALF_BITS.view(np.float16)
    finite = np.unique(halves[np.isfinite(halves)].astype(np.float64))
    mids = ((finite[:-1] + finite[1:]) / 2).view(np.uint64)   # ties, and just off them
    bits = np.concatenate([mids, mids + 1, mids - 1, finite.view(np.uint64),
                           rng.integers(0, 1 << 64, 20000, dtype=np.uint64),
                           np.array([0x7FF0000000000001, 0x7FF4000000000000, 0xFFF8000000000000,
                                     0x7FF0000000000000, 1, 0x8000000000000001,
                                     0x40EFFE0000000000, 0x40EFFE0000000001], np.uint64)])
    return bits.view(np.float64)


# ---------------------------------------------------------------- float16 conversions


@pytest.mark.parametrize("dst", [D.float32, D.float64, D.int64, D.int8, D.uint8, D.bool_])
def test_cast_from_every_float16_is_numpys(dst):
    x = HALF_BITS.view(np.float16)
    g = _graph(R["cast"], (x,), {"dtype": dst})
    (got,), (want,) = _run_compiled(g, x), _interp(g, x)
    if dst.is_floating_point:   # NaN payloads too
        got, want = got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}")
        np.testing.assert_array_equal(got, want)
    else:   # float -> int of NaN/inf/out of range is undefined in C: compare the rest
        ok = np.isfinite(x) & (np.abs(x.astype(np.float64)) < 127)
        np.testing.assert_array_equal(got[ok], want[ok])


@pytest.mark.parametrize("src", [D.float64, D.float32])
def test_cast_to_float16_rounds_once_as_numpy(src):
    """double -> half rounds once (not through float32), ties to even, NaN payloads and
    subnormals kept: bit for bit numpy's astype."""
    d = _special_doubles()
    x = d.astype(src.np) if src is D.float32 else d
    g = _graph(R["cast"], (x,), {"dtype": D.float16})
    with np.errstate(all="ignore"):
        (got,), want = _run_compiled(g, x), x.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("src", [D.int64, D.int32, D.uint8, D.bool_])
def test_cast_int_to_float16(src):
    x = np.array([0, 1, 2049, 2051, 65504, 65519, 65520, 70000, 255, 127, -1, -65520,
                  2 ** 31 - 1], np.int64).astype(src.np)
    g = _graph(R["cast"], (x,), {"dtype": D.float16})
    with np.errstate(all="ignore"):
        (got,), want = _run_compiled(g, x), x.astype(np.float16)
    np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16))


def _convert_kernel(symbol, src, dst, convert):
    """IR of `void symbol(ptr in, ptr out, i64 lo, i64 hi)`: out[i] = convert(in[i])."""
    from llvmlite import ir as ll

    i64 = ll.IntType(64)
    m = ll.Module()
    f = ll.Function(m, ll.FunctionType(ll.VoidType(), [ll.PointerType()] * 2 + [i64] * 2),
                    symbol)
    entry, loop, done = (f.append_basic_block(n) for n in ("entry", "loop", "done"))
    b = ll.IRBuilder(entry)
    b.cbranch(b.icmp_signed("<", f.args[2], f.args[3]), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64)
    i.add_incoming(f.args[2], entry)
    x = b.load(b.gep(f.args[0], [i], source_etype=src), typ=src)
    b.store(convert(b, x), b.gep(f.args[1], [i], source_etype=dst))
    nxt = b.add(i, ll.Constant(i64, 1))
    i.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, f.args[3]), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return str(m)


def test_bfloat16_conversions_are_ml_dtypes():
    from codegen import fp16

    ml_dtypes = pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(3)
    bf = HALF_BITS.view(ml_dtypes.bfloat16).astype(np.float32).view(np.uint32).astype(np.int64)
    f = np.concatenate([rng.integers(0, 1 << 32, 100000), *(bf + d for d in (
        -0x8001, -0x8000, -0x7FFF, -1, 0, 1, 0x7FFF, 0x8000, 0x8001))]) % (1 << 32)
    f = f.astype(np.uint32).view(np.float32)
    jf = jit.compile_function(lambda s: _convert_kernel(s, fp16.F32, fp16.I16,
                                                        fp16.float_to_bfloat16), "f2bf", 2)
    out = np.empty(f.shape, np.uint16)
    jf.cfunc(f.ctypes.data, out.ctypes.data, 0, f.size)
    np.testing.assert_array_equal(out, f.astype(ml_dtypes.bfloat16).view(np.uint16))
    jf = jit.compile_function(lambda s: _convert_kernel(s, fp16.I16, fp16.F32,
                                                        fp16.bfloat16_to_float), "bf2f", 2)
    back = np.empty(HALF_BITS.shape, np.float32)
    jf.cfunc(HALF_BITS.ctypes.data, back.ctypes.data, 0, HALF_BITS.size)
    np.testing.assert_array_equal(
        back.view(np.uint32), HALF_BITS.view(ml_dtypes.bfloat16).astype(np.float32).view(
            np.uint32))


# ---------------------------------------------------------------- the issue's crashes


@pytest.mark.parametrize("dtype", [D.float16, D.int8, D.uint8, D.bool_, D.int16])
@pytest.mark.parametrize("name", ["atan", "atan2", "exp", "tanh", "sin", "log1p"])
def test_math_on_half_results_compiles_and_matches_eager(name, dtype):
    """Issue 13: atan2 on float16 aborted the process (`__truncdfhf2`), atan of int8 too."""
    op = R[name]
    rng = np.random.default_rng(0)
    arrays = []
    for _ in range(op.nin):
        if dtype is D.bool_:
            arrays.append(rng.random((7, 37)) < 0.5)
        elif dtype.is_floating_point:
            arrays.append(rng.uniform(-3, 3, (7, 37)).astype(dtype.np))
        else:
            arrays.append(rng.integers(0 if name == "log1p" else -5, 6, (7, 37)).astype(
                dtype.np))
    g = _graph(op, tuple(arrays), {})
    (got,), (want,) = _run_compiled(g, *arrays), _interp(g, *arrays)
    assert got.dtype == want.dtype
    if dtype is D.float16:   # computed wider and rounded once: as numpy, bit for bit
        assert got.dtype == np.float16
        np.testing.assert_array_equal(got, want)
    else:   # float32 results: within the matrix's tolerance (a polynomial, not libm)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [37, 5000])
def test_float16_sum_accumulates_in_float32(n):
    """float16 reductions keep a float32 accumulator (numpy's half loops do; half arithmetic
    would be runtime calls without F16C), in the blocked (long) path too."""
    x = np.random.default_rng(2).uniform(0, 1, (3, n)).astype(np.float16)
    g = _graph(R["sum"], (x,), {"dim": (1,)})
    (got,), (want,) = _run_compiled(g, x), _interp(g, x)
    assert got.dtype == np.float16
    np.testing.assert_array_equal(got, want)


def test_issue_repro_atan2_float16_through_capture():
    a = eager.randn(64).to(eager.float16)
    b = eager.randn(64).to(eager.float16)
    before = jit.stats["compiled"] + jit.stats["disk_hits"] + jit.stats["memory_hits"]
    f = capture.compile(lambda a, b: eager.atan2(a, b) * 2, backend="llvm")
    got = f(a, b)
    assert jit.stats["compiled"] + jit.stats["disk_hits"] + jit.stats["memory_hits"] > before
    np.testing.assert_array_equal(got.numpy(), (eager.atan2(a, b) * 2).numpy())


# ---------------------------------------------------------------- unresolvable symbols


def _bogus_ir(symbol, callee="wick_no_such_function"):
    return (f"declare double @{callee}(double)\n"
            f"define void @{symbol}(ptr noalias %a, ptr noalias %b, i64 %lo, i64 %hi) {{\n"
            f"  %x = load double, ptr %a\n  %y = call double @{callee}(double %x)\n"
            f"  store double %y, ptr %b\n  ret void\n}}\n")


@pytest.mark.parametrize("callee", ["wick_no_such_function", "__truncdfhf2", "__divti3"])
def test_unresolvable_symbol_raises_instead_of_aborting(callee):
    with pytest.raises(linkcheck.UnresolvedSymbolError, match=callee):
        jit.compile_function(lambda s: _bogus_ir(s, callee), f"bogus_{callee}", 2)
    # the JIT still works afterwards
    x = np.arange(6.0)
    g = _graph(R["exp"], (x,), {})
    np.testing.assert_array_equal(_run_compiled(g, x)[0], _interp(g, x)[0])


def test_allowed_libm_symbol_links():
    jf = jit.compile_function(lambda s: _bogus_ir(s, "erfc"), "libm_erfc", 2)
    a, b = np.array([0.5]), np.zeros(1)
    jf.cfunc(a.ctypes.data, b.ctypes.data, 0, 1)
    assert b[0] == pytest.approx(0.4795001221869535, rel=1e-15)


def test_object_defining_another_global_symbol_is_refused():
    def render(s):
        return _bogus_ir(s, "erf") + "define void @wick_extra() {\n  ret void\n}\n"

    with pytest.raises(linkcheck.UnresolvedSymbolError, match="wick_extra"):
        jit.compile_function(render, "two_symbols", 2)


def test_compiled_graph_falls_back_with_a_logged_reason(monkeypatch, caplog):
    """A kernel whose object needs an unresolvable symbol runs its ops eagerly instead."""
    monkeypatch.setattr(compiled, "render_kernel",
                        lambda kernel, symbol: _bogus_ir(symbol, "wick_missing_helper"))
    x = np.linspace(-2, 2, 11)
    g = _graph(R["tanh"], (x,), {})
    with caplog.at_level(logging.INFO, logger="wick"):
        cg = codegen.compile_graph(g)
    assert cg.kernels == [] and len(cg.fallbacks) == 1
    assert "wick_missing_helper" in cg.fallbacks[0][1]
    assert "wick_missing_helper" in caplog.text
    np.testing.assert_array_equal(cg(x)[0], _interp(g, x)[0])


# ---------------------------------------------------------------- other CPUs


_SCRIPT = """
import numpy as np, eager, capture
from codegen import jit
a = eager.from_numpy(np.linspace(-3, 3, 50).astype(np.float16))
b = eager.from_numpy(np.linspace(2, -2, 50).astype(np.float16))
i = eager.from_numpy(np.arange(-25, 25).astype(np.int8))
f = capture.compile(lambda a, b, i: (eager.atan2(a, b), eager.atan(i), (a * b).double()),
                    backend="llvm")
for got, want in zip(f(a, b, i), (eager.atan2(a, b), eager.atan(i), (a * b).double())):
    assert got.dtype is want.dtype, (got, want)
    tol = 1e-6 if got.dtype is eager.float32 else 0   # a float32 polynomial, 1 ulp
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=tol, atol=tol)
print(jit.stats["compiled"], jit.stats["disk_hits"])
"""


def _run_script(**env):
    out = subprocess.run([sys.executable, "-c", _SCRIPT], env={**os.environ, **env},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return [int(v) for v in out.stdout.split()]


@pytest.mark.skipif(not X86, reason="forces x86-64 CPUs")
@pytest.mark.parametrize("cpu", ["x86-64", "x86-64-v3"])
def test_forced_cpu_runs_half_kernels(cpu):
    """WICK_LLVM_CPU=x86-64 has no F16C: every half conversion would be a helper call."""
    compiled_, disk = _run_script(WICK_LLVM_CPU=cpu, WICK_CACHE_DIR="0")
    assert compiled_ > 0 and disk == 0


def test_disk_cache_second_process_loads_objects(tmp_path):
    d = str(tmp_path / "kc")
    first = _run_script(WICK_CACHE_DIR=d)
    second = _run_script(WICK_CACHE_DIR=d)
    assert first[0] > 0 and second[1] >= first[0] and second[0] == 0


# ---------------------------------------------------------------- portability sweep


def test_sweep_detects_runtime_helpers():
    """The check can fail: a double->half conversion needs __truncdfhf2 without AVX512-FP16."""
    text = ("define void @f(ptr %a, ptr %b) {\n  %x = load double, ptr %a\n"
            "  %h = fptrunc double %x to half\n  store half %h, ptr %b\n  ret void\n}\n")
    assert "__truncdfhf2" in violations(text, "x86_64-unknown-linux-gnu", "x86-64-v3")


_SUBSET_OPS = ("cast", "atan", "atan2", "exp", "pow", "remainder", "floordiv", "round",
               "erfinv", "sigmoid", "sum", "amax")
_SUBSET_DTYPES = (D.float16, D.int8, D.float64, D.bool_, D.int64)


def _subset_kernels():
    from portability import KERNEL_DTYPES, graph_kernels
    from opinfo import samples

    seen = {}
    for src in KERNEL_DTYPES:
        for dst in (D.float16, D.float32, D.float64, D.int64, D.bool_):
            x = np.zeros((3, 5), src.np)
            for text in graph_kernels(_graph(R["cast"], (x,), {"dtype": dst})):
                seen.setdefault(text, f"cast-{src.name}-{dst.name}")
    x = np.zeros((3, 5000), np.float16)   # the blocked sum of a long float16 row
    for text in graph_kernels(_graph(R["sum"], (x,), {"dim": (1,)})):
        seen.setdefault(text, "sum-float16-long")
    for name in _SUBSET_OPS[1:]:
        if name not in R:
            continue
        for dt in _SUBSET_DTYPES:
            for j, (inputs, attrs) in enumerate(samples(R[name], dt)):
                try:
                    g = _graph(R[name], inputs, attrs)
                except Exception:  # noqa: BLE001 (an invalid sample)
                    continue
                for text in graph_kernels(g):
                    seen.setdefault(text, f"{name}-{dt.name}-{j}")
    return [(label, text) for text, label in seen.items()]


_TARGETS = [t for t in available_targets()
            if t[1] in ("x86-64", "x86-64-v3", "sapphirerapids", "generic")]


@pytest.mark.parametrize("triple,cpu", _TARGETS, ids=[c for _, c in _TARGETS])
def test_kernel_subset_calls_only_runtime_symbols(triple, cpu):
    from portability import target_machine

    tm = target_machine(triple, cpu)
    bad = {label: v for label, text in _subset_kernels()
           if (v := violations(text, triple, cpu, tm))}
    assert bad == {}


@pytest.mark.parametrize("triple,cpu", _TARGETS, ids=[c for _, c in _TARGETS])
def test_direct_kernels_call_only_runtime_symbols(triple, cpu):
    """The direct convolution, plane and pooling kernels (chosen at run time on AVX-512
    CPUs for convolutions, on every CPU for planes and pools) compile for each target with
    nothing the JIT cannot resolve."""
    from portability import direct_kernels, target_machine

    tm = target_machine(triple, cpu)
    kernels = direct_kernels()
    assert len(kernels) >= 20
    bad = {label: v for label, text in kernels if (v := violations(text, triple, cpu, tm))}
    assert bad == {}
