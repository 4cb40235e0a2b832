"""Runs registry ops on arrays, and whole graphs node by node (torch.fx's Interpreter).

`apply_arrays(xp, op, inputs, attrs)` is the one path by which an op runs on data: attributes
are canonicalised, operands cast to the op's compute dtype, its `impl` (or, for composites, its
`decomp`) run, and the result cast to the result dtype. eager calls it for every op; the
`Interpreter` calls it for every node; codegen calls it for the nodes it does not fuse.
"""

from __future__ import annotations

import numpy as np

from . import dtypes as D
from .graph import Graph, Node, map_arg
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


class Interpreter:
    """Run a Graph on arrays, node by node; override `call_function` etc. to customise."""

    def __init__(self, graph: Graph):
        self.graph = graph

    def run(self, *args):
        ph = self.graph.placeholders
        if len(args) != len(ph):
            raise TypeError(f"graph expects {len(ph)} inputs ({', '.join(p.name for p in ph)}), "
                            f"got {len(args)}")
        env: dict[Node, object] = {}
        it = iter(args)
        for node in self.graph.nodes:
            if node.op == "placeholder":
                env[node] = self.placeholder(node, next(it))
                continue
            args_ = map_arg(node.args, env.__getitem__)
            kwargs = map_arg(node.kwargs, env.__getitem__)
            if node.op == "output":
                return args_[0]
            env[node] = getattr(self, node.op)(node.target, args_, kwargs)
        raise RuntimeError("graph has no output node")

    def placeholder(self, node: Node, value):
        want = node.val
        if want is not None and hasattr(value, "shape"):
            got = array_meta(value)
            if got.shape != want.shape or got.dtype is not want.dtype:
                raise TypeError(f"graph input {node.name!r} expects {want}, got {got}")
        return value

    def call_function(self, op: OpDef, args, kwargs):
        xp = next((namespace_of(a) for a in args if not is_number(a)), np)
        return apply_arrays(xp, op, args, kwargs)
