"""Grad mode: whether ops record autograd history (PyTorch's `torch.no_grad` and friends).

Thread-local like PyTorch's. `no_grad`, `enable_grad`, `set_grad_enabled` work as context
managers and as decorators.
"""

from __future__ import annotations

import functools
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def _set(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradModeContext:
    mode: bool

    def __enter__(self):
        self._prev = is_grad_enabled()
        _set(self.mode)
        return self

    def __exit__(self, *exc):
        _set(self._prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)() if not isinstance(self, set_grad_enabled) else \
                    set_grad_enabled(self.mode):
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Context manager / decorator: ops inside record no autograd history."""

    mode = False


class enable_grad(_GradModeContext):
    """Context manager / decorator: re-enables recording inside a `no_grad` block."""

    mode = True


class set_grad_enabled(_GradModeContext):
    """`set_grad_enabled(mode)`: sets grad mode now (as a call) or within a `with` block."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = is_grad_enabled()
        _set(self.mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(self._prev)
        return False
