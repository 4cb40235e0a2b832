"""`isclose` (a registry composite), `allclose`, `equal`, `numel` (Python results) as PyTorch's:
checked against numpy's isclose and against torch when it is installed, with NaN, infinities,
broadcasting, tolerances and the errors."""

from __future__ import annotations

import numpy as np
import pytest

import eager

try:
    import torch
except ImportError:  # an optional reference
    torch = None

NAN, INF = float("nan"), float("inf")
PAIRS = [
    ([1.0, 2.0, NAN, INF, -INF, 0.0], [1.0 + 1e-9, 2.1, NAN, INF, INF, 1e-9]),
    ([[1.0, 2.0], [3.0, 4.0]], [1.0, 2.0 + 1e-3]),  # broadcast
    ([1e10, 1e-10], [1.00001e10, 1e-9]),
]
TOLS = [{}, {"rtol": 0.1}, {"atol": 1e-3}, {"equal_nan": True}, {"rtol": 0, "atol": 0}]


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("tol", TOLS, ids=str)
@pytest.mark.parametrize("pair", range(len(PAIRS)))
def test_isclose_and_allclose(pair, tol, dt):
    a, b = (np.asarray(v, dtype=dt) for v in PAIRS[pair])
    got = eager.isclose(eager.tensor(a), eager.tensor(b), **tol).numpy()
    want = np.isclose(a, b, **tol)
    np.testing.assert_array_equal(got, want)
    assert eager.allclose(eager.tensor(a), eager.tensor(b), **tol) == bool(want.all())
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        np.testing.assert_array_equal(got, torch.isclose(ta, tb, **tol).numpy())
        assert eager.tensor(a).allclose(eager.tensor(b), **tol) == torch.allclose(ta, tb, **tol)


def test_isclose_errors():
    with pytest.raises(RuntimeError, match="did not match"):
        eager.isclose(eager.ones(2), eager.ones(2, dtype=eager.float64))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        eager.isclose(eager.ones(2), eager.ones(2), rtol=-1)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        eager.allclose(eager.ones(2), eager.ones(2), atol=-1)


def test_equal_and_numel():
    a = eager.tensor([[1, 2], [3, 4]])
    assert eager.equal(a, eager.tensor([[1, 2], [3, 4]])) is True
    assert eager.equal(a, eager.tensor([[1, 2], [3, 5]])) is False
    assert eager.equal(a, eager.tensor([1, 2])) is False  # other shape: False, no broadcast
    assert a.equal(a.clone()) is True
    assert eager.numel(a) == 4 and eager.numel(eager.ones(0, 3)) == 0
    if torch is not None:
        ta = torch.tensor([[1, 2], [3, 4]])
        assert torch.equal(ta, torch.tensor([1, 2])) is False
        assert torch.numel(ta) == eager.numel(a)
