"""`eager.autograd.profiler` (`torch.autograd.profiler`): the legacy spelling of
`eager.profiler` - `profile(enabled=True, use_cuda=False, record_shapes=False, ...)`,
`record_function`, and `emit_nvtx` / `emit_itt` (no-op ranges: wick emits no NVTX/ITT)."""

from __future__ import annotations

import contextlib

from ..profiler import EventList, FunctionEvent, FunctionEventAvg, profile, record_function

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "emit_itt", "emit_nvtx",
           "profile", "record_function"]


@contextlib.contextmanager
def emit_nvtx(enabled=True, record_shapes=False):
    yield


@contextlib.contextmanager
def emit_itt(enabled=True, record_shapes=False):
    yield
