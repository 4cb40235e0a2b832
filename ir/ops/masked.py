"""masked_fill, masked_scatter (a bool mask broadcast against the input), take and put (indices
into the flattened input) and take_along_dim, with their in-place `_` variants.

Declared with `indexing.declare` as the gather/scatter family of `ir/ops/scatter.py`; backward
rules follow PyTorch's derivatives.yaml; out-of-range indices raise PyTorch's IndexError and a
non-bool mask its RuntimeError. Imports nothing outside `ir`.
"""

from __future__ import annotations

import numpy as np

from .. import dtypes as D
from ..opdef import TensorMeta, broadcast_shapes, is_number, normalize_dim
from .elementwise import FLOATS
from .indexing import ALL, arr, check_bounds, check_index, declare, ints


def _mask_attrs(op):
    def rule(inputs, attrs):
        mask = inputs[1]
        if not isinstance(mask, TensorMeta) or mask.dtype is not D.bool_:
            got = mask.dtype.name if isinstance(mask, TensorMeta) else type(mask).__name__
            raise RuntimeError(f"{op}: expected BoolTensor for mask, got {got}")
        value = inputs[2] if len(inputs) > 2 else None
        if op == "masked_fill" and isinstance(value, TensorMeta) and value.ndim:
            raise RuntimeError(f"masked_fill_ only supports a 0-dimensional value tensor, but got "
                               f"tensor with {value.ndim} dimension(s).")
        return attrs
    return rule


def _mask_shape(s, m, *rest):
    return broadcast_shapes(s, m)


def _masked_fill_impl(xp, x, mask, value):
    value = value.astype(x.dtype) if hasattr(value, "astype") else value
    return xp.where(mask, xp.asarray(value, dtype=x.dtype), x)


declare(
    "masked_fill", "indexing", "input, mask, value", 3,
    attrs_rule=_mask_attrs("masked_fill"), inplace=True, shape=_mask_shape,
    impl=_masked_fill_impl,
    backward=lambda F, g, out, x, mask, value: (
        F.where(mask, 0.0, g), None,
        None if is_number(value) else F.sum(F.where(mask, g, 0.0))),
    ref=lambda x, mask, value: np.where(mask, np.asarray(value).astype(x.dtype), x),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), rng.random((3, 4)) < 0.5, 1), {}),
        ((arr(rng, (3, 4), dt), rng.random((4,)) < 0.5, arr(rng, (), dt)), {}),
    ]),
    test_dtypes=ALL,
)


def _masked_scatter_impl(xp, x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = xp.broadcast_to(x, shape).copy()
    m = xp.broadcast_to(mask, shape)
    n = int(m.sum())
    if n > source.size:
        raise RuntimeError(f"masked_scatter: expected source to have at least {n} elements "
                           f"(the number of True values in mask), got {source.size}")
    out[m] = source.reshape(-1)[:n]
    return out


def _masked_scatter_backward(F, g, out, x, mask, source):
    shape = tuple(out.shape)
    sel = F.masked_select(g, mask)
    rest = source.numel() - sel.numel() if hasattr(source, "numel") else \
        int(np.prod(source.shape)) - sel.shape[0]
    gs = F.reshape(F.pad(sel, (0, rest)), tuple(source.shape))
    return F.where(F.expand(mask, shape), 0.0, g), None, gs


declare(
    "masked_scatter", "indexing", "input, mask, source", 3,
    attrs_rule=_mask_attrs("masked_scatter"), inplace=True, shape=_mask_shape,
    impl=_masked_scatter_impl, backward=_masked_scatter_backward,
    ref=lambda x, mask, source: _masked_scatter_impl(np, x, mask, source),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), rng.random((3, 4)) < 0.5, arr(rng, (3, 5), dt)), {}),
    ]),
    test_dtypes=ALL,
)


def _take_impl(xp, x, index):
    check_bounds(xp, index, x.size, 0)
    return x.reshape(-1)[index]


