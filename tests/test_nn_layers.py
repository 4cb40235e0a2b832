"""Dropout, one_hot, embedding, layer_norm (eager.nn.functional) and the modules of
eager/nn/layers.py: values and gradients against numpy and PyTorch (when installed), dropout
statistics, train/eval, initialisation, printing, errors, and a short training loop in lockstep
with PyTorch."""

import itertools

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager import nn
from eager.autograd import gradcheck

try:
    import torch
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


def _t(a, grad=False):
    return eager.tensor(np.asarray(a), requires_grad=grad)


# ---------------------------------------------------------------- dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.8])
def test_dropout_statistics_and_scaling(p):
    eager.manual_seed(0)
    x = eager.ones(200, 500, requires_grad=True)
    y = F.dropout(x, p)
    out = y.detach().numpy()
    zero = out == 0
    # 100000 Bernoulli draws: the fraction is within 5 standard deviations of p
    assert abs(zero.mean() - p) < 5 * np.sqrt(p * (1 - p) / zero.size)
    np.testing.assert_array_equal(out[~zero], np.float32(1) / np.float32(1 - p))
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), out)  # mask / (1 - p)


def test_dropout_seeded_and_values():
    x = _t(np.random.default_rng(0).standard_normal((50, 40)))
    eager.manual_seed(3)
    a = F.dropout(x, 0.3)
    eager.manual_seed(3)
    b = F.dropout(x, 0.3)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    keep = a.numpy() != 0
    np.testing.assert_allclose(a.numpy()[keep], x.numpy()[keep] / 0.7, rtol=1e-15)


def test_dropout_identity_zero_and_errors():
    x = _t(np.array([1.0, np.nan, -2.0]))
    assert F.dropout(x, 0.5, training=False) is x
    assert F.dropout(x, 0.0) is x
    np.testing.assert_array_equal(F.dropout(x, 1.0).numpy(), [0.0, np.nan, -0.0])
    for p in (-0.1, 1.5):
        with pytest.raises(ValueError, match=f"dropout probability has to be between 0 and 1, "
                                             f"but got {p}"):
            F.dropout(x, p)
        with pytest.raises(ValueError, match="dropout probability"):
            nn.Dropout(p)
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        F.dropout(_t([1, 2]), 0.5)


def test_dropout_inplace_and_module_modes():
    eager.manual_seed(1)
    x = eager.ones(100)
    y = F.dropout(x, 0.5, inplace=True)
    assert y is x and x._version == 1 and (x.numpy() == 0).any()
    m = nn.Dropout(0.4)
    z = eager.ones(1000)
    assert m.training and (m(z).numpy() == 0).any()
    m.eval()
    assert m(z) is z
    seq = nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.5)).eval()
    assert not seq[1].training
    assert repr(m) == "Dropout(p=0.4, inplace=False)"


# ---------------------------------------------------------------- one_hot


def test_one_hot():
    t = np.array([[0, 3], [2, 1]])
    out = F.one_hot(_t(t))
    assert out.dtype is eager.int64 and out.shape == (2, 2, 4)
    np.testing.assert_array_equal(out.numpy(), np.eye(4, dtype=np.int64)[t])
    np.testing.assert_array_equal(F.one_hot(_t(2), 5).numpy(), [0, 0, 1, 0, 0])
    assert F.one_hot(_t(np.zeros(0, np.int64)), 3).shape == (0, 3)
    for args, msg in [((_t([1.0]),), "only applicable to index tensor of type LongTensor"),
                      ((_t([1, 5]), 3), "Class values must be smaller than num_classes."),
                      ((_t([1, -1]), 3), "Class values must be non-negative."),
                      ((_t(np.zeros(0, np.int64)),), "Can not infer total number of classes")]:
        with pytest.raises(RuntimeError, match=msg):
            F.one_hot(*args)


# ---------------------------------------------------------------- embedding


def test_embedding_values_and_gradients():
    rng = np.random.default_rng(2)
    w = rng.standard_normal((6, 3))
    idx = np.array([[0, 2, 2], [5, 1, 0]])
    weight = _t(w, grad=True)
    out = F.embedding(_t(idx), weight)
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    g = rng.standard_normal((2, 3, 3))
    out.backward(_t(g))
    ref = np.zeros_like(w)
    np.add.at(ref, idx, g)
    np.testing.assert_allclose(weight.grad.numpy(), ref, rtol=1e-15)
    # padding_idx: same values, no gradient for that row
    weight.grad = None
    out = F.embedding(eager.tensor(idx, dtype=eager.int32), weight, padding_idx=2)
    np.testing.assert_array_equal(out.detach().numpy(), w[idx])
    out.backward(_t(g))
    ref[2] = 0
    np.testing.assert_allclose(weight.grad.numpy(), ref, rtol=1e-15)
    assert gradcheck(lambda a: F.embedding(_t(idx), a), (_t(w, grad=True),))


