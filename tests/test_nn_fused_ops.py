"""The transformer's whole-composite ops (ir/ops/transformer.py: `_layer_norm`,
`_attention_weights`) and linear's 2-D GEMM paths, against PyTorch: values and gradients,
weights or none, several normalized dims, non-contiguous inputs, float and bool masks (a float
mask's own gradient), fully masked rows, empty dims, and autocast bfloat16."""

from __future__ import annotations

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _pair(a, requires_grad=True):
    return (eager.tensor(a, requires_grad=requires_grad),
            torch.tensor(a, requires_grad=requires_grad))


def _close(w, t, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(np.asarray(w.detach().numpy(), np.float64),
                               t.detach().double().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("shape,k,affine", [((5, 7), 1, True), ((2, 3, 4, 6), 2, True),
                                            ((3, 8, 16), 1, False), ((4, 1), 1, True)])
def test_layer_norm_matches_torch_values_and_grads(shape, k, affine):
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(shape) * 3 + 100).astype(np.float32)  # a large mean
    ns = shape[-k:]
    wx, tx = _pair(x)
    ww, tw = _pair(rng.standard_normal(ns).astype(np.float32))
    wb, tb = _pair(rng.standard_normal(ns).astype(np.float32))
    g = rng.standard_normal(shape).astype(np.float32)
    args_w = (ww, wb) if affine else (None, None)
    args_t = (tw, tb) if affine else (None, None)
    out = eager.nn.functional.layer_norm(wx, ns, *args_w, eps=1e-4)
    ref = torch.nn.functional.layer_norm(tx, ns, *args_t, eps=1e-4)
    assert "LayerNorm" in type(out.grad_fn).__name__  # one node, not the decomposition's
    out.backward(eager.tensor(g))
    ref.backward(torch.tensor(g))
    _close(out, ref, 1e-4, 1e-4)
    _close(wx.grad, tx.grad, 1e-3, 1e-3)
    if affine:
        _close(ww.grad, tw.grad, 1e-4, 1e-3)
        _close(wb.grad, tb.grad, 1e-5, 1e-4)


def test_layer_norm_non_contiguous_input_and_float64():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((6, 4, 5))
    wx, tx = _pair(x)
    out = eager.nn.functional.layer_norm(wx.transpose(0, 2), (6,))
    ref = torch.nn.functional.layer_norm(tx.transpose(0, 2), (6,))
    out.sum().backward()
    ref.sum().backward()
    assert out.dtype == eager.float64
    _close(out, ref, 1e-12, 1e-12)
    _close(wx.grad, tx.grad, 1e-10, 1e-10)


def _torch_weights(q, k, mask, scale):
    s = q @ k.transpose(-2, -1) * scale
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf")) if mask.dtype == torch.bool else s + mask
    return torch.softmax(s, -1)


def test_sdpa_float_mask_gradient_matches_torch():
    rng = np.random.default_rng(2)
    q, k, v = (rng.standard_normal((2, 3, 5, 4)).astype(np.float64) for _ in range(3))
    m = rng.standard_normal((1, 3, 5, 5))
    (wq, tq), (wk, tk), (wv, tv), (wm, tm) = map(_pair, (q, k, v, m))
    out = eager.nn.functional.scaled_dot_product_attention(wq, wk, wv, wm, scale=0.7)
    ref = _torch_weights(tq, tk, tm, 0.7) @ tv
    g = rng.standard_normal(out.shape)
    out.backward(eager.tensor(g))
    ref.backward(torch.tensor(g))
    _close(out, ref, 1e-12, 1e-12)
    for a, b in ((wq, tq), (wk, tk), (wv, tv), (wm, tm)):
        _close(a.grad, b.grad, 1e-10, 1e-10)


def test_attention_weights_bool_mask_dead_row_and_broadcast():
    """A bool mask broadcast over heads, one query row with no key to attend to: zeros and
    zero gradients there, torch's softmax elsewhere."""
    from eager.dispatch import FUNCTIONS

    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 3, 4, 8)).astype(np.float32)
    k = rng.standard_normal((2, 3, 6, 8)).astype(np.float32)
    keep = rng.random((2, 1, 4, 6)) < 0.6
    keep[:, :, 1] = False
    keep[:, :, 0, 0] = True
    (wq, tq), (wk, tk) = _pair(q), _pair(k)
    w = FUNCTIONS["_attention_weights"](wq, wk, eager.tensor(keep), scale=0.25)
    assert type(w.grad_fn).__name__ == "AttentionWeightsBackward0"
    assert np.all(w.detach().numpy()[:, :, 1] == 0)
    g = rng.standard_normal(w.shape).astype(np.float32)
    w.backward(eager.tensor(g))
    live = np.ones(w.shape, bool)
    live[:, :, 1] = False
    keep_t = torch.tensor(keep)
    keep_t[:, :, 1] = True  # (torch's plain softmax would give NaN on the dead row)
    ref = _torch_weights(tq, tk, keep_t, 0.25)
    ref.backward(torch.tensor(np.where(live, g, 0)))
    np.testing.assert_allclose(w.detach().numpy()[live], ref.detach().numpy()[live],
                               rtol=1e-5, atol=1e-6)
    _close(wq.grad, tq.grad, 1e-4, 1e-5)
    _close(wk.grad, tk.grad, 1e-4, 1e-5)