declare(
    "take", "indexing", "input, index", 2,
    attrs_rule=lambda i, a: (check_index("take", i[1]), a)[1],
    shape=lambda s, i: i, impl=_take_impl,
    backward=lambda F, g, out, x, index: (
        F.put(F.new_zeros(x, tuple(x.shape)), index, g, accumulate=True), None),
    ref=lambda x, index: np.take(x, index),
    sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 4), dt), ints(rng, (2, 5), 12)), {})]),
    test_dtypes=ALL,
)


def _put_impl(xp, x, index, source, accumulate=False):
    check_bounds(xp, index, x.size, 0)
    out = x.copy()
    flat = out.reshape(-1)
    if accumulate:
        xp.add.at(flat, index.reshape(-1), source.reshape(-1))
    else:
        flat[index.reshape(-1)] = source.reshape(-1)
    return out


def _put_attrs(inputs, attrs):
    check_index("put", inputs[1])
    src = inputs[2]
    if not isinstance(src, TensorMeta) or src.numel != inputs[1].numel:
        n = src.numel if isinstance(src, TensorMeta) else 1
        raise RuntimeError(f"put_(): Expected source and index to have the same number of "
                           f"elements, but got source.numel() = {n}, index.numel() = "
                           f"{inputs[1].numel}")
    if src.dtype is not inputs[0].dtype:
        raise RuntimeError("put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {inputs[0].dtype.title} and source.dtype = "
                           f"{src.dtype.title}")
    return attrs


declare(
    "put", "indexing", "input, index, source, accumulate=False", 3,
    attrs_rule=_put_attrs, inplace=True, shape=lambda s, *_, **__: s, impl=_put_impl,
    backward=lambda F, g, out, x, index, source, accumulate=False: (
        g if accumulate else F.put(g, index, F.new_zeros(source, tuple(source.shape))), None,
        F.reshape(F.take(g, index), tuple(source.shape))),
    ref=lambda x, index, source, accumulate=False: _put_impl(np, x, index, source, accumulate),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), rng.permutation(12)[:5], arr(rng, (5,), dt)), {}),
        ((arr(rng, (3, 4), dt), np.array([[1, 1], [0, 11]]), arr(rng, (2, 2), dt)),
         {"accumulate": True}),
    ]),
    test_dtypes=(D.int64,) + FLOATS,
)


def _take_along_dim_decomp(F, x, indices, dim=None):
    if dim is None:
        return F.take(F.reshape(x, (-1,)), F.reshape(indices, (-1,)))
    d = normalize_dim(dim, x.ndim)
    if x.ndim != indices.ndim:
        raise RuntimeError(f"torch.take_along_dim(): input and indices should have the same "
                           f"number of dimensions, but got {x.ndim} dimensions for input, and "
                           f"{indices.ndim} dimensions for indices")
    one = lambda s: tuple(1 if k == d else n for k, n in enumerate(s))
    xs = list(broadcast_shapes(one(x.shape), one(indices.shape)))
    ix = list(xs)
    xs[d], ix[d] = x.shape[d], indices.shape[d]
    return F.gather(F.expand(x, tuple(xs)), d, F.expand(indices, tuple(ix)))


declare(
    "take_along_dim", "composite", "input, indices, dim=None", 2,
    decomp=_take_along_dim_decomp,
    ref=lambda x, i, dim=None: np.take_along_axis(x.reshape(-1) if dim is None else x,
                                                  i.reshape(-1) if dim is None else i,
                                                  0 if dim is None else dim),
    sample_inputs=lambda rng, dt: iter([
        ((arr(rng, (3, 4), dt), ints(rng, (3, 2), 4)), {"dim": 1}),
        ((arr(rng, (3, 4), dt), ints(rng, (5,), 12)), {}),
        ((arr(rng, (3, 1), dt), ints(rng, (1, 3), 1)), {"dim": 0}),
    ]),
    test_dtypes=ALL,
)
