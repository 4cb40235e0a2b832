"""The CTC loss's forward-backward recursions (Graves et al. 2006, "Connectionist Temporal
Classification", eqs. 6-16), as two library-kernel ops on numpy, vectorized over the batch.

- `_ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0)`: the negative log
  likelihood of each sample's target, (N,), from log_probs (T, N, C); targets padded (N, S)
  or concatenated (sum(target_lengths),); lengths int (N,). An impossible alignment gives inf.
- `_ctc_loss_backward(grad, log_probs, targets, input_lengths, target_lengths, nll, blank=0)`:
  its vjp, -grad_n * P(alignment passes class c at time t | target) for t < input_length_n
  (0 after); a sample whose nll is inf gives NaN unless its grad is 0 (then 0).

The backward here is the true derivative with respect to log_probs; PyTorch's `ctc_loss`
gradient adds exp(log_probs) (it assumes log_softmax input), which `eager.nn.functional.ctc_loss`
adds as a composition. Both recursions run in float64 in log space (alpha and beta as in
ATen's `LossCTC.cpp`, which these follow). Value errors (lengths out of range, targets too
short) are raised with PyTorch's messages. Imports nothing outside `ir`.
"""

from __future__ import annotations

import itertools

import numpy as np

from .elementwise import FLOATS
from .indexing import INDEX_DTYPES, declare

NEG = -np.inf


def _host(xp, a):
    return a if xp is np else xp.asnumpy(a)


def _lse(*xs):
    """Elementwise log(sum(exp(x))) of same-shaped arrays (-inf where all are -inf)."""
    m = np.maximum.reduce(xs)
    safe = np.where(np.isneginf(m), 0.0, m)
    with np.errstate(divide="ignore"):
        s = np.log(sum(np.exp(x - safe) for x in xs))
    return np.where(np.isneginf(m), NEG, s + safe)


def _shift(a, k):
    """a[:, s - k] along the last axis (k > 0: from the left, k < 0: from the right), -inf
    where out of range."""
    out = np.full_like(a, NEG)
    if k > 0:
        out[:, k:] = a[:, :-k]
    else:
        out[:, :k] = a[:, -k:]
    return out


def _setup(lp, targets, il, tl, blank):
    """Checks, and the extended label sequences: ext (N, L) with blanks between and around the
    labels, lpe (T, N, L) = log_probs at them, allowed skips (s - 2 -> s), valid positions."""
    t_max, n, c = lp.shape
    il, tl = il.astype(np.int64).reshape(n), tl.astype(np.int64).reshape(n)
    for name, v, hi in (("input_lengths", il, t_max), ("target_lengths", tl, None)):
        if v.size and v.min() < 0:
            raise RuntimeError(f"Expected {name} to have value at least 0, but got value "
                               f"{int(v.min())} (while checking arguments for ctc_loss)")
        if hi is not None and v.size and v.max() > hi:
            raise RuntimeError(f"Expected {name} to have value at most {hi}, but got value "
                               f"{int(v.max())} (while checking arguments for ctc_loss)")
    smax = int(tl.max()) if n else 0
    targets = targets.astype(np.int64)
    if targets.ndim == 2:
        if targets.shape[1] < smax:
            raise RuntimeError(f"Expected tensor to have size at least {smax} at dimension 1, "
                               f"but got size {targets.shape[1]} for argument #2 'targets' "
                               "(while checking arguments for ctc_loss)")
        lab = targets[:, :smax]
    else:
        if targets.shape[0] != tl.sum():
            raise RuntimeError(f"Expected tensor to have size {int(tl.sum())} at dimension 0, "
                               f"but got size {targets.shape[0]} for argument #2 'targets' "
                               "(while checking arguments for ctc_loss)")
        start = np.concatenate([[0], np.cumsum(tl)[:-1]]).astype(np.int64)
        pos = start[:, None] + np.arange(smax)
        lab = targets[np.minimum(pos, max(targets.shape[0] - 1, 0))] if targets.size else \
            np.zeros((n, smax), np.int64)
    lab = np.where(np.arange(smax) < tl[:, None], lab, blank)
    if lab.size and (lab.min() < 0 or lab.max() >= c):
        raise RuntimeError(f"ctc_loss: target values must be class indices in [0, {c}), "
                           f"got {int(lab.min() if lab.min() < 0 else lab.max())}")
    ext = np.full((n, 2 * smax + 1), blank, np.int64)
    ext[:, 1::2] = lab
    lpe = np.take_along_axis(lp.astype(np.float64), np.broadcast_to(ext, (t_max,) + ext.shape),
                             axis=2)
    skip = (ext != blank) & (ext != _shift(ext.astype(np.float64), 2))
    skip[:, :2] = False
    valid = np.arange(ext.shape[1]) < (2 * tl + 1)[:, None]
    return ext, lpe, skip, valid, il, tl