def test_embedding_errors():
    w = _t(np.zeros((4, 3)))
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t([1, 7]), w)
    with pytest.raises(IndexError, match="index out of range in self"):
        F.embedding(_t([1, -1]), w)
    with pytest.raises(RuntimeError, match="'indices' to have one of the following scalar"):
        F.embedding(_t([1.0]), w)
    with pytest.raises(RuntimeError, match="'weight' must be 2-D"):
        F.embedding(_t([1]), _t(np.zeros(4)))
    for pad in (4, -5):
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            F.embedding(_t([1]), w, padding_idx=pad)
        with pytest.raises(AssertionError, match="Padding_idx must be within num_embeddings"):
            nn.Embedding(4, 3, padding_idx=pad)
    with pytest.raises(AssertionError, match="Shape of weight does not match"):
        nn.Embedding(4, 3, _weight=_t(np.zeros((2, 3))))


def test_embedding_max_norm():
    w = np.array([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    weight = _t(w.copy())
    out = F.embedding(_t([0, 1]), weight, max_norm=1.0)
    np.testing.assert_allclose(weight.numpy()[0], w[0] / (5 + 1e-7))
    np.testing.assert_array_equal(weight.numpy()[1:], w[1:])  # in norm, or unused
    np.testing.assert_allclose(out.numpy(), weight.numpy()[[0, 1]])


def test_embedding_module():
    eager.manual_seed(0)
    m = nn.Embedding(1000, 64, padding_idx=3)
    w = m.weight.detach().numpy()
    assert isinstance(m.weight, nn.Parameter) and m.weight.requires_grad
    np.testing.assert_array_equal(w[3], 0)
    rest = np.delete(w, 3, axis=0)
    assert abs(rest.mean()) < 0.01 and abs(rest.std() - 1) < 0.01  # N(0, 1)
    idx = _t([[3, 4], [5, 3]])
    m(idx).sum().backward()
    np.testing.assert_array_equal(m.weight.grad.numpy()[3], 0)
    np.testing.assert_array_equal(m.weight.grad.numpy()[4], 1)
    assert repr(m) == "Embedding(1000, 64, padding_idx=3)"
    assert nn.Embedding(5, 2, padding_idx=-1).padding_idx == 4
    pre = nn.Embedding.from_pretrained(_t(np.eye(3)))
    assert not pre.weight.requires_grad
    np.testing.assert_array_equal(pre(_t([2])).numpy(), [[0, 0, 1]])


# ---------------------------------------------------------------- layer_norm


def ref_layer_norm(x, k, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - k, x.ndim))
    mu = x.mean(axis=axes, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=axes, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
@pytest.mark.parametrize("shape,norm", [((4, 6), (6,)), ((2, 3, 4), (3, 4)), ((5,), 5)])
def test_layer_norm_values(shape, norm, dt):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 3 + 1).astype(dt)
    nshape = (norm,) if isinstance(norm, int) else norm
    w, b = rng.standard_normal(nshape).astype(dt), rng.standard_normal(nshape).astype(dt)
    out = F.layer_norm(_t(x), norm, _t(w), _t(b), eps=1e-3)
    assert out.dtype.np == dt
    tol = 1e-5 if dt == np.float32 else 1e-12
    np.testing.assert_allclose(out.numpy(), ref_layer_norm(x.astype(np.float64), len(nshape),
                                                           w, b, 1e-3), rtol=tol, atol=tol)
    np.testing.assert_allclose(F.layer_norm(_t(x), norm).numpy(),
                               ref_layer_norm(x.astype(np.float64), len(nshape)),
                               rtol=tol, atol=tol)


def test_layer_norm_gradcheck():
    rng = np.random.default_rng(4)
    x, w, b = (_t(rng.standard_normal(s), grad=True) for s in ((3, 2, 4), (2, 4), (2, 4)))
    assert gradcheck(lambda x, w, b: F.layer_norm(x, (2, 4), w, b), (x, w, b))


def test_layer_norm_errors():
    x = _t(np.zeros((3, 5)))
    for kw, msg in [({"normalized_shape": (4,)},
                     (r"Given normalized_shape=\[4\], expected input with shape \[\*, 4\], "
                      r"but got input of size\[3, 5\]")),
                    ({"normalized_shape": (5,), "weight": _t(np.ones(4))},
                     (r"Expected weight to be of same shape as normalized_shape, but got "
                      r"weight of shape \[4\] and normalized_shape = \[5\]")),
                    ({"normalized_shape": (5,), "bias": _t(np.ones(2))}, "Expected bias"),
                    ({"normalized_shape": ()}, "at least 1-dimensional")]:
        with pytest.raises(RuntimeError, match=msg):
            F.layer_norm(x, **kw)
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.layer_norm(_t(np.zeros((3, 5), np.int64)), (5,))


def test_layer_norm_module():
    m = nn.LayerNorm(4)
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias"]
    np.testing.assert_array_equal(m.weight.detach().numpy(), np.ones(4))
    np.testing.assert_array_equal(m.bias.detach().numpy(), np.zeros(4))
    assert repr(m) == "LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)"
    assert list(nn.LayerNorm([2, 3], elementwise_affine=False).parameters()) == []
    assert nn.LayerNorm(3, bias=False).bias is None
    assert nn.LayerNorm(3, dtype=eager.float64).weight.dtype is eager.float64
    x = np.random.default_rng(5).standard_normal((2, 4))
    np.testing.assert_allclose(m(_t(x)).detach().numpy(), ref_layer_norm(x, 1), rtol=1e-12)


# ---------------------------------------------------------------- small modules


def test_stateless_modules():
    x = np.random.default_rng(6).standard_normal((2, 3, 4))
    tx = _t(x)
    assert nn.Identity(3, k=1)(tx) is tx
    assert nn.Flatten()(tx).shape == (2, 12)
    assert nn.Flatten(0, 1)(tx).shape == (6, 4)
    np.testing.assert_allclose(nn.Tanh()(tx).numpy(), np.tanh(x), rtol=1e-15)
    np.testing.assert_allclose(nn.Sigmoid()(tx).numpy(), 1 / (1 + np.exp(-x)), rtol=1e-14)
    e = np.exp(x - x.max(1, keepdims=True))
    sm = e / e.sum(1, keepdims=True)
    np.testing.assert_allclose(nn.Softmax(1)(tx).numpy(), sm, rtol=1e-14)
    np.testing.assert_allclose(nn.LogSoftmax(dim=1)(tx).numpy(), np.log(sm), rtol=1e-13)
    reprs = {nn.Flatten(): "Flatten(start_dim=1, end_dim=-1)", nn.Softmax(1): "Softmax(dim=1)",
             nn.LogSoftmax(): "LogSoftmax(dim=None)", nn.Tanh(): "Tanh()",
             nn.Identity(): "Identity()", nn.CrossEntropyLoss(): "CrossEntropyLoss()"}
    for m, text in reprs.items():
        assert repr(m) == text


LOSS_MODULES = [
    (nn.MSELoss, F.mse_loss, {"reduction": "sum"}, "reg"),
    (nn.L1Loss, F.l1_loss, {}, "reg"),
    (nn.SmoothL1Loss, F.smooth_l1_loss, {"beta": 0.5}, "reg"),
    (nn.HuberLoss, F.huber_loss, {"delta": 0.5, "reduction": "none"}, "reg"),
    (nn.NLLLoss, F.nll_loss, {"ignore_index": 1}, "cls"),
    (nn.CrossEntropyLoss, F.cross_entropy, {"label_smoothing": 0.1, "ignore_index": 0}, "cls"),
    (nn.BCELoss, F.binary_cross_entropy, {"reduction": "sum"}, "prob"),
    (nn.BCEWithLogitsLoss, F.binary_cross_entropy_with_logits, {}, "prob"),
    (nn.KLDivLoss, F.kl_div, {"reduction": "batchmean", "log_target": True}, "reg"),
]


@pytest.mark.parametrize("case", range(len(LOSS_MODULES)))
def test_loss_modules_match_functional(case):
    cls, fn, kw, kind = LOSS_MODULES[case]
    rng = np.random.default_rng(7)
    x = _t(rng.random((4, 3)))
    y = {"reg": _t(rng.standard_normal((4, 3))), "cls": _t(rng.integers(0, 3, 4)),
         "prob": _t(rng.random((4, 3)))}[kind]
    np.testing.assert_array_equal(cls(**kw)(x, y).numpy(), fn(x, y, **kw).numpy())


def test_loss_module_weights_are_buffers():
    w = _t(np.array([1.0, 2.0, 0.5]))
    m = nn.CrossEntropyLoss(weight=w)
    assert dict(m.named_buffers()) == {"weight": w} and list(m.parameters()) == []
    x, t = _t(np.random.default_rng(8).standard_normal((4, 3))), _t([0, 1, 2, 1])
    np.testing.assert_array_equal(m(x, t).numpy(), F.cross_entropy(x, t, w).numpy())
    pw = _t(np.array([2.0, 1.0, 3.0]))
    b = nn.BCEWithLogitsLoss(pos_weight=pw)
    y = _t(np.random.default_rng(9).random((4, 3)))
    np.testing.assert_array_equal(
        b(x, y).numpy(), F.binary_cross_entropy_with_logits(x, y, pos_weight=pw).numpy())
    with pytest.warns(UserWarning):
        assert nn.MSELoss(size_average=False).reduction == "sum"


@needs_torch
def test_module_reprs_match_torch():
    pairs = [(nn.LayerNorm((2, 3), eps=1e-3, bias=False),
              torch.nn.LayerNorm((2, 3), eps=1e-3, bias=False)),
             (nn.Embedding(5, 2, padding_idx=1, max_norm=2.0),
              torch.nn.Embedding(5, 2, padding_idx=1, max_norm=2.0)),
             (nn.Dropout(0.2, True), torch.nn.Dropout(0.2, True)),
             (nn.Flatten(0, 2), torch.nn.Flatten(0, 2)), (nn.Softmax(-1), torch.nn.Softmax(-1)),
             (nn.HuberLoss(), torch.nn.HuberLoss()), (nn.KLDivLoss(), torch.nn.KLDivLoss())]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


@needs_torch
def test_layers_against_torch():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((3, 4, 5))
    lo, theirs = nn.LayerNorm(5, dtype=eager.float64), torch.nn.LayerNorm(5, dtype=torch.float64)
    w0 = rng.standard_normal(5)
    lo.weight.data.copy_(_t(w0))
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(w0))
    ex, tx = _t(x, grad=True), torch.tensor(x, requires_grad=True)
    a, b = lo(ex), theirs(tx)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(x.shape)
    a.backward(_t(g))
    b.backward(torch.tensor(g))
    np.testing.assert_allclose(ex.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lo.weight.grad.numpy(), theirs.weight.grad.numpy(), rtol=1e-10)
    w = rng.standard_normal((6, 2))
    idx = rng.integers(0, 6, (3, 4))
    ew, tw = _t(w, grad=True), torch.tensor(w, requires_grad=True)
    F.embedding(_t(idx), ew, padding_idx=2).sum().backward()
    torch.nn.functional.embedding(torch.tensor(idx), tw, padding_idx=2).sum().backward()
    np.testing.assert_array_equal(ew.grad.numpy(), tw.grad.numpy())
    tw2 = torch.tensor(w)
    torch.nn.functional.embedding(torch.tensor(idx), tw2, max_norm=1.0)
    ew2 = _t(w)
    F.embedding(_t(idx), ew2, max_norm=1.0)
    np.testing.assert_allclose(ew2.numpy(), tw2.numpy(), rtol=1e-12)


