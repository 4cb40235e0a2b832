"""Sorting and searching: sort/argsort/msort, topk, kthvalue, searchsorted/bucketize, histc,
bincount, and the ops whose output size depends on the data (nonzero, argwhere, masked_select,
unique: `dynamic_shape=True`).

Only `argsort` sorts; sort/topk/kthvalue are composites that gather the values at its indices
(so their gradient is gather's), returning `torch.return_types`-like namedtuples. Semantics:
the PyTorch documentation of each op (NaN sorts as the largest value; ties keep their order
when `stable`). unique's values have a gradient (PyTorch's backward raises instead): each entry
gets its distinct value's gradient, shared evenly among equal entries. Imports nothing outside
`ir`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import TensorMeta, normalize_dim
from ..return_types import return_type
from .elementwise import FLOATS
from .indexing import ALL, arr, declare, ints

sort_result = return_type("sort", ["values", "indices"])
topk_result = return_type("topk", ["values", "indices"])
kthvalue_result = return_type("kthvalue", ["values", "indices"])
unique_result = return_type("unique", ["output", "inverse_indices", "counts"])
REALS = (D.int64,) + FLOATS


def _dim_attr(inputs, attrs):
    attrs["dim"] = normalize_dim(attrs["dim"], max(inputs[0].ndim, 1))
    return attrs


def _argsort_impl(xp, x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return xp.zeros((), np.int64)
    if x.dtype == np.bool_:
        x = x.astype(np.uint8)
    if not descending:
        return xp.argsort(x, axis=dim, kind="stable")
    # descending and stable: sort the reversed array ascending, reverse, map positions back
    n = x.shape[dim]
    i = xp.argsort(xp.flip(x, dim), axis=dim, kind="stable")
    return (n - 1) - xp.flip(i, dim)


def _argsort_ref(x, dim=-1, descending=False, stable=False):
    if x.ndim == 0:
        return np.zeros((), np.int64)
    keys = -x.astype(np.float64) if descending else x
    if descending:
        keys = np.where(np.isnan(keys), -np.inf, keys)
    return np.argsort(keys, axis=dim, kind="stable")


def _sort_samples(rng, dt):
    x = arr(rng, (3, 6), dt)
    if dt is D.float32:  # NaN sorts last (float64 samples stay finite for gradcheck)
        x[0, 2] = np.nan
        x[1, :3] = x[1, 3:]  # ties
    for attrs in ({}, {"dim": 0}, {"descending": True, "stable": True}, {"stable": True}):
        yield (x,), attrs


declare(
    "argsort", "indexing", "input, dim=-1, descending=False, stable=False", fixed=D.int64,
    attrs_rule=_dim_attr, shape=lambda s, **_: s, impl=_argsort_impl, ref=_argsort_ref,
    sample_inputs=_sort_samples, test_dtypes=ALL,
)


def _sort_decomp(F, x, dim=-1, descending=False, stable=False):
    idx = F.argsort(x, dim, descending, stable)
    if x.ndim == 0:
        return sort_result(F.clone(x), idx)
    return sort_result(F.gather(x, dim, idx), idx)


def _sort_ref(x, dim=-1, descending=False, stable=False):
    i = _argsort_ref(x, dim, descending)
    return sort_result(np.take_along_axis(x, i, dim) if x.ndim else x, i)


declare(
    "sort", "composite", "input, dim=-1, descending=False, stable=False", attrs_rule=_dim_attr,
    decomp=_sort_decomp, ref=_sort_ref, sample_inputs=_sort_samples, test_dtypes=ALL,
)
declare(
    "msort", "composite", "input", decomp=lambda F, x: _sort_decomp(F, x, 0).values,
    ref=lambda x: np.sort(x, axis=0), test_dtypes=REALS,
    sample_inputs=lambda rng, dt: iter([((arr(rng, (4, 3), dt),), {})]),
)


def _topk_decomp(F, x, k, dim=-1, largest=True, sorted=True):
    n = x.shape[dim] if x.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError("selected index k out of range")
    idx = F.argsort(x, dim, largest, True)
    idx = F.narrow(idx, dim, 0, k) if x.ndim else idx
    return topk_result(F.gather(x, dim, idx) if x.ndim else F.clone(x), idx)


def _topk_ref(x, k, dim=-1, largest=True, sorted=True):
    i = np.take(_argsort_ref(x, dim, largest), np.arange(k), axis=dim)
    return topk_result(np.take_along_axis(x, i, dim), i)


declare(
    "topk", "composite", "input, k, dim=-1, largest=True, sorted=True", attrs_rule=_dim_attr,
    decomp=_topk_decomp, ref=_topk_ref, test_dtypes=REALS,
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 6), dt),), {"k": 2}), ((arr(rng, (5, 3), dt),), {"k": 3, "dim": 0}),
        ((arr(rng, (3, 6), dt),), {"k": 4, "largest": False}),
    ]),
)


def _kthvalue_decomp(F, x, k, dim=-1, keepdim=False):
    n = x.shape[dim] if x.ndim else 1
    if not 1 <= k <= n:
        raise IndexError(f"kthvalue(): selected number k out of range for dimension {dim}")
    idx = F.narrow(F.argsort(x, dim, False, True), dim, k - 1, 1)
    val = F.gather(x, dim, idx)
    if not keepdim:
        val, idx = F.squeeze(val, dim), F.squeeze(idx, dim)
    return kthvalue_result(val, idx)


def _kthvalue_ref(x, k, dim=-1, keepdim=False):
    i = np.take(_argsort_ref(x, dim), [k - 1], axis=dim)
    v = np.take_along_axis(x, i, dim)
    return kthvalue_result(v, i) if keepdim else kthvalue_result(v.squeeze(dim), i.squeeze(dim))


declare(
    "kthvalue", "composite", "input, k, dim=-1, keepdim=False", attrs_rule=_dim_attr,
    decomp=_kthvalue_decomp, ref=_kthvalue_ref, test_dtypes=REALS,
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 6), dt),), {"k": 2}), ((arr(rng, (5, 3), dt),), {"k": 5, "dim": 0,
                                                                       "keepdim": True}),
    ]),
)


# ---------------------------------------------------------------- searching and counting


def _searchsorted_attrs(inputs, attrs):
    seq, x = inputs[0], inputs[1]
    side = attrs.get("side")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if attrs["right"] and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        attrs["right"] = side == "right"
    attrs["side"] = None
    if seq.ndim > 1 and (not isinstance(x, TensorMeta) or tuple(seq.shape[:-1]) !=
                         tuple(x.shape[:-1])):
        got = list(x.shape) if isinstance(x, TensorMeta) else "a scalar"
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor {list(seq.shape)} "
                           f"and input value tensor {got}")
    return attrs


def _searchsorted_impl(xp, seq, x, out_int32=False, right=False, side=None, sorter=None):
    side = "right" if right else "left"
    x = xp.asarray(x)
    if sorter is not None:  # the sequence is seq in the order `sorter` gives along its last dim
        order = xp.asarray(getattr(sorter, "_data", sorter))
        if order.shape != seq.shape:
            raise RuntimeError("torch.searchsorted(): boundary and sorter must have the same "
                               f"size, but got boundary tensor {list(seq.shape)} and got "
                               f"sorter tensor {list(order.shape)}")
        if order.size and (order.min() < 0 or order.max() >= seq.shape[-1]):
            raise RuntimeError("torch.searchsorted(): sorter index out of range")
        seq = xp.take_along_axis(seq, order.astype(np.int64), axis=-1)
    if seq.ndim <= 1:
        return xp.searchsorted(seq, x, side=side)
    out = xp.empty(x.shape, np.int64)
    for b in np.ndindex(seq.shape[:-1]):
        out[b] = xp.searchsorted(seq[b], x[b], side=side)
    return out


def _searchsorted_ref(seq, x, out_int32=False, right=False, side=None, sorter=None):
    side = side or ("right" if right else "left")
    if sorter is not None:
        seq = np.take_along_axis(seq, np.asarray(getattr(sorter, "_data", sorter)), axis=-1)
    if seq.ndim == 1:
        return np.searchsorted(seq, x, side)
    return np.stack([np.searchsorted(s, v, side) for s, v in zip(seq, x)])


declare(
    "searchsorted", "indexing",
    "sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None", 2,
    fixed=lambda i, a: D.int32 if a["out_int32"] else D.int64, method=False,
    attrs_rule=_searchsorted_attrs, shape=lambda s, x, **_: x if isinstance(x, tuple) else (),
    impl=_searchsorted_impl,
    ref=_searchsorted_ref,
    sample_inputs=lambda rng, dt: iter([
        ((np.sort(arr(rng, (6,), dt)), arr(rng, (2, 3), dt)), {}),
        ((np.sort(arr(rng, (2, 5), dt), axis=-1), arr(rng, (2, 4), dt)), {"right": True}),
        ((np.array([1, 2, 2, 3]).astype(dt.np), np.array([2, 0, 5]).astype(dt.np)),
         {"side": "right"}),
    ]),
    test_dtypes=REALS,
)
declare(
    "bucketize", "composite", "input, boundaries, *, out_int32=False, right=False", 2,
    decomp=lambda F, x, b, out_int32=False, right=False: F.searchsorted(
        b, x, out_int32=out_int32, right=right),
    ref=lambda x, b, right=False, **_: np.searchsorted(b, x, "right" if right else "left"),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (2, 3), dt), np.sort(arr(rng, (5,), dt))), {}),
        ((np.array([1, 2, 3]).astype(dt.np), np.array([1, 3]).astype(dt.np)), {"right": True}),
    ]),
    test_dtypes=REALS,
)


def _histc_impl(xp, x, bins=100, min=0, max=0):
    lo, hi = float(min), float(max)
    if lo == hi and x.size:
        lo, hi = float(x.min()), float(x.max())
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if lo > hi:
        raise RuntimeError("torch.histc: max must be larger than min")
    h, _ = np.histogram(x, bins=bins, range=(lo, hi))
    return h.astype(x.dtype)


declare(
    "histc", "indexing", "input, bins=100, min=0, max=0",
    attrs_rule=lambda i, a: a if i[0].dtype.is_floating_point else (_ for _ in ()).throw(
        RuntimeError(f"\"histogram_cpu\" not implemented for '{i[0].dtype.title}'")),
    shape=lambda s, bins=100, **_: (bins,), impl=_histc_impl,
    ref=lambda x, bins=100, min=0, max=0: _histc_impl(np, x, bins, min, max),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (40,), dt),), {"bins": 5}), ((arr(rng, (3, 7), dt),), {"bins": 4, "min": -1,
                                                                         "max": 1}),
    ]),
    test_dtypes=FLOATS,
)


def _bincount_attrs(inputs, attrs):
    x = inputs[0]
    if x.ndim != 1 or x.dtype.category != D.INTEGER:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if attrs["minlength"] < 0:
        raise RuntimeError("minlength should be >= 0")
    if len(inputs) > 1 and tuple(inputs[1].shape) != tuple(x.shape):
        raise RuntimeError("weights should be 1-d and have the same length as input")
    return attrs


def _bincount_impl(xp, x, weights=None, minlength=0):
    if x.size and x.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    return xp.bincount(x, weights=weights, minlength=minlength)


declare(
    "bincount", "indexing", "input, weights=None, minlength=0", 2, dynamic_shape=True,
    fixed=lambda i, a: (D.int64 if len(i) < 2 else i[1].dtype if i[1].dtype is D.float32
                        else D.float64),
    attrs_rule=_bincount_attrs, shape=lambda s, w=None, minlength=0: (-1,),
    impl=_bincount_impl,
    ref=lambda x, w=None, minlength=0: np.bincount(x, w, minlength),
    sample_inputs=lambda rng, dt: iter([
        ((ints(rng, (10,), 5),), {}), ((ints(rng, (10,), 5), arr(rng, (10,), dt)),
                                       {"minlength": 8}),
    ]),
    test_dtypes=FLOATS,
)


# ---------------------------------------------------------------- data-dependent shapes


declare(
    "argwhere", "indexing", "input", fixed=D.int64, dynamic_shape=True,
    shape=lambda s: (-1, len(s)), impl=lambda xp, x: xp.argwhere(x),
    ref=np.argwhere, test_dtypes=ALL,
    sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 4), dt),), {}),
                                        ((arr(rng, (), dt),), {})]),
)


def _nonzero_decomp(F, x, as_tuple=False):
    idx = F.argwhere(x)
    if not as_tuple:
        return idx
    if x.ndim == 0:
        return (F.select(F.argwhere(F.reshape(x, (1,))), 1, 0),)
    return tuple(F.select(idx, 1, d) for d in range(x.ndim))


declare(
    "nonzero", "composite", "input, *, as_tuple=False", decomp=_nonzero_decomp,
    ref=lambda x, as_tuple=False: np.nonzero(x) if as_tuple else np.argwhere(x), test_dtypes=ALL,
    sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 4), dt),), {}),
                                        ((arr(rng, (3, 4), dt),), {"as_tuple": True})]),
)


def _masked_select_impl(xp, x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return xp.broadcast_to(x, shape)[xp.broadcast_to(mask, shape)]


def _masked_select_attrs(inputs, attrs):
    m = inputs[1]
    if not isinstance(m, TensorMeta) or m.dtype is not D.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    return attrs


declare(
    "masked_select", "indexing", "input, mask", 2, dynamic_shape=True,
    attrs_rule=_masked_select_attrs, shape=lambda s, m: (-1,), impl=_masked_select_impl,
    backward=lambda F, g, out, x, mask: (F.masked_scatter(
        F.new_zeros(x, np.broadcast_shapes(tuple(x.shape), tuple(mask.shape))), mask, g), None),
    ref=lambda x, m: np.broadcast_to(x, np.broadcast_shapes(x.shape, m.shape))[
        np.broadcast_to(m, np.broadcast_shapes(x.shape, m.shape))],
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), rng.random((3, 4)) < 0.5), {}),
        ((arr(rng, (3, 1), dt), rng.random((4,)) < 0.5), {}),
    ]),
    test_dtypes=ALL,
)


def _unique_impl(xp, x, sorted=True, dim=None, part="output"):
    u, inv, cnt = np.unique(x, return_inverse=True, return_counts=True, axis=dim)
    if part == "output":
        return u
    if part == "counts":
        return cnt
    return inv.reshape(x.shape if dim is None else (x.shape[dim],))


def _repeats(rng, shape, dt, distinct=3):
    """sample_inputs: values with repeats, spaced 10 apart (10, 20, 30): gradcheck breaks ties
    by a jitter relative to |x|, which then separates equal entries by much more than its
    finite-difference step (unique is not differentiable where entries are equal)."""
    v = ints(rng, shape, distinct)
    return (v > 0 if dt is D.bool_ else (v + 1) * 10).astype(dt.np)


def _unique_backward(F, g, out, x, sorted=True, dim=None, part="output"):
    # Each input entry (slice along `dim`) gets the gradient of the distinct value it equals,
    # shared evenly among equal entries (as amax shares among ties): the exact gradient where
    # the values are distinct, and the gradient along moves that keep equal entries equal.
    # PyTorch has no derivative for unique (its backward raises NotImplementedError).
    if part != "output":
        return (None,)
    inverse = F._unique(x, sorted, dim, "inverse")
    counts = F._unique(x, sorted, dim, "counts")
    if dim is None:
        return (F.take(F.div(g, counts), inverse),)
    shape = [1] * g.ndim
    shape[dim] = -1
    return (F.index_select(F.div(g, F.reshape(counts, tuple(shape))), dim, inverse),)


declare(
    "_unique", "indexing", "input, sorted=True, dim=None, part='output'", method=False,
    dynamic_shape=True,
    fixed=lambda i, a: i[0].dtype if a["part"] == "output" else D.int64,
    attrs_rule=lambda i, a: {**a, "dim": None if a["dim"] is None
                             else normalize_dim(a["dim"], i[0].ndim)},
    shape=lambda s, **_: (-1,), impl=_unique_impl, backward=_unique_backward,
    ref=lambda x, sorted=True, dim=None, part="output": _unique_impl(np, x, sorted, dim, part),
    sample_inputs=lambda rng, dt: iter([
        ((_repeats(rng, (4, 3), dt),), {"part": p}) for p in ("output", "inverse", "counts")]),
    test_dtypes=ALL,
)


def _unique_decomp(F, x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    out = F._unique(x, sorted, dim, "output")
    extra = []
    if return_inverse:
        extra.append(F._unique(x, sorted, dim, "inverse"))
    if return_counts:
        extra.append(F._unique(x, sorted, dim, "counts"))
    return (out, *extra) if extra else out


def _unique_ref(x, sorted=True, return_inverse=False, return_counts=False, dim=None):
    r = np.unique(x, return_inverse=return_inverse, return_counts=return_counts, axis=dim)
    if return_inverse and dim is None:
        r = list(r)
        r[1] = r[1].reshape(x.shape)
        return tuple(r)
    return r


declare(
    "unique", "composite",
    "input, sorted=True, return_inverse=False, return_counts=False, dim=None",
    decomp=_unique_decomp, ref=_unique_ref, test_dtypes=ALL,
    sample_inputs=lambda rng, dt: iter([
        ((_repeats(rng, (4, 3), dt),), {}),
        ((_repeats(rng, (4, 3), dt),), {"return_inverse": True, "return_counts": True}),
        ((_repeats(rng, (5, 2), dt, 2),), {"dim": 0, "return_counts": True}),
    ]),
)

