"""PyTorch's functions that are compositions of registry ops (issue 16's Tensor/top-level sweep):
stacking and flipping helpers, `atleast_*d`, `meshgrid`, `cartesian_prod`, `combinations`,
`block_diag`, `diagflat`, `diff`, `cov`/`corrcoef`, `aminmax`, `renorm`, the `*_scatter`
family, `index_reduce` and `fill_diagonal_` (written in `eager/extra_scatter.py`), `trapezoid`,
`histogram`, `frexp`, `isin`, `unique_consecutive`, `tril_indices`/`triu_indices`,
`unravel_index`...

Each is written once here, in terms of eager's generated functions (so gradients come from the
ops' own rules), and `install(namespace, Tensor)` makes it a top-level function and, where
PyTorch has one, a Tensor method. Semantics, argument names and errors follow the PyTorch
documentation of each function. Data-dependent helpers without gradients in PyTorch
(histogram, frexp, unique_consecutive, isin, the index generators) compute on the host with
numpy. Imports eager's modules only.
"""

from __future__ import annotations

import builtins
import itertools

import numpy as np

from ir import dtypes as D
from ir.opdef import broadcast_shapes as _bs
from ir.return_types import return_type

from . import creation
from .dispatch import FUNCTIONS as _F
from .extra_scatter import (
    as_strided_scatter,
    diagonal_scatter,
    fill_diagonal_,
    index_reduce,
    select_scatter,
    slice_scatter,
)
from .tensor import Size, Tensor

aminmax_result = return_type("aminmax", ("min", "max"))
histogram_result = return_type("histogram", ("hist", "bin_edges"))
frexp_result = return_type("frexp", ("mantissa", "exponent"))


def _tensors(args, name):
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    for i, t in enumerate(args):
        if not isinstance(t, Tensor):
            raise TypeError(f"{name}(): argument {i} must be Tensor, not {type(t).__name__}")
    return args


def _atleast(n):
    def fn(*tensors):
        ts = _tensors(tensors, f"atleast_{n}d")
        out = []
        for t in ts:
            if t.ndim == 0:
                t = t.reshape((1,) * n)
            elif t.ndim == 1 and n >= 2:
                t = t.unsqueeze(0)
                if n == 3:
                    t = t.unsqueeze(-1)
            elif t.ndim == 2 and n == 3:
                t = t.unsqueeze(-1)
            out.append(t)
        return out[0] if len(tensors) == 1 and isinstance(tensors[0], Tensor) else tuple(out)
    fn.__name__ = f"atleast_{n}d"
    fn.__doc__ = (f"`torch.atleast_{n}d(*tensors)`: views with at least {n} dims (PyTorch's "
                  "placement of the new dims); one tensor in, one out, else a tuple.")
    return fn


atleast_1d, atleast_2d, atleast_3d = _atleast(1), _atleast(2), _atleast(3)


def dstack(tensors):
    """`torch.dstack`: concatenate along dim 2 after `atleast_3d`."""
    return _F["cat"](list(atleast_3d(*_tensors((tensors,), "dstack"))), 2)


def column_stack(tensors):
    """`torch.column_stack`: 0-d and 1-d tensors become columns, then `hstack`."""
    ts = [t.reshape(-1, 1) if t.ndim <= 1 else t for t in _tensors((tensors,), "column_stack")]
    return _F["hstack"](ts)


def fliplr(input):
    """`torch.fliplr`: reverse dim 1 (RuntimeError below 2 dims)."""
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return _F["flip"](input, (1,))


def flipud(input):
    """`torch.flipud`: reverse dim 0 (RuntimeError for 0-d)."""
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return _F["flip"](input, (0,))


def swapaxes(input, axis0, axis1):
    """`torch.swapaxes` (numpy's name of `transpose`)."""
    return _F["transpose"](input, axis0, axis1)


def swapdims(input, dim0, dim1):
    """`torch.swapdims`: alias of `transpose`."""
    return _F["transpose"](input, dim0, dim1)


def ravel(input):
    """`torch.ravel`: the flattened tensor (a view when possible)."""
    return _F["reshape"](input, (-1,))


def adjoint(input):
    """`torch.adjoint`: conjugate transpose of the last two dims (a view)."""
    if input.ndim < 2:
        raise RuntimeError("tensor.adjoint() is only supported on matrices or batches of "
                           f"matrices. Got {input.ndim}-D tensor.")
    t = _F["transpose"](input, -2, -1)
    return _F["conj"](t) if input.dtype.is_complex else t


