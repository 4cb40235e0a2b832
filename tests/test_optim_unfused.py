"""The optimizers' unfused updates (eager/optim/update_rules.py `TensorOps` and
eager/optim/arrays.py `ArrayOps`: lerp_, addcmul_, addcdiv_ as two-operand in-place ops) must
write exactly what the registry's three-operand in-place ops write, bit for bit, in float32
and float64, and bump the written tensor's version once."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.optim.arrays import ArrayOps
from eager.optim.update_rules import TensorOps


def _pair(rng, dt, shape=(5, 7)):
    a = (rng.standard_normal(shape) * 3).astype(dt)
    return eager.tensor(a.copy()), eager.tensor(a.copy())


def _unfused(kind, name, x, *args, **kw):
    """`name` of TensorOps on tensor `x`, or of ArrayOps on its array (owned by `x`)."""
    if kind == "tensor":
        getattr(TensorOps, name)(x, *args, **kw)
        return
    x.grad = eager.zeros_like(x)
    ops = ArrayOps.take(x, {})
    assert ops is not None
    arrays = [a._data if isinstance(a, eager.Tensor) else a for a in args]
    getattr(ops, name)(ops.param, *arrays, **kw)


@pytest.mark.parametrize("kind", ["tensor", "array"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("weight", [0.1, 0.001, -0.3, 0.5, 0.9])
def test_lerp_equals_the_registry(dt, weight, kind):
    rng = np.random.default_rng(0)
    x1, x2 = _pair(rng, dt)
    end = eager.tensor((rng.standard_normal((5, 7)) * 3).astype(dt))
    with eager.no_grad():
        _unfused(kind, "lerp_", x1, end, weight)
        x2.lerp_(end, weight)
    assert np.array_equal(x1.numpy().view(np.uint8), x2.numpy().view(np.uint8))
    assert x1._version == x2._version == 1


@pytest.mark.parametrize("kind", ["tensor", "array"])
@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("value", [1, 0.001, -0.37, 2.5])
@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_"])
def test_addc_equals_the_registry(dt, value, name, kind):
    rng = np.random.default_rng(1)
    x1, x2 = _pair(rng, dt)
    t1 = eager.tensor((rng.standard_normal((5, 7)) * 3).astype(dt))
    t2 = eager.tensor((rng.standard_normal(7) + 4).astype(dt))  # (broadcast)
    with eager.no_grad():
        _unfused(kind, name, x1, t1, t2, value=value)
        getattr(x2, name)(t1, t2, value=value)
    assert np.array_equal(x1.numpy().view(np.uint8), x2.numpy().view(np.uint8))
    assert x1._version == x2._version == 1
