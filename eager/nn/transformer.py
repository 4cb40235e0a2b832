"""The transformer decoder and the whole encoder-decoder model of `torch.nn`:
`TransformerDecoderLayer`, `TransformerDecoder`, `Transformer` (with
`generate_square_subsequent_mask`), as PyTorch 2.x's (torch/nn/modules/transformer.py):
constructor arguments and defaults, submodule and parameter names (so state dicts load both
ways), post-norm and pre-norm (`norm_first`) blocks, masks (bool or float attention masks, key
padding masks, `is_causal` hints). The attention itself is `attention.py`'s
`MultiheadAttention`; nothing here is a new op. Touches `eager` only.
"""

from __future__ import annotations

import copy

from ir import dtypes as D

from .. import creation
from . import functional as F
from .attention import MultiheadAttention, TransformerEncoder, TransformerEncoderLayer
from .attention import _get_activation_fn as _activation_of_name
from .containers import ModuleList
from .init import xavier_uniform_
from .layers import Dropout, LayerNorm
from .module import Linear, Module

__all__ = ["Transformer", "TransformerDecoder", "TransformerDecoderLayer"]


def _generate_square_subsequent_mask(sz: int, device=None, dtype=None):
    """(sz, sz) float mask: 0 on and below the diagonal, -inf above (position i may attend to
    positions <= i). dtype defaults to float32, device to the CPU."""
    dtype = D.float32 if dtype is None else dtype
    full = creation.full((sz, sz), float("-inf"), dtype=dtype, device=device)
    return full.triu(diagonal=1)


def _get_seq_len(src, batch_first: bool):
    if src.dim() == 2:  # unbatched: (S, E)
        return src.shape[0]
    return src.shape[1 if batch_first else 0]


def _detect_is_causal_mask(mask, is_causal=None, size=None) -> bool:
    """PyTorch's `_detect_is_causal_mask`: True when is_causal is True, or when it is None and
    `mask` equals the square subsequent mask of its size."""
    make_causal = is_causal is True
    if is_causal is None and mask is not None:
        sz = size if size else mask.shape[-2]
        causal = _generate_square_subsequent_mask(sz, device=mask.device, dtype=mask.dtype)
        make_causal = tuple(mask.shape) == tuple(causal.shape) and bool((mask == causal).all())
    return make_causal