def broadcast_shapes(*shapes) -> Size:
    """`torch.broadcast_shapes`: the broadcast of shapes (ints count as 1-d shapes);
    RuntimeError naming them when they clash."""
    norm = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    return Size(_bs(*norm))


def meshgrid(*tensors, indexing=None):
    """`torch.meshgrid(*tensors, indexing="ij")`: expanded views of 1-d tensors ("xy" swaps the
    first two dims, as numpy)."""
    ts = _tensors(tensors, "meshgrid")
    indexing = "ij" if indexing is None else indexing
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    for t in ts:
        if t.ndim > 1:
            raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list "
                               f"but got: {t.ndim}D")
    ts = [t.reshape(-1) for t in ts]
    shape = tuple(t.shape[0] for t in ts)
    out = []
    for i, t in enumerate(ts):
        view = [1] * len(ts)
        view[i] = -1
        out.append(t.reshape(view).expand(shape))
    if indexing == "xy" and len(ts) >= 2:  # numpy's Cartesian indexing: the first two swapped
        out = [o.transpose(0, 1) for o in out]
    return tuple(out)


def cartesian_prod(*tensors):
    """`torch.cartesian_prod`: all tuples of elements of 1-d tensors, shape (N, len(tensors))
    (one tensor: itself)."""
    ts = _tensors(tensors, "cartesian_prod")
    if len(ts) == 1:
        return ts[0]
    grids = meshgrid(*ts, indexing="ij")
    return _F["stack"]([g.reshape(-1) for g in grids], 1)


