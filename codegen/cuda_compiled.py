"""CudaGraph: a graph's plan of CUDA kernels and cupy library calls, wired as one callable.

Same graph passes, partition (`partition(graph, "cuda")`) and kernel IR as the "llvm" backend
(`codegen.compiled`); only the printer (`codegen.cuda_render`) and the launcher differ.
Building a `CudaGraph` renders every kernel into one CUDA module without touching cupy, so it
works (and `dump("cuda")` works) on a machine with no GPU; the first call imports cupy,
compiles the module with NVRTC through `cupy.RawModule` (cached per process by a hash of the
source and the device's compute capability; cupy also caches on disk), and builds the
runners. A call takes cupy arrays (inputs read in place; a kernel is specialised once per
layout of transposed, sliced or broadcast views), allocates outputs with `cupy.empty`, launches
each kernel with a grid from the device's SM count (the 4-wide vector variant when the
pointers are 16-byte aligned), and runs what is not fused (matmul, sort...) through
`ir.execute` with `xp=cupy`. Nothing is copied between host and device: numpy inputs are
refused with TypeError, outputs stay `cupy.ndarray`; the one exception is a kernel with an
integer fmod/remainder/floordiv (`CudaSource.checks_div`): it gets a zeroed 1-element flag
and the launcher reads it back after the launch (a synchronisation), raising PyTorch's and
eager's RuntimeError("ZeroDivisionError") when a divisor was 0, before any output is handed
back (as the "llvm" backend does); other kernels launch without any read-back. No fast-math options: results match
eager's (cupy) to rounding. Imports only `ir` and the other codegen modules (cupy lazily).
"""

from __future__ import annotations

import hashlib

from .compiled import (
    _free_lists,
    _library_factory,
    _slot_plan,
    check_arity,
    check_input,
    element_strides,
    kernel_name,
)
from .cuda_render import CudaSource, module_source, render
from .kernel import Kernel, lower_group
from .partition import FusionGroup, LibraryCall, partition
from .passes import decompose

STAGES = ("graph", "fusion", "kernels", "cuda", "source", "ptx")
OPTIONS = ("--std=c++17",)

_modules: dict = {}       # (sha256 of source, compute capability) -> cupy.RawModule
_sms: dict = {}           # device id -> multiprocessor count
stats = {"compiled": 0, "memory_hits": 0}


def _cupy():
    try:
        import cupy
    except ImportError as e:
        raise RuntimeError("the cuda backend needs cupy to run kernels (pip install "
                           f"cupy-cuda12x or cupy-cuda13x): {e}") from None
    return cupy


def load_module(source: str):
    """The `cupy.RawModule` of `source` for the current device (compiled once per process
    per source and compute capability)."""
    cp = _cupy()
    dev = cp.cuda.Device()
    key = (hashlib.sha256(source.encode()).hexdigest(), dev.compute_capability)
    mod = _modules.get(key)
    if mod is None:
        mod = _modules[key] = cp.RawModule(code=source, options=OPTIONS)
        stats["compiled"] += 1
    else:
        stats["memory_hits"] += 1
    return mod


def sm_count() -> int:
    """Multiprocessors of the current device (cached)."""
    cp = _cupy()
    dev = cp.cuda.Device()
    n = _sms.get(dev.id)
    if n is None:
        n = _sms[dev.id] = int(dev.attributes["MultiProcessorCount"])
    return n


