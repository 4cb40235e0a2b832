"""gather/scatter (scatter_add, scatter_reduce), index_select/add/copy/fill and nll_loss's class
index gather, with their in-place `_` variants (masked_fill, masked_scatter, take, put and
take_along_dim are in `ir/ops/masked.py`).

Declared with `indexing.IndexedOpDef`: the `dim` of `gather(input, dim, index)` is an operand
(a Python number), so PyTorch's argument order is kept; integer index operands keep their dtype.
Backward rules follow PyTorch's derivatives.yaml. Out-of-range indices raise PyTorch's
IndexError. Imports nothing outside `ir`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import TensorMeta, is_number
from .elementwise import FLOATS
from .indexing import ALL, _dim_number, arr, check_bounds, check_index, declare, ints

# ---------------------------------------------------------------- gather / scatter


def _gather_attrs(op, src_pos=None):
    def rule(inputs, attrs):
        x, dim, index = inputs[0], inputs[1], inputs[2]
        dim = _dim_number(op, dim, max(x.ndim, 1))
        check_index(op, index)
        if index.ndim != x.ndim and not (x.ndim <= 1 and index.ndim <= 1):
            raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions "
                               f"as {'self' if src_pos else 'input'} tensor")
        src = inputs[src_pos] if src_pos is not None and src_pos < len(inputs) else None
        for d in range(index.ndim):
            if d != dim and index.shape[d] > x.shape[d]:
                raise RuntimeError(f"{op}(): Size does not match at dimension {d} expected "
                                   f"index {list(index.shape)} to be smaller than self "
                                   f"{list(x.shape)} apart from dimension {dim}")
            if isinstance(src, TensorMeta) and index.shape[d] > src.shape[d]:
                raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be smaller "
                                   f"than self {list(x.shape)} apart from dimension {dim} and "
                                   f"to be smaller size than src {list(src.shape)}")
        if isinstance(src, TensorMeta) and src.dtype is not x.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype")
        return attrs
    return rule


def _gather_impl(xp, x, dim, index, sparse_grad=False):
    dim = dim % max(x.ndim, 1)
    check_bounds(xp, index, x.shape[dim] if x.ndim else 1, dim)
    if index.ndim == 0 and x.ndim:  # a 0-d index into a 1-d input: one element, 0-d
        return x[index.reshape(1)].reshape(())
    if index.shape != x.shape:
        x = x[tuple(slice(0, n) if d != dim else slice(None) for d, n in enumerate(index.shape))]
    if not x.ndim:
        return x[()] + 0 * index
    # take_along_axis's indexing, without its Python checks (done above): the index along
    # `dim`, broadcast aranges along the others
    nd = index.ndim
    return x[tuple(index if d == dim else
                   xp.arange(n).reshape((1,) * d + (n,) + (1,) * (nd - d - 1))
                   for d, n in enumerate(index.shape))]


def _gather_backward(F, g, out, x, dim, index, sparse_grad=False):
    return (F.scatter_add(F.new_zeros(x, tuple(x.shape)), dim, index, g), None, None)


def _gather_samples(rng, dt):
    x = arr(rng, (3, 4), dt)
    yield (x, 1, ints(rng, (3, 6), 4)), {}
    yield (x, 0, ints(rng, (2, 3), 3)), {}


declare(
    "gather", "indexing", "input, dim, index, *, sparse_grad=False", 3,
    attrs_rule=_gather_attrs("gather"), shape=lambda s, d, i, **_: i,
    impl=_gather_impl, backward=_gather_backward,
    ref=lambda x, dim, index, sparse_grad=False: np.take_along_axis(
        x[tuple(slice(0, n) if d != dim % x.ndim else slice(None)
                for d, n in enumerate(index.shape))], index, axis=dim),
    sample_inputs=_gather_samples, test_dtypes=ALL,
)


def _scatter_positions(xp, x, dim, index):
    """The (advanced-index) key of every element of `index` in `x` along `dim` (a 0-d index
    into a 1-d `x` is one position, as PyTorch's: `zeros(10).scatter_(0, tensor(3), 1.)`)."""
    dim = dim % max(x.ndim, 1)
    check_bounds(xp, index, x.shape[dim] if x.ndim else 1, dim)
    if index.ndim == 0:
        return (index.reshape(1),)
    grids = xp.indices(index.shape, sparse=True)
    return tuple(index if d == dim else grids[d] for d in range(index.ndim))


def _src_block(xp, src, index, dtype):
    if is_number(src) or getattr(src, "ndim", 1) == 0:
        return xp.full(index.shape or (1,), src, dtype=dtype)
    if index.ndim == 0:  # one position (`_scatter_positions`): src's first element
        return src.reshape(-1)[:1].astype(dtype, copy=False)
    return src[tuple(slice(0, n) for n in index.shape)].astype(dtype, copy=False)


def add_at(xp, out, key, values) -> None:
    """`xp.add.at(out, key, values)`; on numpy with >= 4096 values into a real floating
    contiguous `out`, segment sums of the sorted index (a `dim` key: slices then one 1-D
    index, as index_add) or one `bincount` over flat positions (add.at is ~10x slower)."""
    if xp is not np or out.dtype.kind != "f" or not out.flags.c_contiguous or \
            np.size(values) < 4096:  # small: add.at's lower overhead wins
        xp.add.at(out, key, values)
        return
    *lead, last = key
    if all(isinstance(k, slice) and k == slice(None) for k in lead) and \
            getattr(last, "ndim", 0) == 1 and \
            np.ndim(values) == out.ndim:  # index_add along one dim: sorted segment sums
        dim = len(lead)
        last = np.where(last < 0, last + out.shape[dim], last)  # -1 and n - 1: one row
        order = np.argsort(last, kind="stable")
        rows = last[order]
        starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
        sums = np.add.reduceat(np.take(values, order, axis=dim), starts, axis=dim)
        np.moveaxis(out, dim, 0)[rows[starts]] += np.moveaxis(sums, dim, 0)
        return
    pos = np.arange(out.size).reshape(out.shape)[key]
    weights = np.broadcast_to(values, pos.shape).reshape(-1)
    out.reshape(-1)[...] += np.bincount(pos.reshape(-1), weights=weights,
                                        minlength=out.size).astype(out.dtype, copy=False)


def _scatter_impl(xp, x, dim, index, src, value=None, reduce=None):
    if x.ndim == 0:  # as a 1-element vector
        return _scatter_impl(xp, x.reshape(1), 0, index.reshape(-1), src, value,
                             reduce).reshape(())
    out = x.copy()
    key = _scatter_positions(xp, x, dim, index)
    s = _src_block(xp, src, index, x.dtype)
    if reduce is None:
        out[key] = s
    elif reduce == "add":
        add_at(xp, out, key, s)
    elif reduce == "multiply":
        xp.multiply.at(out, key, s)
    else:
        raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce}")
    return out