def _alpha(lpe, skip, valid):
    t_max = lpe.shape[0]
    alpha = np.full(lpe.shape, NEG)
    if t_max == 0:
        return alpha
    alpha[0, :, :2] = lpe[0, :, :2]
    alpha[0] = np.where(valid, alpha[0], NEG)
    for t in range(1, t_max):
        prev = alpha[t - 1]
        two = np.where(skip, _shift(prev, 2), NEG)
        alpha[t] = np.where(valid, _lse(prev, _shift(prev, 1), two) + lpe[t], NEG)
    return alpha


def _nll(alpha, il, tl):
    n = alpha.shape[1]
    rows = np.arange(n)
    last = np.maximum(il - 1, 0)
    end = alpha[last, rows, 2 * tl]
    end2 = np.where(tl > 0, alpha[last, rows, np.maximum(2 * tl - 1, 0)], NEG)
    nll = -_lse(end, end2)
    return np.where(il == 0, np.where(tl == 0, 0.0, np.inf), nll)


def _ctc_impl(xp, lp, targets, input_lengths, target_lengths, blank=0):
    lp_h = _host(xp, lp)
    _, lpe, skip, valid, il, tl = _setup(lp_h, _host(xp, targets), _host(xp, input_lengths),
                                         _host(xp, target_lengths), blank)
    nll = _nll(_alpha(lpe, skip, valid), il, tl).astype(lp.dtype)
    return xp.asarray(nll)


def _beta(lpe, skip, valid, il, tl):
    t_max, n, width = lpe.shape
    beta = np.full(lpe.shape, NEG)
    s = np.arange(width)
    ends = valid & ((s == (2 * tl)[:, None]) | (s == (2 * tl - 1)[:, None]))
    nxt = np.full((n, width), NEG)
    skip_next = _shift(skip.astype(np.float64), -2) > 0  # s -> s + 2 allowed
    for t in range(t_max - 1, -1, -1):
        two = np.where(skip_next, _shift(nxt, -2), NEG)
        rec = _lse(nxt, _shift(nxt, -1), two) + lpe[t]
        start = np.where(ends, lpe[t], NEG)
        here = (t == il - 1)[:, None]
        beta[t] = np.where(valid, np.where(here, start, np.where((t < il - 1)[:, None],
                                                                  rec, NEG)), NEG)
        nxt = beta[t]
    return beta


def _ctc_backward_impl(xp, g, lp, targets, input_lengths, target_lengths, nll, blank=0):
    lp_h, g_h, nll_h = _host(xp, lp), _host(xp, g).astype(np.float64), _host(xp, nll)
    ext, lpe, skip, valid, il, tl = _setup(lp_h, _host(xp, targets), _host(xp, input_lengths),
                                           _host(xp, target_lengths), blank)
    t_max, n, c = lp_h.shape
    alpha, beta = _alpha(lpe, skip, valid), _beta(lpe, skip, valid, il, tl)
    nll64 = nll_h.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        post = np.exp(alpha + beta - lpe + nll64[None, :, None])
    post = np.where(np.isneginf(alpha + beta), 0.0, post)
    live = np.arange(t_max)[:, None] < il[None, :]  # (T, N)
    idx = (np.arange(t_max)[:, None, None] * n + np.arange(n)[None, :, None]) * c + ext[None]
    out = np.bincount(idx.reshape(-1), post.reshape(-1), minlength=t_max * n * c)
    out = -out.reshape(t_max, n, c) * g_h[None, :, None] * live[..., None]
    inf = np.isinf(nll64)
    bad = np.where(g_h == 0, 0.0, np.nan)
    out = np.where(inf[None, :, None] & live[..., None], bad[None, :, None], out)
    return xp.asarray(out.astype(lp.dtype))


def _ctc_backward(F, g, out, lp, targets, input_lengths, target_lengths, blank=0):
    return (F._ctc_loss_backward(g, lp, targets, input_lengths, target_lengths, out, blank),
            None, None, None)


def _ctc_jvp(F, tangents, out, lp, targets, input_lengths, target_lengths, blank=0):
    """Forward mode: sum over (t, c) of the log_probs tangent times d nll / d log_probs (the
    vjp of a unit gradient), per sample."""
    if tangents[0] is None:
        return None
    unit = F._ctc_loss_backward(F.add(F.mul(out, 0.0), 1.0), lp, targets, input_lengths,
                                target_lengths, out, blank)
    return F.sum(F.mul(tangents[0], unit), (0, 2))


