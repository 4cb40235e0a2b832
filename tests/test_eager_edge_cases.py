"""Eager edge cases of the registry (issue 13, item 8), against PyTorch: 0-d tensors with dim 0
or -1 (softmax, logsumexp, var, max(dim), cumsum, argmax, transpose...), compiled as well, and
`where` refusing a condition that is not bool. Values, shapes, dtypes and error types as torch
2.x gives them."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager

torch = pytest.importorskip("torch")

ZERO_D = [
    ("softmax", lambda m, x: m.softmax(x, 0)),
    ("softmax-1", lambda m, x: m.softmax(x, -1)),
    ("log_softmax", lambda m, x: m.log_softmax(x, 0)),
    ("logsumexp", lambda m, x: m.logsumexp(x, 0)),
    ("logsumexp_keepdim", lambda m, x: m.logsumexp(x, -1, keepdim=True)),
    ("var", lambda m, x: m.var(x)),
    ("var0", lambda m, x: m.var(x, 0)),
    ("std0", lambda m, x: m.std(x, 0)),
    ("var_correction0", lambda m, x: m.var(x, 0, correction=0)),
    ("max0", lambda m, x: m.max(x, 0)[0]),
    ("max0_indices", lambda m, x: m.max(x, 0)[1]),
    ("min0_keepdim", lambda m, x: m.min(x, -1, keepdim=True)[0]),
    ("argmax0", lambda m, x: m.argmax(x, 0)),
    ("argmax0_keepdim", lambda m, x: m.argmax(x, 0, keepdim=True)),
    ("cumsum", lambda m, x: m.cumsum(x, 0)),
    ("cumprod", lambda m, x: m.cumprod(x, -1)),
    ("cummax", lambda m, x: m.cummax(x, 0)[0]),
    ("median0", lambda m, x: m.median(x, 0)[0]),
    ("sum0", lambda m, x: m.sum(x, 0)),
    ("mean0_keepdim", lambda m, x: m.mean(x, 0, keepdim=True)),
    ("amax0", lambda m, x: m.amax(x, -1)),
    ("all0", lambda m, x: m.all(x, 0)),
    ("transpose", lambda m, x: m.transpose(x, 0, -1)),
]


def _result(m, fn, v):
    try:
        r = fn(m, m.tensor(v))
    except Exception as e:  # noqa: BLE001
        return ("raises", type(e).__name__)
    return ("ok", tuple(r.shape), str(r.dtype).split(".")[-1],
            np.asarray(r.detach().tolist(), dtype=np.float64))


def _same(a, b):
    if a[0] != b[0] or a[:3] != b[:3]:
        return False
    return a[0] == "raises" or np.allclose(a[3], b[3], equal_nan=True)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name,fn", ZERO_D, ids=[n for n, _ in ZERO_D])
@pytest.mark.parametrize("v", [2.5, -0.0])
def test_zero_d_dim_ops_match_torch(name, fn, v):
    got, want = _result(eager, fn, v), _result(torch, fn, v)
    assert want[0] == "ok"
    assert _same(got, want), (got, want)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("backend", ["eager", "llvm"])
@pytest.mark.parametrize("name,fn", [c for c in ZERO_D if c[0] in (
    "softmax", "logsumexp", "var0", "max0", "cumsum", "argmax0", "sum0", "transpose")],
    ids=lambda c: c if isinstance(c, str) else "")
def test_zero_d_dim_ops_compiled(name, fn, backend):
    x = eager.tensor(1.5)
    want = fn(eager, x)
    got = capture.compile(lambda t: fn(eager, t), backend=backend)(x)
    assert tuple(got.shape) == tuple(want.shape) == ()
    assert got.dtype is want.dtype
    np.testing.assert_allclose(got.numpy(), want.numpy(), equal_nan=True)


def test_cumsum_zero_d_gradient_compiled():
    """The compiled backward of cumsum on a 0-d tensor (was: shape (1,) saved for a ())."""
    def f(x):
        return (x.cumsum(0) * 3.0).exp()
    xs = [eager.tensor(0.5, requires_grad=True) for _ in range(2)]
    f(xs[0]).backward()
    capture.compile(f, backend="llvm")(xs[1]).backward()
    assert xs[0].grad is not None and xs[1].grad is not None
    assert tuple(xs[1].grad.shape) == ()
    np.testing.assert_allclose(xs[1].grad.numpy(), xs[0].grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float32", "int64", "int32"])
def test_where_refuses_a_non_bool_condition(dtype):
    c = np.array([1, 0, 2])
    with pytest.raises(RuntimeError) as theirs:
        torch.where(torch.tensor(c, dtype=getattr(torch, dtype)), torch.ones(3), torch.zeros(3))
    with pytest.raises(RuntimeError, match="boolean tensor") as ours:
        eager.where(eager.tensor(c, dtype=getattr(eager, dtype)), eager.ones(3), eager.zeros(3))
    assert str(theirs.value).split(",")[0] == str(ours.value).split(",")[0]
    f = capture.compile(lambda c, x: eager.where(c, x, 0.0), backend="llvm")
    with pytest.raises(RuntimeError):
        f(eager.tensor(c, dtype=getattr(eager, dtype)), eager.ones(3))


def test_where_bool_and_uint8_condition_still_work():
    x, y = np.array([1.0, 2.0, 3.0]), np.array([-1.0, -2.0, -3.0])
    for cdt in ("bool", "uint8"):
        c = np.array([1, 0, 1])
        got = eager.where(eager.tensor(c, dtype=getattr(eager, cdt)), eager.tensor(x),
                          eager.tensor(y))
        np.testing.assert_array_equal(got.numpy(), np.where(c.astype(bool), x, y))
