"""Indexing ops: tensor subscripts (the `getitem` view, the advanced `index` gather,
`_index_put` and `_index_const`, a list index as a graph constant), the `IndexedOpDef` their
family is declared with, and the `_adjoint` op that is
the backward of every linear gather-like op (views, flips, pads...). gather/scatter and the
index_*/masked_*/take/put family live in `ir/ops/scatter.py`.

Integer index operands keep their own dtype: these ops are declared with `IndexedOpDef`, whose
result dtype comes from the `data` operands only and whose operands are never cast to a compute
dtype (an index cast to float would be wrong, and PyTorch requires matching dtypes anyway).
Semantics and error messages follow the PyTorch documentation of each op (and
`torch/_refs`/`derivatives.yaml` for the backward rules). Imports nothing outside `ir`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, TensorMeta, is_number, normalize_dim, register
from ..promotion import Data, Fixed
from .elementwise import FLOATS

INDEX_DTYPES = (D.int64, D.int32, D.int16, D.int8, D.uint8)
ALL = (D.bool_, D.int64, D.float32, D.float64)


@dataclass
class IndexedOpDef(OpDef):
    """An OpDef whose dtype rule is `Data(data)` (the result type of its `data` operands, by
    position), or `Fixed(fixed)` (a dtype or `fixed(operands, attrs)`); no operand is cast
    before `impl` (integer indices stay integers); its shape rule sees Python-number operands
    (a `dim`) as they are (`shape_numbers`). `prebind(args, kwargs)` may
    rewrite a PyTorch-style call before binding (`scatter(..., value=2.0)`, `bias=None`):
    operands that are None after binding are dropped from the operand tuple."""

    data: tuple = (0,)
    fixed: object = None
    prebind: Callable | None = None

    def __post_init__(self):
        self.promotion = Fixed(self.fixed) if self.fixed is not None else \
            Data(self.data, self.variadic and not self.data)
        self.shape_numbers = True
        super().__post_init__()
        self.promote_from = 1 << 30  # run_kernel casts no operand

    def bind(self, args, kwargs):
        if self.prebind is not None:
            args, kwargs = self.prebind(tuple(args), dict(kwargs))
        inputs, attrs = super().bind(args, kwargs)
        if not self.variadic and any(x is None for x in inputs):
            inputs = tuple(x for x in inputs if x is not None)
        return inputs, attrs


def declare(name, kind, sig, nin=1, **kw) -> OpDef:
    """Register an `IndexedOpDef` (promotion by its `data` operands)."""
    return register(IndexedOpDef(name, kind, sig, nin, **kw))


def meta_of(x):
    return x if isinstance(x, TensorMeta) else None


def check_index(op: str, meta, what="index"):
    """Index operands must be integer tensors (bool where PyTorch allows masks)."""
    if not isinstance(meta, TensorMeta):
        raise TypeError(f"{op}(): argument '{what}' must be Tensor, not {type(meta).__name__}")
    if meta.dtype not in INDEX_DTYPES:
        raise RuntimeError(f"{op}(): Expected dtype int64 for {what}, got {meta.dtype.name}")


def check_bounds(xp, idx, size: int, dim: int):
    """IndexError with PyTorch's message for an index outside [-size, size)."""
    if idx.size == 0:
        return
    lo, hi = int(idx.min()), int(idx.max())
    if hi >= size or lo < -size:
        bad = hi if hi >= size else lo
        raise IndexError(f"index {bad} is out of bounds for dimension {dim} with size {size}")


def _dim_number(op: str, dim, ndim: int) -> int:
    if isinstance(dim, TensorMeta) or not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {type(dim).__name__}")
    return normalize_dim(dim, ndim)


def ints(rng, shape, hi):
    return rng.integers(0, hi, size=shape).astype(np.int64)


def arr(rng, shape, dtype):
    """A sample array: bools, small ints or standard normal floats (complex: both parts)."""
    if dtype is D.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.category == D.INTEGER:
        return np.asarray(rng.integers(0 if dtype is D.uint8 else -5, 6, size=shape),
                          dtype=dtype.np)
    if dtype.is_complex:
        return np.asarray(rng.standard_normal(shape) + 1j * rng.standard_normal(shape),
                          dtype=dtype.np)
    return np.asarray(rng.standard_normal(shape), dtype=dtype.np)


# ---------------------------------------------------------------- helpers used by backward rules


