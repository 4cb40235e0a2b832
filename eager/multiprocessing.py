"""`eager.multiprocessing` (`torch.multiprocessing`): Python's `multiprocessing` (every name
re-exported: Process, Queue, Pool, get_context, set_start_method...) plus PyTorch's `spawn`
and sharing-strategy functions, and tensors in shared memory: `Tensor.share_memory_()` moves a
CPU tensor's data into an anonymous shared mapping (`is_shared()` then True), so processes
forked afterwards (the default start method on Linux) read and write the same numbers -
Hogwild training with `model.share_memory()` works as in PyTorch. Limits: a view taken before
`share_memory_()` keeps the old memory; with the "spawn"/"forkserver" start methods tensors
are pickled by value (PyTorch passes shared memory handles). CUDA tensors are left as they
are. Semantics: the torch.multiprocessing documentation.
"""

from __future__ import annotations

import mmap
import multiprocessing as _mp
from multiprocessing import *  # noqa: F401,F403  (torch.multiprocessing re-exports it)

import numpy as np

_STRATEGY = ["file_descriptor"]


def get_all_sharing_strategies() -> set:
    return {"file_descriptor", "file_system"}


def get_sharing_strategy() -> str:
    return _STRATEGY[0]


def set_sharing_strategy(new_strategy: str) -> None:
    """Record the strategy (wick shares through anonymous mappings either way)."""
    if new_strategy not in get_all_sharing_strategies():
        raise AssertionError(f"invalid sharing strategy {new_strategy!r}")
    _STRATEGY[0] = new_strategy


def _is_shared_array(a) -> bool:
    while isinstance(a, np.ndarray):
        a = a.base
    if isinstance(a, memoryview):
        a = a.obj
    return isinstance(a, mmap.mmap)


def share_memory_(self):
    """Move this CPU tensor's data into shared memory (in place; a no-op when already shared
    or on CUDA); returns self."""
    a = self._data
    if type(a) is not np.ndarray or _is_shared_array(a):
        return self
    buf = mmap.mmap(-1, max(a.nbytes, 1))
    shared = np.frombuffer(buf, dtype=a.dtype, count=a.size).reshape(a.shape)
    shared[...] = a
    self._data = shared
    return self


def is_shared(self) -> bool:
    """Whether the tensor's data lives in shared memory."""
    return _is_shared_array(self._data)


class ProcessContext:
    """The processes started by `spawn(join=False)`: `join(timeout=None)` waits and returns
    True when all have exited; ProcessExitedException-like RuntimeError on a failure."""

    def __init__(self, processes):
        self.processes = processes

    def pids(self) -> list:
        return [p.pid for p in self.processes]

    def join(self, timeout=None) -> bool:
        for p in self.processes:
            p.join(timeout)
        for i, p in enumerate(self.processes):
            if p.exitcode not in (None, 0):
                raise RuntimeError(f"process {i} terminated with exit code {p.exitcode}")
        return all(p.exitcode is not None for p in self.processes)


def start_processes(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """Run `fn(i, *args)` for i in range(nprocs), each in a new process."""
    ctx = _mp.get_context(start_method)
    procs = [ctx.Process(target=fn, args=(i,) + tuple(args), daemon=daemon)
             for i in range(nprocs)]
    for p in procs:
        p.start()
    context = ProcessContext(procs)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(fn, args=(), nprocs=1, join=True, daemon=False, start_method="spawn"):
    """`torch.multiprocessing.spawn`: `start_processes` with PyTorch's defaults."""
    return start_processes(fn, args, nprocs, join, daemon, start_method)


def install(tensor_cls, module_cls) -> None:
    """Tensor.share_memory_/is_shared and Module.share_memory."""
    tensor_cls.share_memory_ = share_memory_
    tensor_cls.is_shared = is_shared

    def share_memory(self):
        """Move every parameter and buffer into shared memory (`Module.share_memory`)."""
        for t in list(self.parameters()) + list(self.buffers()):
            t.share_memory_()
        return self
    module_cls.share_memory = share_memory
