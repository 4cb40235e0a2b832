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


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", all_cases(), ids=case_id)
def test_compiled_matches_eager_and_ref(case, backend):
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        fn = make_fn(op, inputs, attrs)
        args = [eager.from_numpy(x) for x in inputs if isinstance(x, np.ndarray)]
        want = fn(*args)
        compiled = capture.compile(fn, backend=backend, fullgraph=True)
        got = compiled(*args)
        assert got.dtype is want.dtype and got.shape == want.shape
        tol = TOL.get(got.dtype, dict(rtol=0, atol=0))
        np.testing.assert_allclose(got.numpy(), want.numpy(), **tol, equal_nan=True)
        ref = np.asarray(op.ref(*inputs, **attrs))
        np.testing.assert_allclose(got.numpy(), ref.astype(got.numpy().dtype),
                                   **{k: max(v, 1e-6) for k, v in tol.items()} if tol else {},
                                   equal_nan=True)
