"""scaled_dot_product_attention, MultiheadAttention, TransformerEncoderLayer and
TransformerEncoder (eager/nn/attention.py) against PyTorch (the same weights copied in, eval
mode): outputs and gradients in float32/float64, masks (bool, float, key padding, causal),
batch_first both ways, need_weights/average_attn_weights, norm_first both ways, state_dict
names, initialisation, dropout (against eager's own composition) and the error cases."""

import copy

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager import nn

try:
    import torch
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

TOL = {"float32": {"rtol": 2e-4, "atol": 2e-5}, "float64": {"rtol": 1e-9, "atol": 1e-11}}


def _rand(rng, shape, dtype):
    return rng.standard_normal(shape).astype(dtype)


def _pair(a, grad=True):
    """The same array as an eager and a torch tensor (both leaves)."""
    e = eager.tensor(a, requires_grad=grad and a.dtype.kind == "f")
    t = torch.tensor(a, requires_grad=grad and a.dtype.kind == "f")
    return e, t


def _close(e, t, dtype):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), **TOL[dtype])


def _copy_weights(em, tm):
    em.load_state_dict({k: eager.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})


# ---------------------------------------------------------------- scaled_dot_product_attention


def _sdpa_kwargs(kind, dtype, lib):
    """Keyword arguments of one masking case, built from the same numpy arrays for both
    libraries (`lib` is eager or torch)."""
    rng = np.random.default_rng(1)
    if kind == "bool":  # (L, S), broadcast over batch and heads; True = takes part
        m = rng.random((4, 5)) > 0.3
        m[:, 0] = True  # every row keeps one key
        return {"attn_mask": lib.tensor(m)}
    if kind == "float":  # (N, 1, L, S), added
        return {"attn_mask": lib.tensor(_rand(rng, (2, 1, 4, 5), dtype))}
    return {"causal": {"is_causal": True}, "scale": {"scale": 0.3}}.get(kind, {})


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("mask", ["none", "bool", "float", "causal", "scale"])
def test_sdpa_matches_torch_values_and_grads(dtype, mask):
    rng = np.random.default_rng(0)
    (eq, tq), (ek, tk), (ev, tv) = (_pair(_rand(rng, s, dtype)) for s in
                                    [(2, 3, 4, 8), (2, 3, 5, 8), (2, 3, 5, 6)])
    ekw, tkw = _sdpa_kwargs(mask, dtype, eager), _sdpa_kwargs(mask, dtype, torch)
    eo = F.scaled_dot_product_attention(eq, ek, ev, **ekw)
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, **tkw)
    _close(eo, to, dtype)
    g = _rand(rng, tuple(to.shape), dtype)
    eo.backward(eager.tensor(g))
    to.backward(torch.tensor(g))
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        _close(e.grad, t.grad, dtype)


@needs_torch
def test_sdpa_fully_masked_row_gives_zeros_and_finite_grads():
    rng = np.random.default_rng(2)
    (eq, tq), (ek, tk), (ev, tv) = (_pair(_rand(rng, s, "float64")) for s in
                                    [(3, 4, 8), (3, 5, 8), (3, 5, 2)])
    m = rng.random((3, 4, 5)) > 0.4
    m[1, 2] = False
    eo = F.scaled_dot_product_attention(eq, ek, ev, attn_mask=eager.tensor(m))
    to = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, attn_mask=torch.tensor(m))
    _close(eo, to, "float64")
    np.testing.assert_array_equal(eo.detach().numpy()[1, 2], 0.0)
    eo.sum().backward()
    to.sum().backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv)):
        assert np.isfinite(e.grad.numpy()).all()
        _close(e.grad, t.grad, "float64")


@needs_torch
def test_sdpa_gqa_and_unbatched_match_torch():
    rng = np.random.default_rng(3)
    q, k, v = (_rand(rng, s, "float64") for s in [(2, 6, 4, 8), (2, 2, 5, 8), (2, 3, 5, 8)])
    eo = F.scaled_dot_product_attention(*map(eager.tensor, (q, k, v)), enable_gqa=True)
    to = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q, k, v)),
                                                          enable_gqa=True)
    _close(eo, to, "float64")
    q2, k2, v2 = q[0, 0], k[0, 0], v[0, 0]
    eo = F.scaled_dot_product_attention(*map(eager.tensor, (q2, k2, v2)), is_causal=True)
    to = torch.nn.functional.scaled_dot_product_attention(*map(torch.tensor, (q2, k2, v2)),
                                                          is_causal=True)
    _close(eo, to, "float64")


