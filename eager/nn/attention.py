"""Attention and transformer-encoder layers of `torch.nn`, composed from registry ops; also the
`torch.nn.attention` namespace (`SDPBackend`, `sdpa_kernel`, re-exported from `mha.py`).

`MultiheadAttention` (its computation in `mha.MHACore`, shared with the functional form),
`TransformerEncoderLayer` and `TransformerEncoder`, with PyTorch 2.x
semantics (the torch.nn documentation of each name, and the reference implementation given in
the documentation of `torch.nn.functional.scaled_dot_product_attention`). Nothing here is a new
op: matmul, softmax, masked_fill/where, linear, layer_norm and dropout do the work, so autograd
and capture see ordinary registry ops. Parameter names and initialisation follow PyTorch so that
state dicts line up. Touches `eager` only.
"""

from __future__ import annotations

import copy

from ..creation import empty
from . import functional as F
from .containers import ModuleList
from .init import constant_, xavier_normal_, xavier_uniform_
from .layers import Dropout, LayerNorm
from .mha import (  # noqa: F401  (torch.nn.attention's names)
    MHACore,
    SDPBackend,
    _canonical_mask,
    _mha_shape_check,
    scaled_dot_product_attention,
    sdpa_kernel,
)
from .module import Linear, Module, Parameter

# ---------------------------------------------------------------- MultiheadAttention


class NonDynamicallyQuantizableLinear(Linear):
    """A plain Linear (PyTorch's marker class for `MultiheadAttention.out_proj`)."""


