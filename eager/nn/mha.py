"""Attention as functions, below the Modules: `scaled_dot_product_attention` and
`multi_head_attention_forward` (both re-exported by `eager.nn.functional`), `MHACore` (the
computation of `MultiheadAttention`, which that Module and the functional form share), the mask
helpers, and `torch.nn.attention`'s kernel switches (`SDPBackend`, `sdpa_kernel`). PyTorch 2.x
semantics: the torch.nn documentation of each name and the reference implementation in the
documentation of `torch.nn.functional.scaled_dot_product_attention`. Nothing here is a new op:
matmul, softmax, masked_fill/where, linear and dropout do the work. This file imports only the
functional layer (`functional_base`), so `eager.nn.functional` can re-export it while the
Modules (`attention.py`) import `eager.nn.functional`. Touches `eager` only.
"""

from __future__ import annotations

import contextlib
import enum
import math

from ir import dtypes as D

from ..amp.policy import autocast_function
from ..creation import ones, zeros
from ..dispatch import FUNCTIONS
from . import functional_base as F

_NEG_INF = float("-inf")

__all__ = ["MHACore", "SDPBackend", "multi_head_attention_forward",
           "scaled_dot_product_attention", "sdpa_kernel"]


def _check_float(name: str, t) -> None:
    if not t.dtype.is_floating_point:
        raise RuntimeError(f"scaled_dot_product_attention: expected {name} to be a floating "
                           f"tensor, got {t.dtype}")