@pytest.mark.parametrize("xshape,wshape", [((3, 4, 5), (6, 5)), ((2, 3, 0), (4, 0)),
                                           ((2, 0, 5), (3, 5)), ((2, 2, 3, 5), (4, 5))])
def test_linear_batched_and_empty_match_torch(xshape, wshape):
    rng = np.random.default_rng(4)
    (wx, tx), (ww, tw), (wb, tb) = (_pair(rng.standard_normal(s).astype(np.float32))
                                    for s in (xshape, wshape, wshape[:1]))
    xs, ts = (wx.transpose(0, 1), tx.transpose(0, 1)) if 0 not in xshape else (wx, tx)
    out = eager.nn.functional.linear(xs, ww, wb)
    ref = torch.nn.functional.linear(ts, tw, tb)
    g = rng.standard_normal(tuple(ref.shape)).astype(np.float32)
    out.backward(eager.tensor(g))
    ref.backward(torch.tensor(g))
    _close(out, ref)
    for a, b in ((wx, tx), (ww, tw), (wb, tb)):
        _close(a.grad, b.grad, 1e-5, 1e-5)


def test_linear_under_autocast_bfloat16_matches_torch():
    rng = np.random.default_rng(5)
    (wx, tx), (ww, tw), (wb, tb) = (_pair(rng.standard_normal(s).astype(np.float32))
                                    for s in ((4, 3, 16), (8, 16), (8,)))
    with eager.autocast("cpu", dtype=eager.bfloat16):
        out = eager.nn.functional.linear(wx, ww, wb)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = torch.nn.functional.linear(tx, tw, tb)
    assert out.dtype == eager.bfloat16 and tuple(out.shape) == (4, 3, 8)
    out.float().sum().backward()
    ref.float().sum().backward()
    _close(out.float(), ref.float(), 2e-2, 2e-2)
    for a, b in ((wx, tx), (ww, tw), (wb, tb)):
        _close(a.grad, b.grad, 2e-2, 5e-2)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_step_under_autocast_matches_torch(norm_first):
    """A TransformerDecoderLayer with a causal mask and key padding, forward under autocast
    bfloat16: loss and weight gradients as torch's within bfloat16's precision."""
    rng = np.random.default_rng(6)
    mods = []
    for lib in (eager, torch):
        lib.manual_seed(0)
        mods.append(lib.nn.TransformerDecoderLayer(16, 2, 32, dropout=0.0,
                                                   norm_first=norm_first))
    mods[0].load_state_dict({k: eager.tensor(v.detach().numpy())
                             for k, v in mods[1].state_dict().items()})
    tgt = rng.standard_normal((5, 3, 16)).astype(np.float32)
    mem = rng.standard_normal((4, 3, 16)).astype(np.float32)
    pad = np.zeros((3, 4), bool)
    pad[1, 2:] = True
    proj = rng.standard_normal((5, 3, 16)).astype(np.float32)  # (mean(out ** 2) is ~1 flat)
    losses = []
    for lib, mod in zip((eager, torch), mods):
        mask = lib.nn.Transformer.generate_square_subsequent_mask(5)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out = mod(lib.tensor(tgt), lib.tensor(mem), tgt_mask=mask,
                      memory_key_padding_mask=lib.tensor(pad))
            loss = (out.float() * lib.tensor(proj)).sum()
        loss.backward()
        losses.append(float(loss.detach()))
    assert abs(losses[0] - losses[1]) <= 2e-2 * abs(losses[1])
    tg = dict(mods[1].named_parameters())
    for name, p in mods[0].named_parameters():  # (norm-wise: bfloat16 rounding flips a few
        want = tg[name].grad.numpy()  # ReLU gates near 0, differently in each library)
        err = np.linalg.norm(p.grad.numpy() - want) / np.linalg.norm(want)
        assert err < 0.1, (name, err)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("same_kv", [True, False])
