"""The transformer's two composites that eager runs whole: `_layer_norm` (the body of
`torch.nn.functional.layer_norm`) and `_attention_weights` (softmax(q k^T * scale + mask), the
first half of `torch.nn.functional.scaled_dot_product_attention`).

Each is declared by its decomposition (the registry ops that capture, codegen and compiled
autograd see), plus eager's kernel (`eager_impl`: the decomposition's formula in one call, its
row sums as BLAS products with a ones vector, so equal to the decomposition's results up to the
sums' rounding) and one backward rule for the whole (`eager_backward`, PyTorch's fused
formulas: `native_layer_norm_backward`, `_softmax_backward_data` followed by the two matmuls'
adjoints), so that eager records one autograd node instead of eight to ten. The attention's
`@ value` stays a plain matmul (dropout goes between the two). Imports nothing outside `ir`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from .indexing import arr, declare

_NEG_INF = float("-inf")

# ---------------------------------------------------------------- layer norm


def _ln_dims(x, k: int) -> tuple:
    return tuple(range(x.ndim - k, x.ndim))


def _to_float32(F, *ts):
    return tuple(None if t is None else F.cast(t, D.float32) for t in ts)


def _layer_norm_decomp(F, x, weight=None, bias=None, k=1, eps=1e-5):
    if x.dtype in D.HALF:  # float32 inside, the result rounded once (as PyTorch's CPU kernel)
        return F.cast(_layer_norm_decomp(F, *_to_float32(F, x, weight, bias), k, eps), x.dtype)
    dims = _ln_dims(x, k)
    centered = F.sub(x, F.mean(x, dims, True))
    var = F.mean(F.mul(centered, centered), dims, True)
    out = F.mul(centered, F.rsqrt(F.add(var, eps)))
    if weight is not None:
        out = F.mul(out, weight)
    return out if bias is None else F.add(out, bias)


_WHOLE_TYPES = (np.float32, np.float64) + tuple(d.np.type for d in D.HALF)


def _layer_norm_whole(dts, x, k) -> bool:
    """Where eager runs `_layer_norm` whole: every operand of one dtype, float32, float64,
    float16 or bfloat16 (`dts`: their numpy dtypes), and something to normalize."""
    return (dts[0].type in _WHOLE_TYPES and all(d == dts[0] for d in dts)
            and 0 < k <= len(x.shape) and math.prod(x.shape[len(x.shape) - k:]) != 0)


def _layer_norm_eager(xp, x, weight=None, bias=None, k=1, eps=1e-5):
    """The decomposition's formula in one call on float32/float64 numpy arrays of one dtype,
    over x as (rows, n): the row sums of the mean and the variance are BLAS matrix-vector
    products with a ones vector (numpy's add.reduce over a short last axis is 5-7x slower),
    so results equal the decomposition's up to the sums' rounding. None otherwise."""
    dts = (x.dtype,) + tuple(t.dtype for t in (weight, bias) if t is not None)
    if xp is not np or not _layer_norm_whole(dts, x, k):
        return None
    if x.dtype.type not in (np.float32, np.float64):  # half: float32 inside, rounded once
        f32 = (None if t is None else t.astype(np.float32) for t in (x, weight, bias))
        return _layer_norm_eager(xp, *f32, k, eps).astype(x.dtype)
    n = math.prod(x.shape[x.ndim - k:])
    x2 = x.reshape(-1, n)
    ones = np.ones(n, x.dtype)
    with np.errstate(all="ignore"):
        centered = x2 - (x2 @ ones / n)[:, None]
        rstd = 1 / np.sqrt((centered * centered) @ ones / n + eps)
        out = np.multiply(centered, rstd[:, None], out=centered)
        if weight is not None:
            np.multiply(out, weight.reshape(n), out=out)
        if bias is not None:
            np.add(out, bias.reshape(n), out=out)
    return out.reshape(x.shape)


def _ones(F, like, n: int):
    """A ones vector (n,) of like's dtype, written in registry ops."""
    return F.add(F.new_zeros(like, n), 1.0)


def _layer_norm_backward(F, g, out, x, weight=None, bias=None, k=1, eps=1e-5):
    """PyTorch's `native_layer_norm_backward`: with xhat = (x - mean) * rstd and
    gx = g * weight, dx = rstd * (gx - mean(gx) - xhat * mean(gx * xhat)); dweight =
    sum(g * xhat) and dbias = sum(g) over the leading (not normalized) dims. On x as (rows, n),
    every sum a product with a ones vector (BLAS, as the forward's)."""
    if x.dtype in D.HALF:  # float32 inside, as the forward; each gradient in its dtype
        g32, x32, w32, b32 = _to_float32(F, g, x, weight, bias)
        grads = _layer_norm_backward(F, g32, out, x32, w32, b32, k, eps)
        return tuple(None if d is None else F.cast(d, t.dtype)
                     for d, t in zip(grads, (x, weight, bias)))
    n = math.prod(x.shape[x.ndim - k:])
    x2, g2 = F.reshape(x, (-1, n)), F.reshape(g, (-1, n))
    ones = _ones(F, x2, n)

    def row_mean(t):  # (rows, n) -> (rows, 1)
        return F.unsqueeze(F.div(F.matmul(t, ones), n), -1)

    centered = F.sub(x2, row_mean(x2))
    rstd = F.rsqrt(F.add(row_mean(F.mul(centered, centered)), eps))
    xhat = F.mul(centered, rstd)
    gx = g2 if weight is None else F.mul(g2, F.reshape(weight, (n,)))
    dx = F.mul(rstd, F.sub(F.sub(gx, row_mean(gx)), F.mul(xhat, row_mean(F.mul(gx, xhat)))))
    if weight is None and bias is None:
        return F.reshape(dx, tuple(x.shape)), None, None
    ones_rows = _ones(F, x2, x2.shape[0])
    dw = None if weight is None else \
        F.reshape(F.matmul(ones_rows, F.mul(g2, xhat)), tuple(weight.shape))
    db = None if bias is None else F.reshape(F.matmul(ones_rows, g2), tuple(bias.shape))
    return F.reshape(dx, tuple(x.shape)), dw, db


def _layer_norm_ref(x, weight=None, bias=None, k=1, eps=1e-5):
    dims = tuple(range(x.ndim - k, x.ndim))
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=dims, keepdims=True)
    out = (x64 - mu) / np.sqrt(x64.var(axis=dims, keepdims=True) + eps)
    out = out if weight is None else out * weight
    return (out if bias is None else out + bias).astype(x.dtype)


