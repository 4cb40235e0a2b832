"""View ops: reshape/view, flatten, squeeze/unsqueeze, permute, transpose, expand, narrow,
select, diagonal, unfold, and the multi-output splits (chunk, split, tensor_split, unbind).

A view (`kind="view"`) returns a numpy view of its input, so eager links it to its base (shared
memory and `_version`); `reshape` is a view when numpy can make one and a copy otherwise, as in
PyTorch. Backward rules of gather-like views scatter the gradient back (`indexing.adjoint`).
Copying shape ops (cat, stack, flip, roll, repeat, pad, tril...) live in `ir/ops/join.py`.
Semantics: the PyTorch documentation of each op. Imports nothing outside `ir`.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from ..opdef import OpDef, normalize_dim, normalize_dims, register
from .indexing import ALL, adjoint, arr, declare


def _reshape_attrs(inputs, attrs):
    shape = attrs["shape"]
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]
    shape = tuple(int(s) for s in shape)
    numel = inputs[0].numel
    if shape.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    attrs["shape"] = shape
    return attrs


def _view_impl(xp, x, shape):
    try:
        return xp.reshape(x, shape, copy=False)
    except ValueError:
        raise RuntimeError("view size is not compatible with input tensor's size and stride (at "
                           "least one dimension spans across two contiguous subspaces). Use "
                           ".reshape(...) instead.") from None


# (reshape: the array's method, without numpy's Python wrapper)
for _name, _impl in (("reshape", lambda xp, x, shape: x.reshape(shape)),
                     ("view", _view_impl)):
    register(OpDef(
        _name, "view", "input, *shape", 1, "keep",
        shape=lambda s, shape: shape, attrs_rule=_reshape_attrs, impl=_impl,
        backward=lambda F, g, out, x, shape: (F.reshape(g, tuple(x.shape)),),
        ref=lambda x, shape: np.reshape(x, shape), method=True,
        samples=({"shape": (-1,)},),
    ))


def _transpose_attrs(inputs, attrs):
    n = inputs[0].ndim
    attrs["dim0"], attrs["dim1"] = normalize_dim(attrs["dim0"], n), normalize_dim(attrs["dim1"], n)
    return attrs


def _transpose_shape(s, dim0, dim1):
    if not s:   # a 0-d tensor: dims 0 and -1 are valid, nothing moves (as PyTorch)
        return ()
    s = list(s)
    s[dim0], s[dim1] = s[dim1], s[dim0]
    return tuple(s)


register(OpDef(
    "transpose", "view", "input, dim0, dim1", 1, "keep",
    shape=_transpose_shape, attrs_rule=_transpose_attrs,
    impl=lambda xp, x, dim0, dim1: x.swapaxes(dim0, dim1) if x.ndim else x,  # (no wrapper)
    backward=lambda F, g, out, x, dim0, dim1: (F.transpose(g, dim0, dim1),),
    ref=lambda x, dim0, dim1: np.swapaxes(x, dim0, dim1),
    samples=({"dim0": 0, "dim1": -1},),
))


def _unsqueeze_attrs(inputs, attrs):
    attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim + 1)
    return attrs


register(OpDef(
    "unsqueeze", "view", "input, dim", 1, "keep",
    shape=lambda s, dim: s[:dim] + (1,) + s[dim:], attrs_rule=_unsqueeze_attrs,
    impl=lambda xp, x, dim: x.reshape(x.shape[:dim] + (1,) + x.shape[dim:]),  # (expand_dims)
    backward=lambda F, g, out, x, dim: (F.reshape(g, tuple(x.shape)),),
    ref=lambda x, dim: np.expand_dims(x, dim), samples=({"dim": 0}, {"dim": -1}),
))


def _expand_attrs(inputs, attrs):
    size = attrs["size"]
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = size[0]
    src = inputs[0].shape
    if len(size) < len(src):
        raise RuntimeError(
            f"expand: the number of sizes provided ({len(size)}) must be greater or equal to "
            f"the number of dimensions in the tensor ({len(src)})"
        )
    lead = len(size) - len(src)
    out = []
    for i, n in enumerate(size):
        cur = src[i - lead] if i >= lead else 1
        n = cur if n == -1 else int(n)
        if cur != 1 and cur != n:
            raise RuntimeError(
                f"The expanded size of the tensor ({n}) must match the existing size ({cur}) "
                f"at non-singleton dimension {i}.  Target sizes: {list(size)}.  "
                f"Tensor sizes: {list(src)}"
            )
        out.append(n)
    attrs["size"] = tuple(out)
    return attrs


def _expand_impl(xp, x, size):
    """broadcast_to's read-only view; of a C-contiguous numpy array made directly with
    broadcast_to's strides (numpy's broadcast_to runs Python and an nditer: 2-3x slower)."""
    if type(x) is np.ndarray and x.flags.c_contiguous:
        lead = len(size) - x.ndim
        shape, st = x.shape, x.strides
        strides = [0] * lead
        for j, n in enumerate(shape):
            strides.append(st[j] if n == size[lead + j] and n != 1 else 0)
        r = np.ndarray(size, x.dtype, x, 0, strides)
        r.flags.writeable = False
        return r
    return xp.broadcast_to(x, size)


register(OpDef(
    "expand", "view", "input, *size", 1, "keep",
    shape=lambda s, size: size, attrs_rule=_expand_attrs,
    impl=_expand_impl,
    backward=lambda F, g, out, x, size: (g,),  # the engine sums g back to x's shape
    ref=lambda x, size: np.broadcast_to(
        x, tuple(x.shape[i - len(size) + x.ndim] if n == -1 else n for i, n in enumerate(size))),
    samples=({"size": (2, -1, -1)},),
))



def view_op(name, sig, shape, impl, backward=None, ref=None, samples=None, **kw):
    """Register a view op; its backward defaults to scattering the gradient back (adjoint)."""
    if backward is None:
        def backward(F, g, out, x, **attrs):
            return (adjoint(F, g, x, name, attrs),)
    return declare(name, "view", sig, shape=shape, impl=impl, backward=backward, ref=ref,
                   sample_inputs=samples, test_dtypes=ALL, **kw)


def _one(*cases):
    """sample_inputs from (shape, attrs) pairs: one input tensor of each shape."""
    def gen(rng, dt):
        for shape, attrs in cases:
            yield (arr(rng, shape, dt),), attrs
    return gen


def _flatten_decomp(F, x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return F.reshape(x, (1,))
    a, b = normalize_dim(start_dim, x.ndim), normalize_dim(end_dim, x.ndim)
    if a > b:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    s = tuple(x.shape)
    return F.reshape(x, s[:a] + (math.prod(s[a:b + 1]),) + s[b + 1:])


declare("flatten", "composite", "input, start_dim=0, end_dim=-1", decomp=_flatten_decomp,
        ref=lambda x, start_dim=0, end_dim=-1: x.reshape(
            x.shape[:start_dim % x.ndim] + (-1,) + x.shape[end_dim % x.ndim + 1:]),
        sample_inputs=_one(((2, 3, 4), {}), ((2, 3, 4), {"start_dim": 1}),
                           ((2, 3, 4, 5), {"start_dim": 1, "end_dim": -2})), test_dtypes=ALL)


def _unflatten_decomp(F, x, dim, sizes):
    d = normalize_dim(dim, x.ndim)
    sizes = tuple(sizes)
    if sizes.count(-1) == 0 and math.prod(sizes) != x.shape[d]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({x.shape[d]}) in the input tensor")
    s = tuple(x.shape)
    return F.reshape(x, s[:d] + sizes + s[d + 1:])


declare("unflatten", "composite", "input, dim, sizes", decomp=_unflatten_decomp,
        ref=lambda x, dim, sizes: x.reshape(x.shape[:dim % x.ndim] + tuple(sizes)
                                            + x.shape[dim % x.ndim + 1:]),
        sample_inputs=_one(((2, 12), {"dim": 1, "sizes": (3, 4)}),
                           ((6, 2), {"dim": 0, "sizes": (-1, 2)})), test_dtypes=ALL)


def _squeeze_attrs(inputs, attrs):
    s = inputs[0].shape
    dims = normalize_dims(attrs["dim"], max(len(s), 1)) if len(s) else ()
    attrs["dim"] = tuple(d for d in dims if s[d] == 1)
    return attrs


view_op("squeeze", "input, dim=None",
        lambda s, dim: tuple(n for d, n in enumerate(s) if d not in dim),
        lambda xp, x, dim: x.squeeze(axis=dim),
        backward=lambda F, g, out, x, dim: (F.reshape(g, tuple(x.shape)),),
        ref=lambda x, dim=None: np.squeeze(x, axis=tuple(
            d for d in ((dim,) if isinstance(dim, int) else dim or range(x.ndim))
            if x.shape[d] == 1)),
        samples=_one(((2, 1, 3, 1), {}), ((2, 1, 3, 1), {"dim": 1}),
                     ((2, 1, 3, 1), {"dim": (0, -1)}), ((1,), {"dim": 0})),
        attrs_rule=_squeeze_attrs)


def _permute_attrs(inputs, attrs):
    dims = attrs["dims"]
    if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
        dims = dims[0]
    n = inputs[0].ndim
    if len(dims) != n:
        raise RuntimeError(f"permute(sparse_coo): number of dimensions in the tensor input does "
                           f"not match the length of the desired ordering of dimensions i.e. "
                           f"input.dim() = {n} is not equal to len(dims) = {len(dims)}")
    out = tuple(normalize_dim(d, n) for d in dims)
    if len(set(out)) != n:
        raise RuntimeError("permute(): duplicate dims are not allowed.")
    attrs["dims"] = out
    return attrs


view_op("permute", "input, *dims", lambda s, dims: tuple(s[d] for d in dims),
        lambda xp, x, dims: xp.transpose(x, dims),
        backward=lambda F, g, out, x, dims: (F.permute(g, tuple(np.argsort(dims).tolist())),),
        ref=lambda x, dims: np.transpose(x, dims),
        samples=_one(((2, 3, 4), {"dims": (2, 0, 1)}), ((2, 3), {"dims": (-1, 0)})),
        attrs_rule=_permute_attrs)


def _movedim_decomp(F, x, source, destination):
    src = (source,) if isinstance(source, int) else tuple(source)
    dst = (destination,) if isinstance(destination, int) else tuple(destination)
    if len(src) != len(dst):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({list(src)} "
                           f"dims) should contain the same number of dims as destination "
                           f"({list(dst)} dims)")
    n = x.ndim
    src = [normalize_dim(d, n) for d in src]
    dst = [normalize_dim(d, n) for d in dst]
    order = [None] * n
    for s_, d_ in zip(src, dst):
        order[d_] = s_
    rest = iter(d for d in range(n) if d not in src)
    return F.permute(x, tuple(o if o is not None else next(rest) for o in order))


declare("movedim", "composite", "input, source, destination", decomp=_movedim_decomp,
        aliases=("moveaxis",), ref=lambda x, source, destination: np.moveaxis(
            x, source, destination),
        sample_inputs=_one(((2, 3, 4), {"source": 0, "destination": -1}),
                           ((2, 3, 4), {"source": (0, 1), "destination": (2, 0)})),
        test_dtypes=ALL)


def _t_decomp(F, x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    return F.transpose(x, 0, 1) if x.ndim == 2 else F.reshape(x, tuple(x.shape))


declare("t", "composite", "input", decomp=_t_decomp, ref=lambda x: x.T,
        sample_inputs=_one(((2, 3), {}), ((3,), {})), test_dtypes=ALL)
declare("expand_as", "composite", "input, other", 2, scalar_ok=False,
        decomp=lambda F, x, other: F.expand(x, tuple(other.shape)),
        ref=lambda x, o: np.broadcast_to(x, o.shape), test_dtypes=ALL,
        sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 1), dt), arr(rng, (2, 3, 4), dt)),
                                             {})]))
declare("broadcast_to", "composite", "input, size",
        decomp=lambda F, x, size: F.expand(x, tuple(size)),
        ref=lambda x, size: np.broadcast_to(x, size), test_dtypes=ALL,
        sample_inputs=_one(((3, 1), {"size": (2, 3, 4)})))


def _spread(args, kwargs):
    """`broadcast_tensors(a, b)` and `broadcast_tensors([a, b])` both work."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    return args, kwargs