class CudaGraph:
    """A graph compiled by the "cuda" backend; call it with one cupy array per placeholder.

    `kernels`: the fused `Kernel`s; `sources`: their `CudaSource`s (schedule, launches);
    `source`: the CUDA module text; `steps`: the plan in order (`Kernel`s and `LibraryCall`s).
    Calling returns the graph's output tuple (cupy arrays for Node outputs, Python constants as
    they are). Raises TypeError when an input is not a cupy array or its shape or dtype differs
    from its placeholder's; RuntimeError when cupy (or a GPU) is missing, and
    RuntimeError("ZeroDivisionError") for an integer division, floor division, remainder or
    fmod by zero (as eager and PyTorch on the CPU do).
    """

    backend = "cuda"

    def __init__(self, graph):
        graph = decompose(graph)
        self.graph = graph
        self.partition = partition(graph, "cuda")
        self.kernels: list[Kernel] = []
        self.sources: list[CudaSource] = []
        self.steps: list = []
        self.fallbacks: list = []
        slot, self._placeholders, self._output, self._keep = _slot_plan(graph)
        self._slot = slot
        self._nslots = len(slot)
        for step in self.partition.steps:
            if isinstance(step, FusionGroup):
                try:
                    kernel, src = self._lower(step)
                except Exception as e:  # noqa: BLE001 (never crash: run it as eager does)
                    self.fallbacks.append((step, f"{type(e).__name__}: {e}"))
                    for n in step.nodes:
                        self.steps.append(LibraryCall(step.id, n, f"kernel not lowered ({e})"))
                    continue
                self.kernels.append(kernel)
                self.sources.append(src)
                self.steps.append(kernel)
            else:
                self.steps.append(step)
        self.source = module_source(self.sources)
        self._runners = None
        self._variants: dict = {}

    def _lower(self, group: FusionGroup, strides_of=None, name=None):
        if name is None:
            name = kernel_name(group, len(self.kernels))
        kernel = lower_group(group, name, strides_of)
        kernel.group = group
        return kernel, render(kernel)

    # ---- running

    def _build(self):
        cp = _cupy()
        mod = load_module(self.source)
        plans = []
        for step in self.steps:
            if isinstance(step, Kernel):
                plans.append(([self._slot[b.node] for b in step.inputs],
                              self._kernel_factory(step, mod, cp)))
            else:
                n = step.node
                plans.append(([self._slot[a] for a in n.all_input_nodes],
                              _library_factory(n, self._slot, cp)))
        frees = _free_lists([reads for reads, _ in plans], self._keep)
        self._runners = [factory(free) for (_, factory), free in zip(plans, frees)]

    def _kernel_factory(self, kernel: Kernel, mod, cp):
        src = self.sources[self.kernels.index(kernel)]
        ins = tuple(self._slot[b.node] for b in kernel.inputs)
        in_nodes = tuple(b.node for b in kernel.inputs)
        outs = tuple((self._slot[b.node], tuple(b.node.meta["val"].shape), b.dtype.np)
                     for b in kernel.outputs)
        skip = kernel.outer_numel == 0 or (kernel.numel == 0 and not kernel.accs)
        variants: dict = {}

        sms = sm_count()

        def compiled(source: CudaSource, module):
            """([(cupy function, grid, block)] in order, the vector variant's launch or None,
            indices of the buffers it needs 16-byte aligned, scratch bytes, whether the
            functions take the division-by-zero flag)."""
            fns = [(module.get_function(ln.func), (ln.grid_for(sms),), (ln.block,))
                   for ln in source.launches]
            vec, aligned = None, ()
            if source.vector is not None:
                ln = source.vector
                names = [b.name for b in source.kernel.inputs + source.kernel.outputs]
                aligned = tuple(names.index(a) for a in source.aligned)
                vec = [(module.get_function(ln.func), (ln.grid_for(sms),), (ln.block,))]
            return fns, vec, aligned, source.scratch_bytes, source.checks_div

        base = compiled(src, mod)

        def layout(arrs):
            """The kernel for these input layouts (specialised once per layout of views)."""
            key = tuple(a.strides for a in arrs)
            v = variants.get(key)
            if v is None:
                strides = element_strides(in_nodes, arrs)
                if strides is None:
                    return None
                _, s = self._lower(kernel.group, strides.get, kernel.name + "_v")
                v = variants[key] = compiled(s, load_module(module_source([s])))
            return v

        def factory(free):
            def run(env):
                arrs = [env[s] for s in ins]
                plan = base
                if not all(a.flags.c_contiguous for a in arrs):
                    plan = layout(arrs)
                    if plan is None:   # strides not in whole elements: a device copy
                        arrs = [cp.ascontiguousarray(a) for a in arrs]
                        plan = base
                for s, shape, dtype in outs:
                    o = cp.empty(shape, dtype)
                    env[s] = o
                    arrs.append(o)
                if not skip:
                    fns, vec, aligned, scratch, check = plan
                    if scratch:
                        arrs.append(cp.empty(scratch, cp.uint8))
                    if check:
                        err = cp.zeros(1, cp.uint32)
                        arrs.append(err)
                    if vec is not None and all(arrs[i].data.ptr % 16 == 0 for i in aligned):
                        fns = vec
                    args = tuple(arrs)
                    for fn, grid, block in fns:
                        fn(grid, block, args)
                    if check and int(err[0]):   # reads the flag back: synchronises
                        raise RuntimeError("ZeroDivisionError")
                for s in free:
                    env[s] = None

            return run

        return factory

    def __call__(self, *arrays) -> tuple:
        check_arity(arrays, self._placeholders)
        if self._runners is None:
            self._build()
        env = [None] * self._nslots
        for i, (a, (name, shape, dtype)) in enumerate(zip(arrays, self._placeholders)):
            if not hasattr(a, "data") or not hasattr(a.data, "ptr"):
                raise TypeError(f"graph input {name!r} expects a cuda array (cupy.ndarray), "
                                f"got {type(a).__name__}: move it to the GPU first")
            check_input(a, name, shape, dtype)
            env[i] = a
        for run in self._runners:
            run(env)
        return tuple(env[v] if is_slot else v for is_slot, v in self._output)

    # ---- dumps

    def dump(self, stage: str) -> str:
        """Readable text of one stage: "graph", "fusion", "kernels", "cuda" (the module source;
        "source" is the same), "ptx" (NVRTC's PTX for compute_90; needs cuda-bindings) or
        "llvm" (empty: no LLVM on this backend)."""
        if stage == "graph":
            return str(self.graph)
        if stage == "fusion":
            text = self.partition.format()
            for src in self.sources:
                launches = ", ".join(f"{ln.func}<<<{ln.grid or 'SMs'}, {ln.block}>>>"
                                     for ln in src.launches)
                text += f"\n{src.kernel.name}: {src.schedule} ({launches})"
            for step, why in self.fallbacks:
                text += f"\nstep {step.id}: not lowered, runs node by node: {why}"
            return text
        if stage == "kernels":
            return "\n\n".join(k.format() for k in self.kernels)
        if stage in ("cuda", "source"):
            return self.source
        if stage == "ptx":
            from .nvrtc import compile_ptx

            return compile_ptx(self.source)
        if stage == "llvm":
            return ""
        raise ValueError(f"unknown stage {stage!r}; expected one of {', '.join(STAGES)}")

    def __repr__(self) -> str:
        return (f"<CudaGraph {self.graph.name}: {len(self.kernels)} kernel(s), "
                f"{len(self.steps)} step(s)>")


__all__ = ["STAGES", "CudaGraph", "load_module", "sm_count", "stats"]
