"""Chains of two reductions compiled by the LLVM backend against eager.

Regression: `x.sum(0, keepdim=True).sum(0, keepdim=True)` of a (1, 4) tensor gave zeros: the
two reductions (over the same size-1 dim, so over one iteration space) were fused into one
kernel whose second accumulator read the first before it was updated. The sweep covers every
pair of sum/mean/amax/amin/prod over dims of size 0, 1 and more, keepdim on and off; values,
shapes, dtypes and raised exception types must equal eager's.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import capture
import eager

OPS = ["sum", "mean", "amax", "amin", "prod"]
SHAPES = [(1, 4), (3, 1), (0, 3), (2, 3), (1, 1)]
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _chain(op1, d1, k1, op2, d2, k2):
    def f(x):
        return getattr(getattr(x, op1)(d1, keepdim=k1), op2)(d2, keepdim=k2)
    return f


def _outcome(fn, x):
    try:
        return fn(x)
    except Exception as e:  # noqa: BLE001 (compared by type)
        return type(e)


def _same(got, want, what):
    if isinstance(want, type):
        assert got is want, (what, got, want)
        return
    assert not isinstance(got, type), (what, got, want)
    assert got.shape == want.shape and got.dtype == want.dtype, (what, got, want)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=0, equal_nan=True,
                               err_msg=str(what))


@pytest.mark.parametrize("op1,op2", list(itertools.product(OPS, OPS)))
def test_two_reductions_match_eager(op1, op2):
    rng = np.random.default_rng(0)
    for shape in SHAPES:
        x = eager.tensor(rng.uniform(0.5, 2.0, shape).astype(np.float32))
        for d1, k1, k2 in itertools.product((0, 1), (True, False), (True, False)):
            rank = 2 if k1 else 1
            for d2 in range(rank):
                fn = _chain(op1, d1, k1, op2, d2, k2)
                what = (op1, d1, k1, op2, d2, k2, shape)
                _same(_outcome(capture.compile(fn, backend="llvm"), x), _outcome(fn, x), what)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64, np.bool_])
def test_two_reductions_other_dtypes(dtype):
    x = eager.tensor(np.array([[3, 1, 2, 5]], dtype=dtype))
    for op1, op2 in [("sum", "sum"), ("sum", "amax"), ("amin", "sum"), ("prod", "amin")]:
        fn = _chain(op1, 0, True, op2, 0, True)
        _same(_outcome(capture.compile(fn, backend="llvm"), x), _outcome(fn, x), (op1, op2))


def test_the_reported_case():
    fn = _chain("sum", 0, True, "sum", 0, True)
    got = capture.compile(fn, backend="llvm")(eager.full((1, 4), 3.))
    np.testing.assert_array_equal(got.numpy(), np.full((1, 4), 3.0, np.float32))


def test_three_reductions_and_an_epilogue():
    def fn(x):
        s = x.sum(0, keepdim=True)
        return s.amax(0, keepdim=True).sum(0, keepdim=True) * 2 + s

    x = eager.tensor(np.arange(5, dtype=np.float32).reshape(1, 5))
    _same(capture.compile(fn, backend="llvm")(x), fn(x), "three")
