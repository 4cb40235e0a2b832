"""`LF`: the op namespace backward rules run through when the pass is not recorded.

Backward rules are written once, in registry ops (`F.mul(g, y)`), so that `create_graph=True`
can record them through `eager.dispatch.F`. Without `create_graph` nothing is recorded, and this
namespace runs the same rules faster and lazily: each call checks its operands through the
registry's meta rules (shape, dtype, device: the same errors as eager) and returns a `Lazy`
tensor whose array is computed on first use. The engine computes only the gradients some node
needs, so work on the gradient of an operand that does not require grad (a matmul's input
batch, a constant) is never done: PyTorch skips it with `needs_input_grad`; here it falls out.

Imports `ir` and eager's Tensor only; used by `engine.py`.
"""

from __future__ import annotations

import numpy as np

from ir import REGISTRY
from ir import dtypes as D
from ir.execute import namespace_of, opmath, run_kernel
from ir.meta_array import META_XP, run_meta
from ir.opdef import OpDef, TensorMeta

from ..tensor import Size, Tensor, wrap_array


class MetaTensor(Tensor):
    """A Tensor whose metadata (`meta`: shape, dtype) is known without its array (`_m`, from
    the registry's meta rules); the base of `Lazy`."""

    __slots__ = ("_m",)

    def __init__(self, meta: TensorMeta):
        self._m = meta
        self._init_autograd()

    @property
    def meta(self) -> TensorMeta:
        return self._m

    @property
    def shape(self) -> Size:
        return Size(self._m.shape)

    @property
    def dtype(self):
        return self._m.dtype

    @property
    def ndim(self) -> int:
        return len(self._m.shape)

    def dim(self) -> int:
        return len(self._m.shape)

    def numel(self) -> int:
        return self._m.numel


class Lazy(MetaTensor):
    """A Tensor whose array is computed on first access of `_data`; shape/dtype are known
    without computing (from the registry's meta rules)."""

    __slots__ = ("_arr", "_thunk")

    def __init__(self, meta: TensorMeta, thunk):
        super().__init__(meta)
        self._thunk = thunk
        self._arr = None

    @property
    def _data(self):
        a = self._arr
        if a is None:
            a = self._arr = self._thunk()
            self._thunk = None
        return a


def _meta(x):
    return x.meta if isinstance(x, Tensor) else x


def _xp(arrays):
    for a in arrays:
        if type(a) is np.ndarray:
            return np
        if not isinstance(a, _NUMBERS):
            return namespace_of(a)
    return np


def _run(op: OpDef, inputs: tuple, attrs: dict, compute, out_dtype):
    def thunk():
        arrays = tuple(x._data if isinstance(x, Tensor) else x for x in inputs)
        xp = _xp(arrays)
        kernel = run_meta if xp is META_XP else run_kernel  # (meta: no data, no kernel)
        return kernel(xp, op, arrays, attrs, compute, out_dtype)

    return thunk


def shape_of(x) -> tuple:
    t = type(x)
    if t is Tensor:
        return x._data.shape
    if t is Lazy:
        return x._m.shape
    return tuple(x.shape)


def dtype_of(x):
    t = type(x)
    if t is Tensor:
        return D.from_numpy(x._data.dtype)
    if t is Lazy:
        return x._m.dtype
    return x.dtype


_NUMBERS = (bool, int, float, complex)


def _fast_eligible(op: OpDef) -> bool:
    return (op.kind == "elementwise" and op.decomp is None and op.attrs_rule is None
            and op.shape is None and not op.dynamic_shape and not op.variadic)


SMALL = 1 << 14  # elements: below this, computing an unneeded gradient costs less than laziness


