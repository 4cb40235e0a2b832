"""The losses of `eager.nn.functional` (eager/nn/losses.py): values against numpy references
(every loss, several shapes, float32/float64, each reduction, weights, ignore_index,
label_smoothing), values and gradients against PyTorch when it is installed, gradcheck in
float64, every error case, and capture of a function using cross_entropy and mse_loss."""

import types
import warnings

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager.autograd import gradcheck

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")
REDUCTIONS = ("none", "mean", "sum")
DTYPES = (np.float32, np.float64)


def _tol(dt):
    return {"rtol": 1e-4, "atol": 1e-5} if dt == np.float32 else {"rtol": 1e-10, "atol": 1e-12}


def _t(a, grad=False):
    return eager.tensor(np.asarray(a), requires_grad=grad)


def _reduce(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


def _log_softmax(x, axis):
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


# ---------------------------------------------------------------- numpy references


def ref_pointwise(name, x, y, **kw):
    d = x - y
    ad = np.abs(d)
    if name == "mse_loss":
        return d * d
    if name == "l1_loss":
        return ad
    if name == "smooth_l1_loss":
        b = kw.get("beta", 1.0)
        if b == 0:
            return ad
        return np.where(ad < b, 0.5 * d * d / b, ad - 0.5 * b)
    dl = kw.get("delta", 1.0)
    return np.where(ad < dl, 0.5 * d * d, dl * (ad - 0.5 * dl))


def ref_nll(logp, target, weight=None, ignore_index=-100, reduction="mean"):
    """logp (N, C, ...), target (N, ...): the definition of torch.nn.NLLLoss."""
    c = logp.shape[1]
    w = np.ones(c) if weight is None else weight
    keep = target != ignore_index
    safe = np.where(keep, target, 0)
    picked = np.take_along_axis(logp, safe[:, None], axis=1)[:, 0]
    wt = w[safe] * keep
    loss = -picked * wt
    if reduction == "mean":
        return loss.sum() / wt.sum()
    return _reduce(loss, reduction)


def ref_cross_entropy(x, target, weight=None, ignore_index=-100, reduction="mean",
                      label_smoothing=0.0):
    """The formulas of the torch.nn.CrossEntropyLoss documentation."""
    logp = _log_softmax(x, 1)
    c = x.shape[1]
    wb = (np.ones(c) if weight is None else weight).reshape((c,) + (1,) * (x.ndim - 2))
    if target.shape == x.shape:  # class probabilities
        t = target * (1 - label_smoothing) + label_smoothing / c
        return _reduce(-(logp * t * wb).sum(1), reduction)
    nll = ref_nll(logp, target, weight, ignore_index, reduction)
    keep = target != ignore_index
    smooth = -(logp * wb).sum(1) * keep
    if reduction == "mean":
        w = np.ones(c) if weight is None else weight
        smooth = smooth.sum() / (w[np.where(keep, target, 0)] * keep).sum()
    else:
        smooth = _reduce(smooth, reduction)
    return (1 - label_smoothing) * nll + label_smoothing / c * smooth


def ref_bce(p, t, weight=None):
    loss = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))
    return loss if weight is None else loss * weight


def ref_bce_logits(x, t, weight=None, pos_weight=None):
    pw = 1.0 if pos_weight is None else pos_weight
    # log(sigmoid(x)) = -logaddexp(0, -x), computed stably by numpy
    loss = -(pw * t * -np.logaddexp(0, -x) + (1 - t) * -np.logaddexp(0, x))
    return loss if weight is None else loss * weight


def ref_kl(inp, t, log_target=False):
    if log_target:
        return np.exp(t) * (t - inp)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t == 0, 0.0, t * np.log(np.where(t == 0, 1.0, t))) - t * inp


# ---------------------------------------------------------------- values against numpy


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(7,), (4, 5), (2, 3, 4)])
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}),
                                     ("smooth_l1_loss", {"beta": 0.5}),
                                     ("smooth_l1_loss", {"beta": 0.0}),
                                     ("huber_loss", {"delta": 1.5})])
def test_pointwise_losses_numpy(name, kw, shape, reduction, dt):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(shape).astype(dt), rng.standard_normal(shape).astype(dt)
    out = getattr(F, name)(_t(x), _t(y), reduction=reduction, **kw)
    assert out.dtype.np == dt
    ref = _reduce(ref_pointwise(name, x.astype(np.float64), y.astype(np.float64), **kw),
                  reduction)
    np.testing.assert_allclose(out.numpy(), ref, **_tol(dt))


