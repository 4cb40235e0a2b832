"""Grad mode: whether ops record autograd history (PyTorch's `torch.no_grad` and friends).

Thread-local like PyTorch's. `no_grad`, `enable_grad`, `set_grad_enabled` and `inference_mode`
work as context managers and as decorators (also of generator functions, like PyTorch's
`_DecoratorContextManager`). `inference_mode` is `no_grad` plus marking the tensors made inside
as inference tensors (`Tensor.is_inference()`), which autograd refuses to save for backward and
which cannot be modified in place outside inference mode (the `eager.autograd` package enforces
both). Semantics: PyTorch "Locally disabling gradient computation". Imports nothing of wick's.
"""

from __future__ import annotations

import functools
import inspect
import threading


class _State(threading.local):
    """Per-thread modes; the class attributes are every new thread's defaults (reading them
    costs no AttributeError, unlike `getattr(local, name, default)`: this is on every op's
    path)."""

    enabled = True
    inference = False


_state = _State()


def is_grad_enabled() -> bool:
    """True when ops record autograd history (PyTorch's `torch.is_grad_enabled`)."""
    return _state.enabled


def _set(mode: bool) -> None:
    _state.enabled = bool(mode)


def is_inference_mode_enabled() -> bool:
    """True inside `inference_mode()` (PyTorch's `torch.is_inference_mode_enabled`)."""
    return _state.inference


# Called with True on entering the outermost enabled inference_mode and False on leaving it:
# eager.autograd registers here to mark the tensors created inside as inference tensors.
INFERENCE_LISTENERS: list = []


def _set_inference(mode: bool) -> None:
    was = is_inference_mode_enabled()
    _state.inference = bool(mode)
    if was != bool(mode):
        for fn in INFERENCE_LISTENERS:
            fn(bool(mode))


class _GradModeContext:
    """Base of the grad-mode context managers; an instance also decorates functions."""

    def _enter_state(self):
        raise NotImplementedError

    def __enter__(self):
        self._prev = (is_grad_enabled(), is_inference_mode_enabled())
        self._enter_state()
        return self

    def __exit__(self, *exc):
        _set(self._prev[0])
        _set_inference(self._prev[1])
        return False

    def clone(self):
        return type(self)()

    def __call__(self, fn):
        if inspect.isgeneratorfunction(fn):
            @functools.wraps(fn)
            def gen_wrapper(*args, **kwargs):
                gen = fn(*args, **kwargs)
                sent = None
                while True:
                    with self.clone():
                        try:
                            value = gen.send(sent)
                        except StopIteration as stop:
                            return stop.value
                    sent = yield value

            return gen_wrapper

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper


class no_grad(_GradModeContext):
    """Context manager / decorator: ops inside record no autograd history (`torch.no_grad`)."""

    def _enter_state(self):
        _set(False)


class enable_grad(_GradModeContext):
    """Context manager / decorator: re-enables recording inside a `no_grad` block
    (`torch.enable_grad`); it does not leave inference mode."""

    def _enter_state(self):
        _set(True)


class set_grad_enabled(_GradModeContext):
    """`set_grad_enabled(mode)`: sets grad mode now (as a call) or within a `with` block, or
    for a decorated function (`torch.set_grad_enabled`)."""

    def __init__(self, mode: bool):
        self.mode = bool(mode)
        self._prev = (is_grad_enabled(), is_inference_mode_enabled())
        _set(self.mode)

    def __enter__(self):
        return self

    def _enter_state(self):
        _set(self.mode)

    def clone(self):
        return _ModeBlock(self.mode)

    def __call__(self, fn):
        _set(self._prev[0])  # used as a decorator: the call above must not change the mode
        return _GradModeContext.__call__(self, fn)


class _ModeBlock(_GradModeContext):
    """`set_grad_enabled(mode)` re-entered for each call of a decorated function."""

    def __init__(self, mode: bool):
        self.mode = mode

    def _enter_state(self):
        _set(self.mode)

    def clone(self):
        return _ModeBlock(self.mode)


class inference_mode(_GradModeContext):
    """`inference_mode(mode=True)`: like `no_grad`, and tensors made inside are inference
    tensors (`is_inference()`): they cannot be saved for backward nor modified in place
    outside inference mode (RuntimeError, PyTorch's messages). `mode=False` leaves inference mode inside the block.
    Also a decorator, bare (`@inference_mode`) or called (`@inference_mode()`)."""

    def __new__(cls, mode=True):
        if callable(mode) and not isinstance(mode, bool):  # @inference_mode without call
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def _enter_state(self):
        if self.mode:
            _set(False)
        _set_inference(self.mode)

    def clone(self):
        return inference_mode(self.mode)
