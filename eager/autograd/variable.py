"""`torch.autograd.Variable`: the pre-0.4 wrapper, kept so that old code runs unchanged.

Since PyTorch 0.4 a Variable is a Tensor: `Variable(t, requires_grad=...)` returns a new leaf
tensor sharing `t`'s data (torch's `_LegacyVariableBase`), and `isinstance(x, Variable)` is
true of every tensor. Also the legacy autograd switches that are no-ops in wick (its engine runs
backward on the calling thread, and a gradient always takes its parameter's shape and dtype):
`set_multithreading_enabled` and `enforce_grad_layout_policy`, context managers / decorators
that remember their flag as torch's do. Touches `eager.tensor` and `eager.creation` only.
"""

from __future__ import annotations

import functools
import threading

from ..creation import tensor as _tensor
from ..tensor import Tensor

__all__ = ["Variable", "enforce_grad_layout_policy", "set_multithreading_enabled"]


class _VariableMeta(type):
    def __instancecheck__(cls, other) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """`Variable(data=None, requires_grad=False, volatile=False)` -> Tensor: a leaf alias of
    `data` (an empty float tensor when omitted) with the given `requires_grad`. TypeError when
    `data` is not a tensor; `volatile` (without effect since PyTorch 0.4) is ignored."""

    def __new__(cls, data=None, requires_grad: bool = False, volatile: bool = False):
        if data is None:
            data = _tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        out.requires_grad_(bool(requires_grad))
        return out


class _Flags(threading.local):
    multithreading = True
    grad_layout = True


_flags = _Flags()


class _FlagContext:
    """Sets a thread-local flag on construction; restores it on leaving a `with` block or
    around each call of a decorated function (torch's `_DecoratorContextManager` pattern)."""

    _attr = ""

    def __init__(self, mode: bool = True) -> None:
        self.prev = getattr(_flags, self._attr)
        setattr(_flags, self._attr, bool(mode))
        self.mode = bool(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc) -> None:
        setattr(_flags, self._attr, self.prev)

    def clone(self):
        return type(self)(self.mode)

    def __call__(self, fn):
        setattr(_flags, self._attr, self.prev)  # as a decorator: no change until called

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper


class set_multithreading_enabled(_FlagContext):
    """`set_multithreading_enabled(mode)`: torch's switch for device-thread backward. wick's
    engine always runs backward on the calling thread; the flag is kept for code that sets
    it and for `is_multithreading_enabled()`."""

    _attr = "multithreading"

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)


class enforce_grad_layout_policy(_FlagContext):
    """`enforce_grad_layout_policy(enable=True)`: torch's switch for the gradient-stride
    contract. wick's accumulated gradients always have their parameter's layout; the flag is
    kept for code that sets it."""

    _attr = "grad_layout"

    def __init__(self, enable: bool = True) -> None:
        super().__init__(enable)


def is_multithreading_enabled() -> bool:
    """The flag last set by `set_multithreading_enabled` (True by default)."""
    return _flags.multithreading