def _new_zeros_attrs(inputs, attrs):
    size = attrs["size"]
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    attrs["size"] = tuple(int(s) for s in size)
    attrs["dtype"] = D.to_dtype(attrs["dtype"]) if attrs["dtype"] is not None else None
    return attrs


declare(
    "new_zeros", "creation", "input, *size, dtype=None",
    fixed=lambda i, a: a["dtype"] or i[0].dtype, attrs_rule=_new_zeros_attrs,
    shape=lambda s, size, dtype=None: size,
    impl=lambda xp, x, size, dtype=None: xp.zeros(size, dtype=(dtype.np if dtype else x.dtype)),
    ref=lambda x, size, dtype=None: np.zeros(size, x.dtype),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (2,), dt),), {"size": (3, 4)})]),
    test_dtypes=ALL,
)


def _nested_ints(v):
    return tuple(_nested_ints(e) for e in v) if isinstance(v, (tuple, list)) else int(v)


def _index_const_attrs(inputs, attrs):
    a = np.asarray(attrs["values"])
    if a.dtype.kind not in "iu" and not (a.size == 0 and a.dtype.kind == "f"):
        raise TypeError(f"_index_const(): values must be integers, got {a.dtype}")
    attrs["values"] = _nested_ints(a.tolist()) if a.ndim else int(a)
    return attrs


# `_index_const(x, values)`: a constant int64 index tensor on x's device (a list used as an
# index, `x[[0, 2]]`, in a captured graph; x only places it)
declare(
    "_index_const", "creation", "input, values", method=False, fixed=D.int64,
    attrs_rule=_index_const_attrs, shape=lambda s, values: np.shape(values),
    impl=lambda xp, x, values: xp.asarray(values, dtype=xp.int64),
    ref=lambda x, values: np.asarray(values, dtype=np.int64),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (2,), dt),), {"values": (0, 2, -1)}),
                                        ((arr(rng, (2,), dt),), {"values": ((1,), (0,))}),
                                        ((arr(rng, (2,), dt),), {"values": ()})]),
    test_dtypes=ALL,
)


def _index_map(xp, op: OpDef, size: tuple, args: dict):
    """Which input element each output element of the linear gather-like op `op` reads (flat
    position, -1 for none): `op` applied to 1..numel, minus one (fill values become -1)."""
    n = int(np.prod(size, dtype=np.int64))
    pos = xp.arange(1, n + 1, dtype=xp.int64).reshape(size)
    return xp.asarray(op.impl(xp, pos, **args)).reshape(-1) - 1


def _injective(v) -> bool:
    """Whether no two elements of strided array `v` share an address (sufficient test: along
    the dims of extent > 1 sorted by stride, each stride clears the previous dims' span)."""
    span = v.itemsize
    for stride, n in sorted((abs(s), n) for s, n in zip(v.strides, v.shape) if n > 1):
        if stride < span:
            return False
        span = stride * n
    return True


def _adjoint_direct(g, size, op: str, args: dict):
    """The adjoint on numpy without an index map, or None: a constant `pad` with no negative
    widths crops `g`; a view op is applied to a zero buffer and `g` written through it (views
    whose elements are distinct), or added one window offset at a time (`unfold`)."""
    from .. import REGISTRY

    if op == "pad":
        pad = args["pad"]
        if args.get("mode", "constant") != "constant" or min(pad, default=0) < 0:
            return None
        crop = [slice(None)] * g.ndim
        for i in range(len(pad) // 2):
            d = g.ndim - 1 - i
            crop[d] = slice(pad[2 * i], g.shape[d] - pad[2 * i + 1])
        return g[tuple(crop)].copy()
    if REGISTRY[op].kind != "view":
        return None
    out = np.zeros(size, g.dtype)
    v = REGISTRY[op].impl(np, out, **args)
    if not isinstance(v, np.ndarray) or v.shape != g.shape or not np.shares_memory(v, out):
        return None
    if _injective(v):
        v[...] = g
        return out
    if op == "unfold" and out.ndim:  # window k of each step: distinct elements, added
        d, k_size, step = args["dimension"], args["size"], args["step"]
        n = g.shape[d]
        for k in range(k_size):
            out[(slice(None),) * d + (slice(k, k + step * (n - 1) + 1, step),)] += g[..., k]
        return out
    return None


def _adjoint_impl(xp, g, size, op, args):
    from .. import REGISTRY

    if xp is np:
        r = _adjoint_direct(g, tuple(size), op, dict(args))
        if r is not None:
            return r
    view = REGISTRY[op]
    idx = _index_map(xp, view, size, dict(args))
    keep = idx >= 0
    n = int(np.prod(size, dtype=np.int64))
    flat = g.reshape(-1)
    if g.dtype.kind == "f" and xp is np:
        out = xp.bincount(idx[keep], weights=flat[keep], minlength=n).astype(g.dtype)
    else:
        out = xp.zeros(n, g.dtype)
        xp.add.at(out, idx[keep], flat[keep])
    return out.reshape(size)


declare(
    "_adjoint", "indexing", "grad, size, op, args", method=False,
    shape=lambda s, size, op, args: tuple(size),
    impl=_adjoint_impl,
    backward=lambda F, g, out, grad, size, op, args: (getattr(F, op)(g, **dict(args)),),
    ref=lambda g, size, op, args: _adjoint_ref(g, size, op, args),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 2), dt),), {"size": (2, 3), "op": "transpose",
                                   "args": (("dim0", 0), ("dim1", 1))}),
    ]),
    test_dtypes=FLOATS,
)


