"""Runs registry ops on arrays: the one path by which an op touches data.

`apply_arrays(xp, op, inputs, attrs)`: attributes canonicalised, operands cast to the op's
compute dtype, its `impl` (or, for composites, its `decomp`) run, and the result cast to the
result dtype. eager calls `run_kernel` for every op; the `Interpreter` calls `apply_arrays` for
every node; codegen calls them for the nodes it does not fuse. Imports only `ir`.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .opdef import OpDef, OpNamespace, TensorMeta, is_number


def array_meta(a) -> TensorMeta:
    device = "cpu" if isinstance(a, (np.ndarray, np.generic)) else "cuda"
    return TensorMeta(tuple(a.shape), D.from_numpy(a.dtype), device)


def namespace_of(a):
    if isinstance(a, (np.ndarray, np.generic)):
        return np
    import cupy

    return cupy


def run_kernel(xp, op: OpDef, inputs: tuple, attrs: dict, compute: D.DType, out: D.DType):
    """Run `op.impl` on arrays already checked by `op.meta`; returns an array of dtype `out`."""
    args = [
        a if (i < op.promote_from or is_number(a) or a.dtype == compute.np)
        else a.astype(compute.np)
        for i, a in enumerate(inputs)
    ]
    with np.errstate(all="ignore"):
        r = op.impl(xp, *args, **attrs)
    r = xp.asarray(r)
    return r if r.dtype == out.np else r.astype(out.np)


def apply_arrays(xp, op: OpDef, inputs: tuple, attrs: dict):
    """Apply `op` to arrays and Python numbers, checking shapes/dtypes via the registry meta."""
    metas = tuple(x if is_number(x) else array_meta(x) for x in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    if op.decomp is not None:
        return op.decomp(OpNamespace(lambda o, i, a: apply_arrays(xp, o, i, a)), *inputs, **attrs)
    op.meta(metas, attrs)
    compute, out = op.dtypes(metas, attrs)
    return run_kernel(xp, op, inputs, attrs, compute, out)


