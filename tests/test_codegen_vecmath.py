"""Sweeps of the two-argument vector math of `codegen.vecmath` (atan2, pow) and of sin/cos/tan
on arguments far beyond 1e4: float32 kernels within 4 ulp of numpy's float64 result over the
whole float32 domain, with inf, -inf, NaN and -0.0 exactly as the rounded reference, and no
libm call left in the kernel (it vectorizes). The one-argument functions over the whole domain
are swept in `test_codegen_primitives.py`."""

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
