"""Sweeps of the two-argument vector math of `codegen.vecmath` (atan2, pow) and of sin/cos/tan
on arguments far beyond 1e4: float32 kernels within 4 ulp of numpy's float64 result over the
whole float32 domain, with inf, -inf, NaN and -0.0 exactly as the rounded reference, and no
libm call left in the kernel (it vectorizes). The one-argument functions over the whole domain
are swept in `test_codegen_primitives.py`. The float64 polynomials (`VecMath.*_f64`) are swept
here: random float64 bit patterns and special values within 4 ulp of numpy (mpmath for erf and
erfc), no libm call left, and a float64 GELU-tanh loop vectorizes."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_codegen_primitives import F32_SPECIAL, _op, _run, _ulps

import codegen
import ir
from ir import dtypes as D


def _bits(rng, n):
    return rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32).view(np.float32)


def _check(got, want):
    err, _ = _ulps(got, want, np.float32)
    with np.errstate(over="ignore"):
        w32 = want.astype(np.float32)
    assert err.max() <= 4.0, (np.argmax(err), err.max())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(w32))
    inf = np.isinf(w32)
    np.testing.assert_array_equal(got[inf], w32[inf])
    zero = w32 == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(w32[zero]))


def _pairs():
    rng = np.random.default_rng(5)
    sp = F32_SPECIAL.astype(np.float32)
    small = (rng.standard_normal(40_000) * 3).astype(np.float32)
    ints = rng.integers(-6, 7, 4_000).astype(np.float32)
    a = np.concatenate([_bits(rng, 200_000), np.repeat(sp, len(sp)), small,
                        -np.abs(small[:4_000]), np.float32([-1, -1, 1, 1, -2, 0.5])])
    b = np.concatenate([_bits(rng, 200_000), np.tile(sp, len(sp)), small[::-1], ints,
                        np.float32([np.inf, -np.inf, np.nan, -np.inf, 0.5, -3])])
    return a, b


@pytest.mark.parametrize("prim,ref", [("atan2", np.arctan2), ("pow", np.power)])
def test_float32_binary_vector_math_within_4_ulp(prim, ref):
    a, b = _pairs()
    got, _ = _run(prim, D.float32, [a, b])
    with np.errstate(all="ignore"):
        want = ref(a.astype(np.float64), b.astype(np.float64))
    _check(got, want)
    g = ir.Graph(prim)
    x = g.placeholder("x", ir.TensorMeta((64,), D.float32))
    y = g.placeholder("y", ir.TensorMeta((64,), D.float32))
    g.output((g.call_function(_op(prim, 2), (x, y), {}, val=ir.TensorMeta((64,), D.float32)),))
    llvm_ir = codegen.compile_graph(g).kernels[0].llvm_ir
    assert re.search(r"call float @(?!llvm\.)", llvm_ir) is None


@pytest.mark.parametrize("prim,ref", [("sin", np.sin), ("cos", np.cos), ("tan", np.tan)])
def test_float32_trig_reduces_huge_arguments_exactly(prim, ref):
    rng = np.random.default_rng(6)
    x = np.concatenate([np.float32([1e4, -1e4, 2**25, 2**24 + 2, 1e38, -3.4028235e38,
                                    1.5707964, 3.1415927, 1e-30, -0.0]),
                        (rng.standard_normal(50_000) * 1e4).astype(np.float32),
                        np.abs(_bits(rng, 50_000)) * np.float32(1)])
    got, _ = _run(prim, D.float32, [x])
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    _check(got, want)


# ---------------------------------------------------------------- float64 vector math

F64_SPECIAL = np.array([
    0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2250738585072014e-308, 1e-300,
    2**-60, -2**-60, 0.5, -0.5, 1.0, -1.0, -1 + 2**-53, 0.3466, 0.3467, 6.0, -6.0, 22.0, -22.0,
    26.5, 27.3, 40.0, -40.0, 41.0, 709.78, 709.79, -708.4, -740.0, -745.1, -745.2, 1023.99,
    1024.0, -1022.5, -1074.0, -1075.0, 1.7976931348623157e308, -1.7976931348623157e308])


def _f64_args(rng, n_bits, near):
    bits = rng.integers(0, 2**64, n_bits, dtype=np.uint64).view(np.float64)
    return np.concatenate([bits, near, F64_SPECIAL])


def _check_f64(got, want):
    err, fin = _ulps(got, want, np.float64)
    assert err.max() <= 4.0, (np.argmax(err), err.max())
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    inf = ~fin & ~np.isnan(want)
    np.testing.assert_array_equal(got[inf], want[inf])
    zero = want == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(want[zero]))


def _assert_no_libm_f64(prim):
    g = ir.Graph(prim)
    x = g.placeholder("x", ir.TensorMeta((64,), D.float64))
    g.output((g.call_function(_op(prim, 1), (x,), {}, val=ir.TensorMeta((64,), D.float64)),))
    llvm_ir = codegen.compile_graph(g).kernels[0].llvm_ir
    assert re.search(r"call double @(?!llvm\.)", llvm_ir) is None


F64_NUMPY = [("exp", np.exp), ("exp2", np.exp2), ("expm1", np.expm1), ("log", np.log),
             ("log2", np.log2), ("log1p", np.log1p), ("tanh", np.tanh)]


@pytest.mark.parametrize("prim,ref", F64_NUMPY, ids=[v[0] for v in F64_NUMPY])
def test_float64_vector_math_within_4_ulp_of_numpy(prim, ref):
    """Random float64 bit patterns, values near the interesting range (and near -1 for
    log1p), subnormal and overflowing results, against numpy's float64 (glibc)."""
    rng = np.random.default_rng(11)
    near = np.concatenate([rng.standard_normal(60_000) * s for s in (0.01, 1, 5, 40, 400)]
                          + [-1 + np.abs(rng.standard_normal(5_000)) * 1e-3])
    x = _f64_args(rng, 200_000, near)
    got, _ = _run(prim, D.float64, [x])
    with np.errstate(all="ignore"):
        want = ref(x)
    _check_f64(got, want)
    _assert_no_libm_f64(prim)


