"""CompiledGraph: a graph's execution plan wired as one Python callable.

The plan (`steps`) is the partition's order: fused kernels, called through ctypes on numpy
buffers (inputs read in place with their real strides: a kernel is specialised, once per
layout, for inputs that are transposed, sliced or broadcast views; outputs allocated with
`np.empty` once per call; large kernels split across the thread pool), and library calls run
the op's impl on numpy (through `ir.execute` where operands need casts; views of a known shape
as `ndarray.reshape`). The graph first goes through `passes` (decompositions, slice-adjoint
sums as `cat`). Everything per call that can be decided at compile time is:
values live in a flat list of slots, each step is a closure over its slot indices, ctypes
function and output shapes, and a slot is dropped after its last reader so intermediate
buffers are freed early. A group that cannot be lowered (a formula numpy rejects for these
dtypes) runs node by node as library calls, so the error surfaces exactly as in eager.
Kernels are called through `jit.trampoline` on the arrays themselves (no `a.ctypes.data`),
and `run_unchecked` skips the input checks of `__call__` for callers whose guards already
hold them (capture's compiled entries): a call of a small one-kernel graph costs a few us.
Imports only `ir` and the other codegen modules.
"""

from __future__ import annotations

import ctypes
import logging
import operator

import numpy as np

from ir import dtypes as D
from ir.execute import apply_arrays, opmath, run_kernel
from ir.graph import Node, map_arg
from ir.interpreter import Interpreter
from ir.opdef import TensorMeta, is_number
from ir.passes import cse

from . import conv_kernels, jit, plane_kernels, threads
from .kernel import Kernel, lower_group
from .kernel_key import structural_key
from .partition import FusionGroup, LibraryCall, partition
from .passes import cat_slice_adjoints, decompose
from .render import render_kernel

_log = logging.getLogger("wick")

STAGES = ("graph", "fusion", "kernels", "source", "llvm", "cuda")