def _layer_norm_samples(rng, dt):
    yield (arr(rng, (3, 5), dt), arr(rng, (5,), dt), arr(rng, (5,), dt)), {}
    yield (arr(rng, (2, 3, 4), dt), arr(rng, (3, 4), dt)), {"k": 2, "eps": 1e-3}
    yield (arr(rng, (4, 6), dt),), {}


declare(
    "_layer_norm", "composite", "input, weight=None, bias=None, k=1, eps=1e-05", 3,
    scalar_ok=False, method=False, decomp=_layer_norm_decomp, eager_impl=_layer_norm_eager,
    eager_impl_rounding=True, node_name="NativeLayerNormBackward0",
    eager_backward=_layer_norm_backward,
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _layer_norm_whole(tuple(m.dtype.np for m in metas), metas[0], attrs["k"]),
    ref=_layer_norm_ref, sample_inputs=_layer_norm_samples, test_dtypes=(D.float32, D.float64),
)

# ---------------------------------------------------------------- attention weights


def _attention_weights_decomp(F, q, k, attn_mask=None, scale=1.0):
    scores = F.mul(F.matmul(q, F.transpose(k, -2, -1)), scale)
    if attn_mask is None:
        return F.softmax(scores, -1)
    if attn_mask.dtype is D.bool_:
        scores = F.masked_fill(scores, F.logical_not(attn_mask), _NEG_INF)
    else:
        scores = F.add(scores, attn_mask)
    # safe softmax: a row all at -inf gives zeros (and no NaN gradients), as PyTorch's
    dead = F.all(F.eq(scores, _NEG_INF), -1, True)
    return F.where(dead, 0.0, F.softmax(F.where(dead, 0.0, scores), -1))


def _attention_whole(dts, q, k, mask=None) -> bool:
    """Where eager runs `_attention_weights` whole: query and key (and a floating mask) all
    float32 or all float64 (`dts`: the operands' numpy dtypes; a mask may be bool), at least
    2-D, with one embedding size and a nonempty key sequence."""
    qd = dts[0]
    return (qd.type in (np.float32, np.float64) and dts[1] == qd
            and (mask is None or dts[2] == qd or dts[2].type is np.bool_)
            and len(q.shape) >= 2 and len(k.shape) >= 2 and q.shape[-1] == k.shape[-1]
            and k.shape[-2] != 0)