def test_sdpa_dropout_uses_eager_generator():
    rng = np.random.default_rng(4)
    q, k, v = (eager.tensor(_rand(rng, s, "float64")) for s in [(2, 4, 8), (2, 5, 8), (2, 5, 3)])
    eager.manual_seed(7)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.4)
    eager.manual_seed(7)
    w = F.dropout(F.softmax(q @ k.transpose(-2, -1) / np.sqrt(8.0), -1), 0.4)
    np.testing.assert_allclose(out.numpy(), (w @ v).numpy(), rtol=1e-12, atol=1e-12)
    plain = F.scaled_dot_product_attention(q, k, v)
    assert not np.allclose(out.numpy(), plain.numpy())


def test_sdpa_errors():
    q = eager.randn(2, 4, 8)
    with pytest.raises(RuntimeError, match="Explicit attn_mask should not be set"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=eager.ones(4, 4, dtype=eager.bool),
                                       is_causal=True)
    with pytest.raises(RuntimeError, match="same dtype"):
        F.scaled_dot_product_attention(q, q.double(), q)
    with pytest.raises(RuntimeError, match="attn_mask dtype"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=eager.ones(4, 4, dtype=eager.int64))
    with pytest.raises(RuntimeError, match="must divide"):
        F.scaled_dot_product_attention(eager.randn(1, 3, 4, 8), eager.randn(1, 2, 4, 8),
                                       eager.randn(1, 2, 4, 8), enable_gqa=True)
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, eager.randn(2, 4, 7), q)


# ---------------------------------------------------------------- MultiheadAttention


def _mha_pair(dtype="float32", **kw):
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, **kw).eval()
    em = nn.MultiheadAttention(8, 2, **kw).eval()
    if dtype == "float64":
        tm, em = tm.double(), em.double()
    _copy_weights(em, tm)
    return em, tm


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights,average", [(True, True), (True, False), (False, True)])
def test_mha_self_attention_matches_torch(dtype, batch_first, need_weights, average):
    em, tm = _mha_pair(dtype, batch_first=batch_first)
    rng = np.random.default_rng(5)
    ex, tx = _pair(_rand(rng, (3, 4, 8), dtype))  # (L, N, E) or (N, L, E)
    n, s = (3, 4) if batch_first else (4, 3)
    kpm = rng.random((n, s)) > 0.7
    kpm[:, 0] = False
    eo, ew = em(ex, ex, ex, key_padding_mask=eager.tensor(kpm), need_weights=need_weights,
                average_attn_weights=average)
    to, tw = tm(tx, tx, tx, key_padding_mask=torch.tensor(kpm), need_weights=need_weights,
                average_attn_weights=average)
    _close(eo, to, dtype)
    assert (ew is None) == (tw is None)
    if tw is not None:
        assert tuple(ew.shape) == tuple(tw.shape)
        _close(ew, tw, dtype)
    g = _rand(rng, tuple(to.shape), dtype)
    eo.backward(eager.tensor(g))
    to.backward(torch.tensor(g))
    _close(ex.grad, tx.grad, dtype)
    _close(em.in_proj_weight.grad, tm.in_proj_weight.grad, dtype)
    _close(em.out_proj.weight.grad, tm.out_proj.weight.grad, dtype)


@needs_torch
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_cross_attention_masks_and_kdim_vdim(need_weights):
    em, tm = _mha_pair("float64", kdim=5, vdim=3, bias=False)
    rng = np.random.default_rng(6)
    (eq, tq), (ek, tk), (ev, tv) = (_pair(_rand(rng, s, "float64")) for s in
                                    [(4, 2, 8), (6, 2, 5), (6, 2, 3)])
    attn = _rand(rng, (2 * 2, 4, 6), "float64")  # 3-D float mask (N * H, L, S)
    kpm = _rand(rng, (2, 6), "float64")  # float key padding mask, added
    eo, ew = em(eq, ek, ev, attn_mask=eager.tensor(attn), key_padding_mask=eager.tensor(kpm),
                need_weights=need_weights)
    to, tw = tm(tq, tk, tv, attn_mask=torch.tensor(attn), key_padding_mask=torch.tensor(kpm),
                need_weights=need_weights)
    _close(eo, to, "float64")
    if need_weights:
        _close(ew, tw, "float64")
    eo.sum().backward()
    to.sum().backward()
    for e, t in ((eq, tq), (ek, tk), (ev, tv), (em.k_proj_weight, tm.k_proj_weight)):
        _close(e.grad, t.grad, "float64")


