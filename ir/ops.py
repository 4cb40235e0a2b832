"""The op declarations: every op wick knows, each defined once.

Elementwise ops give a `scalar` formula (their eager kernel and their codegen come from it),
a `backward` in registry ops and a numpy/scipy `ref`. Composites give a `decomp`. See
`ir/opdef.py` for the fields. Semantics follow the PyTorch documentation of each op.
"""

from __future__ import annotations

import math

import numpy as np

from . import dtypes as D
from .opdef import (
    OpDef, broadcast_shapes, is_number, normalize_dim, normalize_dims, register, sum_to_shape,
)

SQRT1_2 = 0.7071067811865476
SQRT_2_PI = 0.7978845608028654  # sqrt(2 / pi)
INV_SQRT_2PI = 0.3989422804014327  # 1 / sqrt(2 pi)
FLOATS = (D.float32, D.float64)


def _erf_ref(x):
    from scipy.special import erf

    return erf(x)


def unary(name, scalar, backward, ref, promotion="int_to_float", **kw):
    return register(OpDef(name, "elementwise", "input", 1, promotion, scalar=scalar,
                          backward=backward, ref=ref, **kw))


def binary(name, scalar, backward, ref, promotion="default", dunders=(), sig="input, other",
           **kw):
    return register(OpDef(name, "elementwise", sig, 2, promotion, scalar=scalar,
                          backward=backward, ref=ref, dunders=dunders, **kw))


def _grad(x, g):
    """The gradient of a Python-number operand is None (it is not a tensor)."""
    return None if is_number(x) else g


# ---------------------------------------------------------------- binary arithmetic

binary(
    "add", lambda b, x, y, alpha=1: b.add(x, y if alpha == 1 else b.mul(y, alpha)),
    lambda F, g, out, x, y, alpha=1: (_grad(x, g), _grad(y, g if alpha == 1 else F.mul(g, alpha))),
    lambda x, y, alpha=1: x + alpha * y,
    dunders=("__add__", "__radd__"), sig="input, other, *, alpha=1", samples=({}, {"alpha": 2}),
)
binary(
    "sub", lambda b, x, y, alpha=1: b.sub(x, y if alpha == 1 else b.mul(y, alpha)),
    lambda F, g, out, x, y, alpha=1: (_grad(x, g), _grad(y, F.mul(g, -alpha))),
    lambda x, y, alpha=1: x - alpha * y,
    dunders=("__sub__", "__rsub__"), sig="input, other, *, alpha=1", test_dtypes=(D.int64,) + FLOATS,
)
binary(
    "mul", lambda b, x, y: b.mul(x, y),
    lambda F, g, out, x, y: (_grad(x, F.mul(g, y)), _grad(y, F.mul(g, x))),
    np.multiply, dunders=("__mul__", "__rmul__"),
)
binary(
    "div", lambda b, x, y: b.div(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.div(g, y)), _grad(y, F.neg(F.div(F.mul(g, out), y)))
    ),
    np.true_divide, promotion="int_to_float", dunders=("__truediv__", "__rtruediv__"),
    domain=(0.5, 2.0),
)
def _pow_backward(F, g, out, x, y):
    gx = gy = None
    if not is_number(x):
        gx = F.mul(g, F.mul(y, F.pow(x, y - 1 if is_number(y) else F.sub(y, 1))))
    if not is_number(y):
        gy = F.mul(g, F.mul(out, math.log(x) if is_number(x) else F.log(x)))
    return gx, gy


