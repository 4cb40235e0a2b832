"""The losses of eager/nn/losses_extra.py and loss_modules.py (CTC, Gaussian/Poisson NLL,
margin and embedding losses, triplet, linear cross entropy, adaptive softmax, gumbel softmax)
against PyTorch: values and gradients of every differentiable operand in float32 and float64,
every reduction, batched and unbatched shapes, and error types and messages."""

import math
import warnings

import numpy as np
import pytest

import eager
import eager.nn as enn
import eager.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional

REDUCTIONS = ("none", "mean", "sum")
DTYPES = (np.float32, np.float64)


def _pair(x, grad):
    """(eager tensor, torch tensor) of numpy array `x` (leaves requiring grad if `grad`)."""
    if not isinstance(x, np.ndarray):
        return x, x
    g = grad and x.dtype.kind == "f"
    return eager.tensor(x, requires_grad=g), torch.tensor(x, requires_grad=g)


def compare(fw, ft, args, kwargs=None, grad=True, seed=0):
    """fw(*eager args) against ft(*torch args): value, then the gradients of sum(out * w)
    with respect to the floating operands (`grad`: True, or the positions of those that
    require grad)."""
    kwargs = kwargs or {}
    pairs = [_pair(a, grad is True or i in grad) for i, a in enumerate(args)]
    kw_pairs = {k: _pair(v, False) for k, v in kwargs.items()}
    ours = fw(*[p[0] for p in pairs], **{k: v[0] for k, v in kw_pairs.items()})
    ref = ft(*[p[1] for p in pairs], **{k: v[1] for k, v in kw_pairs.items()})
    ours_t = ours if isinstance(ours, eager.Tensor) else ours[0]
    ref_t = ref if isinstance(ref, torch.Tensor) else ref[0]
    dt = ref_t.detach().numpy().dtype
    tol = {"rtol": 2e-4, "atol": 2e-5} if dt == np.float32 else {"rtol": 1e-7, "atol": 1e-9}
    assert ours_t.dtype.name == str(ref_t.dtype).removeprefix("torch.")
    np.testing.assert_allclose(ours_t.detach().numpy(), ref_t.detach().numpy(), **tol,
                               equal_nan=True)
    if not grad or not ref_t.requires_grad:
        return
    w = np.random.default_rng(seed).standard_normal(tuple(ref_t.shape)).astype(dt)
    (ours_t * eager.tensor(w)).sum().backward()
    (ref_t * torch.tensor(w)).sum().backward()
    for (e, t) in pairs:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            assert (e.grad is None) == (t.grad is None)
            if t.grad is not None:
                np.testing.assert_allclose(e.grad.numpy(), t.grad.numpy(), **tol,
                                           equal_nan=True)


