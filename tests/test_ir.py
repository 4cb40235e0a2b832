"""ir: graph text form, interpreter checks, registry invariants."""

from __future__ import annotations

import numpy as np
import pytest

import ir
from ir import REGISTRY, TensorMeta
from ir.execute import apply_arrays


def build(graph_fn):
    g = ir.Graph("g")
    return g, graph_fn(g)


def call(g, name, args, **attrs):
    op = REGISTRY[name]
    inputs, attrs = op.bind(args, attrs)
    metas = tuple(a.val if isinstance(a, ir.Node) else a for a in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    return g.call_function(op, inputs, attrs, val=op.meta(metas, attrs), source="t.py:1")


def small_graph():
    g = ir.Graph("f")
    x = g.placeholder("x", TensorMeta((4, 3), ir.float32))
    w = g.placeholder("w", TensorMeta((3, 2), ir.float32))
    mm = call(g, "matmul", (x, w))
    y = call(g, "gelu", (call(g, "add", (mm, 1.0)),), approximate="tanh")
    s = call(g, "sum", (y,), dim=1)
    g.output((y, s))
    return g


def test_graph_prints_types_attrs_and_sources():
    text = str(small_graph())
    assert text.splitlines()[0] == "f(x: f32[4, 3], w: f32[3, 2]):"
    assert "%matmul : f32[4, 2] = matmul(%x, %w)" in text
    assert "gelu(%add, approximate='tanh')" in text
    assert "%sum : f32[4] = sum(%gelu, dim=(1,))" in text
    assert "# t.py:1" in text
    assert text.splitlines()[-1].strip() == "return (%gelu, %sum)"


def test_interpreter_matches_numpy():
    g = small_graph()
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3), np.float32), rng.standard_normal((3, 2), np.float32)
    y, s = ir.Interpreter(g).run(x, w)
    z = x @ w + 1
    want = 0.5 * z * (1 + np.tanh(np.sqrt(2 / np.pi) * (z + 0.044715 * z**3)))
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, want.sum(1), rtol=1e-5, atol=1e-5)


def test_interpreter_names_the_bad_placeholder():
    g = small_graph()
    with pytest.raises(TypeError, match="'w' expects f32\\[3, 2\\], got f32\\[2, 2\\]"):
        ir.Interpreter(g).run(np.ones((4, 3), np.float32), np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match="expects 2 inputs"):
        ir.Interpreter(g).run(np.ones((4, 3), np.float32))


def test_dead_code_elimination_and_users():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((2,), ir.float32))
    used = call(g, "exp", (x,))
    call(g, "log", (x,))  # dead
    g.output((used,))
    assert g.eliminate_dead_code() == 1
    assert [n.name for n in g.nodes] == ["x", "exp", "output"]
    assert list(x.users) == [used]


def test_composites_decompose_to_primitives():
    x = np.random.default_rng(1).standard_normal((3, 5))
    got = apply_arrays(np, REGISTRY["log_softmax"], (x,), {"dim": -1, "dtype": None})
    np.testing.assert_allclose(np.exp(got).sum(-1), np.ones(3), rtol=1e-12)


def test_every_op_is_complete():
    """Registry invariants: every op can run, be tested, and (if elementwise) be compiled."""
    for op in REGISTRY.values():
        assert op.ref is not None, op.name
        assert op.impl is not None or op.decomp is not None, op.name
        if op.kind == "elementwise":
            # codegen fuses real dtypes only: ops whose result is complex run their `impl`
            if op.scalar is None:
                meta = ir.TensorMeta((2,), ir.dtypes.float32)
                out = op.dtypes((meta,) * max(op.nin, 1), {k: v.default for k, v in
                                list(op.signature.parameters.items())[op.nin:]})[1]
                assert out.is_complex, op.name
