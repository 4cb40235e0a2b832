"""Gradients of linalg.qr and linalg.svd (all three outputs) and of unique: against PyTorch
when it is importable, against central finite differences (eager.autograd.gradcheck, reverse
and forward mode) always, for tall, wide, square and batched matrices; PyTorch's errors where
it refuses to differentiate (qr with mode='r', mode='complete' on tall matrices)."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from eager.autograd import gradcheck

try:
    import torch
except ImportError:  # PyTorch is an optional reference
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")
SHAPES = [(4, 3), (3, 4), (3, 3), (2, 5, 3), (2, 3, 5)]


def _distinct_sv(rng, shape):
    """Singular values 1.5, 2.5, ... (distinct, away from 0): the SVD is differentiable."""
    u, _, vh = np.linalg.svd(rng.standard_normal(shape), full_matrices=False)
    s = np.arange(min(shape[-2:]), 0, -1) + 0.5
    return (u * s[..., None, :]) @ vh


def _grads(lib, fn, a, weights):
    """d/dA of sum_i <w_i, fn(A)_i> in `lib` (eager or torch), as numpy."""
    x = lib.tensor(a, requires_grad=True)
    outs = fn(lib, x)
    loss = sum((o * lib.tensor(w)).sum() for o, w in zip(outs, weights))
    loss.backward()
    return x.grad.numpy()


def _compare_with_torch(fn, a, seed=0):
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        shapes = [tuple(o.shape) for o in fn(torch, torch.tensor(a))]
    weights = [rng.standard_normal(s) for s in shapes]
    np.testing.assert_allclose(_grads(eager, fn, a, weights), _grads(torch, fn, a, weights),
                               rtol=1e-9, atol=1e-10)


# ---------------------------------------------------------------- qr


def _qr_cases():
    return [(s, m) for s in SHAPES for m in ("reduced", "complete") if m == "reduced" or
            s[-2] <= s[-1]]


@needs_torch
@pytest.mark.parametrize("shape,mode", _qr_cases())
def test_qr_gradient_matches_torch(shape, mode):
    a = np.random.default_rng(1).standard_normal(shape)
    _compare_with_torch(lambda lib, x: tuple(lib.linalg.qr(x, mode=mode)), a)  # Q and R
    _compare_with_torch(lambda lib, x: (lib.linalg.qr(x, mode=mode).Q,), a, seed=1)
    _compare_with_torch(lambda lib, x: (lib.linalg.qr(x, mode=mode).R,), a, seed=2)


@pytest.mark.parametrize("shape,mode", _qr_cases())
def test_qr_gradcheck(shape, mode):
    a = eager.tensor(np.random.default_rng(2).standard_normal(shape), requires_grad=True)
    assert gradcheck(lambda x: tuple(eager.linalg.qr(x, mode=mode)), (a,), check_forward_ad=True)


def test_qr_backward_refusals_match_torch():
    a = np.random.default_rng(3).standard_normal((4, 3))
    x = eager.tensor(a, requires_grad=True)
    q, r = eager.linalg.qr(x, mode="r")
    np.testing.assert_allclose(np.abs(r.detach().numpy()), np.abs(np.linalg.qr(a)[1]))
    assert tuple(q.shape) == (0,)
    with pytest.raises(RuntimeError, match="depends on Q, which is not computed when mode='r'"):
        r.sum().backward()
    x = eager.tensor(a, requires_grad=True)
    q, r = eager.linalg.qr(x, mode="complete")
    assert tuple(q.shape) == (4, 4) and tuple(r.shape) == (4, 3)
    with pytest.raises(RuntimeError, match="not differentiable when mode='complete' and nrows"):
        q.sum().backward()
    if torch is not None:
        xt = torch.tensor(a, requires_grad=True)
        for mode, out in (("r", 1), ("complete", 0)):
            with pytest.raises(RuntimeError):
                torch.linalg.qr(xt, mode=mode)[out].sum().backward()


# ---------------------------------------------------------------- svd


def _svd_invariant(full_matrices):
    """Outputs of a loss that does not depend on the singular vectors' signs (PyTorch's
    OpInfo checks svd through such functions): |U|, S, |Vh| and U Vh on the first k = min(m, n)
    columns of U (rows of Vh)."""
    def fn(lib, x):
        u, s, vh = lib.linalg.svd(x, full_matrices=full_matrices)
        k = s.shape[-1]
        u, vh = u[..., :k], vh[..., :k, :]
        return u.abs(), s, vh.abs(), u @ vh
    return fn


@needs_torch
@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_svd_gradient_matches_torch(shape, full_matrices):
    a = _distinct_sv(np.random.default_rng(4), shape)
    _compare_with_torch(_svd_invariant(full_matrices), a)


@needs_torch
@pytest.mark.parametrize("shape", [(4, 2), (2, 4)])
def test_svd_full_matrices_ignores_the_complement_like_torch(shape):
    """With full_matrices, U's columns (Vh's rows) past k are not determined by A: PyTorch
    narrows their gradient away; |U| and |Vh| in full are sign-invariant losses."""
    a = _distinct_sv(np.random.default_rng(5), shape)

    def fn(lib, x):
        u, _, vh = lib.linalg.svd(x, full_matrices=True)
        return u.abs(), vh.abs()

    _compare_with_torch(fn, a)
    k = min(shape)

    def narrowed(lib, x):
        u, _, vh = lib.linalg.svd(x, full_matrices=True)
        return u[..., :k].abs(), vh[..., :k, :].abs()

    rng = np.random.default_rng(6)
    w = [rng.standard_normal((shape[0], shape[0])), rng.standard_normal((shape[1], shape[1]))]
    full = _grads(eager, fn, a, w)
    part = _grads(eager, narrowed, a, [w[0][:, :k], w[1][:k]])
    np.testing.assert_allclose(full, part, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_svd_gradcheck(shape):
    """Finite differences through U and Vh themselves (numpy's LAPACK result is locally
    continuous at distinct singular values), and through sign-invariant functions."""
    a = eager.tensor(_distinct_sv(np.random.default_rng(7), shape), requires_grad=True)
    assert gradcheck(lambda x: tuple(eager.linalg.svd(x, full_matrices=False)), (a,),
                     check_forward_ad=True)
    assert gradcheck(lambda x: _svd_invariant(True)(eager, x), (a,))


# ---------------------------------------------------------------- compiled (AOT) backward


def test_compiled_qr_svd_gradients_equal_eager():
    def f(a, w):
        q, r = eager.linalg.qr(a)
        u, s, vh = eager.linalg.svd(a, full_matrices=False)
        return ((q * w).sum() + (r * r).sum() + (u.abs() * w).sum() + s.sum()
                + (vh * vh.sum(-1, True)).sum())

    rng = np.random.default_rng(8)
    a0 = _distinct_sv(rng, (4, 3))
    w = eager.tensor(rng.standard_normal((4, 3)))
    ref = eager.tensor(a0, requires_grad=True)
    f(ref, w).backward()
    got = eager.tensor(a0, requires_grad=True)
    step = capture.compile(f, backend="llvm")
    step(got, w).backward()
    np.testing.assert_allclose(got.grad.numpy(), ref.grad.numpy(), rtol=1e-10, atol=1e-12)
    assert step.__wick_compiled__.entries[0].runner.aot is not None


# ---------------------------------------------------------------- unique


@pytest.mark.parametrize("dim", [None, 0, 1])
def test_unique_gradcheck_at_distinct_values(dim):
    """Where entries (slices) are distinct, unique is a permutation: finite differences."""
    a = np.random.default_rng(9).standard_normal((4, 3))
    x = eager.tensor(a, requires_grad=True)
    assert gradcheck(lambda t: eager.unique(t, dim=dim), (x,), check_forward_ad=True)


@needs_torch
def test_unique_gradient_is_sorts_at_distinct_values():
    """PyTorch has no derivative for unique (NotImplementedError); at distinct values unique is
    sort, whose PyTorch gradient wick's must equal."""
    a = np.random.default_rng(10).standard_normal((3, 4))
    w = np.random.default_rng(11).standard_normal(12)
    got = _grads(eager, lambda lib, x: (lib.unique(x),), a, [w])
    want = _grads(torch, lambda lib, x: (lib.sort(x.flatten()).values,), a, [w])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-15)
    with pytest.raises(NotImplementedError):
        torch.unique(torch.tensor(a, requires_grad=True)).sum().backward()