def raises_like(fw, ft, args, kwargs=None):
    """Both raise, the same exception type with the same message."""
    kwargs = kwargs or {}
    with pytest.raises(Exception) as want:
        ft(*[torch.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    with pytest.raises(want.type) as got:
        fw(*[eager.tensor(a) if isinstance(a, np.ndarray) else a for a in args], **kwargs)
    assert str(got.value).strip() == str(want.value).strip().replace("torch.Size", "eager.Size")


def rng_(seed=0):
    return np.random.default_rng(seed)


def signs(rng, shape):
    return np.where(rng.random(shape) < 0.5, -1.0, 1.0)


# ---------------------------------------------------------------- pointwise and embedding


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses(dt, reduction):
    r = rng_()
    x, y = r.standard_normal((4, 5)).astype(dt), r.standard_normal((4, 5)).astype(dt)
    s = signs(r, (4, 5)).astype(dt)
    kw = {"reduction": reduction}
    compare(EF.soft_margin_loss, TF.soft_margin_loss, [x, s], kw, grad=(0,))
    compare(EF.hinge_embedding_loss, TF.hinge_embedding_loss, [x, s], {**kw, "margin": 0.5})
    compare(EF.margin_ranking_loss, TF.margin_ranking_loss, [x, y, s], {**kw, "margin": 0.3})
    compare(EF.margin_ranking_loss, TF.margin_ranking_loss, [x[0], y[0], s[0]], kw)
    for log_input in (True, False):
        for full in (True, False):
            lam = np.abs(x) + 0.1 if not log_input else x
            tgt = np.round(np.abs(y) * 3).astype(dt)
            compare(EF.poisson_nll_loss, TF.poisson_nll_loss, [lam, tgt],
                    {**kw, "log_input": log_input, "full": full})
    var = (np.abs(r.standard_normal((4, 5))) + 0.05).astype(dt)
    var[0, 0] = 1e-9  # clamped at eps, the gradient flows as PyTorch's
    for v in (var, var[:, :1], var[:, 0], 0.7):
        for full in (False, True):
            compare(EF.gaussian_nll_loss, TF.gaussian_nll_loss, [x, y, v],
                    {"reduction": reduction, "full": full})
    compare(EF.multilabel_soft_margin_loss, TF.multilabel_soft_margin_loss,
            [x, (y > 0).astype(dt)], kw)
    compare(EF.multilabel_soft_margin_loss, TF.multilabel_soft_margin_loss,
            [x, (y > 0).astype(dt), np.abs(y[0])], kw)
    compare(EF.multilabel_soft_margin_loss, TF.multilabel_soft_margin_loss, [x[0], s[0]], kw)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_embedding_losses(dt, reduction):
    r = rng_(1)
    a, b, c = (r.standard_normal((5, 6)).astype(dt) for _ in range(3))
    t = signs(r, (5,)).astype(dt)
    kw = {"reduction": reduction}
    for margin in (0.0, 0.3, -0.2):
        compare(EF.cosine_embedding_loss, TF.cosine_embedding_loss, [a, b, t],
                {**kw, "margin": margin})
    compare(EF.cosine_embedding_loss, TF.cosine_embedding_loss,
            [a[0], b[0], np.asarray(-1.0, dt)], kw)
    compare(EF.cosine_embedding_loss, TF.cosine_embedding_loss,
            [a, np.zeros_like(b), t], kw)  # zero vectors: the 1e-12 guard
    for p in (1.0, 2.0, 3.0, 0.5, math.inf):
        for swap in (False, True):
            compare(EF.triplet_margin_loss, TF.triplet_margin_loss, [a, b, c],
                    {**kw, "p": p, "swap": swap, "margin": 2.0})
    compare(EF.triplet_margin_loss, TF.triplet_margin_loss, [a[0], b[0], c[0]], kw)
    for swap in (False, True):
        compare(EF.triplet_margin_with_distance_loss, TF.triplet_margin_with_distance_loss,
                [a, b, c], {**kw, "swap": swap, "margin": 1.5})
    compare(lambda *x, **k: EF.triplet_margin_with_distance_loss(
        *x, distance_function=lambda u, v: 1 - EF.cosine_similarity(u, v), **k),
        lambda *x, **k: TF.triplet_margin_with_distance_loss(
        *x, distance_function=lambda u, v: 1 - TF.cosine_similarity(u, v), **k), [a, b, c], kw)


# ---------------------------------------------------------------- class-index margin losses


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss(dt, reduction):
    r = rng_(2)
    x = r.standard_normal((6, 4)).astype(dt)
    y = r.integers(0, 4, 6)
    w = (r.random(4) + 0.5).astype(dt)
    for p in (1, 2):
        for margin in (1.0, 0.5):
            for weight in (None, w):
                compare(EF.multi_margin_loss, TF.multi_margin_loss, [x, y],
                        {"p": p, "margin": margin, "weight": None if weight is None else
                         weight, "reduction": reduction})
    compare(EF.multi_margin_loss, TF.multi_margin_loss, [x[0], np.asarray(2)],
            {"reduction": reduction})
    # a hinge exactly at its corner: no gradient there (the kernel's z > 0)
    xc = np.zeros((2, 3), dt)
    compare(EF.multi_margin_loss, TF.multi_margin_loss, [xc, np.asarray([0, 1])],
            {"margin": 0.0, "reduction": reduction})


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin_loss(dt, reduction):
    r = rng_(3)
    x = r.standard_normal((4, 5)).astype(dt)
    y = np.asarray([[3, 0, -1, 1, 2], [1, 2, 4, 0, 3], [-1, 1, 1, 1, 1], [2, 2, -1, 0, 0]])
    compare(EF.multilabel_margin_loss, TF.multilabel_margin_loss, [x, y],
            {"reduction": reduction})
    compare(EF.multilabel_margin_loss, TF.multilabel_margin_loss, [x[0], y[0]],
            {"reduction": reduction})


def test_margin_loss_errors():
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    raises_like(EF.multi_margin_loss, TF.multi_margin_loss, [x, np.asarray([0, 5, 1])])
    raises_like(EF.multi_margin_loss, TF.multi_margin_loss, [x, np.asarray([0, 1])])
    raises_like(EF.multi_margin_loss, TF.multi_margin_loss,
                [x, np.asarray([0, 1, 2], np.int32)])
    raises_like(EF.multi_margin_loss, TF.multi_margin_loss, [x, np.asarray([0, 1, 2])],
                {"p": 3})
    raises_like(EF.multi_margin_loss, TF.multi_margin_loss,
                [x, np.asarray([0, 1, 2]), 1, 1.0, np.ones(3, np.float32)])
    raises_like(EF.multi_margin_loss, TF.multi_margin_loss,
                [np.zeros((2, 3, 4), np.float32), np.asarray([2])])
    raises_like(EF.multilabel_margin_loss, TF.multilabel_margin_loss,
                [x, np.asarray([[0, 5, -1, 0]] * 3)])
    raises_like(EF.multilabel_margin_loss, TF.multilabel_margin_loss,
                [x, np.asarray([[0, 1, -1, 0]] * 2)])
    raises_like(EF.margin_ranking_loss, TF.margin_ranking_loss, [x, x, np.ones(3, np.float32)])
    raises_like(EF.cosine_embedding_loss, TF.cosine_embedding_loss,
                [x, x, np.ones((3, 1), np.float32)])
    raises_like(EF.cosine_embedding_loss, TF.cosine_embedding_loss,
                [x, x, np.ones((), np.float32)])
    raises_like(EF.triplet_margin_loss, TF.triplet_margin_loss, [x, x, x[0]])
    raises_like(EF.triplet_margin_loss, TF.triplet_margin_loss, [x, x, x], {"margin": 0})
    raises_like(EF.triplet_margin_with_distance_loss, TF.triplet_margin_with_distance_loss,
                [x, x, x], {"reduction": "avg"})
    raises_like(EF.gaussian_nll_loss, TF.gaussian_nll_loss, [x, x, np.ones(4, np.float32)])
    raises_like(EF.gaussian_nll_loss, TF.gaussian_nll_loss, [x, x, -np.ones_like(x)])
    raises_like(EF.gaussian_nll_loss, TF.gaussian_nll_loss, [x, x, np.ones_like(x)],
                {"reduction": "avg"})
    raises_like(EF.poisson_nll_loss, TF.poisson_nll_loss, [x, x], {"reduction": "avg"})
    raises_like(EF.soft_margin_loss, TF.soft_margin_loss, [x, x], {"reduction": "avg"})


def test_legacy_size_average_and_reduce():
    x = np.random.default_rng(0).standard_normal((3, 4))
    s = np.sign(x[::-1].copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for sa, red in ((False, None), (None, False), (True, True)):
            compare(EF.soft_margin_loss, TF.soft_margin_loss, [x, s],
                    {"size_average": sa, "reduce": red}, grad=(0,))
            compare(EF.hinge_embedding_loss, TF.hinge_embedding_loss, [x, s],
                    {"size_average": sa, "reduce": red})


# ---------------------------------------------------------------- CTC


def _ctc_case(r, t_max, n, c, smax, dt):
    lp = torch.tensor(r.standard_normal((t_max, n, c))).log_softmax(2).numpy().astype(dt)
    tl = r.integers(1, smax + 1, n)
    targets = r.integers(1, c, (n, smax))
    il = r.integers(max(2 * smax + 1, 1), t_max + 1, n)
    return lp, targets, il, tl


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_ctc_loss(dt, reduction):
    r = rng_(4)
    lp, targets, il, tl = _ctc_case(r, 12, 4, 5, 3, dt)
    kw = {"reduction": reduction}
    compare(EF.ctc_loss, TF.ctc_loss, [lp, targets, il, tl], kw)  # padded targets
    flat = np.concatenate([targets[i, :tl[i]] for i in range(4)])
    compare(EF.ctc_loss, TF.ctc_loss, [lp, flat, il, tl], kw)  # concatenated targets
    compare(EF.ctc_loss, TF.ctc_loss, [lp, targets, tuple(il.tolist()), tuple(tl.tolist())],
            kw)
    compare(EF.ctc_loss, TF.ctc_loss, [lp[:, 0], targets[0, :tl[0]], il[:1].reshape(()),
                                       tl[:1].reshape(())], kw)  # unbatched
    lpb = np.ascontiguousarray(lp[..., ::-1])  # blank = C - 1
    compare(EF.ctc_loss, TF.ctc_loss, [lpb, targets - 1, il, tl], {**kw, "blank": 4})
    rep = np.asarray([[2, 2, 3], [1, 1, 1], [4, 3, 4], [2, 0, 0]])  # repeats need blanks
    compare(EF.ctc_loss, TF.ctc_loss, [lp, rep, il, np.asarray([3, 3, 3, 1])], kw)
    # impossible alignments (input too short) and empty targets, with and without zero_inf
    il2, tl2 = np.asarray([12, 2, 12, 0]), np.asarray([3, 3, 0, 0])
    for zi in (False, True):
        compare(EF.ctc_loss, TF.ctc_loss, [lp, rep, il2, tl2],
                {**kw, "zero_infinity": zi})


def test_ctc_loss_through_log_softmax_and_module():
    r = rng_(5)
    logits = r.standard_normal((10, 3, 6))
    targets = r.integers(1, 6, (3, 4))
    il, tl = np.asarray([10, 9, 8]), np.asarray([4, 2, 3])
    compare(lambda x, *a: enn.CTCLoss(zero_infinity=True)(x.log_softmax(2), *a),
            lambda x, *a: torch.nn.CTCLoss(zero_infinity=True)(x.log_softmax(2), *a),
            [logits, targets, il, tl])


def test_ctc_loss_errors():
    r = rng_(6)
    lp, targets, il, tl = _ctc_case(r, 6, 2, 4, 2, np.float32)
    bad = [
        ([lp, targets, np.asarray([7, 5]), tl], {}),
        ([lp, targets, il, np.asarray([3, 2])], {}),
        ([lp, targets, il, tl], {"blank": 4}),
        ([lp, targets, il, tl], {"blank": -1}),
        ([lp, targets, il, tl], {"reduction": "avg"}),
        ([lp, targets, np.asarray([6]), tl], {}),
        ([lp, targets, np.asarray([6, -1]), tl], {}),
        ([lp, targets.reshape(-1)[:1], il, tl], {}),
    ]
    for args, kw in bad:
        with pytest.raises(Exception) as want:
            TF.ctc_loss(*[torch.tensor(a) for a in args], **kw)
        with pytest.raises(want.type) as got:
            EF.ctc_loss(*[eager.tensor(a) for a in args], **kw)
        wmsg = str(want.value).split(" (while")[0]
        assert str(got.value).split(" (while")[0] == wmsg


# ---------------------------------------------------------------- modules


def test_loss_modules_match_functions():
    r = rng_(7)
    x, y = r.standard_normal((4, 5)), r.standard_normal((4, 5))
    s = signs(r, (4, 5))
    cls = r.integers(0, 5, 4)
    multi = np.full((4, 5), -1)
    multi[:, 0], multi[:, 1] = cls, (cls + 2) % 5
    pairs = [
        ("SoftMarginLoss", {}, [x, s], (0,)), ("HingeEmbeddingLoss", {"margin": 0.5}, [x, s]),
        ("MarginRankingLoss", {"margin": 0.2, "reduction": "sum"}, [x, y, s]),
        ("PoissonNLLLoss", {"log_input": True, "full": True}, [x, np.abs(y)]),
        ("GaussianNLLLoss", {"full": True}, [x, y, np.abs(y) + 0.1]),
        ("MultiLabelSoftMarginLoss", {}, [x, (y > 0) * 1.0]),
        ("MultiMarginLoss", {"p": 2, "margin": 0.7}, [x, cls]),
        ("MultiLabelMarginLoss", {"reduction": "none"}, [x, multi]),
        ("CosineEmbeddingLoss", {"margin": 0.1}, [x, y, s[:, 0]]),
        ("TripletMarginLoss", {"p": 1.0, "swap": True}, [x, y, s]),
        ("TripletMarginWithDistanceLoss", {"margin": 0.5}, [x, y, s]),
        ("CosineSimilarity", {"dim": 0}, [x, y]), ("PairwiseDistance", {"p": 3.0}, [x, y]),
    ]
    for name, kw, args, *grad in pairs:
        ours, ref = getattr(enn, name)(**kw), getattr(torch.nn, name)(**kw)
        assert repr(ours) == repr(ref) or name.startswith("Triplet")
        compare(ours, ref, args, grad=grad[0] if grad else True)
    with pytest.warns(FutureWarning):
        m = enn.NLLLoss2d(ignore_index=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = torch.nn.NLLLoss2d(ignore_index=1)
    lp = torch.tensor(r.standard_normal((2, 3, 4, 4))).log_softmax(1).numpy()
    compare(m, ref, [lp, r.integers(0, 3, (2, 4, 4))])
    for name, kw in (("MultiMarginLoss", {"p": 3}), ("TripletMarginLoss", {"margin": 0}),
                     ("TripletMarginWithDistanceLoss", {"margin": -1.0})):
        with pytest.raises(ValueError) as want:
            getattr(torch.nn, name)(**kw)
        with pytest.raises(ValueError, match=str(want.value)):
            getattr(enn, name)(**kw)


# ---------------------------------------------------------------- linear cross entropy


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_linear_cross_entropy(dt, reduction):
    r = rng_(8)
    x = r.standard_normal((5, 6)).astype(dt)
    w = r.standard_normal((4, 6)).astype(dt)
    b = r.standard_normal(4).astype(dt)
    y = r.integers(0, 4, 5)
    y[1] = -100
    kw = {"reduction": reduction}
    compare(EF.linear_cross_entropy, TF.linear_cross_entropy, [x, w, y], kw)
    compare(lambda *a, **k: EF.linear_cross_entropy(*a, linear_bias=eager.tensor(b), **k),
            lambda *a, **k: TF.linear_cross_entropy(*a, linear_bias=torch.tensor(b), **k),
            [x, w, y], {**kw, "label_smoothing": 0.1})
    wk = r.standard_normal((4, 2, 3, 6)).astype(dt)  # a K-dimensional loss
    yk = r.integers(0, 4, (5, 2, 3))
    compare(EF.linear_cross_entropy, TF.linear_cross_entropy, [x, wk, yk], kw)
    probs = torch.tensor(r.standard_normal((5, 4))).softmax(1).numpy().astype(dt)
    compare(EF.linear_cross_entropy, TF.linear_cross_entropy, [x, w, probs], kw)
    compare(EF.linear_cross_entropy, TF.linear_cross_entropy, [x[0], w, np.asarray(2)], kw)
    raises_like(EF.linear_cross_entropy, TF.linear_cross_entropy, [x, w, probs],
                {"ignore_index": 1})
    raises_like(EF.linear_cross_entropy, TF.linear_cross_entropy, [x[:, :5], w, y])
    raises_like(EF.linear_cross_entropy, TF.linear_cross_entropy, [x[0], wk, y[0]])


def test_linear_cross_entropy_loss_module_state_dict_both_ways():
    torch.manual_seed(0)
    ref = torch.nn.LinearCrossEntropyLoss(6, 4, out_features=(2,), bias=True)
    ours = enn.LinearCrossEntropyLoss(6, 4, out_features=(2,), bias=True)
    ours.load_state_dict({k: eager.tensor(v.numpy()) for k, v in ref.state_dict().items()})
    assert sorted(ours.state_dict()) == sorted(ref.state_dict())
    r = rng_(9)
    compare(ours, ref, [r.standard_normal((3, 6)).astype(np.float32),
                        r.integers(0, 4, (3, 2))])
    opts = enn.LinearCrossEntropyOptions(batch_chunk_size=2)
    m = enn.LinearCrossEntropyLoss(6, 4, options=opts)
    assert m.options.batch_chunk_size == 2


# ---------------------------------------------------------------- adaptive softmax


def test_adaptive_log_softmax_with_loss():
    torch.manual_seed(0)
    ref = torch.nn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], div_value=2.0, head_bias=True)
    ours = enn.AdaptiveLogSoftmaxWithLoss(8, 20, [5, 12], div_value=2.0, head_bias=True)
    sd = ref.state_dict()
    assert sorted(ours.state_dict()) == sorted(sd)
    ours.load_state_dict({k: eager.tensor(v.numpy()) for k, v in sd.items()})
    r = rng_(10)
    x = r.standard_normal((7, 8)).astype(np.float32)
    y = np.asarray([0, 4, 5, 11, 12, 19, 3])
    compare(lambda a, b: ours(a, b).loss, lambda a, b: ref(a, b).loss, [x, y])
    compare(lambda a, b: ours(a, b).output, lambda a, b: ref(a, b).output, [x, y])
    compare(lambda a, b: ours(a, b).output, lambda a, b: ref(a, b).output,
            [x[0], np.asarray(13)])
    compare(ours.log_prob, ref.log_prob, [x])
    np.testing.assert_array_equal(ours.predict(eager.tensor(x)).numpy(),
                                  ref.predict(torch.tensor(x)).numpy())
    with pytest.raises(RuntimeError, match="Target values should be in"):
        ours(eager.tensor(x), eager.tensor(np.asarray([0, 1, 2, 3, 4, 5, 20])))
    for bad in ([], [5, 3], [0, 4], [4, 20], [4, 4]):
        with pytest.raises(ValueError):
            enn.AdaptiveLogSoftmaxWithLoss(8, 20, bad)


# ---------------------------------------------------------------- gumbel softmax


def test_gumbel_softmax():
    eager.manual_seed(0)
    logits = eager.tensor(np.log([[0.1, 0.2, 0.7]] * 4000), requires_grad=True)
    soft = EF.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.sum(-1).detach().numpy(), 1.0, rtol=1e-6)
    hard = EF.gumbel_softmax(logits, tau=1.0, hard=True)
    h = hard.detach().numpy()
    assert set(np.unique(h)) == {0.0, 1.0} and (h.sum(-1) == 1).all()
    # Gumbel-max: argmax frequencies follow softmax(logits)
    np.testing.assert_allclose(h.mean(0), [0.1, 0.2, 0.7], atol=0.03)
    # straight-through: hard's gradient is the soft sample's
    w = eager.tensor(np.random.default_rng(0).standard_normal((4000, 3)))
    (hard * w).sum().backward()
    assert logits.grad is not None and np.isfinite(logits.grad.numpy()).all()
    with pytest.warns(UserWarning, match="deprecated"):
        EF.gumbel_softmax(logits, eps=1e-5)


def test_top_level_aten_forms():
    """torch.ctc_loss, torch.kl_div, ...: int reductions (0/1/2), unreduced by default."""
    r = rng_(11)
    x, y = r.standard_normal((3, 4)), r.standard_normal((3, 4))
    s, t = signs(r, (3, 4)), signs(r, (3,))
    lp = torch.tensor(r.standard_normal((6, 2, 4))).log_softmax(2).numpy()
    cases = [
        ("binary_cross_entropy_with_logits", [x, (y > 0) * 1.0]), ("kl_div", [x, np.exp(y)]),
        ("cosine_embedding_loss", [x, y, t]), ("hinge_embedding_loss", [x, s]),
        ("margin_ranking_loss", [x, y, s]), ("triplet_margin_loss", [x, y, s]),
        ("ctc_loss", [lp, r.integers(1, 4, (2, 2)), np.asarray([6, 5]), np.asarray([2, 1])]),
    ]
    for name, args in cases:
        compare(getattr(eager, name), getattr(torch, name), args)
        for red in (0, 1, 2):
            compare(lambda *a, n=name, k=red: getattr(eager, n)(*a, reduction=k),
                    lambda *a, n=name, k=red: getattr(torch, n)(*a, reduction=k), args)
    for red in (0, 1, 2):
        compare(eager.poisson_nll_loss, torch.poisson_nll_loss,
                [x, np.abs(y), True, True, 1e-8, red])


def test_ctc_loss_compiles_as_eager():
    """ctc_loss captured by compile (one graph: the recursions are a library-call op):
    eager's value and gradient, which are torch's."""
    import capture

    r = rng_(12)
    x = r.standard_normal((12, 3, 5))
    args = [r.integers(1, 5, (3, 4)), np.asarray([12, 11, 10]), np.asarray([4, 3, 2])]

    def f(x, tg, il, tl):
        return EF.ctc_loss(x.log_softmax(2), tg, il, tl, zero_infinity=True)

    compare(lambda a, *rest: capture.compile(f)(a, *rest),
            lambda a, *rest: TF.ctc_loss(a.log_softmax(2), *rest, zero_infinity=True),
            [x] + args)