def _broadcast_tensors_decomp(F, *tensors):
    from ..opdef import broadcast_shapes

    shape = broadcast_shapes(*(tuple(t.shape) for t in tensors))
    return tuple(F.expand(t, shape) for t in tensors)


declare("broadcast_tensors", "composite", "*tensors", variadic=True, method=False, prebind=_spread,
        decomp=_broadcast_tensors_decomp, ref=lambda *a: tuple(np.broadcast_arrays(*a)),
        sample_inputs=lambda rng, dt: iter([((arr(rng, (3, 1), dt), arr(rng, (4,), dt),
                                              arr(rng, (2, 1, 1), dt)), {})]),
        test_dtypes=ALL)


# ---------------------------------------------------------------- narrowing views


def _narrow_decomp(F, x, dim, start, length):
    d = normalize_dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= start <= n:
        raise IndexError(f"start out of range (expected to be in range of [{-n}, {n}], but "
                         f"got {start})")
    start = start % n if start < 0 else start
    if length < 0 or start + length > n:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({n}).")
    return F.getitem(x, (slice(None),) * d + (slice(start, start + length),))


declare("narrow", "composite", "input, dim, start, length", decomp=_narrow_decomp,
        ref=lambda x, dim, start, length: np.take(x, range(start, start + length), axis=dim),
        sample_inputs=_one(((4, 5), {"dim": 1, "start": 1, "length": 3}),
                           ((4, 5), {"dim": 0, "start": -2, "length": 2})), test_dtypes=ALL)


