"""Library steps of a compiled graph run by hand-written LLVM kernels (direct kernels: the
convolutions of `conv_kernels`, the plane gathers of `plane_kernels`) in place of the op's
numpy impl: one compile per kernel text on a background thread (`jit.compile_later`), the
library impl's runner until it is ready (so a graph's first call never waits for LLVM) and
for good where the compile failed. Imports only codegen's jit.
"""

from __future__ import annotations

import threading

from . import jit

_kernels: dict = {}   # key -> jit.Pending of its compile
_lock = threading.Lock()


def start(key, render, name: str, argc: int) -> jit.Pending:
    """The compile of `render(symbol) -> LLVM IR` (argc pointer arguments and the task range
    lo, hi) under `key`, started on first sight."""
    with _lock:
        pending = _kernels.get(key)
        if pending is None:
            pending = _kernels[key] = jit.compile_later((render, name, argc))
    return pending


def wait(pending: jit.Pending):
    """The compiled kernel's ctypes function, waiting for its compile."""
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
                    return fallback(env)
                kernel = state[0] = pending.result.cfunc
            env[out] = fn(kernel, *[env[i] for i in ins])
            for s in free:
                env[s] = None
        return run

    return make