# ---------------------------------------------------------------- checks, references, samples


def _ctc_attrs(inputs, attrs):
    lp, targets, il, tl = inputs[:4]
    if not lp.dtype.is_floating_point:
        raise NotImplementedError(f'"ctc_loss" not implemented for \'{lp.dtype.title}\'')
    if lp.ndim != 3:
        raise RuntimeError(f"ctc_loss: expected log_probs of 3 dimensions (T, N, C), got "
                           f"{lp.ndim}")
    for name, m in (("input_lengths", il), ("target_lengths", tl)):
        if m.dtype not in INDEX_DTYPES or m.ndim != 1 or m.shape[0] != lp.shape[1]:
            raise RuntimeError(f"{name} must be of size batch_size")
    if targets.ndim not in (1, 2) or (targets.ndim == 2 and targets.shape[0] != lp.shape[1]):
        raise RuntimeError(f"ctc_loss: expected targets of shape (N, S) or (sum(target_"
                           f"lengths),), got {list(targets.shape)}")
    if not 0 <= attrs["blank"] < lp.shape[2]:
        raise RuntimeError("blank must be in label range")
    return attrs


def _collapse(path, blank):
    out = [k for i, k in enumerate(path) if i == 0 or k != path[i - 1]]
    return tuple(k for k in out if k != blank)


def _brute(lp, targets, il, tl, blank):
    """Per sample: the total probability of the target and, per (t, c), that of the
    alignments through class c at time t, by enumerating every path (a test reference)."""
    t_max, n, c = lp.shape
    offs = np.concatenate([[0], np.cumsum(tl)])
    res = []
    for b in range(n):
        want = tuple(targets[b, :tl[b]]) if targets.ndim == 2 else \
            tuple(targets[offs[b]:offs[b + 1]])
        total, post = 0.0, np.zeros((t_max, c))
        for path in itertools.product(range(c), repeat=int(il[b])):
            if _collapse(path, blank) == want:
                p = np.exp(sum(lp[t, b, k] for t, k in enumerate(path)))
                total += p
                post[np.arange(len(path)), list(path)] += p
        res.append((total, post))
    return res


def _ctc_ref(lp, targets, il, tl, blank=0):
    with np.errstate(divide="ignore"):
        return np.asarray([-np.log(tot) for tot, _ in _brute(lp, targets, il, tl, blank)],
                          dtype=lp.dtype)


def _ctc_backward_ref(g, lp, targets, il, tl, nll, blank=0):
    out = np.stack([-post / tot * g[b] for b, (tot, post) in
                    enumerate(_brute(lp, targets, il, tl, blank))], axis=1)
    return out.astype(lp.dtype)


def _ctc_samples(rng, dt, with_grad=False):
    def logp(shape):
        x = rng.standard_normal(shape)
        return (x - np.log(np.exp(x).sum(-1, keepdims=True))).astype(dt.np)

    i64 = lambda *v: np.asarray(v, dtype=np.int64)
    cases = [
        ((logp((5, 2, 3)), i64([1, 2], [2, 2]), i64(5, 4), i64(2, 2)), {}),
        ((logp((4, 3, 3)), i64(1, 1, 2, 1), i64(4, 3, 4), i64(2, 1, 1)), {}),
        ((logp((5, 2, 4)), i64([0, 1], [2, 0]), i64(5, 3), i64(2, 0)), {"blank": 3}),
    ]
    for ops, attrs in cases:
        if with_grad:
            nll = _ctc_ref(*ops, **attrs)
            yield (rng.standard_normal(nll.shape).astype(dt.np),) + ops + (nll,), attrs
        else:
            yield ops, attrs


declare(
    "_ctc_loss", "linalg", "log_probs, targets, input_lengths, target_lengths, blank=0", 4,
    method=False, scalar_ok=False, attrs_rule=_ctc_attrs, shape=lambda s, *r, **a: (s[1],),
    impl=_ctc_impl, backward=_ctc_backward, jvp=_ctc_jvp, ref=_ctc_ref,
    sample_inputs=_ctc_samples,
    test_dtypes=FLOATS,
)
declare(
    "_ctc_loss_backward", "linalg",
    "grad, log_probs, targets, input_lengths, target_lengths, nll, blank=0", 6, data=(1,),
    method=False, scalar_ok=False, shape=lambda g, s, *r, **a: tuple(s),
    impl=_ctc_backward_impl, ref=_ctc_backward_ref, test_dtypes=FLOATS,
    sample_inputs=lambda rng, dt: _ctc_samples(rng, dt, with_grad=True),
)