def _select_decomp(F, x, dim, index):
    if x.ndim == 0:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    d = normalize_dim(dim, x.ndim)
    n = x.shape[d]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(x.shape)} at dimension {dim}")
    return F.getitem(x, (slice(None),) * d + (index,))


declare("select", "composite", "input, dim, index", decomp=_select_decomp,
        ref=lambda x, dim, index: np.take(x, index, axis=dim),
        sample_inputs=_one(((4, 5), {"dim": 1, "index": -1}), ((4, 5), {"dim": 0, "index": 2})),
        test_dtypes=ALL)


def diagonal_view(xp, x, offset=0, dim1=0, dim2=1):
    """A writable strided view of the diagonal (numpy's `diagonal` is read-only)."""
    n1, n2 = x.shape[dim1], x.shape[dim2]
    size = max(min(n1, n2 - offset), 0) if offset >= 0 else max(min(n1 + offset, n2), 0)
    key = [slice(None)] * x.ndim
    if size:
        key[dim1] = slice(max(-offset, 0), None)
        key[dim2] = slice(max(offset, 0), None)
    sub = x[tuple(key)]
    rest = [d for d in range(x.ndim) if d not in (dim1, dim2)]
    shape = tuple(x.shape[d] for d in rest) + (size,)
    strides = tuple(x.strides[d] for d in rest) + (x.strides[dim1] + x.strides[dim2],)
    return xp.lib.stride_tricks.as_strided(sub, shape, strides, writeable=True)


