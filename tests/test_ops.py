"""The registry matrix in eager: every op x dtype against its numpy/scipy reference and against
PyTorch when installed; every differentiable op through gradcheck (float64, central finite
differences); type promotion against torch.result_type."""

from __future__ import annotations

import numpy as np
import pytest

import eager
import ir
from ir import dtypes as D
from opinfo import all_cases, case_id, samples, torch_call

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

TOL = {D.float32: dict(rtol=2e-5, atol=2e-6), D.float64: dict(rtol=1e-12, atol=1e-12)}


def run_eager(op, inputs, attrs):
    args = [eager.from_numpy(x) if isinstance(x, np.ndarray) else x for x in inputs]
    return getattr(eager, op.name)(*args, **attrs)


def check_close(got, want, dtype):
    tol = TOL.get(dtype, dict(rtol=0, atol=0))
    np.testing.assert_allclose(np.asarray(got, dtype=np.float64) if got.dtype != bool else got,
                               want, **tol, equal_nan=True)


@pytest.mark.parametrize("case", all_cases(), ids=case_id)
def test_eager_matches_reference(case):
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        out = run_eager(op, inputs, attrs)
        ref = np.asarray(op.ref(*inputs, **attrs))
        assert out.shape == ref.shape, (op.name, out.shape, ref.shape)
        check_close(out.numpy(), ref.astype(out.numpy().dtype) if ref.dtype != bool else ref,
                    out.dtype)


@pytest.mark.skipif(torch is None, reason="PyTorch (an optional reference) is not installed")
@pytest.mark.parametrize("case", all_cases(), ids=case_id)
def test_eager_matches_torch(case):
    op, dtype = case
    for inputs, attrs in samples(op, dtype):
        out = run_eager(op, inputs, attrs)
        want = torch_call(torch, op, inputs, attrs)
        assert out.dtype.name == str(want.dtype).removeprefix("torch."), (op.name, inputs, attrs)
        assert tuple(out.shape) == tuple(want.shape)
        check_close(out.numpy(), want.numpy(), out.dtype)


def _differentiable(op):
    return op.differentiable and op.name not in ("cast",)


def _numeric_grad(f, arrays, i, eps=1e-6):
    x = arrays[i]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        hi = f(arrays)
        x[idx] = old - eps
        lo = f(arrays)
        x[idx] = old
        g[idx] = (hi - lo) / (2 * eps)
    return g


@pytest.mark.parametrize("op", [o for o in ir.REGISTRY.values() if _differentiable(o)],
                         ids=lambda o: o.name)
def test_gradcheck(op):
    """Analytic gradients (registry backward rules) against central finite differences."""
    for inputs, attrs in samples(op, D.float64, seed=1):
        inputs = [x.copy() if isinstance(x, np.ndarray) else x for x in inputs]
        diff = [i for i, x in enumerate(inputs) if isinstance(x, np.ndarray)
                and x.dtype == np.float64]
        w = None

        def f(arrays):
            nonlocal w
            out = run_eager(op, arrays, attrs).numpy()
            if w is None:
                w = np.random.default_rng(2).standard_normal(out.shape)
            return float((out * w).sum())

        f(inputs)
        leaves = [eager.tensor(x, requires_grad=True) if i in diff else x
                  for i, x in enumerate(inputs)]
        args = [x if not isinstance(x, np.ndarray) else eager.from_numpy(x) for x in leaves]
        out = getattr(eager, op.name)(*args, **attrs)
        grads = eager.autograd.grad((out * eager.from_numpy(w)).sum(),
                                    [leaves[i] for i in diff])
        for i, g in zip(diff, grads):
            num = _numeric_grad(f, inputs, i)
            np.testing.assert_allclose(g.numpy(), num, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{op.name} d/d(operand {i}) {attrs}")


@pytest.mark.skipif(torch is None, reason="PyTorch (an optional reference) is not installed")
def test_result_type_matches_torch():
    """Promotion of (tensor, tensor-or-scalar) pairs against torch.result_type."""
    from hypothesis import given, settings, strategies as st

    tensor = st.tuples(st.sampled_from([D.bool_, D.int64, D.float32, D.float64]),
                       st.integers(0, 2))

    @settings(max_examples=300, deadline=None)
    @given(tensor, st.one_of(tensor, st.sampled_from([True, 3, 2.5])))
    def check(a, b):
        def as_torch(o):
            if not isinstance(o, tuple):
                return o
            return torch.zeros((1,) * o[1], dtype=getattr(torch, o[0].name))

        want = torch.result_type(as_torch(a), as_torch(b))
        assert D.result_type(a, b).name == str(want).removeprefix("torch."), (a, b)

    check()


def test_promotion_examples():
    """PyTorch's documented promotion examples (torch.result_type docs, type promotion notes)."""
    i = eager.tensor([1, 2])
    f = eager.tensor([1.0, 2.0])
    d = eager.tensor([1.0], dtype=eager.float64)
    assert (i + 2.5).dtype is eager.float32          # int tensor + float scalar -> default float
    assert (i / 2).dtype is eager.float32            # integer true division
    assert (f + eager.tensor(1.0, dtype=eager.float64)).dtype is eager.float32  # zero-dim
    assert (f + d).dtype is eager.float64
    assert (i + True).dtype is eager.int64
    assert (i > 1).dtype is eager.bool
    assert eager.tensor([True]).sum().dtype is eager.int64


def test_shape_error_names_both_shapes():
    with pytest.raises(RuntimeError, match=r"\(2, 3\) and \(4,\)"):
        eager.ones(2, 3) + eager.ones(4)
    with pytest.raises(RuntimeError, match="2x3 and 4x5"):
        eager.ones(2, 3) @ eager.ones(4, 5)
    with pytest.raises(IndexError, match="Dimension out of range"):
        eager.ones(2, 3).sum(dim=2)
    with pytest.raises(TypeError, match="must be Tensor or number, not list"):
        eager.add(eager.ones(2), [1, 2])
