"""The convolution's forward keeps its im2col columns beside its input (`ir/ops/workspace.py`
`keep`/`kept`) and the weight gradient of the same input reuses them: the results must equal
the weight gradient computed from scratch, and a kept entry must never be taken for another
array, a changed array, or other geometry. References: the kernels with nothing kept, and the
direct-sum reference `_conv_ref`'s adjoint through finite sums (float64)."""

from __future__ import annotations

import numpy as np
import pytest

from ir.ops import conv as kernels
from ir.ops import workspace

ATTRS = {"stride": (1, 1), "padding": (1, 1), "dilation": (1, 1), "groups": 1}


def _fresh_weight_grad(x, g, ws, attrs):
    """The weight gradient with nothing kept (a copy of x: never a kept array)."""
    return kernels._weight_grad_impl(np, x.copy(), g, ws, **attrs)


def _reference_weight_grad(x, g, ws, attrs):
    """sum over n and positions of g * windows of x, by the reference forward's linearity."""
    res = np.zeros(ws)
    for i in np.ndindex(*ws):
        e = np.zeros(ws)
        e[i] = 1.0
        res[i] = np.sum(kernels._conv_ref(x, e, **attrs) * g)
    return res


@pytest.mark.parametrize("xs, ws, attrs", [
    ((3, 4, 6, 5), (5, 4, 3, 3), ATTRS),                     # channels-last columns
    ((3, 1, 8, 8), (4, 1, 3, 3), ATTRS),                     # channels-first (one channel)
    ((2, 4, 7, 6), (6, 2, 3, 2), {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2),
                                  "groups": 2}),
])
def test_weight_grad_from_kept_columns_matches(xs, ws, attrs):
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal(xs), rng.standard_normal(ws)
    y = kernels._conv_impl(np, x, w, **attrs)
    g = rng.standard_normal(y.shape)
    want = _reference_weight_grad(x, g, ws, attrs)
    got = kernels._weight_grad_impl(np, x, g, ws, **attrs)
    np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(_fresh_weight_grad(x, g, ws, attrs), want, rtol=1e-10,
                               atol=1e-10)


def test_forward_keeps_columns_and_weight_grad_takes_them(monkeypatch):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    taken = []
    real = workspace.kept

    def spy(a, key):
        r = real(a, key)
        taken.append(r is not None)
        return r

    monkeypatch.setattr(kernels, "kept", spy)
    y = kernels._conv_impl(np, x, w, **ATTRS)
    kernels._weight_grad_impl(np, x, np.ones_like(y), w.shape, **ATTRS)
    kernels._weight_grad_impl(np, x.copy(), np.ones_like(y), w.shape, **ATTRS)
    assert taken == [True, False]  # the very array only


def test_changed_input_is_not_served_stale_columns():
    """A write into x through numpy after the forward (no version counter sees it): the
    weight gradient reads the new values, as PyTorch's would."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3, 5, 5)), rng.standard_normal((4, 3, 3, 3))
    y = kernels._conv_impl(np, x, w, **ATTRS)
    g = rng.standard_normal(y.shape)
    x[...] = rng.standard_normal(x.shape)
    np.testing.assert_allclose(kernels._weight_grad_impl(np, x, g, w.shape, **ATTRS),
                               _fresh_weight_grad(x, g, w.shape, ATTRS), rtol=1e-12)


def test_other_geometry_is_not_served_kept_columns():
    rng = np.random.default_rng(3)
    x, w = rng.standard_normal((2, 3, 6, 6)), rng.standard_normal((4, 3, 3, 3))
    kernels._conv_impl(np, x, w, **ATTRS)
    other = dict(ATTRS, padding=(0, 0))
    g = rng.standard_normal((2, 4, 4, 4))
    np.testing.assert_allclose(kernels._weight_grad_impl(np, x, g, w.shape, **other),
                               _reference_weight_grad(x, g, w.shape, other), rtol=1e-10,
                               atol=1e-10)


def test_kept_entries_are_bounded_and_die_with_their_input():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((2, 3, 3, 3))
    xs = [rng.standard_normal((1, 3, 4, 4)) for _ in range(workspace._KEEP + 3)]
    for x in xs:
        kernels._conv_impl(np, x, w, **ATTRS)
    assert len(workspace._local.kept) <= workspace._KEEP
    del xs, x
    kernels._conv_impl(np, rng.standard_normal((1, 3, 4, 4)), w, **ATTRS)
    assert len(workspace._local.kept) == 1  # dead inputs' entries dropped