@autocast_function("scaled_dot_product_attention")
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0,
                                 is_causal=False, scale=None, enable_gqa=False):
    """softmax(query @ key^T * scale + bias) @ value
    (`torch.nn.functional.scaled_dot_product_attention`, PyTorch 2.x).

    query (N..., L, E), key (N..., S, E), value (N..., S, Ev) -> (N..., L, Ev); leading dims
    broadcast. `scale` defaults to 1 / sqrt(E). `attn_mask` broadcastable to (N..., L, S): a
    bool mask keeps the positions that are True (the others get -inf), a floating mask is added
    to the scores. `is_causal` masks position j > i (top-left aligned causal mask). A query row
    whose positions are all masked gives zeros (PyTorch's safe softmax), not NaN. `dropout_p`
    drops attention weights with eager's generator (always, as PyTorch: pass 0 in eval).
    `enable_gqa`: key/value may have fewer heads (dim -3) than query; they are repeated.

    RuntimeError: attn_mask given with is_causal=True; query/key/value of different or
    non-floating dtypes; a mask neither bool nor floating; heads that do not divide (gqa);
    mismatched E or S.
    """
    if is_causal and attn_mask is not None:
        raise RuntimeError("_scaled_dot_product_attention: Explicit attn_mask should not be set "
                           "when is_causal=True")
    if not (query.dtype == key.dtype == value.dtype):
        raise RuntimeError("Expected query, key, and value to have the same dtype, but got "
                           f"query.dtype: {query.dtype} key.dtype: {key.dtype} and "
                           f"value.dtype: {value.dtype} instead.")
    _check_float("query", query)
    if query.ndim < 2 or key.ndim < 2 or value.ndim < 2:
        raise RuntimeError("scaled_dot_product_attention: expected query, key and value to be "
                           "at least 2-D")
    if query.shape[-1] != key.shape[-1]:
        raise RuntimeError(f"scaled_dot_product_attention: query has embedding size "
                           f"{query.shape[-1]} but key has {key.shape[-1]}")
    if key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"scaled_dot_product_attention: key has sequence length "
                           f"{key.shape[-2]} but value has {value.shape[-2]}")
    if attn_mask is not None and attn_mask.dtype is not D.bool_ \
            and not attn_mask.dtype.is_floating_point:
        raise RuntimeError("Expected attn_mask dtype to be bool or float or to match query "
                           f"dtype, but got attn_mask.dtype: {attn_mask.dtype} and  "
                           f"query.dtype: {query.dtype} instead.")
    if enable_gqa and query.ndim >= 3:
        hq, hk, hv = query.shape[-3], key.shape[-3], value.shape[-3]
        if hq % hk or hq % hv:
            raise RuntimeError("Number of heads in key and value must divide the number of "
                               f"heads in query (query: {hq}, key: {hk}, value: {hv})")
        if hk != hq:
            key = key.repeat_interleave(hq // hk, dim=-3)
        if hv != hq:
            value = value.repeat_interleave(hq // hv, dim=-3)
    L, S = query.shape[-2], key.shape[-2]
    scale = 1.0 / math.sqrt(query.shape[-1]) if scale is None else scale
    if is_causal:  # (keeps key 0 in every row: no row is fully masked)
        attn_mask = ones(L, S, dtype=D.bool_, device=query.device).tril()
    value_dtype = query.dtype
    half = query.dtype in D.HALF  # float32 inside, the output rounded once (as PyTorch's CPU
    if half:  # kernels: rounding scores and weights at every step loses the small weights)
        query, key, value = query.float(), key.float(), value.float()
        if attn_mask is not None and attn_mask.dtype is not D.bool_:
            attn_mask = attn_mask.float()
    # softmax(q k^T * scale + mask), a row all at -inf giving zeros (ir/ops/transformer.py)
    weights = FUNCTIONS["_attention_weights"](query, key, attn_mask, scale=scale)
    if dropout_p > 0.0:
        weights = F.dropout(weights, dropout_p, training=True)
    out = weights @ value
    return out.to(value_dtype) if half else out


# ---------------------------------------------------------------- masks


def _canonical_mask(mask, name: str, target_dtype):
    """PyTorch's `F._canonical_mask`: a bool mask (True = masked out) becomes a float mask of
    `target_dtype` with -inf where True; a floating mask is returned as is. AssertionError for
    other dtypes."""
    if mask is None:
        return None
    if mask.dtype is D.bool_:
        out = zeros(tuple(mask.shape), dtype=target_dtype, device=mask.device)
        return out.masked_fill(mask, _NEG_INF)
    if not mask.dtype.is_floating_point:
        raise AssertionError(f"only bool and floating types of {name} are supported")
    return mask


def _mha_shape_check(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """PyTorch's `_mha_shape_check`: whether the input is batched, or AssertionError."""
    if query.ndim == 3:
        if key.ndim != 3 or value.ndim != 3:
            raise AssertionError("For batched (3-D) `query`, expected `key` and `value` to be "
                                 f"3-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 2:
            raise AssertionError("For batched (3-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 2-D but found {key_padding_mask.ndim}-D "
                                 "tensor instead")
        if attn_mask is not None and attn_mask.ndim not in (2, 3):
            raise AssertionError("For batched (3-D) `query`, expected `attn_mask` to be "
                                 f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor "
                                 "instead")
        return True
    if query.ndim == 2:
        if key.ndim != 2 or value.ndim != 2:
            raise AssertionError("For unbatched (2-D) `query`, expected `key` and `value` to "
                                 f"be 2-D but found {key.ndim}-D and {value.ndim}-D tensors "
                                 "respectively")
        if key_padding_mask is not None and key_padding_mask.ndim != 1:
            raise AssertionError("For unbatched (2-D) `query`, expected `key_padding_mask` to "
                                 f"be `None` or 1-D but found {key_padding_mask.ndim}-D "
                                 "tensor instead")
        if attn_mask is not None:
            if attn_mask.ndim not in (2, 3):
                raise AssertionError("For unbatched (2-D) `query`, expected `attn_mask` to be "
                                     f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D "
                                     "tensor instead")
            if attn_mask.ndim == 3:
                expected = (num_heads, query.shape[0], key.shape[0])
                if tuple(attn_mask.shape) != expected:
                    raise AssertionError(f"Expected `attn_mask` shape to be {expected} but "
                                         f"got {tuple(attn_mask.shape)}")
        return False
    raise AssertionError("query should be unbatched 2D or batched 3D tensor but received "
                         f"{query.ndim}-D query tensor")


class MHACore:
    """`MultiheadAttention`'s computation on the attributes it reads (`embed_dim`,
    `num_heads`, `head_dim`, the projection weights and biases, `bias_k`/`bias_v`,
    `add_zero_attn`, `dropout`, `training`, `out_proj`): shared by the Module and by
    `multi_head_attention_forward`'s explicit weights."""

    def _in_projection(self, query, key, value):
        """q, k, v: the packed projection sliced as PyTorch's `_in_projection_packed` (one
        matmul for self-attention, two when key is value), or the three separate weights."""
        E = self.embed_dim
        b = self.in_proj_bias

        def part(t, lo, hi):
            return None if t is None else t[lo:hi]

        if self._qkv_same_embed_dim:
            w = self.in_proj_weight
            if query is key and key is value:  # self-attention: one matmul
                return F.linear(query, w, b).chunk(3, -1)
            if key is value:  # attention over a memory: q, then k and v in one matmul
                kv = F.linear(key, w[E:], part(b, E, None)).chunk(2, -1)
                return (F.linear(query, w[:E], part(b, 0, E)),) + tuple(kv)
            wq, wk, wv = w[:E], w[E:2 * E], w[2 * E:]
        else:
            wq, wk, wv = self.q_proj_weight, self.k_proj_weight, self.v_proj_weight
        return (F.linear(query, wq, part(b, 0, E)), F.linear(key, wk, part(b, E, 2 * E)),
                F.linear(value, wv, part(b, 2 * E, None)))

    def _checked_masks(self, query, key, value, key_padding_mask, attn_mask, is_causal):
        """`_attention`'s input checks (PyTorch's errors); the masks as floats, a 2-D
        attn_mask as (1, L, S)."""
        tgt_len, bsz, embed_dim = query.shape
        src_len = key.shape[0]
        if embed_dim != self.embed_dim:
            raise AssertionError(f"was expecting embedding dimension of {self.embed_dim}, but "
                                 f"got {embed_dim}")
        if tuple(key.shape[:2]) != tuple(value.shape[:2]):
            raise AssertionError(f"key shape {tuple(key.shape)} does not match value shape "
                                 f"{tuple(value.shape)}")
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint. You may use "
                               "the Transformer module method `generate_square_subsequent_mask`"
                               " to create this mask.")
        key_padding_mask = _canonical_mask(key_padding_mask, "key_padding_mask", query.dtype)
        attn_mask = _canonical_mask(attn_mask, "attn_mask", query.dtype)
        if attn_mask is not None:
            if attn_mask.ndim == 2:
                if tuple(attn_mask.shape) != (tgt_len, src_len):
                    raise RuntimeError(f"The shape of the 2D attn_mask is "
                                       f"{tuple(attn_mask.shape)}, but should be "
                                       f"{(tgt_len, src_len)}.")
                attn_mask = attn_mask.unsqueeze(0)
            elif tuple(attn_mask.shape) != (bsz * self.num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is "
                                   f"{tuple(attn_mask.shape)}, but should be "
                                   f"{(bsz * self.num_heads, tgt_len, src_len)}.")
        return key_padding_mask, attn_mask

    def _attention(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                   average_attn_weights, is_causal):
        """The batch-second core of `forward` (PyTorch's `F.multi_head_attention_forward`)."""
        tgt_len, bsz, embed_dim = query.shape
        H, hd = self.num_heads, self.head_dim
        key_padding_mask, attn_mask = self._checked_masks(query, key, value, key_padding_mask,
                                                          attn_mask, is_causal)
        q, k, v = self._in_projection(query, key, value)
        if not need_weights and self.bias_k is None and not self.add_zero_attn:
            dropout_p = self.dropout if self.training else 0.0
            return self._sdpa_heads(q, k, v, attn_mask, key_padding_mask, dropout_p), None
        if self.bias_k is not None:
            k = FUNCTIONS["cat"]([k, self.bias_k.expand(1, bsz, embed_dim)])
            v = FUNCTIONS["cat"]([v, self.bias_v.expand(1, bsz, embed_dim)])
            attn_mask = F.pad(attn_mask, (0, 1)) if attn_mask is not None else None
            key_padding_mask = F.pad(key_padding_mask, (0, 1)) \
                if key_padding_mask is not None else None
        # (L, N, E) -> (N * H, L, hd)
        q = q.reshape(tgt_len, bsz * H, hd).transpose(0, 1)
        k = k.reshape(k.shape[0], bsz * H, hd).transpose(0, 1)
        v = v.reshape(v.shape[0], bsz * H, hd).transpose(0, 1)
        if self.add_zero_attn:
            pad = zeros(bsz * H, 1, hd, dtype=q.dtype, device=q.device)
            k, v = FUNCTIONS["cat"]([k, pad], 1), FUNCTIONS["cat"]([v, pad], 1)
            attn_mask = F.pad(attn_mask, (0, 1)) if attn_mask is not None else None
            key_padding_mask = F.pad(key_padding_mask, (0, 1)) \
                if key_padding_mask is not None else None
        src_len = k.shape[1]
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (bsz, src_len):
                raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, "
                                     f"but got {tuple(key_padding_mask.shape)}")
            kpm = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(-1, H, -1, -1)
            kpm = kpm.reshape(bsz * H, 1, src_len)
            attn_mask = kpm if attn_mask is None else attn_mask + kpm
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            scores = (q * math.sqrt(1.0 / hd)) @ k.transpose(-2, -1)
            if attn_mask is not None:
                scores = scores + attn_mask
            weights = scores.softmax(-1)
            if dropout_p > 0.0:
                weights = F.dropout(weights, dropout_p)
            out = weights @ v  # (N * H, L, hd)
            out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
            out = self.out_proj(out).reshape(tgt_len, bsz, -1)
            weights = weights.reshape(bsz, H, tgt_len, src_len)
            if average_attn_weights:
                weights = weights.mean(dim=1)
            return out, weights
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 \
                else attn_mask.reshape(bsz, H, -1, src_len)
        q = q.reshape(bsz, H, tgt_len, hd)
        k = k.reshape(bsz, H, src_len, hd)
        v = v.reshape(bsz, H, src_len, hd)
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)
        out = out.permute(2, 0, 1, 3).reshape(tgt_len * bsz, embed_dim)
        return self.out_proj(out).reshape(tgt_len, bsz, -1), None

    def _sdpa_heads(self, q, k, v, attn_mask, key_padding_mask, dropout_p):
        """need_weights=False without bias_k/zero_attn: q (L, N, E), k and v (S, N, E) split
        into heads as views ((N, H, L, hd): no copy of the projections' slices; numpy's
        matmul takes the strides), masks broadcast to (N, H, L, S), one
        `scaled_dot_product_attention`, the heads merged and `out_proj`."""
        L, N, E = q.shape
        S, H, hd = k.shape[0], self.num_heads, self.head_dim
        if key_padding_mask is not None:
            if tuple(key_padding_mask.shape) != (N, S):
                raise AssertionError(f"expecting key_padding_mask shape of {(N, S)}, but got "
                                     f"{tuple(key_padding_mask.shape)}")
            kpm = key_padding_mask.reshape(N, 1, 1, S)
            attn_mask = kpm if attn_mask is None else \
                attn_mask.reshape((1 if attn_mask.shape[0] == 1 else N), -1, L, S) + kpm
        elif attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 \
                else attn_mask.reshape(N, H, L, S)
        q, k, v = (t.reshape(t.shape[0], N, H, hd).permute(1, 2, 0, 3) for t in (q, k, v))
        out = scaled_dot_product_attention(q, k, v, attn_mask, dropout_p)
        out = out.permute(2, 0, 1, 3).reshape(L * N, E)
        return self.out_proj(out).reshape(L, N, -1)  # (E -> out_proj_weight rows)


# ---------------------------------------------------------------- the functional form


class _MHAWeights(MHACore):
    """The attributes `MHACore` reads, from explicit tensors."""

    def out_proj(self, x):
        return FUNCTIONS["linear"](x, self._out_w, self._out_b)


def multi_head_attention_forward(query, key, value, embed_dim_to_check, num_heads,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v, add_zero_attn,
                                 dropout_p, out_proj_weight, out_proj_bias, training=True,
                                 key_padding_mask=None, need_weights=True, attn_mask=None,
                                 use_separate_proj_weight=False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights=True, is_causal=False):
    """The functional form of `MultiheadAttention.forward` with explicit weights
    (`torch.nn.functional.multi_head_attention_forward`): query (L, N, E) or (L, E), key and
    value (S, N, E*) -> (attn_output (L, N, E), attn_weights or None); masks and errors as
    the module. NotImplementedError for static_k / static_v."""
    if static_k is not None or static_v is not None:
        raise NotImplementedError("multi_head_attention_forward: static_k/static_v are not "
                                  "supported")
    batched = _mha_shape_check(query, key, value, key_padding_mask, attn_mask,
                                          num_heads)
    st = _MHAWeights()
    st.embed_dim, st.num_heads = embed_dim_to_check, num_heads
    st.head_dim = embed_dim_to_check // num_heads
    if st.head_dim * num_heads != embed_dim_to_check:
        raise AssertionError(f"embed_dim {embed_dim_to_check} not divisible by num_heads "
                             f"{num_heads}")
    st._qkv_same_embed_dim = not use_separate_proj_weight
    st.in_proj_weight, st.in_proj_bias = in_proj_weight, in_proj_bias
    st.q_proj_weight, st.k_proj_weight, st.v_proj_weight = \
        q_proj_weight, k_proj_weight, v_proj_weight
    st.bias_k, st.bias_v, st.add_zero_attn = bias_k, bias_v, add_zero_attn
    st.dropout, st.training = dropout_p, training
    st._out_w, st._out_b = out_proj_weight, out_proj_bias
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    out, weights = st._attention(query, key, value, key_padding_mask, need_weights,
                                 attn_mask, average_attn_weights, is_causal)
    if not batched:
        out = out.squeeze(1)
        weights = weights.squeeze(0) if weights is not None else None
    return out, weights


# ---------------------------------------------------------------- torch.nn.attention's switches


class SDPBackend(enum.IntEnum):
    """`torch.nn.attention.SDPBackend`: the fused attention kernels PyTorch chooses among
    (wick computes attention one way, the documented math; the choice changes nothing)."""

    ERROR = -1
    MATH = 0
    FLASH_ATTENTION = 1
    EFFICIENT_ATTENTION = 2
    CUDNN_ATTENTION = 3
    OVERRIDEABLE = 4


@contextlib.contextmanager
def sdpa_kernel(backends, set_priority: bool = False):
    """`with torch.nn.attention.sdpa_kernel(SDPBackend.MATH):` restricts PyTorch's choice of
    attention kernel; wick's one math kernel serves every choice. TypeError for something
    that is not an SDPBackend (or a list of them)."""
    items = backends if isinstance(backends, (list, tuple, set)) else [backends]
    if not all(isinstance(b, SDPBackend) for b in items):
        raise TypeError("backends must be an instance of SDPBackend or a list of SDPBackend "
                        "instances")
    yield
