"""Scans and order statistics: cumsum, cumprod, cummax/cummin, median, nanmedian, mode,
quantile.

The ops with (values, indices) results are composites: a primitive computes the indices
(`_order_index` for median/nanmedian/mode, `_scan_index` for cummax/cummin: int64, not
differentiable, numpy/cupy kernels), and the values are taken at those indices with `gather`
when the indexing family registers it, else with a one-hot selection made of elementwise ops and
a sum, so gradients flow to the selected elements only, as in PyTorch. Semantics follow the
PyTorch documentation (lower median; mode = the smallest most frequent value, at its last
occurrence; quantile's interpolation modes). Imports only `ir` and numpy.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import REGISTRY, OpDef, normalize_dim, register
from .elementwise import BOOL, COMPLEX, FLOATING, FLOATS, Promo, dtype_of
from .reductions import _int_dim_attrs, _reduce_shape, return_types, scalar_as_vector

# ---------------------------------------------------------------- cumulative sums and products


def _rev_cumsum(F, g, dim):
    """sum_{j >= i} g_j along `dim` (the vjp of cumsum), without a flip."""
    return F.add(F.sub(F.sum(g, (dim,), keepdim=True), F.cumsum(g, dim)), g)


def _scan(name, impl, backward, ref):
    register(OpDef(
        name, "scan", "input, dim, *, dtype=None", 1, "sum", shape=lambda s, dim, dtype=None: s,
        attrs_rule=_int_dim_attrs, impl=scalar_as_vector(impl), backward=backward, ref=ref,
        samples=({"dim": 1}, {"dim": -1}),
    ))


_scan("cumsum", lambda xp, x, dim, dtype=None: xp.cumsum(x, axis=dim),
      lambda F, g, out, x, dim, dtype=None: (_rev_cumsum(F, g, dim),),
      lambda x, dim, dtype=None: np.cumsum(x, axis=dim,
                                           dtype=np.int64 if x.dtype.kind in "biu" else None))
# cumprod's vjp divides by the input: PyTorch's exact rule for zeros is not reproduced
_scan("cumprod", lambda xp, x, dim, dtype=None: xp.cumprod(x, axis=dim),
      lambda F, g, out, x, dim, dtype=None: (F.div(_rev_cumsum(F, F.mul(g, out), dim), x),),
      lambda x, dim, dtype=None: np.cumprod(x, axis=dim,
                                            dtype=np.int64 if x.dtype.kind in "biu" else None))

# ---------------------------------------------------------------- index primitives


def _moved(xp, x, dim):
    return xp.moveaxis(x, dim, -1)


def _mode_rows(xp, rows):
    out = xp.empty(rows.shape[0], dtype=np.int64)
    n = rows.shape[1]
    for r in range(rows.shape[0]):
        row = rows[r]
        vals, counts = xp.unique(row, return_counts=True)
        v = vals[int(xp.argmax(counts))]  # the first maximum: the smallest most frequent value
        out[r] = n - 1 - int(xp.argmax((row == v)[::-1]))  # its last occurrence
    return out


@scalar_as_vector
def _order_index_impl(xp, x, dim, keepdim, which):
    m = _moved(xp, x, dim)
    n = m.shape[-1]
    if n == 0:
        raise IndexError(f"{which}(): Expected reduction dim {dim} to have non-zero size.")
    if which == "mode":
        idx = _mode_rows(xp, m.reshape(-1, n)).reshape(m.shape[:-1])
    else:
        order = xp.argsort(m, axis=-1, kind="stable")  # NaNs last
        nan = xp.isnan(m) if m.dtype.kind in "fc" else xp.zeros(m.shape, bool)
        if which == "median":  # a NaN anywhere makes the median NaN: its first position
            idx = xp.where(nan.any(-1), nan.argmax(-1), order[..., (n - 1) // 2])
        else:  # nanmedian: the lower median of the non-NaN values
            k = xp.maximum((n - nan.sum(-1) - 1) // 2, 0)
            idx = xp.take_along_axis(order, k[..., None], -1)[..., 0]
    return xp.expand_dims(idx, dim) if keepdim else idx


def _order_index_ref(x, dim, keepdim, which):
    m = np.moveaxis(x, dim, -1)
    out = np.zeros(m.shape[:-1], np.int64)
    for i in np.ndindex(m.shape[:-1]):
        row = list(m[i])
        if which == "mode":
            best = min(row, key=lambda v: (-row.count(v), v))
            out[i] = max(j for j, v in enumerate(row) if v == best)
            continue
        nans = [j for j, v in enumerate(row) if np.isnan(v)]
        if which == "median" and nans:
            out[i] = nans[0]
            continue
        ok = sorted((v, j) for j, v in enumerate(row) if not np.isnan(v))
        out[i] = ok[(len(ok) - 1) // 2][1] if ok else nans[0]
    return np.expand_dims(out, dim) if keepdim else out


def _index_attrs(inputs, attrs):
    attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
    return attrs


def _order_samples(rng, dtype):
    x = rng.standard_normal((3, 5, 4)).astype(dtype.np) if dtype.category >= FLOATING else \
        rng.integers(0, 4, (3, 5, 4)).astype(dtype.np)
    for which in ("median", "nanmedian", "mode"):
        yield (x,), {"dim": 1, "keepdim": False, "which": which}
    yield (rng.integers(0, 3, (4, 6)).astype(dtype.np),), {"dim": -1, "keepdim": True,
                                                           "which": "mode"}


register(OpDef(
    "_order_index", "reduction", "input, dim, keepdim, which", 1,
    Promo("_order_index", "int64", (BOOL, COMPLEX)), shape=_reduce_shape,
    attrs_rule=_index_attrs, impl=_order_index_impl, ref=_order_index_ref, method=False,
    sample_inputs=_order_samples,
))


@scalar_as_vector
def _scan_index_impl(xp, x, dim, which):
    m = _moved(xp, x, dim)
    acc = (xp.maximum if which == "cummax" else xp.minimum).accumulate(m, axis=-1)
    mark = (m == acc)
    if m.dtype.kind in "fc":
        mark |= xp.isnan(m)
    pos = xp.where(mark, xp.arange(m.shape[-1]), 0)
    return xp.moveaxis(xp.maximum.accumulate(pos, axis=-1), -1, dim)


def _scan_index_ref(x, dim, which):
    m = np.moveaxis(x, dim, -1)
    out = np.zeros(m.shape, np.int64)
    for i in np.ndindex(m.shape[:-1]):
        best = 0
        for j, v in enumerate(m[i]):
            b = m[i][best]
            if np.isnan(v) or (not np.isnan(b) and (v >= b if which == "cummax" else v <= b)):
                best = j
            out[i + (j,)] = best
    return np.moveaxis(out, -1, dim)


register(OpDef(
    "_scan_index", "scan", "input, dim, which", 1, Promo("_scan_index", "int64", (COMPLEX,)),
    shape=lambda s, dim, which: s, attrs_rule=_index_attrs, impl=_scan_index_impl,
    ref=_scan_index_ref, method=False,
    samples=({"dim": 1, "which": "cummax"}, {"dim": -1, "which": "cummin"}),
))

# ---------------------------------------------------------------- values at indices


def _iota(F, x, dim):
    """int64 positions along `dim`, with x's shape (made of ops, so it is captured too)."""
    true = F.logical_or(F.eq(x, x), F.ne(x, x))
    return F.sub(F.cumsum(true, dim), 1)


