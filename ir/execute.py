"""Runs registry ops on arrays: the one path by which an op touches data.

`apply_arrays(xp, op, inputs, attrs)`: attributes canonicalised, operands cast to the op's
compute dtype, its `impl` (or, for composites, its `decomp`) run, and the result cast to the
result dtype. eager calls `run_kernel` for every op; the `Interpreter` calls `apply_arrays` for
every node; codegen calls them for the nodes it does not fuse. Imports only `ir`.

float16/bfloat16 arithmetic is computed in float32 and rounded back once, as PyTorch's CPU
kernels do (`opmath_type`). Floating-point exceptions (1/0, log(-1)) give inf/nan silently as
in PyTorch: a warnings filter for numpy's RuntimeWarnings raised from `ir` code replaces the
far slower `np.errstate` around every kernel.
"""

from __future__ import annotations

import warnings

import numpy as np

from . import dtypes as D
from .meta_array import META_XP, MetaArray
from .opdef import OpDef, OpNamespace, TensorMeta, is_number

warnings.filterwarnings("ignore", r"(divide by zero|invalid value|overflow|underflow) encountered",
                        RuntimeWarning, r"ir(\.|$)")

# kinds whose kernels move or select data without arithmetic: half types stay as they are
_DATA_MOVEMENT = frozenset({"view", "shape", "indexing", "creation"})
_NO_UPCAST = frozenset({"clone", "cast", "contiguous", "as_strided", "real", "imag",
                        "view_as_real", "view_as_complex", "conj"})


def device_of(a) -> str:
    """'cpu' for numpy arrays, 'cuda:N' for cupy arrays."""
    if isinstance(a, (np.ndarray, np.generic)):
        return "cpu"
    return f"cuda:{a.device.id}"


def array_meta(a) -> TensorMeta:
    return TensorMeta(tuple(a.shape), D.from_numpy(a.dtype), device_of(a))


def namespace_of(a):
    """The array namespace of `a`: numpy for numpy arrays, `META_XP` for meta arrays (whose
    kernel is `ir.meta_array.run_meta`), cupy (imported here, on first use) for anything
    else."""
    if isinstance(a, (np.ndarray, np.generic)):
        return np
    if type(a) is MetaArray:
        return META_XP
    import cupy

    return cupy


def opmath(op: OpDef, compute: D.DType) -> D.DType:
    """The dtype `op`'s kernel really runs in: float32 for half types in arithmetic ops."""
    if compute in D.HALF and op.kind not in _DATA_MOVEMENT and op.name not in _NO_UPCAST:
        return D.float32
    return compute


def run_kernel(xp, op: OpDef, inputs: tuple, attrs: dict, compute: D.DType, out: D.DType):
    """Run `op.impl` on arrays already checked by `op.meta`; returns an array of dtype `out`.

    Array operands from `op.promote_from` on are cast to the compute dtype (float32 for
    float16/bfloat16 arithmetic); Python ints are wrapped to narrow integer compute dtypes as
    PyTorch does (uint8 + 300 wraps).
    """
    cd = opmath(op, compute)
    cnp = cd.np
    narrow_int = cd.category == D.INTEGER and cd is not D.int64
    args = []
    for i, a in enumerate(inputs):
        if i < op.promote_from:
            args.append(a)
        elif is_number(a):
            if narrow_int and type(a) is int:
                a = xp.asarray(a).astype(cnp)
            args.append(a)
        elif a.dtype != cnp:
            args.append(a.astype(cnp))
        else:
            args.append(a)
    r = op.impl(xp, *args, **attrs)
    if not isinstance(r, xp.ndarray) and not isinstance(r, np.ndarray) and \
            getattr(r, "__cuda_array_interface__", None) is None and \
            type(r) is not MetaArray:  # (`_to_copy` moves devices, to meta too)
        r = xp.asarray(r)
    return r if r.dtype == out.np else r.astype(out.np)


class ArrayValue:
    """An array seen by a decomposition: `.shape`, `.ndim` and a wick `.dtype`, as eager
    Tensors and capture's values show them, so one `decomp` serves every layer."""

    __slots__ = ("array", "shape", "ndim", "dtype")

    def __init__(self, a):
        self.array, self.shape, self.ndim = a, tuple(a.shape), a.ndim
        self.dtype = D.from_numpy(a.dtype)

    def dim(self) -> int:
        return self.ndim

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return int(self.array.size)


def _wrap(x):
    if isinstance(x, (tuple, list)):
        return type(x)(_wrap(v) for v in x) if type(x) in (tuple, list) else \
            type(x)(*(_wrap(v) for v in x))
    return x if is_number(x) or x is None or isinstance(x, ArrayValue) else ArrayValue(x)


def _unwrap(x):
    if isinstance(x, ArrayValue):
        return x.array
    if isinstance(x, (tuple, list)):
        return type(x)(_unwrap(v) for v in x) if type(x) in (tuple, list) else \
            type(x)(*(_unwrap(v) for v in x))
    return x


def apply_arrays(xp, op: OpDef, inputs: tuple, attrs: dict):
    """Apply `op` to arrays and Python numbers, checking shapes/dtypes via the registry meta."""
    metas = tuple(x if is_number(x) else array_meta(x) for x in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    if op.decomp is not None:
        ns = OpNamespace(lambda o, i, a: _wrap(apply_arrays(xp, o, _unwrap(i), a)))
        return _unwrap(op.decomp(ns, *_wrap(tuple(inputs)), **attrs))
    if not op.dynamic_shape:
        op.meta(metas, attrs)
    compute, out = op.dtypes(metas, attrs)
    return run_kernel(xp, op, inputs, attrs, compute, out)