def combinations(input, r=2, with_replacement=False):
    """`torch.combinations`: itertools.combinations(_with_replacement) of a 1-d tensor's
    elements, shape (count, r); gradients flow to the selected elements."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return creation.empty(0, dtype=input.dtype)
    pick = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    idx = np.array(list(pick(range(input.shape[0]), r)), dtype=np.int64).reshape(-1, r)
    if idx.size == 0:
        return creation.empty(0, r, dtype=input.dtype)
    return input[creation.tensor(idx)]


def block_diag(*tensors):
    """`torch.block_diag`: tensors of <= 2 dims on the diagonal of one matrix (0-d -> 1x1,
    1-d -> one row), the promoted dtype; zeros elsewhere."""
    ts = _tensors(tensors, "block_diag")
    mats = []
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {i} has {t.ndim} dimensions")
        mats.append(t.reshape(1, 1) if t.ndim == 0 else t.reshape(1, -1) if t.ndim == 1 else t)
    if not mats:
        return creation.empty(1, 0)
    dt = mats[0].dtype
    for m in mats[1:]:
        dt = D.promote_types(dt, m.dtype)
    cols = builtins.sum(m.shape[1] for m in mats)
    rows, left = [], 0
    for m in mats:
        c = m.shape[1]
        rows.append(_F["pad"](m.to(dt), (left, cols - left - c)))
        left += c
    return _F["cat"](rows, 0)


def diagflat(input, offset=0):
    """`torch.diagflat`: the flattened input on diagonal `offset` of a square matrix."""
    return _F["diag_embed"](input.reshape(-1), offset)


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """`torch.diff`: the n-th forward difference along `dim` (bool: `!=`), after concatenating
    `prepend`/`append` there."""
    parts = [p for p in (prepend, input, append) if p is not None]
    parts = [p if isinstance(p, Tensor) else creation.full(
        tuple(input.shape[:dim % input.ndim]) + (1,) + tuple(input.shape[dim % input.ndim + 1:]),
        p, dtype=input.dtype) for p in parts]
    x = _F["cat"](parts, dim) if len(parts) > 1 else input
    for _ in range(n):
        length = x.shape[dim]
        if length == 0:
            break
        hi = _F["narrow"](x, dim, 1, length - 1)
        lo = _F["narrow"](x, dim, 0, length - 1)
        x = _F["ne"](hi, lo) if x.dtype is D.bool_ else _F["sub"](hi, lo)
    return x


def cov(input, *, correction=1, fweights=None, aweights=None):
    """`torch.cov`: covariance of the rows of a (variables, observations) matrix (1-d: one
    variable), with integer frequency weights and observation weights (numpy.cov's rule)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                         f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if not (x.dtype.is_floating_point or x.dtype.is_complex):
        x = x.to(D.get_default_dtype())
    w = None
    if fweights is not None:
        w = fweights
    if aweights is not None:
        w = aweights if w is None else _F["mul"](w, aweights)
    if w is None:
        n = x.shape[1]
        avg = _F["mean"](x, (1,), keepdim=True)
        norm = n - correction
    else:
        wsum = _F["sum"](w)
        avg = _F["div"](_F["sum"](_F["mul"](x, w), (1,), keepdim=True), wsum)
        if correction == 0:
            norm = wsum
        elif aweights is None:
            norm = _F["sub"](wsum, correction)
        else:
            norm = _F["sub"](wsum, _F["div"](_F["mul"](_F["sum"](_F["mul"](w, aweights)),
                                                       correction), wsum))
    xc = _F["sub"](x, avg)
    xw = xc if w is None else _F["mul"](xc, w)
    c = _F["div"](_F["matmul"](xw, _F["conj"](xc).transpose(0, 1) if xc.dtype.is_complex
                               else xc.transpose(0, 1)), norm)
    return c.reshape(()) if input.ndim < 2 else c


def corrcoef(input):
    """`torch.corrcoef`: Pearson correlation coefficients of the rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return _F["div"](c, c)
    d = _F["sqrt"](_F["diagonal"](c).real if c.dtype.is_complex else _F["diagonal"](c))
    c = _F["div"](_F["div"](c, d.reshape(-1, 1)), d.reshape(1, -1))
    return c if c.dtype.is_complex else _F["clamp"](c, -1, 1)


def aminmax(input, *, dim=None, keepdim=False):
    """`torch.aminmax`: (min, max) named tuple over `dim` (all elements when None)."""
    if input.numel() == 0 and dim is None:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the "
                           "operation has no identity.")
    d = () if dim is None else dim
    return aminmax_result(_F["amin"](input, d, keepdim), _F["amax"](input, d, keepdim))


def renorm(input, p, dim, maxnorm):
    """`torch.renorm`: each sub-tensor along `dim` whose p-norm exceeds `maxnorm` is scaled to
    norm `maxnorm` (PyTorch's factor maxnorm / (norm + 1e-7))."""
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported, got {p}")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    dim = dim % builtins.max(input.ndim, 1)
    dims = tuple(i for i in range(input.ndim) if i != dim)
    norm = _F["linalg_vector_norm"](input, p, dims, True)
    factor = _F["where"](_F["gt"](norm, maxnorm),
                         _F["div"](maxnorm, _F["add"](norm, 1e-7)), 1.0)
    return _F["mul"](input, factor)


def sum_to_size(self, *size):
    """`Tensor.sum_to_size(*size)`: sum broadcast dims so the result has `size` (which must
    broadcast to self's shape; RuntimeError otherwise)."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    shape = tuple(self.shape)
    lead = len(shape) - len(size)
    if lead < 0 or any(s != 1 and s != shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {{{list(size)}}} is not expandable to size "
                           f"{{{list(shape)}}}.")
    dims = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and shape[lead + i] != 1)
    out = _F["sum"](self, dims, keepdim=True) if dims else self
    return out.reshape(size)


def split_with_sizes(input, split_sizes, dim=0):
    """`torch.split_with_sizes`: pieces of the given sizes along `dim` (they must add up to
    the dim's size)."""
    total = builtins.sum(split_sizes)
    if total != input.shape[dim]:
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[dim]} (input tensor's size at dimension {dim}), but "
                           f"got split_sizes={list(split_sizes)}")
    return _F["split"](input, list(split_sizes), dim)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """`torch.unique_consecutive`: collapse runs of equal consecutive elements (flattened,
    or slices along `dim`); optional inverse indices and run lengths (int64)."""
    a = input.numpy(force=True)
    if dim is None:
        flat = a.reshape(-1)
        start = np.ones(flat.shape[0], bool)
        start[1:] = flat[1:] != flat[:-1]
        vals = flat[start]
        inv = (np.cumsum(start) - 1).reshape(a.shape)
    else:
        d = dim % a.ndim
        moved = np.moveaxis(a, d, 0).reshape(a.shape[d], -1)
        start = np.ones(moved.shape[0], bool)
        start[1:] = (moved[1:] != moved[:-1]).any(axis=1)
        vals = np.moveaxis(np.moveaxis(a, d, 0)[start], 0, d)
        inv = np.cumsum(start) - 1
    counts = np.diff(np.append(np.flatnonzero(start), start.shape[0]))
    out = [creation.tensor(np.ascontiguousarray(vals), dtype=input.dtype)]
    if return_inverse:
        out.append(creation.tensor(inv.astype(np.int64)))
    if return_counts:
        out.append(creation.tensor(counts.astype(np.int64)))
    return out[0] if len(out) == 1 else tuple(out)


# ---------------------------------------------------------------- numerics helpers


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """`torch.trapezoid`: the trapezoidal rule along `dim`, with sample points `x` (a tensor)
    or spacing `dx` (default 1)."""
    n = y.shape[dim]
    if n == 0:
        return _F["sum"](y, (dim,))
    avg = _F["div"](_F["add"](_F["narrow"](y, dim, 1, n - 1), _F["narrow"](y, dim, 0, n - 1)), 2)
    if isinstance(x, Tensor):
        dxs = diff(x, dim=-1 if x.ndim == 1 else dim)
        if x.ndim == 1:
            view = [1] * y.ndim
            view[dim % y.ndim] = -1
            dxs = dxs.reshape(view)
        return _F["sum"](_F["mul"](avg, dxs), (dim,))
    step = x if x is not None else (1 if dx is None else dx)
    return _F["mul"](_F["sum"](avg, (dim,)), step)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """`torch.cumulative_trapezoid`: the running trapezoidal integral along `dim`."""
    n = y.shape[dim]
    avg = _F["div"](_F["add"](_F["narrow"](y, dim, 1, n - 1), _F["narrow"](y, dim, 0, n - 1)), 2)
    if isinstance(x, Tensor):
        dxs = diff(x, dim=-1 if x.ndim == 1 else dim)
        if x.ndim == 1:
            view = [1] * y.ndim
            view[dim % y.ndim] = -1
            dxs = dxs.reshape(view)
        return _F["cumsum"](_F["mul"](avg, dxs), dim)
    step = x if x is not None else (1 if dx is None else dx)
    return _F["mul"](_F["cumsum"](avg, dim), step)


def histogram(input, bins=100, *, range=None, weight=None, density=False):
    """`torch.histogram`: (hist, bin_edges) of a float tensor (numpy.histogram's bins: `bins`
    equal ones over `range` or the data's min/max, or a 1-d tensor of edges)."""
    if not input.dtype.is_floating_point:
        raise RuntimeError(f"torch.histogram: input tensor and bins tensors should have the "
                           f"same dtype, but got input {input.dtype.name} and bins float")
    a = input.numpy(force=True).reshape(-1).astype(np.float64)
    b = bins.numpy(force=True) if isinstance(bins, Tensor) else bins
    w = weight.numpy(force=True).reshape(-1) if weight is not None else None
    hist, edges = np.histogram(a, b, range=range, weights=w, density=density)
    return histogram_result(creation.tensor(hist, dtype=input.dtype),
                            creation.tensor(edges, dtype=input.dtype))


def frexp(input):
    """`torch.frexp`: (mantissa in (-1, 1) of input's dtype, int32 exponent), input =
    mantissa * 2 ** exponent; floating inputs only."""
    if not input.dtype.is_floating_point:
        raise RuntimeError("torch.frexp() only supports floating-point dtypes")
    m, e = np.frexp(input.numpy(force=True))
    return frexp_result(creation.tensor(m, dtype=input.dtype),
                        creation.tensor(e.astype(np.int32)))


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """`torch.isin`: whether each element of `elements` is in `test_elements` (either may be a
    number); bool of elements' shape."""
    el = elements.numpy(force=True) if isinstance(elements, Tensor) else np.asarray(elements)
    te = test_elements.numpy(force=True) if isinstance(test_elements, Tensor) else \
        np.asarray(test_elements)
    return creation.tensor(np.isin(el, te, assume_unique=assume_unique, invert=invert))


def _tri_indices(row, col, offset, dtype, upper):
    dtype = D.int64 if dtype is None else dtype
    r, c = (np.triu_indices if upper else np.tril_indices)(row, offset, col)
    return creation.tensor(np.stack([r, c]).astype(np.int64).reshape(2, -1), dtype=dtype)


def tril_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """`torch.tril_indices`: (2, N) coordinates of the lower triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, False)


def triu_indices(row, col, offset=0, *, dtype=None, device=None, layout=None):
    """`torch.triu_indices`: (2, N) coordinates of the upper triangle of a row x col matrix."""
    return _tri_indices(row, col, offset, dtype, True)


def unravel_index(indices, shape):
    """`torch.unravel_index`: a tuple of int64 coordinate tensors of flat `indices` into
    `shape`, computed as PyTorch does (floor modulo per dim from the last, so negative
    indices count from the end)."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if isinstance(indices, Tensor) and (indices.dtype.is_floating_point or
                                        indices.dtype.is_complex or indices.dtype is D.bool_):
        raise TypeError("expected 'indices' to be integer dtype, but got "
                        f"{indices.dtype.name}")
    a = indices.numpy(force=True) if isinstance(indices, Tensor) else np.asarray(indices)
    a = a.astype(np.int64)
    out = []
    for s in reversed(shape):
        out.append(np.mod(a, s))
        a = np.floor_divide(a, s)
    return tuple(creation.tensor(o) for o in reversed(out))


def is_nonzero(input) -> bool:
    """`torch.is_nonzero`: the truth of a one-element tensor (RuntimeError otherwise)."""
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item() != 0)