def _adjoint_ref(g, size, op, args):
    # the adjoint of a linear map is the transpose of its matrix: build it column by column
    from .. import REGISTRY

    n = int(np.prod(size))
    cols = []
    for k in range(n):
        e = np.zeros(n, g.dtype)
        e[k] = 1
        cols.append(np.asarray(REGISTRY[op].impl(np, e.reshape(size), **dict(args))).reshape(-1))
    return (np.stack(cols) @ g.reshape(-1)).reshape(size)


def adjoint(F, g, x, op: str, attrs: dict):
    """The backward of a linear gather-like op (a view, flip, roll, pad...): scatter-add `g`."""
    return F._adjoint(g, tuple(x.shape), op, tuple(sorted(attrs.items())))


# ---------------------------------------------------------------- basic indexing: a view


def _basic_shape(s, index):
    out, d = [], 0
    for k in index:
        if k is None:
            out.append(1)
        elif isinstance(k, int):
            d += 1
        else:
            out.append(len(range(*k.indices(s[d]))))
            d += 1
    return tuple(out) + tuple(s[d:])


def _getitem_attrs(inputs, attrs):
    s, d = inputs[0].shape, 0
    index = []
    for k in attrs["index"]:
        if k is not None and not isinstance(k, (int, slice)):
            raise TypeError(f"getitem(): basic index entries are ints, slices and None, got "
                            f"{type(k).__name__}")
        if k is None:
            index.append(k)
            continue
        if d >= len(s):
            raise IndexError(f"too many indices for tensor of dimension {len(s)}")
        if isinstance(k, int):
            if not -s[d] <= k < s[d]:
                raise IndexError(f"index {k} is out of bounds for dimension {d} with size {s[d]}")
            k = k % s[d]
        elif k.step is not None and k.step <= 0:
            raise ValueError("step must be greater than zero")
        index.append(k)
        d += 1
    attrs["index"] = tuple(index)
    return attrs


def _getitem_samples(rng, dt):
    x = arr(rng, (4, 5, 3), dt)
    for index in [(1,), (slice(1, None, 2), -1), (None, slice(None), 0, slice(0, 2)),
                  (slice(None), slice(None, None, 3), None)]:
        yield (x,), {"index": index}


declare(
    "getitem", "view", "input, index", method=False,
    attrs_rule=_getitem_attrs, shape=lambda s, index: _basic_shape(s, index),
    impl=lambda xp, x, index: x[index + (Ellipsis,)],  # a view even when all are ints
    backward=lambda F, g, out, x, index: (adjoint(F, g, x, "getitem", {"index": index}),),
    ref=lambda x, index: x[index], sample_inputs=_getitem_samples, test_dtypes=ALL,
)


# ---------------------------------------------------------------- advanced indexing


def _adv_attrs(op, first_index):
    def rule(inputs, attrs):
        x, idx = inputs[0], inputs[first_index:]
        dims = tuple(attrs["dims"])
        if len(dims) != len(idx):
            raise RuntimeError(f"{op}(): {len(idx)} index tensors for dims {dims}")
        for m in idx:
            check_index(op, m, "indices")
        attrs["dims"] = tuple(normalize_dim(d, x.ndim) for d in dims)
        return attrs
    return rule


def _adv_shape(s, idx_shapes, dims):
    from ..opdef import broadcast_shapes

    b = broadcast_shapes(*idx_shapes)
    rest = [n for d, n in enumerate(s) if d not in dims]
    if list(dims) == list(range(dims[0], dims[0] + len(dims))):
        return tuple(s[:dims[0]]) + b + tuple(s[dims[-1] + 1:])
    return b + tuple(rest)


