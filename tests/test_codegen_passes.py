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


def test_cat_of_head_merges_is_one_cat_of_the_strided_parts():
    """cat of reshapes that merge (heads, head_dim) of permuted tensors along the merged dim
    becomes reshape(cat(parts)): eager's values, no reshape copies before the cat."""
    from codegen.passes import cat_split_views

    def f(a, b):
        ha = a.permute(2, 0, 1, 3).reshape(6, 2, 12)
        hb = b.permute(2, 0, 1, 3).reshape(6, 2, 12)
        return eager.cat([ha, hb], dim=-1).exp()

    rng = np.random.default_rng(1)
    a, b = (eager.tensor(rng.standard_normal((2, 3, 6, 4)).astype(np.float32))
            for _ in range(2))
    c = capture.compile(f, backend="llvm")
    np.testing.assert_allclose(c(a, b).numpy(), f(a, b).numpy(), rtol=1e-6)
    (entry,) = [e for e in c.__wick_compiled__.entries if e.mode == "graph"]
    g = entry.runner.compiled.graph
    cats = [n for n in g.nodes if n.op == "call_function" and n.target.name == "cat"]
    assert cats and all(len(n.meta["val"].shape) == 4 for n in cats)


def test_cat_split_views_keeps_other_cats():
    import ir

    from codegen.passes import cat_split_views

    g = ir.Graph()
    f32 = ir.dtypes.float32
    x = g.placeholder("x", ir.TensorMeta((2, 3, 4), f32))
    y = g.placeholder("y", ir.TensorMeta((2, 12), f32))
    r = g.call_op(ir.REGISTRY["reshape"], (x, (2, 12)))
    g.output((g.call_op(ir.REGISTRY["cat"], ([r, y],), {"dim": 0}),))
    assert cat_split_views(g) is g   # a cat along another dim than the merged one
    xs = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    (out,) = CompiledGraph(g)(xs, np.ones((2, 12), np.float32))
    np.testing.assert_array_equal(out, np.concatenate([xs.reshape(2, 12), np.ones((2, 12))]))
