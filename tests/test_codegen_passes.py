"""codegen.passes.cat_slice_adjoints: the gradient of disjoint slices that tile a dimension is
one `cat` in the compiled backward graph, with eager's values; other sums keep `_adjoint`."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from codegen.compiled import CompiledGraph
from codegen.passes import cat_slice_adjoints


def _backward_graph(compiled):
    (entry,) = [e for e in compiled.__wick_compiled__.entries if e.mode == "graph"]
    (plan,) = entry.runner.aot.plans.values()
    return plan.bwd.graph


def _ops(graph) -> list:
    return [n.target.name for n in graph.nodes if n.op == "call_function"]


def _run(f, shape=(3, 5, 12)):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(shape).astype(np.float32)
    grads = []
    for fn in (f, capture.compile(f, backend="llvm")):
        x = eager.tensor(a, requires_grad=True)
        fn(x).backward()
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-6)
    return fn


def test_three_slices_tiling_the_last_dim_become_cat():
    def f(x):
        q, k, v = x[..., 0:4], x[..., 4:8], x[..., 8:12]
        return (q * k + v.exp()).sum()

    ops = _ops(_backward_graph(_run(f)))
    assert "cat" in ops and "_adjoint" not in ops


def test_slices_of_a_middle_dim_in_any_order():
    def f(x):
        a, b = x[:, 2:], x[:, :2]
        return (b.sum(1, keepdim=True) * a).sum()

    ops = _ops(_backward_graph(_run(f)))
    assert "cat" in ops and "_adjoint" not in ops


@pytest.mark.parametrize("slices", [((0, 4), (4, 8)), ((0, 6), (4, 10)), ((0, 4), (0, 4))])
def test_gaps_and_overlaps_keep_the_adjoints(slices):
    (a0, a1), (b0, b1) = slices

    def f(x):
        return (x[..., a0:a1] * x[..., b0:b1].tanh()).sum()

    ops = _ops(_backward_graph(_run(f)))
    assert "_adjoint" in ops and "cat" not in ops


def test_pass_returns_the_graph_itself_without_a_match():
    import ir

    g = ir.Graph()
    x = g.placeholder("x", ir.TensorMeta((2, 3), ir.dtypes.float32))
    g.output((g.call_op(ir.REGISTRY["add"], (x, x)),))
    assert cat_slice_adjoints(g) is g
    (out,) = CompiledGraph(g)(np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(out, 2 * np.ones((2, 3), np.float32))
