"""Float -> integer and float -> bool casts in fused kernels equal eager's for every input.

Regression: LLVM's `fptosi` of NaN, inf or an out-of-range value is poison (undefined), so a
compiled `x.to(int32)` of NaN gave 0 or garbage where eager (numpy on x86-64) gives -2**31,
and int16 of 3e9 gave 24064 where eager gives 0. Casts are now defined (`TraceBuilder.
_float_to_int`): every int dtype, every float source dtype, special and huge values, in short
and long arrays (numpy's scalar and SIMD loops), inside larger fused kernels and after
reductions; compiled bits must equal eager's.
"""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

SPECIAL = [np.nan, -np.nan, np.inf, -np.inf, 1e20, -1e20, 3e9, -3e9, 300.0, 255.9, 256.0,
           -1.0, -0.5, 0.5, -0.0, 0.0, -129.5, 127.9, 128.0, 32767.5, 32768.0, -32769.0,
           60000.0, -60000.0, 65504.0, 2.0**31, -2.0**31, 2.0**31 - 128, -2.0**31 - 256,
           2.0**63, -2.0**63, 2.0**64, 1e300, -1e300, 5e-324, 7.0]
INTS = ["int8", "int16", "int32", "int64", "uint8", "bool"]
FLOATS = [np.float16, np.float32, np.float64]


def _values(fdt, n):
    with np.errstate(all="ignore"):
        v = np.array(SPECIAL, fdt)
    return np.tile(v, n)


def _check(fn, x):
    want = fn(x)
    got = capture.compile(fn, backend="llvm")(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("reps", [1, 40], ids=["short", "long"])
@pytest.mark.parametrize("fdt", FLOATS, ids=lambda d: d.__name__)
@pytest.mark.parametrize("name", INTS)
def test_cast_matches_eager(name, fdt, reps):
    dt = getattr(eager, name)
    _check(lambda t: (t * 1).to(dt), eager.tensor(_values(fdt, reps)))


@pytest.mark.parametrize("name", INTS)
def test_cast_inside_a_fused_chain_and_after_a_reduction(name):
    dt = getattr(eager, name)
    x = eager.tensor(_values(np.float32, 3).reshape(3, -1))
    _check(lambda t: ((t * 2).to(dt).to(eager.float32) + t).to(dt), x)
    _check(lambda t: (t * 1e10).amax(0).to(dt), x)
    _check(lambda t: t.sum(1, keepdim=True).to(dt), x)


def test_method_casts():
    x = eager.tensor(_values(np.float64, 2))
    for fn in (lambda t: (t + 0).int(), lambda t: (t + 0).long(), lambda t: (t + 0).byte(),
               lambda t: (t + 0).bool(), lambda t: (t + 0).short(), lambda t: (t + 0).char()):
        _check(fn, x)


@pytest.mark.parametrize("fdt", FLOATS, ids=lambda d: d.__name__)
def test_casts_run_as_kernels_and_match_numpy(fdt):
    """Through `codegen.compile_graph`: one fused kernel (no eager fallback) per cast, and its
    bits equal numpy's astype (eager's implementation) on the same array."""
    import codegen
    import ir
    from ir import dtypes as D

    op, mul = ir.REGISTRY["cast"], ir.REGISTRY["mul"]
    a = _values(fdt, 1)
    for dt in (D.int8, D.int16, D.int32, D.int64, D.uint8, D.bool_):
        g = ir.Graph("cast")
        x = g.placeholder("x", ir.TensorMeta(a.shape, D.from_numpy(a.dtype)))
        m = g.call_function(mul, (x, 1), {}, val=mul.meta((x.meta["val"], 1), {}))
        attrs = op.canonical_attrs((m.meta["val"],), {"dtype": dt})
        c = g.call_function(op, (m,), attrs, val=op.meta((m.meta["val"],), attrs))
        g.output((c,))
        cg = codegen.compile_graph(g)
        assert not cg.fallbacks and len(cg.kernels) == 1, cg.fallbacks
        with np.errstate(all="ignore"):
            want = (a * 1).astype(dt.np)
        np.testing.assert_array_equal(cg(a)[0], want, err_msg=dt.name)
