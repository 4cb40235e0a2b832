"""Regression tests for gaps found by running new tutorial-style PyTorch programs unchanged
under `import eager as torch` (notes/tutorials/progs/p39..p58); each compares with torch."""

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _run_opt(lib, name, kw, shape):
    """Five steps of optimizer `name` on a parameter of `shape` (0-d included) in `lib`."""
    p = lib.nn.Parameter(lib.tensor(np.full(shape, 1.5, np.float32)))
    opt = getattr(lib.optim, name)([p], **kw)
    for i in range(5):
        loss = (p * (2.0 + i)).sum() ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("name,kw", [
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("SGD", dict(lr=0.001, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.001)),
])
def test_optimizer_step_on_0d_parameter(name, kw, shape):
    """A learnable 0-d scalar (CLIP's logit_scale) steps as in torch (Adam's array path wrote
    with out= into numpy scalars: TypeError)."""
    got = _run_opt(eager, name, kw, shape)
    want = _run_opt(torch, name, kw, shape)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)