def _scatter_prebind(args, kwargs):
    value = kwargs.pop("value", None)
    if value is not None:
        args = args + (value,)
    return args, kwargs


def src_grad(F, g, dim, index, src):
    """The gradient of a scatter's `src`: `g` gathered at `index`, zero-padded to src's shape
    (src may be larger than index)."""
    gs = F.gather(g, dim, index)
    pad = []
    for n_src, n_idx in reversed(list(zip(src.shape, index.shape))):
        pad += [0, n_src - n_idx]
    return F.pad(gs, tuple(pad)) if any(pad) else gs


def _scatter_backward(F, g, out, x, dim, index, src, value=None, reduce=None):
    if reduce is not None:
        raise NotImplementedError("the backward of scatter with reduce= is not implemented; use "
                                  "scatter_reduce")
    gs = None if is_number(src) else src_grad(F, g, dim, index, src)
    return (F.scatter(g, dim, index, 0.0), None, None, gs)


def _scatter_samples(rng, dt):
    x = arr(rng, (3, 5), dt)
    idx = np.stack([rng.permutation(5)[:3] for _ in range(2)])  # distinct per row
    yield (x, 1, idx, arr(rng, (2, 4), dt)), {}
    yield (x, 1, idx, (2.5 if dt.is_floating_point else 2)), {}
    yield (x, 0, np.array([[0, 1, 2, 0, 1]]), arr(rng, (1, 5), dt)), {}


