"""Eager's fast paths: one factory, `make_fast(op, fallback)`, keyed by the op's kind.

A generated function (`eager.add`, `Tensor.__mul__`, `x.sum()`) first tries a path that skips
the general checks of `dispatch.apply` when their outcome is already known: elementwise ops on
CPU tensors and numbers (one template, specialised by arity; the kernel is the op's ufunc,
`OpDef.ufunc_kernel`, or its formula), `matmul` of two float matrices, and argument-less
reductions. Each caches the checks' outcome per operand dtypes/shapes (cleared with the default
dtype: `dispatch._CACHES`) and records the node as `apply` does; anything else, or any doubt,
calls `fallback`, the general path, which raises PyTorch's errors. Registered into
`dispatch.FAST_PATH` when eager is imported; imports dispatch, never the other way round.
"""

from __future__ import annotations

import functools

import numpy as np

from ir import dtypes as D
from ir.execute import opmath
from ir.opdef import OpDef
from ir.scalar import ArrayBuilder

from . import dispatch, grad_mode
from .autograd.record import ONE, new_table, record
from .caches import remember
from .dispatch import (
    _CACHES,
    _INPLACE,
    _MAX_CHECKED,
    _ND,
    _SCALARS,
    PLAIN_SUBCLASSES,
    POST_HOOKS,
    _default_attrs,
    _grad_enabled,
    _meta,
    _whole,
)
from .tensor import NEW_TENSOR_STATE, Tensor, wrap_array


def _fast_eligible(op: OpDef) -> bool:
    cls = type(op)
    return (op.kind == "elementwise" and op.decomp is None
            and op.shape is None and not op.dynamic_shape and not op.variadic
            and op.promote_from == 0 and op.nin in (1, 2) and op._varargs is None
            and cls.meta is OpDef.meta and cls.dtypes is OpDef.dtypes
            and cls.bind is OpDef.bind and cls.canonical_attrs is OpDef.canonical_attrs
            and all(p.default is not p.empty
                    for p in list(op.signature.parameters.values())[op.nin:]))


def _kernel(op: OpDef, compute=None):
    """`f(*arrays)` running op's kernel on numpy with default attributes: its ufunc
    (`OpDef.ufunc_kernel`), else its formula or impl with the defaults bound."""
    k = op.ufunc_kernel(np, compute)
    if k is not None:
        return k
    attrs = _default_attrs(op)
    if op.impl_is_scalar(compute):
        return functools.partial(op.scalar, ArrayBuilder(np), **attrs)
    return functools.partial(op.impl, np, **attrs)


_tnew = Tensor.__new__
_STATE = "    " + NEW_TENSOR_STATE.replace("\n", "\n    ")  # (wrap_array's body, inlined)


# The fast paths' common end: the kernel's result `r` as a new tensor, recording a grad_fn over
# the `{operands}` when autograd needs one (with a structure id from the entry's table `ids`).
_FAST_RESULT = """    if type(r) is not nd:
        r = asarray(r)
    if r.dtype is not onp and r.dtype != onp:
        r = r.astype(onp)
    arr = r
{state}
    if rec and backward is not None:
        t.requires_grad = True
        t.grad_fn = record(op, {operands}, defaults, t, ids)
    return t
"""

