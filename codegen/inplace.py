"""Graph outputs written straight into an input's own array (a mutated input's new value).

Capture functionalizes `p.add_(...)` on a graph input: the graph computes the new value as an
output and the caller copies it into the input's array after the graph (`capture/writeback.py`).
`alias_inputs(cg, pairs)` lets a `CompiledGraph` store such an output into the input's array
itself, so the copy (and the fresh output buffer) disappears, when that is exact:

- the output is stored by a fused pointwise kernel (one phase, no reduction loops, no
  division check: a kernel that cannot fail once it started writing), with the input's shape
  and dtype, not also read through a view by a library step;
- that kernel reads the input only at the index it writes (the input's load has the output's
  strides): the loads become `load_out` of the output buffer (one pointer, still `noalias`,
  each element read before it is written in the same iteration), as Inductor's in-place
  buffer reuse of a mutated input;
- no later step reads the input (its old value), the input is not itself a graph output,
  no later step can raise (a library call: the caller reruns the frame eagerly on a failure,
  which must not see a half-applied update), and no other pair writes the same output.

The in-place kernels compile on a background thread (the steps run as compiled meanwhile). At
run time a kernel writes in place only when the input's array is a writeable, aligned,
C-contiguous numpy array; otherwise it runs as compiled (a fresh output): the caller copies
when the output is not the input's array (`out is not input`), so both cases are exact. The
caller keeps the write-back's other effects (version counter, mutation count). Disjointness
of the input from the other inputs is the caller's guard (`writeback.disjoint`). Imports
only numpy and the other codegen modules.
"""

from __future__ import annotations

import dataclasses
import logging

import numpy as np

from . import jit, threads
from .kernel import Kernel, Phase, Stmt

_log = logging.getLogger("wick")


def alias_inputs(cg, pairs) -> list:
    """Make compiled graph `cg` write output `k` into input `i`'s array for each safe
    `(i, k)` of `pairs` (placeholder index, output index); returns the pairs it took."""
    done = getattr(cg, "inplace_pairs", None)
    if done is not None:  # (once per graph: the hit may be built again)
        return [p for p in pairs if p in done]
    cg.inplace_pairs = taken = []
    outputs = cg.graph.output_node.args[0]
    counts: dict = {}
    for _, k in pairs:
        counts[k] = counts.get(k, 0) + 1
    by_step: dict = {}   # step index -> {output buffer index: placeholder slot}
    for i, k in pairs:
        o = outputs[k] if k < len(outputs) else None
        step = _safe(cg, i, o, counts[k])
        if step is not None:
            j = next(j for j, b in enumerate(cg.steps[step].outputs) if b.node is o)
            by_step.setdefault(step, {})[j] = i
            taken.append((i, k))
    if not by_step:
        return taken
    variants = {s: _variant(cg.steps[s], m, cg.graph.placeholders) for s, m in by_step.items()}
    pending = cg.inplace_pending = _compile_later([_job(v) for v in variants.values()])
    for n, (s, v) in enumerate(variants.items()):
        cg._runners[s] = _later(cg, s, v, by_step[s], pending, n)
    return taken


def wait(cg) -> None:
    """Block until `cg`'s in-place kernels are compiled (tests; calls never wait)."""
    p = getattr(cg, "inplace_pending", None)
    if p is not None:
        p._done.wait()


def _compile_later(jobs) -> jit.Pending:
    """`jit.compile_batch(jobs)` on a thread of its own (one LLVM module for all variants);
    with `WICK_COMPILE_THREADS=1`, before this returns. Until it is done the steps run as
    compiled (a fresh output, copied back by the caller): the first call waits for nothing."""
    import threading

    from . import emit

    pending = jit.Pending()

    def work():
        try:
            pending.result = jit.compile_batch(jobs)
        except BaseException as e:  # noqa: BLE001 (every step keeps its copy)
            pending.result = e
        finally:
            pending._done.set()

    if emit.threads_wanted() <= 1:
        work()
    else:
        threading.Thread(target=work, name="wick-jit-inplace").start()
    return pending


def _later(cg, step: int, v: Kernel, alias: dict, pending, n: int):
    """Step `step`'s runner while variant `v` (job `n` of `pending`) compiles: the compiled
    runner; once compiled, the in-place runner replaces this one."""
    fallback = cg._runners[step]

    def run(env):
        if pending.done():
            fns = pending.result
            fn = fns if isinstance(fns, BaseException) else fns[n]
            if isinstance(fn, BaseException):   # not compiled: the step keeps its copy
                _log.info("codegen: in-place variant of %s not compiled: %s: %s", v.name,
                          type(fn).__name__, fn)
                cg._runners[step] = fallback
            else:
                _attach(v, fn)
                cg._runners[step] = _runner(cg, step, v, alias, fallback)
            return cg._runners[step](env)
        return fallback(env)

    return run


