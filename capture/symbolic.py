"""The symbolic bytecode interpreter: runs a function's CPython bytecode on variable trackers.

`InstructionTranslator` walks a code object one instruction at a time with a stack of trackers
and symbolic locals (TorchDynamo's `symbolic_convert.py`, in miniature). Tensors become graph
`Node`s, Python values fold, and anything it cannot model raises `GraphBreak` with a
`BreakReason` naming the user's file:line. Handlers are methods named after the opname and
registered for a range of CPython versions (`@handler(..., min=, max=)`), so 3.11, 3.12 and 3.13
share one table; the container, function-building and formatting opcodes live in the
`BuildOps` mixin of `builders.py`, the operator and control-flow opcodes (branches, loops,
`with`, return) in the `FlowOps` mixin of `flowops.py`. The top frame takes a snapshot of its
stack and locals before every instruction, so that a graph break can compile the graph so far
and resume after the instruction (`transform.py`). Touches `capture` only (and `dis`).
"""

from __future__ import annotations

import builtins
import dis
import importlib
import linecache
import os
from typing import TYPE_CHECKING

from . import calls, config, handlers, sideeffects
from .breaks import BreakReason, GraphBreak, Snapshot, Unsupported
from .builders import PY, TABLE, BuildOps, handler
from .handlers import HandlerAbort
from .flowops import BINARY_SYMBOLS, COMPARE_SHIFT, FlowOps  # noqa: F401 (re-exported)
from .variables import (
    NULL,
    CellVariable,
    ConstantVariable,
    DictVariable,
    ModuleVariable,
    NullVariable,
    ObjectVariable,
    TupleVariable,
    VariableTracker,
)

# exceptions the user's code raises (a missing key, a bad value) that a `try` may catch
CAUGHT = (LookupError, ArithmeticError, AttributeError, TypeError, ValueError, RuntimeError,
          AssertionError, StopIteration)

if TYPE_CHECKING:
    from .output_graph import OutputGraph

__all__ = ["PY", "BreakReason", "GraphBreak", "InstructionTranslator", "Unsupported"]