@needs_torch
@pytest.mark.parametrize("causal", [False, True])
def test_mha_bool_attn_mask_unbatched_and_causal_hint(causal):
    em, tm = _mha_pair("float64")
    rng = np.random.default_rng(7)
    x = _rand(rng, (5, 8), "float64")  # unbatched (L, E)
    m = np.triu(np.ones((5, 5), bool), 1)  # True = not allowed
    for need in (True, False):
        eo, ew = em(*[eager.tensor(x)] * 3, attn_mask=eager.tensor(m), is_causal=causal,
                    need_weights=need)
        tx = torch.tensor(x)
        to, tw = tm(tx, tx, tx, attn_mask=torch.tensor(m), is_causal=causal, need_weights=need)
        _close(eo, to, "float64")
        if need:
            _close(ew, tw, "float64")


@needs_torch
def test_mha_state_dict_names_and_init_match_torch():
    for kw in ({}, {"bias": False}, {"kdim": 5, "vdim": 3}, {"add_bias_kv": True}):
        em, tm = nn.MultiheadAttention(8, 2, **kw), torch.nn.MultiheadAttention(8, 2, **kw)
        assert list(em.state_dict()) == list(tm.state_dict())
        for k, v in tm.state_dict().items():
            assert tuple(em.state_dict()[k].shape) == tuple(v.shape)
    em = nn.MultiheadAttention(16, 4)
    np.testing.assert_array_equal(em.in_proj_bias.detach().numpy(), 0.0)
    np.testing.assert_array_equal(em.out_proj.bias.detach().numpy(), 0.0)
    bound = np.sqrt(6.0 / (16 + 48))  # xavier_uniform_ of (3E, E)
    w = em.in_proj_weight.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    assert em.head_dim == 4 and em._qkv_same_embed_dim


@needs_torch
def test_mha_add_bias_kv_and_zero_attn_match_torch():
    em, tm = _mha_pair("float64", add_bias_kv=True, add_zero_attn=True)
    rng = np.random.default_rng(8)
    x = _rand(rng, (3, 2, 8), "float64")
    kpm = np.zeros((2, 3), bool)
    kpm[1, 2] = True
    eo, ew = em(*[eager.tensor(x)] * 3, key_padding_mask=eager.tensor(kpm))
    tx = torch.tensor(x)
    to, tw = tm(tx, tx, tx, key_padding_mask=torch.tensor(kpm))
    _close(eo, to, "float64")
    _close(ew, tw, "float64")


def test_mha_errors():
    with pytest.raises(AssertionError, match="divisible"):
        nn.MultiheadAttention(10, 3)
    with pytest.raises(ValueError, match="greater than 0"):
        nn.MultiheadAttention(0, 2)
    m = nn.MultiheadAttention(8, 2)
    x = eager.randn(3, 2, 8)
    with pytest.raises(RuntimeError, match="Need attn_mask"):
        m(x, x, x, is_causal=True)
    with pytest.raises(RuntimeError, match="2D attn_mask"):
        m(x, x, x, attn_mask=eager.zeros(3, 4))
    with pytest.raises(RuntimeError, match="3D attn_mask"):
        m(x, x, x, attn_mask=eager.zeros(2, 3, 3))
    with pytest.raises(AssertionError, match="key_padding_mask shape"):
        m(x, x, x, key_padding_mask=eager.zeros(2, 4, dtype=eager.bool))
    with pytest.raises(AssertionError, match="only bool and floating"):
        m(x, x, x, key_padding_mask=eager.zeros(2, 3, dtype=eager.int64))
    with pytest.raises(AssertionError, match="embedding dimension of 8"):
        y = eager.randn(3, 2, 6)
        m(y, y, y)
    with pytest.raises(AssertionError, match="4-D query"):
        m(eager.randn(1, 3, 2, 8), x, x)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        m(x, x[0], x[0])


# ---------------------------------------------------------------- transformer encoder


