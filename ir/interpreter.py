"""Runs a Graph node by node on arrays (torch.fx's Interpreter): each node through
`ir.execute.apply_arrays`, overridable per node kind."""

from __future__ import annotations

import numpy as np

from .execute import apply_arrays, array_meta, namespace_of, run_kernel  # noqa: F401
from .graph import Graph, Node, map_arg
from .opdef import OpDef, is_number


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
