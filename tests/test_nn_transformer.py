"""nn.Transformer, TransformerDecoder(Layer) and generate_square_subsequent_mask against torch:
state_dict names both ways, outputs and every gradient for post-norm and norm_first,
activations by name and as callables, batch_first, unbatched inputs, bool/float attention masks,
key padding masks and is_causal hints; errors as torch's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import eager  # noqa: E402

D_MODEL, NHEAD, FF = 16, 4, 24


def _copy(src_mod, dst_mod, to_lib):
    dst_mod.load_state_dict({k: to_lib.tensor(np.array(v.detach().numpy()))
                             for k, v in src_mod.state_dict().items()})


def _pair(make):
    """The same module built by torch and by wick, wick's weights loaded from torch's."""
    t = make(torch)
    e = make(eager)
    assert list(t.state_dict()) == list(e.state_dict())
    _copy(t, e, eager)
    return t, e


def _check(t_out, e_out, t_mod, e_mod, rtol=1e-4, atol=1e-5):
    np.testing.assert_allclose(e_out.detach().numpy(), t_out.detach().numpy(), rtol=rtol,
                               atol=atol)
    w = np.random.default_rng(1).standard_normal(tuple(t_out.shape)).astype(np.float32)
    (t_out * torch.tensor(w)).sum().backward()
    (e_out * eager.tensor(w)).sum().backward()
    tp, ep = dict(t_mod.named_parameters()), dict(e_mod.named_parameters())
    assert list(tp) == list(ep)
    for k in tp:
        if tp[k].grad is None:
            assert ep[k].grad is None, k
            continue
        np.testing.assert_allclose(ep[k].grad.numpy(), tp[k].grad.numpy(), rtol=1e-3,
                                   atol=1e-4, err_msg=k)


def _inputs(shape, seed):
    a = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return torch.tensor(a, requires_grad=True), eager.tensor(a, requires_grad=True)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu", "callable"])
@pytest.mark.parametrize("batch_first", [False, True])
def test_decoder_layer(norm_first, activation, batch_first):
    def make(lib):
        act = (lambda x: lib.nn.functional.silu(x)) if activation == "callable" else activation
        return lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0, activation=act,
                                              batch_first=batch_first, norm_first=norm_first)

    t, e = _pair(make)
    tgt_shape, mem_shape = ((2, 5, D_MODEL), (2, 7, D_MODEL)) if batch_first \
        else ((5, 2, D_MODEL), (7, 2, D_MODEL))
    (tt, te), (mt, me) = _inputs(tgt_shape, 2), _inputs(mem_shape, 3)
    mask_t = torch.nn.Transformer.generate_square_subsequent_mask(5)
    mask_e = eager.nn.Transformer.generate_square_subsequent_mask(5)
    out_t = t(tt, mt, tgt_mask=mask_t, tgt_is_causal=True)
    out_e = e(te, me, tgt_mask=mask_e, tgt_is_causal=True)
    _check(out_t, out_e, t, e)
    np.testing.assert_allclose(te.grad.numpy(), tt.grad.numpy(), rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(me.grad.numpy(), mt.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_decoder_masks_and_padding():
    def make(lib):
        layer = lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0)
        return lib.nn.TransformerDecoder(layer, 2, norm=lib.nn.LayerNorm(D_MODEL))

    t, e = _pair(make)
    (tt, te), (mt, me) = _inputs((4, 3, D_MODEL), 4), _inputs((6, 3, D_MODEL), 5)
    bool_mask = np.triu(np.ones((4, 4), bool), 1)
    mem_mask = np.zeros((4, 6), np.float32)
    mem_mask[:, -1] = -1e4
    tkpm = np.zeros((3, 4), bool)
    tkpm[1, 3] = True
    mkpm = np.zeros((3, 6), bool)
    mkpm[2, 4:] = True
    out_t = t(tt, mt, tgt_mask=torch.tensor(bool_mask), memory_mask=torch.tensor(mem_mask),
              tgt_key_padding_mask=torch.tensor(tkpm), memory_key_padding_mask=torch.tensor(mkpm))
    out_e = e(te, me, tgt_mask=eager.tensor(bool_mask), memory_mask=eager.tensor(mem_mask),
              tgt_key_padding_mask=eager.tensor(tkpm), memory_key_padding_mask=eager.tensor(mkpm))
    _check(out_t, out_e, t, e)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_transformer(norm_first, batch_first):
    def make(lib):
        return lib.nn.Transformer(D_MODEL, NHEAD, 2, 2, FF, dropout=0.0,
                                  batch_first=batch_first, norm_first=norm_first)

    t, e = _pair(make)
    src_shape, tgt_shape = ((3, 7, D_MODEL), (3, 5, D_MODEL)) if batch_first \
        else ((7, 3, D_MODEL), (5, 3, D_MODEL))
    (st, se), (tt, te) = _inputs(src_shape, 6), _inputs(tgt_shape, 7)
    skpm = np.zeros((3, 7), bool)
    skpm[0, 5:] = True
    out_t = t(st, tt, tgt_mask=torch.nn.Transformer.generate_square_subsequent_mask(5),
              src_key_padding_mask=torch.tensor(skpm), memory_key_padding_mask=torch.tensor(skpm))
    out_e = e(se, te, tgt_mask=eager.nn.Transformer.generate_square_subsequent_mask(5),
              src_key_padding_mask=eager.tensor(skpm), memory_key_padding_mask=eager.tensor(skpm))
    _check(out_t, out_e, t, e)
    np.testing.assert_allclose(se.grad.numpy(), st.grad.numpy(), rtol=1e-3, atol=1e-4)


def test_unbatched_decoder():
    t, e = _pair(lambda lib: lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF, dropout=0.0))
    (tt, te), (mt, me) = _inputs((5, D_MODEL), 8), _inputs((6, D_MODEL), 9)
    _check(t(tt, mt), e(te, me), t, e)


def test_state_dict_loads_into_torch():
    e = eager.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF, dropout=0.0)
    t = torch.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF, dropout=0.0)
    t.load_state_dict({k: torch.tensor(v.numpy()) for k, v in e.state_dict().items()})
    (st, se), (tt, te) = _inputs((4, 2, D_MODEL), 10), _inputs((3, 2, D_MODEL), 11)
    np.testing.assert_allclose(e(se, te).detach().numpy(), t(st, tt).detach().numpy(),
                               rtol=1e-4, atol=1e-5)


def test_init_matches_torch_statistics():
    """Every >1-D parameter xavier_uniform_ (bound sqrt(6 / (fan_in + fan_out))), biases as
    the submodules make them."""
    e = eager.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
    for name, p in e.named_parameters():
        if p.dim() > 1:
            bound = (6.0 / (p.shape[0] + p.shape[1])) ** 0.5
            assert float(p.abs().max()) <= bound + 1e-6, name
    assert float(e.decoder.layers[0].self_attn.in_proj_bias.abs().max()) == 0.0


@pytest.mark.parametrize("sz", [1, 4])
def test_generate_square_subsequent_mask(sz):
    t = torch.nn.Transformer.generate_square_subsequent_mask(sz)
    e = eager.nn.Transformer.generate_square_subsequent_mask(sz)
    assert str(e.dtype) == "eager.float32" and t.dtype is torch.float32
    np.testing.assert_array_equal(e.numpy(), t.numpy())
    e64 = eager.nn.Transformer.generate_square_subsequent_mask(sz, dtype=eager.float64)
    assert e64.dtype is eager.float64


def test_errors_as_torch():
    for lib in (torch, eager):
        m = lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF)
        with pytest.raises(RuntimeError, match="batch number"):
            m(lib.zeros(3, 2, D_MODEL), lib.zeros(3, 4, D_MODEL))
        with pytest.raises(RuntimeError, match="d_model"):
            m(lib.zeros(3, 2, D_MODEL), lib.zeros(3, 2, D_MODEL + 1))
        with pytest.raises(RuntimeError, match="activation should be relu/gelu"):
            lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, activation="tanh")
        layer = lib.nn.TransformerDecoderLayer(D_MODEL, NHEAD, FF)
        with pytest.raises(RuntimeError, match="Need attn_mask"):
            layer(lib.zeros(3, 2, D_MODEL), lib.zeros(3, 2, D_MODEL), tgt_is_causal=True)


def test_repr_and_training_step():
    """A short training loop of a tiny seq2seq transformer: losses equal torch's."""
    losses = {}
    for lib in (torch, eager):
        lib.manual_seed(0)
    t, e = _pair(lambda lib: lib.nn.Transformer(D_MODEL, NHEAD, 1, 1, FF, dropout=0.0))
    src = np.random.default_rng(12).standard_normal((6, 2, D_MODEL)).astype(np.float32)
    tgt = np.random.default_rng(13).standard_normal((5, 2, D_MODEL)).astype(np.float32)
    for lib, m in ((torch, t), (eager, e)):
        opt = lib.optim.Adam(m.parameters(), lr=1e-3)
        mask = lib.nn.Transformer.generate_square_subsequent_mask(5)
        seq = []
        for _ in range(3):
            out = m(lib.tensor(src), lib.tensor(tgt), tgt_mask=mask)
            loss = lib.nn.functional.mse_loss(out, lib.tensor(tgt))
            opt.zero_grad()
            loss.backward()
            opt.step()
            seq.append(loss.item())
        losses[lib.__name__] = seq
    np.testing.assert_allclose(losses["eager"], losses["torch"], rtol=1e-4)
    assert "TransformerDecoderLayer" in repr(e)