def _scatter_ref(x, dim, index, src, value=None, reduce=None):
    out = x.copy()
    src = np.broadcast_to(src, index.shape) if np.ndim(src) == 0 else src
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        out[tuple(tgt)] = src[pos]
    return out


declare(
    "scatter", "indexing", "input, dim, index, src, *, value=None, reduce=None", 4,
    prebind=_scatter_prebind, attrs_rule=_gather_attrs("scatter", 3), inplace=True,
    shape=lambda s, *_, **__: s, impl=_scatter_impl, backward=_scatter_backward,
    ref=_scatter_ref, sample_inputs=_scatter_samples, test_dtypes=ALL,
)


def _scatter_add_ref(x, dim, index, src):
    out = x.copy()
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        out[tuple(tgt)] += src[pos]
    return out


declare(
    "scatter_add", "indexing", "input, dim, index, src", 4,
    attrs_rule=_gather_attrs("scatter_add", 3), inplace=True, scalar_ok=True,
    shape=lambda s, *_: s, impl=lambda xp, x, dim, index, src: _scatter_impl(
        xp, x, dim, index, src, reduce="add"),
    backward=lambda F, g, out, x, dim, index, src: (g, None, None,
                                                    src_grad(F, g, dim, index, src)),
    ref=_scatter_add_ref,
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), 1, ints(rng, (3, 6), 4), arr(rng, (3, 6), dt)), {}),
        ((arr(rng, (3, 4), dt), 0, ints(rng, (5, 2), 3), arr(rng, (6, 3), dt)), {}),
    ]),
    test_dtypes=(D.int64,) + FLOATS,
)

REDUCTIONS = {"sum": "add", "prod": "multiply", "amax": "maximum", "amin": "minimum"}


def _scatter_reduce_impl(xp, x, dim, index, src, reduce, include_self=True):
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    key = _scatter_positions(xp, x, dim, index)
    s = _src_block(xp, src, index, x.dtype)
    out = x.copy()
    if not include_self:
        ident = {"sum": 0, "mean": 0, "prod": 1}.get(reduce)
        if ident is None:
            ident = -np.inf if reduce == "amax" else np.inf
            if x.dtype.kind in "iub":
                info = np.iinfo(x.dtype) if x.dtype.kind != "b" else None
                ident = (info.min if reduce == "amax" else info.max) if info else \
                    reduce == "amin"
        out[key] = ident
    if reduce == "mean":
        count = xp.zeros(x.shape, np.int64)
        xp.add.at(count, key, 1)
        xp.add.at(out, key, s)
        total = count + (1 if include_self else 0)
        div = xp.where(count > 0, total, 1).astype(x.dtype)
        return out // div if x.dtype.kind in "iu" else out / div
    getattr(xp, REDUCTIONS[reduce]).at(out, key, s)
    return out


def _scatter_reduce_backward(F, g, out, x, dim, index, src, reduce, include_self=True):
    ones = F.add(F.new_zeros(src, tuple(index.shape)), 1.0)
    hit = F.gt(F.scatter_add(F.new_zeros(x, tuple(x.shape)), dim, index, ones), 0)
    keep_self = F.logical_not(hit) if not include_self else None
    if reduce == "sum":
        gx = g if include_self else F.where(hit, 0.0, g)
        return gx, None, None, src_grad(F, g, dim, index, src)
    if reduce == "mean":
        n = F.scatter_add(F.new_zeros(x, tuple(x.shape)), dim, index, ones)
        n = F.add(n, 1.0) if include_self else F.where(hit, n, 1.0)
        gn = F.div(g, n)
        gx = gn if include_self else F.where(hit, 0.0, g)
        return gx, None, None, F.gather(gn, dim, index)
    if reduce == "prod":
        gx = F.div(F.mul(g, out), x)
        gx = gx if include_self else F.where(hit, 0.0, g)
        return gx, None, None, F.div(F.gather(F.mul(g, out), dim, index), src)
    # amax / amin: the gradient is shared evenly among the elements equal to the result
    mx = F.eq(x, out) if include_self else keep_self
    ms = F.eq(src, F.gather(out, dim, index))
    count = F.scatter_add(F.cast(mx, g.dtype), dim, index, F.cast(ms, g.dtype))
    gn = F.div(g, count)
    return F.where(mx, gn, 0.0), None, None, F.where(ms, F.gather(gn, dim, index), 0.0)


