"""The eager-vs-compiled matrix: every registry op x dtype, captured by `capture.compile` and
run by each backend (the IR interpreter and LLVM), against eager and the op's numpy ref."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from ir import dtypes as D
from opinfo import all_cases, case_id, samples

BACKENDS = ["eager", "llvm"]
TOL = {D.float32: dict(rtol=1e-5, atol=1e-6), D.float64: dict(rtol=1e-12, atol=1e-12)}


def make_fn(op, inputs, attrs):
    """`def f(a, b): return eager.<op>(a, b, **attrs)` with tensors as arguments and Python
    numbers as constants, built from source so that its bytecode is ordinary Python."""
    params, call = [], []
    for i, x in enumerate(inputs):
        if isinstance(x, np.ndarray):
            params.append(f"a{i}")
            call.append(f"a{i}")
        else:
            call.append(repr(x))
    call += [f"{k}={v!r}" for k, v in attrs.items()]
    src = f"def f({', '.join(params)}):\n    return eager.{op.name}({', '.join(call)})\n"
    ns = {"eager": eager}
    exec(compile(src, f"<matrix {op.name}>", "exec"), ns)
    return ns["f"]


def _leaves(x):
    if isinstance(x, eager.Tensor):
        return [x]
    if isinstance(x, (tuple, list)):
        return [t for item in x for t in _leaves(item)]
    return [x]


def _assert_same(got, want):
    g, w = _leaves(got), _leaves(want)
    assert len(g) == len(w)
    for a, b in zip(g, w):
        if not isinstance(b, eager.Tensor):
            assert a == b
            continue
        assert a.dtype is b.dtype and a.shape == b.shape, (a.dtype, b.dtype, a.shape, b.shape)
        tol = TOL.get(a.dtype, dict(rtol=0, atol=0))
        np.testing.assert_allclose(a.numpy(), b.numpy(), **tol, equal_nan=True)


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", all_cases(), ids=case_id)
def test_compiled_matches_eager_and_ref(case, backend):
    """Every op's samples: the compiled function returns what eager returns (values, dtypes,
    shapes, tuples), or raises the same error type; single outputs also match the numpy ref.
    Ops whose output shape depends on the data are captured with a graph break around them."""
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        fn = make_fn(op, inputs, attrs)
        args = [eager.from_numpy(x) for x in inputs if isinstance(x, np.ndarray)]
        compiled = capture.compile(fn, backend=backend, fullgraph=True)
        try:
            want = fn(*args)
        except Exception as e:  # an invalid sample for this op: compiled must raise the same
            with pytest.raises(type(e)):
                compiled(*args)
            continue
        try:
            got = compiled(*args)
        except capture.Unsupported as e:  # only data-dependent output shapes may break
            assert "data-dependent output shape" in str(e), e
            got = capture.compile(fn, backend=backend)(*args)
        _assert_same(got, want)
        if isinstance(got, eager.Tensor) and op.ref is not None:
            ref = np.asarray(op.ref(*inputs, **attrs))
            if ref.shape == tuple(got.shape):
                tol = TOL.get(got.dtype, dict(rtol=0, atol=0))
                np.testing.assert_allclose(
                    got.numpy(), ref.astype(got.numpy().dtype),
                    **{k: max(v, 1e-6) for k, v in tol.items()} if tol else {}, equal_nan=True)