def take_along(F, x, idx, dim):
    """x's elements at positions `idx` along `dim` (idx: x's shape, or size 1 along `dim`)."""
    if "gather" in REGISTRY:  # the indexing family's op, with its scatter-add backward
        return F.gather(x, dim, idx)
    zero = False if dtype_of(x) is D.bool_ else 0
    iota = _iota(F, x, dim)
    if idx.shape[dim] == 1:
        return F.sum(F.where(F.eq(iota, idx), x, zero), (dim,), keepdim=True)
    # out[j] = x[idx[j]]: compare every j with every i (quadratic in the size of `dim`)
    hit = F.eq(F.unsqueeze(idx, dim + 1), F.unsqueeze(iota, dim))
    return F.sum(F.where(hit, F.unsqueeze(x, dim), zero), (dim + 1,))


def _order_decomp(name):
    def decomp(F, x, dim=None, keepdim=False):
        if dim is None:  # the whole tensor: a value only (median(), nanmedian())
            flat = F.reshape(x, (-1,))
            return F.reshape(take_along(F, flat, F._order_index(flat, 0, True, name), 0), ())
        idx = F._order_index(x, dim, True, name)
        values = take_along(F, x, idx, dim)
        if not keepdim:
            shape = _reduce_shape(tuple(x.shape), dim)
            values, idx = F.reshape(values, shape), F.reshape(idx, shape)
        return return_types[name](values, idx)
    return decomp


