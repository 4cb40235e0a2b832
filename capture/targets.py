"""What `capture.compile` and `capture.explain` accept: any callable, reduced to a Python function
plus the arguments bound in front of the caller's.

`resolve(fn)` returns `Target(func, args, kwargs)`: calling `fn(*a, **k)` is calling
`func(*args, *a, **{**kwargs, **k})`, with `func` a plain Python function whose bytecode capture
interprets. Handled as torch.compile does: functions and lambdas; bound methods of any class
(the instance becomes the first argument, so `self` is a guarded input rather than a constant);
classmethods (the class is bound) and staticmethods; `functools.partial` (nested, of any of
these; its arguments are passed on every call, so tensors in them are graph inputs and Python
values are guarded); callable objects (their class's `__call__`, bound). Anything else callable
(a builtin, a C function) gets a trampoline function that calls it, so the call is vocabulary
or a named break inside the trampoline. Modules are `module_wrapper.OptimizedModule`'s business.
Touches nothing outside `capture`.
"""

from __future__ import annotations

import functools
import types
from dataclasses import dataclass, field


@dataclass
class Target:
    """`func(*args, *call_args, **{**kwargs, **call_kwargs})` is the call of the original."""

    func: types.FunctionType
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)


def resolve(fn, depth: int = 0) -> Target:
    """The plain function behind callable `fn`; TypeError if `fn` is not callable."""
    if depth > 32:
        raise TypeError(f"capture.compile: cannot resolve {fn!r} (too deeply nested)")
    if isinstance(fn, types.FunctionType):
        return Target(fn)
    if isinstance(fn, types.MethodType):
        inner = resolve(fn.__func__, depth + 1)
        return Target(inner.func, inner.args + (fn.__self__,), inner.kwargs)
    if isinstance(fn, functools.partial):
        inner = resolve(fn.func, depth + 1)
        return Target(inner.func, inner.args + tuple(fn.args), {**inner.kwargs, **fn.keywords})
    if isinstance(fn, staticmethod):
        return resolve(fn.__func__, depth + 1)
    if not callable(fn):
        raise TypeError(f"capture.compile expects a callable, got {type(fn).__name__}")
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - the class's own method
    if isinstance(call, types.FunctionType) and not isinstance(fn, type):
        inner = resolve(call, depth + 1)
        return Target(inner.func, inner.args + (fn,), inner.kwargs)
    return Target(_trampoline(fn))


def _trampoline(fn) -> types.FunctionType:
    """A Python function calling `fn` (a builtin, a class, a C callable)."""

    def call(*args, **kwargs):
        return fn(*args, **kwargs)

    name = getattr(fn, "__name__", type(fn).__name__)
    call.__name__ = name
    call.__qualname__ = getattr(fn, "__qualname__", name)
    return call


def bind(target: Target, call):
    """A function taking the original's arguments that calls `call` (a function of
    `target.func`'s parameters) with the bound arguments in front."""
    pre, pk = target.args, target.kwargs
    if not pre and not pk:
        return call
    if not pk:
        if len(pre) == 1:
            (obj,) = pre

            def bound1(*args, **kwargs):
                return call(obj, *args, **kwargs)

            return bound1

        def bound(*args, **kwargs):
            return call(*pre, *args, **kwargs)

        return bound

    def bound_kw(*args, **kwargs):
        return call(*pre, *args, **{**pk, **kwargs})

    return bound_kw
