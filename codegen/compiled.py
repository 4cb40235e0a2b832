"""CompiledGraph: a graph's execution plan wired as one Python callable.

The plan (`steps`) is the partition's order: fused kernels, called through ctypes on numpy
buffers (inputs made C-contiguous, outputs allocated with `np.empty`), and library calls run
through `ir.interpreter` on numpy. Everything per call that can be decided at compile time is:
values live in a flat list of slots, each step is a closure over its slot indices, ctypes
function and output shapes, and a slot is dropped after its last reader so intermediate
buffers are freed early. Imports only `ir` and the other codegen modules.
"""

from __future__ import annotations

import numpy as np

from ir.graph import Node, map_arg
from ir.execute import apply_arrays, run_kernel
from ir.interpreter import Interpreter

from . import jit
from .kernel import Kernel, lower_group
from .llvm import render_kernel
from .partition import FusionGroup, LibraryCall, partition

STAGES = ("graph", "fusion", "kernels", "source", "llvm")


class CompiledGraph:
    """A graph compiled by the "llvm" backend; call it with one numpy array per placeholder.

    `kernels`: the fused `Kernel`s (`.name`, `.nodes`, `.llvm_ir` optimised, `.source_ir`);
    `steps`: the plan in order, `Kernel`s and `LibraryCall`s. Calling returns the graph's output
    tuple (arrays for Node outputs, Python constants as they are). Raises TypeError when an
    input's shape or dtype differs from its placeholder's.
    """

    backend = "llvm"

    def __init__(self, graph):
        self.graph = graph
        self.partition = partition(graph)
        self.kernels: list[Kernel] = []
        self.steps: list = []
        slot = {n: i for i, n in enumerate(graph.placeholders)}
        for n in graph.nodes:
            if n.op == "call_function":
                slot[n] = len(slot)
        self._nslots = len(slot)
        self._placeholders = [
            (p.name, tuple(p.meta["val"].shape), p.meta["val"].dtype.np)
            if p.meta.get("val") is not None else (p.name, None, None)
            for p in graph.placeholders
        ]
        out_vals = graph.output_node.args[0]
        self._output = _output_plan(out_vals, slot)
        keep = {slot[n] for n in _nodes_in(out_vals)}

        plans = []  # (step object, slots read, factory(free) -> runner)
        for step in self.partition.steps:
            if isinstance(step, FusionGroup):
                kernel = self._compile_kernel(step)
                plans.append((kernel, [slot[b.node] for b in kernel.inputs],
                              _kernel_factory(kernel, slot)))
            else:
                plans.append((step, [slot[n] for n in step.node.all_input_nodes],
                              _library_factory(step.node, slot)))

        last: dict = {}
        for i, (_, reads, _) in enumerate(plans):
            for s in reads:
                last[s] = i
        self._runners = []
        for i, (obj, _, factory) in enumerate(plans):
            free = tuple(s for s, j in last.items() if j == i and s not in keep)
            self.steps.append(obj)
            self._runners.append(factory(free))

    def _compile_kernel(self, group: FusionGroup) -> Kernel:
        names = list(dict.fromkeys(n.target.name for n in group.nodes))
        name = f"k{len(self.kernels)}_" + "_".join(names[:3])
        kernel = lower_group(group, name)
        argc = len(kernel.inputs) + len(kernel.outputs)
        fn = jit.compile_function(lambda sym: render_kernel(kernel, sym), name, argc)
        kernel.symbol, kernel.cfunc = fn.symbol, fn.cfunc
        kernel.llvm_ir, kernel.source_ir = fn.llvm_ir, fn.source_ir
        self.kernels.append(kernel)
        return kernel

    def __call__(self, *arrays) -> tuple:
        if len(arrays) != len(self._placeholders):
            names = ", ".join(p[0] for p in self._placeholders)
            raise TypeError(f"graph expects {len(self._placeholders)} inputs ({names}), "
                            f"got {len(arrays)}")
        env = [None] * self._nslots
        for i, (a, (name, shape, dtype)) in enumerate(zip(arrays, self._placeholders)):
            if not isinstance(a, np.ndarray):
                a = np.asarray(a)
            if shape is not None and (a.shape != shape or a.dtype != dtype):
                raise TypeError(f"graph input {name!r} expects an array of shape {shape} and "
                                f"dtype {dtype}, got shape {a.shape} and dtype {a.dtype}")
            env[i] = a
        for run in self._runners:
            run(env)
        return tuple(env[v] if is_slot else v for is_slot, v in self._output)

    def dump(self, stage: str) -> str:
        """Readable text of one stage: "graph", "fusion", "kernels", "source" or "llvm"."""
        if stage == "graph":
            return str(self.graph)
        if stage == "fusion":
            return self.partition.format()
        if stage == "kernels":
            return "\n\n".join(k.format() for k in self.kernels)
        if stage in ("llvm", "source"):
            attr = "llvm_ir" if stage == "llvm" else "source_ir"
            return "\n".join(f"; ---- kernel {k.name} ({k.symbol})\n{getattr(k, attr)}"
                             for k in self.kernels)
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")

    def __repr__(self) -> str:
        return (f"<CompiledGraph {self.graph.name}: {len(self.kernels)} kernel(s), "
                f"{len(self.steps)} step(s)>")