@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_weight(name, reduction):
    rng = np.random.default_rng(1)
    x, y, w = rng.standard_normal((3, 4)), rng.standard_normal((3, 4)), rng.random((3, 4))
    out = getattr(F, name)(_t(x), _t(y), reduction=reduction, weight=_t(w))
    loss = ref_pointwise(name, x, y) * w
    if reduction == "mean" and name != "huber_loss":  # huber: mean over elements
        ref = loss.sum() / w.sum()
    else:
        ref = _reduce(loss, reduction)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


def test_pointwise_broadcast_warns():
    x, y = np.arange(3.0), np.arange(6.0).reshape(2, 3)
    with pytest.warns(UserWarning, match="different to the input size"):
        out = F.mse_loss(_t(x), _t(y))
    np.testing.assert_allclose(out.numpy(), np.mean((x - y) ** 2))


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("spatial", [(), (3,), (2, 3)])
@pytest.mark.parametrize("weighted,ignore", [(False, False), (True, False), (True, True),
                                             (False, True)])
def test_nll_and_cross_entropy_numpy(weighted, ignore, spatial, reduction, dt):
    rng = np.random.default_rng(2)
    n, c = 5, 4
    x = rng.standard_normal((n, c) + spatial).astype(dt)
    t = rng.integers(0, c, (n,) + spatial)
    ignore_index = 2 if ignore else -100
    w = rng.random(c).astype(dt) + 0.5 if weighted else None
    kw = {"weight": None if w is None else _t(w), "ignore_index": ignore_index,
          "reduction": reduction}
    x64, w64 = x.astype(np.float64), None if w is None else w.astype(np.float64)
    out = F.nll_loss(_t(x), _t(t), **kw)
    np.testing.assert_allclose(out.numpy(), ref_nll(x64, t, w64, ignore_index, reduction),
                               **_tol(dt))
    for ls in (0.0, 0.25):
        out = F.cross_entropy(_t(x), _t(t), label_smoothing=ls, **kw)
        assert out.dtype.np == dt
        ref = ref_cross_entropy(x64, t, w64, ignore_index, reduction, ls)
        np.testing.assert_allclose(out.numpy(), ref, **_tol(dt))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("ls", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_cross_entropy_probabilities_numpy(shape, ls, reduction):
    rng = np.random.default_rng(3)
    x = rng.standard_normal(shape)
    p = rng.random(shape)
    p /= p.sum(1, keepdims=True)
    w = rng.random(shape[1]) + 0.5
    for weight in (None, w):
        out = F.cross_entropy(_t(x), _t(p), None if weight is None else _t(weight),
                              reduction=reduction, label_smoothing=ls)
        ref = ref_cross_entropy(x, p, weight, reduction=reduction, label_smoothing=ls)
        np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


def test_unbatched_class_input():
    x = np.array([0.5, -1.0, 2.0, 0.1])
    for target in (np.array(2), np.array([2])):
        out = F.cross_entropy(_t(x), _t(target), reduction="none")
        assert out.shape == ()
        np.testing.assert_allclose(out.numpy(), -_log_softmax(x, 0)[2])
        np.testing.assert_allclose(F.nll_loss(_t(x), _t(target)).numpy(), -x[2])


def test_uint8_target_and_all_ignored():
    x = np.random.default_rng(4).standard_normal((3, 4))
    t = np.array([1, 3, 0])
    np.testing.assert_allclose(F.cross_entropy(_t(x), eager.tensor(t, dtype=eager.uint8)).numpy(),
                               ref_cross_entropy(x, t))
    ign = _t(np.array([-100, -100, -100]))
    with np.errstate(invalid="ignore"):
        assert np.isnan(F.nll_loss(_t(x), ign).item())  # 0 / 0, as PyTorch
    assert F.nll_loss(_t(x), ign, reduction="sum").item() == 0.0


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_losses_numpy(reduction, dt):
    rng = np.random.default_rng(5)
    p = rng.random((4, 3)).astype(dt)
    t = rng.random((4, 3)).astype(dt)
    w = rng.random(3).astype(dt)
    for weight in (None, w):
        out = F.binary_cross_entropy(_t(p), _t(t), None if weight is None else _t(weight),
                                     reduction=reduction)
        np.testing.assert_allclose(out.numpy(), _reduce(ref_bce(p, t, weight), reduction),
                                   **_tol(dt))
    x = (rng.standard_normal((4, 3)) * 40).astype(dt)  # saturated logits stay finite
    pw = (rng.random(3) * 3).astype(dt)
    for weight, pos in ((None, None), (w, None), (None, pw), (w, pw)):
        out = F.binary_cross_entropy_with_logits(
            _t(x), _t(t), None if weight is None else _t(weight), reduction=reduction,
            pos_weight=None if pos is None else _t(pos))
        ref = _reduce(ref_bce_logits(x.astype(np.float64), t, weight, pos), reduction)
        np.testing.assert_allclose(out.numpy(), ref, **_tol(dt))


def test_bce_clamps_logs_at_minus_100():
    p = _t(np.array([0.0, 1.0, 0.0, 1.0]), grad=True)
    t = _t(np.array([0.0, 1.0, 1.0, 0.0]))
    out = F.binary_cross_entropy(p, t, reduction="none")
    np.testing.assert_array_equal(out.detach().numpy(), [0.0, 0.0, 100.0, 100.0])
    out.sum().backward()
    assert np.all(np.isfinite(p.grad.numpy()))


@pytest.mark.parametrize("reduction", REDUCTIONS + ("batchmean",))
def test_kl_div_numpy(reduction):
    rng = np.random.default_rng(6)
    inp = _log_softmax(rng.standard_normal((4, 5)), 1)
    t = rng.random((4, 5))
    t[0, 0] = 0.0  # 0 * log 0 = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for log_target, target in ((False, t), (True, np.log(t + 0.1))):
            out = F.kl_div(_t(inp), _t(target), reduction=reduction, log_target=log_target)
            loss = ref_kl(inp, target, log_target)
            ref = loss.sum() / 4 if reduction == "batchmean" else _reduce(loss, reduction)
            np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12)