def _fast(op: OpDef, inputs: tuple, attrs: dict, cache: dict):
    """Elementwise ops on CPU operands of one shape (and numbers): the dtype rule cached per
    operand dtypes, the shape is the operands'. Small results are computed at once (laziness
    costs more than the work). None: take the general way."""
    shape = None
    key = [tuple(attrs.values())] if attrs else []
    for x in inputs:
        t = type(x)
        if t is Tensor:
            a = x._data
            if type(a) is not np.ndarray:
                return None
            s, dt = a.shape, a.dtype
        elif t is Lazy:
            m = x._m
            if m.device != "cpu":
                return None
            s, dt = m.shape, m.dtype.np
        elif t in _NUMBERS:
            key.append(t)
            continue
        else:
            return None
        if shape is None:
            shape = s
        elif s != shape:
            return None
        key.append(dt)
    if shape is None:
        return None
    key = tuple(key)
    e = cache.get(key)
    if e is None:
        metas = tuple(x.meta if isinstance(x, Tensor) else x for x in inputs)
        compute, out_dtype = op.dtypes(metas, attrs)
        op.meta(metas, attrs)
        cnp = opmath(op, compute).np
        direct = all(k is cnp or k == cnp for k in key if isinstance(k, np.dtype))
        e = cache[key] = (compute, out_dtype, direct, out_dtype.np)
    compute, out_dtype, direct, onp = e
    n = 1
    for d in shape:
        n *= d
    if n <= SMALL:
        arrays = [x._data if isinstance(x, Tensor) else x for x in inputs]
        if direct:
            r = op.impl(np, *arrays, **attrs)
            if type(r) is not np.ndarray:
                r = np.asarray(r)
            if r.dtype != onp:
                r = r.astype(onp)
        else:
            r = run_kernel(np, op, arrays, attrs, compute, out_dtype)
        return wrap_array(r)
    return Lazy(TensorMeta(shape, out_dtype, "cpu"), _run(op, inputs, attrs, compute, out_dtype))


_FAST: dict = {}


def apply_lazy(op: OpDef, inputs: tuple, attrs: dict):
    """Check `op` on `inputs` through its meta rules now; compute its array when first read."""
    cache = _FAST.get(op.name)
    if cache is None:
        cache = _FAST[op.name] = {} if _fast_eligible(op) else False
    if cache is not False:
        r = _fast(op, inputs, attrs, cache)
        if r is not None:
            return r
    metas = tuple(_meta(x) for x in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    if op.decomp is not None:
        return op.decomp(LF, *inputs, **attrs)
    if op.dynamic_shape:  # the shape needs the data: compute now
        compute, out_dtype = op.dtypes(metas, attrs)
        arr = _run(op, inputs, attrs, compute, out_dtype)()
        return Tensor._make(arr)
    meta = op.meta(metas, attrs)
    compute, out_dtype = op.dtypes(metas, attrs)
    return Lazy(meta, _run(op, inputs, attrs, compute, out_dtype))


class _LazyNamespace:
    """`LF.mul(g, y)`: binds arguments like eager's functions (positional fast path) and calls
    `apply_lazy`. Callables are built once per op."""

    def __init__(self):
        self._cache: dict = {}

    def __getattr__(self, name: str):
        op = REGISTRY.get(name)
        if op is None:
            raise AttributeError(f"no op named {name!r} in the registry")
        fn = _make_call(op)
        setattr(self, name, fn)
        return fn


def _make_call(op: OpDef):
    defaults = {}
    simple = not op.variadic and op._varargs is None
    for p in op.params[op.nin:]:
        param = op.signature.parameters[p]
        if param.default is param.empty:
            simple = False
        defaults[p] = param.default
    nin = op.nin

    def call(*args, **kwargs):
        if simple and len(args) == nin:
            attrs = dict(defaults)
            if kwargs:
                for k, v in kwargs.items():
                    if k not in attrs:
                        inputs, attrs = op.bind(args, kwargs)
                        return apply_lazy(op, inputs, attrs)
                    attrs[k] = v
            return apply_lazy(op, args, attrs)
        inputs, attrs = op.bind(args, kwargs)
        return apply_lazy(op, inputs, attrs)

    call.__name__ = op.name
    return call


LF = _LazyNamespace()


def plain_grad(g):
    """A gradient leaving a node: a lazy result is computed and wrapped as a plain Tensor."""
    if isinstance(g, Tensor) and not g.requires_grad:
        return Tensor._make(g._data)
    return g


def added_arrays(a, b):
    """a + b as an array (numpy gives a scalar for two 0-d arrays)."""
    r = a + b
    return r if type(r) is np.ndarray or not isinstance(a, np.ndarray) else np.asarray(r)