def is_same_size(input, other) -> bool:
    """`torch.is_same_size`: whether the shapes are equal."""
    return tuple(input.shape) == tuple(other.shape)


def is_signed(input) -> bool:
    """`torch.is_signed`: whether the dtype is signed (not bool or uint8)."""
    return input.dtype.is_signed


def positive(input):
    """`torch.positive`: the input itself (RuntimeError for bool, as PyTorch)."""
    if input.dtype is D.bool_:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return input


def narrow_copy(input, dim, start, length):
    """`torch.narrow_copy`: `narrow` as a new tensor."""
    return _F["narrow"](input, dim, start, length).clone()


def _split_along(dim, name):
    def fn(input, indices_or_sections):
        if input.ndim <= dim:
            raise RuntimeError(f"torch.{name} requires a tensor with at least {dim + 1} "
                               f"dimension, but got a tensor with {input.ndim} dimensions!")
        if isinstance(indices_or_sections, int) and input.shape[dim] % indices_or_sections:
            raise RuntimeError(f"torch.{name} attempted to split along dimension {dim}, but "
                               f"the size of the dimension {input.shape[dim]} is not divisible "
                               f"by the split_size {indices_or_sections}!")
        return _F["tensor_split"](input, indices_or_sections, dim)
    fn.__name__ = name
    fn.__doc__ = f"`torch.{name}`: `tensor_split` along dim {dim} (sections must divide it)."
    return fn