def test_kl_div_mean_warns():
    with pytest.warns(UserWarning, match="batchmean"):
        F.kl_div(_t(np.zeros(3)), _t(np.ones(3)))


# ---------------------------------------------------------------- against PyTorch


def _cases():
    rng = np.random.default_rng(7)
    x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 4))
    t = rng.integers(0, 4, 5)
    t_ign = t.copy()
    t_ign[[1, 3]] = 1
    p = rng.random((5, 4))
    p /= p.sum(1, keepdims=True)
    pr, tg = rng.random((5, 4)), rng.random((5, 4))
    x4, t4 = rng.standard_normal((2, 4, 3, 2)), rng.integers(0, 4, (2, 3, 2))
    w = rng.random(4) + 0.5
    yield "mse_loss", (x, y), {}
    yield "l1_loss", (x, y), {}
    yield "smooth_l1_loss", (x, y), {"beta": 0.7}
    yield "huber_loss", (x, y), {"delta": 0.8}
    yield "nll_loss", (x, t), {"weight": w, "ignore_index": 1}
    yield "nll_loss", (x4, t4), {"weight": w}
    yield "cross_entropy", (x, t_ign), {"weight": w, "ignore_index": 1, "label_smoothing": 0.2}
    yield "cross_entropy", (x4, t4), {"label_smoothing": 0.1}
    yield "cross_entropy", (x, p), {"weight": w, "label_smoothing": 0.15}
    yield "binary_cross_entropy", (pr, tg), {"weight": w}
    yield "binary_cross_entropy_with_logits", (x * 20, tg), {"weight": w, "pos_weight": w * 2}
    yield "kl_div", (_log_softmax(x, 1), p), {}
    yield "kl_div", (_log_softmax(x, 1), np.log(p)), {"log_target": True}


