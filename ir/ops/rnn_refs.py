"""References and sample inputs of the whole-sequence recurrent ops (`ir/ops/rnn.py`) for the
registry's test matrix: plain numpy step loops of PyTorch's LSTM/GRU/RNN equations (written
apart from the kernels, with no preallocated buffers), their vjp and jvp by complex-step
differentiation (exact to rounding, independent of the BPTT kernels), and small samples.
Imports only numpy."""

from __future__ import annotations

import numpy as np


def _steps(T, reverse):
    return range(T - 1, -1, -1) if reverse else range(T)


def _sigm(a):
    return 1 / (1 + np.exp(-a))


def _lstm_ref(gx, h0, c0, w, reverse=False):
    H = h0.shape[1]
    h, c, rows = h0, c0, {}
    for t in _steps(gx.shape[0], reverse):
        a = gx[t] + h @ w.T
        i, f, g, o = _sigm(a[:, :H]), _sigm(a[:, H:2 * H]), np.tanh(a[:, 2 * H:3 * H]), \
            _sigm(a[:, 3 * H:])
        c = f * c + i * g
        h = o * np.tanh(c)
        rows[t] = (h, c, i, f, o, g)
    return np.stack([np.stack([rows[t][k] for t in sorted(rows)]) for k in range(6)]) \
        .astype(gx.dtype)


def _gru_ref(gx, h0, w, b, reverse=False):
    H = h0.shape[1]
    h, rows = h0, {}
    for t in _steps(gx.shape[0], reverse):
        a = h @ w.T + b
        r = _sigm(gx[t][:, :H] + a[:, :H])
        z = _sigm(gx[t][:, H:2 * H] + a[:, H:2 * H])
        n = np.tanh(gx[t][:, 2 * H:] + r * a[:, 2 * H:])
        h = (1 - z) * n + z * h
        rows[t] = (h, r, z, n, a[:, 2 * H:])
    return np.stack([np.stack([rows[t][k] for t in sorted(rows)]) for k in range(5)]) \
        .astype(gx.dtype)


def _rnn_ref(gx, h0, w, nonlinearity="tanh", reverse=False):
    act = np.tanh if nonlinearity == "tanh" else (lambda a: a * (a.real > 0))
    h, rows = h0, {}
    for t in _steps(gx.shape[0], reverse):
        h = act(gx[t] + h @ w.T)
        rows[t] = h
    return np.stack([rows[t] for t in sorted(rows)]).astype(gx.dtype)


def _cstep_vjp(ref):
    """A backward reference: the vjp of forward reference `ref` by complex-step
    differentiation (exact to rounding; independent of the BPTT kernels), flattened like the
    `_backward` ops."""
    def vjp(grad, out, *xs, **attrs):
        base = [x.astype(np.complex128) for x in xs]
        parts = []
        for k, x in enumerate(base):
            d = np.zeros(x.shape)
            for j in range(x.size):
                pert = list(base)
                pert[k] = x.copy()
                pert[k].reshape(-1)[j] += 1e-30j
                d.reshape(-1)[j] = np.sum(grad * ref(*pert, **attrs).imag) / 1e-30
            parts.append(d.reshape(-1))
        return np.concatenate(parts).astype(xs[0].dtype)
    return vjp


def _cstep_jvp(ref, n):
    """A forward-mode reference: ref(x + 1e-30j t).imag / 1e-30 (complex step)."""
    def jvp(out, *args, **attrs):
        xs, ts = args[:n], args[n:]
        pert = [x.astype(np.complex128) + 1e-30j * t for x, t in zip(xs, ts)]
        return (ref(*pert, **attrs).imag / 1e-30).astype(xs[0].dtype)
    return jvp


def _samples(k, nstate, bias=False, out_rows=None, with_grad=False, attrs_list=None,
             with_jvp=False):
    def gen(rng, dt):
        T, B, H = 3, 2, 2
        for attrs in attrs_list or ({}, {"reverse": True}):
            ops = [rng.standard_normal((T, B, k * H))]
            ops += [rng.standard_normal((B, H)) * 0.5 for _ in range(nstate)]
            ops.append(rng.standard_normal((k * H, H)) * 0.5)
            if bias:
                ops.append(rng.standard_normal((k * H,)) * 0.5)
            ops = [a.astype(dt.np) for a in ops]
            if with_jvp:
                ref = {4: _lstm_ref, 3: _gru_ref, 1: _rnn_ref}[k]
                ops = [ref(*ops, **attrs)] + ops + [rng.standard_normal(a.shape).astype(dt.np)
                                                    for a in ops]
            if with_grad:
                shape = (out_rows, T, B, H) if out_rows else (T, B, H)
                ref = {4: _lstm_ref, 3: _gru_ref, 1: _rnn_ref}[k]
                out = ref(*ops, **attrs)
                ops = [rng.standard_normal(shape).astype(dt.np), out] + ops
            yield tuple(ops), dict(attrs)
    return gen
