"""`try`/`except` handlers traced into the graph, as Dynamo does.

A Python exception the capture meets at an instruction of a frame (a missing key in
`try: return self.cache[n]` / `except KeyError:`, a `ValueError` of a folded call), where an
`except` clause of the same frame names a class the exception is an instance of, jumps to
that handler as CPython would (`enter`: the stack cut to the exception table entry's depth,
`lasti` and the exception pushed) and the handler's code is captured like any other: its
tensor work joins the graph (the exception's cause is a function of guarded values, so every
call the entry admits takes the same path). The handler opcodes are modelled here:
`PUSH_EXC_INFO` (saves the previous exception), `CHECK_EXC_MATCH`, `POP_EXCEPT`.

Only exceptions whose cause the guards fix are traced (`TRACED`: a missing key or index at a
subscript, a ValueError/RuntimeError/ArithmeticError of a call). Everything else keeps issue
13's policy (a graph break at the raising instruction, the handler run by CPython;
`symbolic.InstructionTranslator.caught_by_try`): an AttributeError, a bare `except:` or
`except Exception`/`BaseException` (it would catch an error of capture itself), a clause that
does not match (`RERAISE`), an exception raised in an inlined callee and caught by a caller,
a `with` exit, and a graph break met inside the handler (a graph cannot end where the
handler's saved exception is on the stack). Those abort to the break at the raising
instruction, the frame's state restored from its snapshot there. Touches `capture`.
"""

from __future__ import annotations

import dis

from .builders import handler
from .variables import ConstantVariable, TupleVariable

BROAD = (BaseException, Exception)
# the instruction -> the exceptions raised there that are traced into a handler: a missing
# key or index of a container (its keys or length are guarded), a bad value met by a folded
# call or by a tensor op's meta (a function of guarded values and shapes). Not AttributeError
# (an absent attribute is not guarded), TypeError (capture's own errors look the same),
# StopIteration or AssertionError.
_CALLS = (ValueError, RuntimeError, ArithmeticError)
TRACED = {"BINARY_SUBSCR": (LookupError,), "CALL": _CALLS, "CALL_FUNCTION_EX": _CALLS,
          "CALL_KW": _CALLS, "BINARY_OP": (ArithmeticError,), "RAISE_VARARGS": (Exception,)}
RAISED = "__wick_raised__"  # marks an exception the user's `raise` made (`raise_caught`)
_LOADS = {"LOAD_GLOBAL", "LOAD_NAME", "LOAD_ATTR", "LOAD_FAST", "LOAD_DEREF", "BUILD_TUPLE",
          "LOAD_CONST", "LOAD_FAST_LOAD_FAST", "LOAD_FAST_CHECK"}


class HandlerAbort(Exception):
    """The traced handler cannot go on: fall back to the break at the raising instruction."""


def _entries(code) -> list:
    cache = _entries.__dict__.setdefault("cache", {})
    got = cache.get(code)
    if got is None:
        got = cache[code] = list(dis.Bytecode(code).exception_entries)
    return got


def can_enter(tx, exc) -> bool:
    """Whether `exc`, raised at `tx`'s current instruction, lands in an `except <class>:`
    handler of `tx`'s own frame (checked again by `CHECK_EXC_MATCH` against the class), and
    is one whose cause the entry's guards fix (`TRACED`)."""
    kinds = TRACED.get(tx.inst.opname, ())
    if not isinstance(exc, kinds) and not (getattr(exc, RAISED, False) and kinds):
        return False
    offset = tx.inst.offset
    entry = next((e for e in _entries(tx.code) if e.start <= offset < e.end), None)
    if entry is None or entry.target not in tx.index_of:
        return False
    k = tx.index_of[entry.target]
    ops = [i.opname for i in tx.instructions[k:k + 8]]
    if ops[:1] != ["PUSH_EXC_INFO"]:
        return False
    for name in ops[1:]:
        if name == "CHECK_EXC_MATCH":
            return True
        if name not in _LOADS:
            return False
    return False