class CompiledGraph:
    """A graph compiled by the "llvm" backend; call it with one numpy array per placeholder.

    `kernels`: the fused `Kernel`s (`.name`, `.nodes`, `.llvm_ir` optimised, `.source_ir`);
    `steps`: the plan in order, `Kernel`s and `LibraryCall`s. Calling returns the graph's output
    tuple (arrays for Node outputs, Python constants as they are). Raises TypeError when an
    input's shape or dtype differs from its placeholder's.
    """

    backend = "llvm"

    def __init__(self, graph):
        expanded = decompose(graph)
        if expanded is not graph:  # a copy: its decompositions may repeat each other (a
            cse(expanded, grad_mode=False)  # graph run here is not differentiated again)
        graph = cat_slice_adjoints(expanded)
        self.graph = graph
        self.partition = partition(graph)
        self.kernels: list[Kernel] = []
        self.steps: list = []
        slot, self._placeholders, self._output, keep = _slot_plan(graph)
        self._nslots = len(slot)

        plans = []  # (step object, slots read, factory(free) -> runner)
        self.fallbacks: list = []
        built = iter(self._compile_kernels(
            [s for s in self.partition.steps if isinstance(s, FusionGroup)]))
        for step in self.partition.steps:
            if isinstance(step, FusionGroup):
                kernel = e = next(built)
                if isinstance(e, Exception):
                    # never crash: run the group node by node (eager raises or computes the same)
                    self.fallbacks.append((step, f"{type(e).__name__}: {e}"))
                    _log.info("codegen: step %s of %s runs node by node: %s: %s", step.id,
                              graph.name, type(e).__name__, e)
                    for n in step.nodes:
                        lib = LibraryCall(step.id, n, f"kernel not lowered ({e})")
                        plans.append((lib, [slot[a] for a in n.all_input_nodes],
                                      _library_factory(n, slot)))
                    continue
                plans.append((kernel, [slot[b.node] for b in kernel.inputs],
                              _kernel_factory(kernel, slot, self)))
            else:
                plans.append((step, [slot[n] for n in step.node.all_input_nodes],
                              _library_factory(step.node, slot)))

        self._runners = []
        self._slot, self._keep = slot, keep   # (for `inplace.alias_inputs`)
        self._reads = [r for _, r, _ in plans]
        self._frees = _free_lists(self._reads, keep)
        for (obj, _, factory), free in zip(plans, self._frees):
            self.steps.append(obj)
            self._runners.append(factory(free))
        self._pad = [None] * (self._nslots - len(self._placeholders))
        self._result = _result_fn(self._output)

    def _compile_kernels(self, groups) -> list:
        """Lower every group and JIT-compile the kernels as one batch (`jit.compile_batch`:
        one LLVM module) with their trampolines; per group, its Kernel or the Exception that
        stopped it (lowering, rendering or compiling)."""
        out: list = []
        lowered: list = []   # (index in out, kernel)
        for group in groups:
            try:
                kernel = lower_group(group, kernel_name(group, len(lowered)))
            except Exception as e:  # noqa: BLE001 (the caller runs the group node by node)
                out.append(e)
                continue
            kernel.group = group
            lowered.append((len(out), kernel))
            out.append(kernel)
        fns = jit.compile_batch([_job(k) for _, k in lowered])
        for (i, kernel), fn in zip(lowered, fns):
            if isinstance(fn, Exception):
                out[i] = fn
            else:
                _attach(kernel, fn)
                self.kernels.append(kernel)
        if _DATA_OFFSET is not None and self.kernels:
            jit.trampolines([_argc(k) for k in self.kernels], _DATA_OFFSET)
        return out

    def _compile_kernel(self, group: FusionGroup, strides_of=None, name=None) -> Kernel:
        kernel = lower_group(group, name, strides_of)
        kernel.group = group
        (fn,) = jit.compile_batch([_job(kernel)])
        if isinstance(fn, Exception):
            raise fn
        _attach(kernel, fn)
        return kernel

    def specialise(self, kernel: Kernel, strides: dict) -> Kernel:
        """The kernel compiled for inputs with element `strides` {node: strides} (views)."""
        return self._compile_kernel(kernel.group, strides.get, kernel.name + "_v")

    def specialise_later(self, kernel: Kernel, strides: dict) -> tuple:
        """`specialise` with the compile off the caller's thread (a layout met while the graph
        runs need not stop it): (the kernel lowered for `strides`, its `jit.Pending`)."""
        variant = lower_group(kernel.group, kernel.name + "_v", strides.get)
        variant.group = kernel.group
        return variant, jit.compile_later(_job(variant))

    def alias_inputs(self, pairs) -> list:
        """Store output `k` into input `i`'s own array for each `(i, k)` of `pairs` where
        that is exact (`codegen.inplace`: a mutated input's new value); the pairs taken."""
        from .inplace import alias_inputs

        return alias_inputs(self, pairs)

    def __call__(self, *arrays) -> tuple:
        check_arity(arrays, self._placeholders)
        env = [None] * self._nslots
        for i, (a, (name, shape, dtype)) in enumerate(zip(arrays, self._placeholders)):
            if not isinstance(a, np.ndarray):
                a = np.asarray(a)
            check_input(a, name, shape, dtype)
            env[i] = a
        for run in self._runners:
            run(env)
        return self._result(env)

    def run_unchecked(self, *arrays) -> tuple:
        """`__call__` without its checks: exactly one numpy array of the placeholder's shape
        and dtype per placeholder (capture's guards ensure that)."""
        env = [*arrays, *self._pad]
        for run in self._runners:
            run(env)
        return self._result(env)

    def dump(self, stage: str) -> str:
        """Readable text of one stage: "graph", "fusion", "kernels", "source", "llvm" or
        "cuda" (the same kernels rendered as CUDA C by `codegen.cuda_render`)."""
        if stage == "graph":
            return str(self.graph)
        if stage == "cuda":
            from .cuda_render import module_source, render

            return module_source([render(k) for k in self.kernels])
        if stage == "fusion":
            text = self.partition.format()
            for step, why in self.fallbacks:
                text += f"\nstep {step.id}: not lowered, runs node by node: {why}"
            return text
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
        if stage in ("kernels", "source", "llvm", "cuda"):
            return ""
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")


