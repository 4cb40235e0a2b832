"""The optimizers' unfused updates (eager/optim/optimizer.py: lerp_, addcmul_, addcdiv_ as
two-operand in-place ops) must write exactly what the registry's three-operand in-place ops
write, bit for bit, in float32 and float64."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager.optim import optimizer as O


def _pair(rng, dt, shape=(5, 7)):
    a = (rng.standard_normal(shape) * 3).astype(dt)
    return eager.tensor(a.copy()), eager.tensor(a.copy())


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("weight", [0.1, 0.001, -0.3, 0.5, 0.9])
def test_lerp_equals_the_registry(dt, weight):
    rng = np.random.default_rng(0)
    x1, x2 = _pair(rng, dt)
    end = eager.tensor((rng.standard_normal((5, 7)) * 3).astype(dt))
    with eager.no_grad():
        O.lerp_(x1, end, weight)
        x2.lerp_(end, weight)
    assert np.array_equal(x1.numpy().view(np.uint8), x2.numpy().view(np.uint8))


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("value", [1, 0.001, -0.37, 2.5])
@pytest.mark.parametrize("name", ["addcmul_", "addcdiv_"])
def test_addc_equals_the_registry(dt, value, name):
    rng = np.random.default_rng(1)
    x1, x2 = _pair(rng, dt)
    t1 = eager.tensor((rng.standard_normal((5, 7)) * 3).astype(dt))
    t2 = eager.tensor((rng.standard_normal(7) + 4).astype(dt))  # (broadcast)
    with eager.no_grad():
        getattr(O, name)(x1, t1, t2, value=value)
        getattr(x2, name)(t1, t2, value=value)
    assert np.array_equal(x1.numpy().view(np.uint8), x2.numpy().view(np.uint8))
    assert x1._version == x2._version == 1
