"""Copying shape ops: cat/stack/hstack/vstack, flip, roll, rot90, repeat, tile,
repeat_interleave, diag, diag_embed, tril/triu and `nn.functional.pad`.

Their results never alias their inputs (PyTorch's `flip` copies too). Every single-input one is
a linear gather-like map, so its backward is `indexing.adjoint` (the gradient scattered back
through the same index map); cat's is one slice of the gradient per operand. Semantics and
messages: the PyTorch documentation of each op. Imports nothing outside `ir`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, TensorMeta, normalize_dim, normalize_dims, register
from .indexing import ALL, adjoint, arr, declare, ints
from .shape import diagonal_view


def _cases(*cases):
    """sample_inputs from (shapes, attrs) pairs: one tensor operand per shape."""
    def gen(rng, dt):
        for shapes, attrs in cases:
            yield tuple(arr(rng, s, dt) for s in shapes), attrs
    return gen


def copy_op(name, sig, shape, impl, ref, samples, backward=None, **kw):
    """Register a single-input gather-like copy; its backward scatters the gradient back."""
    if backward is None:
        def backward(F, g, out, x, **attrs):
            return (adjoint(F, g, x, name, attrs),)
    return declare(name, "shape", sig, shape=shape, impl=impl, backward=backward, ref=ref,
                   sample_inputs=_cases(*samples), test_dtypes=ALL, **kw)


# ---------------------------------------------------------------- cat and stacking


def _cat_attrs(inputs, attrs):
    if not inputs:
        raise RuntimeError("torch.cat(): expected a non-empty list of Tensors")
    for i, m in enumerate(inputs):
        if not isinstance(m, TensorMeta):
            raise TypeError(f"cat(): argument 'tensors' must be tuple of Tensors, but found "
                            f"element of type {type(m).__name__} at pos {i}")
        if m.ndim == 0:
            raise RuntimeError(f"zero-dimensional tensor (at position {i}) cannot be "
                               f"concatenated")
    # PyTorch's legacy rule: 1-D empty tensors are skipped
    live = [(i, m) for i, m in enumerate(inputs) if m.shape != (0,)] or [(0, inputs[0])]
    ref = live[0][1]
    dim = normalize_dim(attrs["dim"], ref.ndim)
    for i, m in live[1:]:
        if m.ndim != ref.ndim:
            raise RuntimeError(f"Tensors must have same number of dimensions: got {ref.ndim} "
                               f"and {m.ndim}")
        for d in range(ref.ndim):
            if d != dim and m.shape[d] != ref.shape[d]:
                raise RuntimeError(f"Sizes of tensors must match except in dimension {dim}. "
                                   f"Expected size {ref.shape[d]} but got size {m.shape[d]} for "
                                   f"tensor number {i} in the list.")
    attrs["dim"] = dim
    return attrs


def _cat_shape(*shapes, dim):
    live = [s for s in shapes if s != (0,)] or [shapes[0]]
    out = list(live[0])
    if out:
        out[dim] = sum(s[dim] for s in live)
    return tuple(out)


def _cat_impl(xp, *arrays, dim):
    live = [a for a in arrays if a.shape != (0,)] or [arrays[0]]
    return xp.concatenate(live, axis=dim)


def _cat_backward(F, g, out, *xs, dim):
    grads, start = [], 0
    for x in xs:
        if tuple(x.shape) == (0,) and g.ndim != 1:
            grads.append(None)
            continue
        n = x.shape[dim]
        grads.append(F.narrow(g, dim, start, n))
        start += n
    return tuple(grads)


register(OpDef(
    "cat", "shape", "tensors, dim=0", variadic=True, method=False, scalar_ok=False,
    aliases=("concat", "concatenate"), attrs_rule=_cat_attrs, shape=_cat_shape,
    impl=_cat_impl, backward=_cat_backward,
    ref=lambda *a, dim=0: np.concatenate([x for x in a if x.shape != (0,)], axis=dim),
    sample_inputs=_cases((((2, 3), (4, 3)), {}), (((2, 3), (2, 1), (2, 2)), {"dim": -1}),
                         (((2, 3), (0,)), {})),
    test_dtypes=ALL,
))


def _stack_decomp(F, *tensors, dim=0):
    if not tensors:
        raise RuntimeError("stack expects a non-empty TensorList")
    for i, t in enumerate(tensors[1:], 1):
        if tuple(t.shape) != tuple(tensors[0].shape):
            raise RuntimeError(f"stack expects each tensor to be equal size, but got "
                               f"{list(tensors[0].shape)} at entry 0 and {list(t.shape)} at "
                               f"entry {i}")
    d = normalize_dim(dim, tensors[0].ndim + 1)
    return F.cat([F.unsqueeze(t, d) for t in tensors], d)


declare("stack", "composite", "tensors, dim=0", variadic=True, method=False,
        decomp=_stack_decomp, ref=lambda *a, dim=0: np.stack(a, axis=dim), data=(),
        sample_inputs=_cases((((2, 3), (2, 3)), {}), (((2, 3), (2, 3), (2, 3)), {"dim": -1})),
        test_dtypes=ALL)


def _hstack_decomp(F, *tensors):
    ts = [F.reshape(t, (1,)) if t.ndim == 0 else t for t in tensors]
    return F.cat(ts, 0 if ts[0].ndim == 1 else 1)


def _vstack_decomp(F, *tensors):
    ts = [F.reshape(t, (1, -1)) if t.ndim < 2 else t for t in tensors]
    return F.cat(ts, 0)


declare("hstack", "composite", "tensors", variadic=True, method=False, data=(),
        decomp=_hstack_decomp, ref=lambda *a: np.hstack(a),
        sample_inputs=_cases((((2, 3), (2, 1)), {}), (((3,), (2,)), {})), test_dtypes=ALL)
declare("vstack", "composite", "tensors", variadic=True, method=False, data=(),
        decomp=_vstack_decomp, ref=lambda *a: np.vstack(a), aliases=("row_stack",),
        sample_inputs=_cases((((2, 3), (1, 3)), {}), (((3,), (3,)), {})), test_dtypes=ALL)


# ---------------------------------------------------------------- flips, rolls, repeats


def _dims_attr(name):
    def rule(inputs, attrs):
        dims = attrs[name]
        dims = (dims,) if isinstance(dims, int) else tuple(dims)
        attrs[name] = normalize_dims(dims, max(inputs[0].ndim, 1)) if dims else ()
        return attrs
    return rule


copy_op("flip", "input, dims", lambda s, dims: s,
        lambda xp, x, dims: xp.flip(x, dims).copy() if x.ndim else x.copy(),
        lambda x, dims: np.flip(x, dims),
        [([(3, 4)], {"dims": (0,)}), ([(2, 3, 4)], {"dims": (0, -1)})],
        attrs_rule=_dims_attr("dims"))


def _roll_attrs(inputs, attrs):
    shifts, dims = attrs["shifts"], attrs["dims"]
    shifts = (shifts,) if isinstance(shifts, int) else tuple(shifts)
    dims = () if dims is None else (dims,) if isinstance(dims, int) else tuple(dims)
    if dims and len(shifts) != len(dims):
        raise RuntimeError(f"shifts and dimensions must align. shifts: {len(shifts)}, dims:"
                           f"{len(dims)}")
    if not dims and len(shifts) != 1:
        raise RuntimeError("shifts and dimensions must align when dims is None")
    attrs["shifts"] = shifts
    attrs["dims"] = tuple(normalize_dim(d, max(inputs[0].ndim, 1)) for d in dims)
    return attrs


def _roll_impl(xp, x, shifts, dims=()):
    if not dims:
        return xp.roll(x.reshape(-1), shifts[0]).reshape(x.shape)
    return xp.roll(x, shifts, axis=dims)


copy_op("roll", "input, shifts, dims=None", lambda s, **_: s, _roll_impl,
        lambda x, shifts, dims=None: np.roll(x, shifts, dims),
        [([(3, 4)], {"shifts": 1}), ([(3, 4)], {"shifts": (2, -1), "dims": (0, 1)}),
         ([(3, 4)], {"shifts": -5, "dims": 1})],
        attrs_rule=_roll_attrs)


def _rot90_decomp(F, x, k=1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if x.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {x.ndim}")
    a, b = normalize_dim(dims[0], x.ndim), normalize_dim(dims[1], x.ndim)
    if a == b:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {a} and "
                           f"dim1 = {b}")
    k %= 4
    if k == 1:
        return F.transpose(F.flip(x, (b,)), a, b)
    if k == 2:
        return F.flip(x, (a, b))
    if k == 3:
        return F.flip(F.transpose(x, a, b), (b,))
    return F.clone(x)


declare("rot90", "composite", "input, k=1, dims=(0, 1)", decomp=_rot90_decomp,
        ref=lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims),
        sample_inputs=_cases((((3, 4),), {}), (((3, 4),), {"k": 2}),
                             (((2, 3, 4),), {"k": -1, "dims": (2, 0)})), test_dtypes=ALL)


def _repeat_attrs(inputs, attrs):
    reps = attrs["repeats"]
    if len(reps) == 1 and isinstance(reps[0], (tuple, list)):
        reps = reps[0]
    reps = tuple(int(r) for r in reps)
    if len(reps) < inputs[0].ndim:
        raise RuntimeError("Number of dimensions of repeat dims can not be smaller than number "
                           "of dimensions of tensor")
    attrs["repeats"] = reps
    return attrs


def _repeat_shape(s, repeats):
    s = (1,) * (len(repeats) - len(s)) + tuple(s)
    return tuple(a * r for a, r in zip(s, repeats))


copy_op("repeat", "input, *repeats", _repeat_shape,
        lambda xp, x, repeats: xp.tile(x, repeats),
        lambda x, repeats: np.tile(x, repeats),
        [([(2, 3)], {"repeats": (2, 1)}), ([(3,)], {"repeats": (2, 2)})],
        attrs_rule=_repeat_attrs)


def _tile_decomp(F, x, dims):
    dims = tuple(dims)
    dims = (1,) * (x.ndim - len(dims)) + dims
    return F.repeat(x, dims)


declare("tile", "composite", "input, dims", decomp=_tile_decomp,
        ref=lambda x, dims: np.tile(x, dims), test_dtypes=ALL,
        sample_inputs=_cases((((2, 3),), {"dims": (2,)}), (((3,),), {"dims": (2, 2)})))


def _repeat_interleave_impl(xp, x, repeats, dim=None, output_size=None):
    if not isinstance(repeats, int) and getattr(repeats, "ndim", 0) and repeats.size and \
            repeats.min() < 0:
        raise RuntimeError("repeats can not be negative")
    if isinstance(repeats, int) and repeats < 0:
        raise RuntimeError("repeats can not be negative")
    return xp.repeat(x.reshape(-1) if dim is None else x, repeats, axis=0 if dim is None else dim)


def _repeat_interleave_backward(F, g, out, x, repeats, dim=None, output_size=None):
    src = F.reshape(x, (-1,)) if dim is None else x
    d = 0 if dim is None else dim
    n = src.shape[d]
    ones = F.eq(F.new_zeros(g, (n,)), 0)
    pos = F.select(F.argwhere(ones), 1, 0)  # 0..n-1
    idx = F.repeat_interleave(pos, repeats)
    gx = F.index_add(F.new_zeros(g, tuple(src.shape)), d, idx, g)
    return F.reshape(gx, tuple(x.shape)), None


def _repeat_interleave_attrs(inputs, attrs):
    if attrs["dim"] is not None:
        attrs["dim"] = normalize_dim(attrs["dim"], max(inputs[0].ndim, 1))
    r = inputs[1]
    if isinstance(r, TensorMeta) and r.dtype.category != D.INTEGER:
        raise RuntimeError("repeats has to be Long or Int tensor")
    return attrs


def _repeat_interleave_shape(s, r, dim=None, output_size=None):
    n = math.prod(s) if dim is None else s[dim]
    if not isinstance(r, int):
        return (-1,)
    return (n * r,) if dim is None else s[:dim] + (n * r,) + s[dim + 1:]


declare("repeat_interleave", "shape", "input, repeats, dim=None, *, output_size=None", 2,
        dynamic_shape=True,
        attrs_rule=_repeat_interleave_attrs, shape=_repeat_interleave_shape,
        impl=_repeat_interleave_impl, backward=_repeat_interleave_backward,
        ref=lambda x, r, dim=None, output_size=None: np.repeat(x, r, axis=dim),
        sample_inputs=lambda rng, dt: iter([
            ((arr(rng, (2, 3), dt), 2), {}), ((arr(rng, (2, 3), dt), 3), {"dim": 1}),
            ((arr(rng, (3, 2), dt), ints(rng, (3,), 3)), {"dim": 0}),
        ]),
        test_dtypes=ALL)


# ---------------------------------------------------------------- diagonals and triangles


def _diag_embed_attrs(inputs, attrs):
    n = inputs[0].ndim + 1
    attrs["dim1"], attrs["dim2"] = normalize_dim(attrs["dim1"], n), normalize_dim(
        attrs["dim2"], n)
    if attrs["dim1"] == attrs["dim2"]:
        raise RuntimeError(f"diagonal dimensions cannot be identical {attrs['dim1']}, "
                           f"{attrs['dim2']}")
    return attrs


def _diag_embed_shape(s, offset=0, dim1=-2, dim2=-1):
    m = (s[-1] if s else 1) + abs(offset)
    rest = list(s[:-1])
    out = []
    for d in range(len(rest) + 2):
        out.append(m if d in (dim1, dim2) else rest.pop(0))
    return tuple(out)


def _diag_embed_impl(xp, x, offset=0, dim1=-2, dim2=-1):
    out = xp.zeros(_diag_embed_shape(x.shape, offset, dim1, dim2), x.dtype)
    diagonal_view(xp, out, offset, dim1, dim2)[...] = x
    return out


def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    for i in range(x.shape[-1]):
        r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
        out[..., r, c] = x[..., i]
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


declare("diag_embed", "shape", "input, offset=0, dim1=-2, dim2=-1",
        attrs_rule=_diag_embed_attrs, shape=_diag_embed_shape, impl=_diag_embed_impl,
        backward=lambda F, g, out, x, offset=0, dim1=-2, dim2=-1: (
            F.diagonal(g, offset, dim1, dim2),),
        ref=_diag_embed_ref,
        sample_inputs=_cases((((3,),), {}), (((2, 3),), {"offset": 1}),
                             (((2, 3),), {"offset": -2, "dim1": 0, "dim2": 2})),
        test_dtypes=ALL)


def _diag_decomp(F, x, diagonal=0):
    if x.ndim == 1:
        return F.diag_embed(x, diagonal)
    if x.ndim != 2:
        raise RuntimeError("diag(): Supports 1D or 2D tensors. Got " + f"{x.ndim}D")
    return F.clone(F.diagonal(x, diagonal))


declare("diag", "composite", "input, diagonal=0", decomp=_diag_decomp,
        ref=lambda x, diagonal=0: np.diag(x, diagonal), test_dtypes=ALL,
        sample_inputs=_cases((((3,),), {}), (((3,),), {"diagonal": -1}),
                             (((3, 4),), {"diagonal": 1})))


def _tri_attrs(inputs, attrs):
    if inputs[0].ndim < 2:
        raise RuntimeError("tril: input tensor must have at least 2 dimensions")
    return attrs


def _triangle(name, fn):
    def impl(xp, x, diagonal=0):
        return getattr(xp, name)(x, diagonal)

    def backward(F, g, out, x, diagonal=0):
        return (getattr(F, name)(g, diagonal),)

    declare(name, "shape", "input, diagonal=0", attrs_rule=_tri_attrs, inplace=True,
            shape=lambda s, diagonal=0: s, impl=impl, backward=backward,
            ref=lambda x, diagonal=0: fn(x, diagonal),
            sample_inputs=_cases((((3, 4),), {}), (((2, 4, 3),), {"diagonal": -1}),
                                 (((3, 4),), {"diagonal": 2})),
            test_dtypes=ALL)


_triangle("tril", np.tril)
_triangle("triu", np.triu)


# ---------------------------------------------------------------- nn.functional.pad

PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
             "circular": "wrap"}


def _pad_attrs(inputs, attrs):
    x, pad, mode = inputs[0], tuple(int(p) for p in attrs["pad"]), attrs["mode"]
    if len(pad) % 2 or len(pad) // 2 > x.ndim:
        raise RuntimeError(f"Padding length should be less than or equal to two times the "
                           f"input dimension but got padding length {len(pad)} and input of "
                           f"dimension {x.ndim}")
    if mode not in PAD_MODES:
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if mode in ("reflect", "replicate") and x.dtype is D.bool_:  # PyTorch has no Bool kernel
        kernel = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f'"{kernel}_pad{len(pad) // 2}d" not implemented for '
                                  f"'Bool'")
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        if mode == "reflect" and (lo >= x.shape[d] or hi >= x.shape[d]):
            raise RuntimeError(f"Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding ({lo}, {hi}) "
                               f"at dimension {d} of input {list(x.shape)}")
        if mode == "circular" and (lo > x.shape[d] or hi > x.shape[d]):
            raise RuntimeError("Padding value causes wrapping around more than once.")
        if x.shape[d] + lo + hi < 0 or (mode != "constant" and min(lo, hi) < 0):
            raise RuntimeError(f"The input size {x.shape[d]}, plus negative padding {lo} and "
                               f"{hi} resulted in a negative output size, which is invalid. "
                               f"Check dimension {d} of your input.")
    attrs["pad"] = pad
    attrs["value"] = 0 if attrs["value"] is None else attrs["value"]
    return attrs


def _pad_shape(s, pad, mode="constant", value=0):
    s = list(s)
    for i in range(len(pad) // 2):
        s[len(s) - 1 - i] += pad[2 * i] + pad[2 * i + 1]
    return tuple(s)


def _pad_impl(xp, x, pad, mode="constant", value=0):
    widths = [(0, 0)] * x.ndim
    crop = [slice(None)] * x.ndim
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        widths[d] = (max(lo, 0), max(hi, 0))
        crop[d] = slice(max(-lo, 0), x.shape[d] + max(lo, 0) + max(hi, 0) - max(-hi, 0))
    kw = {"constant_values": value} if mode == "constant" else {}
    out = xp.pad(x, widths, mode=PAD_MODES[mode], **kw)
    return out[tuple(crop)].copy() if any(p < 0 for p in pad) else out


def _pad_samples(rng, dt):
    yield (arr(rng, (2, 3), dt),), {"pad": (1, 2)}
    yield (arr(rng, (2, 3, 4), dt),), {"pad": (1, 0, 2, 1), "value": 3}
    yield (arr(rng, (2, 5), dt),), {"pad": (-1, 2)}
    for mode in ("reflect", "replicate", "circular"):
        if dt is D.bool_ and mode != "circular":  # refused, as in PyTorch
            continue
        yield (arr(rng, (1, 2, 4), dt),), {"pad": (2, 3), "mode": mode}
        yield (arr(rng, (1, 3, 4), dt),), {"pad": (1, 2, 2, 1), "mode": mode}


def _pad_ref(x, pad, mode="constant", value=None):
    import itertools

    out = x
    for i in range(len(pad) // 2):
        d = x.ndim - 1 - i
        lo, hi = pad[2 * i], pad[2 * i + 1]
        n = out.shape[d]
        pos = np.arange(-lo, n + hi)
        if mode == "constant":
            src = np.where((pos >= 0) & (pos < n), pos, -1)
        elif mode == "reflect":
            src = np.abs(pos)
            src = np.where(src >= n, 2 * (n - 1) - src, src)
        elif mode == "replicate":
            src = np.clip(pos, 0, n - 1)
        else:
            src = pos % n
        taken = np.take(out, np.maximum(src, 0), axis=d)
        if mode == "constant":
            shape = [1] * out.ndim
            shape[d] = len(src)
            taken = np.where((src < 0).reshape(shape), value or 0, taken).astype(x.dtype)
        out = taken
    del itertools
    return out


declare("pad", "shape", "input, pad, mode='constant', value=None", method=False,
        attrs_rule=_pad_attrs, shape=_pad_shape, impl=_pad_impl,
        backward=lambda F, g, out, x, pad, mode="constant", value=0: (adjoint(
            F, g, x, "pad", {"pad": pad, "mode": mode, "value": 0}),),
        ref=_pad_ref, sample_inputs=_pad_samples, test_dtypes=ALL)
