"""bfloat16 in CPU kernels (`codegen.llvm`: the value's i16 bits, arithmetic in float32
rounded per op as ml_dtypes; casts through float32 as ml_dtypes): fused chains, casts from
and to every dtype and reductions equal eager's bits, and an autocast region's casts fuse
with the elementwise ops around them (only the matmul is a library call). The per-op matrix
over the registry is `test_codegen_llvm.py::test_elementwise_op_matches_interpreter`."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from codegen.partition import LibraryCall, partition

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

RNG = np.random.default_rng(0)
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, 3.4e38, -3.4e38, 1.00390625, 255.5,
           -2.5, 65504.0, 1e30, 7.0]


def _same(got, want, ulps: int = 0) -> None:
    assert got.dtype is want.dtype and got.shape == want.shape
    g, w = got.float().numpy(), want.float().numpy()
    if ulps == 0:
        np.testing.assert_array_equal(g, w)
    else:
        np.testing.assert_allclose(g, w, rtol=ulps * 2.0 ** -7, atol=1e-30)


def _check(fn, *args, ulps: int = 0):
    want = fn(*args)
    got = capture.compile(fn, backend="llvm")(*args)
    for a, b in zip(got if isinstance(got, tuple) else (got,),
                    want if isinstance(want, tuple) else (want,)):
        _same(a, b, ulps)


def _bf16(*shape):
    return eager.tensor(RNG.standard_normal(shape).astype(np.float32)).to(eager.bfloat16)


def test_fused_chains_equal_eager_bits():
    x, y = _bf16(37, 13), _bf16(37, 13)
    _check(lambda a, b: (a * b + a).relu() / (b.abs() + 1) - 3, x, y)
    _check(lambda a, b: eager.where(a > b, a.neg(), b * 0.5).sigmoid(), x, y)
    _check(lambda a, b: (a.exp() + b.tanh()).sqrt(), x, y)
    _check(lambda a, b: eager.nn.functional.gelu(a) * b, x, y)
    _check(lambda a, b: (a.float() * 3 + b).to(eager.bfloat16), x, y)  # mixed, back down


@pytest.mark.parametrize("name", ["float16", "float32", "float64", "int8", "int32", "int64",
                                  "uint8", "bool"])
def test_casts_to_and_from_every_dtype(name):
    dt = getattr(eager, name)
    vals = np.array(SPECIAL * 3, np.float64)
    src = eager.tensor(vals).to(dt) if dt.is_floating_point else \
        eager.tensor(RNG.integers(-100, 100, 60)).to(dt)
    _check(lambda t: (t * 1).to(eager.bfloat16) * 1, src)  # (a kernel, not a library cast)
    if dt.is_floating_point or dt is eager.bool:
        _check(lambda t: ((t * 1).to(eager.bfloat16) + 1).to(dt), src)
    else:
        b = eager.tensor(RNG.standard_normal(60).astype(np.float32) * 50).to(eager.bfloat16)
        _check(lambda t: (t * 1).to(dt), b)


def test_reductions_round_once_to_bfloat16():
    x = _bf16(64, 129)
    _check(lambda a: (a * 2).sum(1), x, ulps=1)
    _check(lambda a: (a + 1).amax(0), x)
    _check(lambda a: (a * a).mean(-1, keepdim=True) + a, x, ulps=1)


def test_autocast_region_casts_fuse_around_the_matmul():
    w, b = eager.randn(64, 64), eager.randn(64)

    def f(x):
        with eager.autocast("cpu", dtype=eager.bfloat16):
            h = (x @ w + b).relu() * 2
            return (h @ w).sigmoid()

    x = eager.randn(32, 64)
    _check(f, x)
    graph = capture.explain(f)(x).graphs[0]
    steps = partition(graph).steps
    libs = [s.node.target.name for s in steps if isinstance(s, LibraryCall)]
    assert libs == ["matmul", "matmul"]
