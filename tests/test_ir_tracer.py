"""ir.symbolic_trace: the proxy tracer agrees with the bytecode capture (same ops, same order,
same attributes) on functions both frontends read, and runs like eager."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
import ir
from ir import TensorMeta
from ir.passes import dce, decompose

F32 = ir.float32


def mlp(x, w, b):
    return (x @ w + b).tanh()


def reduce_(x, w, b):
    return x.sum(dim=1) * 2 - (x * 2).tanh().mean()


def shapes(x, w, b):
    y = (x @ w).transpose(0, 1).reshape(-1)
    return y.unsqueeze(0).exp() / 3, -b


def softmax_(x, w, b):
    return (x @ w).softmax(-1) + (b > 0.5) * 1.5


def reflected(x, w, b):
    return 1 - x, 2 / (abs(x) + 1), 2.0 ** b, (2 * x == x + x).sum()


FUNCTIONS = [mlp, reduce_, shapes, softmax_, reflected]
SPECS = (TensorMeta((4, 3), F32), TensorMeta((3, 5), F32), TensorMeta((5,), F32))


def calls(g) -> list:
    return [(n.target.name, n.kwargs) for n in g.nodes if n.op == "call_function"]


@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
def test_tracer_agrees_with_bytecode_capture(fn):
    rng = np.random.default_rng(0)
    arrays = [rng.random(s.shape, np.float32) for s in SPECS]
    tensors = [eager.tensor(a) for a in arrays]
    explained = capture.explain(fn)(*tensors)
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    captured = explained.graphs[0]
    gm = ir.symbolic_trace(fn, *SPECS)
    gm.graph.lint()
    decompose(gm)  # capture records composites as their primitives
    dce(gm)
    assert calls(gm.graph) == calls(captured)
    assert [str(n.val) for n in gm.graph.nodes] == [str(n.val) for n in captured.nodes]
    assert [n.meta.get("source") for n in gm.graph.nodes] == \
        [n.meta.get("source") for n in captured.nodes]
    want = fn(*tensors)
    want = want if isinstance(want, tuple) else (want,)
    for got, w in zip(ir.Interpreter(gm).run(*arrays), want):
        np.testing.assert_allclose(got, w.numpy(), rtol=1e-6)
    for got, w in zip(gm(*tensors), want):
        np.testing.assert_allclose(got.numpy(), w.numpy(), rtol=1e-6)


def test_namespace_functions_sources_and_constants():
    c = np.full((3,), 2.0, np.float32)

    def f(F, x):
        return F.add(F.exp(x), c, alpha=3), F.sum(x, 0)

    gm = ir.symbolic_trace(f, np.zeros((2, 3), np.float32))
    g = gm.graph
    line = f.__code__.co_firstlineno + 1
    assert [n.meta.get("source") for n in g.nodes if n.op == "call_function"] == \
        [f"test_ir_tracer.py:{line}"] * 3
    assert [n.op for n in g.nodes][:2] == ["placeholder", "get_attr"]
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    y, s = ir.Interpreter(gm).run(x)
    np.testing.assert_allclose(y, np.exp(x) + 3 * c, rtol=1e-6)
    np.testing.assert_array_equal(s, x.sum(0))
    assert "eager.add(exp, _tensor_constant0, alpha=3)" in gm.code


def test_untyped_trace_records_attributes_as_bound():
    gm = ir.symbolic_trace(lambda F, x: F.sum(x, -1))
    (node,) = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert node.val is None and node.kwargs == {"dim": -1, "keepdim": False, "dtype": None}


def test_trace_errors():
    def branchy(x):
        return x.exp() if x.sum() > 0 else x

    with pytest.raises(ir.TraceError, match="cannot read the data of %gt"):
        ir.symbolic_trace(branchy, *SPECS[:1])
    with pytest.raises(ir.TraceError, match="in-place method add_"):
        ir.symbolic_trace(lambda x: x.add_(1), *SPECS[:1])
    with pytest.raises(ir.TraceError, match=r"metadata \(shape, dtype\) of %x is unknown"):
        ir.symbolic_trace(lambda x: x.reshape(x.shape[0], -1))
    with pytest.raises(AttributeError, match="no attribute 'frobnicate'"):
        ir.symbolic_trace(lambda x: x.frobnicate(), *SPECS[:1])
    with pytest.raises(ir.TraceError, match="argument 'other' must be a traced tensor"):
        ir.symbolic_trace(lambda F, x: F.add(x, "a"), *SPECS[:1])
    with pytest.raises(TypeError, match="1 tensor parameter"):
        ir.symbolic_trace(lambda x: x, *SPECS[:2])
    with pytest.raises(TypeError):  # eager functions do not accept proxies (see ir/tracer.py)
        ir.symbolic_trace(lambda x: eager.exp(x), *SPECS[:1])
    with pytest.raises(RuntimeError, match="mat1 and mat2 shapes cannot be multiplied"):
        ir.symbolic_trace(lambda x, w: x @ w, SPECS[0], SPECS[0])


def test_shape_reads_during_tracing():
    def f(x):
        return x.reshape(x.shape[0] * x.size(1)) * x.ndim + x.numel() + len(x)

    gm = ir.symbolic_trace(f, *SPECS[:1])
    (reshape,) = gm.graph.find_nodes("call_function", ir.REGISTRY["reshape"])
    assert reshape.kwargs["shape"] == (12,) and reshape.val == TensorMeta((12,), F32)
    x = np.ones((4, 3), np.float32)
    np.testing.assert_array_equal(ir.Interpreter(gm).run(x)[0], np.full(12, 2 + 12 + 4))