class MultiheadAttention(MHACore, Module):
    """Multi-head attention (`torch.nn.MultiheadAttention`, "Attention Is All You Need" 3.2.2):
    out = concat(head_1..head_h) @ out_proj, head_i = attention(q W_q_i, k W_k_i, v W_v_i).

    Parameters as PyTorch's: `in_proj_weight` (3E, E) and `in_proj_bias` (3E) when
    kdim == vdim == embed_dim, else `q_proj_weight` (E, E), `k_proj_weight` (E, kdim),
    `v_proj_weight` (E, vdim); `bias_k`/`bias_v` (1, 1, E) with add_bias_kv; `out_proj` a
    Linear(E, E). Initialisation: xavier_uniform_ projections, zero biases, xavier_normal_
    bias_k/bias_v. AssertionError when embed_dim is not divisible by num_heads; ValueError
    when either is not positive.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False,
                 add_zero_attn=False, kdim=None, vdim=None, batch_first=False, device=None,
                 dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got embed_dim="
                             f"{embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        def param(*shape):
            return Parameter(empty(*shape, dtype=dtype, device=device))

        self.embed_dim = embed_dim
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.num_heads, self.dropout, self.batch_first = num_heads, dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        if not self._qkv_same_embed_dim:
            self.q_proj_weight = param(embed_dim, embed_dim)
            self.k_proj_weight = param(embed_dim, self.kdim)
            self.v_proj_weight = param(embed_dim, self.vdim)
            self.register_parameter("in_proj_weight", None)
        else:
            self.in_proj_weight = param(3 * embed_dim, embed_dim)
            self.register_parameter("q_proj_weight", None)
            self.register_parameter("k_proj_weight", None)
            self.register_parameter("v_proj_weight", None)
        if bias:
            self.in_proj_bias = param(3 * embed_dim)
        else:
            self.register_parameter("in_proj_bias", None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias,
                                                        device=device, dtype=dtype)
        if add_bias_kv:
            self.bias_k = param(1, 1, embed_dim)
            self.bias_v = param(1, 1, embed_dim)
        else:
            self.bias_k = self.bias_v = None
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()

    def _reset_parameters(self) -> None:
        if self._qkv_same_embed_dim:
            xavier_uniform_(self.in_proj_weight)
        else:
            xavier_uniform_(self.q_proj_weight)
            xavier_uniform_(self.k_proj_weight)
            xavier_uniform_(self.v_proj_weight)
        if self.in_proj_bias is not None:
            constant_(self.in_proj_bias, 0.0)
            constant_(self.out_proj.bias, 0.0)
        if self.bias_k is not None:
            xavier_normal_(self.bias_k)
        if self.bias_v is not None:
            xavier_normal_(self.bias_v)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        """query (L, N, E) (or (N, L, E) with batch_first, or (L, E) unbatched), key (S, N,
        kdim), value (S, N, vdim) -> (attn_output like query, attn_weights or None).

        key_padding_mask (N, S): True (or -inf) marks keys to ignore; attn_mask (L, S) or
        (N * num_heads, L, S): True = not allowed, floats are added. attn_weights: (N, L, S)
        averaged over heads (average_attn_weights) or (N, num_heads, L, S), only when
        need_weights. is_causal is a hint that attn_mask is the causal mask (RuntimeError
        without attn_mask). Errors as `torch.nn.MultiheadAttention.forward`."""
        batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask,
                                   self.num_heads)
        if batched and self.batch_first:
            same_kv, same_qk = key is value, query is key
            query = query.transpose(1, 0)
            key = query if same_qk and same_kv else key.transpose(1, 0)
            value = key if same_kv else value.transpose(1, 0)
        if not batched:
            same_kv, same_qk = key is value, query is key
            query = query.unsqueeze(1)
            key = query if same_qk and same_kv else key.unsqueeze(1)
            value = key if same_kv else value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        out, weights = self._attention(query, key, value, key_padding_mask, need_weights,
                                       attn_mask, average_attn_weights, is_causal)
        if not batched:
            out = out.squeeze(1)
            weights = weights.squeeze(0) if weights is not None else None
        elif self.batch_first:
            out = out.transpose(1, 0)
        return out, weights

# ---------------------------------------------------------------- transformer encoder


def _get_activation_fn(activation):
    if activation == "relu":
        return F.relu
    if activation == "gelu":
        return F.gelu
    raise RuntimeError(f"activation should be relu/gelu, not {activation}")


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with residual and LayerNorm
    (`torch.nn.TransformerEncoderLayer`): src (S, N, d_model), or (N, S, d_model) with
    batch_first, or (S, d_model) -> the same shape. norm_first=False: x = norm1(x + sa(x)),
    x = norm2(x + ff(x)); norm_first=True: x = x + sa(norm1(x)), x = x + ff(norm2(x)).
    `activation`: "relu", "gelu" or a callable (RuntimeError for another string). Submodules
    `self_attn`, `linear1`, `dropout`, `linear2`, `norm1`, `norm2`, `dropout1`, `dropout2` as
    PyTorch's."""

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu",
                 layer_norm_eps=1e-5, batch_first=False, norm_first=False, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout=dropout, bias=bias,
                                            batch_first=batch_first, device=device,
                                            dtype=dtype)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, device=device, dtype=dtype)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, device=device, dtype=dtype)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                               dtype=dtype)
        self.norm2 = LayerNorm(d_model, eps=layer_norm_eps, bias=bias, device=device,
                               dtype=dtype)
        self.dropout1 = Dropout(dropout)
        self.dropout2 = Dropout(dropout)
        self.activation = _get_activation_fn(activation) if isinstance(activation, str) \
            else activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        """src_mask (S, S) or (N * nhead, S, S) and src_key_padding_mask (N, S) as
        `MultiheadAttention`'s attn_mask and key_padding_mask (bool: True = ignored)."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype)
        src_mask = _canonical_mask(src_mask, "src_mask", src.dtype)
        x = src
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_mask, src_key_padding_mask, is_causal))
            x = self.norm2(x + self._ff_block(x))
        return x

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x):
        x = self.linear2(self.dropout(self.activation(self.linear1(x))))
        return self.dropout2(x)


class TransformerEncoder(Module):
    """A stack of `num_layers` deep copies of `encoder_layer`, then `norm` if given
    (`torch.nn.TransformerEncoder`); submodules `layers.0..` and `norm`. `enable_nested_tensor`
    and `mask_check` are accepted and ignored (padded positions are computed, not zeroed)."""

    def __init__(self, encoder_layer, num_layers, norm=None, enable_nested_tensor=True,
                 mask_check=True):
        super().__init__()
        self.layers = ModuleList([copy.deepcopy(encoder_layer) for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=None):
        """src as `TransformerEncoderLayer`; mask (S, S) and src_key_padding_mask (N, S) are
        passed to every layer; is_causal is a hint (results do not depend on it)."""
        src_key_padding_mask = _canonical_mask(src_key_padding_mask, "src_key_padding_mask",
                                               src.dtype)
        mask = _canonical_mask(mask, "mask", src.dtype)
        out = src
        for mod in self.layers:
            out = mod(out, src_mask=mask, src_key_padding_mask=src_key_padding_mask,
                      is_causal=bool(is_causal) and mask is not None)
        if self.norm is not None:
            out = self.norm(out)
        return out
