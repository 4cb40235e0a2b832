"""What `capture.compile` and `capture.explain` accept: any callable, reduced to a Python function
plus the arguments bound in front of the caller's.

`resolve(fn)` returns `Target(func, args, kwargs)`: calling `fn(*a, **k)` is calling
`func(*args, *a, **{**kwargs, **k})`, with `func` a plain Python function whose bytecode capture
interprets. Handled as torch.compile does: functions and lambdas; bound methods of any class
(the instance becomes the first argument, so `self` is a guarded input rather than a constant);
classmethods (the class is bound) and staticmethods; `functools.partial` (nested, of any of
these; its arguments are passed on every call, so tensors in them are graph inputs and Python
values are guarded); callable objects (their class's `__call__`, bound); functions decorated
with `@inference_mode()` (the body compiled, called inside that mode: `Target.context`). Anything else callable
(a builtin, a C function) gets a trampoline function that calls it, so the call is vocabulary
or a named break inside the trampoline. Modules are `module_wrapper.OptimizedModule`'s business.

`compiled_callee(cf, value)` is the callee half (issue 14): a function, bound method, module or
callable object that broke while inlined is called, after the caller's graph, through its own
compiled wrapper, a child of `cf` cached per (function, bound instance): the instance is the
wrapper's first argument, so its type and the attributes the callee reads are guarded as for
`compile(obj.method)`. A module with a plain `Module.__call__` (no hooks) compiles `forward`.
Touches `eager.nn` (Module), nothing else outside `capture`.
"""

from __future__ import annotations

import functools
import sys
import types
from dataclasses import dataclass, field


@dataclass
class Target:
    """`func(*args, *call_args, **{**kwargs, **call_kwargs})` is the call of the original."""

    func: types.FunctionType
    args: tuple = ()
    kwargs: dict = field(default_factory=dict)
    context: object = None  # a context manager factory entered around each call


def _inference_mode():
    from eager import grad_mode

    return grad_mode.inference_mode


def _mark_inference(value, inputs: set) -> None:
    """Mark the tensors a call made inside `inference_mode()` returns as inference tensors, as
    eager's tensor constructor does there (a cache hit builds its outputs directly); the
    caller's own tensors returned as they are stay as they are."""
    from eager import Tensor
    from eager.autograd.hooks import meta_of

    if isinstance(value, Tensor):
        if id(value) not in inputs and not value.is_inference():
            meta_of(value).inference = True
    elif isinstance(value, (tuple, list)):
        for v in value:
            _mark_inference(v, inputs)
    elif isinstance(value, dict):
        for v in value.values():
            _mark_inference(v, inputs)


def _inference_decorated(fn):
    """(mode, inner) for a function decorated by `@inference_mode()` (eager.grad_mode's
    wrapper), else None: its graph outputs must be made inside a real inference mode (they
    become inference tensors), so the inner function is compiled and called in that mode."""
    from eager import grad_mode

    code = grad_mode.no_grad()(lambda: None).__code__
    if getattr(fn, "__code__", None) is not code or not fn.__closure__:
        return None
    cells = dict(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__)))
    ctx, inner = cells.get("self"), cells.get("fn")
    if type(ctx) is not grad_mode.inference_mode or not callable(inner):
        return None
    return ctx.mode, inner


def resolve(fn, depth: int = 0) -> Target:
    """The plain function behind callable `fn`; TypeError if `fn` is not callable."""
    if depth > 32:
        raise TypeError(f"capture.compile: cannot resolve {fn!r} (too deeply nested)")
    decorated = _inference_decorated(fn)
    if decorated is not None:  # `@torch.inference_mode()` def predict(...)
        from eager import grad_mode

        inner = resolve(decorated[1], depth + 1)
        return Target(inner.func, inner.args, inner.kwargs,
                      functools.partial(grad_mode.inference_mode, decorated[0]))
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


def callee_target(value) -> Target | None:
    """The target to compile for `value` called as a callee that broke inside (None: run it as
    it is): plain functions, bound methods, modules (their `forward` when `Module.__call__` is
    plain), callable objects; never eager's own functions, the standard library's (logging) or
    those marked capture.disable."""
    from eager.nn import Module

    from .module_wrapper import _plain_call
    from .vocabulary import is_internal

    if isinstance(value, Module) and _plain_call(value):
        value = value.forward
    if isinstance(value, types.MethodType):
        func, args = value.__func__, (value.__self__,)
    elif isinstance(value, types.FunctionType):
        func, args = value, ()
    elif not isinstance(value, type) and isinstance(
            getattr(type(value), "__call__", None), types.FunctionType):  # noqa: B004
        func, args = type(value).__call__, (value,)
    else:
        return None
    if not isinstance(func, types.FunctionType) or is_internal(func) or \
            (func.__module__ or "").split(".")[0] in sys.stdlib_module_names or \
            getattr(func, "__wick_graph_break__", False) or \
            getattr(func, "__wick_disable__", False) or \
            getattr(func, "__wick_compiled__", None) is not None:
        return None
    return Target(func, args)


CALLEE_LIMIT = 64


def compiled_callee(cf, value):
    """`value`'s compiled wrapper as a callee of CompiledFunction `cf` (else `value` itself).
    Cached in `cf.callees` by the ids of (function, bound instance); the entry holds both, so
    the ids cannot be reused while cached. At most `CALLEE_LIMIT` such entries are kept (the
    oldest goes first) and the compiled child is one per function, so a caller handed a new
    module or object on every call does not keep them all alive (issue 13: memory must not
    grow without bound)."""
    if isinstance(value, types.MethodType):
        func, owner = value.__func__, value.__self__
    else:
        func = owner = value
    key = (id(func), id(owner))
    hit = cf.callees.get(key)
    if hit is None or hit[0] is not func or hit[1] is not owner:
        with cf.lock:  # (called at run time: two threads must share one child)
            target = callee_target(value)
            # one compiled child per function (`cf.callee`), shared by every bound instance
            wrapper = value if target is None else bind(target, cf.callee(target.func))
            bound = [k for k in cf.callees if type(k) is tuple]
            for k in bound[:max(0, len(bound) - CALLEE_LIMIT + 1)]:
                del cf.callees[k]
            hit = cf.callees[key] = (func, owner, wrapper)
    return hit[2]


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
    `target.func`'s parameters) with the bound arguments in front (inside `target.context`)."""
    if target.context is not None:
        inner, context = bind(Target(target.func, target.args, target.kwargs), call), \
            target.context

        def in_context(*args, **kwargs):
            with context():
                result = inner(*args, **kwargs)
            if getattr(context, "func", None) is _inference_mode() and context.args[0]:
                _mark_inference(result, {id(a) for a in (*args, *kwargs.values())})
            return result

        return in_context
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