# ---------------------------------------------------------------- plan helpers


def _nodes_in(v) -> list:
    out = []
    map_arg(v, lambda n: out.append(n) or n)
    return out


def _output_plan(values, slot) -> tuple:
    return tuple((True, slot[v]) if isinstance(v, Node) else (False, v) for v in values)


def _slot_plan(graph) -> tuple:
    """(slot: {node: index in the flat value list} for placeholders then call_function nodes,
    placeholders: [(name, shape, numpy dtype)] (None, None without a "val"), the output plan,
    the slots of the outputs: never freed)."""
    slot = {n: i for i, n in enumerate(graph.placeholders)}
    for n in graph.nodes:
        if n.op == "call_function":
            slot[n] = len(slot)
    placeholders = [
        (p.name, tuple(p.meta["val"].shape), p.meta["val"].dtype.np)
        if p.meta.get("val") is not None else (p.name, None, None)
        for p in graph.placeholders
    ]
    out_vals = graph.output_node.args[0]
    return slot, placeholders, _output_plan(out_vals, slot), {slot[n] for n in _nodes_in(out_vals)}


def _free_lists(reads: list, keep) -> list:
    """For each step of a plan, given the slots each step reads: the slots it reads last (not
    in `keep`), which its runner drops after it runs."""
    last: dict = {}
    for i, slots in enumerate(reads):
        for s in slots:
            last[s] = i
    return [tuple(s for s, j in last.items() if j == i and s not in keep)
            for i in range(len(reads))]


def _argc(kernel: Kernel) -> int:
    """The number of pointer arguments of `kernel`'s function."""
    return len(kernel.inputs) + len(kernel.outputs) + kernel.checks_div


def _job(kernel: Kernel) -> tuple:
    """`kernel` as a job of `jit.compile_batch`: its renderer, name, argc and structural key."""
    return (lambda sym: render_kernel(kernel, sym), kernel.name, _argc(kernel),
            structural_key(kernel))


def _attach(kernel: Kernel, fn) -> None:
    """Store the compiled function `fn` (a `jit.JitFunction`) on `kernel`."""
    kernel.symbol, kernel.cfunc, kernel.address = fn.symbol, fn.cfunc, fn.address
    kernel.llvm_ir, kernel.source_ir = fn.llvm_ir, fn.source_ir


def kernel_name(group: FusionGroup, index: int) -> str:
    """`k{index}_` and the names of the group's first three distinct ops."""
    names = list(dict.fromkeys(n.target.name for n in group.nodes))
    return f"k{index}_" + "_".join(names[:3])


