"""GraphModule and `.code`: the generated Python runs and equals the interpreter and eager on
every op-info sample of the registry (one-node graphs built with `Graph.call_op`)."""

from __future__ import annotations

import ast
import inspect
import math

import numpy as np
import pytest
from opinfo import all_cases, case_id, samples

import eager
import ir
from ir import REGISTRY as R
from ir import TensorMeta
from ir.execute import array_meta


def _arrays_of(v) -> list:
    if isinstance(v, np.ndarray):
        return [v]
    if isinstance(v, (tuple, list)):
        return [a for x in v for a in _arrays_of(x)]
    return []


def _replace_arrays(v, it):
    """`v` with each numpy array replaced by the next item of `it` (same nesting)."""
    if isinstance(v, np.ndarray):
        return next(it)
    if isinstance(v, (tuple, list)):
        return type(v)(_replace_arrays(x, it) for x in v)
    return v


def _flat(v) -> list:
    return [y for x in v for y in _flat(x)] if isinstance(v, tuple) else [v]


def _eager_call(op, inputs, attrs):
    args = _replace_arrays(list(inputs), iter([eager.as_tensor(a) for a in _arrays_of(inputs)]))
    return getattr(eager, op.name)(*args, **attrs)


def _module(op, inputs, attrs):
    """A one-node graph through `Graph.call_op`, or for a composite with several outputs the
    symbolic trace of its call (its decomposition)."""
    arrays = _arrays_of(inputs)
    try:
        g = ir.Graph(op.name)
        phs = iter([g.placeholder(f"x{i}", array_meta(a)) for i, a in enumerate(arrays)])
        node = g.call_op(op, _replace_arrays(tuple(inputs), phs), attrs, source="opinfo.py:1")
        g.output((node,))
        return ir.GraphModule({}, g)
    except TypeError as e:
        if "returns" not in str(e):
            raise

    def call(F, *xs):
        return getattr(F, op.name)(*_replace_arrays(list(inputs), iter(xs)), **attrs)

    call.__signature__ = inspect.Signature(
        [inspect.Parameter("F", inspect.Parameter.POSITIONAL_ONLY)]
        + [inspect.Parameter(f"x{i}", inspect.Parameter.POSITIONAL_ONLY)
           for i in range(len(arrays))])
    return ir.symbolic_trace(call, *arrays, name=op.name)


def _data_dependent(op, inputs, attrs) -> bool:
    """Whether the graph cannot hold `op` because its decomposition reaches an op whose shape
    depends on the data (nonzero...); then building it must say so."""
    try:
        _module(op, inputs, attrs)
    except ir.DynamicShapeError:
        assert op.decomp is not None
        return True
    except Exception:  # noqa: BLE001  (compared with eager's error by the caller)
        return False
    return False


def _same(got, want, rounding=False):
    """Bit-equal; for an op whose eager kernel sums by BLAS (`eager_impl_rounding`), equal up
    to that rounding: a few ulps of the values' scale."""
    assert got.dtype == want.dtype and got.shape == want.shape
    if not rounding:
        np.testing.assert_array_equal(got, want)
        return
    eps = np.finfo(want.dtype).eps
    scale = max(float(np.max(np.abs(want), initial=0.0)), 1.0)
    np.testing.assert_allclose(got, want, rtol=64 * eps, atol=64 * eps * scale)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # eager's 1/0 on integer samples
@pytest.mark.parametrize("case", all_cases(lambda op: not op.dynamic_shape), ids=case_id)
def test_code_equals_interpreter_equals_eager(case):
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        arrays = _arrays_of(inputs)
        if _data_dependent(op, inputs, attrs):
            continue
        try:
            want = _eager_call(op, inputs, attrs)
        except Exception as e:  # noqa: BLE001  (the graph must fail the same way as eager)
            with pytest.raises(type(e)):
                ir.Interpreter(_module(op, inputs, attrs)).run(*arrays)
            continue
        want = [w.numpy() for w in _flat(want)]
        gm = _module(op, inputs, attrs)
        code = gm.code
        ast.parse(code)
        assert "import eager" in code and "def forward(self" in code
        if len(want) == 1 and gm.graph.find_nodes("call_function", op):
            assert f"eager.{op.name}(" in code and "# opinfo.py:1" in code
        got_i = ir.Interpreter(gm).run(*arrays)
        got_c = gm(*[eager.as_tensor(a) for a in arrays])
        assert len(got_i) == len(got_c) == len(want)
        for gi, gc, w in zip(got_i, got_c, want):
            _same(gi, w, op.eager_impl_rounding)
            _same(gc.numpy(), w, op.eager_impl_rounding)


def test_code_reads_attributes_and_follows_graph_edits():
    g = ir.Graph("affine")
    x = g.placeholder("x", TensorMeta((2, 3), ir.float32))
    w = g.get_attr("layer.weight", TensorMeta((3, 4), ir.float32))
    b = g.get_attr("layer.bias", TensorMeta((4,), ir.float32))
    y = g.call_op(R["add"], (g.call_op(R["matmul"], (x, w)), b))
    g.output((y,))
    rng = np.random.default_rng(0)
    wv, bv = rng.standard_normal((3, 4), np.float32), rng.standard_normal(4, np.float32)
    gm = ir.GraphModule({"layer.weight": wv, "layer.bias": bv}, g)
    assert gm.layer.weight is wv and gm.get_attr("layer.bias") is bv
    assert "eager.as_tensor(self.layer.weight)" in gm.code
    xv = rng.standard_normal((2, 3), np.float32)
    np.testing.assert_allclose(gm(eager.tensor(xv))[0].numpy(), xv @ wv + bv, rtol=1e-6)
    np.testing.assert_allclose(ir.Interpreter(gm).run(xv)[0], xv @ wv + bv, rtol=1e-6)
    with g.inserting_after(y):  # an edit is picked up by the next call, no recompile() needed
        t = g.call_op(R["tanh"], (y,))
    g.output_node.args = ((t,),)
    np.testing.assert_allclose(gm(eager.tensor(xv))[0].numpy(), np.tanh(xv @ wv + bv),
                               rtol=1e-5)


def test_code_literals_and_reserved_names():
    g = ir.Graph("odd")
    a = g.placeholder("self", TensorMeta((3,), ir.float64))
    b = g.placeholder("eager", TensorMeta((3,), ir.float64))
    m = g.call_op(R["maximum"], (a, b))
    c = g.call_op(R["add"], (m, math.inf))
    d = g.call_op(R["cast"], (c,), {"dtype": ir.float32})
    g.output((d, c))
    gm = ir.GraphModule({}, g)
    code = gm.code
    assert "def forward(self, self_, eager_):" in code
    assert "math.inf" in code and "dtype=eager.float32" in code
    av, bv = np.array([1.0, -2.0, 3.0]), np.array([0.0, 5.0, 1.0])
    out = gm(eager.tensor(av), eager.tensor(bv))
    assert out[0].dtype is eager.float32 and np.all(np.isinf(out[1].numpy()))
    with pytest.raises(TypeError, match="cannot write constant"):
        ir.graph_module.literal(object())


def test_code_comment_carries_source_and_traceback_shows_code():
    g = ir.Graph("bad")
    x = g.placeholder("x", TensorMeta((3,), ir.float32))
    g.output((g.call_op(R["exp"], (x,), source="user.py:42"),))
    gm = ir.GraphModule({}, g)
    assert "exp = eager.exp(x)  # user.py:42" in gm.code
    with pytest.raises(TypeError):  # eager rejects a list operand; the frame is our code
        gm([1.0, 2.0])