# The fast paths' source: one template, specialised by arity and by whether the function takes
# only its operands (dunders: Python passes exactly those) or also other arguments (functions
# and methods: anything else goes the general way). `{params}` names the operands in the
# caller's order (a reflected dunder gets `y, x`); the kernel always sees `x, y`.
_FAST_SRC = {1: """
def fast({params}{extra}):
    {guard}
    if type(x) is not tensor and type(x) not in plain:
        return fallback(x)
    xd = x._data
    if type(xd) is not nd or hooks:
        return fallback(x)
    rec = x.requires_grad and gstate.enabled
    dt = xd.dtype
    e = cache.get(dt)
    if e is None:
        e = entry(dt, (_meta(xd),), False)
    if not e:
        return fallback(x)
    cnp, onp, kern, ids = e
    if rec and onp.kind not in "fc":  # half/bfloat16 or integer results: general path
        return fallback(x)
    if dt is not cnp:
        xd = xd.astype(cnp)
    r = kern(xd)
""" + _FAST_RESULT, 2: """
def fast({params}{extra}):
    {guard}
    tx, ty = type(x), type(y)
    if tx is not tensor and tx in plain:
        tx = tensor
    if ty is not tensor and ty in plain:
        ty = tensor
    if tx is tensor:
        xd = x._data
        if ty is tensor:
            yd = y._data
            if type(xd) is not nd or type(yd) is not nd or hooks:
                return fallback({params})
            dx, dy = xd.dtype, yd.dtype
            # mixed dtypes: a zero-dim operand only counts by category (result_type)
            key = dx if dx is dy else (dx, dy, not xd.ndim, not yd.ndim)
            rec = (x.requires_grad or y.requires_grad) and gstate.enabled
        elif ty in scalars and scalar_ok:
            if type(xd) is not nd or hooks:
                return fallback({params})
            yd = y
            key = (xd.dtype, ty)
            rec = x.requires_grad and gstate.enabled
        else:
            return fallback({params})
    elif ty is tensor and tx in scalars and scalar_ok:
        xd, yd = x, y._data
        if type(yd) is not nd or hooks:
            return fallback({params})
        key = (tx, yd.dtype)
        rec = y.requires_grad and gstate.enabled
    else:
        return fallback({params})
    e = cache.get(key)
    if e is None:
        e = entry(key, (x if tx is not tensor else _meta(xd),
                        y if ty is not tensor else _meta(yd)), tx is not ty)
    if not e:
        return fallback({params})
    cnp, onp, kern, ids = e
    if rec and onp.kind not in "fc":  # half/bfloat16 or integer results: general path
        return fallback({params})
    if tx is tensor and xd.dtype is not cnp:
        xd = xd.astype(cnp)
    if ty is tensor and yd.dtype is not cnp:
        yd = yd.astype(cnp)
    try:
        r = kern(xd, yd)
    except (ValueError, TypeError, OverflowError):  # the general path raises it properly
        return fallback({params})
""" + _FAST_RESULT}
_FAST_CODE: dict = {}


def _fast_code(nin: int, exact: bool, reflected: bool):
    key = (nin, exact, reflected)
    code = _FAST_CODE.get(key)
    if code is None:
        params = "x" if nin == 1 else ("y, x" if reflected else "x, y")
        extra = "" if exact else ", *rest, **kw"
        guard = "pass" if exact else f"if rest or kw:\n        return fallback({params}, " \
            "*rest, **kw)"
        operands = "x, ONE" if nin == 1 else "x, y"
        src = _FAST_SRC[nin].format(params=params, extra=extra, guard=guard, operands=operands,
                                    state=_STATE)
        code = _FAST_CODE[key] = compile(src, f"<eager fast path, {nin} operand(s)>", "exec")
    return code


def _make_fast(op: OpDef, fallback, exact: bool = False, reflected: bool = False):
    """`op` as a function with a fast path for elementwise calls on CPU tensors (and Python
    numbers); anything else, or any failure, calls `fallback` with the same arguments: other
    devices, autograd of non-float results, hooks (forward AD, inference mode), narrow-int
    scalars, keyword arguments, errors (the general path raises them with PyTorch's message).
    Broadcasting is numpy's, which is PyTorch's. `exact`: the function takes only the
    operands (a dunder); `reflected`: it takes them in the order (other, self)."""
    cache: dict = {}
    _CACHES.append(cache)
    defaults = _default_attrs(op)
    kernels: dict = {}

    def kernel(compute):
        k = kernels.get(compute)
        if k is None:
            k = kernels[compute] = _kernel(op, compute)
        return k

    def entry(key, metas, with_scalar):
        try:  # an attrs rule that only validates the defaults keeps the fast path
            if op.attrs_rule is not None and op.canonical_attrs(metas, defaults) != defaults:
                cache[key] = False
                return False
            compute, out_dtype = op.dtypes(metas, defaults)
        except Exception:  # noqa: BLE001  (the general path raises it properly)
            cache[key] = False
            return False
        cd = opmath(op, compute)
        if with_scalar and cd.category == D.INTEGER and cd is not D.int64:
            e = False  # Python ints wrap to narrow integers: the general path does it
        else:
            e = (cd.np, out_dtype.np, kernel(cd), new_table())
        cache[key] = e
        return e

    env = {"fallback": fallback, "tensor": Tensor, "nd": _ND, "hooks": POST_HOOKS,
           "gstate": grad_mode._state, "cache": cache, "entry": entry, "_meta": _meta,
           "asarray": np.asarray, "tnew": _tnew, "backward": op.backward, "record": record,
           "ONE": ONE, "plain": PLAIN_SUBCLASSES, "op": op, "defaults": defaults,
           "scalars": _SCALARS, "scalar_ok": op.scalar_ok, "__name__": __name__}
    exec(_fast_code(op.nin, exact, reflected), env)  # noqa: S102  (the fixed template above)
    fast = env["fast"]
    if not exact and not reflected:
        _INPLACE[op.name] = _inplace_route(op, cache, entry)
    return fast


