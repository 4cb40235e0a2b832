"""Library steps of a compiled graph run by hand-written LLVM kernels (direct kernels: the
convolutions of `conv_kernels`, the plane gathers of `plane_kernels`) in place of the op's
numpy impl: one compile per kernel text, queued for one background worker thread; the
library impl's runner until it is ready (so a graph's first call never waits for LLVM) and
for good where the compile failed. Imports only codegen's emit and jit.
"""

from __future__ import annotations

import threading

from . import emit, jit

_kernels: dict = {}   # key -> jit.Pending of its compile
_lock = threading.Lock()
_queue: list = []     # (job, pending) not yet compiled
_worker: list = []    # the live worker thread, if any


def start(key, render, name: str, argc: int) -> jit.Pending:
    """The compile of `render(symbol) -> LLVM IR` (argc pointer arguments and the task range
    lo, hi) under `key`, queued on first sight for one worker thread that compiles the
    queue in order once `kick`ed (a thread per kernel made eight LLVM compiles race the
    graph's own on two cores); with `WICK_COMPILE_THREADS=1`, compiled before this
    returns."""
    with _lock:
        pending = _kernels.get(key)
        if pending is not None:
            return pending
        pending = _kernels[key] = jit.Pending()
        if emit.threads_wanted() > 1:
            _queue.append(((render, name, argc), pending))
            return pending
    _compile((render, name, argc), pending)
    return pending


def kick() -> None:
    """Start the worker on the queued kernels (on a step's first run, not when its graph is
    compiled: the graph's own kernels compile first, without a thread racing them)."""
    with _lock:
        if _queue and not _worker:
            _worker.append(threading.Thread(target=_work, name="wick-direct-jit"))
            _worker[0].start()


def _compile(job, pending: jit.Pending) -> None:
    try:
        pending.result = jit.compile_batch([job])[0]
    except BaseException as e:  # noqa: BLE001 (handed to the caller)
        pending.result = e
    finally:
        pending._done.set()


def _work() -> None:
    """Compile queued kernels until the queue is empty (not a daemon: the interpreter waits
    for it at exit)."""
    while True:
        with _lock:
            if not _queue:
                _worker.clear()
                return
            job, pending = _queue.pop(0)
        _compile(job, pending)


def wait(pending: jit.Pending):
    """The compiled kernel's ctypes function, waiting for its compile."""
    kick()
    pending._done.wait()
    if isinstance(pending.result, Exception):
        raise pending.result
    return pending.result.cfunc


def factory(pending: jit.Pending, library, out: int, ins: tuple, fn):
    """A `CompiledGraph` step factory: `env[out] = fn(kernel, *env[ins])` once `pending` is
    compiled, the `library` factory's runner until then."""

    def make(free):
        fallback = library(free)
        state = [None]

        def run(env):
            kernel = state[0]
            if kernel is None:
                if not pending.done() or isinstance(pending.result, Exception):
                    kick()
                    return fallback(env)
                kernel = state[0] = pending.result.cfunc
            env[out] = fn(kernel, *[env[i] for i in ins])
            for s in free:
                env[s] = None
        return run

    return make
