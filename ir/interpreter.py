"""Runs a Graph node by node on arrays (torch.fx's Interpreter): each node through
`ir.execute.apply_arrays`, overridable per node kind. Imports only `ir`."""

from __future__ import annotations

import numpy as np

from .execute import apply_arrays, array_meta, namespace_of, run_kernel  # noqa: F401
from .graph import Graph, Node, map_arg
from .opdef import is_number


class Interpreter:
    """Run a Graph (or a GraphModule's graph) on numpy/cupy arrays, node by node.

    `run(*args)` returns the output tuple. As in torch.fx, `run_node(n)` calls
    `getattr(self, n.op)(n.target, args, kwargs)`; override `placeholder`, `get_attr`,
    `call_function` or `output` to customise one kind of node (`self.current_node` is the node
    being run). Raises TypeError naming the placeholder for inputs of the wrong count, shape or
    dtype.
    """

    def __init__(self, module, garbage_collect_values: bool = True):
        if isinstance(module, Graph):
            self.graph, self.module = module, module.owning_module
        else:
            self.graph, self.module = module.graph, module
        self.garbage_collect_values = garbage_collect_values
        self.current_node: Node | None = None
        self.env: dict[Node, object] = {}

    def run(self, *args):
        ph = self.graph.placeholders
        if len(args) != len(ph):
            raise TypeError(f"graph expects {len(ph)} inputs ({', '.join(p.name for p in ph)}), "
                            f"got {len(args)}")
        saved = self.env, getattr(self, "args_iter", None), self.current_node  # re-entrancy
        self.args_iter = iter(args)
        self.env = env = {}
        try:
            for node, dead in self._schedule():
                value = self.run_node(node)
                if node.op == "output":
                    return value
                env[node] = value
                for d in dead:
                    del env[d]
        finally:
            self.env, self.args_iter, self.current_node = saved
        raise RuntimeError("graph has no output node")

    def _schedule(self) -> list:
        """(node, values dead after it) in order; cached until the graph changes."""
        key = (self.graph._version, self.garbage_collect_values)
        if getattr(self, "_schedule_key", None) != key:
            last: dict[Node, Node] = {}
            nodes = list(self.graph.nodes)
            for node in nodes:
                for a in node.all_input_nodes:
                    last[a] = node
            dead: dict[Node, list] = {n: [] for n in nodes}
            if self.garbage_collect_values:
                for value, user in last.items():
                    dead[user].append(value)
            self._schedule_list = [(n, tuple(dead[n])) for n in nodes]
            self._schedule_key = key
        return self._schedule_list

    def fetch_args_kwargs_from_env(self, n: Node) -> tuple:
        env = self.env
        args = tuple(env[a] if isinstance(a, Node) else
                     map_arg(a, env.__getitem__) if isinstance(a, (tuple, list, dict)) else a
                     for a in n.args)
        kwargs = map_arg(n.kwargs, env.__getitem__) if n.kwargs else {}
        return args, kwargs

    def run_node(self, n: Node):
        self.current_node = n
        args, kwargs = self.fetch_args_kwargs_from_env(n)
        return getattr(self, n.op)(n.target, args, kwargs)

    # ---- one method per node kind (torch.fx signatures)

    def placeholder(self, target: str, args, kwargs):
        value = next(self.args_iter)
        want = self.current_node.val
        if want is None:
            return value
        if not hasattr(value, "shape") or not hasattr(value, "dtype"):
            raise TypeError(f"graph input {target!r} expects an array {want}, got "
                            f"{type(value).__name__}")
        try:
            got = array_meta(value)
        except TypeError as e:
            raise TypeError(f"graph input {target!r} expects {want}: {e}") from None
        if got.shape != want.shape or got.dtype is not want.dtype:
            raise TypeError(f"graph input {target!r} expects {want}, got {got}")
        return value

    def get_attr(self, target: str, args, kwargs):
        if self.module is None:
            raise RuntimeError(f"get_attr {target!r}: the graph has no owning GraphModule "
                               "holding its attributes")
        value = self.module.get_attr(target)
        if not isinstance(value, np.ndarray) and hasattr(value, "__array__") \
                and not hasattr(value, "__cuda_array_interface__"):
            value = np.asarray(value)
        return value

    def call_function(self, target, args, kwargs):
        xp = next((namespace_of(a) for a in args if not is_number(a)), np)
        return apply_arrays(xp, target, args, kwargs)

    def output(self, target, args, kwargs):
        return args[0]