def _scatter_reduce_samples(rng, dt):
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            x = arr(rng, (3, 4), dt)
            yield (x, 1, ints(rng, (3, 5), 4), arr(rng, (3, 5), dt)), \
                {"reduce": reduce, "include_self": inc}


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self=True):
    out = x.astype(np.float64)
    groups = {}
    for pos in np.ndindex(index.shape):
        tgt = list(pos)
        tgt[dim] = index[pos]
        groups.setdefault(tuple(tgt), []).append(float(src[pos]))
    for tgt, vals in groups.items():
        vals = ([float(x[tgt])] if include_self else []) + vals
        f = {"sum": sum, "prod": np.prod, "mean": np.mean, "amax": max, "amin": min}[reduce]
        r = f(vals)
        if reduce == "mean" and x.dtype.kind in "iu":
            r = np.floor_divide(sum(vals), len(vals))
        out[tgt] = r
    return out.astype(x.dtype)


declare(
    "scatter_reduce", "indexing", "input, dim, index, src, reduce, *, include_self=True", 4,
    attrs_rule=_gather_attrs("scatter_reduce", 3), inplace=True, shape=lambda s, *_, **__: s,
    impl=_scatter_reduce_impl, backward=_scatter_reduce_backward, ref=_scatter_reduce_ref,
    sample_inputs=_scatter_reduce_samples, test_dtypes=(D.int64,) + FLOATS,
)


# ---------------------------------------------------------------- index_select and friends


def _index_dim_attrs(op, src_pos=None):
    def rule(inputs, attrs):
        x, dim, index = inputs[0], inputs[1], inputs[2]
        dim = _dim_number(op, dim, max(x.ndim, 1))
        check_index(op, index)
        if index.ndim > 1:
            raise IndexError(f"{op}(): Index is supposed to be a vector")
        src = inputs[src_pos] if src_pos is not None and src_pos < len(inputs) else None
        if isinstance(src, TensorMeta):
            if src.dtype is not x.dtype:
                raise RuntimeError(f"{op}(): self ({x.dtype.title}) and source "
                                   f"({src.dtype.title}) must have the same scalar type")
            want = tuple(index.numel if d == dim else n for d, n in enumerate(x.shape))
            if src.ndim and (src.ndim != x.ndim or tuple(src.shape) != want):
                raise RuntimeError(f"{op}(): source of shape {list(src.shape)} does not match "
                                   f"self {list(x.shape)} with index of length {index.numel} "
                                   f"along dimension {dim} (expected {list(want)})")
        return attrs
    return rule


def _dim_key(x, dim, index):
    dim = dim % max(x.ndim, 1)
    return (slice(None),) * dim + (index.reshape(-1),)


def _index_select_impl(xp, x, dim, index):
    dim = dim % max(x.ndim, 1)
    check_bounds(xp, index, x.shape[dim] if x.ndim else 1, dim)
    return xp.take(x, index.reshape(-1), axis=dim) if x.ndim else x.copy()


declare(
    "index_select", "indexing", "input, dim, index", 3,
    attrs_rule=_index_dim_attrs("index_select"),
    shape=lambda s, d, i: s[:d % max(len(s), 1)] + (int(np.prod(i)),) + s[d % max(len(s), 1) + 1:]
    if s else s, impl=_index_select_impl,
    backward=lambda F, g, out, x, dim, index: (
        F.index_add(F.new_zeros(x, tuple(x.shape)), dim, index, g), None, None),
    ref=lambda x, dim, index: np.take(x, index, axis=dim),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), 1, np.array([3, 0, 3])), {}),
        ((arr(rng, (3, 4), dt), 0, np.array([2])), {}),
    ]),
    test_dtypes=ALL,
)



def _index_add_impl(xp, x, dim, index, source, alpha=1):
    out = x.copy()
    if x.ndim == 0:
        return out + source * alpha
    check_bounds(xp, index, x.shape[dim % x.ndim], dim % x.ndim)
    src = source * alpha if alpha != 1 else source
    add_at(xp, out, _dim_key(x, dim, index), xp.asarray(src).astype(x.dtype, copy=False))
    return out