def _safe(cg, i: int, o, count: int) -> int | None:
    """The index of the step that can store output node `o` into placeholder `i`'s array, or
    None (see the module docstring)."""
    from .compiled import LibraryCall  # (compiled imports this module)

    if o is None or count != 1 or not hasattr(o, "op") or o.op != "call_function":
        return None
    ph = cg.graph.placeholders[i]
    pv, ov = ph.meta.get("val"), o.meta.get("val")
    if pv is None or ov is None or tuple(pv.shape) != tuple(ov.shape) or pv.dtype is not ov.dtype:
        return None
    if any(u.op == "call_function" and u.target.kind == "view" for u in o.users):
        return None
    ph_slot = cg._slot[ph]
    if ph_slot in cg._keep:   # the input itself is returned: its old value is needed
        return None
    step = next((s for s, k in enumerate(cg.steps) if isinstance(k, Kernel) and
                 any(b.node is o for b in k.outputs)), None)
    if step is None:
        return None
    k = cg.steps[step]
    if k.rloops or k.accs or len(k.phases) != 1 or k.epilogue or k.epi_stores or \
            k.checks_div or k.numel == 0 or k.col_block:
        return None
    out = next(b for b in k.outputs if b.node is o)
    if out.dtype is not pv.dtype:
        return None
    if any(b.node is ph and (b.strides != out.strides or b.dtype is not out.dtype)
           for b in k.inputs):
        return None   # read at another index (a view, a broadcast) or as another dtype
    views = _views(cg, ph_slot, step)
    if views & cg._keep or views & set(cg._reads[step]):
        return None   # a view of the input is returned, or read by the writing kernel
    views.add(ph_slot)
    for later in range(step + 1, len(cg.steps)):
        if isinstance(cg.steps[later], LibraryCall):
            return None   # may raise after the write (the frame then reruns eagerly)
        if views & set(cg._reads[later]):
            return None   # reads the old value after the write
    return step


def _views(cg, ph_slot: int, step: int) -> set:
    """Slots of the values library steps before `step` computed from the input (its
    views, as `ndarray.reshape` may return): conservatively every library result reading
    the input or one of them."""
    from .compiled import LibraryCall

    found: set = set()
    for s in range(step):
        st = cg.steps[s]
        if isinstance(st, LibraryCall) and ({ph_slot} | found) & set(cg._reads[s]):
            found.add(cg._slot[st.node])
    return found


def _variant(kernel: Kernel, alias: dict, placeholders) -> Kernel:
    """`kernel` with the loads of each aliased input turned into loads of its output buffer
    (`alias`: {output buffer index: placeholder index}), the input dropped from its arguments."""
    phs = {placeholders[i]: j for j, i in alias.items()}
    drop = {n: phs[b.node] for n, b in enumerate(kernel.inputs) if b.node in phs}
    keep = [n for n in range(len(kernel.inputs)) if n not in drop]
    renum = {old: new for new, old in enumerate(keep)}

    def fix(st):
        if st.op != "load":
            return st
        n = st.attrs["input"]
        if n in drop:
            return Stmt(st.out, "load_out", (), {"output": drop[n]})
        return Stmt(st.out, "load", st.args, {**st.attrs, "input": renum[n]})

    ph = kernel.phases[0]
    v = dataclasses.replace(
        kernel, name=kernel.name + "_inplace", inputs=[kernel.inputs[n] for n in keep],
        phases=[Phase([fix(s) for s in ph.body], list(ph.accs), list(ph.stores))],
        llvm_ir="", source_ir="", symbol="", cfunc=None, address=0)
    v.group = kernel.group
    return v


def _job(kernel):
    from .compiled import _job as job

    return job(kernel)


def _attach(kernel, fn) -> None:
    from .compiled import _attach as attach

    attach(kernel, fn)


def _runner(cg, step: int, v: Kernel, alias: dict, fallback):
    """The step's runner: `v` with each aliased output stored into its input's array, or
    `fallback` (the step's compiled runner) when an input's array cannot take the write in
    place."""
    from .compiled import _DATA_OFFSET

    slot = cg._slot
    free = cg._frees[step]
    ins = tuple(slot[b.node] for b in v.inputs)
    ph_slot = {j: slot[cg.graph.placeholders[i]] for j, i in alias.items()}
    outs = tuple((slot[b.node], ph_slot.get(j), tuple(b.shape), b.dtype.np)
                 for j, b in enumerate(v.outputs))
    targets = tuple(ph_slot.values())
    work = max(v.numel, 1)
    n_outer = v.outer[0][1] if v.outer else 1
    split = work >= threads.MIN_PARALLEL and n_outer >= 2
    argc = len(v.inputs) + len(v.outputs)
    tramp = None if _DATA_OFFSET is None else jit.trampoline(argc, _DATA_OFFSET)
    addr, ndarray, empty = v.address, np.ndarray, np.empty

    def run(env):
        arrs = [env[s] for s in ins]
        for a in arrs:
            if type(a) is not ndarray or not a.flags.c_contiguous:
                return fallback(env)
        for s in targets:
            f = env[s].flags
            if type(env[s]) is not ndarray or not (f.c_contiguous and f.writeable and
                                                   f.aligned):
                return fallback(env)
        for s, src, shape, dtype in outs:
            o = env[s] = env[src] if src is not None else empty(shape, dtype)
            arrs.append(o)
        if tramp is None:
            threads.run(v.cfunc, [a.ctypes.data for a in arrs], n_outer, work)
        elif split:
            threads.run(tramp, [addr, *arrs], n_outer, work)
        else:
            tramp(addr, *arrs, 0, n_outer)
        for s in free:
            env[s] = None

    return run
