"""ir.passes: each pass changes the node count as expected and leaves the results equal
(interpreter before vs after, and numpy references)."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import REGISTRY as R
from ir import TensorMeta
from ir.passes import ShapeProp, cse, dce, decompose, fold_constants, replace_pattern

F32 = ir.float32
rng = np.random.default_rng(0)


def ops_of(g) -> list:
    return [n.target.name for n in g.nodes if n.op == "call_function"]


def run(gm, *xs):
    return ir.Interpreter(gm).run(*xs)


def test_dce_removes_dead_chains_and_keeps_impure_nodes():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3,), F32))
    live = g.call_op(R["exp"], (x,))
    g.call_op(R["sum"], (g.call_op(R["mul"], (x, 2.0)),))  # dead chain of two
    effect = g.call_op(R["neg"], (x,))
    effect.meta["side_effect"] = True
    unused_attr = g.get_attr("c", TensorMeta((3,), F32))
    g.output((live,))
    ir.GraphModule({"c": np.zeros(3, np.float32)}, g)
    assert len(g) == 7
    assert dce(g) == 3 and len(g) == 4
    assert unused_attr not in g.nodes and effect in g.nodes
    assert dce(g) == 0


def test_in_place_named_ops_count_as_side_effects():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3,), F32))
    fake = ir.OpDef("add_", "elementwise", "input, other", 2)  # not registered: concept only
    n = g.call_function(fake, (x, 1.0), {}, val=x.val)
    g.output((x,))
    assert n.is_impure() and dce(g) == 0


def test_cse_merges_repeats_but_not_different_constants():
    def f(x):
        a = (x * 2.0).exp()
        b = (x * 2.0).exp()  # same as a
        c = x * 2  # int constant: another dtype rule, not merged with x * 2.0
        d = x * -0.0
        e = x * 0.0  # -0.0 and 0.0 differ
        return a + b + c + d + e

    gm = ir.symbolic_trace(f, TensorMeta((4,), F32))
    x = rng.standard_normal(4, np.float32)
    before = run(gm, x)[0]
    n = len(gm.graph)
    assert cse(gm) == 2 and len(gm.graph) == n - 2
    assert ops_of(gm.graph).count("mul") == 4 and ops_of(gm.graph).count("exp") == 1
    np.testing.assert_array_equal(run(gm, x)[0], before)
    gm.graph.lint()


def test_cse_respects_grad_mode():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3,), F32))
    a, b = g.call_op(R["exp"], (x,)), g.call_op(R["exp"], (x,))
    a.meta["grad_enabled"], b.meta["grad_enabled"] = True, False
    g.output((a, b))
    assert cse(g) == 0
    # a graph that is only executed (compiled forwards and backwards) merges them
    assert cse(g, grad_mode=False) == 1 and g.output_node.args[0] == (a, a)


def test_constant_folding():
    w = rng.standard_normal((3, 3), np.float32)

    def f(F, x):
        scale = F.exp(F.mul(w, 0.5))  # constants only: folded
        return F.add(F.matmul(x, scale), 1.0)

    gm = ir.symbolic_trace(f, TensorMeta((2, 3), F32))
    x = rng.standard_normal((2, 3), np.float32)
    before = run(gm, x)[0]
    assert ops_of(gm.graph) == ["mul", "exp", "matmul", "add"]
    assert fold_constants(gm) == 2
    assert ops_of(gm.graph) == ["matmul", "add"]
    (const,) = gm.graph.find_nodes("get_attr")
    np.testing.assert_allclose(gm.get_attr(const.target), np.exp(w * 0.5), rtol=1e-6)
    assert list(gm.attrs) == [const.target]  # the unused input constant is dropped
    np.testing.assert_allclose(run(gm, x)[0], before, rtol=1e-6)
    gm.graph.lint()
    with pytest.raises(TypeError, match="needs a GraphModule"):
        fold_constants(ir.Graph())


def test_decompose_composites_into_primitives():
    def f(x):
        return x.softmax(-1) + x.mean(dim=0, keepdim=True)

    gm = ir.symbolic_trace(f, TensorMeta((3, 5), ir.float64))
    x = rng.standard_normal((3, 5))
    before = run(gm, x)[0]
    assert ops_of(gm.graph) == ["softmax", "mean", "add"]
    assert decompose(gm, ops=["mean"]) == 1
    assert ops_of(gm.graph) == ["softmax", "sum", "div", "add"]
    assert decompose(gm) == 1
    assert ops_of(gm.graph) == ["amax", "sub", "exp", "sum", "div", "sum", "div", "add"]
    assert all(R[o].decomp is None for o in ops_of(gm.graph)) and len(gm.graph) == 10
    e = np.exp(x - x.max(-1, keepdims=True))
    np.testing.assert_allclose(run(gm, x)[0], e / e.sum(-1, keepdims=True) + x.mean(0),
                               rtol=1e-12)
    np.testing.assert_allclose(run(gm, x)[0], before, rtol=1e-12)
    gm.graph.lint()


def test_replace_pattern():
    def f(x, y):
        a = (x + y).tanh()
        return (a + 1.0).tanh() * a

    def pattern(x, y):
        return (x + y).tanh()

    def replacement(x, y):
        return (x + y).sigmoid() * 2.0 - 1.0  # not tanh: the change is visible

    gm = ir.symbolic_trace(f, TensorMeta((4,), F32), TensorMeta((4,), F32))
    matches = replace_pattern(gm, pattern, replacement)
    assert len(matches) == 2
    assert matches[1].bindings[1] == 1.0  # the pattern's `y` bound to a constant
    assert ops_of(gm.graph) == ["add", "sigmoid", "mul", "sub", "add", "sigmoid", "mul", "sub",
                                "mul"]
    x, y = rng.standard_normal(4, np.float32), rng.standard_normal(4, np.float32)
    s = lambda v: 2 / (1 + np.exp(-v)) - 1
    np.testing.assert_allclose(run(gm, x, y)[0], s(s(x + y) + 1) * s(x + y), rtol=1e-5)
    gm.graph.lint()


def test_replace_pattern_canonical_attrs_and_outside_users():
    def f(x):
        s = x.sum(dim=1)  # canonical dim=(1,) matches the pattern's dim=-1 on a 2-d input
        t = (x * 3.0).sum(dim=0)
        return s.exp(), t

    def pattern(x):
        return x.sum(dim=-1).exp()

    def replacement(x):
        return x.amax(dim=-1).exp()

    gm = ir.symbolic_trace(f, TensorMeta((3, 4), F32))
    assert len(replace_pattern(gm, pattern, replacement)) == 1
    assert ops_of(gm.graph) == ["mul", "sum", "amax", "exp"]  # inserted at the anchor

    def g(x):  # the inner sum is read outside the match: no replacement
        s = x.sum(dim=1)
        return s.exp(), s

    gm2 = ir.symbolic_trace(g, TensorMeta((3, 4), F32))
    assert replace_pattern(gm2, pattern, replacement) == []
    with pytest.raises(ValueError, match="1 parameter"):
        replace_pattern(gm2, pattern, lambda x, y: x + y)


def test_shape_prop_from_specs_and_from_arrays():
    def f(x, w):
        return (x @ w).softmax(-1).sum(dim=0)

    gm = ir.symbolic_trace(f)  # no specs: no meta
    assert all(n.val is None for n in gm.graph.nodes if n.op != "output")
    ShapeProp(gm).propagate(TensorMeta((5, 3), F32), TensorMeta((3, 7), F32))
    vals = {n.name: n.val for n in gm.graph.nodes if n.op != "output"}
    assert vals["matmul"] == TensorMeta((5, 7), F32) and vals["sum"] == TensorMeta((7,), F32)
    x, w = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    out = ShapeProp(gm).propagate(x, w)[0]
    assert gm.graph.nodes[-2].val == TensorMeta((4,), ir.float64) and out.shape == (4,)
    gm.graph.lint()
    with pytest.raises(RuntimeError, match=r"at %matmul \(matmul\): mat1 and mat2 shapes"):
        ShapeProp(gm).propagate(TensorMeta((5, 3), F32), TensorMeta((4, 7), F32))