@needs_torch
@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("case", range(13))
def test_against_torch(case, reduction, dt):
    name, arrays, kw = list(_cases())[case]
    arrays = [a.astype(dt) if a.dtype.kind == "f" else a for a in arrays]
    kw = {k: v.astype(dt) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    grads = [a.dtype.kind == "f" for a in arrays]
    ours = [eager.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    theirs = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grads)]
    ekw = {k: _t(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(F, name)(*ours, reduction=reduction, **ekw)
        ref = getattr(TF, name)(*theirs, reduction=reduction, **tkw)
    np.testing.assert_allclose(out.detach().numpy(), ref.detach().numpy(), **_tol(dt))
    g = np.random.default_rng(8).standard_normal(tuple(ref.shape)).astype(dt)
    out.backward(eager.tensor(g))
    ref.backward(torch.tensor(g))
    for a, b in zip(ours, theirs):
        if b.grad is not None:
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **_tol(dt))


# ---------------------------------------------------------------- gradcheck (float64)


@pytest.mark.parametrize("case", range(13))
def test_gradcheck(case):
    name, arrays, kw = list(_cases())[case]
    ins = [eager.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    kw = {k: _t(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fn = getattr(F, name)
        for reduction in ("none", "mean"):
            assert gradcheck(lambda *a, r=reduction: fn(*a, reduction=r, **kw), ins)


def test_gradcheck_regions():
    """Both branches of smooth_l1/huber and both saturations of BCE-with-logits."""
    d = _t(np.array([-3.0, -0.4, 0.3, 2.5, 0.05]), grad=True)
    y = _t(np.zeros(5))
    assert gradcheck(lambda a: F.smooth_l1_loss(a, y, reduction="none", beta=0.5), (d,))
    assert gradcheck(lambda a: F.huber_loss(a, y, reduction="none", delta=0.5), (d,))
    x = _t(np.array([-40.0, -3.0, 0.0, 3.0, 40.0]), grad=True)
    t = _t(np.array([0.2, 1.0, 0.5, 0.0, 0.7]))
    assert gradcheck(lambda a: F.binary_cross_entropy_with_logits(a, t, reduction="none"), (x,))


# ---------------------------------------------------------------- errors


X = np.random.default_rng(9).standard_normal((3, 5))
ERRORS = [
    (lambda: F.cross_entropy(_t(X), _t([1, 2])), ValueError,
     r"Expected input batch_size \(3\) to match target batch_size \(2\)"),
    (lambda: F.cross_entropy(_t(X), _t(np.zeros((3, 5), np.int64))), RuntimeError,
     "Expected floating point type for target with class probabilities, got Long"),
    (lambda: F.cross_entropy(_t(X), _t(np.zeros((3, 4)))), RuntimeError,
     "0D or 1D target tensor expected, multi-target not supported"),
    (lambda: F.cross_entropy(_t(X), _t([1, 5, 0])), IndexError, "Target 5 is out of bounds."),
    (lambda: F.nll_loss(_t(X), _t([1, -3, 0])), IndexError, "Target -3 is out of bounds."),
    (lambda: F.cross_entropy(_t(X), _t(np.zeros((3, 5))), ignore_index=1), RuntimeError,
     "ignore_index is not supported for floating point target"),
    (lambda: F.cross_entropy(_t(X), _t([1, 2, 0]), reduction="avg"), ValueError,
     "avg is not a valid value for reduction"),
    (lambda: F.cross_entropy(_t(X), _t([1, 2, 0]), label_smoothing=1.5), RuntimeError,
     "label_smoothing must be between 0.0 and 1.0"),
    (lambda: F.cross_entropy(_t(X), _t([1, 2, 0]), weight=_t(np.ones(4))), RuntimeError,
     r"weight tensor should be defined either for all 5 classes .* shape: \[4\]"),
    (lambda: F.cross_entropy(_t(X), _t(np.zeros((3, 5))), weight=_t(np.ones(4))), RuntimeError,
     "cross_entropy: weight tensor should be defined"),
    (lambda: F.nll_loss(_t(X), _t([1.0, 2.0, 0.0])), RuntimeError,
     "expected target dtype to be Long or Byte, but got Double"),
    (lambda: F.nll_loss(_t(X), eager.tensor([1, 2, 0], dtype=eager.int32)), RuntimeError,
     "expected target dtype to be Long or Byte, but got Int"),
    (lambda: F.nll_loss(_t(np.zeros((2, 3, 4, 5))), _t(np.zeros((2, 4), np.int64))),
     RuntimeError, "only batches of spatial targets supported .* dimension: 2"),
    (lambda: F.nll_loss(_t(np.zeros((2, 3, 4))), _t(np.zeros((2, 5), np.int64))),
     RuntimeError, r"Expected target size \[2, 4\], got \[2, 5\]"),
    (lambda: F.nll_loss(_t(np.zeros(4)), _t([1, 2])), ValueError,
     "For 1D input, 1D target must have size 1"),
    (lambda: F.nll_loss(_t(1.0), _t(0)), ValueError, r"Expected 1 or more dimensions \(got 0\)"),
    (lambda: F.nll_loss(_t(X), _t([1, 2, 0]), weight=_t(np.ones(5, np.float32))), RuntimeError,
     "expected scalar type Double but found Float"),
    (lambda: F.binary_cross_entropy(_t([0.5, 1.5]), _t([0.0, 1.0])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(_t([0.5, np.nan]), _t([0.0, 1.0])), RuntimeError,
     "all elements of input should be between 0 and 1"),
    (lambda: F.binary_cross_entropy(_t([0.5, 0.5]), _t([0.0, 1, 1])), ValueError,
     "Using a target size .* is deprecated"),
    (lambda: F.binary_cross_entropy(_t([0.5, 0.5]), _t([0, 1])), RuntimeError,
     "Found dtype Long but expected Double"),
    (lambda: F.binary_cross_entropy(_t([[0.5, 0.5]]), _t([[0.0, 1.0]]),
                                    weight=_t(np.ones((3, 1, 2)))), RuntimeError,
     "doesn't match the broadcast shape"),
    (lambda: F.binary_cross_entropy_with_logits(_t([0.5, 0.5]), _t([0.0, 1, 1])), ValueError,
     "must be the same as input size"),
    (lambda: F.binary_cross_entropy_with_logits(_t([0.5, 0.5]), _t([0, 1])), RuntimeError,
     "can't be cast to the desired output type Long"),
    (lambda: F.mse_loss(_t([1, 2]), _t([1, 2])), NotImplementedError,
     "not implemented for 'Long'"),
    (lambda: F.mse_loss(_t(X), _t(X), reduction="x"), ValueError,
     "x is not a valid value for reduction"),
    (lambda: F.l1_loss(_t(X), _t(X), weight=_t(np.ones(2))), ValueError,
     "Weights and input must have the same size."),
    (lambda: F.smooth_l1_loss(_t(X), _t(X), beta=-1.0), RuntimeError,
     "smooth_l1_loss does not support negative values for beta."),
    (lambda: F.huber_loss(_t(X), _t(X), delta=0.0), RuntimeError,
     "huber_loss does not support non-positive values for delta."),
    (lambda: F.huber_loss(_t(X), _t(X), reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
    (lambda: F.kl_div(_t(X), _t(X), reduction="bad"), ValueError,
     "bad is not a valid value for reduction"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    fn, exc, match = ERRORS[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match):
            fn()


@needs_torch
@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch_types(case):
    """PyTorch raises the same error type on the same call (run with `F`, `_t` and `eager`
    rebound to torch.nn.functional, torch.tensor and torch)."""
    fn, exc, _ = ERRORS[case]
    if case == 16:  # PyTorch accepts a float32 class weight with float64 cross entropy here
        return
    g = dict(fn.__globals__, F=TF, eager=torch,
             _t=lambda a, grad=False: torch.tensor(np.asarray(a)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(exc):
            types.FunctionType(fn.__code__, g)()


def test_legacy_size_average_reduce():
    x, y = _t(np.arange(4.0)), _t(np.zeros(4))
    with pytest.warns(UserWarning):
        assert F.mse_loss(x, y, size_average=False).item() == 14.0
    with pytest.warns(UserWarning):
        assert F.mse_loss(x, y, reduce=False).shape == (4,)


# ---------------------------------------------------------------- capture


def test_capture_cross_entropy_and_mse():
    import capture

    def step(x, t, y):
        return F.cross_entropy(x, t, label_smoothing=0.1) + F.mse_loss(x.softmax(1), y)

    rng = np.random.default_rng(10)
    x = _t(rng.standard_normal((6, 4)).astype(np.float32))
    t = _t(rng.integers(0, 4, 6))
    y = _t(rng.random((6, 4)).astype(np.float32))
    compiled = capture.compile(step)
    np.testing.assert_allclose(compiled(x, t, y).numpy(), step(x, t, y).numpy(), rtol=1e-5)
    np.testing.assert_allclose(compiled(x, t, y).numpy(), step(x, t, y).numpy(), rtol=1e-5)
    report = capture.explain(step)(x, t, y)
    np.testing.assert_allclose(report.result.numpy(), step(x, t, y).numpy(), rtol=1e-5)
    assert report.graph_count >= 1
    # only the value check of the class indices runs eagerly (one break per nesting level)
    assert all("check_class_indices" in r.reason for r in report.break_reasons), \
        [r.reason for r in report.break_reasons]
    with pytest.raises(IndexError, match="Target 4 is out of bounds."):
        compiled(x, _t(np.array([0, 1, 2, 3, 4, 0])), y)


def test_capture_pointwise_losses_one_graph():
    import capture

    def f(x, y):
        return F.mse_loss(x, y) + F.l1_loss(x, y) + F.smooth_l1_loss(x, y) + \
            F.huber_loss(x, y) + F.binary_cross_entropy_with_logits(x, y.sigmoid())

    rng = np.random.default_rng(11)
    x, y = _t(rng.standard_normal((3, 4))), _t(rng.standard_normal((3, 4)))
    report = capture.explain(f)(x, y)
    assert (report.graph_count, report.graph_break_count) == (1, 0)
    np.testing.assert_allclose(report.result.numpy(), f(x, y).numpy(), rtol=1e-12)
