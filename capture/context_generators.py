"""User `@contextlib.contextmanager` functions in captured code (a DDP wrapper's `no_sync`
that clears a flag and restores it in `finally`, a helper that sets and resets state), as
Dynamo inlines them: calling the decorated function makes a `ContextGeneratorVariable` holding
the generator function's inlined frame; `with` on it runs that frame up to its first `yield`
(the `as` value is what it yields), and the block's normal exit resumes it to its end (its
`finally` included). The frame is one translator that stops at the yield and continues later
(`symbolic`'s run loop ends on `SUSPENDED`; `builders.YIELD_VALUE` sets it).

An exception leaving the block, a second yield, or a graph break inside the block (the exit
would have to be rebuilt in a resume function) are graph breaks: the frame then runs eagerly
with contextlib's own object. Touches `capture` only.
"""

from __future__ import annotations

import contextlib
import inspect
import types

from .variables import ConstantVariable, VariableTracker

SUSPENDED = object()  # a translator's `result` while its generator waits at a yield


@contextlib.contextmanager
def _probe():
    yield


_HELPER_CODE = _probe.__code__  # contextlib's `helper`, shared by every decorated function


class ContextGeneratorVariable(VariableTracker):
    """`cm = fn(...)` of a `@contextmanager` function `fn`: its suspended generator frame."""

    def __init__(self, child, what: str):
        self.child, self.what, self.source = child, what, None
        self.entered = False

    def describe(self) -> str:
        return f"@contextmanager {self.what}"


def make(tx, fn, args: list, kwargs: dict) -> ContextGeneratorVariable | None:
    """The tracker of calling `fn` (a FunctionVariable) when it is a `@contextmanager`
    function written in Python (its generator function inlined, not run); else None."""
    from .calls import inline
    from .variables import FunctionVariable, GeneratorVariable

    value = fn.value
    if not isinstance(value, types.FunctionType) or value.__code__ is not _HELPER_CODE:
        return None
    inner = getattr(value, "__wrapped__", None)
    if not isinstance(inner, types.FunctionType) or \
            not inner.__code__.co_flags & inspect.CO_GENERATOR:
        return None
    gen = inline(tx, FunctionVariable(inner, None, self_var=fn.self_var), args, kwargs)
    if not isinstance(gen, GeneratorVariable):
        return None
    return ContextGeneratorVariable(gen.fn, inner.__qualname__)


def enter(tx, ctx: ContextGeneratorVariable) -> list:
    """BEFORE_WITH on `ctx`: run its frame to the first yield; [the exit tracker, the `as`
    value] for the stack."""
    from .dict_objects import RawMethodVariable

    if ctx.entered:
        raise tx.unsupported(f"`with` twice on {ctx.describe()} (contextlib's RuntimeError)")
    ctx.entered = True
    child = ctx.child
    child.yields, child.suspend_at_yield = [], True
    if child.run() is not SUSPENDED:
        raise tx.unsupported(f"{ctx.describe()} did not yield (contextlib's RuntimeError)")
    value = child.yields[0]
    return [RawMethodVariable(lambda tx_, a, kw: _leave(tx_, ctx, a), "__exit__"), value]


def _leave(tx, ctx: ContextGeneratorVariable, args: list) -> VariableTracker:
    """The block's exit: on a normal exit (`__exit__(None, None, None)`) the frame resumes
    to its end; anything else is a break."""
    if not all(isinstance(a, ConstantVariable) and a.value is None for a in args):
        raise tx.unsupported(f"an exception leaving `with` on {ctx.describe()}")
    child = ctx.child
    child.result, child.yields = None, []
    if child.run() is SUSPENDED:
        raise tx.unsupported(f"{ctx.describe()} yielded twice (contextlib's RuntimeError)")
    return ConstantVariable(False)
