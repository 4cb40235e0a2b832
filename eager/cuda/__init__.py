"""`eager.cuda` (`torch.cuda`): device queries, seeding, synchronization and memory figures
for wick's CUDA tensors (cupy arrays). Without a usable GPU, as PyTorch: `is_available()` is
False, `device_count()` 0, seeding functions are silently ignored, memory figures are 0 and
`empty_cache` does nothing; functions that need a device raise RuntimeError ("Found no NVIDIA
driver ..."). Wick draws random numbers for CUDA tensors from the default (host) generator
and moves them, so with a GPU `manual_seed`/`manual_seed_all` seed that generator and the RNG
state functions read and write it. Memory figures are cupy's default memory pool's
(`memory_allocated` = bytes in use, `memory_reserved` = bytes held; the max_* forms report
the pool's held bytes, an upper bound of the peak). Semantics: the torch.cuda documentation.
"""

from __future__ import annotations

from collections import namedtuple

from .. import random as _random
from ..device import cuda_is_available, cupy
from . import amp

__all__ = ["amp", "current_device", "device", "device_count", "empty_cache",
           "get_device_capability", "get_device_name", "get_device_properties",
           "get_rng_state", "get_rng_state_all", "init", "initial_seed", "is_available",
           "is_bf16_supported", "is_initialized", "manual_seed", "manual_seed_all",
           "max_memory_allocated", "max_memory_reserved", "mem_get_info", "memory_allocated",
           "memory_reserved", "reset_max_memory_allocated", "reset_peak_memory_stats", "seed",
           "seed_all", "set_device", "set_rng_state", "set_rng_state_all", "synchronize"]

_CudaDeviceProperties = namedtuple(
    "_CudaDeviceProperties", ["name", "major", "minor", "total_memory", "multi_processor_count"])


def is_available() -> bool:
    """Whether cupy is importable and sees a GPU."""
    return cuda_is_available()


def is_initialized() -> bool:
    return cuda_is_available()


def init() -> None:
    """Initialize CUDA; RuntimeError without a GPU."""
    cupy()


def device_count() -> int:
    return cupy().cuda.runtime.getDeviceCount() if cuda_is_available() else 0


def current_device() -> int:
    return cupy().cuda.runtime.getDevice()


def _index(dev) -> int:
    """A device argument (None, int, "cuda:i" or a device) as a CUDA device index."""
    if dev is None:
        return current_device()
    if isinstance(dev, int):
        return dev
    index = getattr(dev, "index", None) if not isinstance(dev, str) else (
        int(dev.split(":")[1]) if ":" in dev else None)
    return current_device() if index is None else int(index)


def set_device(dev) -> None:
    """Make `dev` the current CUDA device (a negative index does nothing, as PyTorch)."""
    i = _index(dev)
    if i >= 0:
        cupy().cuda.Device(i).use()


class device:
    """`with torch.cuda.device(i):` runs its body with CUDA device `i` current."""

    def __init__(self, dev):
        self.idx = -1 if dev is None else _index(dev)
        self.prev_idx = -1

    def __enter__(self):
        if self.idx >= 0:
            self.prev_idx = current_device()
            set_device(self.idx)
        return self

    def __exit__(self, *exc):
        if self.prev_idx >= 0:
            set_device(self.prev_idx)
        return False


def synchronize(device=None) -> None:
    """Wait for all work on `device` (default: the current one) to finish."""
    cp = cupy()
    with cp.cuda.Device(_index(device)):
        cp.cuda.Device().synchronize()


def empty_cache() -> None:
    """Release the unused blocks of cupy's memory pools (nothing without a GPU)."""
    if cuda_is_available():
        cp = cupy()
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()


def _pool_bytes(used: bool) -> int:
    if not cuda_is_available():
        return 0
    pool = cupy().get_default_memory_pool()
    return int(pool.used_bytes() if used else pool.total_bytes())


def memory_allocated(device=None) -> int:
    return _pool_bytes(True)


def max_memory_allocated(device=None) -> int:
    return _pool_bytes(False)


def memory_reserved(device=None) -> int:
    return _pool_bytes(False)


def max_memory_reserved(device=None) -> int:
    return _pool_bytes(False)


def reset_peak_memory_stats(device=None) -> None:
    """Nothing to reset (the max_* figures are the pool's held bytes)."""


reset_max_memory_allocated = reset_peak_memory_stats


def mem_get_info(device=None) -> tuple:
    """(free, total) bytes of the device."""
    cp = cupy()
    with cp.cuda.Device(_index(device)):
        free, total = cp.cuda.runtime.memGetInfo()
    return int(free), int(total)


def get_device_properties(device=None):
    """name, major, minor, total_memory, multi_processor_count of a CUDA device."""
    p = cupy().cuda.runtime.getDeviceProperties(_index(device))
    name = p["name"].decode() if isinstance(p["name"], bytes) else str(p["name"])
    return _CudaDeviceProperties(name, int(p["major"]), int(p["minor"]),
                                 int(p["totalGlobalMem"]), int(p["multiProcessorCount"]))


def get_device_name(device=None) -> str:
    return get_device_properties(device).name


def get_device_capability(device=None) -> tuple:
    p = get_device_properties(device)
    return p.major, p.minor


def is_bf16_supported(including_emulation: bool = True) -> bool:
    """Whether the current GPU has bfloat16 arithmetic (compute capability 8.0 or newer)."""
    return cuda_is_available() and get_device_capability()[0] >= 8


def manual_seed(seed) -> None:
    """Seed the generator CUDA tensors' draws come from (ignored without a GPU)."""
    if cuda_is_available():
        _random.manual_seed(seed)


manual_seed_all = manual_seed


def seed() -> None:
    if cuda_is_available():
        _random.seed()


seed_all = seed


def initial_seed() -> int:
    cupy()
    return _random.initial_seed()


def get_rng_state(device="cuda"):
    cupy()
    return _random.get_rng_state()


def set_rng_state(new_state, device="cuda") -> None:
    cupy()
    _random.set_rng_state(new_state)


def get_rng_state_all() -> list:
    return [get_rng_state() for _ in range(device_count())]


def set_rng_state_all(new_states) -> None:
    for state in new_states:
        set_rng_state(state)
