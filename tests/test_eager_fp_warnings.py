"""IEEE results without numpy's RuntimeWarnings (as PyTorch) on eager's direct kernel calls:
the elementwise fast paths, backward programs and the optimizers' array path."""

from __future__ import annotations

import warnings

import numpy as np

import eager


def _runtime_warnings(fn):
    with warnings.catch_warnings(record=True) as caught:  # (the filters in force, recorded)
        out = fn()
    return out, [w for w in caught if issubclass(w.category, RuntimeWarning)]


def test_fast_path_division_by_zero_is_silent():
    x = eager.ones(3)
    (q, lg), caught = _runtime_warnings(lambda: (x / 0, eager.log(-x)))
    np.testing.assert_array_equal(q.numpy(), np.full(3, np.inf, np.float32))
    assert np.isnan(lg.numpy()).all()
    assert caught == []


def test_backward_program_infinite_gradient_is_silent():
    def step():
        a = eager.tensor([0.0, 4.0], requires_grad=True)
        eager.sqrt(a).sum().backward()
        return a.grad.numpy()

    for _ in range(4):  # (the third and later backward passes run a program)
        g, caught = _runtime_warnings(step)
        np.testing.assert_array_equal(g, np.array([np.inf, 0.25], np.float32))
        assert caught == []
