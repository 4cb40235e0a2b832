"""Library steps of a compiled graph run by hand-written LLVM kernels (direct kernels: the
convolutions of `conv_kernels`, the plane gathers of `plane_kernels`) in place of the op's
numpy impl: one compile per kernel text, queued for one background worker thread; the
library impl's runner on a graph's first run (so the first call never waits for LLVM), the
kernel from the second run on (waiting for its compile there: deterministic, never chosen by
timing), and the library's for good where the compile failed. Imports only codegen's emit and jit.
"""

from __future__ import annotations

import threading

from . import emit, jit

_kernels: dict = {}   # key -> jit.Pending of its compile
_lock = threading.Lock()
_queue: list = []     # (job, pending) not yet compiled
_worker: list = []    # the live worker thread, if any
_FAILED = object()    # (a step's kernel whose compile raised)


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
    """A `CompiledGraph` step factory: `env[out] = fn(kernel, *env[ins])`, except on the
    graph's first run, which runs the `library` factory's runner while the kernel compiles in
    the background. From the second run on the kernel runs, waited for if its compile is not
    done: which impl a call uses depends on the call's position only, never on timing, so
    repeated runs of a program give the same numbers (the kernel's sums run in another order
    than the library's). Where the compile failed, the library runner for good."""

    def make(free):
        fallback = library(free)
        state = [None, False]  # (the kernel once taken, whether the first run is done)

        def run(env):
            kernel = state[0]
            if kernel is None:
                if not state[1]:
                    state[1] = True
                    kick()
                    return fallback(env)
                try:
                    kernel = state[0] = wait(pending)
                except Exception:  # noqa: BLE001 (the compile failed: the library impl runs)
                    kernel = state[0] = _FAILED
            if kernel is _FAILED:
                return fallback(env)
            env[out] = fn(kernel, *[env[i] for i in ins])
            for s in free:
                env[s] = None
        return run

    return make
