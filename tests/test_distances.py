"""Distances: `cdist` (every p, the three compute modes, batched and broadcast batches),
`pdist`, `cosine_similarity`, `pairwise_distance`, `dist`, `nn.CosineSimilarity`,
`nn.PairwiseDistance`: values against scipy.spatial.distance (always) and, with PyTorch
installed, values and gradients against torch in float32 and float64, including PyTorch's
subgradients at zero distance and at ties of the inf-norm, and error types and messages."""

import math

import numpy as np
import pytest
from scipy.spatial import distance as ssd

import eager
import eager.nn as enn
import eager.nn.functional as EF

PS = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf)
MODES = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist",
         "donot_use_mm_for_euclid_dist")


def _scipy(fn, *xs, p):
    if p == 0:
        return fn(*xs, "hamming") * xs[0].shape[-1]
    if math.isinf(p):
        return fn(*xs, "chebyshev")
    return fn(*xs, "minkowski", p=p)


def _data(seed, *shapes, ties=True):
    r = np.random.default_rng(seed)
    out = [r.standard_normal(s) for s in shapes]
    if ties:  # equal rows (zero distance) and equal coordinates
        out[1].reshape(-1, shapes[1][-1])[0] = out[0].reshape(-1, shapes[0][-1])[0]
        out[0].reshape(-1, shapes[0][-1])[1, 0] = out[1].reshape(-1, shapes[1][-1])[1, 0]
    return out


# ---------------------------------------------------------------- against scipy


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("mode", MODES)
def test_cdist_matches_scipy(p, mode):
    a, b = _data(0, (40, 5), (7, 5))
    got = eager.cdist(eager.tensor(a), eager.tensor(b), p, compute_mode=mode).numpy()
    np.testing.assert_allclose(got, _scipy(ssd.cdist, a, b, p=p), rtol=1e-9, atol=1e-7)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    got = eager.cdist(eager.tensor(a32), eager.tensor(b32), p, compute_mode=mode)
    assert got.dtype is eager.float32
    np.testing.assert_allclose(got.numpy(), _scipy(ssd.cdist, a32, b32, p=p), rtol=1e-4,
                               atol=2e-3)


def test_cdist_batched_broadcast_matches_scipy():
    a, b = _data(1, (2, 1, 4, 3), (3, 6, 3))
    got = eager.cdist(eager.tensor(a), eager.tensor(b), 1.5).numpy()
    assert got.shape == (2, 3, 4, 6)
    for i in range(2):
        for j in range(3):
            np.testing.assert_allclose(got[i, j], _scipy(ssd.cdist, a[i, 0], b[j], p=1.5),
                                       rtol=1e-10)


@pytest.mark.parametrize("p", PS)
def test_pdist_matches_scipy(p):
    (x,) = _data(2, (9, 4), ties=False)
    x[5] = x[2]
    got = eager.pdist(eager.tensor(x), p).numpy()
    np.testing.assert_allclose(got, _scipy(ssd.pdist, x, p=p), rtol=1e-10, atol=1e-12)
    assert EF.pdist is eager.pdist


def test_cosine_and_pairwise_match_scipy():
    a, b = _data(3, (6, 5), (6, 5), ties=False)
    cos = eager.cosine_similarity(eager.tensor(a), eager.tensor(b)).numpy()
    np.testing.assert_allclose(cos, [1 - ssd.cosine(u, v) for u, v in zip(a, b)], rtol=1e-10)
    d = EF.pairwise_distance(eager.tensor(a), eager.tensor(b), p=3.0, eps=0.0).numpy()
    np.testing.assert_allclose(d, [ssd.minkowski(u, v, 3) for u, v in zip(a, b)], rtol=1e-10)
    assert abs(eager.dist(eager.tensor(a), eager.tensor(b), 1).item()
               - np.abs(a - b).sum()) < 1e-9


def test_cdist_empty_and_zero_columns():
    z = eager.cdist(eager.zeros(0, 3), eager.ones(4, 3))
    assert tuple(z.shape) == (0, 4)
    z = eager.cdist(eager.zeros(2, 0), eager.ones(4, 0))
    assert tuple(z.shape) == (2, 4) and float(z.abs().sum()) == 0
    assert tuple(eager.pdist(eager.ones(1, 3)).shape) == (0,)


# ---------------------------------------------------------------- against torch


def _torch():
    return pytest.importorskip("torch")