class EagerGraph:
    """The "eager" backend: the same interface, running the graph with `ir.Interpreter`."""

    backend = "eager"

    def __init__(self, graph):
        self.graph = graph
        self.kernels: list = []
        self.steps = [n for n in graph.nodes if n.op == "call_function"]
        self._interp = Interpreter(graph)

    def __call__(self, *arrays) -> tuple:
        return tuple(self._interp.run(*arrays))

    def dump(self, stage: str) -> str:
        if stage == "graph":
            return str(self.graph)
        if stage == "fusion":
            return "eager backend: no fusion; every node runs through ir.Interpreter\n" + str(
                self.graph)
        if stage in ("kernels", "source", "llvm"):
            return ""
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")


# ---------------------------------------------------------------- plan helpers


def _nodes_in(v) -> list:
    out = []
    map_arg(v, lambda n: out.append(n) or n)
    return out


def _output_plan(values, slot) -> tuple:
    return tuple((True, slot[v]) if isinstance(v, Node) else (False, v) for v in values)


def _kernel_factory(kernel: Kernel, slot):
    cfunc = kernel.cfunc
    ins = tuple(slot[b.node] for b in kernel.inputs)
    outs = tuple((slot[b.node], tuple(b.node.meta["val"].shape), b.dtype.np)
                 for b in kernel.outputs)

    def factory(free):
        def run(env):
            arrs = [env[s] for s in ins]
            for j, a in enumerate(arrs):
                if not a.flags.c_contiguous:
                    arrs[j] = np.ascontiguousarray(a)
            for s, shape, dtype in outs:
                o = np.empty(shape, dtype)
                env[s] = o
                arrs.append(o)
            cfunc(*[a.ctypes.data for a in arrs])
            for s in free:
                env[s] = None

        return run

    return factory


def _library_factory(node: Node, slot):
    op, kwargs = node.target, dict(node.kwargs)
    out_slot = slot[node]
    plain = all(isinstance(a, Node) or not isinstance(a, (tuple, list, dict)) for a in node.args)
    arg_plan = tuple((True, slot[a]) if isinstance(a, Node) else (False, a) for a in node.args)
    dtypes = None
    if op.decomp is None and op.impl is not None and plain:
        metas = tuple(a.meta.get("val") if isinstance(a, Node) else a for a in node.args)
        if all(m is not None for m in metas):
            dtypes = op.dtypes(metas, kwargs)

    def factory(free):
        if dtypes is not None:
            compute, result = dtypes

            def run(env):
                args = tuple(env[v] if is_slot else v for is_slot, v in arg_plan)
                env[out_slot] = run_kernel(np, op, args, kwargs, compute, result)
                for s in free:
                    env[s] = None
        else:
            def run(env):
                args = map_arg(node.args, lambda n: env[slot[n]])
                kw = map_arg(node.kwargs, lambda n: env[slot[n]])
                env[out_slot] = apply_arrays(np, op, args, kw)
                for s in free:
                    env[s] = None

        return run

    return factory


__all__ = ["STAGES", "CompiledGraph", "EagerGraph", "LibraryCall"]
