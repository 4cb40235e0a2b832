"""Object code for a batch of kernels, optimised and emitted on several threads at once.

Most of a graph's first call is LLVM's O3 pipeline and code generator (about 5 ms of CPU per
kernel). llvmlite serialises every call into LLVM behind one process-wide lock (its calls share
the global context), but LLVM compiles modules of distinct `LLVMContext`s on distinct threads
safely (ORC's concurrent compilation does that) and ctypes releases the GIL during a call. So
`emit_parts(st, parts)` compiles each part (a list of IR module texts) into one object on a
thread of its own: the part is parsed into its own context and linked into one module, and its
two long calls, the pass pipeline and code generation, are made with a target machine of that
thread's own through llvmlite's raw ctypes functions around its lock; everything else goes
through llvmlite as usual. `split(sizes, n)` balances texts over at most n parts.
`WICK_COMPILE_THREADS` sets the number of threads (default: the CPUs this process may run on,
at most 4); with 1, or an llvmlite without those raw functions, everything runs on the calling
thread through llvmlite's locked API (`jit.optimize_many`). `cost(text)` estimates a kernel's
compile time for `split`. Imports only llvmlite.
"""

from __future__ import annotations

import ctypes
import os
import threading

import llvmlite.binding as llvm
from llvmlite.binding import ffi

_pool_lock = threading.Lock()
_free_tms: list = []   # target machines of finished workers (never freed: cheap, reused)


def _raw(name: str):
    """llvmlite's ctypes function `name` without its lock, or None."""
    try:
        return getattr(getattr(ffi.lib, name), "_cfn", None)
    except AttributeError:
        return None


_RUN = _raw("LLVMPY_RunNewModulePassManager")
_EMIT = _raw("LLVMPY_TargetMachineEmitToMemory")


def threads_wanted() -> int:
    """How many threads a batch may be compiled on (`WICK_COMPILE_THREADS`, see above)."""
    env = os.environ.get("WICK_COMPILE_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        n = int(env)
    else:
        try:
            n = min(len(os.sched_getaffinity(0)), 4)
        except (AttributeError, OSError):
            n = min(os.cpu_count() or 1, 4)
    return n if _RUN is not None and _EMIT is not None else 1


def cost(text: str) -> int:
    """The relative cost of compiling the kernel of IR `text`: a constant (about 5 ms) plus a
    part that grows with its size (about 2 ms per 1000 characters), measured on the kernels
    of the issue-14 models."""
    return len(text) + 2500


def split(sizes: list, n: int) -> list:
    """Indices of `sizes` in at most `n` parts of about equal total size (largest first, each
    to the lightest part), each part in ascending order; no empty part."""
    n = max(1, min(n, len(sizes)))
    parts: list = [[] for _ in range(n)]
    load = [0] * n
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        j = load.index(min(load))
        parts[j].append(i)
        load[j] += sizes[i]
    return [sorted(p) for p in parts if p]


def pipeline(tm):
    """(tuning options, pass builder) of the O3 pipeline, vectorizers on, for `tm`."""
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = True
    pto.slp_vectorization = True
    pto.loop_unrolling = True
    return pto, llvm.create_pass_builder(tm, pto)


def _compile_part(texts: list, tm) -> tuple:
    """(object code, optimised IR) of `texts` linked into one module of a fresh context."""
    ctx = llvm.create_context()
    mod = llvm.parse_assembly(texts[0], ctx)
    try:
        for text in texts[1:]:
            mod.link_in(llvm.parse_assembly(text, ctx))
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        pto, pb = pipeline(tm)
        mpm = pb.getModulePassManager()
        _RUN(mpm, mod, pb)
        opt_ir = str(mod)
        with ffi.OutputString() as err:
            mb = _EMIT(tm, mod, 1, err)
            if not mb:
                raise RuntimeError(str(err))
        try:
            obj = ctypes.string_at(ffi.lib.LLVMPY_GetBufferStart(mb),
                                   ffi.lib.LLVMPY_GetBufferSize(mb))
        finally:
            ffi.lib.LLVMPY_DisposeMemoryBuffer(mb)
        del mpm, pb, pto
        return obj, opt_ir
    finally:
        mod.close()
        del ctx


def _worker(st: dict, texts: list, out: list, i: int) -> None:
    with _pool_lock:
        tm = _free_tms.pop() if _free_tms else None
    if tm is None:
        tm = st["target"].create_target_machine(cpu=st["cpu"], features=st["features"], opt=3)
    try:
        out[i] = _compile_part(texts, tm)
    except BaseException as e:  # noqa: BLE001 (re-raised by the caller)
        out[i] = e
    finally:
        with _pool_lock:
            _free_tms.append(tm)


def emit_parts(st: dict, parts: list, optimize_many) -> list:
    """[(object code, optimised IR)] per part of IR texts: one part on the calling thread with
    `optimize_many(texts)` and the JIT's target machine `st["tm"]`, several on threads of
    their own. Raises the first part's error if any part fails."""
    if len(parts) == 1 or _RUN is None or _EMIT is None:
        out = []
        for texts in parts:
            mod = optimize_many(texts)
            out.append((st["tm"].emit_object(mod), str(mod)))
        return out
    out: list = [None] * len(parts)
    workers = [threading.Thread(target=_worker, args=(st, texts, out, i), daemon=True,
                                name="wick-llvm") for i, texts in enumerate(parts[1:], 1)]
    for w in workers:
        w.start()
    _worker(st, parts[0], out, 0)
    for w in workers:
        w.join()
    for r in out:
        if isinstance(r, BaseException):
            raise r
    return out