def _get_clones(module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _activation(activation):
    return _activation_of_name(activation) if isinstance(activation, str) else activation


class TransformerDecoderLayer(Module):
    """Self-attention, attention over the encoder's output (`memory`), then a feed-forward
    block, each with a residual connection and a LayerNorm (`torch.nn.TransformerDecoderLayer`).

    tgt (T, N, d_model) ((N, T, d_model) with batch_first, (T, d_model) unbatched), memory
    (S, N, d_model) likewise -> tgt's shape. norm_first=False: x = norm1(x + sa(x)),
    x = norm2(x + mha(x, mem)), x = norm3(x + ff(x)); norm_first=True: x = x + sa(norm1(x)),
    x = x + mha(norm2(x), mem), x = x + ff(norm3(x)). `activation`: "relu", "gelu" or a
    callable (RuntimeError for another string). Submodules `self_attn`, `multihead_attn`,
    `linear1`, `dropout`, `linear2`, `norm1..3`, `dropout1..3` as PyTorch's.
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation=F.relu,
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, **kw)
        self.multihead_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                                 batch_first=batch_first, **kw)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **kw)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **kw)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.norm3 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.dropout3 = Dropout(dropout)
        self.activation = _activation(activation)

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=False, memory_is_causal=False):
        """tgt_mask (T, T) or (N * nhead, T, T), memory_mask (T, S): bool (True = not
        allowed) or float (added); *_key_padding_mask (N, T) / (N, S): True = ignored key.
        *_is_causal: hints that the mask is causal (the mask itself is applied)."""
        x = tgt
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), tgt_mask, tgt_key_padding_mask,
                                   tgt_is_causal)
            x = x + self._mha_block(self.norm2(x), memory, memory_mask,
                                    memory_key_padding_mask, memory_is_causal)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, tgt_mask, tgt_key_padding_mask,
                                              tgt_is_causal))
            x = self.norm2(x + self._mha_block(x, memory, memory_mask,
                                               memory_key_padding_mask, memory_is_causal))
            x = self.norm3(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           is_causal=is_causal, need_weights=False)[0]
        return self.dropout1(x)

    def _mha_block(self, x, mem, attn_mask, key_padding_mask, is_causal):
        x = self.multihead_attn(x, mem, mem, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask,
                                is_causal=is_causal, need_weights=False)[0]
        return self.dropout2(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout3(x)


class TransformerDecoder(Module):
    """A stack of `num_layers` deep copies of `decoder_layer`, then `norm` if given
    (`torch.nn.TransformerDecoder`); submodules `layers.0..` and `norm`."""

    def __init__(self, decoder_layer, num_layers, norm=None):
        super().__init__()
        self.layers = _get_clones(decoder_layer, num_layers)
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal=None, memory_is_causal=False):
        """As `TransformerDecoderLayer.forward`, through every layer. tgt_is_causal=None:
        detected from tgt_mask (equal to the square subsequent mask)."""
        seq_len = _get_seq_len(tgt, self.layers[0].self_attn.batch_first)
        tgt_is_causal = _detect_is_causal_mask(tgt_mask, tgt_is_causal, seq_len)
        out = tgt
        for mod in self.layers:
            out = mod(out, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                      tgt_key_padding_mask=tgt_key_padding_mask,
                      memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)
        if self.norm is not None:
            out = self.norm(out)
        return out


class Transformer(Module):
    """The encoder-decoder transformer of "Attention Is All You Need" (`torch.nn.Transformer`):
    `encoder` (a TransformerEncoder with a final LayerNorm, or `custom_encoder`), `decoder`
    (likewise). Parameters of more than one dimension are xavier_uniform_-initialised.

    forward(src (S, N, E), tgt (T, N, E), ...) -> (T, N, E) ((N, S, E) / (N, T, E) with
    batch_first; 2-D unbatched). RuntimeError when src and tgt have different batch sizes or
    a feature size other than d_model.
    """

    def __init__(self, d_model=512, nhead=8, num_encoder_layers=6, num_decoder_layers=6,
                 dim_feedforward=2048, dropout=0.1, activation=F.relu, custom_encoder=None,
                 custom_decoder=None, layer_norm_eps=1e-5, batch_first=False, norm_first=False,
                 bias=True, device=None, dtype=None):
        super().__init__()
        kw = {"device": device, "dtype": dtype}
        if custom_encoder is not None:
            self.encoder = custom_encoder
        else:
            layer = TransformerEncoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first,
                                            norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.encoder = TransformerEncoder(layer, num_encoder_layers, norm)
        if custom_decoder is not None:
            self.decoder = custom_decoder
        else:
            layer = TransformerDecoderLayer(d_model, nhead, dim_feedforward, dropout,
                                            activation, layer_norm_eps, batch_first,
                                            norm_first, bias, **kw)
            norm = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **kw)
            self.decoder = TransformerDecoder(layer, num_decoder_layers, norm)
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal=None, tgt_is_causal=None,
                memory_is_causal=False):
        """Masks as `TransformerEncoder` (src_*) and `TransformerDecoder` (tgt_*, memory_*)."""
        batched = src.dim() == 3
        if batched and src.shape[0 if self.batch_first else 1] != \
                tgt.shape[0 if self.batch_first else 1]:
            raise RuntimeError("the batch number of src and tgt must be equal")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError("the feature number of src and tgt must be equal to d_model")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """(sz, sz) float mask with -inf above the diagonal and 0 elsewhere (float32 unless
        `dtype` is given)."""
        return _generate_square_subsequent_mask(sz, device=device, dtype=dtype)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.dim() > 1:
                xavier_uniform_(p)
