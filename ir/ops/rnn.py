"""Whole-sequence recurrent layers as library-kernel ops (one op per layer and direction, as
PyTorch's fused `_thnn_fused_lstm_cell` / cuDNN RNN kernels), with their backward through time
(BPTT) written once in numpy/cupy. `eager.nn.LSTM/GRU/RNN` call them; the input projection
(x W_ih^T + biases, one matmul over all time steps) stays outside, in ordinary registry ops.

Each op has one output (the registry's rule): the per-step results stacked on a leading axis,
so the hidden states are a contiguous view `out[0]` (T, B, H) and the rest is what backward
needs. Every part of the output is differentiable (its gradient enters BPTT exactly).

- `_lstm_layer(gx, h0, c0, w_hh, reverse=False)`: gx (T, B, 4H) gate pre-activations from the
  input (gates i, f, g, o; b_ih + b_hh folded in), h0, c0 (B, H), w_hh (4H, H). Returns
  (6, T, B, H): h, c, then the activated gates of each step in the order i, f, o, g.
  c_t = f * c_{t-1} + i * g, h_t = o * tanh(c_t), gates = gx_t + h_{t-1} W_hh^T.
- `_gru_layer(gx, h0, w_hh, b_hh, reverse=False)`: gx (T, B, 3H) = x W_ih^T + b_ih (r, z, n),
  b_hh (3H,). Returns (5, T, B, H): h, r, z, n, hn (= h_{t-1} W_hn^T + b_hn), with
  n = tanh(gx_n + r * hn), h_t = n + z * (h_{t-1} - n) (PyTorch's GRU).
- `_rnn_layer(gx, h0, w_hh, nonlinearity="tanh", reverse=False)`: gx (T, B, H) with both
  biases; returns h (T, B, H), h_t = act(gx_t + h_{t-1} W_hh^T), act tanh or relu.

`reverse=True` runs from the last step to the first (a bidirectional layer's backward
direction); outputs stay in time order. The `_backward` ops return every gradient flattened
into one vector (d_gx, d_h0[, d_c0], d_w_hh[, d_b_hh]), which the rules split by views.
float16/bfloat16 data is computed in float32 (PyTorch's CPU kernels do). Imports only `ir`.
"""

from __future__ import annotations

import math

import numpy as np

from ..opdef import OpDef, register
from .elementwise import FLOATS
from .rnn_refs import _cstep_jvp, _cstep_vjp, _gru_ref, _lstm_ref, _rnn_ref, _samples

# ---------------------------------------------------------------- kernels' helpers
# GRU steps keep the gates gate-major, (k, B, H) contiguous blocks: h_{t-1} @ W (k, H, H) is one
# batched matmul. LSTM steps keep PyTorch's (B, 4H) rows (no reordering copies of gx or d_gx)
# and run the recurrent GEMM as W_hh h^T: OpenBLAS is up to twice as fast with the long side
# first (1.9x with its AVX-512 kernels for B = 32, 4H = 1024), which pays for the one
# transposed add per step.


def _sig(xp, a, out):
    """out = sigmoid(a) = (1 + tanh(a / 2)) / 2 (exact; a few times faster than expit)."""
    xp.multiply(a, 0.5, out=out)
    xp.tanh(out, out=out)
    out *= 0.5
    out += 0.5
    return out


def _work(xp, *arrays):
    """The arrays in their compute dtype (half precision -> float32), and the result dtype."""
    dt = arrays[0].dtype
    if dt.itemsize < 4:
        return [a.astype(np.float32) for a in arrays], dt
    return [a if a.dtype == dt else a.astype(dt) for a in arrays], dt


def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _prev(states, t, reverse, first):
    """The state before step t in processing order (`first` before the first step)."""
    T = states.shape[0]
    p = t + 1 if reverse else t - 1
    return first if p < 0 or p >= T else states[p]


def _dw_hh(xp, dg, hs, h0, reverse, out=None):
    """d W_hh (G, H) = sum_t dg_t^T h_prev(t) for dg (T, B, G): one GEMM over the steps whose
    previous state is in `hs`, one for h0's step unless h0 is 0 (no shifted copy of hs)."""
    G, H = dg.shape[2], hs.shape[2]
    d, h, first = (dg[:-1], hs[1:], -1) if reverse else (dg[1:], hs[:-1], 0)
    out = xp.matmul(d.reshape(-1, G).T, h.reshape(-1, H), out=out)
    if h0.any():
        out += xp.matmul(dg[first].T, h0)
    return out


