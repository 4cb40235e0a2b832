"""View and shape ops: reshape/view, transpose, unsqueeze, expand (views share memory)."""

from __future__ import annotations

import math

import numpy as np

from ..opdef import (
    OpDef, normalize_dim, register,
)



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


for _name in ("reshape", "view"):
    register(OpDef(
        _name, "view", "input, *shape", 1, "keep",
        shape=lambda s, shape: shape, attrs_rule=_reshape_attrs,
        impl=lambda xp, x, shape: xp.reshape(x, shape),
        backward=lambda F, g, out, x, shape: (F.reshape(g, tuple(x.shape)),),
        ref=lambda x, shape: np.reshape(x, shape), method=True,
        samples=({"shape": (-1,)},),
    ))


def _transpose_attrs(inputs, attrs):
    n = inputs[0].ndim
    attrs["dim0"], attrs["dim1"] = normalize_dim(attrs["dim0"], n), normalize_dim(attrs["dim1"], n)
    return attrs


def _transpose_shape(s, dim0, dim1):
    s = list(s)
    s[dim0], s[dim1] = s[dim1], s[dim0]
    return tuple(s)


register(OpDef(
    "transpose", "view", "input, dim0, dim1", 1, "keep",
    shape=_transpose_shape, attrs_rule=_transpose_attrs,
    impl=lambda xp, x, dim0, dim1: xp.swapaxes(x, dim0, dim1),
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
    impl=lambda xp, x, dim: xp.expand_dims(x, dim),
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


register(OpDef(
    "expand", "view", "input, *size", 1, "keep",
    shape=lambda s, size: size, attrs_rule=_expand_attrs,
    impl=lambda xp, x, size: xp.broadcast_to(x, size),
    backward=lambda F, g, out, x, size: (g,),  # the engine sums g back to x's shape
    ref=lambda x, size: np.broadcast_to(
        x, tuple(x.shape[i - len(size) + x.ndim] if n == -1 else n for i, n in enumerate(size))),
    samples=({"size": (2, -1, -1)},),
))

del _name