def _inplace_route(op: OpDef, cache: dict, entry):
    """`inplace(x, args) -> bool` for `x.<op>_(*args)`, sharing the fast path's `cache` of
    checked entries (made by `entry`)."""
    nin, scalar_ok = op.nin, op.scalar_ok

    def inplace(x: Tensor, args: tuple) -> bool:
        """`x.<op>_(*args)` written by the kernel's ufunc straight into `x`'s array (`out=`),
        when that is exactly what the general way would write: a CPU array, nothing to record
        (grad mode off or nothing requires grad), no hooks, compute and result dtype `x`'s.
        False when it cannot (nothing written)."""
        xd = x._data
        if type(xd) is not _ND or POST_HOOKS or len(args) != nin - 1:
            return False
        dx = xd.dtype
        if nin == 1:
            yd = None
            key = dx
            rec = x.requires_grad
        else:
            y = args[0]
            if isinstance(y, Tensor):
                yd = y._data
                if type(yd) is not _ND:
                    return False
                dy = yd.dtype
                key = dx if dx is dy else (dx, dy, not xd.ndim, not yd.ndim)
                rec = x.requires_grad or y.requires_grad
            elif type(y) in _SCALARS and scalar_ok:
                yd = y
                key = (dx, type(y))
                rec = x.requires_grad
            else:
                return False
        if rec and _grad_enabled():
            return False
        e = cache.get(key)
        if e is None:
            metas = (_meta(xd),) if yd is None else \
                (_meta(xd), _meta(yd) if type(yd) is _ND else yd)
            e = entry(key, metas, type(yd) is not _ND and yd is not None)
        if not e or e[0] != dx or e[1] != dx:
            return False
        ufunc = e[2]
        if type(ufunc) is not np.ufunc:
            return False
        try:
            if yd is None:
                ufunc(xd, out=xd)
            else:
                if type(yd) is _ND and yd.dtype != dx:
                    yd = yd.astype(dx)
                ufunc(xd, yd, out=xd)
        except (ValueError, TypeError):  # (checked before writing: the general way raises)
            return False
        return True

    return inplace


_NO_ATTRS: dict = {}  # (shared by nodes: they never change their attrs)


def _make_matmul_fast(op: OpDef, fallback, exact: bool = False):
    """`matmul` with a fast path for two CPU matrices of one floating dtype (float32/float64)
    whose inner sizes agree: the checks of the general path hold by construction (devices,
    shapes, dtype rule: the operands' dtype), so it runs numpy's matmul and records the node
    directly. Anything else (other ranks or dtypes, subclasses, hooks, keyword arguments, a
    size mismatch, which the general path reports) calls `fallback`."""
    floats = (np.dtype(np.float32), np.dtype(np.float64))
    ids = {dt: new_table() for dt in floats}  # structure ids per dtype (autograd.record)
    matmul = np.matmul
    backward = op.backward
    hooks = POST_HOOKS

    def fast(x, y, *rest, **kw):
        if rest or kw or hooks or (type(x) is not Tensor and type(x) not in PLAIN_SUBCLASSES) \
                or (type(y) is not Tensor and type(y) not in PLAIN_SUBCLASSES):
            return fallback(x, y, *rest, **kw)
        a, b = x._data, y._data
        if type(a) is not _ND or type(b) is not _ND or a.ndim != 2 or b.ndim != 2:
            return fallback(x, y)
        dt = a.dtype
        if b.dtype is not dt or dt not in floats or a.shape[1] != b.shape[0]:
            return fallback(x, y)
        t = wrap_array(matmul(a, b))
        if (x.requires_grad or y.requires_grad) and backward is not None and _grad_enabled():
            t.requires_grad = True
            t.grad_fn = record(op, x, y, _NO_ATTRS, t, ids[dt])
        return t

    if exact:
        def dunder(x, y):
            return fast(x, y)
        return dunder
    return fast