def element_strides(nodes, arrays) -> dict | None:
    """{input node: its array's strides in elements}, or None when a stride is not a whole
    number of elements (the kernel cannot read it in place)."""
    strides = {}
    for n, a in zip(nodes, arrays):
        if any(s % a.itemsize for s in a.strides):
            return None
        strides[n] = tuple(s // a.itemsize for s in a.strides)
    return strides


def check_arity(arrays, placeholders) -> None:
    """TypeError unless there is one input per placeholder."""
    if len(arrays) != len(placeholders):
        names = ", ".join(p[0] for p in placeholders)
        raise TypeError(f"graph expects {len(placeholders)} inputs ({names}), "
                        f"got {len(arrays)}")


def check_input(a, name: str, shape, dtype) -> None:
    """TypeError when input `a` of placeholder `name` has another shape or dtype."""
    if shape is not None and (a.shape != shape or a.dtype != dtype):
        raise TypeError(f"graph input {name!r} expects an array of shape {shape} and "
                        f"dtype {dtype}, got shape {a.shape} and dtype {a.dtype}")


def _result_fn(output: tuple):
    """env -> the output tuple, with the cheapest callable for the common shapes."""
    if output and all(is_slot for is_slot, _ in output):
        slots = [v for _, v in output]
        if len(slots) == 1:
            s0 = slots[0]
            return lambda env: (env[s0],)
        return operator.itemgetter(*slots)
    return lambda env: tuple(env[v] if is_slot else v for is_slot, v in output)


def _data_offset() -> int | None:
    """Where numpy keeps an ndarray's data pointer in the object (PyArrayObject.data, right
    after the object header), checked on live arrays; None if not found."""
    off = 2 * ctypes.sizeof(ctypes.c_void_p)
    for a in (np.empty(3, np.float32), np.zeros((2, 5), np.int64)[1:]):
        if ctypes.c_void_p.from_address(id(a) + off).value != a.ctypes.data:
            return None
    return off


_DATA_OFFSET = _data_offset()


def _kernel_factory(kernel: Kernel, slot, cg: CompiledGraph):
    ins = tuple(slot[b.node] for b in kernel.inputs)
    in_nodes = tuple(b.node for b in kernel.inputs)
    outs = tuple((slot[b.node], tuple(b.node.meta["val"].shape), b.dtype.np)
                 for b in kernel.outputs)
    variants: dict = {}
    skip = kernel.outer_numel == 0 or (kernel.numel == 0 and not kernel.accs)
    work = max(kernel.numel, 1)
    check = kernel.checks_div
    argc = len(ins) + len(outs) + check
    tramp = None if _DATA_OFFSET is None else jit.trampoline(argc, _DATA_OFFSET)
    n_outer = kernel.outer[0][1] if kernel.outer else 1
    split = work >= threads.MIN_PARALLEL and n_outer >= 2
    ndarray, empty = np.ndarray, np.empty

    def layout(arrs):
        """The kernel for these input layouts (specialised once per layout of views)."""
        key = tuple(a.strides for a in arrs)
        k = variants.get(key)
        if k is None:
            strides = element_strides(in_nodes, arrs)
            if strides is None:
                return None
            try:   # compiled off this thread: the inputs are copied until it is ready
                k = variants[key] = cg.specialise_later(kernel, strides)
            except Exception as e:  # noqa: BLE001 (not lowered: copy instead)
                k = variants[key] = e
        if type(k) is tuple:
            variant, pending = k
            if not pending.done():
                return None
            k = pending.result
            if not isinstance(k, Exception):
                _attach(variant, k)
                k = variant
        if isinstance(k, Exception):   # e.g. UnresolvedSymbolError: copy instead
            _log.info("codegen: %s not specialised for strides %s: %s: %s", kernel.name,
                      key, type(k).__name__, k)
            k = False
        variants[key] = k
        return None if k is False else k

    def general(env, free):
        arrs = [env[s] for s in ins]
        k = kernel
        if not all(type(a) is ndarray for a in arrs):
            arrs = [np.asarray(a) for a in arrs]
        if not all(a.flags.c_contiguous for a in arrs):
            k = layout(arrs)
            if k is None:  # misaligned strides: copy
                arrs = [np.ascontiguousarray(a) for a in arrs]
                k = kernel
        for s, shape, dtype in outs:
            o = np.empty(shape, dtype)
            env[s] = o
            arrs.append(o)
        if not skip:
            flag = None
            if check:
                flag = np.zeros(1, np.uint8)
                arrs.append(flag)
            no = k.outer[0][1] if k.outer else 1
            if tramp is not None:
                threads.run(tramp, [k.address, *arrs], no, work)
            else:
                threads.run(k.cfunc, [a.ctypes.data for a in arrs], no, work)
            if check and flag[0]:
                raise RuntimeError("ZeroDivisionError")
        for s in free:
            env[s] = None

    def factory(free):
        if tramp is None or skip or check or split:
            return lambda env: general(env, free)
        addr = kernel.address
        if len(ins) == 1 and len(outs) == 1:   # the common small case, unrolled
            (i0,), ((o0, shape0, dtype0),) = ins, outs

            def run1(env):
                a = env[i0]
                if type(a) is not ndarray or not a.flags.c_contiguous:
                    return general(env, free)
                o = env[o0] = empty(shape0, dtype0)
                tramp(addr, a, o, 0, n_outer)
                for s in free:
                    env[s] = None

            return run1

        def run(env):
            arrs = [env[s] for s in ins]
            for a in arrs:
                if type(a) is not ndarray or not a.flags.c_contiguous:
                    return general(env, free)
            for s, shape, dtype in outs:
                o = env[s] = empty(shape, dtype)
                arrs.append(o)
            tramp(addr, *arrs, 0, n_outer)
            for s in free:
                env[s] = None

        return run

    return factory


def _library_factory(node: Node, slot, xp=np):
    factory = _op_factory(node, slot, xp)
    if xp is np:  # convolutions and plane gathers as direct LLVM kernels where they apply
        factory = conv_kernels.direct_factory(node, slot, factory)
        factory = plane_kernels.direct_factory(node, slot, factory)
        factory = plane_kernels.pool_factory(node, slot, factory)
        factory = plane_kernels.row_factory(node, slot, factory)
    return factory


def _op_factory(node: Node, slot, xp):
    op, kwargs = node.target, dict(node.kwargs)
    out_slot = slot[node]
    plain = all(isinstance(a, Node) or not isinstance(a, (tuple, list, dict)) for a in node.args)
    arg_plan = tuple((True, slot[a]) if isinstance(a, Node) else (False, a) for a in node.args)
    dtypes = metas = None
    if op.decomp is None and op.impl is not None and plain:
        metas = tuple(a.meta.get("val") if isinstance(a, Node) else a for a in node.args)
        if all(m is not None for m in metas):
            dtypes = op.dtypes(metas, kwargs)
    direct = xp is np and dtypes is not None and _casts_nothing(op, metas, dtypes[0])

    def factory(free):
        if direct:
            return _direct_runner(node, arg_plan, out_slot, free, dtypes[1].np)
        if dtypes is not None:
            compute, result = dtypes

            def run(env):
                args = tuple(env[v] if is_slot else v for is_slot, v in arg_plan)
                env[out_slot] = run_kernel(xp, op, args, kwargs, compute, result)
                for s in free:
                    env[s] = None
        else:
            def run(env):
                args = map_arg(node.args, lambda n: env[slot[n]])
                kw = map_arg(node.kwargs, lambda n: env[slot[n]])
                env[out_slot] = apply_arrays(xp, op, args, kw)
                for s in free:
                    env[s] = None

        return run

    return factory


_RESHAPES = frozenset({"reshape", "unsqueeze", "squeeze", "flatten"})


def _casts_nothing(op, metas, compute) -> bool:
    """Whether `run_kernel` would pass every operand of `op` to its impl as it is: array
    operands already in the (opmath) compute dtype, no Python int to wrap."""
    cd = opmath(op, compute)
    for i, m in enumerate(metas):
        if i < op.promote_from:
            continue
        if isinstance(m, TensorMeta):
            if m.dtype.np != cd.np:
                return False
        elif is_number(m) and cd.category == D.INTEGER and cd is not D.int64:
            return False
    return True


def _direct_runner(node: Node, arg_plan, out_slot: int, free, out_np):
    """A library step that calls the op's impl itself (`run_kernel` without its per-call cast
    checks, decided here). A reshape-like view of a known shape is `ndarray.reshape`: a view of
    contiguous data costs ~0.3 us, not the ~3 us of a checked library call."""
    op, kwargs = node.target, dict(node.kwargs)
    if op.name in _RESHAPES and len(arg_plan) == 1 and arg_plan[0][0] and \
            node.meta.get("val") is not None:
        (_, i0), shape = arg_plan[0], tuple(node.meta["val"].shape)

        def reshape(env):
            env[out_slot] = env[i0].reshape(shape)
            for s in free:
                env[s] = None

        return reshape
    impl, ndarray, asarray = op.impl, np.ndarray, np.asarray

    def run(env):
        r = impl(np, *[env[v] if is_slot else v for is_slot, v in arg_plan], **kwargs)
        if type(r) is not ndarray:
            r = asarray(r)
        env[out_slot] = r if r.dtype == out_np else r.astype(out_np)
        for s in free:
            env[s] = None

    return run


__all__ = ["STAGES", "CompiledGraph", "EagerGraph", "LibraryCall"]