@pytest.mark.parametrize("prim", ["erf", "erfc"])
def test_float64_erf_erfc_within_4_ulp_of_mpmath(prim):
    """scipy's float64 erfc loses hundreds of ulps past x ~ 5 and flushes subnormal results,
    so the reference is mpmath (subnormal results of erfc near x = 27 included)."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(12)
    near = np.concatenate([rng.uniform(-1, 1, 3_000), rng.uniform(-8, 28, 6_000),
                           rng.uniform(26, 27.5, 1_000), rng.standard_normal(1_000) * 1e-6])
    x = _f64_args(rng, 4_000, near)
    got, _ = _run(prim, D.float64, [x])
    fn = getattr(mpmath, prim)
    far = ~(np.abs(x) <= 30)   # and NaN: erf = +-1, erfc = 0 or 2 exactly there
    want = np.array([np.nan if f else float(fn(mpmath.mpf(float(v)))) for v, f in zip(x, far)])
    want[far] = {"erf": np.sign, "erfc": lambda v: 1 - np.sign(v)}[prim](x[far])
    if prim == "erf":   # mpmath has no -0.0
        want[x == 0] = x[x == 0]
    _check_f64(got, want)
    _assert_no_libm_f64(prim)


def test_float64_gelu_tanh_vectorizes():
    g = ir.Graph("gelu64")
    x = g.placeholder("x", ir.TensorMeta((4096,), D.float64))
    g.output((g.call_op(ir.REGISTRY["gelu"], (x,), {"approximate": "tanh"}),))
    llvm_ir = codegen.compile_graph(g).kernels[0].llvm_ir
    # 4 or 8 lanes with AVX; 2 on a baseline x86-64 target (WICK_LLVM_CPU=x86-64)
    assert re.search(r"<(2|4|8) x double>", llvm_ir)
    assert re.search(r"call double @(?!llvm\.)", llvm_ir) is None
