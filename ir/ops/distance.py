"""Distances between rows: `cdist` and `pdist` (library kernels: scipy.spatial.distance, or one
matrix product for the Euclidean form), with PyTorch's subgradient conventions at zero distance.

Semantics: `torch.cdist` / `torch.pdist` and their ATen kernels (`aten/src/ATen/native/
Distance.cpp`, `DistanceOpsKernel.cpp`): p-norms of row differences for p >= 0 (0 counts the
differing coordinates, inf is the largest one). For p = 2, `cdist` computes
sqrt(max(|x1|^2 + |x2|^2 - 2 x1.x2, 0)) by one matmul of padded rows (`_euclidean_dist`) when
`compute_mode` is "use_mm_for_euclid_dist", or "use_mm_for_euclid_dist_if_necessary" (the
default) with more than 25 rows on either side; else the direct sum over coordinates. The
backward rules are PyTorch's: the matmul form's `_euclidean_dist_backward` (grad / dist, 0
where dist == 0) in registry ops; the direct form's per-pair rules (`two_backward`, `lttdist`,
`idist`, ...: 0 where dist == 0; inf gives every tied coordinate the full gradient) as
`_cdist_backward` (ATen's), a kernel op over row chunks (bounded memory) with its own
backward in registry ops (forward mode, double backward).

The CTC loss's forward-backward recursions (`_ctc_loss`, `_ctc_loss_backward`) live in
`ctc.py`. Imports nothing outside `ir`.
"""

from __future__ import annotations

import math

import numpy as np

from ..opdef import broadcast_shapes
from .elementwise import FLOATS
from .indexing import arr, declare

MODES = {"use_mm_for_euclid_dist_if_necessary": 0, "use_mm_for_euclid_dist": 1,
         "donot_use_mm_for_euclid_dist": 2}


def use_mm(p: float, compute_mode: str, rows1: int, rows2: int) -> bool:
    """Whether cdist takes the matmul form (ATen's `cdist`: p = 2 and mode 1, or mode 0 with
    more than 25 rows on either side)."""
    mode = MODES[compute_mode]
    return p == 2 and (mode == 1 or (mode == 0 and (rows1 > 25 or rows2 > 25)))


# ---------------------------------------------------------------- forward kernels


def _scipy_metric(p: float):
    """scipy.spatial.distance's metric name and keywords for the p-norm."""
    if p == 2:
        return "euclidean", {}
    if p == 1:
        return "cityblock", {}
    if math.isinf(p):
        return "chebyshev", {}
    if p == 0:
        return "hamming", {}
    return "minkowski", {"p": p}


def _direct_np(fn, x, *rest, p):
    """A scipy.spatial.distance kernel (`cdist`/`pdist`) on float64; p = 0 counts differing
    coordinates (hamming is their fraction)."""
    metric, kw = _scipy_metric(p)
    r = fn(x.astype(np.float64, copy=False),
           *[y.astype(np.float64, copy=False) for y in rest], metric, **kw)
    return np.rint(r * x.shape[-1]) if p == 0 else r