def _index_ref(kind):
    def ref(x, dim, index, source, alpha=1):
        out = x.copy()
        for k, i in enumerate(index.reshape(-1)):
            tgt = (slice(None),) * (dim % x.ndim) + (i,)
            s = np.take(source, k, axis=dim % x.ndim) if np.ndim(source) else source
            if kind == "add":
                out[tgt] += s * alpha
            else:
                out[tgt] = s
        return out
    return ref


def _index_samples(src=True):
    def gen(rng, dt):
        x = arr(rng, (3, 4), dt)
        yield (x, 1, np.array([3, 0, 1]), arr(rng, (3, 3), dt)), {}
        yield (x, 0, np.array([2, 0]), arr(rng, (2, 4), dt)), {}
    return gen


declare(
    "index_add", "indexing", "input, dim, index, source, *, alpha=1", 4,
    attrs_rule=_index_dim_attrs("index_add", 3), inplace=True, shape=lambda s, *_, **__: s,
    impl=_index_add_impl,
    backward=lambda F, g, out, x, dim, index, source, alpha=1: (
        g, None, None, F.mul(F.index_select(g, dim, index), alpha)),
    ref=_index_ref("add"), sample_inputs=_index_samples(), test_dtypes=(D.int64,) + FLOATS,
)


def _index_copy_impl(xp, x, dim, index, source):
    out = x.copy()
    check_bounds(xp, index, x.shape[dim % x.ndim], dim % x.ndim)
    out[_dim_key(x, dim, index)] = source
    return out


declare(
    "index_copy", "indexing", "input, dim, index, source", 4,
    attrs_rule=_index_dim_attrs("index_copy", 3), inplace=True, shape=lambda s, *_: s,
    impl=_index_copy_impl,
    backward=lambda F, g, out, x, dim, index, source: (
        F.index_fill(g, dim, index, 0.0), None, None, F.index_select(g, dim, index)),
    ref=_index_ref("copy"), sample_inputs=_index_samples(), test_dtypes=ALL,
)


def _index_fill_impl(xp, x, dim, index, value):
    out = x.copy()
    if x.ndim == 0:
        out[...] = value
        return out
    check_bounds(xp, index, x.shape[dim % x.ndim], dim % x.ndim)
    out[_dim_key(x, dim, index)] = value
    return out


def _index_fill_attrs(inputs, attrs):
    value = inputs[3]
    if isinstance(value, TensorMeta) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    return _index_dim_attrs("index_fill")(inputs, attrs)


declare(
    "index_fill", "indexing", "input, dim, index, value", 4,
    attrs_rule=_index_fill_attrs, inplace=True, shape=lambda s, *_: s, impl=_index_fill_impl,
    backward=lambda F, g, out, x, dim, index, value: (
        F.index_fill(g, dim, index, 0.0), None, None,
        None if is_number(value) else F.sum(F.index_select(g, dim, index))),
    ref=lambda x, dim, index, value: _index_ref("copy")(x, dim, index, value),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), 1, np.array([3, 0]), -2), {}),
        ((arr(rng, (3, 4), dt), 0, np.array([1]), arr(rng, (), dt)), {}),
    ]),
    test_dtypes=ALL,
)


# ---------------------------------------------------------------- nll_loss (class indices)

_REDUCTIONS = ("none", "mean", "sum")


def _nll_attrs(inputs, attrs):
    x, t = inputs[0], inputs[1]
    check_index("nll_loss", t, "target")
    if attrs["reduction"] not in _REDUCTIONS:
        raise ValueError(f"{attrs['reduction']} is not a valid value for reduction")
    want = () if x.ndim == 1 else (x.shape[0],) + tuple(x.shape[2:])
    if x.ndim < 1 or tuple(t.shape) != want:
        raise RuntimeError(f"Expected target size {list(want)}, got {list(t.shape)}")
    return attrs