def _diagonal_attrs(inputs, attrs):
    n = inputs[0].ndim
    if n < 2:
        raise RuntimeError(f"diagonal dimensions requires ndim larger than 1, got {n}")
    attrs["dim1"], attrs["dim2"] = normalize_dim(attrs["dim1"], n), normalize_dim(
        attrs["dim2"], n)
    if attrs["dim1"] == attrs["dim2"]:
        raise RuntimeError(f"diagonal dimensions cannot be identical {attrs['dim1']}, "
                           f"{attrs['dim2']}")
    return attrs


def _diagonal_shape(s, offset, dim1, dim2):
    n1, n2 = s[dim1], s[dim2]
    size = max(min(n1, n2 - offset), 0) if offset >= 0 else max(min(n1 + offset, n2), 0)
    return tuple(n for d, n in enumerate(s) if d not in (dim1, dim2)) + (size,)


view_op("diagonal", "input, offset=0, dim1=0, dim2=1", _diagonal_shape, diagonal_view,
        ref=lambda x, offset=0, dim1=0, dim2=1: np.diagonal(x, offset, dim1, dim2),
        samples=_one(((3, 4), {}), ((3, 4), {"offset": 1}), ((2, 3, 4), {"offset": -1,
                     "dim1": 2, "dim2": 1}), ((3, 4), {"offset": 7})),
        attrs_rule=_diagonal_attrs)


def _unfold_attrs(inputs, attrs):
    s = inputs[0].shape
    d = normalize_dim(attrs["dimension"], max(len(s), 1))
    n = s[d] if s else 1
    if attrs["size"] > n:
        raise RuntimeError(f"maximum size for tensor at dimension {d} is {n} but size is "
                           f"{attrs['size']}")
    if attrs["step"] <= 0:
        raise RuntimeError(f"step is {attrs['step']} but must be > 0")
    attrs["dimension"] = d
    return attrs


def _unfold_impl(xp, x, dimension, size, step):
    if x.ndim == 0:
        return x.reshape(1)
    w = xp.lib.stride_tricks.sliding_window_view(x, size, axis=dimension, writeable=True)
    return w[(slice(None),) * dimension + (slice(None, None, step),)]


def _unfold_shape(s, dimension, size, step):
    if not s:
        return (1,)
    s = list(s)
    s[dimension] = (s[dimension] - size) // step + 1
    return tuple(s) + (size,)