# ---------------------------------------------------------------- training


def _data():
    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = (x[:, 0] + 2 * x[:, 1] > 0).astype(np.int64) + (x[:, 2] > 1)
    w = (rng.standard_normal((3, 4)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(3) * 0.1).astype(np.float32)
    return x, y, w, b


def _train_eager(steps=20, lr=0.5):
    x, y, w, b = _data()
    model = nn.Linear(4, 3)
    model.weight.data.copy_(_t(w))
    model.bias.data.copy_(_t(b))
    loss_fn = nn.CrossEntropyLoss()
    losses = []
    for _ in range(steps):
        loss = loss_fn(model(_t(x)), _t(y))
        model.zero_grad()
        loss.backward()
        with eager.no_grad():
            for p in model.parameters():
                p -= lr * p.grad
        losses.append(loss.item())
    return losses


def test_training_loop_decreases_loss():
    losses = _train_eager()
    assert losses[-1] < 0.6 * losses[0]
    assert all(b <= a + 1e-6 for a, b in itertools.pairwise(losses))


@needs_torch
def test_training_loop_lockstep_with_torch():
    x, y, w, b = _data()
    model = torch.nn.Linear(4, 3)
    with torch.no_grad():
        model.weight.copy_(torch.tensor(w))
        model.bias.copy_(torch.tensor(b))
    loss_fn = torch.nn.CrossEntropyLoss()
    ref = []
    for _ in range(20):
        loss = loss_fn(model(torch.tensor(x)), torch.tensor(y))
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.5 * p.grad
        ref.append(loss.item())
    np.testing.assert_allclose(_train_eager(), ref, rtol=1e-5)