vsplit = _split_along(0, "vsplit")
dsplit = _split_along(2, "dsplit")


def hsplit(input, indices_or_sections):
    """`torch.hsplit`: `tensor_split` along dim 1 (dim 0 for 1-d tensors)."""
    if input.ndim == 0:
        raise RuntimeError("torch.hsplit requires a tensor with at least 1 dimension, but got "
                           "a tensor with 0 dimensions!")
    return (_split_along(1, "hsplit") if input.ndim > 1 else
            _split_along(0, "hsplit"))(input, indices_or_sections)


FUNCTIONS = (
    atleast_1d, atleast_2d, atleast_3d, dstack, column_stack, fliplr, flipud, swapaxes,
    swapdims, ravel, adjoint, broadcast_shapes, meshgrid, cartesian_prod, combinations,
    block_diag, diagflat, diff, cov, corrcoef, aminmax, renorm, split_with_sizes,
    unique_consecutive, diagonal_scatter, select_scatter, slice_scatter, as_strided_scatter,
    index_reduce, trapezoid, cumulative_trapezoid, histogram, frexp, isin, tril_indices,
    triu_indices, unravel_index, is_nonzero, is_same_size, is_signed, positive, narrow_copy,
    vsplit, hsplit, dsplit,
)
METHODS = (
    fliplr, flipud, swapaxes, swapdims, ravel, adjoint, diagflat, diff, cov, corrcoef, aminmax,
    renorm, split_with_sizes, unique_consecutive, diagonal_scatter, select_scatter,
    slice_scatter, as_strided_scatter, index_reduce, histogram, frexp, is_nonzero, is_same_size,
    is_signed, positive, narrow_copy, vsplit, hsplit, dsplit, sum_to_size, fill_diagonal_,
)


def install(namespace: dict, tensor_cls) -> None:
    """Top-level functions and Tensor methods (only names not defined already)."""
    for fn in FUNCTIONS:
        namespace.setdefault(fn.__name__, fn)
    namespace.setdefault("trapz", trapezoid)
    for fn in METHODS:
        if not hasattr(tensor_cls, fn.__name__):
            setattr(tensor_cls, fn.__name__, fn)