def _gate_major(xp, w, k):
    """w (kH, H) as (k, H, H) blocks, transposed (for h @ blocks) and as they are."""
    H = w.shape[1]
    blocks = w.reshape(k, H, H)
    return xp.ascontiguousarray(blocks.transpose(0, 2, 1)), blocks


def _by_gate(x, k):
    """(..., B, kH) -> a (..., k, B, H) view."""
    G = x.shape[-1]
    return x.reshape(x.shape[:-1] + (k, G // k)).swapaxes(-3, -2)


def _result(xp, parts, dt):
    flat = xp.concatenate([p.reshape(-1) for p in parts])
    return flat if flat.dtype == dt else flat.astype(dt)


def _dgates(xp, dG):
    """(T, k, B, H) per-step gate gradients -> (T, B, kH)."""
    T, k, B, H = dG.shape
    return xp.ascontiguousarray(dG.transpose(0, 2, 1, 3)).reshape(T, B, k * H)


# ---------------------------------------------------------------- LSTM


_HALF = {}  # (H, dtype) -> the row (4H,) that halves the sigmoid gates' pre-activations


def _halves(xp, H, dt):
    """(4H,): 0.5 over gates i, f, o, 1 over g (sigmoid(a) = (1 + tanh(a / 2)) / 2, so one
    tanh covers all four gates of a step)."""
    key = (H, np.dtype(dt).str, xp.__name__)
    if key not in _HALF:
        row = np.full(4 * H, 0.5, dt)
        row[2 * H:3 * H] = 1.0
        _HALF[key] = xp.asarray(row)
    return _HALF[key]


def _lstm_impl(xp, gx, h0, c0, w_hh, reverse=False):
    # Per step: one GEMM W_hh h^T into a (4H, B) block (BLAS runs this orientation up to twice
    # as fast as h W_hh^T for B << 4H), added transposed to the step's projection in a (B, 4H)
    # block in PyTorch's gate order; the activations are written straight into their rows.
    (gx, h0, c0, w), dt = _work(xp, gx, h0, c0, w_hh)
    T, B, G = gx.shape
    H = G // 4
    out = xp.empty((6, T, B, H), gx.dtype)
    half = _halves(xp, H, gx.dtype)
    a, at = xp.empty((B, G), gx.dtype), xp.empty((G, B), gx.dtype)
    av = a.reshape(B, 4, H).transpose(1, 0, 2)  # (4, B, H) view: i, f, g, o
    tc = xp.empty((B, H), gx.dtype)
    h, c = h0, c0
    skip = not h0.any()  # the first step's GEMM adds nothing (nn.LSTM's default zero state)
    for k, t in enumerate(_steps(T, reverse)):
        if k or not skip:
            xp.matmul(w, h.T, out=at)
            xp.add(at.T, gx[t], out=a)
            a *= half
        else:
            xp.multiply(gx[t], half, out=a)
        act = out[2:, t]  # i, f, o, g
        xp.tanh(av[:2], out=act[:2])
        xp.tanh(av[3], out=act[2])
        xp.tanh(av[2], out=act[3])
        sg = act[:3]
        sg *= 0.5
        sg += 0.5
        i, f, o, g = act
        cn, hn = out[1, t], out[0, t]
        xp.multiply(f, c, out=cn)
        xp.multiply(i, g, out=tc)
        cn += tc
        xp.tanh(cn, out=hn)
        hn *= o
        h, c = hn, cn
    return out if out.dtype == dt else out.astype(dt)


def _lstm_backward_impl(xp, grad, out, gx, h0, c0, w_hh, reverse=False):
    # Each step's gate gradients are formed in a contiguous (i, f, o, g) scratch (one op for
    # the three sigmoid derivatives) and copied once into d_gx (PyTorch's gate order, (B, 4H)
    # per step); d h_{t-1} is one (B, 4H) x (4H, H) GEMM, d w_hh one GEMM after the loop.
    (g, out, h0, c0, w), dt = _work(xp, grad, out, h0, c0, w_hh)  # gx: only its shape
    T, B, G = gx.shape
    H = G // 4
    hs, cs = out[0], out[1]
    acts = out[2:]  # i, f, o, g
    gh, gc, gates = g[0], g[1], g[2:]
    c_grad, gates_grad = bool(gc.any()), bool(gates.any())
    gh_any = gh.reshape(T, -1).any(axis=1).tolist()  # the steps whose h has an outer gradient
    n, s = T * B * G, B * H
    flat = xp.empty(n + 2 * s + G * H, g.dtype)  # the result, filled in place
    dgx = flat[:n].reshape(T, B, G)
    dgv = dgx.reshape(T, B, 4, H)
    dh = flat[n:n + s].reshape(B, H)
    dc = flat[n + s:n + 2 * s].reshape(B, H)
    dh[...] = 0
    dc[...] = 0
    tc = xp.empty((B, H), g.dtype)
    p = xp.empty((4, B, H), g.dtype)  # d pre-activations, i, f, o, g
    s3 = xp.empty((3, B, H), g.dtype)
    for t in _steps(T, not reverse):
        act = acts[:, t]
        if gh_any[t]:
            dh += gh[t]
        if c_grad:
            dc += gc[t]
        xp.tanh(cs[t], out=tc)
        xp.multiply(dh, tc, out=p[2])  # d o (before o's sigmoid')
        xp.multiply(tc, tc, out=tc)
        xp.subtract(1, tc, out=tc)
        tc *= act[2]
        tc *= dh
        dc += tc  # through h = o tanh(c)
        xp.multiply(dc, act[3], out=p[0])  # d i
        xp.multiply(dc, _prev(cs, t, reverse, c0), out=p[1])  # d f
        xp.multiply(dc, act[0], out=p[3])  # d g
        if gates_grad:
            p += gates[:, t]
        dc *= act[1]
        sg = act[:3]  # sigmoid' = s - s^2
        xp.multiply(sg, sg, out=s3)
        xp.subtract(sg, s3, out=s3)
        p[:3] *= s3
        xp.multiply(act[3], act[3], out=tc)  # tanh' = 1 - g^2
        xp.subtract(1, tc, out=tc)
        p[3] *= tc
        d = dgv[t]
        xp.copyto(d[:, :2], p[:2].transpose(1, 0, 2))
        xp.copyto(d[:, 2], p[3])
        xp.copyto(d[:, 3], p[2])
        xp.matmul(dgx[t], w, out=dh)
    _dw_hh(xp, dgx, hs, h0, reverse, out=flat[n + 2 * s:].reshape(G, H))
    return flat if flat.dtype == dt else flat.astype(dt)


# ---------------------------------------------------------------- GRU


def _gru_impl(xp, gx, h0, w_hh, b_hh, reverse=False):
    (gx, h0, w, b), dt = _work(xp, gx, h0, w_hh, b_hh)
    T, B, G = gx.shape
    H = G // 3
    out = xp.empty((5, T, B, H), gx.dtype)
    wt, _ = _gate_major(xp, w, 3)
    b3 = b.reshape(3, 1, H)
    gxg = _by_gate(gx, 3)
    a = xp.empty((3, B, H), gx.dtype)
    h = h0
    skip = not h0.any()  # the first step's GEMM adds nothing (the default zero state)
    for k, t in enumerate(_steps(T, reverse)):
        r, z, n, hn = out[1, t], out[2, t], out[3, t], out[4, t]
        if k or not skip:
            xp.matmul(h, wt, out=a)
            a += b3
        else:
            a[...] = b3
        hn[...] = a[2]
        a[:2] += gxg[t, :2]
        _sig(xp, a[0], r)
        _sig(xp, a[1], z)
        xp.multiply(r, hn, out=n)
        n += gxg[t, 2]
        xp.tanh(n, out=n)
        hnew = out[0, t]
        xp.subtract(h, n, out=hnew)
        hnew *= z
        hnew += n
        h = hnew
    return out if out.dtype == dt else out.astype(dt)


def _gru_backward_impl(xp, grad, out, gx, h0, w_hh, b_hh, reverse=False):
    (g, out, h0, w), dt = _work(xp, grad, out, h0, w_hh)  # gx: only its shape
    T, B, G = gx.shape
    H = G // 3
    hs, R, Z, N, HN = out
    gh, gr, gz, gn, ghn = g
    _, blocks = _gate_major(xp, w, 3)
    dGh = xp.empty((T, 3, B, H), g.dtype)  # d(h W_hh^T + b_hh), gate-major
    dN = xp.empty((T, B, H), g.dtype)  # d of n's input pre-activation
    dh = xp.zeros((B, H), g.dtype)
    tmp = xp.empty((B, H), g.dtype)
    for t in _steps(T, not reverse):
        r, z, n, hn = R[t], Z[t], N[t], HN[t]
        dar, daz, dhn = dGh[t]
        dan = dN[t]
        dh += gh[t]
        xp.subtract(_prev(hs, t, reverse, h0), n, out=daz)
        daz *= dh
        daz += gz[t]  # d z
        daz *= z
        xp.multiply(daz, z, out=tmp)
        daz -= tmp
        xp.multiply(dh, z, out=dan)
        xp.subtract(dh, dan, out=dan)
        dan += gn[t]  # d n
        xp.multiply(dan, n, out=tmp)
        tmp *= n
        dan -= tmp  # through tanh
        xp.multiply(dan, hn, out=dar)
        dar += gr[t]  # d r
        dar *= r
        xp.multiply(dar, r, out=tmp)
        dar -= tmp
        xp.multiply(dan, r, out=dhn)
        dhn += ghn[t]
        dh *= z
        dh += xp.matmul(dGh[t], blocks).sum(0)
    dgh = _dgates(xp, dGh)
    dgx = dgh.copy()
    dgx[..., 2 * H:] = dN
    flat_g = dgh.reshape(T * B, G)
    dw = _dw_hh(xp, dgh, hs, h0, reverse)
    return _result(xp, (dgx, dh, dw, flat_g.sum(0)), dt)


# ---------------------------------------------------------------- Elman RNN


def _rnn_impl(xp, gx, h0, w_hh, nonlinearity="tanh", reverse=False):
    (gx, h0, w), dt = _work(xp, gx, h0, w_hh)
    T = gx.shape[0]
    out = xp.empty(gx.shape, gx.dtype)
    wt = w.T
    h = h0
    skip = not h0.any()  # the first step's GEMM adds nothing (the default zero state)
    for k, t in enumerate(_steps(T, reverse)):
        a = out[t]
        if k or not skip:
            xp.matmul(h, wt, out=a)
            a += gx[t]
        else:
            a[...] = gx[t]
        if nonlinearity == "tanh":
            xp.tanh(a, out=a)
        else:
            xp.maximum(a, 0, out=a)
        h = a
    return out if out.dtype == dt else out.astype(dt)


def _rnn_backward_impl(xp, grad, out, gx, h0, w_hh, nonlinearity="tanh", reverse=False):
    (g, hs, h0, w), dt = _work(xp, grad, out, h0, w_hh)  # gx: only its shape
    T, B, H = gx.shape
    dgx = xp.empty((T, B, H), g.dtype)
    dh = xp.zeros((B, H), g.dtype)
    for t in _steps(T, not reverse):
        da = dgx[t]
        xp.add(dh, g[t], out=da)
        if nonlinearity == "tanh":
            da -= da * hs[t] * hs[t]
        else:
            da *= hs[t] > 0
        dh = da @ w
    dw = _dw_hh(xp, dgx, hs, h0, reverse)
    return _result(xp, (dgx, dh, dw), dt)


# ---------------------------------------------------------------- forward mode (tangents)


def _lstm_jvp_impl(xp, out, gx, h0, c0, w, tgx, th0, tc0, tw, reverse=False):
    (out, gx, h0, c0, w, tgx, th0, tc0, tw), dt = _work(xp, out, gx, h0, c0, w, tgx, th0,
                                                        tc0, tw)
    T, _, G = gx.shape
    H = G // 4
    hs, cs, I, Fg, O, Gg = out
    res = xp.empty(out.shape, out.dtype)
    dh, dc = th0, tc0
    for t in _steps(T, reverse):
        da = tgx[t] + dh @ w.T + _prev(hs, t, reverse, h0) @ tw.T  # i, f, g, o
        i, f, o, g = I[t], Fg[t], O[t], Gg[t]
        di = da[:, :H] * i * (1 - i)
        df = da[:, H:2 * H] * f * (1 - f)
        dg = da[:, 2 * H:3 * H] * (1 - g * g)
        do = da[:, 3 * H:] * o * (1 - o)
        dc = df * _prev(cs, t, reverse, c0) + f * dc + di * g + i * dg
        tc = xp.tanh(cs[t])
        dh = do * tc + o * (1 - tc * tc) * dc
        for k, v in enumerate((dh, dc, di, df, do, dg)):
            res[k, t] = v
    return res if res.dtype == dt else res.astype(dt)


def _gru_jvp_impl(xp, out, gx, h0, w, b, tgx, th0, tw, tb, reverse=False):
    (out, gx, h0, w, tgx, th0, tw, tb), dt = _work(xp, out, gx, h0, w, tgx, th0, tw, tb)
    T, _, G = gx.shape
    H = G // 3
    hs, R, Z, N, HN = out
    res = xp.empty(out.shape, out.dtype)
    dh = th0
    for t in _steps(T, reverse):
        hp = _prev(hs, t, reverse, h0)
        a = dh @ w.T + hp @ tw.T + tb
        r, z, n, hn = R[t], Z[t], N[t], HN[t]
        dr = (tgx[t][:, :H] + a[:, :H]) * r * (1 - r)
        dz = (tgx[t][:, H:2 * H] + a[:, H:2 * H]) * z * (1 - z)
        dhn = a[:, 2 * H:]
        dn = (tgx[t][:, 2 * H:] + dr * hn + r * dhn) * (1 - n * n)
        dh = dn + dz * (hp - n) + z * (dh - dn)
        for k, v in enumerate((dh, dr, dz, dn, dhn)):
            res[k, t] = v
    return res if res.dtype == dt else res.astype(dt)


def _rnn_jvp_impl(xp, out, gx, h0, w, tgx, th0, tw, nonlinearity="tanh", reverse=False):
    (hs, gx, h0, w, tgx, th0, tw), dt = _work(xp, out, gx, h0, w, tgx, th0, tw)
    res = xp.empty(hs.shape, hs.dtype)
    dh = th0
    for t in _steps(gx.shape[0], reverse):
        da = tgx[t] + dh @ w.T + _prev(hs, t, reverse, h0) @ tw.T
        dh = da * (1 - hs[t] * hs[t]) if nonlinearity == "tanh" else da * (hs[t] > 0)
        res[t] = dh
    return res if res.dtype == dt else res.astype(dt)


def _tangents(F, tangents, xs):
    return [F.mul(x, 0.0) if t is None else t for t, x in zip(tangents, xs)]


def _lstm_jvp(F, tangents, out, *xs, reverse=False):
    return F._lstm_layer_jvp(out, *xs, *_tangents(F, tangents, xs), reverse=reverse)


def _gru_jvp(F, tangents, out, *xs, reverse=False):
    return F._gru_layer_jvp(out, *xs, *_tangents(F, tangents, xs), reverse=reverse)


def _rnn_jvp(F, tangents, out, *xs, nonlinearity="tanh", reverse=False):
    return F._rnn_layer_jvp(out, *xs, *_tangents(F, tangents, xs), nonlinearity=nonlinearity,
                            reverse=reverse)


# ---------------------------------------------------------------- backward rules


def _split(F, flat, shapes):
    parts, off = [], 0
    for s in shapes:
        n = math.prod(s)
        parts.append(F.reshape(F.narrow(flat, 0, off, n), tuple(s)))
        off += n
    return tuple(parts)


def _lstm_backward(F, g, out, gx, h0, c0, w_hh, reverse=False):
    flat = F._lstm_layer_backward(g, out, gx, h0, c0, w_hh, reverse=reverse)
    return _split(F, flat, (gx.shape, h0.shape, c0.shape, w_hh.shape))


def _gru_backward(F, g, out, gx, h0, w_hh, b_hh, reverse=False):
    flat = F._gru_layer_backward(g, out, gx, h0, w_hh, b_hh, reverse=reverse)
    return _split(F, flat, (gx.shape, h0.shape, w_hh.shape, b_hh.shape))


def _rnn_backward(F, g, out, gx, h0, w_hh, nonlinearity="tanh", reverse=False):
    flat = F._rnn_layer_backward(g, out, gx, h0, w_hh, nonlinearity=nonlinearity,
                                 reverse=reverse)
    return _split(F, flat, (gx.shape, h0.shape, w_hh.shape))


# ---------------------------------------------------------------- checks, declarations


def _checker(name, k, nstate, bias=False):
    """attrs_rule: floating operands; gx (T, B, k*H), states (B, H), w_hh (k*H, H)[, b_hh]."""
    def rule(inputs, attrs):
        gx = inputs[0]
        for m in inputs:
            if not m.dtype.is_floating_point:
                raise RuntimeError(f"{name}: expected floating point tensors, got "
                                   f"{m.dtype.name}")
        if gx.ndim != 3 or gx.shape[2] % k:
            raise RuntimeError(f"{name}: expected gates of shape (T, B, {k} * H), got "
                               f"{list(gx.shape)}")
        _, B, G = gx.shape
        H = G // k
        want = [(B, H)] * nstate + [(G, H)] + ([(G,)] if bias else [])
        for m, s in zip(inputs[1:], want):
            if tuple(m.shape) != s:
                raise RuntimeError(f"{name}: expected a tensor of shape {list(s)}, got "
                                   f"{list(m.shape)}")
        if attrs.get("nonlinearity", "tanh") not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{attrs['nonlinearity']}'. Select from "
                             "'tanh' or 'relu'.")
        return attrs
    return rule


def _flat_len(*shapes):
    return (sum(math.prod(s) for s in shapes),)


def _declare(name, sig, nin, **kw):
    return register(OpDef(name, "linalg", sig, nin, "keep", method=False, scalar_ok=False,
                          test_dtypes=FLOATS, **kw))


_RNN_ATTRS = ({}, {"reverse": True}, {"nonlinearity": "relu"},
              {"nonlinearity": "relu", "reverse": True})

_declare("_lstm_layer", "gx, h0, c0, w_hh, reverse=False", 4,
         attrs_rule=_checker("_lstm_layer", 4, 2), shape=lambda s, *r, **a: (6,) + tuple(s[:2])
         + (s[2] // 4,), impl=_lstm_impl, backward=_lstm_backward, jvp=_lstm_jvp, ref=_lstm_ref,
         sample_inputs=_samples(4, 2))
_declare("_lstm_layer_backward", "grad, out, gx, h0, c0, w_hh, reverse=False", 6,
         shape=lambda g, o, gx, h, c, w, **a: _flat_len(gx, h, c, w), impl=_lstm_backward_impl,
         ref=_cstep_vjp(_lstm_ref), sample_inputs=_samples(4, 2, out_rows=6, with_grad=True))
_declare("_gru_layer", "gx, h0, w_hh, b_hh, reverse=False", 4,
         attrs_rule=_checker("_gru_layer", 3, 1, bias=True),
         shape=lambda s, *r, **a: (5,) + tuple(s[:2]) + (s[2] // 3,), impl=_gru_impl,
         backward=_gru_backward, jvp=_gru_jvp, ref=_gru_ref,
         sample_inputs=_samples(3, 1, bias=True))
_declare("_gru_layer_backward", "grad, out, gx, h0, w_hh, b_hh, reverse=False", 6,
         shape=lambda g, o, gx, h, w, b, **a: _flat_len(gx, h, w, b), impl=_gru_backward_impl,
         ref=_cstep_vjp(_gru_ref), sample_inputs=_samples(3, 1, bias=True, out_rows=5,
                                                        with_grad=True))
_declare("_rnn_layer", "gx, h0, w_hh, nonlinearity='tanh', reverse=False", 3,
         attrs_rule=_checker("_rnn_layer", 1, 1), shape=lambda s, *r, **a: tuple(s),
         impl=_rnn_impl, backward=_rnn_backward, jvp=_rnn_jvp, ref=_rnn_ref,
         sample_inputs=_samples(1, 1, attrs_list=_RNN_ATTRS))
_declare("_rnn_layer_backward", "grad, out, gx, h0, w_hh, nonlinearity='tanh', reverse=False",
         5, shape=lambda g, o, gx, h, w, **a: _flat_len(gx, h, w), impl=_rnn_backward_impl,
         ref=_cstep_vjp(_rnn_ref), sample_inputs=_samples(1, 1, with_grad=True,
                                                        attrs_list=_RNN_ATTRS))
_declare("_lstm_layer_jvp", "out, gx, h0, c0, w_hh, t_gx, t_h0, t_c0, t_w_hh, reverse=False", 9,
         shape=lambda o, *r, **a: tuple(o), impl=_lstm_jvp_impl, ref=_cstep_jvp(_lstm_ref, 4),
         sample_inputs=_samples(4, 2, with_jvp=True))
_declare("_gru_layer_jvp", "out, gx, h0, w_hh, b_hh, t_gx, t_h0, t_w_hh, t_b_hh, reverse=False",
         9, shape=lambda o, *r, **a: tuple(o), impl=_gru_jvp_impl, ref=_cstep_jvp(_gru_ref, 4),
         sample_inputs=_samples(3, 1, bias=True, with_jvp=True))
_declare("_rnn_layer_jvp",
         "out, gx, h0, w_hh, t_gx, t_h0, t_w_hh, nonlinearity='tanh', reverse=False", 7,
         shape=lambda o, *r, **a: tuple(o), impl=_rnn_jvp_impl, ref=_cstep_jvp(_rnn_ref, 3),
         sample_inputs=_samples(1, 1, with_jvp=True, attrs_list=_RNN_ATTRS))