def test_unique_gradient_is_shared_among_equal_entries():
    """At ties: the gradient along moves that keep equal entries equal (shared evenly, as
    amax shares among ties): d/dt of the loss at x + t * v for v constant on each group."""
    a = np.array([[2.0, 1.0, 2.0], [3.0, 1.0, 2.0]])
    w = np.array([1.0, 10.0, 100.0])  # unique values 1, 2, 3
    x = eager.tensor(a, requires_grad=True)
    (eager.unique(x) * eager.tensor(w)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[w[1] / 3, w[0] / 2, w[1] / 3],
                                                [w[2], w[0] / 2, w[1] / 3]])
    rows = np.array([[1.0, 2.0], [0.0, 5.0], [1.0, 2.0]])
    x = eager.tensor(rows, requires_grad=True)
    wr = np.array([[1.0, 2.0], [10.0, 20.0]])  # unique rows [0, 5], [1, 2]
    (eager.unique(x, dim=0) * eager.tensor(wr)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[5.0, 10.0], [1.0, 2.0], [5.0, 10.0]])
    v = np.array([[1.0, 2.0], [0.5, -1.0], [1.0, 2.0]])  # keeps the two equal rows equal
    loss = lambda r: float((np.unique(r, axis=0) * wr).sum())
    fd = (loss(rows + 1e-6 * v) - loss(rows - 1e-6 * v)) / 2e-6
    np.testing.assert_allclose((x.grad.numpy() * v).sum(), fd, rtol=1e-8)