def _direct_xp(xp, x1, x2, p):
    """The direct p-norm of row differences by broadcasting, in row chunks (cupy)."""
    out = xp.empty(x1.shape[:-1] + (x2.shape[-2],), dtype=x1.dtype)
    step = max(1, (1 << 24) // max(1, x2.shape[-2] * x1.shape[-1]))
    for i in range(0, x1.shape[-2], step):
        d = xp.abs(x1[..., i:i + step, None, :] - x2[..., None, :, :])
        if p == 0:
            r = xp.sum(d != 0, axis=-1)
        elif math.isinf(p):
            r = xp.max(d, axis=-1)
        elif p == 1:
            r = xp.sum(d, axis=-1)
        elif p == 2:
            r = xp.sqrt(xp.sum(d * d, axis=-1))
        else:
            r = xp.sum(d ** p, axis=-1) ** (1.0 / p)
        out[..., i:i + step, :] = r
    return out


def euclid_mm(xp, x1, x2):
    """ATen's `_euclidean_dist`: rows padded to [-2 x1, |x1|^2, 1] and [x2, 1, |x2|^2], one
    matmul, clamped at 0, square root (in place)."""
    n1 = xp.sum(x1 * x1, axis=-1, keepdims=True)
    n2 = xp.sum(x2 * x2, axis=-1, keepdims=True)
    one1, one2 = xp.ones_like(n1), xp.ones_like(n2)
    a = xp.concatenate([x1 * x1.dtype.type(-2), n1, one1], axis=-1)
    b = xp.concatenate([x2, one2, n2], axis=-1)
    r = xp.matmul(a, xp.swapaxes(b, -1, -2))
    xp.maximum(r, 0, out=r)
    return xp.sqrt(r, out=r)


def _cdist_impl(xp, x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    (rows1, m), rows2 = x1.shape[-2:], x2.shape[-2]
    shape = batch + (rows1, rows2)
    if rows1 == 0 or rows2 == 0 or m == 0:
        return xp.zeros(shape, dtype=x1.dtype)
    a = xp.broadcast_to(x1, batch + (rows1, m)).reshape((-1, rows1, m))
    b = xp.broadcast_to(x2, batch + (rows2, m)).reshape((-1, rows2, m))
    if use_mm(p, compute_mode, rows1, rows2):
        r = euclid_mm(xp, a[0], b[0])[None] if a.shape[0] == 1 else euclid_mm(xp, a, b)
    elif xp is np:
        from scipy.spatial.distance import cdist

        r = _direct_np(cdist, a[0], b[0], p=p)[None] if a.shape[0] == 1 else \
            np.stack([_direct_np(cdist, u, v, p=p) for u, v in zip(a, b)])
    else:
        r = _direct_xp(xp, a, b, p)
    return r.astype(x1.dtype, copy=False).reshape(shape)


# ---------------------------------------------------------------- backward rules


def _pair_terms(xp, diff, gk, dk, p):
    """PyTorch's per-pair backward terms (`DistanceOpsKernel.cpp`: odist, lttdist, tdist,
    idist, pdist `backward`) for row differences diff (..., M), gradient gk and distance dk
    (..., 1): 0 where the distance is 0; for p < 1 also where the coordinate difference is 0;
    every coordinate attaining the inf-norm gets the full gradient."""
    if p == 0:
        return xp.zeros_like(diff)
    if math.isinf(p):
        return xp.where(xp.abs(diff) == dk, xp.sign(diff) * gk, 0)
    return _diff_factor(xp, diff, p) * _pair_scale(xp, gk, dk, p)


def _diff_factor(xp, diff, p):
    """The factor of a pair term that depends on the coordinate difference only."""
    if p == 1:
        return xp.sign(diff)
    if p == 2:
        return diff
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if p < 2:
            f = xp.sign(diff) * xp.abs(diff) ** (p - 1)
            return xp.where(diff == 0, 0, f) if p < 1 else f
        return diff * xp.abs(diff) ** (p - 2)


def _pair_scale(xp, g, dist, p):
    """The per-pair factor: g (p = 1), else g / dist**(p - 1), 0 where dist == 0."""
    if p == 1:
        return g
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        r = g / dist if p == 2 else g / dist ** (p - 1)
    return xp.where(dist == 0, 0, r)


def _cdist_backward_impl(xp, g, x1, x2, dist, p=2.0):
    """sum over j of the pair term of (x1_i - x2_j, g_ij, dist_ij): the x1 gradient of the
    direct form, in row chunks (bounded memory, as ATen's loop); the per-pair scale is
    applied by a batched matrix-vector product."""
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    (rows1, m), rows2 = x1.shape[-2:], x2.shape[-2]
    a = xp.broadcast_to(x1, batch + (rows1, m)).reshape((-1, rows1, m))
    b = xp.broadcast_to(x2, batch + (rows2, m)).reshape((-1, rows2, m))
    gg = xp.broadcast_to(g, batch + (rows1, rows2)).reshape((-1, rows1, rows2))
    dd = xp.broadcast_to(dist, batch + (rows1, rows2)).reshape((-1, rows1, rows2))
    out = xp.zeros(a.shape, dtype=x1.dtype)
    if p == 0:
        return out.reshape(batch + (rows1, m))
    step = max(1, (1 << 22) // max(1, a.shape[0] * rows2 * m))
    scale = None if math.isinf(p) else _pair_scale(xp, gg, dd, p).astype(x1.dtype)
    for i in range(0, rows1, step):
        diff = a[:, i:i + step, None, :] - b[:, None, :, :]
        if scale is None:
            f = _pair_terms(xp, diff, gg[:, i:i + step, :, None], dd[:, i:i + step, :, None],
                            p)
            out[:, i:i + step] = f.sum(axis=2)
        else:
            f = _diff_factor(xp, diff, p)
            out[:, i:i + step] = xp.matmul(scale[:, i:i + step, None, :], f)[:, :, 0, :]
    return out.reshape(batch + (rows1, m))


def _cdist_backward_ref(g, x1, x2, dist, p=2.0):
    diff = x1[..., :, None, :] - x2[..., None, :, :]
    return _pair_terms(np, diff, g[..., None], dist[..., None], p).sum(-2).astype(x1.dtype)


def pair_grads(F, g, dist, x1, x2, p):
    """PyTorch's direct-form `_cdist_backward` for both operands (ATen calls it for x2 with
    the transposes): g, dist (..., P, R); x1 (..., P, M); x2 (..., R, M)."""
    return (F._cdist_backward(g, x1, x2, dist, p),
            F._cdist_backward(F.transpose(g, -1, -2), x2, x1, F.transpose(dist, -1, -2), p))


def euclid_mm_grads(F, g, dist, x1, x2):
    """ATen's `_euclidean_dist_backward`: ratio = g / dist (0 where dist == 0);
    x1 * ratio.sum(-1) - ratio @ x2 and x2 * ratio.sum(-2) - ratio^T @ x1."""
    ratio = F.where(F.eq(dist, 0), 0.0, F.div(g, dist))
    g1 = F.sub(F.mul(x1, F.sum(ratio, -1, keepdim=True)), F.matmul(ratio, x2))
    g2 = F.sub(F.mul(x2, F.unsqueeze(F.sum(ratio, -2), -1)),
               F.matmul(F.transpose(ratio, -1, -2), x1))
    return g1, g2


def _cdist_backward(F, g, out, x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    if use_mm(p, compute_mode, x1.shape[-2], x2.shape[-2]):
        return euclid_mm_grads(F, g, out, x1, x2)
    return pair_grads(F, g, out, x1, x2, p)


# ---------------------------------------------------------------- checks and declarations


def _floats(op, metas, what):
    for name, m in zip(what, metas):
        if not m.dtype.is_floating_point:
            raise RuntimeError(f"{op} only supports floating-point dtypes, {name} got: "
                               f"{m.dtype.title}")
        if m.dtype.name in ("bfloat16", "float16"):
            raise NotImplementedError(f'"{op}" not implemented for \'{m.dtype.title}\'')


def _cdist_attrs(inputs, attrs):
    x1, x2 = inputs
    _floats("cdist", (x1, x2), ("X1", "X2"))
    if x2.dtype is not x1.dtype:
        raise RuntimeError(f"expected scalar type {x1.dtype.title} but found {x2.dtype.title}")
    for name, m in (("X1", x1), ("X2", x2)):
        if m.ndim < 2:
            raise RuntimeError(f"cdist only supports at least 2D tensors, {name} got: "
                               f"{m.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    p, mode = attrs["p"], attrs["compute_mode"]
    if mode is None:
        mode = "use_mm_for_euclid_dist_if_necessary"
    if mode not in MODES:
        raise ValueError(f"{mode} is not a valid value for compute_mode")
    if not p >= 0:
        raise RuntimeError("cdist only supports non-negative p values")
    attrs["p"], attrs["compute_mode"] = float(p), mode
    return attrs


def _cdist_shape(s1, s2, p=2.0, compute_mode=None):
    return broadcast_shapes(tuple(s1[:-2]), tuple(s2[:-2])) + (s1[-2], s2[-2])


def _cdist_ref(x1, x2, p=2.0, compute_mode=None):
    d = np.abs(x1[..., :, None, :].astype(np.float64) - x2[..., None, :, :])
    if p == 0:
        r = (d != 0).sum(-1)
    elif math.isinf(p):
        r = d.max(-1, initial=0.0)
    else:
        r = (d ** p).sum(-1) ** (1 / p)
    return r.astype(x1.dtype)


def _cdist_samples(rng, dt):
    for s1, s2, attrs in [
        ((4, 3), (5, 3), {}), ((2, 4, 3), (5, 3), {"p": 1.0}),
        ((3, 2), (2, 4, 2), {"p": 0.5}), ((4, 3), (3, 3), {"p": 3.0}),
        ((4, 3), (5, 3), {"p": math.inf}), ((2, 1, 4, 3), (3, 5, 3), {"p": 1.5}),
        ((4, 3), (5, 3), {"compute_mode": "use_mm_for_euclid_dist"}),
        ((30, 3), (4, 3), {}),  # the matmul form (more than 25 rows)
    ]:
        yield (arr(rng, s1, dt), arr(rng, s2, dt)), attrs
    x = np.round(arr(rng, (4, 3), dt))
    yield (x, np.round(arr(rng, (2, 3), dt))), {"p": 0.0}


declare(
    "cdist", "linalg", "x1, x2, p=2.0, compute_mode='use_mm_for_euclid_dist_if_necessary'", 2,
    data=(0,), scalar_ok=False, method=False, attrs_rule=_cdist_attrs, shape=_cdist_shape,
    impl=_cdist_impl, backward=_cdist_backward, ref=_cdist_ref,
    sample_inputs=_cdist_samples, test_dtypes=FLOATS,
)



def _factor_ops(F, diff, p):
    """`_diff_factor` and its derivative in the difference, in registry ops."""
    if p == 1:
        return F.sign(diff), None
    if p == 2:
        return diff, 1.0
    ad = F.abs(diff)
    if p < 2:  # (|d|**(p-2) is inf at d = 0: the derivative taken as 0 there)
        zero = F.eq(diff, 0)
        f = F.mul(F.sign(diff), F.pow(ad, p - 1))
        df = F.where(zero, 0.0, F.mul(F.pow(ad, p - 2), p - 1))
        return (F.where(zero, 0.0, f) if p < 1 else f), df
    return F.mul(diff, F.pow(ad, p - 2)), F.mul(F.pow(ad, p - 2), p - 1)


def _cdist_backward_backward(F, h, out, g, x1, x2, dist, p=2.0):
    """The vjp of out_i = sum_j factor(x1_i - x2_j) * g_ij / dist_ij**(p-1) (0 where dist is
    0; the inf-norm's rule is piecewise constant in x1, x2 and dist): every operand, in
    registry ops. Materialises the (..., P, R, M) differences: used by forward mode and
    double backward only."""
    diff = F.sub(F.unsqueeze(x1, -2), F.unsqueeze(x2, -3))
    hk = F.unsqueeze(h, -2)
    if p == 0:
        return (F.mul(g, 0.0), None, None, None)
    if math.isinf(p):
        sel = F.where(F.eq(F.abs(diff), F.unsqueeze(dist, -1)), F.sign(diff), 0.0)
        return (F.sum(F.mul(sel, hk), -1), None, None, None)
    factor, dfactor = _factor_ops(F, diff, p)
    h_a = F.sum(F.mul(hk, factor), -1)  # <h_i, factor_ij>
    zero = F.eq(dist, 0)
    if p == 1:
        return (h_a, None, None, None)
    inv = F.where(zero, 0.0, F.reciprocal(dist if p == 2 else F.pow(dist, p - 1)))
    g_dist = F.where(zero, 0.0, F.mul(F.div(F.mul(h_a, g), F.pow(dist, p)), 1.0 - p))
    t = F.mul(F.mul(hk, dfactor), F.unsqueeze(F.mul(g, inv), -1))
    return (F.mul(h_a, inv), F.sum(t, -2), F.neg(F.sum(t, -3)), g_dist)


def _cdist_backward_samples(rng, dt):
    # (the inf-norm's rule and zero distances are not smooth in x1, x2 and dist as separate
    # operands: tests/test_distances.py checks them against torch)
    for p in (0.0, 0.5, 1.0, 1.5, 2.0, 3.0):
        x1, x2 = arr(rng, (2, 4, 3), dt), arr(rng, (5, 3), dt)
        dist = _cdist_ref(x1, x2, p)
        yield (arr(rng, dist.shape, dt), x1, x2, dist), {"p": p}


# `_cdist_backward(grad, x1, x2, dist, p)`: the x1 gradient of the direct form (ATen's
# `_cdist_backward`, a chunked kernel); differentiable again, unlike ATen's
declare(
    "_cdist_backward", "linalg", "grad, x1, x2, dist, p=2.0", 4, data=(1,), method=False,
    scalar_ok=False, shape=lambda g, s1, s2, d, p=2.0: _cdist_shape(s1, s2)[:-1] + (s1[-1],),
    impl=_cdist_backward_impl, backward=_cdist_backward_backward, ref=_cdist_backward_ref,
    sample_inputs=_cdist_backward_samples, test_dtypes=FLOATS,
)


# ---------------------------------------------------------------- pdist


def _pdist_impl(xp, x, p=2.0):
    n, m = x.shape
    k = n * (n - 1) // 2
    if k == 0 or m == 0:
        return xp.zeros((k,), dtype=x.dtype)
    if xp is np:
        from scipy.spatial.distance import pdist

        return _direct_np(pdist, x, p=p).astype(x.dtype, copy=False)
    i, j = np.triu_indices(n, 1)
    return _direct_xp(xp, x, x, p)[xp.asarray(i), xp.asarray(j)]


def _pdist_backward(F, g, out, x, p=2.0):
    """PyTorch's `_pdist_backward`: the direct cdist rule on the symmetric (N, N) matrices of
    g and of the distances (pdist's row-major order above the diagonal)."""
    n = x.shape[0]
    zeros = F.new_zeros(x, (n, n))
    upper = F.triu(F.eq(zeros, 0.0), 1)
    gm, dm = F.masked_scatter(zeros, upper, g), F.masked_scatter(zeros, upper, out)
    # each pair's term goes to i and, negated (the terms are odd in the difference), to j
    return (F._cdist_backward(F.add(gm, F.transpose(gm, 0, 1)), x, x,
                              F.add(dm, F.transpose(dm, 0, 1)), p),)


def _pdist_attrs(inputs, attrs):
    x = inputs[0]
    if x.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {x.ndim}D")
    if not x.dtype.is_floating_point:
        raise RuntimeError("pdist only supports floating-point dtypes")
    if x.dtype.name in ("bfloat16", "float16"):
        raise NotImplementedError(f'"pdist" not implemented for \'{x.dtype.title}\'')
    if not attrs["p"] >= 0:
        raise RuntimeError("pdist only supports non-negative p values")
    attrs["p"] = float(attrs["p"])
    return attrs


def _pdist_ref(x, p=2.0):
    i, j = np.triu_indices(x.shape[0], 1)
    return _cdist_ref(x, x, p)[i, j]


declare(
    "pdist", "linalg", "input, p=2", method=False, attrs_rule=_pdist_attrs,
    shape=lambda s, p=2: (s[0] * (s[0] - 1) // 2,), impl=_pdist_impl,
    backward=_pdist_backward, ref=_pdist_ref, test_dtypes=FLOATS,
    sample_inputs=lambda rng, dt: (((arr(rng, (5, 3), dt),), {"p": p})
                                   for p in (2.0, 1.0, 0.5, 3.0, math.inf)),
)
