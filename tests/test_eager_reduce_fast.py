"""The reduction fast path (`loss.sum()`, `x.amax()`, ... with no other argument) must give what
the general path gives: values, dtypes, autograd records and gradients, and the same errors."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import dispatch, fastpaths
from ir import REGISTRY

FAST = [op for op in REGISTRY.values() if fastpaths._reduce_fast_eligible(op)]
DTYPES = [np.float32, np.float64, np.int64, np.bool_, np.float16]
SHAPES = [(), (5,), (3, 4), (2, 0), (0,)]


def _run(fn, a, requires_grad):
    x = eager.tensor(a, requires_grad=requires_grad)
    try:
        out = fn(x)
    except Exception as e:  # noqa: BLE001  (compared with the general path's)
        return ("raised", type(e), str(e)), x
    return out, x


@pytest.mark.parametrize("op", FAST, ids=lambda op: op.name)
def test_fast_reduction_equals_the_general_path(op):
    fast = dispatch.FUNCTIONS[op.name]
    general = fast.__wick_general__
    assert fast is not general  # the fast path is installed
    rng = np.random.default_rng(0)
    for dt in DTYPES:
        for shape in SHAPES:
            a = (rng.standard_normal(shape) * 3).astype(dt)
            grad = np.dtype(dt).kind == "f"
            for _ in range(2):  # the second call runs from the cache
                got, xg = _run(fast, a, grad)
                want, xw = _run(general, a, grad)
                if isinstance(want, tuple):
                    assert isinstance(got, tuple) and got[:2] == want[:2], (op.name, dt, shape)
                    continue
                assert not isinstance(got, tuple), (op.name, dt, shape, got)
                assert got.dtype is want.dtype and got.shape == want.shape
                np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
                assert got.requires_grad == want.requires_grad
                assert type(got.grad_fn) is type(want.grad_fn)
                if got.requires_grad and got.numel() == 1 and a.size:
                    got.backward()
                    want.backward()
                    np.testing.assert_array_equal(xg.grad.numpy(), xw.grad.numpy())


def test_fast_reduction_steps_aside_for_arguments_no_grad_and_hooks():
    x = eager.tensor([[1.0, 5.0], [3.0, 2.0]], requires_grad=True)
    assert x.sum().grad_fn is not None and x.sum(0).shape == (2,)
    assert x.sum(dtype=eager.float64).dtype is eager.float64
    with eager.no_grad():
        assert x.sum().grad_fn is None
    with eager.autograd.forward_ad.dual_level():
        d = eager.autograd.forward_ad.make_dual(x.detach(), eager.ones(2, 2))
        s = d.sum()
        np.testing.assert_allclose(eager.autograd.forward_ad.unpack_dual(s).tangent.numpy(), 4.0)