view_op("unfold", "input, dimension, size, step", _unfold_shape, _unfold_impl,
        ref=lambda x, dimension, size, step: np.stack(
            [np.moveaxis(np.take(x, range(i, i + size), axis=dimension), dimension, -1)
             for i in range(0, x.shape[dimension] - size + 1, step)], axis=dimension),
        samples=_one(((7,), {"dimension": 0, "size": 3, "step": 2}),
                     ((3, 6), {"dimension": 1, "size": 2, "step": 1}),
                     ((5, 2, 2), {"dimension": 0, "size": 5, "step": 3})),
        attrs_rule=_unfold_attrs)


# ---------------------------------------------------------------- multi-output splits


def _split_bounds(n, sizes):
    out, start = [], 0
    for k in sizes:
        out.append((start, k))
        start += k
    return out


def _split_decomp(F, x, split_size_or_sections, dim=0):
    d = normalize_dim(dim, x.ndim)
    n = x.shape[d]
    s = split_size_or_sections
    if isinstance(s, int):
        if s <= 0 and not (s == 0 and n == 0):
            raise RuntimeError(f"split expects split_size be non-negative, but got split_size={s}")
        sizes = [min(s, n - i) for i in range(0, n, s)] if s else [0]
    else:
        sizes = [int(k) for k in s]
        if sum(sizes) != n or any(k < 0 for k in sizes):
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {d}), but got split_sizes="
                               f"{sizes}")
    return tuple(F.narrow(x, d, a, k) for a, k in _split_bounds(n, sizes))


declare("split", "composite", "tensor, split_size_or_sections, dim=0", decomp=_split_decomp,
        ref=lambda x, split_size_or_sections, dim=0: tuple(np.split(x, np.cumsum(
            [split_size_or_sections] * (-(-x.shape[dim] // split_size_or_sections))
            if isinstance(split_size_or_sections, int) else split_size_or_sections)[:-1],
            axis=dim)),
        sample_inputs=_one(((5, 4), {"split_size_or_sections": 2}),
                           ((5, 4), {"split_size_or_sections": (1, 3), "dim": 1})),
        test_dtypes=ALL)


def _chunk_decomp(F, x, chunks, dim=0):
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = x.shape[normalize_dim(dim, x.ndim)]
    size = -(-n // chunks) if n else 0
    return _split_decomp(F, x, size if size else 1, dim) if n else (F.narrow(x, dim, 0, 0),)


declare("chunk", "composite", "input, chunks, dim=0", decomp=_chunk_decomp,
        ref=lambda x, chunks, dim=0: tuple(np.split(x, np.arange(
            -(-x.shape[dim] // chunks), x.shape[dim], -(-x.shape[dim] // chunks)), axis=dim)),
        sample_inputs=_one(((5, 4), {"chunks": 3}), ((6, 4), {"chunks": 3}),
                           ((2, 7), {"chunks": 4, "dim": 1})), test_dtypes=ALL)


def _tensor_split_decomp(F, x, indices_or_sections, dim=0):
    d = normalize_dim(dim, x.ndim)
    n = x.shape[d]
    s = indices_or_sections
    if isinstance(s, int):
        if s <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {s}")
        q, r = divmod(n, s)
        sizes = [q + 1] * r + [q] * (s - r)
        bounds = _split_bounds(n, sizes)
    else:
        cuts = [0] + [min(max(int(i) if i >= 0 else n + int(i), 0), n) for i in s] + [n]
        bounds = [(a, max(b - a, 0)) for a, b in itertools.pairwise(cuts)]
    return tuple(F.narrow(x, d, a, k) for a, k in bounds)


declare("tensor_split", "composite", "input, indices_or_sections, dim=0",
        decomp=_tensor_split_decomp,
        ref=lambda x, indices_or_sections, dim=0: tuple(np.array_split(
            x, indices_or_sections, axis=dim)),
        sample_inputs=_one(((7, 3), {"indices_or_sections": 3}),
                           ((7, 3), {"indices_or_sections": (1, 5), "dim": 0}),
                           ((2, 6), {"indices_or_sections": (4, 2), "dim": 1})),
        test_dtypes=ALL)


def _unbind_decomp(F, x, dim=0):
    d = normalize_dim(dim, x.ndim)
    return tuple(F.select(x, d, i) for i in range(x.shape[d]))


declare("unbind", "composite", "input, dim=0", decomp=_unbind_decomp,
        ref=lambda x, dim=0: tuple(np.moveaxis(x, dim, 0)),
        sample_inputs=_one(((3, 4), {}), ((3, 4), {"dim": 1})), test_dtypes=ALL)