binary(
    "pow", lambda b, x, y: b.pow(x, y), _pow_backward,
    np.power, sig="input, exponent", dunders=("__pow__", "__rpow__"), domain=(0.5, 2.0),
    test_dtypes=FLOATS,
)
binary(
    "maximum", lambda b, x, y: b.maximum(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.where(F.gt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
        _grad(y, F.where(F.lt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
    ),
    np.maximum, scalar_ok=False,
)
binary(
    "minimum", lambda b, x, y: b.minimum(x, y),
    lambda F, g, out, x, y: (
        _grad(x, F.where(F.lt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
        _grad(y, F.where(F.gt(x, y), g, F.where(F.eq(x, y), F.mul(g, 0.5), 0.0))),
    ),
    np.minimum, scalar_ok=False,
)

for _name, _ref, _dunder in [
    ("eq", np.equal, "__eq__"), ("ne", np.not_equal, "__ne__"), ("lt", np.less, "__lt__"),
    ("le", np.less_equal, "__le__"), ("gt", np.greater, "__gt__"),
    ("ge", np.greater_equal, "__ge__"),
]:
    binary(_name, (lambda n: lambda b, x, y: getattr(b, n)(x, y))(_name), None, _ref,
           promotion="always_bool", dunders=(_dunder,))

register(OpDef(
    "where", "elementwise", "condition, input, other", 3,
    scalar=lambda b, c, x, y: b.where(c, x, y),
    backward=lambda F, g, out, c, x, y: (
        None, _grad(x, F.where(c, g, 0.0)), _grad(y, F.where(c, 0.0, g))
    ),
    ref=np.where, method=False, promote_from=1,
))

# ---------------------------------------------------------------- unary math

unary("neg", lambda b, x: b.neg(x), lambda F, g, out, x: (F.neg(g),), np.negative,
      promotion="default", dunders=("__neg__",), test_dtypes=(D.int64,) + FLOATS)
unary("abs", lambda b, x: b.abs(x), lambda F, g, out, x: (F.mul(g, F.sign(x)),), np.abs,
      promotion="default", dunders=("__abs__",))
unary("clone", lambda b, x: x, lambda F, g, out, x: (g,), np.copy, promotion="default",
      impl=lambda xp, x: xp.copy(x))
unary("sign", lambda b, x: b.sign(x), None, np.sign, promotion="default")
unary("exp", lambda b, x: b.exp(x), lambda F, g, out, x: (F.mul(g, out),), np.exp)
unary("log", lambda b, x: b.log(x), lambda F, g, out, x: (F.div(g, x),), np.log,
      domain=(0.1, 5.0))
unary("sqrt", lambda b, x: b.sqrt(x), lambda F, g, out, x: (F.div(g, F.mul(out, 2.0)),),
      np.sqrt, domain=(0.1, 5.0))
unary("tanh", lambda b, x: b.tanh(x),
      lambda F, g, out, x: (F.mul(g, F.sub(1.0, F.mul(out, out))),), np.tanh)
unary("erf", lambda b, x: b.erf(x),
      lambda F, g, out, x: (F.mul(g, F.mul(F.exp(F.neg(F.mul(x, x))), 2 / math.sqrt(math.pi))),),
      _erf_ref)
unary("sigmoid", lambda b, x: b.div(1.0, b.add(b.exp(b.neg(x)), 1.0)),
      lambda F, g, out, x: (F.mul(g, F.mul(out, F.sub(1.0, out))),),
      lambda x: 1 / (1 + np.exp(-x)))
unary("relu", lambda b, x: b.where(b.gt(x, 0), x, b.mul(x, 0)),
      lambda F, g, out, x: (F.where(F.gt(x, 0), g, 0.0),),
      lambda x: np.maximum(x, 0), promotion="default")


def _gelu_scalar(b, x, approximate="none"):
    if approximate == "tanh":
        inner = b.mul(b.add(x, b.mul(b.mul(b.mul(x, x), x), 0.044715)), SQRT_2_PI)
        return b.mul(b.mul(x, 0.5), b.add(b.tanh(inner), 1.0))
    return b.mul(b.mul(x, 0.5), b.add(b.erf(b.mul(x, SQRT1_2)), 1.0))


def _gelu_backward(F, g, out, x, approximate="none"):
    if approximate == "tanh":
        x2 = F.mul(x, x)
        t = F.tanh(F.mul(F.add(x, F.mul(F.mul(x2, x), 0.044715)), SQRT_2_PI))
        dinner = F.mul(F.add(F.mul(x2, 3 * 0.044715), 1.0), SQRT_2_PI)
        d = F.add(F.mul(F.add(t, 1.0), 0.5),
                  F.mul(F.mul(F.mul(x, 0.5), F.sub(1.0, F.mul(t, t))), dinner))
        return (F.mul(g, d),)
    cdf = F.mul(F.add(F.erf(F.mul(x, SQRT1_2)), 1.0), 0.5)
    pdf = F.mul(F.exp(F.mul(F.mul(x, x), -0.5)), INV_SQRT_2PI)
    return (F.mul(g, F.add(cdf, F.mul(x, pdf))),)


def _gelu_ref(x, approximate="none"):
    if approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf_ref(x / math.sqrt(2)))


register(OpDef(
    "gelu", "elementwise", "input, approximate='none'", 1, "int_to_float",
    scalar=_gelu_scalar, backward=_gelu_backward, ref=_gelu_ref, method=False,
    samples=({}, {"approximate": "tanh"}), test_dtypes=FLOATS,
))


def _cast_attrs(inputs, attrs):
    attrs["dtype"] = D.to_dtype(attrs["dtype"])
    return attrs


register(OpDef(
    "cast", "elementwise", "input, dtype", 1, "attr",
    scalar=lambda b, x, dtype: b.cast(x, dtype),
    backward=lambda F, g, out, x, dtype: (F.cast(g, x.dtype),),
    ref=lambda x, dtype: x.astype(dtype.np), attrs_rule=_cast_attrs, method=False,
    samples=({"dtype": D.float64}, {"dtype": D.int64}),
))

# ---------------------------------------------------------------- reductions


def _reduce_attrs(inputs, attrs):
    attrs["dim"] = normalize_dims(attrs["dim"], inputs[0].ndim)
    return attrs


def _reduce_shape(shape, dim, keepdim=False, **_):
    if keepdim:
        return tuple(1 if i in dim else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dim)


def _keep(F, t, x, dim, keepdim):
    """A reduced tensor reshaped so that it broadcasts against the unreduced input `x`."""
    return t if keepdim else F.reshape(t, _reduce_shape(tuple(x.shape), dim, True))


register(OpDef(
    "sum", "reduction", "input, dim=None, keepdim=False, *, dtype=None", 1, "sum",
    shape=_reduce_shape, attrs_rule=_reduce_attrs,
    impl=lambda xp, x, dim, keepdim, dtype=None: xp.sum(x, axis=dim, keepdims=keepdim),
    backward=lambda F, g, out, x, dim, keepdim, dtype=None: (
        F.expand(_keep(F, g, x, dim, keepdim), tuple(x.shape)),
    ),
    ref=lambda x, dim, keepdim=False, dtype=None: np.sum(x, axis=dim, keepdims=keepdim),
    samples=({"dim": None}, {"dim": 1, "keepdim": True}, {"dim": (0, -1)}),
))


def _amax_backward(F, g, out, x, dim, keepdim):
    mask = F.eq(x, _keep(F, out, x, dim, keepdim))
    count = F.sum(mask, dim, keepdim=True)
    return (F.where(mask, F.div(_keep(F, g, x, dim, keepdim), count), 0.0),)


def _amax_impl(xp, x, dim, keepdim):
    if x.size == 0 and any(x.shape[d] == 0 for d in dim):
        raise IndexError("amax(): Expected reduction dim to have non-zero size")
    return xp.amax(x, axis=dim, keepdims=keepdim)


register(OpDef(
    "amax", "reduction", "input, dim=(), keepdim=False", 1, "keep",
    shape=_reduce_shape, attrs_rule=lambda i, a: _reduce_attrs(i, {**a, "dim": a["dim"] or None}),
    impl=_amax_impl, backward=_amax_backward,
    ref=lambda x, dim=(), keepdim=False: np.amax(x, axis=dim or None, keepdims=keepdim),
    samples=({"dim": 1}, {"dim": (0, 1), "keepdim": True}),
))


def _mean_decomp(F, x, dim, keepdim, dtype=None):
    count = 1
    for d in dim:
        count *= x.shape[d]
    return F.div(F.sum(x, dim, keepdim, dtype=dtype), count)


register(OpDef(
    "mean", "composite", "input, dim=None, keepdim=False, *, dtype=None", 1, "float_only",
    shape=_reduce_shape, attrs_rule=_reduce_attrs, decomp=_mean_decomp,
    ref=lambda x, dim=None, keepdim=False, dtype=None: np.mean(x, axis=dim, keepdims=keepdim),
    samples=({"dim": None}, {"dim": -1, "keepdim": True}), test_dtypes=FLOATS,
))


def _log_softmax_decomp(F, x, dim, dtype=None):
    if dtype is not None:
        x = F.cast(x, dtype)
    shifted = F.sub(x, F.amax(x, dim, keepdim=True))
    return F.sub(shifted, F.log(F.sum(F.exp(shifted), dim, keepdim=True)))


def _softmax_decomp(F, x, dim, dtype=None):
    if dtype is not None:
        x = F.cast(x, dtype)
    e = F.exp(F.sub(x, F.amax(x, dim, keepdim=True)))
    return F.div(e, F.sum(e, dim, keepdim=True))


def _softmax_ref(x, dim, dtype=None):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


def _dim_attr(inputs, attrs):
    attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
    return attrs


for _name, _decomp, _ref in [
    ("softmax", _softmax_decomp, _softmax_ref),
    ("log_softmax", _log_softmax_decomp, lambda x, dim, dtype=None: np.log(_softmax_ref(x, dim))),
]:
    register(OpDef(
        _name, "composite", "input, dim, dtype=None", 1, "int_to_float",
        shape=lambda s, dim, dtype=None: s, attrs_rule=_dim_attr, decomp=_decomp, ref=_ref,
        samples=({"dim": -1}, {"dim": 0}), test_dtypes=FLOATS,
    ))

# ---------------------------------------------------------------- matmul


def _matmul_shape(a, b):
    if len(a) == 0 or len(b) == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{len(a)}D and {len(b)}D")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a))} and "
            f"{'x'.join(map(str, b))}): inner sizes {a2[-1]} and {b2[-2]} differ"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_backward(F, g, out, a, b):
    # view 1-D operands as matrices, take the 2-D rule, reduce broadcast batch dims back
    a2 = (1,) + tuple(a.shape) if a.ndim == 1 else tuple(a.shape)
    b2 = tuple(b.shape) + (1,) if b.ndim == 1 else tuple(b.shape)
    g2 = F.reshape(g, broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1]))
    ga = F.matmul(g2, F.transpose(F.reshape(b, b2), -1, -2))
    gb = F.matmul(F.transpose(F.reshape(a, a2), -1, -2), g2)
    return (F.reshape(sum_to_shape(F, ga, a2), tuple(a.shape)),
            F.reshape(sum_to_shape(F, gb, b2), tuple(b.shape)))


register(OpDef(
    "matmul", "matmul", "input, other", 2, "default", scalar_ok=False,
    shape=_matmul_shape, impl=lambda xp, a, b: xp.matmul(a, b), backward=_matmul_backward,
    ref=np.matmul, dunders=("__matmul__",), test_dtypes=FLOATS,
))

# ---------------------------------------------------------------- views and shapes


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

del _name, _ref, _dunder, _decomp
