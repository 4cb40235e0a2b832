"""`torch.cpu`: the CPU device module (the counterpart of `torch.cuda` for code that is generic
over device modules, `torch.get_device_module`). wick's CPU work is numpy's, synchronous."""

from __future__ import annotations

from contextlib import nullcontext


def is_available() -> bool:
    """Always True."""
    return True


def is_initialized() -> bool:
    return True


def device_count() -> int:
    """One CPU device."""
    return 1


def current_device() -> str:
    """`torch.cpu.current_device()`: "cpu"."""
    return "cpu"


def set_device(device) -> None:
    """Accepted and ignored (one CPU device), as PyTorch."""


def synchronize(device=None) -> None:
    """Nothing to wait for: CPU kernels run synchronously."""


class Stream:
    """`torch.cpu.Stream`: a no-op stream (CPU work is ordered)."""

    def __init__(self, priority: int = -1):
        self.priority = priority

    def wait_stream(self, stream) -> None:
        pass

    def synchronize(self) -> None:
        pass


class Event:
    """`torch.cpu.Event`: a no-op event."""

    def record(self, stream=None) -> None:
        pass

    def wait(self, stream=None) -> None:
        pass

    def query(self) -> bool:
        return True

    def synchronize(self) -> None:
        pass


_DEFAULT = Stream()


def current_stream(device=None) -> Stream:
    return _DEFAULT


def stream(stream) -> nullcontext:
    """A context that selects `stream` (nothing to select on the CPU)."""
    return nullcontext()


StreamContext = nullcontext
