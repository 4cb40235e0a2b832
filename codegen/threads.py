"""A persistent thread pool that splits one kernel's outer loop across cores.

Kernels are ctypes calls, which release the GIL, so plain Python threads run chunks of one
kernel in parallel (CODEGEN.md, "Threads": 1.7-1.9x on 2 cores). A dispatch costs tens of
microseconds when a core is free and up to milliseconds when it is not (the woken worker
waits for a core and the GIL), so only kernels of at least `MIN_PARALLEL` elements (2^20: a
memory-bound kernel of that size takes ~100 us on one core) with at least two outer
iterations are split; smaller ones run inline on the calling thread. (On a loaded 2-core
machine, splitting 2^16-2^18 element adds took 29-55 us against 7-32 us inline, and the
transformer LM step of benchmarks/bench_compile_models.py waited longer for workers than its
kernels ran.) The caller runs its own chunk, then every chunk no worker has started yet (its
future is cancelled), so a late worker never makes it wait. `WICK_NUM_THREADS` overrides the
thread count (default: the CPUs this process may use, looked up once).
Imports nothing of ours.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

MIN_PARALLEL = 1 << 20

_pool: list = []
_lock = threading.Lock()
_cpus: list = []


def num_threads() -> int:
    env = os.environ.get("WICK_NUM_THREADS")
    if env:
        return max(1, int(env))
    if not _cpus:
        try:
            _cpus.append(max(1, len(os.sched_getaffinity(0))))
        except AttributeError:
            _cpus.append(os.cpu_count() or 1)
    return _cpus[0]


def _executor(n: int) -> ThreadPoolExecutor:
    with _lock:
        if not _pool:
            _pool.append(ThreadPoolExecutor(max_workers=max(1, n - 1),
                                            thread_name_prefix="wick-kernel"))
        return _pool[0]


def run(cfunc, ptrs: list, n_outer: int, work: int) -> None:
    """Call `cfunc(*ptrs, lo, hi)` over [0, n_outer), split into chunks when `work` (elements
    touched) is large enough."""
    if n_outer < 2 or work < MIN_PARALLEL:
        cfunc(*ptrs, 0, n_outer)
        return
    n = num_threads()
    if n < 2:
        cfunc(*ptrs, 0, n_outer)
        return
    n = min(n, n_outer)
    bounds = [n_outer * k // n for k in range(n + 1)]
    ex = _executor(n)
    futs = [ex.submit(cfunc, *ptrs, bounds[k], bounds[k + 1]) for k in range(1, n)]
    cfunc(*ptrs, bounds[0], bounds[1])
    for k, f in enumerate(futs, 1):
        if f.cancel():   # no worker took it yet (a loaded machine): run it here, not wait
            cfunc(*ptrs, bounds[k], bounds[k + 1])
        else:
            f.result()