def _reduce_fast_eligible(op: OpDef) -> bool:
    """A primitive reduction, or a composite recorded whole (`mean`: its `eager_impl` and
    `eager_backward`), of one operand whose other parameters all have defaults."""
    cls = type(op)
    primitive = (op.kind == "reduction" and op.decomp is None and op.impl is not None
                 and cls.meta is OpDef.meta and cls.dtypes is OpDef.dtypes)
    whole = (op.kind == "composite" and op.eager_impl is not None
             and op.eager_backward is not None)
    return ((primitive or whole) and op.nin == 1 and not op.variadic and not op.dynamic_shape
            and op._varargs is None and cls.canonical_attrs is OpDef.canonical_attrs
            and all(p.default is not p.empty
                    for p in list(op.signature.parameters.values())[1:]))


def _make_reduce_fast(op: OpDef, fallback):
    """A reduction called on one CPU tensor with no other argument (`loss.sum()`): the general
    path's checks depend only on the dtype and shape, so their outcome (canonical attributes,
    dtypes) is kept per (dtype, shape) and the kernel runs directly, recording the node as
    `apply` does. A composite recorded whole (`mean`) runs its `eager_impl` (None: the
    general path) and records `_whole(op)`, as `apply` does. Anything else, or a first call
    the checks reject, calls `fallback`."""
    cache: dict = {}
    _CACHES.append(cache)  # (cleared when the default dtype changes)
    defaults = _default_attrs(op)
    hooks = POST_HOOKS
    whole = op.decomp is not None
    node_op = _whole(op) if whole else op
    backward = node_op.backward
    impl = op.eager_impl if whole else op.impl

    def entry(x: Tensor):
        meta = _meta(x._data)
        try:
            attrs = op.canonical_attrs((meta,), dict(defaults))
            if whole:  # (the result's dtype is the eager_impl's)
                return attrs, None, None, None, new_table()
            op.meta((meta,), attrs)
            compute, out = op.dtypes((meta,), attrs)
        except Exception:  # noqa: BLE001  (the general path raises it with its message)
            return False
        return (attrs, opmath(op, compute).np, out.np, out.category >= D.FLOATING,
                new_table())

    def fast(*args, **kwargs):
        if kwargs or len(args) != 1 or hooks:
            return fallback(*args, **kwargs)
        x = args[0]
        if type(x) is not Tensor and type(x) not in PLAIN_SUBCLASSES:
            return fallback(x)
        xd = x._data
        if type(xd) is not _ND:
            return fallback(x)
        key = (xd.dtype, xd.shape)
        e = cache.get(key)
        if e is None:
            e = remember(cache, key, entry(x), _MAX_CHECKED)
        if not e:
            return fallback(x)
        attrs, cnp, onp, floating, ids = e
        if whole:
            r = impl(np, xd, **attrs)
            if type(r) is not _ND:
                return fallback(x)
            floating = r.dtype.kind in "fc"
            if not floating and x.requires_grad and _grad_enabled():
                return fallback(x)  # (apply then takes the decomposition)
        else:
            r = impl(np, xd if xd.dtype is cnp else xd.astype(cnp), **attrs)
            if type(r) is not _ND:
                r = np.asarray(r)
            if r.dtype != onp:
                r = r.astype(onp)
        t = wrap_array(r)
        if floating and x.requires_grad and backward is not None and _grad_enabled():
            t.requires_grad = True
            t.grad_fn = record(node_op, x, ONE, attrs, t, ids)
        return t

    return fast


def make_fast(op: OpDef, fallback, exact: bool = False, reflected: bool = False):
    """`fallback` (op's general function, or a dunder: `exact`, `reflected`) behind op's fast
    path, chosen by op kind; None when the op has none."""
    if _fast_eligible(op):
        return _make_fast(op, fallback, exact, reflected)
    if op.name == "matmul" and not reflected:
        return _make_matmul_fast(op, fallback, exact)
    if not exact and _reduce_fast_eligible(op):
        return _make_reduce_fast(op, fallback)
    return None


dispatch.FAST_PATH[0] = make_fast
