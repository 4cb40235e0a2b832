"""Every scalar primitive rendered by the LLVM backend, for every real dtype, against
`ir.scalar.ArrayBuilder` on numpy (eager's kernel); and the float32 vector math polynomials
against numpy/scipy float64 references over the whole float32 domain (ulp sweep).

Graphs are built with a one-off elementwise op whose formula is the single primitive, so the
test covers the primitive set itself, independently of which registry ops use it.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
import scipy.special as sp

import codegen
import ir
from ir import dtypes as D
from ir.opdef import OpDef
from ir.scalar import ArrayBuilder

REAL = [d for d in D.ALL if d.np.kind in "biuf" and d.name != "bfloat16"]
UNARY = ["neg", "abs", "sign", "exp", "exp2", "expm1", "log", "log2", "log1p", "sqrt", "rsqrt",
         "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh", "acosh",
         "atanh", "erf", "erfc", "erfinv", "floor", "ceil", "round", "trunc", "isnan", "isinf",
         "logical_not", "bitwise_not"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "fmod", "remainder",
          "floordiv", "lt", "le", "gt", "ge", "eq", "ne", "bitwise_and", "bitwise_or",
          "bitwise_xor", "lshift", "rshift", "atan2", "hypot"]
F32_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1.1754944e-38, 88.7,
                        88.8, -103.0, -104.0, 1.0, -1.0, 0.5, -0.5, 3.4e38, -3.4e38], np.float32)


def _op(prim: str, nin: int) -> OpDef:
    sig = "input" if nin == 1 else "input, other"
    return OpDef(f"prim_{prim}", "elementwise", sig, nin, "keep",
                 scalar=lambda b, *xs: getattr(b, prim)(*xs), method=False)


def _values(dtype, rng, n=257):
    if dtype is D.bool_:
        return rng.random(n) < 0.5
    if dtype.np.kind in "iu":
        info = np.iinfo(dtype.np)
        edge = np.array([0, 1, 2, 3, info.min, info.max, info.max - 1, 7, 63, 64],
                        dtype=np.int64).astype(dtype.np)
        lo, hi = max(info.min, -100), min(info.max, 100)
        return np.concatenate([edge, rng.integers(lo, hi, n - edge.size).astype(dtype.np)])
    special = F32_SPECIAL.astype(dtype.np)
    return np.concatenate([special, (rng.standard_normal(n - special.size) * 3).astype(dtype.np)])


def _run(prim, dtype, arrays):
    op = _op(prim, len(arrays))
    g = ir.Graph(prim)
    xs = [g.placeholder(f"x{i}", ir.TensorMeta(a.shape, dtype)) for i, a in enumerate(arrays)]
    try:
        with np.errstate(all="ignore"):
            want = np.asarray(getattr(ArrayBuilder(np), prim)(*arrays))
            if dtype is D.float16:   # eager computes half types in float32, rounds once
                wide = [a.astype(np.float32) for a in arrays]
                want = np.asarray(getattr(ArrayBuilder(np), prim)(*wide)).astype(want.dtype)
    except (TypeError, ValueError) as e:   # numpy rejects the dtype: so does codegen
        node = g.call_function(op, tuple(xs), {}, val=ir.TensorMeta(arrays[0].shape, dtype))
        g.output((node,))
        cg = codegen.compile_graph(g)
        assert cg.kernels == [], e
        return None, None
    node = g.call_function(op, tuple(xs), {},
                           val=ir.TensorMeta(want.shape, D.from_numpy(want.dtype)))
    g.output((node,))
    cg = codegen.compile_graph(g)
    assert len(cg.kernels) == 1, cg.dump("fusion")
    return cg(*arrays)[0], want


def _compare(got, want, prim, dtype):
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind == "f":
        # libm and numpy's own loops may differ by an ulp or two; polynomials are tested below
        tol = {2: 2e-3, 4: 4e-6, 8: 1e-13}[want.dtype.itemsize]
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-3, equal_nan=True,
                                   err_msg=f"{prim} {dtype.name}")
        np.testing.assert_array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]),
                                      err_msg=f"{prim} {dtype.name}: sign of zero")
    else:
        np.testing.assert_array_equal(got, want, err_msg=f"{prim} {dtype.name}")


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: d.name)
@pytest.mark.parametrize("prim", UNARY)
def test_unary_primitive(prim, dtype):
    rng = np.random.default_rng(0)
    x = _values(dtype, rng)
    if prim in ("asin", "acos", "atanh", "erfinv") and dtype.np.kind == "f":
        x = np.concatenate([x, rng.uniform(-1, 1, 64).astype(dtype.np)])
    got, want = _run(prim, dtype, [x])
    if got is not None:
        _compare(got, want, prim, dtype)


@pytest.mark.parametrize("dtype", REAL, ids=lambda d: d.name)
@pytest.mark.parametrize("prim", BINARY)
def test_binary_primitive(prim, dtype):
    rng = np.random.default_rng(1)
    x = _values(dtype, rng)
    y = np.roll(_values(dtype, rng), 5)
    if prim in ("lshift", "rshift") and dtype.np.kind in "iu":
        y = (np.abs(y.astype(np.int64)) % (8 * dtype.itemsize + 4)).astype(dtype.np)
    if prim == "pow" and dtype.np.kind in "iu":
        y = (np.abs(y.astype(np.int64)) % 5).astype(dtype.np)
    if prim in ("fmod", "remainder", "floordiv") and dtype.np.kind in "biu":
        y = np.where(y == 0, 1, y).astype(dtype.np)   # zero divisors: see the test below
    got, want = _run(prim, dtype, [x, y])
    if got is not None:
        _compare(got, want, prim, dtype)


@pytest.mark.parametrize("prim", ["fmod", "remainder", "floordiv"])
def test_integer_division_by_zero_raises_like_pytorch(prim):
    x = np.arange(-6, 6, dtype=np.int32)
    y = np.ones(12, np.int32)
    got, want = _run(prim, D.int32, [x, y])
    np.testing.assert_array_equal(got, want)
    y[7] = 0
    op = _op(prim, 2)
    g = ir.Graph()
    a, b = (g.placeholder(n, ir.TensorMeta((12,), D.int32)) for n in "ab")
    g.output((g.call_function(op, (a, b), {}, val=ir.TensorMeta((12,), D.int32)),))
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        codegen.compile_graph(g)(x, y)


def test_casts_between_every_real_dtype():
    rng = np.random.default_rng(2)
    for src in REAL:
        x = _values(src, rng)
        if src.np.kind == "f":
            x = x[np.isfinite(x) & (np.abs(x) < 100)]   # out-of-range float->int is undefined
        for dst in REAL:
            g = ir.Graph()
            p = g.placeholder("x", ir.TensorMeta(x.shape, src))
            g.output((g.call_op(ir.REGISTRY["cast"], (p, dst)),))
            got = codegen.compile_graph(g)(x)[0]
            np.testing.assert_array_equal(got, x.astype(dst.np), err_msg=f"{src} -> {dst}")


# ---------------------------------------------------------------- vector math accuracy

VECMATH = [("exp", np.exp), ("exp2", np.exp2), ("expm1", np.expm1), ("log", np.log),
           ("log2", np.log2), ("log1p", np.log1p), ("tanh", np.tanh), ("erf", sp.erf),
           ("erfc", sp.erfc), ("sin", np.sin), ("cos", np.cos), ("tan", np.tan),
           ("atan", np.arctan)]


def _ulps(got, ref, dtype):
    """|got - ref| in ulps of the float32 result (subnormal spacing below the normal range)."""
    r = ref.astype(dtype)
    spacing = np.maximum(np.spacing(np.abs(r)).astype(np.float64),
                         float(np.finfo(dtype).smallest_subnormal))
    fin = np.isfinite(ref) & np.isfinite(r)
    err = np.where(fin, np.abs(got.astype(np.float64) - ref) / spacing, 0.0)
    return err, fin


@pytest.mark.parametrize("prim,ref", VECMATH, ids=[v[0] for v in VECMATH])
def test_float32_vector_math_within_4_ulp_over_the_whole_domain(prim, ref):
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2**32, 300_000, dtype=np.uint64).astype(np.uint32)
    x = np.concatenate([bits.view(np.float32), F32_SPECIAL])
    got, _ = _run(prim, D.float32, [x])
    with np.errstate(all="ignore"):
        want = ref(x.astype(np.float64))
    err, fin = _ulps(got, want, np.float32)
    assert err.max() <= 4.0, (prim, x[np.argmax(err)], err.max())
    w32 = want.astype(np.float32)
    # inf, -inf, NaN, -0.0, overflow and underflow exactly as the rounded reference
    np.testing.assert_array_equal(np.isnan(got), np.isnan(w32))
    np.testing.assert_array_equal(got[~fin & ~np.isnan(w32)], w32[~fin & ~np.isnan(w32)])
    zero = w32 == 0
    np.testing.assert_array_equal(np.signbit(got[zero]), np.signbit(w32[zero]))
    llvm_ir = codegen.compile_graph(_graph_of(prim)).kernels[0].llvm_ir
    assert re.search(r"call float @(?!llvm\.)", llvm_ir) is None   # no libm call: it vectorizes


def _graph_of(prim):
    g = ir.Graph(prim)
    x = g.placeholder("x", ir.TensorMeta((64,), D.float32))
    g.output((g.call_function(_op(prim, 1), (x,), {}, val=ir.TensorMeta((64,), D.float32)),))
    return g


@pytest.mark.parametrize("prim,ref", VECMATH, ids=[v[0] for v in VECMATH])
def test_float64_math_within_4_ulp(prim, ref):
    rng = np.random.default_rng(4)
    n = 2_000 if prim in ("erf", "erfc") else 20_000
    x = np.concatenate([rng.standard_normal(n) * 30, F32_SPECIAL.astype(np.float64)])
    got, _ = _run(prim, D.float64, [x])
    with np.errstate(all="ignore"):
        want = ref(x)
    if prim in ("erf", "erfc"):   # scipy's erfc is off by hundreds of ulps in its far tail
        mpmath = pytest.importorskip("mpmath")
        fn = getattr(mpmath, prim)
        want = np.array([float(fn(v)) if np.isfinite(v) else w for v, w in zip(x, want)])
    err, fin = _ulps(got, want, np.float64)
    err[np.abs(want) < np.finfo(np.float64).tiny] = 0  # scipy flushes subnormal erfc to 0
    assert err.max() <= 4.0, (prim, x[np.argmax(err)], err.max())
    np.testing.assert_array_equal(got[~fin], want[~fin])