def _adv_key(xp, x, idx, dims):
    key = [slice(None)] * x.ndim
    for d, i in zip(dims, idx):
        check_bounds(xp, i, x.shape[d], d)
        key[d] = i
    return tuple(key)


def _index_backward(F, g, out, x, *idx, dims):
    zeros = F.new_zeros(x, tuple(x.shape))
    return (F._index_put([zeros, g, *idx], (), dims, accumulate=True),) + (None,) * len(idx)


def _index_samples(rng, dt):
    x = arr(rng, (4, 5, 3), dt)
    yield (x, ints(rng, (2, 2), 4)), {"dims": (0,)}
    yield (x, ints(rng, (3,), 5), ints(rng, (1,), 3)), {"dims": (1, 2)}
    yield (x, ints(rng, (2,), 4), ints(rng, (2,), 3)), {"dims": (0, 2)}


declare(
    "index", "indexing", "tensors, dims", variadic=True, method=False,
    attrs_rule=_adv_attrs("index", 1),
    shape=lambda s, *idx, dims: _adv_shape(s, idx, dims),
    impl=lambda xp, x, *idx, dims: x[_adv_key(xp, x, idx, dims)],
    backward=_index_backward,
    ref=lambda x, *idx, dims: x[tuple(idx[dims.index(d)] if d in dims else slice(None)
                                      for d in range(x.ndim))],
    sample_inputs=_index_samples, test_dtypes=ALL,
)


def _index_put_impl(xp, x, v, *idx, index, dims, accumulate):
    out = x.copy()
    view = out[index + (Ellipsis,)]
    v = v.astype(x.dtype) if hasattr(v, "astype") else v
    if not idx:
        view[...] = v
        return out
    key = _adv_key(xp, view, idx, dims)
    if accumulate:
        shape = view[key].shape
        xp.add.at(view, key, xp.broadcast_to(v, shape))
    else:
        view[key] = v
    return out


def _index_put_backward(F, g, out, x, v, *idx, index, dims, accumulate):
    gx = g if accumulate else F._index_put([g, 0.0, *idx], index, dims)
    gv = F.getitem(g, index) if index else g
    if idx:
        gv = F.index([gv, *idx], dims)
    return (gx, None if is_number(v) else gv) + (None,) * len(idx)


def _index_put_attrs(inputs, attrs):
    x, v = inputs[0], inputs[1]
    view = TensorMeta(_basic_shape(x.shape, _getitem_attrs(
        (x,), {"index": attrs["index"]})["index"]), x.dtype)
    attrs["index"] = _getitem_attrs((x,), {"index": attrs["index"]})["index"]
    attrs = _adv_attrs("index_put", 2)((view, v) + inputs[2:], attrs)
    target = _adv_shape(view.shape, [m.shape for m in inputs[2:]], attrs["dims"]) \
        if len(inputs) > 2 else view.shape
    if isinstance(v, TensorMeta):
        from ..opdef import broadcast_shapes

        if broadcast_shapes(v.shape, target) != tuple(target):
            raise RuntimeError(f"shape mismatch: value tensor of shape {list(v.shape)} cannot be "
                               f"broadcast to indexing result of shape {list(target)}")
    return attrs


def _index_put_samples(rng, dt):
    x = arr(rng, (4, 5), dt)
    yield (x, arr(rng, (5,), dt)), {"index": (1,), "dims": ()}
    yield (x, arr(rng, (3, 1), dt), ints(rng, (3,), 4)), {"index": (), "dims": (0,)}
    yield (x, arr(rng, (2,), dt), np.array([0, 2]), np.array([1, 1])), \
        {"index": (), "dims": (0, 1), "accumulate": True}


def _index_put_ref(x, v, *idx, index, dims, accumulate=False):
    out = x.copy()
    view = out[index]
    if not idx:
        view[...] = v
        return out
    key = tuple(idx[dims.index(d)] if d in dims else slice(None) for d in range(view.ndim))
    if accumulate:
        np.add.at(view, key, np.broadcast_to(v, view[key].shape))
    else:
        view[key] = v
    return out


declare(
    "_index_put", "indexing", "tensors, index, dims, accumulate=False", variadic=True,
    method=False, attrs_rule=_index_put_attrs, shape=lambda s, *rest, **_: s,
    impl=_index_put_impl, backward=_index_put_backward, ref=_index_put_ref,
    sample_inputs=_index_put_samples, test_dtypes=ALL,
)