def _order_ref(name):
    def ref(x, dim=-1 if name == "mode" else None, keepdim=False):
        if dim is None:
            flat = x.reshape(-1)
            return flat[_order_index_ref(flat, 0, False, name)]
        idx = _order_index_ref(x, dim, True, name)
        values = np.take_along_axis(x, idx, dim)
        if not keepdim:
            values, idx = values.squeeze(dim), idx.squeeze(dim)
        return values, idx
    return ref


def _order_attrs(inputs, attrs):
    if attrs["dim"] is not None:
        attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
    return attrs


for _name in ("median", "nanmedian"):
    register(OpDef(
        _name, "composite", "input, dim=None, keepdim=False", 1, attrs_rule=_order_attrs,
        decomp=_order_decomp(_name), ref=_order_ref(_name),
        samples=({}, {"dim": 1}, {"dim": -1, "keepdim": True}),
    ))
register(OpDef(
    "mode", "composite", "input, dim=-1, keepdim=False", 1, attrs_rule=_order_attrs,
    decomp=_order_decomp("mode"), ref=_order_ref("mode"),
    samples=({}, {"dim": 0, "keepdim": True}),
))


def _cum_decomp(name):
    def decomp(F, x, dim):
        idx = F._scan_index(x, dim, name)
        return return_types[name](take_along(F, x, idx, dim), idx)
    return decomp


def _cum_ref(name):
    def ref(x, dim):
        idx = _scan_index_ref(x, dim, name)
        return np.take_along_axis(x, idx, dim), idx
    return ref


for _name in ("cummax", "cummin"):
    register(OpDef(
        _name, "composite", "input, dim", 1, attrs_rule=_index_attrs, decomp=_cum_decomp(_name),
        ref=_cum_ref(_name), samples=({"dim": 1}, {"dim": -1}),
    ))

# ---------------------------------------------------------------- quantile

_METHODS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile_attrs(inputs, attrs):
    q = attrs["q"]
    if hasattr(q, "tolist"):  # a tensor of probabilities
        q = q.tolist()
    if isinstance(q, (list, tuple)):
        q = tuple(float(v) for v in q)
    qs = q if isinstance(q, tuple) else (q,)
    if any(not 0 <= v <= 1 for v in qs):
        raise RuntimeError(f"quantile() q values must be in the range [0, 1] but got {q}")
    if attrs["interpolation"] not in _METHODS:
        raise RuntimeError("quantile() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest. Got {attrs['interpolation']}")
    if inputs[0].dtype not in (D.float32, D.float64):
        raise RuntimeError("quantile() input tensor must be either float or double dtype")
    attrs["q"] = q
    return _index_attrs(inputs, attrs) if attrs["dim"] is not None else attrs


def _quantile_shape(s, q, dim=None, keepdim=False, interpolation="linear"):
    lead = (len(q),) if isinstance(q, tuple) else ()
    return lead + _reduce_shape(s, dim, keepdim)


def _quantile_impl(xp, x, q, dim, keepdim, interpolation="linear"):
    return xp.quantile(x, xp.asarray(q, dtype=x.dtype), axis=dim, keepdims=keepdim,
                       method=interpolation)


register(OpDef(
    "quantile", "reduction", "input, q, dim=None, keepdim=False, *, interpolation='linear'", 1,
    Promo("quantile", reject=(BOOL, COMPLEX, D.int64)), shape=_quantile_shape,
    attrs_rule=_quantile_attrs, impl=_quantile_impl,
    ref=lambda x, q, dim=None, keepdim=False, interpolation="linear": np.quantile(
        x, q, axis=dim, keepdims=keepdim, method=interpolation),
    samples=({"q": 0.3}, {"q": (0.25, 0.5), "dim": 1, "keepdim": True},
             {"q": 0.5, "dim": -1, "interpolation": "nearest"},
             {"q": 0.7, "interpolation": "midpoint"}),
    test_dtypes=FLOATS,
))

del _name
