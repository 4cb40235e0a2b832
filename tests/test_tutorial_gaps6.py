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


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), ()])
def test_where_condition_only_is_nonzero_as_tuple(shape):
    """`torch.where(cond)`: PyTorch's one-argument overload, the index tuple of
    `nonzero(cond, as_tuple=True)` (it raised TypeError: missing 'input')."""
    a = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    got = eager.where(eager.tensor(a) > 0)
    want = torch.where(torch.tensor(a) > 0)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == eager.int64
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    kw = eager.where(condition=eager.tensor(a) > 0)
    assert [k.tolist() for k in kw] == [w.tolist() for w in want]
    x = eager.tensor(a)
    np.testing.assert_array_equal(eager.where(x > 0, x, 0.0).numpy(),
                                  torch.where(torch.tensor(a) > 0, torch.tensor(a), 0.0).numpy())