ENDS_BLOCK = {"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP",
              "JUMP_NO_INTERRUPT", "RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}
_JUMPS = set(dis.hasjrel) | set(dis.hasjabs)


def _normally_reached(instructions, index_of) -> set:
    """Indices of the instructions reached from the entry without an exception: a backward
    jump only handlers reach (3.12's `with` exit that suppressed an exception, an `except`
    body jumping back to the code after the `try`) is not a loop."""
    seen, todo = set(), [0]
    while todo:
        k = todo.pop()
        if k in seen or k >= len(instructions):
            continue
        seen.add(k)
        inst = instructions[k]
        if inst.opcode in _JUMPS and isinstance(inst.argval, int):
            todo.append(index_of[inst.argval])
        if inst.opname not in ENDS_BLOCK:
            todo.append(k + 1)
    return seen


BACKWARD_JUMPS = {"JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "POP_JUMP_BACKWARD_IF_TRUE",
                  "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_NONE",
                  "POP_JUMP_BACKWARD_IF_NOT_NONE"}


class _Func:
    """A function-like record for a code object the captured code created (a nested def)."""

    def __init__(self, code, f_globals, closure, name):
        self.__code__, self.__globals__, self.__closure__ = code, f_globals, closure
        self.__name__ = self.__qualname__ = name


class InstructionTranslator(BuildOps, FlowOps):
    """Symbolically runs one code object; `run()` returns the tracker of its return value.

    `fn` is a Python function (or `_Func`); `f_locals` maps parameter names to trackers;
    `closure` (optional) replaces `fn.__closure__` by cells the capture made.
    """

    def __init__(self, out: OutputGraph, fn, f_locals: dict, depth: int = 0, closure=None):
        self.out = out
        self.fn = fn
        self.code = fn.__code__
        self.f_globals = fn.__globals__
        self.globals_src = out.globals_name(fn.__globals__)
        cells = closure if closure is not None else (fn.__closure__ or ())
        self.closure = dict(zip(self.code.co_freevars, cells))
        self.cells: dict[str, CellVariable] = {}
        self.locals = dict(f_locals)
        self.stack: list[VariableTracker] = []
        self.depth = depth
        every = list(dis.get_instructions(self.code))
        self.instructions = [i for i in every if i.opname != "EXTENDED_ARG"]
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        # a jump may target the EXTENDED_ARG prefix of its instruction (a loop head past byte
        # 255 of the body): such offsets lead to the instruction they prefix
        nxt = len(self.instructions)
        for inst in reversed(every):
            if inst.opname == "EXTENDED_ARG":
                self.index_of[inst.offset] = nxt
            else:
                nxt = self.index_of[inst.offset]
        self.ip = 0
        self.inst = self.instructions[0]
        self.lineno = self.code.co_firstlineno
        self.kw_names: tuple = ()
        self.result: VariableTracker | None = None
        self.yields: list | None = None  # set when running a generator to completion
        self.loops = []
        normal = _normally_reached(self.instructions, self.index_of)
        for k, i in enumerate(self.instructions):
            if i.opname in BACKWARD_JUMPS and k in normal:  # (3.12's handlers jump back)
                head = self.index_of[i.argval]
                first = self.instructions[head]
                if first.opname == "FOR_ITER":  # 3.12 puts a loop's `return` after the jump
                    k = max(k, self.index_of[first.argval] - 1)
                self.loops.append((head, k))
        self.loop_heads = {t for t, _ in self.loops}
        self.loop_snaps: dict[int, Snapshot] = {}
        self.handlers: list = []  # (index, snapshot, exception) of each handler entered
        self.exc_info: list = []  # the exceptions PUSH_EXC_INFO made current (`handlers.py`)

    # ---- helpers

    def push(self, v: VariableTracker) -> None:
        self.stack.append(v)

    def pop(self) -> VariableTracker:
        return self.stack.pop()

    def popn(self, n: int) -> list:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def location(self) -> str:
        return f"{os.path.basename(self.code.co_filename)}:{self.lineno}"

    def unsupported(self, reason: str, kind: str = "inst", cond=None,
                    negate=False) -> GraphBreak:
        """A GraphBreak at the current instruction (raise it)."""
        line = linecache.getline(self.code.co_filename, self.lineno).strip()
        return GraphBreak(BreakReason(reason, self.inst.opname, self.code.co_filename,
                                      self.lineno, line), kind, cond, negate)

    def jump(self, inst) -> None:
        self.ip = self.index_of[inst.argval]

    # ---- the loop

    def run(self) -> VariableTracker:
        top = self.depth == 0 and self.out.resumable
        snap = None
        while self.result is None:
            index = self.ip
            inst = self.inst = self.instructions[index]
            self.ip += 1
            if inst.positions is not None and inst.positions.lineno is not None:
                self.lineno = inst.positions.lineno
            self.out.instructions += 1
            if top:
                snap = Snapshot(self)
                snap.effects = self.out.side_effects.checkpoint()
                snap.autocast = tuple(self.out.autocast_enters)
                if index in self.loop_heads and index not in self.loop_snaps:
                    self.loop_snaps[index] = snap
            try:
                if self.out.instructions > config.instruction_limit:
                    raise self.unsupported("too many instructions (an unrolled loop?)")
                fn = TABLE.get(inst.opname)
                if fn is None:
                    raise self.unsupported(f"instruction {inst.opname} is not supported")
                depth = len(self.stack)
                fn(self, inst)
            except GraphBreak as gb:
                if self.handlers:  # (a graph cannot end inside a handler)
                    raise self._handler_break(top) from None
                if top and gb.frame is None:
                    gb.frame = (self, index, snap)
                raise
            except HandlerAbort:
                raise self._handler_break(top) from None
            except CAUGHT as e:
                if isinstance(e, Unsupported):
                    raise
                if self.handlers:
                    raise self._handler_break(top) from None
                if handlers.can_enter(self, e):  # `except KeyError:` of this frame: traced
                    handlers.enter(self, e, index, snap)
                    continue
                if not self.caught_by_try() or handlers.passes_up(self, e):
                    raise  # (no try would catch it: the whole frame runs eagerly and raises;
                    # or a user's raise going to the call of the caller whose try catches it)
                gb = self.unsupported(f"{type(e).__name__} raised inside a try block ({e}): "
                                      "the handler runs eagerly")
                if top:
                    gb.frame = (self, index, snap)
                raise gb from None
            if config.debug and self.result is None:
                self._check_stack_effect(inst, depth)
        return self.result

    def _handler_break(self, top: bool) -> GraphBreak:
        """The break at the instruction whose exception entered the (first) handler being
        traced, when the handler cannot be: CPython runs it (issue 13's policy)."""
        index, snap, exc = self.handlers[0]
        self.handlers.clear()
        self.exc_info.clear()
        self.inst = self.instructions[index]
        if self.inst.positions is not None and self.inst.positions.lineno is not None:
            self.lineno = self.inst.positions.lineno
        gb = self.unsupported(f"{type(exc).__name__} raised inside a try block ({exc}): the "
                              "handler runs eagerly")
        if top:
            gb.frame = (self, index, snap)
        return gb

    def caught_by_try(self) -> bool:
        """True when an `except`/`finally` of this frame, or of a caller inlining it, would
        catch an exception raised at the current instruction (`self.cache[n]` in
        `try: ... except KeyError:`): the exception is then a graph break at that instruction
        (the graph before it compiled, the rest run by CPython with its handlers), not a
        reason to run the whole frame eagerly."""
        from .transform import handler_kind

        tx = self
        while tx is not None:
            if handler_kind(tx.code, tx.inst.offset) == "try":
                return True
            tx = getattr(tx, "parent", None)
        return False

    def _check_stack_effect(self, inst, depth: int) -> None:
        if inst.opname in ("PRECALL", "YIELD_VALUE", "RETURN_GENERATOR") or \
                inst.opname.startswith("RETURN"):
            return
        jumped = self.ip != self.index_of[inst.offset] + 1
        if inst.opname == "FOR_ITER" and jumped:
            return  # 3.12+ skips END_FOR on exhaustion: checked by the results instead
        arg = inst.arg if inst.opcode >= dis.HAVE_ARGUMENT else None
        want = dis.stack_effect(inst.opcode, arg, jump=jumped)
        if inst.opname == "CALL" and PY == (3, 11):
            want += dis.stack_effect(dis.opmap["PRECALL"], arg)
        if len(self.stack) - depth != want:
            raise AssertionError(f"stack effect of {inst.opname} {inst.arg}: "
                                 f"{len(self.stack) - depth}, expected {want}")

    def live_locals(self) -> dict:
        """Locals and cell contents bound now (name -> tracker), for a resume function."""
        out = dict(self.locals)
        for name, cell in self.cells.items():
            if cell.value is not CellVariable.EMPTY:
                out[name] = cell.value
        return out

    # ---- no-ops and stack shuffling

    @handler("RESUME", "NOP", "PRECALL", "CACHE", "COPY_FREE_VARS")
    def NOP(self, inst):
        pass

    @handler("MAKE_CELL")
    def MAKE_CELL(self, inst):
        self.cells[inst.argval] = CellVariable(self.locals.pop(inst.argval, CellVariable.EMPTY))

    @handler("POP_TOP")
    def POP_TOP(self, inst):
        self.pop()

    @handler("END_FOR", min=(3, 12))
    def END_FOR(self, inst):
        self.pop()
        if PY == (3, 12):
            self.pop()

    @handler("PUSH_NULL")
    def PUSH_NULL(self, inst):
        self.push(NULL)

    @handler("COPY")
    def COPY(self, inst):
        self.push(self.stack[-inst.arg])

    @handler("SWAP")
    def SWAP(self, inst):
        self.stack[-1], self.stack[-inst.arg] = self.stack[-inst.arg], self.stack[-1]

    # ---- locals, cells, constants, globals, attributes

    @handler("LOAD_FAST", "LOAD_FAST_CHECK")
    def LOAD_FAST(self, inst):
        if inst.argval not in self.locals and (inst.argval in self.cells or
                                               inst.argval in self.code.co_freevars):
            self.LOAD_CLOSURE(inst)  # 3.13 builds closures with LOAD_FAST (a free var: the
            return                   # cell a recursive nested function reaches itself by)
        if inst.argval not in self.locals:
            raise UnboundLocalError(f"cannot access local variable '{inst.argval}' where it "
                                    "is not associated with a value")
        self.push(self.locals[inst.argval])

    @handler("LOAD_FAST_AND_CLEAR", min=(3, 12))
    def LOAD_FAST_AND_CLEAR(self, inst):
        self.push(self.locals.pop(inst.argval, NULL))

    @handler("STORE_FAST")
    def STORE_FAST(self, inst):
        self.locals[inst.argval] = self.pop()

    @handler("STORE_FAST_MAYBE_NULL", min=(3, 12))
    def STORE_FAST_MAYBE_NULL(self, inst):
        v = self.pop()
        if isinstance(v, NullVariable):
            self.locals.pop(inst.argval, None)
        else:
            self.locals[inst.argval] = v

    @handler("DELETE_FAST")
    def DELETE_FAST(self, inst):
        del self.locals[inst.argval]

    @handler("LOAD_FAST_LOAD_FAST", min=(3, 13))
    def LOAD_FAST_LOAD_FAST(self, inst):
        for name in inst.argval:
            self.push(self.locals[name])

    @handler("STORE_FAST_STORE_FAST", min=(3, 13))
    def STORE_FAST_STORE_FAST(self, inst):
        for name in inst.argval:
            self.locals[name] = self.pop()

    @handler("STORE_FAST_LOAD_FAST", min=(3, 13))
    def STORE_FAST_LOAD_FAST(self, inst):
        store, load = inst.argval
        self.locals[store] = self.pop()
        self.push(self.locals[load])

    def _cell_value(self, name: str):
        if name in self.cells:
            value = self.cells[name].value
            if value is CellVariable.EMPTY:
                raise UnboundLocalError(f"cannot access local variable '{name}' where it is "
                                        "not associated with a value")
            return value
        cell = self.closure.get(name)
        if isinstance(cell, CellVariable):
            if cell.value is CellVariable.EMPTY:
                raise NameError(f"cannot access free variable '{name}' where it is not "
                                "associated with a value in enclosing scope")
            return cell.value
        if isinstance(cell, ObjectVariable):
            cell = cell.value
        if cell is None:
            return self.locals[name]
        stored = self.out.side_effects.load_attr(self, cell, "cell_contents")
        if stored is not None:  # stored by this frame (`store_cell`)
            return stored
        try:
            value = cell.cell_contents
        except ValueError:
            raise NameError(f"cannot access free variable '{name}' where it is not "
                            "associated with a value in enclosing scope") from None
        src = self.out.guards.name_for(cell, f"cell_{name}") + ".cell_contents"
        return self.out.wrap(value, src)

    @handler("LOAD_DEREF")
    def LOAD_DEREF(self, inst):
        self.push(self._cell_value(inst.argval))

    @handler("LOAD_CLOSURE")
    def LOAD_CLOSURE(self, inst):
        name = inst.argval
        if name in self.cells:
            self.push(self.cells[name])
        elif isinstance(self.closure.get(name), CellVariable):
            self.push(self.closure[name])
        elif name in self.closure:
            self.push(ObjectVariable(self.closure[name]))
        else:
            raise self.unsupported(f"closure over {name}")

    @handler("STORE_DEREF")
    def STORE_DEREF(self, inst):
        name = inst.argval
        target = self.cells.get(name) or self.closure.get(name)
        if isinstance(target, CellVariable):
            target.value = self.pop()
        elif name in self.closure:  # `nonlocal n; n = ...` on a real cell: a side effect
            cell = target.value if isinstance(target, ObjectVariable) else target
            sideeffects.store_cell(self, cell, name, self.pop())
        else:
            self.STORE_FAST(inst)

    @handler("LOAD_CONST")
    def LOAD_CONST(self, inst):
        self.push(ConstantVariable(inst.argval))

    @handler("LOAD_GLOBAL")
    def LOAD_GLOBAL(self, inst):
        name = inst.argval
        stored = self.out.side_effects.load_global(self.f_globals, name)
        if stored is not None:
            var = stored
        elif name in self.f_globals:
            var = self.out.wrap(self.f_globals[name], f"{self.globals_src}[{name!r}]")
        elif hasattr(builtins, name):
            self.out.guards.add(f"{name!r} not in {self.globals_src}")
            var = self.out.wrap(getattr(builtins, name), f"{self.out.guards.B}[{name!r}]")
        else:
            raise NameError(f"name '{name}' is not defined")
        if inst.arg & 1 and PY <= (3, 12):
            self.push(NULL)
        self.push(var)
        if inst.arg & 1 and PY >= (3, 13):
            self.push(NULL)

    @handler("LOAD_ATTR")
    def LOAD_ATTR(self, inst):
        is_method = PY >= (3, 12) and inst.arg & 1
        var = calls.get_attr(self, self.stack[-1], inst.argval)
        self.pop()
        if is_method and PY == (3, 12):
            self.push(NULL)
        self.push(var)
        if is_method and PY >= (3, 13):
            self.push(NULL)

    @handler("LOAD_METHOD", max=(3, 11))
    def LOAD_METHOD(self, inst):
        var = calls.get_attr(self, self.stack[-1], inst.argval)
        self.pop()
        self.push(NULL)
        self.push(var)

    @handler("STORE_ATTR")
    def STORE_ATTR(self, inst):
        obj, value = self.stack[-1], self.stack[-2]
        sideeffects.store_attr(self, obj, inst.argval, value)  # replayed after the graph
        self.popn(2)

    @handler("STORE_GLOBAL")
    def STORE_GLOBAL(self, inst):
        sideeffects.store_global(self, inst.argval, self.stack[-1])
        self.pop()

    @handler("DELETE_ATTR", "DELETE_GLOBAL")
    def DELETE_ATTR(self, inst):
        raise self.unsupported(f"mutation of Python state ({inst.opname} {inst.argrepr})")

    # ---- imports inside the function (`from .functional import gelu`)

    @handler("IMPORT_NAME")
    def IMPORT_NAME(self, inst):
        fromlist, level = self.stack[-1], self.stack[-2]
        mod = importlib.__import__(inst.argval, self.f_globals, None, fromlist.value,
                                   level.value)
        self.popn(2)
        src = self.out.guards.name_for(mod, "mod_" + mod.__name__.replace(".", "_"))
        self.push(ModuleVariable(mod, src))

    @handler("IMPORT_FROM")
    def IMPORT_FROM(self, inst):
        mod = self.stack[-1]
        self.push(self.out.wrap(getattr(mod.value, inst.argval),
                                f"{mod.source}.{inst.argval}"))

    # ---- calls

    @handler("KW_NAMES", max=(3, 12))
    def KW_NAMES(self, inst):
        self.kw_names = self.code.co_consts[inst.arg]

    @handler("CALL")
    def CALL(self, inst):
        self._call(inst.arg, self.kw_names)
        self.kw_names = ()

    @handler("CALL_KW", min=(3, 13))
    def CALL_KW(self, inst):
        names = self.stack[-1]
        self._call(inst.arg, names.value, extra=1)

    def _call(self, argc: int, kw_names: tuple, extra: int = 0) -> None:
        # peek first: a graph break leaves the stack as it was before the call
        n = argc + 2 + extra
        args = self.stack[len(self.stack) - argc - extra:len(self.stack) - extra]
        a, b = self.stack[-n], self.stack[-n + 1]
        if isinstance(a, NullVariable):
            fn = b
        elif isinstance(b, NullVariable):
            fn = a
        else:
            fn, args = a, [b] + args
        kwargs = {}
        if kw_names:
            kwargs = dict(zip(kw_names, args[len(args) - len(kw_names):]))
            args = args[:len(args) - len(kw_names)]
        result = calls.call_function(self, fn, list(args), kwargs)
        self.popn(n)
        self.push(result)

    @handler("CALL_FUNCTION_EX")
    def CALL_FUNCTION_EX(self, inst):
        n = 4 if inst.arg & 1 else 3
        kw = self.stack[-1] if inst.arg & 1 else None
        star = self.stack[-2] if inst.arg & 1 else self.stack[-1]
        a, b = self.stack[-n], self.stack[-n + 1]
        fn = b if isinstance(a, NullVariable) else a
        args = calls.unpack(self, star)
        kwargs = {}
        if kw is not None:
            if not isinstance(kw, DictVariable):
                raise self.unsupported(f"**{kw.describe()} in a call")
            kwargs = dict(kw.items)
        result = calls.call_function(self, fn, list(args), kwargs)
        self.popn(n)
        self.push(result)


def supported_opnames() -> list:
    """The opnames this CPython's interpreter handles (for docs and the dump tool)."""
    return sorted(TABLE)


__all__ += ["Snapshot", "TupleVariable", "supported_opnames"]
