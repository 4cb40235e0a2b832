"""`torch.where(condition)` (PyTorch's one-argument overload, `nonzero(condition,
as_tuple=True)`) in captured code: a data-dependent shape, so one named break with the code
before and after compiled, as Dynamo (it was a TypeError during capture and the whole frame ran
eagerly: 0 graphs). The three-operand form stays one op in the graph."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def _select_positive(lib):
    def f(x, w):
        scores = (x @ w).tanh()
        rows, cols = lib.where(scores > 0)
        picked = scores[rows, cols]
        return picked.sum() + lib.where(scores > 0, scores, 0.0).mean()
    return f


def _inputs(lib):
    rng = np.random.default_rng(4)
    return (lib.tensor(rng.standard_normal((6, 5)).astype(np.float32)),
            lib.tensor(rng.standard_normal((5, 3)).astype(np.float32)))


def test_where_condition_breaks_once_and_matches_eager():
    f = _select_positive(eager)
    x, w = _inputs(eager)
    capture.reset()
    compiled = capture.compile(f)
    for _ in range(2):
        np.testing.assert_allclose(compiled(x, w).item(), f(x, w).item(), rtol=1e-6)
    ex = capture.explain(f)(x, w)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1), str(ex)
    assert "data-dependent" in str(ex)


def test_torch_counts_agree():
    torch = pytest.importorskip("torch")
    torch._dynamo.reset()
    ex = torch._dynamo.explain(_select_positive(torch))(*_inputs(torch))
    assert (ex.graph_count, ex.graph_break_count) == (2, 1)
