"""A compiled function whose inputs require grad runs a compiled forward and a compiled, fused
backward (AOT autograd); its gradients equal eager's."""

from __future__ import annotations

import numpy as np

import capture
import eager


def mlp_loss(x, w1, b1, w2, b2, onehot):
    h = eager.nn.functional.gelu(x @ w1 + b1, approximate="tanh")
    logits = h @ w2 + b2
    return -(onehot * eager.log_softmax(logits, dim=-1)).sum() / x.shape[0]


def _params(rng, dtype):
    shapes = [(16, 8), (8,), (8, 4), (4,)]
    return [eager.tensor(rng.standard_normal(s) * 0.5, dtype=dtype, requires_grad=True)
            for s in shapes]


def test_compiled_training_step_gradients_equal_eager():
    rng = np.random.default_rng(0)
    x = eager.tensor(rng.standard_normal((32, 16)), dtype=eager.float64)
    onehot = eager.tensor(np.eye(4)[rng.integers(0, 4, 32)], dtype=eager.float64)
    ref = _params(np.random.default_rng(1), eager.float64)
    got = _params(np.random.default_rng(1), eager.float64)
    mlp_loss(x, *ref, onehot).backward()
    step = capture.compile(mlp_loss, backend="llvm")
    for _ in range(2):  # second call: a cache hit through the same compiled backward
        for p in got:
            p.grad = None
        loss = step(x, *got, onehot)
        loss.backward()
    for a, b in zip(got, ref):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
    entry = step.__wick_compiled__.entries[0]
    aot = entry.runner.aot
    assert aot is not None and aot.plans, "the compiled backward path was not used"
    plan = next(iter(aot.plans.values()))
    assert any(n.op == "call_function" for n in plan.bwd_graph.nodes)