def _nll_decomp(F, x, target, ignore_index=-100, reduction="mean"):
    """-x[n, target[n], ...], 0 where target == ignore_index; "mean" divides by the number of
    kept targets (PyTorch's nll_loss without class weights)."""
    keep = F.ne(target, ignore_index)
    safe = F.mul(target, keep)  # (0 where ignored: a valid index to gather)
    if x.ndim == 1:
        picked = F.reshape(F.gather(x, 0, F.reshape(safe, (1,))), ())
    else:
        picked = F.squeeze(F.gather(x, 1, F.unsqueeze(safe, 1)), 1)
    # `where`, not `* keep`: an ignored position may hold -inf, and -inf * 0 is NaN
    loss = F.where(keep, F.neg(picked), 0.0)
    if reduction == "mean":
        return F.div(F.sum(loss), F.sum(keep))
    return F.sum(loss) if reduction == "sum" else loss


def _nll_whole(np_type, size: int) -> bool:
    """Where eager runs nll_loss whole: float32/float64 input (numpy scalar type), not empty."""
    return np_type in (np.float32, np.float64) and size != 0


def _nll_eager(xp, x, target, ignore_index=-100, reduction="mean"):
    """The decomposition's kernels in one call on float32/float64 numpy arrays (its exact
    results); None otherwise."""
    if xp is not np or not _nll_whole(x.dtype.type, x.size):
        return None
    keep = target != ignore_index
    safe = target * keep
    cd = 0 if x.ndim == 1 else 1
    check_bounds(xp, safe, x.shape[cd], cd)
    if x.ndim == 1:
        picked = x[safe.reshape(1)].reshape(())
    elif x.ndim == 2:  # (gather's values, indexed directly: bounds checked above)
        picked = x[np.arange(x.shape[0]), safe]
    else:
        picked = _gather_impl(xp, x, 1, np.expand_dims(safe, 1)).squeeze(1)
    loss = np.where(keep, -picked, x.dtype.type(0))
    if reduction == "none":
        return loss
    total = np.asarray(np.add.reduce(loss, axis=None))
    if reduction == "sum":
        return total
    return np.asarray(total / x.dtype.type(np.add.reduce(keep, axis=None)))


def _nll_backward(F, g, out, x, target, ignore_index=-100, reduction="mean"):
    """-g (divided by the kept count for "mean") scattered to each kept target's class."""
    keep = F.ne(target, ignore_index)
    safe = F.mul(target, keep)
    if reduction == "mean":
        g = F.div(g, F.sum(keep))
    if reduction != "none":
        g = F.expand(g, tuple(target.shape))
    src = F.where(keep, F.neg(g), 0.0)
    cd = 0 if x.ndim == 1 else 1
    at = (lambda t: F.reshape(t, (1,))) if x.ndim == 1 else (lambda t: F.unsqueeze(t, 1))
    return (F.scatter_add(F.new_zeros(x, tuple(x.shape)), cd, at(safe), at(src)), None)


def _nll_ref(x, t, ignore_index=-100, reduction="mean"):
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    picked = x[safe] if x.ndim == 1 else np.squeeze(
        np.take_along_axis(x, np.expand_dims(safe, 1), 1), 1)
    loss = np.where(keep, -picked, 0.0)
    if reduction == "none":
        return loss
    return loss.sum() / keep.sum() if reduction == "mean" else loss.sum()


def _nll_samples(rng, dt):
    t = ints(rng, (4,), 5)
    t[1] = -100
    yield (arr(rng, (4, 5), dt), ints(rng, (4,), 5)), {}
    yield (arr(rng, (4, 5), dt), t), {"reduction": "sum"}
    yield (arr(rng, (4, 5), dt), t), {"reduction": "none"}
    yield (arr(rng, (2, 3, 4), dt), ints(rng, (2, 4), 3)), {"ignore_index": 1}
    yield (arr(rng, (5,), dt), np.asarray(3)), {}


declare(
    "nll_loss", "composite", "input, target, ignore_index=-100, reduction='mean'", 2,
    attrs_rule=_nll_attrs, decomp=_nll_decomp, eager_impl=_nll_eager,
    eager_backward=_nll_backward, ref=_nll_ref, sample_inputs=_nll_samples, method=False,
    eager_applies=lambda metas, attrs: all(m.device == "cpu" for m in metas)
    and _nll_whole(metas[0].dtype.np.type, metas[0].numel),
    test_dtypes=FLOATS,
)
