"""Reductions and scans: sum/prod/amax/argmax/all/quantile... and the composites built on them
(mean, var/std, logsumexp, softmax, max/min with indices, median, mode, cummax); the p-norm
reduction `norm` is in `ir/ops/pnorm.py`.

Primitive reductions (`kind="reduction"`, scans `kind="scan"`) run a numpy/cupy library kernel
(`impl`); codegen calls them as library functions. Composites decompose into primitives, so they
need no backward of their own. Ops with several outputs return namedtuples like PyTorch's
`torch.return_types`. Semantics, dtypes and errors follow the PyTorch documentation of each op.
Imports only `ir` and numpy.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, normalize_dim, normalize_dims, register
from ..return_types import return_type
from .elementwise import BOOL, COMPLEX, FLOATING, FLOATS, Promo, _title, dtype_of

return_types = {name: return_type(name, ("values", "indices"))
                for name in ("max", "min", "median", "nanmedian", "mode", "cummax", "cummin")}


# ---------------------------------------------------------------- dims and shapes


def _all_if_empty(dim):
    return None if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0) else dim


def _reduce_attrs(inputs, attrs):
    """`dim` as None, an int, or a sequence (None and () reduce every dim, as PyTorch); a 0-d
    input's dim 0 or -1 reduces nothing (canonical `()`: PyTorch's 0-d rule)."""
    ndim = inputs[0].ndim
    dims = normalize_dims(_all_if_empty(attrs["dim"]), ndim)
    attrs["dim"] = dims if ndim else ()
    if attrs.get("dtype") is not None:
        attrs["dtype"] = D.to_dtype(attrs["dtype"])
    return attrs


def _int_dim_attrs(inputs, attrs):
    """`dim` as None or one int (argmax, prod, cumsum...): wrapped, kept as an int."""
    if attrs.get("dim") is not None:
        attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
    if attrs.get("dtype") is not None:
        attrs["dtype"] = D.to_dtype(attrs["dtype"])
    return attrs


def scalar_as_vector(impl):
    """`impl(xp, x, ..., dim=d)` of an op with one int `dim`, taking a 0-d `x` as one element
    along dim 0 (PyTorch's 0-d rule: dim 0 and -1 are valid) and giving 0-d results."""
    @functools.wraps(impl)
    def wrapped(xp, x, *args, **attrs):
        if getattr(x, "ndim", 1):
            return impl(xp, x, *args, **attrs)
        r = impl(xp, xp.reshape(x, (1,)), *args, **attrs)
        if r is None or isinstance(r, tuple):
            return r if r is None else tuple(xp.reshape(a, ()) for a in r)
        return xp.reshape(r, ())
    return wrapped


def _dims(dim, ndim):
    """A canonical `dim` attr (None, int or tuple) as a tuple of dims."""
    if dim is None:
        return tuple(range(ndim))
    return (dim,) if isinstance(dim, int) else tuple(dim)


def _reduce_shape(shape, dim=None, keepdim=False, **_):
    dims = _dims(dim, len(shape))
    if keepdim:
        return tuple(1 if i in dims else n for i, n in enumerate(shape))
    return tuple(n for i, n in enumerate(shape) if i not in dims)


def _keep(F, t, x, dim, keepdim):
    """A reduced tensor reshaped so that it broadcasts against the unreduced input `x`."""
    return t if keepdim else F.reshape(t, _reduce_shape(tuple(x.shape), dim, True))


def _axis(dim):
    return dim if dim is None or isinstance(dim, int) else tuple(dim)


def _nonempty(name, x, dim):
    if any(x.shape[d] == 0 for d in _dims(dim, x.ndim)) and x.size == 0:
        raise IndexError(f"{name}(): Expected reduction dim to have non-zero size.")


def _float_input(name, msg=None):
    """An attrs rule refusing integer/bool inputs with PyTorch's message."""
    def rule(inputs, attrs):
        dt = inputs[0].dtype
        if dt.category < FLOATING and attrs.get("dtype") is None:
            raise RuntimeError(msg.format(_title(dt)) if msg else
                               f"{name}(): expected input to have floating point or complex "
                               f"dtype but got {_title(dt)}")
        return attrs
    return rule


def _then(*rules):
    def rule(inputs, attrs):
        for r in rules:
            attrs = r(inputs, attrs)
        return attrs
    return rule


def reduction(name, sig, impl, backward, ref, promotion, attrs_rule=_reduce_attrs,
              kind="reduction", shape=_reduce_shape, **kw):
    return register(OpDef(name, kind, sig, 1, promotion, shape=shape, attrs_rule=attrs_rule,
                          impl=impl, backward=backward, ref=ref, **kw))


# ---------------------------------------------------------------- sums and products

_SUM_SAMPLES = ({"dim": None}, {"dim": 1, "keepdim": True}, {"dim": (0, -1)})


def _sum_backward(F, g, out, x, dim, keepdim, dtype=None):
    return (F.expand(_keep(F, g, x, dim, keepdim), tuple(x.shape)),)


reduction(
    "sum", "input, dim=None, keepdim=False, *, dtype=None",
    lambda xp, x, dim, keepdim, dtype=None: (np.add.reduce if xp is np else xp.sum)(
        x, axis=dim, keepdims=keepdim),  # (numpy's sum, without its Python wrapper)
    _sum_backward, lambda x, dim=None, keepdim=False, dtype=None: np.sum(
        x, axis=_axis(_all_if_empty(dim)), keepdims=keepdim, dtype=np.int64 if x.dtype.kind in
        "biu" else None),
    "sum", samples=_SUM_SAMPLES, reduce=("add", 0),
)
reduction(
    "nansum", "input, dim=None, keepdim=False, *, dtype=None",
    lambda xp, x, dim, keepdim, dtype=None: xp.nansum(x, axis=dim, keepdims=keepdim),
    lambda F, g, out, x, dim, keepdim, dtype=None: (
        F.where(F.isnan(x), 0.0, _sum_backward(F, g, out, x, dim, keepdim)[0]),),
    lambda x, dim=None, keepdim=False, dtype=None: np.nansum(
        x, axis=_axis(_all_if_empty(dim)), keepdims=keepdim, dtype=np.int64 if x.dtype.kind in
        "biu" else None),
    "sum", samples=_SUM_SAMPLES,
)


def _prod_backward(F, g, out, x, dim, keepdim, dtype=None):
    # exact with zeros: d prod / d x_i = product of the others (PyTorch's prod_backward)
    dims = _dims(dim, x.ndim)
    gk = _keep(F, g, x, dims, keepdim)
    zero = F.eq(x, 0)
    nz = F.where(zero, 1.0, x)
    prod_nz = F.prod(nz, dim, keepdim=True) if dim is not None else \
        F.reshape(F.prod(nz), (1,) * x.ndim)
    zeros = F.sum(zero, dims, keepdim=True)
    no_zero = F.div(prod_nz, nz)
    one_zero = F.where(zero, prod_nz, 0.0)
    grad = F.where(F.eq(zeros, 0), no_zero, F.where(F.eq(zeros, 1), one_zero, 0.0))
    return (F.mul(gk, grad),)


def _prod_attrs(inputs, attrs):
    if attrs["dim"] is not None and not isinstance(attrs["dim"], int):
        raise TypeError("prod(): argument 'dim' must be int, not "
                        f"{type(attrs['dim']).__name__}")
    return _int_dim_attrs(inputs, attrs)


reduction(
    "prod", "input, dim=None, keepdim=False, *, dtype=None",
    lambda xp, x, dim, keepdim, dtype=None: xp.prod(x, axis=dim, keepdims=keepdim) if
    dim is not None or not keepdim else xp.prod(x).reshape((1,) * x.ndim),
    _prod_backward, lambda x, dim=None, keepdim=False, dtype=None: np.prod(
        x, axis=dim, keepdims=keepdim, dtype=np.int64 if x.dtype.kind in "biu" else None),
    "sum", attrs_rule=_prod_attrs, samples=({}, {"dim": 1}, {"dim": -1, "keepdim": True}),
    reduce=("mul", 1),
)

# ---------------------------------------------------------------- extremes


def _amax_backward(F, g, out, x, dim, keepdim):
    mask = F.eq(x, _keep(F, out, x, dim, keepdim))
    count = F.sum(mask, dim, keepdim=True)
    return (F.where(mask, F.div(_keep(F, g, x, dim, keepdim), count), 0.0),)


def _np_reduction(name, check_empty=False):
    """(impl, ref) of a numpy reduction `name(x, axis, keepdims)` (impl on namespace xp)."""
    def impl(xp, x, dim, keepdim):
        if check_empty:
            _nonempty(name, x, dim)
        return getattr(xp, name)(x, axis=dim, keepdims=keepdim)

    def ref(x, dim=None, keepdim=False):
        return getattr(np, name)(x, axis=_axis(_all_if_empty(dim)), keepdims=keepdim)
    return impl, ref


for _name in ("amax", "amin"):
    _impl, _ref = _np_reduction(_name, check_empty=True)
    reduction(
        _name, "input, dim=(), keepdim=False", _impl, _amax_backward, _ref,
        Promo(_name, reject=(COMPLEX,)), samples=({"dim": 1}, {"dim": (0, 1), "keepdim": True}),
        reduce=("maximum", "min") if _name == "amax" else ("minimum", "max"),
    )


def _arg_impl(name):
    @scalar_as_vector
    def impl(xp, x, dim, keepdim):
        _nonempty(name, x, dim)
        f = getattr(xp, name)
        if dim is None:
            r = f(x)
            return xp.reshape(r, (1,) * x.ndim) if keepdim else r
        return f(x, axis=dim, keepdims=keepdim)
    return impl


for _name in ("argmax", "argmin"):
    reduction(
        _name, "input, dim=None, keepdim=False", _arg_impl(_name), None,
        _np_reduction(_name)[1],
        Promo(_name, "int64", (BOOL, COMPLEX),
              error=(RuntimeError, f"{_name}(): does not support bool input")),
        attrs_rule=_int_dim_attrs, samples=({}, {"dim": 1}, {"dim": -1, "keepdim": True}),
    )


def _max_attrs(inputs, attrs):
    if isinstance(attrs["dim"], int) and not isinstance(attrs["dim"], bool):
        attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
    return attrs


def _max_decomp(name):
    amax, argmax, binary = ("amax", "argmax", "maximum") if name == "max" else \
        ("amin", "argmin", "minimum")

    def decomp(F, x, dim=None, keepdim=False):
        if dim is None:
            if math.prod(x.shape) == 0:
                raise RuntimeError(f"{name}(): Expected reduction dim to be specified for "
                                   "input.numel() == 0. Specify the reduction dim with the "
                                   "'dim' argument.")
            return getattr(F, amax)(x)
        if not isinstance(dim, int):  # max(input, other): the binary form
            return getattr(F, binary)(x, dim)
        xi = F.cast(x, D.uint8 if hasattr(D, "uint8") else D.int64) \
            if dtype_of(x) is D.bool_ else x
        return return_types[name](getattr(F, amax)(x, dim, keepdim),
                                  getattr(F, argmax)(xi, dim, keepdim))
    return decomp


def _max_ref(name):
    def ref(x, dim=None, keepdim=False):
        f, af = (np.amax, np.argmax) if name == "max" else (np.amin, np.argmin)
        if dim is None:
            return f(x)
        return (f(x, axis=dim, keepdims=keepdim), af(x, axis=dim, keepdims=keepdim))
    return ref


for _name in ("max", "min"):
    register(OpDef(
        _name, "composite", "input, dim=None, keepdim=False", 1, attrs_rule=_max_attrs,
        decomp=_max_decomp(_name), ref=_max_ref(_name),
        samples=({}, {"dim": 1}, {"dim": -1, "keepdim": True}),
    ))

# ---------------------------------------------------------------- logic and counting

def _all_any_dtype(base, attrs):
    """bool results, except uint8 inputs keep uint8 (PyTorch's legacy rule)."""
    return base, (base if base.name == "uint8" else D.bool_)


for _name in ("all", "any"):
    _impl, _ref = _np_reduction(_name)
    reduction(
        _name, "input, dim=None, keepdim=False", _impl, None, _ref,
        Promo(_name, _all_any_dtype), samples=({}, {"dim": 1}, {"dim": (0, 2), "keepdim": True}),
    )
reduction(
    "count_nonzero", "input, dim=None",
    lambda xp, x, dim: xp.count_nonzero(x, axis=dim), None,
    lambda x, dim=None: np.count_nonzero(x, axis=_axis(_all_if_empty(dim))),
    Promo("count_nonzero", "int64"), samples=({}, {"dim": 1}, {"dim": (0, 2)}),
)

# ---------------------------------------------------------------- means and moments


_MEAN_INT = ("mean(): could not infer output dtype. Input dtype must be either a floating point "
             "or complex dtype. Got: {}")


def _count(x, dim):
    return math.prod(x.shape[d] for d in _dims(dim, x.ndim))


def _mean_whole(np_type, x, dim, dtype) -> bool:
    """Where eager runs mean whole: float32/float64 (numpy scalar type), no dtype, a count
    of reduced elements above 0 (`x`: an array or a TensorMeta)."""
    return np_type in (np.float32, np.float64) and dtype is None and _count(x, dim) != 0


def _mean_eager(xp, x, dim, keepdim, dtype=None):
    """The decomposition's kernels (sum, then div by the count) on float32/float64 numpy arrays
    without a dtype: its exact results. None otherwise (half types, complex, dtype=, empty)."""
    if xp is not np or not _mean_whole(x.dtype.type, x, dim, dtype):
        return None
    n = _count(x, dim)
    with np.errstate(all="ignore"):  # IEEE results without warnings, as the kernels run
        r = np.asarray(np.add.reduce(x, axis=dim, keepdims=keepdim) / n)
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def _mean_backward(F, g, out, x, dim, keepdim, dtype=None):
    """The decomposition's gradient: div's (g / n), then sum's (expanded back to x's shape)."""
    return _sum_backward(F, F.div(g, _count(x, dim)), out, x, dim, keepdim)


register(OpDef(
    "mean", "composite", "input, dim=None, keepdim=False, *, dtype=None", 1, "float_only",
    shape=_reduce_shape, attrs_rule=_then(_float_input("mean", _MEAN_INT), _reduce_attrs),
    decomp=lambda F, x, dim, keepdim, dtype=None: F.div(
        F.sum(x, dim, keepdim, dtype=dtype), _count(x, dim)),
    eager_impl=_mean_eager, eager_backward=_mean_backward,
    eager_applies=lambda metas, attrs: metas[0].device == "cpu" and _mean_whole(
        metas[0].dtype.np.type, metas[0], attrs["dim"], attrs["dtype"]),
    ref=lambda x, dim=None, keepdim=False, dtype=None: np.mean(
        x, axis=_axis(_all_if_empty(dim)), keepdims=keepdim),
    samples=({"dim": None}, {"dim": -1, "keepdim": True}, {"dim": (0, 2)}), test_dtypes=FLOATS,
))
register(OpDef(
    "nanmean", "composite", "input, dim=None, keepdim=False, *, dtype=None", 1,
    attrs_rule=_then(_float_input("nanmean"), _reduce_attrs),
    decomp=lambda F, x, dim, keepdim, dtype=None: F.div(
        F.nansum(x, dim, keepdim, dtype=dtype), F.sum(F.logical_not(F.isnan(x)), dim, keepdim)),
    ref=lambda x, dim=None, keepdim=False, dtype=None: np.nanmean(
        x, axis=_axis(_all_if_empty(dim)), keepdims=keepdim),
    samples=({"dim": None}, {"dim": 1, "keepdim": True}), test_dtypes=FLOATS,
))


def _var_attrs(inputs, attrs):
    dim, unbiased = attrs["dim"], attrs["unbiased"]
    if isinstance(dim, bool):  # var(input, unbiased): PyTorch's second overload
        dim, unbiased = None, dim
    if attrs["correction"] is not None and unbiased is not None:
        raise RuntimeError("var(): cannot specify both 'unbiased' and 'correction'")
    if inputs[0].dtype.category < FLOATING:
        raise RuntimeError("std and var only support floating point and complex dtypes")
    attrs["correction"] = attrs["correction"] if attrs["correction"] is not None else \
        (0 if unbiased is False else 1)
    attrs["dim"], attrs["unbiased"] = dim, None
    return _reduce_attrs(inputs, attrs)


_VAR_SIG = "input, dim=None, unbiased=None, keepdim=False, *, correction=None"


def _var_decomp(F, x, dim, unbiased=None, keepdim=False, *, correction=1):
    d = F.sub(x, F.mean(x, dim, keepdim=True))
    sq = F.mul(d, d) if dtype_of(x).category != COMPLEX else F.abs(F.mul(d, d))
    return F.div(F.sum(sq, dim, keepdim), max(_count(x, dim) - correction, 0))


def _var_eager(xp, x, dim, unbiased=None, keepdim=False, *, correction=1, root=False):
    """`_var_decomp`'s kernels (sum, div, sub, mul, sum, div; sqrt for std) on float32/float64
    numpy arrays, squaring in place: its exact results with one temporary fewer (numpy's own
    two-pass var). None for other dtypes (half types round after every op, complex squares
    differently): the decomposition runs."""
    if xp is not np or x.dtype.type not in (np.float32, np.float64):
        return None
    n = _count(x, dim)
    with np.errstate(all="ignore"):  # IEEE results (0/0 of a single value) without warnings
        d = np.asarray(np.subtract(x, np.sum(x, axis=dim, keepdims=True) / n))
        np.multiply(d, d, out=d)
        r = np.asarray(np.sum(d, axis=dim, keepdims=keepdim) / max(n - correction, 0))
    if root:
        r = np.sqrt(r, out=r) if r.ndim else np.asarray(np.sqrt(r))
    return r if r.dtype == x.dtype else r.astype(x.dtype)


def _var_ref(x, dim=None, unbiased=None, keepdim=False, *, correction=None):
    if isinstance(dim, bool):
        dim, unbiased = None, dim
    ddof = correction if correction is not None else (0 if unbiased is False else 1)
    return np.var(x, axis=_axis(_all_if_empty(dim)), ddof=ddof, keepdims=keepdim)


_VAR_SAMPLES = ({}, {"dim": 1, "keepdim": True}, {"dim": (0, 2), "correction": 0},
                {"unbiased": False})
for _name, _decomp, _ref in [
    ("var", _var_decomp, _var_ref),
    ("std", lambda F, x, *a, **k: F.sqrt(_var_decomp(F, x, *a, **k)),
     lambda x, *a, **k: np.sqrt(_var_ref(x, *a, **k))),
    ("var_mean", lambda F, x, *a, **k: (_var_decomp(F, x, *a, **k),
                                        F.mean(x, a[0] if a else k["dim"], k["keepdim"])),
     lambda x, *a, **k: (_var_ref(x, *a, **k), np.mean(x, axis=_axis(_all_if_empty(
         k.get("dim") if not isinstance(k.get("dim"), bool) else None)),
         keepdims=k.get("keepdim", False)))),
    ("std_mean", lambda F, x, *a, **k: (F.sqrt(_var_decomp(F, x, *a, **k)),
                                        F.mean(x, a[0] if a else k["dim"], k["keepdim"])),
     lambda x, *a, **k: (np.sqrt(_var_ref(x, *a, **k)), np.mean(x, axis=_axis(_all_if_empty(
         k.get("dim") if not isinstance(k.get("dim"), bool) else None)),
         keepdims=k.get("keepdim", False)))),
]:
    register(OpDef(
        _name, "composite", _VAR_SIG, 1, attrs_rule=_var_attrs, decomp=_decomp, ref=_ref,
        samples=_VAR_SAMPLES, test_dtypes=FLOATS, method=_name in ("var", "std"),
        eager_impl={"var": _var_eager, "std": functools.partial(_var_eager, root=True)}.get(
            _name),
    ))

# ---------------------------------------------------------------- softmax family


def _to_float(F, x):
    return x if dtype_of(x).category >= FLOATING else F.cast(x, D.get_default_dtype())


def _logsumexp_decomp(F, x, dim, keepdim=False):
    x = _to_float(F, x)
    m = F.amax(x, dim, keepdim=True)
    m = F.where(F.isinf(m), 0.0, m)  # all -inf (or an inf) rows: no inf - inf
    r = F.add(F.log(F.sum(F.exp(F.sub(x, m)), dim, keepdim=True)), m)
    return r if keepdim else F.reshape(r, _reduce_shape(tuple(x.shape), dim))


def _logsumexp_ref(x, dim, keepdim=False):
    from scipy.special import logsumexp

    return logsumexp(x.astype(np.float32) if x.dtype.kind in "biu" else x,
                     axis=_axis(_all_if_empty(dim)), keepdims=keepdim)


register(OpDef(
    "logsumexp", "composite", "input, dim, keepdim=False", 1, attrs_rule=_reduce_attrs,
    decomp=_logsumexp_decomp, ref=_logsumexp_ref,
    samples=({"dim": 1}, {"dim": (0, 2), "keepdim": True}),
))


def _softmax_attrs(name):
    def rule(inputs, attrs):
        attrs["dim"] = normalize_dim(attrs["dim"], inputs[0].ndim)
        if attrs["dtype"] is not None:
            attrs["dtype"] = D.to_dtype(attrs["dtype"])
        elif inputs[0].dtype.category < FLOATING:
            raise NotImplementedError(f'"{name}_lastdim_kernel_impl" not implemented for '
                                      f"'{_title(inputs[0].dtype)}'")
        return attrs
    return rule


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


def _softmax_whole(np_type, size: int, dtype) -> bool:
    """Where eager runs (log_)softmax whole (`eager_impl`, `eager_backward`): a float32 or
    float64 operand (its numpy scalar type), not empty, without a dtype."""
    return np_type in (np.float32, np.float64) and dtype is None and size != 0


def _softmax_applies(metas, attrs) -> bool:
    x = metas[0]
    return x.device == "cpu" and _softmax_whole(x.dtype.np.type, x.numel, attrs["dtype"])


def _softmax_eager(log: bool):
    """Eager's kernel of (log_)softmax: the decomposition's kernels (amax, sub, exp, sum,
    then log and sub, or div) on float32/float64 numpy arrays without a dtype, its exact
    results in one call. None otherwise (half types, dtype=, empty, other arrays)."""
    @scalar_as_vector
    def impl(xp, x, dim, dtype=None):
        if xp is not np or not _softmax_whole(x.dtype.type, x.size, dtype):
            return None
        # (IEEE results without warnings, as the kernels run: ir.execute's warnings filter
        # for ir modules, not the far slower np.errstate)
        shifted = x - np.maximum.reduce(x, axis=dim, keepdims=True)
        if log:
            return shifted - np.log(np.add.reduce(np.exp(shifted), axis=dim, keepdims=True))
        e = np.exp(shifted)
        return e / np.add.reduce(e, axis=dim, keepdims=True)
    return impl


def _softmax_backward(F, g, out, x, dim, dtype=None):
    """PyTorch's `_softmax_backward_data`: out * (g - sum(g * out, dim))."""
    return (F.mul(out, F.sub(g, F.sum(F.mul(g, out), dim, keepdim=True))),)


def _log_softmax_backward(F, g, out, x, dim, dtype=None):
    """PyTorch's `_log_softmax_backward_data`: g - exp(out) * sum(g, dim)."""
    return (F.sub(g, F.mul(F.exp(out), F.sum(g, dim, keepdim=True))),)


def _softmax_ref(x, dim, dtype=None):
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


for _name, _decomp, _ref, _log, _backward in [
    ("softmax", _softmax_decomp, _softmax_ref, False, _softmax_backward),
    ("log_softmax", _log_softmax_decomp, lambda x, dim, dtype=None: np.log(_softmax_ref(x, dim)),
     True, _log_softmax_backward),
]:
    register(OpDef(
        _name, "composite", "input, dim, dtype=None", 1, "int_to_float",
        shape=lambda s, dim, dtype=None: s, attrs_rule=_softmax_attrs(_name), decomp=_decomp,
        eager_impl=_softmax_eager(_log), eager_backward=_backward,
        eager_applies=_softmax_applies,
        ref=_ref, samples=({"dim": -1}, {"dim": 0}), test_dtypes=FLOATS,
    ))

del _name, _impl, _decomp, _ref, _log, _backward