def _attention_weights_eager(xp, q, k, attn_mask=None, scale=1.0):
    """The decomposition's formula (matmul, mul, the mask, softmax; a row left all -inf by the
    mask gives zeros) in one call: over the scores as (rows, S), the row maxima by a reduction
    over the rows of a transposed copy (numpy's maximum.reduce over a short last axis is ~4x
    slower; a maximum is exact in any order), the row sums a BLAS product with a ones vector
    (equal to the decomposition's up to their rounding). None where `_attention_whole` is
    False."""
    dts = (q.dtype, k.dtype) + (() if attn_mask is None else (attn_mask.dtype,))
    if xp is not np or not _attention_whole(dts, q, k, attn_mask):
        return None
    with np.errstate(all="ignore"):
        s = np.matmul(q, np.swapaxes(k, -2, -1)) * scale
        if attn_mask is not None:
            s = np.where(attn_mask, s, _NEG_INF) if attn_mask.dtype == np.bool_ \
                else s + attn_mask
        shape, n = s.shape, s.shape[-1]
        s2 = s.reshape(-1, n)  # (a fresh array: updated in place below)
        m = np.maximum.reduce(np.ascontiguousarray(s2.T), axis=0)[:, None]
        e = np.exp(np.subtract(s2, m, out=s2), out=s2)
        w = np.divide(e, (e @ np.ones(n, e.dtype))[:, None], out=e)
        if attn_mask is not None:
            dead = m == _NEG_INF
            if dead.any():
                w = np.where(dead, w.dtype.type(0), w)
    return w.reshape(shape)


def _attention_weights_backward(F, g, out, q, k, attn_mask=None, scale=1.0):
    """softmax's `_softmax_backward_data` (dS = P * (g - sum(g * P)), the sum a product with a
    ones vector as the forward's) then the adjoints of q k^T * scale; a floating mask gets dS
    (summed to its shape), a bool mask nothing."""
    n = out.shape[-1]
    gp = F.reshape(F.mul(g, out), (-1, n))
    rows = F.reshape(F.matmul(gp, _ones(F, gp, n)), tuple(out.shape[:-1]) + (1,))
    ds = F.mul(out, F.sub(g, rows))
    ds_scaled = F.mul(ds, scale)
    dq = F.matmul(ds_scaled, k)
    dk = F.matmul(F.transpose(ds_scaled, -2, -1), q)
    dm = None if attn_mask is None or attn_mask.dtype is D.bool_ else ds
    return dq, dk, dm


def _attention_weights_ref(q, k, attn_mask=None, scale=1.0):
    s = np.matmul(q.astype(np.float64), np.swapaxes(k, -2, -1)) * scale
    if attn_mask is not None:
        s = np.where(attn_mask, s, -np.inf) if attn_mask.dtype == np.bool_ else s + attn_mask
    m = s.max(-1, keepdims=True)
    dead = np.isneginf(m)
    e = np.exp(s - np.where(dead, 0, m))
    w = e / np.where(dead, 1, e.sum(-1, keepdims=True))
    return w.astype(q.dtype)


def _attention_weights_samples(rng, dt):
    q, k = arr(rng, (2, 3, 4, 5), dt), arr(rng, (2, 3, 6, 5), dt)
    yield (q, k), {"scale": 0.5}
    causal = np.tril(np.ones((4, 6), bool))
    causal[2] = False  # a row with nothing to attend to: zeros
    yield (q, k, causal), {"scale": 0.3}
    yield (q, k, arr(rng, (1, 3, 4, 6), dt)), {}


declare(
    "_attention_weights", "composite", "query, key, attn_mask=None, scale=1.0", 3,
    scalar_ok=False, method=False, decomp=_attention_weights_decomp,
    eager_impl=_attention_weights_eager, eager_backward=_attention_weights_backward,
    eager_impl_rounding=True,
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _attention_whole(tuple(m.dtype.np for m in metas), *metas),
    ref=_attention_weights_ref, sample_inputs=_attention_weights_samples,
    test_dtypes=(D.float32, D.float64),
)