def _layer_pair(dtype="float32", **kw):
    torch.manual_seed(1)
    tl = torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **kw).eval()
    el = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, **kw).eval()
    if dtype == "float64":
        tl, el = tl.double(), el.double()
    _copy_weights(el, tl)
    return el, tl


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_encoder_layer_matches_torch(dtype, norm_first, batch_first):
    el, tl = _layer_pair(dtype, norm_first=norm_first, batch_first=batch_first)
    rng = np.random.default_rng(9)
    ex, tx = _pair(_rand(rng, (3, 5, 8), dtype))
    s = 5 if batch_first else 3
    n = 3 if batch_first else 5
    kpm = rng.random((n, s)) > 0.7
    kpm[:, 0] = False
    causal = np.triu(np.ones((s, s), bool), 1)
    eo = el(ex, src_mask=eager.tensor(causal), src_key_padding_mask=eager.tensor(kpm))
    to = tl(tx, src_mask=torch.tensor(causal), src_key_padding_mask=torch.tensor(kpm))
    _close(eo, to, dtype)
    g = _rand(rng, tuple(to.shape), dtype)
    eo.backward(eager.tensor(g))
    to.backward(torch.tensor(g))
    _close(ex.grad, tx.grad, dtype)
    for name in ("self_attn.in_proj_weight", "linear1.weight", "norm2.bias"):
        _close(el.get_parameter(name).grad, tl.get_parameter(name).grad, dtype)


@needs_torch
@pytest.mark.parametrize("activation", ["gelu", "callable"])
def test_encoder_layer_activation_and_no_bias(activation):
    act = torch.nn.functional.silu if activation == "callable" else activation
    el, tl = _layer_pair("float64", activation=act, bias=False)
    if activation == "callable":
        el.activation = F.silu
    x = _rand(np.random.default_rng(10), (4, 2, 8), "float64")
    _close(el(eager.tensor(x)), tl(torch.tensor(x)), "float64")
    with pytest.raises(RuntimeError, match="relu/gelu"):
        nn.TransformerEncoderLayer(8, 2, activation="tanh")


@needs_torch
def test_encoder_stack_with_norm_matches_torch_and_layers_are_copies():
    torch.manual_seed(2)
    tlayer = torch.nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    tm = torch.nn.TransformerEncoder(tlayer, 2, norm=torch.nn.LayerNorm(8),
                                     enable_nested_tensor=False).eval().double()
    elayer = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
    em = nn.TransformerEncoder(elayer, 2, norm=nn.LayerNorm(8)).eval().double()
    assert list(em.state_dict()) == list(tm.state_dict())
    # deep copies: equal values, distinct parameters
    w0, w1 = em.layers[0].linear1.weight, em.layers[1].linear1.weight
    assert w0 is not w1
    np.testing.assert_array_equal(w0.detach().numpy(), w1.detach().numpy())
    with torch.no_grad():  # make the layers differ so a mixed-up copy would show
        for p in tm.layers[1].parameters():
            p.add_(0.1 * torch.randn(p.shape, dtype=p.dtype))
    _copy_weights(em, tm)
    rng = np.random.default_rng(11)
    ex, tx = _pair(_rand(rng, (2, 5, 8), "float64"))
    kpm = np.zeros((2, 5), bool)
    kpm[1, 3:] = True
    eo = em(ex, src_key_padding_mask=eager.tensor(kpm))
    to = tm(tx, src_key_padding_mask=torch.tensor(kpm))
    _close(eo, to, "float64")
    eo.sum().backward()
    to.sum().backward()
    _close(ex.grad, tx.grad, "float64")
    _close(em.layers[1].self_attn.out_proj.weight.grad,
           tm.layers[1].self_attn.out_proj.weight.grad, "float64")


def test_encoder_layer_dropout_train_vs_eval():
    eager.manual_seed(0)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.5)
    x = eager.randn(4, 2, 8)
    with eager.no_grad():
        ev = layer.eval()(x).numpy()
        np.testing.assert_array_equal(layer(x).numpy(), ev)  # eval is deterministic
        assert not np.allclose(layer.train()(x).numpy(), ev)
    stack = nn.TransformerEncoder(copy.deepcopy(layer), 3, enable_nested_tensor=True)
    assert len(stack.layers) == 3 and stack.training
