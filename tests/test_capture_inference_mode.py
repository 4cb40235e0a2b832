"""A compiled function called inside the user's `inference_mode()` returns inference tensors on
every call, as eager does (the cache-hit path built its outputs without eager's marking, so
from the second call on `is_inference()` was False and such outputs could be saved for
backward), and normal tensors again once the mode is left."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def _mlp():
    eager.manual_seed(0)
    return eager.nn.Sequential(eager.nn.Linear(4, 8), eager.nn.GELU(), eager.nn.Linear(8, 2))


@pytest.mark.parametrize("kind", ["function", "module"])
def test_outputs_are_inference_tensors_on_every_call(kind):
    model = _mlp()
    fn = model if kind == "module" else (lambda x: (x * 2 + 1).tanh())
    compiled = capture.compile(fn)
    x = eager.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    for _ in range(3):
        with eager.inference_mode():
            got, want = compiled(x), fn(x)
            assert got.is_inference() and want.is_inference()
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)
        outside, ref = compiled(x), fn(x)
        assert not outside.is_inference() and not ref.is_inference()


def test_inference_output_cannot_be_saved_for_backward_after_hits():
    compiled = capture.compile(lambda x: x.exp() + 1)
    x = eager.randn(5)
    for _ in range(3):
        with eager.inference_mode():
            y = compiled(x)
    w = eager.randn(5, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (y * w).sum()