def test_mha_memory_projection_matches_torch(bias, same_kv):
    """Attention over a memory (key is value: k and v from one matmul) and over distinct key
    and value tensors, with and without biases: outputs and every gradient as torch's."""
    rng = np.random.default_rng(7)
    torch.manual_seed(0)
    tm = torch.nn.MultiheadAttention(8, 2, bias=bias)
    wm = eager.nn.MultiheadAttention(8, 2, bias=bias)
    wm.load_state_dict({k: eager.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    q = rng.standard_normal((3, 2, 8)).astype(np.float32)
    mem = rng.standard_normal((5, 2, 8)).astype(np.float32)
    (wq, tq), (wk, tk) = _pair(q), _pair(mem)
    wv, tv = (wk, tk) if same_kv else _pair(mem * 0.5)
    kpm = np.zeros((2, 5), bool)
    kpm[0, 3:] = True
    out = wm(wq, wk, wv, key_padding_mask=eager.tensor(kpm), need_weights=False)[0]
    ref = tm(tq, tk, tv, key_padding_mask=torch.tensor(kpm), need_weights=False)[0]
    g = rng.standard_normal((3, 2, 8)).astype(np.float32)
    out.backward(eager.tensor(g))
    ref.backward(torch.tensor(g))
    _close(out, ref)
    for a, b in ((wq, tq), (wk, tk), (wv, tv)):
        _close(a.grad, b.grad, 1e-4, 1e-5)
    tp = dict(tm.named_parameters())
    for name, p in wm.named_parameters():
        _close(p.grad, tp[name].grad, 1e-4, 1e-5)


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_bfloat16_is_float32_inside_as_torch(affine):
    """bfloat16 input (and parameters): computed in float32 and rounded once, as PyTorch's CPU
    kernel: values and gradients within bfloat16's rounding of torch's."""
    rng = np.random.default_rng(8)
    x = (rng.standard_normal((6, 32)) * 2 + 30).astype(np.float32)
    g = rng.standard_normal((6, 32)).astype(np.float32)
    w = rng.standard_normal(32).astype(np.float32)
    res = []
    for lib in (eager, torch):
        xs = lib.tensor(x).to(lib.bfloat16).requires_grad_()
        ln = lib.nn.LayerNorm(32, elementwise_affine=affine).to(lib.bfloat16)
        if affine:
            with lib.no_grad():
                ln.weight.copy_(lib.tensor(w))
        out = ln(xs)
        out.backward(lib.tensor(g).to(lib.bfloat16))
        assert out.dtype == lib.bfloat16 and xs.grad.dtype == lib.bfloat16
        res.append([t.detach().float().numpy() for t in
                    (out, xs.grad) + ((ln.weight.grad, ln.bias.grad) if affine else ())])
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=2e-2, atol=2e-2 * float(np.abs(b).max()))