def compare(fe, ft, arrays, seed=0, grad=True):
    torch = _torch()
    es = [eager.tensor(a, requires_grad=grad) for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    out_e, out_t = fe(*es), ft(*ts)
    tol = {"rtol": 1e-4, "atol": 1e-4} if arrays[0].dtype == np.float32 else \
        {"rtol": 1e-9, "atol": 1e-9}
    assert out_e.dtype.name == str(out_t.dtype).removeprefix("torch.")
    assert tuple(out_e.shape) == tuple(out_t.shape)
    np.testing.assert_allclose(out_e.detach().numpy(), out_t.detach().numpy(), **tol)
    if not grad:
        return
    w = np.random.default_rng(seed).standard_normal(tuple(out_t.shape)).astype(arrays[0].dtype)
    (out_e * eager.tensor(w)).sum().backward()
    (out_t * torch.tensor(w)).sum().backward()
    for e, t in zip(es, ts):
        want = np.zeros(e.shape) if t.grad is None else t.grad.numpy()  # (torch: None)
        got = np.zeros(e.shape) if e.grad is None else e.grad.numpy()
        np.testing.assert_allclose(got, want, **tol, equal_nan=True)


@pytest.mark.parametrize("dt", (np.float32, np.float64))
@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("mode", MODES)
def test_cdist_values_and_grads_match_torch(dt, p, mode):
    torch = _torch()
    # coinciding rows: the matmul form's distance is rounding noise (in torch as here), so
    # its ties are tested on exact zeros below
    ties = p != 2 or mode == MODES[2]
    for s1, s2 in (((30, 4), (7, 4)), ((3, 4), (2, 1, 5, 4)), ((2, 3, 4), (2, 26, 4))):
        arrays = [x.astype(dt) for x in _data(4, s1, s2, ties=ties)]
        compare(lambda a, b: eager.cdist(a, b, p, compute_mode=mode),
                lambda a, b: torch.cdist(a, b, p, compute_mode=mode), arrays)


@pytest.mark.parametrize("dt", (np.float32, np.float64))
@pytest.mark.parametrize("p", PS)
def test_pdist_values_and_grads_match_torch(dt, p):
    torch = _torch()
    (x,) = _data(5, (7, 3), ties=False)
    x[4] = x[1]
    x[2, 0] = x[0, 0]
    compare(lambda a: eager.pdist(a, p), lambda a: torch.pdist(a, p), [x.astype(dt)])


def test_cdist_inf_norm_ties_and_zero_distance_grads():
    """Every coordinate that attains the inf-norm gets the full gradient (PyTorch's idist
    rule), and coinciding rows give 0 (not NaN) for every p."""
    torch = _torch()
    a = np.asarray([[1.0, -1.0, 0.5], [0.0, 0.0, 0.0]])
    b = np.asarray([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    for p in PS:
        for mode in MODES:
            compare(lambda x, y, p=p, m=mode: eager.cdist(x, y, p, compute_mode=m),
                    lambda x, y, p=p, m=mode: torch.cdist(x, y, p, compute_mode=m), [a, b])


@pytest.mark.parametrize("dt", (np.float32, np.float64))
def test_cosine_similarity_matches_torch(dt):
    torch = _torch()
    a, b = (x.astype(dt) for x in _data(6, (4, 5, 3), (4, 5, 3), ties=False))
    for dim in (0, 1, -1):
        compare(lambda x, y, d=dim: eager.cosine_similarity(x, y, d),
                lambda x, y, d=dim: torch.cosine_similarity(x, y, d), [a, b])
    compare(lambda x, y: EF.cosine_similarity(x, y), lambda x, y: torch.nn.functional.
            cosine_similarity(x, y), [a, b[:1]])  # broadcasting
    z = np.zeros_like(a)
    z[1] = 1e-10  # below eps: clamped, the norm's own gradient still flows
    compare(lambda x, y: EF.cosine_similarity(x, y, eps=1e-8),
            lambda x, y: torch.nn.functional.cosine_similarity(x, y, eps=1e-8), [a, z])
    compare(lambda x, y: enn.CosineSimilarity(dim=2)(x, y),
            lambda x, y: torch.nn.CosineSimilarity(dim=2)(x, y), [a, b])


@pytest.mark.parametrize("dt", (np.float32, np.float64))
@pytest.mark.parametrize("p", (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, math.inf, -1.0))
def test_pairwise_distance_and_dist_match_torch(dt, p):
    torch = _torch()
    a, b = (x.astype(dt) for x in _data(7, (4, 5), (4, 5), ties=False))
    for keepdim in (False, True):
        compare(lambda x, y, k=keepdim: EF.pairwise_distance(x, y, p, keepdim=k),
                lambda x, y, k=keepdim: torch.nn.functional.pairwise_distance(x, y, p,
                                                                               keepdim=k),
                [a, b])
    compare(lambda x, y: eager.pairwise_distance(x, y, p),
            lambda x, y: torch.pairwise_distance(x, y, p), [a[0], b])  # broadcast
    compare(lambda x, y: enn.PairwiseDistance(p, eps=0.0)(x, y),
            lambda x, y: torch.nn.PairwiseDistance(p, eps=0.0)(x, y), [a, b])
    b2 = b.copy()
    b2[:, 0] = a[:, 0]  # zero entries of the difference: PyTorch's norm subgradient there
    g = p != 0  # (torch's dist backward at p = 0 raises "Expected a proper Tensor")
    for y in (b, b2):
        compare(lambda x, y: eager.dist(x, y, p), lambda x, y: torch.dist(x, y, p), [a, y],
                grad=g)
    compare(lambda x, y: x.dist(y, p), lambda x, y: x.dist(y, p), [a, b[1:2]], grad=g)
    assert repr(enn.PairwiseDistance()) == repr(torch.nn.PairwiseDistance())


def test_distance_errors_match_torch():
    torch = _torch()
    f32, f64 = np.ones((3, 4), np.float32), np.ones((5, 4))
    cases = [
        ("cdist", (f32, f64), {}), ("cdist", (f32.astype(np.int64),) * 2, {}),
        ("cdist", (f32[0], f32), {}), ("cdist", (f32, np.ones((5, 3), np.float32)), {}),
        ("cdist", (f32, f32), {"p": -1.0}), ("cdist", (f32, f32), {"compute_mode": "foo"}),
        ("cdist", (np.ones((2, 3, 4)), np.ones((3, 6, 4))), {}),
        ("pdist", (np.ones((2, 3, 4)),), {}), ("pdist", (f32,), {"p": -1.0}),
        ("pdist", (f32.astype(np.int64),), {}),
        ("cosine_similarity", (f32.astype(np.int64),) * 2, {}),
        ("cosine_similarity", (f32, f32), {"dim": 2}),
        ("dist", (f32.astype(np.int64),) * 2, {}),
    ]
    for name in ("cdist", "pdist"):  # no half-precision kernels
        for dt in ("float16", "bfloat16"):
            with pytest.raises(NotImplementedError) as want:
                getattr(torch, name)(*[torch.ones(3, 4, dtype=getattr(torch, dt))] *
                                     (2 if name == "cdist" else 1))
            with pytest.raises(NotImplementedError, match=str(want.value)):
                getattr(eager, name)(*[eager.ones(3, 4, dtype=getattr(eager, dt))] *
                                     (2 if name == "cdist" else 1))
    for name, arrays, kw in cases:
        with pytest.raises(Exception) as want:
            getattr(torch, name)(*[torch.tensor(a) for a in arrays], **kw)
        with pytest.raises(want.type) as got:
            getattr(eager, name)(*[eager.tensor(a) for a in arrays], **kw)
        if name != "cdist" or "size of tensor" not in str(want.value):
            assert str(got.value) == str(want.value), name


def test_distances_and_losses_compile_as_eager():
    """cdist/pdist (library-call ops in the graph), cosine similarity and the composed losses
    captured by compile: eager's values and gradients."""
    import capture

    def f(a, b, c):
        return (eager.cdist(a, b).sum() + eager.pdist(a, 1.0).sum()
                + EF.triplet_margin_loss(a, b, c) + EF.cosine_similarity(a, b).sum()
                + EF.gaussian_nll_loss(a, b, c.abs() + 0.1)
                + EF.multi_margin_loss(a, c[:, 0].abs().long() % 4)
                + EF.cosine_embedding_loss(a, b, c[:, 0].sign()))

    r = np.random.default_rng(0)
    args = [eager.tensor(r.standard_normal((30, 4)), requires_grad=True) for _ in range(3)]
    want = f(*args)
    gwant = eager.autograd.grad(want, args)
    got = capture.compile(f)(*args)
    ggot = eager.autograd.grad(got, args)
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-12)
    for x, y in zip(ggot, gwant):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("p", (0.5, 1.0, 1.5, 2.0, 3.0))
def test_direct_form_forward_mode_and_double_backward(p):
    """The direct form's backward (`_cdist_backward`, a kernel op) is itself differentiable:
    forward-mode gradcheck and gradgradcheck by finite differences (PyTorch has neither)."""
    r = np.random.default_rng(8)
    a = eager.tensor(r.standard_normal((2, 5, 3)), requires_grad=True)
    b = eager.tensor(r.standard_normal((4, 3)), requires_grad=True)

    def f(x, y):
        return eager.cdist(x, y, p, compute_mode="donot_use_mm_for_euclid_dist")

    assert eager.autograd.gradcheck(f, (a, b), check_forward_ad=True)
    assert eager.autograd.gradgradcheck(f, (a, b))
    assert eager.autograd.gradgradcheck(lambda x: eager.pdist(x, p), (a[0],))
