"""The nn.functional functions of the layer sweep (issue 16) against PyTorch: values and
gradients w.r.t. every floating input (float64 at rtol 1e-5, float32 at rtol 1e-4), integer
outputs (pooling indices) exactly, and PyTorch's exception types on bad input. Each case is
one function `case(L, *tensors)` run with L = torch's and wick's namespaces."""

import types
import warnings

import numpy as np
import pytest

import eager
import eager.nn.functional as EF

torch = pytest.importorskip("torch")
TF = torch.nn.functional
T = types.SimpleNamespace(F=TF, t=torch.tensor, lib=torch)
E = types.SimpleNamespace(F=EF, t=eager.tensor, lib=eager)
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning", "ignore::FutureWarning")


def run_both(case, shapes, dtype=np.float64, seed=0, positive=False, grad=True):
    """Run `case` in torch and wick on the same random inputs and a random cotangent;
    compare outputs (floating ones approximately, integer ones exactly) and input grads."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(dtype) for s in shapes]
    if positive:
        arrays = [np.abs(a) + 0.1 for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    es = [eager.tensor(a, requires_grad=grad) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tout, eout = case(T, *ts), case(E, *es)
    touts = tout if isinstance(tout, tuple) else (tout,)
    eouts = eout if isinstance(eout, tuple) else (eout,)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-5, "atol": 1e-8}
    tloss, eloss = 0, 0
    for a, b in zip(touts, eouts):
        assert tuple(a.shape) == tuple(b.shape)
        if a.dtype.is_floating_point:
            np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **tol)
            g = rng.standard_normal(tuple(a.shape)).astype(dtype)
            tloss = tloss + (a * torch.tensor(g)).sum()
            eloss = eloss + (b * eager.tensor(g)).sum()
        else:
            np.testing.assert_array_equal(b.numpy(), a.numpy())
    if grad:
        tloss.backward()
        eloss.backward()
        for a, b in zip(ts, es):
            ga = np.zeros(a.shape) if a.grad is None else a.grad.numpy()
            gb = np.zeros(a.shape) if b.grad is None else b.grad.numpy()
            np.testing.assert_allclose(gb, ga, **tol)


def same_error(case, shapes):
    """Both libraries raise, with the same exception type."""
    arrays = [np.random.default_rng(0).standard_normal(s) for s in shapes]
    with pytest.raises(Exception) as te:
        case(T, *[torch.tensor(a) for a in arrays])
    with pytest.raises(type(te.value)):
        case(E, *[eager.tensor(a) for a in arrays])


# ---------------------------------------------------------------- convolutions

CONV = [
    ("conv3d", lambda L, x, w, b: L.F.conv3d(x, w, b), [(2, 3, 5, 6, 4), (4, 3, 2, 3, 2), (4,)]),
    ("conv3d_groups", lambda L, x, w: L.F.conv3d(x, w, None, (2, 1, 1), 1, (1, 2, 1), 2),
     [(2, 4, 6, 5, 5), (6, 2, 3, 2, 2)]),
    ("conv3d_same", lambda L, x, w: L.F.conv3d(x, w, padding="same"), [(3, 5, 4, 6), (2, 3, 3, 2, 3)]),
    ("convT1d", lambda L, x, w, b: L.F.conv_transpose1d(x, w, b, 3, 1, 2),
     [(2, 4, 5), (4, 3, 3), (3,)]),
    ("convT1d_groups", lambda L, x, w: L.F.conv_transpose1d(x, w, None, 2, 0, 1, 2, 2),
     [(2, 4, 5), (4, 3, 3)]),
    ("convT2d", lambda L, x, w, b: L.F.conv_transpose2d(x, w, b, (2, 1), 1, (1, 0), 2, (1, 2)),
     [(2, 4, 5, 6), (4, 3, 3, 2), (6,)]),
    ("convT2d_unbatched", lambda L, x, w: L.F.conv_transpose2d(x, w, stride=2, padding=2),
     [(3, 5, 4), (3, 2, 4, 4)]),
    ("convT3d", lambda L, x, w, b: L.F.conv_transpose3d(x, w, b, 2, (0, 1, 0), 1),
     [(1, 2, 3, 4, 3), (2, 3, 2, 3, 2), (3,)]),
    ("conv_tbc", lambda L, x, w, b: L.F.conv_tbc(x, w, b, 1), [(7, 2, 3), (3, 3, 4), (4,)]),
    ("unfold", lambda L, x: L.F.unfold(x, (2, 3), (1, 2), 1, (2, 1)), [(2, 3, 6, 7)]),
    ("unfold_unbatched", lambda L, x: L.F.unfold(x, 2), [(3, 4, 5)]),
    ("fold", lambda L, x: L.F.fold(x, (5, 6), 2, 1, 1, 2), [(2, 12, 12)]),
    ("fold_dilated", lambda L, x: L.F.fold(x, (6, 5), (2, 2), 2, 0, 1), [(8, 12)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,case,shapes", CONV, ids=[c[0] for c in CONV])
def test_convolutions(name, case, shapes, dtype):
    run_both(case, shapes, dtype)


def test_fold_is_adjoint_of_unfold():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((2, 3, 6, 7)), rng.standard_normal((2, 3 * 6, 4 * 4))
    u = EF.unfold(eager.tensor(x), (2, 3), padding=1, stride=2).numpy()
    f = EF.fold(eager.tensor(y), (6, 7), (2, 3), padding=1, stride=2).numpy()
    assert np.isclose((u * y).sum(), (x * f).sum())


# ---------------------------------------------------------------- pooling

S2 = np.random.default_rng(5).random((2, 3, 2))
S3 = np.random.default_rng(6).random((2, 3, 3))

POOL = [
    ("max_pool3d", lambda L, x: L.F.max_pool3d(x, (2, 3, 2), (1, 2, 2), 1, 1, True, True),
     [(2, 3, 5, 6, 7)]),
    ("max_pool3d_dilated", lambda L, x: L.F.max_pool3d(x, 2, dilation=2), [(3, 6, 5, 7)]),
    ("max_pool1d_wi", lambda L, x: L.F.max_pool1d_with_indices(x, 3, 2, 1), [(2, 3, 9)]),
    ("max_pool2d_wi", lambda L, x: L.F.max_pool2d_with_indices(x, 2, ceil_mode=True),
     [(2, 3, 5, 7)]),
    ("max_pool3d_wi", lambda L, x: L.F.max_pool3d_with_indices(x, 2), [(2, 2, 4, 4, 5)]),
    ("avg_pool3d", lambda L, x: L.F.avg_pool3d(x, (2, 3, 2), (1, 2, 2), 1, True, False),
     [(2, 3, 5, 6, 7)]),
    ("avg_pool3d_div", lambda L, x: L.F.avg_pool3d(x, 2, divisor_override=3), [(2, 4, 4, 6)]),
    ("adaptive_avg_pool3d", lambda L, x: L.F.adaptive_avg_pool3d(x, (3, 4, None)),
     [(2, 3, 5, 6, 7)]),
    ("adaptive_max_pool1d", lambda L, x: L.F.adaptive_max_pool1d(x, 4, True), [(2, 3, 7)]),
    ("adaptive_max_pool2d", lambda L, x: L.F.adaptive_max_pool2d(x, (3, 4), True),
     [(2, 3, 7, 5)]),
    ("adaptive_max_pool2d_none", lambda L, x: L.F.adaptive_max_pool2d(x, (None, 2)),
     [(3, 7, 5)]),
    ("adaptive_max_pool3d", lambda L, x: L.F.adaptive_max_pool3d_with_indices(x, (2, 3, 4)),
     [(2, 2, 5, 6, 7)]),
    ("adaptive_max_pool1d_wi", lambda L, x: L.F.adaptive_max_pool1d_with_indices(x, 3),
     [(2, 5)]),
    ("adaptive_max_pool2d_wi", lambda L, x: L.F.adaptive_max_pool2d_with_indices(x, 3),
     [(1, 2, 4, 9)]),
    ("fractional2d", lambda L, x: L.F.fractional_max_pool2d(
        x, (2, 3), (4, 5), return_indices=True, _random_samples=L.t(S2).to(x.dtype)), [(2, 3, 9, 10)]),
    ("fractional2d_ratio", lambda L, x: L.F.fractional_max_pool2d_with_indices(
        x, 2, output_ratio=(0.5, 0.6), _random_samples=L.t(S2).to(x.dtype)), [(2, 3, 9, 10)]),
    ("fractional3d", lambda L, x: L.F.fractional_max_pool3d(
        x, 2, (3, 4, 5), return_indices=True, _random_samples=L.t(S3).to(x.dtype)), [(2, 3, 7, 8, 9)]),
    ("fractional3d_wi", lambda L, x: L.F.fractional_max_pool3d_with_indices(
        x, (2, 1, 2), output_ratio=0.5, _random_samples=L.t(S3[:1]).to(x.dtype)), [(3, 7, 8, 9)]),
    ("unpool1d", lambda L, x: L.F.max_unpool1d(*L.F.max_pool1d(x, 2, return_indices=True), 2),
     [(2, 3, 8)]),
    ("unpool2d", lambda L, x: L.F.max_unpool2d(*L.F.max_pool2d(x, 3, 2, 1, return_indices=True),
                                               3, 2, 1, output_size=(7, 9)), [(2, 3, 7, 9)]),
    ("unpool3d", lambda L, x: L.F.max_unpool3d(*L.F.max_pool3d(x, 2, return_indices=True), 2),
     [(1, 2, 4, 6, 4)]),
]
LP = [
    ("lp_pool1d", lambda L, x: L.F.lp_pool1d(x, 2, 3, 2), [(2, 3, 9)]),
    ("lp_pool2d", lambda L, x: L.F.lp_pool2d(x, 3, (2, 3), ceil_mode=True), [(2, 3, 5, 7)]),
    ("lp_pool3d", lambda L, x: L.F.lp_pool3d(x, 1.5, 2, (1, 2, 2)), [(2, 2, 4, 5, 6)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,case,shapes", POOL, ids=[c[0] for c in POOL])
def test_pooling(name, case, shapes, dtype):
    run_both(case, shapes, dtype)


@pytest.mark.parametrize("name,case,shapes", LP, ids=[c[0] for c in LP])
def test_lp_pooling(name, case, shapes):
    run_both(case, shapes, positive=True)


def test_fractional_pool_without_samples_is_a_max_over_windows():
    eager.manual_seed(0)
    x = eager.randn(2, 3, 9, 10)
    y, i = EF.fractional_max_pool2d(x, 2, output_size=(4, 5), return_indices=True)
    flat = x.reshape(2, 3, -1).numpy()
    np.testing.assert_array_equal(np.take_along_axis(flat, i.reshape(2, 3, -1).numpy(), 2),
                                  y.reshape(2, 3, -1).numpy())


# ---------------------------------------------------------------- normalization

NORM = [
    ("group_norm", lambda L, x, w, b: L.F.group_norm(x, 2, w, b), [(3, 4, 5, 2), (4,), (4,)]),
    ("group_norm_3d", lambda L, x: L.F.group_norm(x, 3, eps=1e-3), [(2, 6, 5)]),
    ("instance_norm", lambda L, x, w, b: L.F.instance_norm(x, weight=w, bias=b),
     [(3, 4, 5, 2), (4,), (4,)]),
    ("rms_norm", lambda L, x, w: L.F.rms_norm(x, (5, 2), w), [(3, 4, 5, 2), (5, 2)]),
    ("rms_norm_eps", lambda L, x: L.F.rms_norm(x, [6], eps=1e-3), [(3, 6)]),
    ("lrn", lambda L, x: L.F.local_response_norm(x, 3), [(3, 6, 5, 2)]),
    ("lrn_3d", lambda L, x: L.F.local_response_norm(x, 4, 1e-2, 0.5, 2.0), [(3, 6, 5)]),
    ("lrn_5d", lambda L, x: L.F.local_response_norm(x, 2), [(2, 5, 3, 2, 2)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,case,shapes", NORM, ids=[c[0] for c in NORM])
def test_normalization(name, case, shapes, dtype):
    run_both(case, shapes, dtype)


@pytest.mark.parametrize("use_input_stats", [True, False])
def test_instance_norm_running_stats(use_input_stats):
    rng = np.random.default_rng(3)
    x, rm, rv = rng.standard_normal((3, 4, 6)), rng.standard_normal(4), rng.random(4) + 0.5
    trm, trv, erm, erv = torch.tensor(rm), torch.tensor(rv), eager.tensor(rm), eager.tensor(rv)
    a = TF.instance_norm(torch.tensor(x), trm, trv, use_input_stats=use_input_stats,
                         momentum=0.3)
    b = EF.instance_norm(eager.tensor(x), erm, erv, use_input_stats=use_input_stats,
                         momentum=0.3)
    np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-10)
    np.testing.assert_allclose(erm.numpy(), trm.numpy(), rtol=1e-10)
    np.testing.assert_allclose(erv.numpy(), trv.numpy(), rtol=1e-10)


# ---------------------------------------------------------------- activations and dropout

ACT = [
    ("hardshrink", lambda L, x: L.F.hardshrink(x, 0.7), [(4, 5)]),
    ("softshrink", lambda L, x: L.F.softshrink(x), [(4, 5)]),
    ("rrelu_eval", lambda L, x: L.F.rrelu(x, 0.1, 0.3), [(4, 5)]),
    ("celu_", lambda L, x: L.F.celu_(x * 1.0, 0.5), [(4, 5)]),
    ("selu_", lambda L, x: L.F.selu_(x * 1.0), [(4, 5)]),
    ("rrelu_", lambda L, x: L.F.rrelu_(x * 1.0), [(4, 5)]),
    ("bilinear", lambda L, a, b, w, c: L.F.bilinear(a, b, w, c),
     [(4, 5, 3), (4, 5, 2), (6, 3, 2), (6,)]),
    ("pixel_shuffle", lambda L, x: L.F.pixel_shuffle(x, 2), [(2, 3, 8, 3, 4)]),
    ("pixel_unshuffle", lambda L, x: L.F.pixel_unshuffle(x, 3), [(2, 6, 9)]),
    ("channel_shuffle", lambda L, x: L.F.channel_shuffle(x, 3), [(2, 6, 3, 2)]),
    ("dropouts_eval", lambda L, x: (L.F.dropout1d(x[0], 0.5, False), L.F.dropout2d(x, 0.3, False),
                                    L.F.dropout3d(x, training=False), L.F.alpha_dropout(x, 0.2),
                                    L.F.feature_alpha_dropout(x, 0.4)), [(2, 3, 4, 5)]),
    ("dropouts_p0", lambda L, x: (L.F.dropout2d(x, 0.0), L.F.alpha_dropout(x, 0.0, True)),
     [(2, 3, 4, 5)]),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name,case,shapes", ACT, ids=[c[0] for c in ACT])
def test_activations_and_rearrangements(name, case, shapes, dtype):
    run_both(case, shapes, dtype)


def test_native_channel_shuffle():  # torch has no derivative for it
    run_both(lambda L, x: L.F.native_channel_shuffle(x, 2), [(2, 4, 3)], grad=False)


@pytest.mark.parametrize("fn,shape,unbatched", [(EF.dropout1d, (4, 6, 50), False),
                                                (EF.dropout1d, (6, 50), True),
                                                (EF.dropout2d, (4, 6, 5, 10), False),
                                                (EF.dropout3d, (6, 3, 4, 5), True)])
def test_feature_dropout_drops_whole_channels(fn, shape, unbatched):
    eager.manual_seed(1)
    x = eager.randn(*shape, requires_grad=True)
    y = fn(x, 0.4)
    ratio = (y / x).detach().numpy()
    per_channel = ratio.reshape(shape[:1 if unbatched else 2] + (-1,))
    assert np.allclose(per_channel, per_channel[..., :1])  # one draw per channel
    kept = np.isclose(per_channel, 1 / 0.6, rtol=1e-5)
    assert np.all(kept | (per_channel == 0)) and 0 < kept.mean() < 1
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), ratio)


def test_alpha_dropout_keeps_mean_and_variance():
    eager.manual_seed(2)
    x = eager.randn(400000)
    for fn in (EF.alpha_dropout, lambda x, p, t: EF.feature_alpha_dropout(
            x.reshape(200000, 2, 1), p, t)):
        y = fn(x, 0.3, True).numpy().reshape(-1)
        assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    assert np.all(EF.alpha_dropout(x, 1.0, True).numpy() == 0)


def test_rrelu_training_slopes_within_bounds():
    eager.manual_seed(3)
    x = eager.randn(1000, requires_grad=True)
    y = EF.rrelu(x, 0.1, 0.3, training=True)
    y.sum().backward()
    xs, slope = x.detach().numpy(), x.grad.numpy()
    assert np.all(slope[xs > 0] == 1)
    neg = slope[xs <= 0]
    assert neg.min() >= 0.1 and neg.max() <= 0.3 and neg.std() > 0.03
    np.testing.assert_allclose(y.detach().numpy(), xs * slope)


# ---------------------------------------------------------------- resampling

INTERP = []
for _mode, _shape in [("nearest", (2, 3, 5)), ("nearest", (2, 3, 5, 4)), ("nearest", (1, 2, 3, 5, 4)),
                      ("nearest-exact", (2, 3, 5, 4)), ("linear", (2, 3, 5)),
                      ("bilinear", (2, 3, 5, 4)), ("bicubic", (2, 3, 5, 4)),
                      ("trilinear", (1, 2, 3, 5, 4)), ("area", (2, 3, 7, 5))]:
    for _kw in [{"size": 7}, {"scale_factor": 1.7}, {"scale_factor": 0.6},
                {"scale_factor": 2, "recompute_scale_factor": True}]:
        for _ac in ([None] if _mode in ("nearest", "nearest-exact", "area") else [False, True]):
            INTERP.append((_mode, _shape, _kw, _ac))


@pytest.mark.parametrize("mode,shape,kw,ac", INTERP)
def test_interpolate(mode, shape, kw, ac):
    run_both(lambda L, x: L.F.interpolate(x, mode=mode, align_corners=ac, **kw), [shape])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic", "nearest"])
def test_interpolate_float32(mode):
    run_both(lambda L, x: L.F.interpolate(x, scale_factor=(1.3, 2.5), mode=mode),
             [(2, 3, 5, 4)], np.float32)


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("kw", [{"size": (5, 4)}, {"size": (20, 7)}, {"scale_factor": 0.37},
                                {"scale_factor": (0.5, 1.6)}])
@pytest.mark.parametrize("ac", [False, True])
def test_interpolate_antialias(mode, kw, ac):
    run_both(lambda L, x: L.F.interpolate(x, mode=mode, align_corners=ac, antialias=True, **kw),
             [(2, 3, 13, 11)])


def test_interpolate_integer_input():
    x = np.arange(12).reshape(1, 1, 3, 4)
    a = TF.interpolate(torch.tensor(x, dtype=torch.uint8), scale_factor=2)
    b = EF.interpolate(eager.tensor(x, dtype=eager.uint8), scale_factor=2)
    np.testing.assert_array_equal(b.numpy(), a.numpy())
    for L, t in ((TF, torch.tensor(x)), (EF, eager.tensor(x))):
        with pytest.raises(NotImplementedError):
            L.interpolate(t, size=5, mode="bicubic")


def test_upsample_aliases():
    run_both(lambda L, x: (L.F.upsample(x, scale_factor=2, mode="bilinear"),
                           L.F.upsample_nearest(x, size=(3, 7)),
                           L.F.upsample_bilinear(x, scale_factor=1.5)), [(2, 3, 5, 4)])


GRID = [(m, p, a) for m in ("bilinear", "nearest", "bicubic")
        for p in ("zeros", "border", "reflection") for a in (False, True)]


@pytest.mark.parametrize("mode,pad,ac", GRID)
def test_grid_sample_2d(mode, pad, ac):
    run_both(lambda L, x, g: L.F.grid_sample(x, g * 1.3, mode, pad, ac),
             [(2, 3, 5, 4), (2, 6, 7, 2)])


@pytest.mark.parametrize("mode,pad,ac", [g for g in GRID if g[0] != "bicubic"])
def test_grid_sample_3d(mode, pad, ac):
    run_both(lambda L, x, g: L.F.grid_sample(x, g * 1.3, mode, pad, ac),
             [(2, 3, 5, 4, 3), (2, 4, 3, 2, 3)])


@pytest.mark.parametrize("ac", [False, True])
@pytest.mark.parametrize("theta,size", [((2, 2, 3), (2, 3, 5, 4)), ((2, 3, 4), (2, 3, 5, 4, 2)),
                                        ((1, 2, 3), (1, 1, 1, 6))])
def test_affine_grid(theta, size, ac):
    run_both(lambda L, t: L.F.affine_grid(t, size, ac), [theta])


def test_affine_grid_then_grid_sample_float32():
    run_both(lambda L, x, t: L.F.grid_sample(x, L.F.affine_grid(t, (2, 3, 6, 5), False),
                                             align_corners=False),
             [(2, 3, 5, 4), (2, 2, 3)], np.float32)


# ---------------------------------------------------------------- embedding_bag, attention

IDX = np.array([1, 2, 4, 5, 4, 3, 2, 9, 0, 2])
OFF = np.array([0, 4, 4, 7])


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("pad", [None, 2, -1])
@pytest.mark.parametrize("last", [False, True])
def test_embedding_bag(mode, pad, last):
    run_both(lambda L, w: L.F.embedding_bag(L.t(IDX), w, L.t(OFF), mode=mode, padding_idx=pad,
                                            include_last_offset=last), [(10, 3)])


def test_embedding_bag_2d_and_weights():
    run_both(lambda L, w, p: L.F.embedding_bag(L.t(IDX), w, L.t(OFF), mode="sum",
                                               per_sample_weights=p), [(10, 3), (10,)])
    run_both(lambda L, w: L.F.embedding_bag(L.t(IDX.reshape(2, 5)), w, mode="max"), [(10, 4)])
    run_both(lambda L, w: L.F.embedding_bag(L.t(IDX), w, L.t(OFF), max_norm=1.0), [(10, 4)],
             grad=False)


def test_embedding_bag_scale_grad_by_freq():
    """Documented semantics (each row's gradient over its index's count in the batch), as
    torch's `embedding(scale_grad_by_freq=True)` + per-bag sums; torch's embedding_bag CPU
    kernel divides by other counts (index 3 of this batch by 3, though it occurs once)."""
    ends = list(OFF[1:]) + [len(IDX)]

    def case(L, w):
        if L is E:
            return L.F.embedding_bag(L.t(IDX), w, L.t(OFF), mode="sum", scale_grad_by_freq=True)
        rows = L.F.embedding(L.t(IDX), w, scale_grad_by_freq=True)
        return torch.stack([rows[s:e].sum(0) for s, e in zip(OFF, ends)])
    run_both(case, [(10, 3)])


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("need_weights", [True, False])
def test_multi_head_attention_forward(batched, need_weights):
    E, H = 8, 2
    lead = (2,) if batched else ()
    mask = np.triu(np.full((3, 4), -np.inf), 1)

    def case(L, q, k, v, w, b, ow, ob, bk, bv):
        return L.F.multi_head_attention_forward(
            q, k, v, E, H, w, b, bk, bv, True, 0.0, ow, ob, training=False,
            need_weights=need_weights, attn_mask=L.t(mask), average_attn_weights=False)[0]
    run_both(case, [(3,) + lead + (E,), (4,) + lead + (E,), (4,) + lead + (E,), (3 * E, E),
                    (3 * E,), (E, E), (E,), (1, 1, E), (1, 1, E)])


def test_multi_head_attention_forward_separate_weights():
    E, H = 6, 3

    def case(L, q, k, v, wq, wk, wv, ow):
        return L.F.multi_head_attention_forward(
            q, k, v, E, H, None, None, None, None, False, 0.0, ow, None, training=False,
            use_separate_proj_weight=True, q_proj_weight=wq, k_proj_weight=wk,
            v_proj_weight=wv)
    run_both(case, [(3, 2, E), (5, 2, 4), (5, 2, 7), (E, E), (E, 4), (E, 7), (E, E)])


# ---------------------------------------------------------------- errors

ERRORS = [
    (lambda L, x, w: L.F.conv3d(x, w), [(2, 3, 4, 4), (2, 3, 2, 2, 2, 2)]),
    (lambda L, x, w: L.F.conv_transpose2d(x, w), [(2, 3, 4, 4), (4, 2, 2, 2)]),
    (lambda L, x, w: L.F.conv_transpose2d(x, w, stride=2, output_padding=2),
     [(2, 3, 4, 4), (3, 2, 2, 2)]),
    (lambda L, x: L.F.fold(x, (4, 5), 2), [(2, 12, 5)]),
    (lambda L, x: L.F.fold(x, (4, 5), 2), [(2, 10, 12)]),
    (lambda L, x: L.F.unfold(x, 2), [(2, 3, 4, 5, 6)]),
    (lambda L, x: L.F.max_pool3d(x, 2), [(2, 3)]),
    (lambda L, x: L.F.adaptive_max_pool2d(x, 2), [(5,)]),
    (lambda L, x: L.F.fractional_max_pool2d(x, 2), [(2, 3, 6, 6)]),
    (lambda L, x: L.F.max_unpool2d(x, L.t(np.full((1, 1, 2, 2), 99)), 2), [(1, 1, 2, 2)]),
    (lambda L, x: L.F.group_norm(x, 3), [(2, 4, 5)]),
    (lambda L, x: L.F.local_response_norm(x, 2), [(2, 4)]),
    (lambda L, x: L.F.dropout1d(x, 0.5), [(2, 3, 4, 5)]),
    (lambda L, x: L.F.dropout2d(x, 1.5), [(2, 3, 4, 5)]),
    (lambda L, x: L.F.softshrink(x, -1.0), [(3,)]),
    (lambda L, x: L.F.rrelu(x, 0.5, 0.1), [(3,)]),
    (lambda L, x: L.F.pixel_shuffle(x, 2), [(2, 3, 4, 4)]),
    (lambda L, x: L.F.pixel_unshuffle(x, 2), [(2, 3, 5, 4)]),
    (lambda L, x: L.F.channel_shuffle(x, 4), [(2, 6, 3)]),
    (lambda L, x: L.F.interpolate(x, size=4, scale_factor=2), [(1, 2, 3)]),
    (lambda L, x: L.F.interpolate(x), [(1, 2, 3)]),
    (lambda L, x: L.F.interpolate(x, size=4, mode="bilinear"), [(1, 2, 3)]),
    (lambda L, x: L.F.interpolate(x, size=4, align_corners=True), [(1, 2, 3)]),
    (lambda L, x: L.F.interpolate(x, size=4, mode="linear", antialias=True), [(1, 2, 3)]),
    (lambda L, x, g: L.F.grid_sample(x, g, mode="cubic"), [(1, 2, 3, 3), (1, 2, 2, 2)]),
    (lambda L, x, g: L.F.grid_sample(x, g, padding_mode="mirror"), [(1, 2, 3, 3), (1, 2, 2, 2)]),
    (lambda L, x, g: L.F.grid_sample(x, g), [(1, 2, 3, 3), (2, 2, 2, 2)]),
    (lambda L, t: L.F.affine_grid(t, (2, 3, 4, 4)), [(2, 3, 4)]),
    (lambda L, w: L.F.embedding_bag(L.t(IDX), w), [(10, 3)]),
    (lambda L, w: L.F.embedding_bag(L.t(IDX), w, L.t(OFF), mode="median"), [(10, 3)]),
    (lambda L, w: L.F.embedding_bag(L.t(IDX), w, L.t(OFF), mode="max", scale_grad_by_freq=True),
     [(10, 3)]),
    (lambda L, w, p: L.F.embedding_bag(L.t(IDX), w, L.t(OFF), per_sample_weights=p),
     [(10, 3), (10,)]),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_errors_match_torch(k):
    same_error(*ERRORS[k])


def test_add_at_kernel_matches_numpy_add_at():
    """ir.ops.scatter.add_at (the scatter-add behind gather/index_select backward): segment
    sums and bincount paths against np.add.at, negative and repeated indices included."""
    from ir.ops.scatter import add_at

    rng = np.random.default_rng(0)
    for _ in range(50):
        shape = tuple(rng.integers(1, 12, rng.integers(1, 4))) + (300,)
        dim = int(rng.integers(0, len(shape)))
        idx = rng.integers(-shape[dim], shape[dim], int(rng.integers(1, 3 * shape[dim] + 1)))
        vshape = list(shape)
        vshape[dim] = len(idx)
        index = rng.integers(-shape[dim], shape[dim], shape)
        grids = list(np.indices(shape, sparse=True))
        grids[dim] = index
        for key, vals in [((slice(None),) * dim + (idx,), rng.standard_normal(vshape)),
                          (tuple(grids), rng.standard_normal(shape))]:
            a, b = np.zeros(shape), np.zeros(shape)
            np.add.at(a, key, vals)
            add_at(np, b, key, vals)
            np.testing.assert_allclose(b, a, atol=1e-12)


@pytest.mark.parametrize("name", ["convT2d", "convT1d_dilated", "convT2d_dilated", "fold",
                                  "interpolate", "grid_sample", "group_norm", "embedding_bag"])
def test_second_derivatives(name):
    """gradgradcheck (finite differences of the analytic gradient) in float64."""
    from eager.autograd import gradgradcheck

    rng = np.random.default_rng(0)

    def t(*shape):
        return eager.tensor(rng.standard_normal(shape), requires_grad=True)
    fn, args = {
        "convT2d": (lambda x, w: EF.conv_transpose2d(x, w, stride=2, padding=1),
                    (t(1, 2, 3, 3), t(2, 3, 3, 3))),
        "convT1d_dilated": (lambda x, w: EF.conv_transpose1d(x, w, stride=2, dilation=2),
                            (t(1, 2, 4), t(2, 3, 3))),
        "convT2d_dilated": (lambda x, w: EF.conv_transpose2d(x, w, stride=(1, 2), padding=1,
                                                             dilation=(2, 1)),
                            (t(1, 2, 3, 3), t(2, 2, 2, 3))),
        "fold": (lambda x: EF.fold(x, (4, 5), 2, dilation=(2, 1), padding=1), (t(1, 8, 24),)),
        "interpolate": (lambda x: EF.interpolate(x, scale_factor=1.5, mode="bicubic"),
                        (t(1, 2, 3, 4),)),
        "grid_sample": (lambda x, g: EF.grid_sample(x, g * 0.9, align_corners=False),
                        (t(1, 2, 3, 4), t(1, 2, 3, 2))),
        "group_norm": (lambda x, w, b: EF.group_norm(x, 2, w, b), (t(2, 4, 3), t(4), t(4))),
        "embedding_bag": (lambda w: EF.embedding_bag(eager.tensor([1, 2, 3, 1]), w,
                                                     eager.tensor([0, 2])), (t(5, 3),)),
    }[name]
    assert gradgradcheck(fn, args)
