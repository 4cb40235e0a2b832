"""Reductions of 0-d tensors inside compiled graphs: their users must see the reduced value.
(A fused kernel over a 0-d space had no reduction loop, so a user of the reduction read the
accumulator before it was updated; such reductions now run as library calls.) Compiled
results are compared with eager's, values and dtypes."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager

VALUES = [np.float32(2.5), np.int64(3), np.bool_(True), np.float64(-1.25)]
EXPRS = {
    "sum_then_mul": lambda x: eager.sum(x) * 2,
    "amax_then_mul": lambda x: eager.amax(x) * 2,
    "mean_then_mul": lambda x: eager.mean(x.float()) * 3,
    "softmax_by_hand": lambda x: (x.float() - eager.amax(x.float())).exp()
    / eager.sum((x.float() - eager.amax(x.float())).exp()),
    "divide_by_sum": lambda x: x.float().exp() / eager.sum(x.float()),
}


@pytest.mark.parametrize("name", sorted(EXPRS))
@pytest.mark.parametrize("value", VALUES, ids=lambda v: type(v).__name__)
def test_compiled_equals_eager(name, value):
    fn = EXPRS[name]
    x = eager.tensor(np.asarray(value))
    want = fn(x)
    got = capture.compile(fn, backend="llvm")(x)
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6)  # (vector exp: 1 ulp)


def test_fusion_plan_names_the_reason():
    from codegen.partition import partition

    g = capture.explain(lambda x: eager.sum(x) * 2)(eager.tensor(2.0))
    plan = partition(g.graphs[0].graph if hasattr(g.graphs[0], "graph") else g.graphs[0])
    assert "reduction of a 0-d tensor" in plan.format()