def raise_caught(tx, inst) -> None:
    """`raise E(...)` / `raise E` of a constant exception (its cause is a function of guarded
    values) where a `try` of this frame or of a caller inlining it catches it: raised here as
    the Python exception, marked, so the frame's handler (`can_enter`) or, through the
    inlined call, the caller's (`passes_up`) is traced; otherwise returns (a break)."""
    if inst.arg != 1 or not tx.caught_by_try():
        return
    v = tx.stack[-1]
    exc = v.value if v.is_constant() else getattr(v, "value", None)
    if isinstance(exc, type) and issubclass(exc, Exception) and _plain_exception(exc):
        exc = exc()
    if not isinstance(exc, Exception) or not _plain_exception(type(exc)):
        return
    tx.pop()
    setattr(exc, RAISED, True)
    raise exc


def _plain_exception(cls) -> bool:
    """An exception class whose construction runs no user code (builtin `__init__`/`__new__`
    all the way: `ValueError`, `class ConfigError(ValueError): pass`)."""
    for c in cls.__mro__:
        if c.__module__ == "builtins":
            return True
        if any(n in c.__dict__ for n in ("__init__", "__new__", "__setattr__")):
            return False
    return False


def passes_up(tx, exc) -> bool:
    """Whether `exc`, a user's `raise` in inlined frame `tx` (or passed up to it) that no
    handler of `tx` catches, leaves `tx` for its caller's call instruction: nothing of `tx`
    (no `with` exit, no `finally`) covers the current instruction."""
    return tx.depth > 0 and getattr(exc, RAISED, False) and not any(
        e.start <= tx.inst.offset < e.end for e in _entries(tx.code))


def make_exception(value, pos: list, kw: dict):
    """`ValueError("bad key " + k)` of constants: the exception object, else None."""
    if isinstance(value, type) and issubclass(value, Exception) and _plain_exception(value) \
            and not kw:
        return value(*pos)
    return None


def enter(tx, exc, index: int, snap) -> None:
    """Jump to the handler of the current instruction with `exc` (see the module)."""
    offset = tx.inst.offset
    entry = next(e for e in _entries(tx.code) if e.start <= offset < e.end)
    del tx.stack[entry.depth:]
    if entry.lasti:
        tx.push(ConstantVariable(offset))
    tx.push(ConstantVariable(exc))
    tx.handlers.append((index, snap, exc))
    tx.ip = tx.index_of[entry.target]


@handler("PUSH_EXC_INFO")
def PUSH_EXC_INFO(self, inst):
    exc = self.pop()
    prev = self.exc_info[-1] if self.exc_info else None
    self.push(ConstantVariable(prev))
    self.push(exc)
    self.exc_info.append(exc.value)


def _classes(v, exc) -> tuple:
    """The classes of an except clause; `except Exception:` only for the user's own raise
    (any other exception met there may be capture's own)."""
    items = v.items if isinstance(v, TupleVariable) else [v]
    out = []
    for x in items:
        cls = getattr(x, "value", None)
        if not (isinstance(cls, type) and issubclass(cls, BaseException)) or \
                cls in BROAD and not getattr(exc, RAISED, False):
            raise HandlerAbort("an except clause capture does not model")
        out.append(cls)
    return tuple(out)


@handler("CHECK_EXC_MATCH")
def CHECK_EXC_MATCH(self, inst):
    exc = self.stack[-2].value
    classes = _classes(self.pop(), exc)
    if not isinstance(exc, classes):
        raise HandlerAbort("the exception does not match the except clause")
    self.push(ConstantVariable(True))


@handler("POP_EXCEPT")
def POP_EXCEPT(self, inst):
    self.pop()
    self.exc_info.pop()
    if len(self.handlers) > len(self.exc_info):
        self.handlers.pop()


@handler("RERAISE")
def RERAISE(self, inst):
    raise HandlerAbort("the handler re-raises")
