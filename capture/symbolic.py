"""The symbolic bytecode interpreter: runs a function's CPython bytecode on variable trackers.

`InstructionTranslator` walks `fn.__code__` one instruction at a time with a stack of trackers
and symbolic locals (TorchDynamo's `symbolic_convert.py`, in miniature). Tensors become graph
`Node`s, Python values fold, and anything it cannot model raises `GraphBreak` with a
`BreakReason` naming the user's file:line. Handlers are methods named after the opname and
registered for a range of CPython versions (`@handler(..., min=, max=)`), so 3.11, 3.12 and 3.13
share one table. The state shared with inlined frames (graph, guards, inputs, grad mode) is the
`OutputGraph` of `output_graph.py`; what calls and attribute reads mean is in `calls.py`.
Touches `capture` only (and `dis`).
"""

from __future__ import annotations

import builtins
import dis
import linecache
import operator
import os
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import calls, config
from .variables import (
    NULL, BuiltinVariable, ConstantVariable, FunctionVariable, GradModeExitVariable,
    GradModeVariable, ListVariable, ModuleVariable, NullVariable, OpFunctionVariable,
    SequenceVariable, TensorVariable, TupleVariable, VariableTracker,
)

if TYPE_CHECKING:
    from .output_graph import OutputGraph

PY = sys.version_info[:2]


@dataclass
class BreakReason:
    """Why capture stopped: what, at which instruction, where in the user's source."""

    reason: str
    instruction: str
    filename: str
    lineno: int
    source_line: str

    def __str__(self) -> str:
        return (f"{self.filename}:{self.lineno}: {self.reason} (at {self.instruction})\n"
                f"    {self.source_line}")


class GraphBreak(Exception):
    """Raised inside the interpreter when an instruction or call cannot be captured."""

    def __init__(self, reason: BreakReason):
        super().__init__(str(reason))
        self.reason = reason


class Unsupported(RuntimeError):
    """`fullgraph=True` and the function cannot be captured as one graph (names the break)."""


class IteratorVariable(VariableTracker):
    """An iterator over known items (`for i in (1, 2)`, `for w in ws`): loops unroll."""

    def __init__(self, items):
        self.items = list(items)
        self.index = 0


_TABLE: dict[str, object] = {}


def handler(*opnames, min=(3, 11), max=(3, 99)):  # noqa: A002
    """Register the decorated method for `opnames` on CPython versions min..max (inclusive)."""

    def deco(fn):
        if min <= PY <= max:
            for name in opnames:
                _TABLE[name] = fn
        return fn

    return deco


BINARY_SYMBOLS = [sym for _, sym in dis._nb_ops]
COMPARE_SHIFT = 0 if PY <= (3, 11) else 4 if PY == (3, 12) else 5


class InstructionTranslator:
    """Symbolically runs one code object; `run()` returns the tracker of its return value."""

    def __init__(self, out: OutputGraph, fn, f_locals: dict, depth: int = 0):
        self.out = out
        self.fn = fn
        self.code = fn.__code__
        self.f_globals = fn.__globals__
        self.globals_src = out.globals_name(fn.__globals__)
        self.closure = dict(zip(self.code.co_freevars, fn.__closure__ or ()))
        self.locals = dict(f_locals)
        self.stack: list[VariableTracker] = []
        self.depth = depth
        self.instructions = list(dis.get_instructions(self.code))
        self.index_of = {inst.offset: i for i, inst in enumerate(self.instructions)}
        self.ip = 0
        self.inst = self.instructions[0]
        self.lineno = self.code.co_firstlineno
        self.kw_names: tuple = ()
        self.result: VariableTracker | None = None

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

    def unsupported(self, reason: str) -> GraphBreak:
        """A GraphBreak at the current instruction (raise it)."""
        line = linecache.getline(self.code.co_filename, self.lineno).strip()
        return GraphBreak(BreakReason(reason, self.inst.opname, self.code.co_filename,
                                      self.lineno, line))

    def jump(self, inst) -> None:
        self.ip = self.index_of[inst.argval]

    # ---- the loop

    def run(self) -> VariableTracker:
        while self.result is None:
            inst = self.inst = self.instructions[self.ip]
            self.ip += 1
            if inst.positions is not None and inst.positions.lineno is not None:
                self.lineno = inst.positions.lineno
            self.out.instructions += 1
            if self.out.instructions > config.instruction_limit:
                raise self.unsupported("too many instructions (an unrolled loop?)")
            fn = _TABLE.get(inst.opname)
            if fn is None:
                raise self.unsupported(f"instruction {inst.opname} is not supported")
            depth = len(self.stack)
            fn(self, inst)
            if config.debug:
                self._check_stack_effect(inst, depth)
        return self.result

    def _check_stack_effect(self, inst, depth: int) -> None:
        if inst.opname in ("PRECALL", "RETURN_VALUE", "RETURN_CONST") or \
                inst.opcode < dis.HAVE_ARGUMENT and inst.opname.startswith("RETURN"):
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

    # ---- no-ops and stack shuffling

    @handler("RESUME", "NOP", "PRECALL", "EXTENDED_ARG", "CACHE", "MAKE_CELL", "COPY_FREE_VARS")
    def NOP(self, inst):
        pass

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

    # ---- locals, constants, globals, attributes

    @handler("LOAD_FAST", "LOAD_FAST_CHECK")
    def LOAD_FAST(self, inst):
        if inst.argval not in self.locals:
            raise UnboundLocalError(f"cannot access local variable '{inst.argval}' where it "
                                    "is not associated with a value")
        self.push(self.locals[inst.argval])

    @handler("STORE_FAST")
    def STORE_FAST(self, inst):
        self.locals[inst.argval] = self.pop()

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

    @handler("LOAD_DEREF", "LOAD_CLOSURE")
    def LOAD_DEREF(self, inst):
        name = inst.argval
        if name in self.closure:
            cell = self.closure[name]
            src = self.out.guards.name_for(cell, f"cell_{name}") + ".cell_contents"
            try:
                value = cell.cell_contents
            except ValueError:
                raise NameError(f"cannot access free variable '{name}' where it is not "
                                "associated with a value in enclosing scope") from None
            self.push(self.out.wrap(value, src))
        elif inst.opname == "LOAD_CLOSURE":
            raise self.unsupported("creating a closure")
        else:
            self.LOAD_FAST(inst)

    @handler("STORE_DEREF")
    def STORE_DEREF(self, inst):
        if inst.argval in self.closure:
            raise self.unsupported(f"assignment to free variable {inst.argval}")
        self.STORE_FAST(inst)

    @handler("LOAD_CONST")
    def LOAD_CONST(self, inst):
        self.push(ConstantVariable(inst.argval))

    @handler("LOAD_GLOBAL")
    def LOAD_GLOBAL(self, inst):
        name = inst.argval
        if name in self.f_globals:
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
        var = calls.get_attr(self, self.pop(), inst.argval)
        if is_method and PY == (3, 12):
            self.push(NULL)
        self.push(var)
        if is_method and PY >= (3, 13):
            self.push(NULL)

    @handler("LOAD_METHOD", max=(3, 11))
    def LOAD_METHOD(self, inst):
        var = calls.get_attr(self, self.pop(), inst.argval)
        self.push(NULL)
        self.push(var)

    @handler("STORE_ATTR", "STORE_SUBSCR", "STORE_GLOBAL", "DELETE_SUBSCR", "DELETE_ATTR")
    def STORE_ATTR(self, inst):
        raise self.unsupported(f"mutation of Python state ({inst.opname} {inst.argrepr})")

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
        names = self.pop()
        self._call(inst.arg, names.value)

    def _call(self, argc: int, kw_names: tuple) -> None:
        args = self.popn(argc)
        b, a = self.pop(), self.pop()
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
        self.push(calls.call_function(self, fn, list(args), kwargs))

    # ---- operators

    @handler("BINARY_OP")
    def BINARY_OP(self, inst):
        b, a = self.pop(), self.pop()
        self.push(calls.binary_op(self, BINARY_SYMBOLS[inst.arg], a, b))

    @handler("COMPARE_OP")
    def COMPARE_OP(self, inst):
        b, a = self.pop(), self.pop()
        result = calls.compare_op(self, dis.cmp_op[inst.arg >> COMPARE_SHIFT], a, b)
        if PY >= (3, 13) and inst.arg & 16:
            result = self._truth(result)
        self.push(result)

    @handler("IS_OP")
    def IS_OP(self, inst):
        b, a = self.pop(), self.pop()
        if a.is_constant() and b.is_constant():
            same = a.value is b.value
        elif a is b:
            same = True
        elif (a.is_constant() and a.value is None) or (b.is_constant() and b.value is None):
            same = False  # a non-constant tracker is never None
        else:
            raise self.unsupported("`is` between values capture cannot compare")
        self.push(ConstantVariable(same != bool(inst.arg)))

    @handler("CONTAINS_OP")
    def CONTAINS_OP(self, inst):
        b, a = self.pop(), self.pop()
        if not (a.is_constant() and b.is_constant()):
            raise self.unsupported("`in` on values that are not constants")
        self.push(ConstantVariable((a.value in b.value) != bool(inst.arg)))

    @handler("UNARY_NEGATIVE")
    def UNARY_NEGATIVE(self, inst):
        self.push(calls.unary_op(self, "__neg__", operator.neg, self.pop()))

    @handler("UNARY_POSITIVE", max=(3, 11))
    def UNARY_POSITIVE(self, inst):
        self.push(calls.unary_op(self, "__pos__", operator.pos, self.pop()))

    @handler("UNARY_INVERT")
    def UNARY_INVERT(self, inst):
        self.push(calls.unary_op(self, "__invert__", operator.invert, self.pop()))

    @handler("UNARY_NOT")
    def UNARY_NOT(self, inst):
        self.push(ConstantVariable(not self._truth(self.pop()).value))

    @handler("TO_BOOL", min=(3, 13))
    def TO_BOOL(self, inst):
        self.push(self._truth(self.pop()))

    @handler("CALL_INTRINSIC_1", min=(3, 12))
    def CALL_INTRINSIC_1(self, inst):
        if inst.argrepr == "INTRINSIC_UNARY_POSITIVE":
            self.push(calls.unary_op(self, "__pos__", operator.pos, self.pop()))
        elif inst.argrepr == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleVariable(self.pop().items))
        else:
            raise self.unsupported(f"intrinsic {inst.argrepr}")

    # ---- containers

    @handler("BUILD_TUPLE")
    def BUILD_TUPLE(self, inst):
        items = self.popn(inst.arg)
        if all(v.is_constant() for v in items):
            self.push(ConstantVariable(tuple(v.value for v in items)))
        else:
            self.push(TupleVariable(items))

    @handler("BUILD_LIST")
    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    @handler("LIST_EXTEND")
    def LIST_EXTEND(self, inst):
        items = calls.unpack(self, self.pop())
        self.stack[-inst.arg].items.extend(items)

    @handler("LIST_APPEND")
    def LIST_APPEND(self, inst):
        item = self.pop()
        self.stack[-inst.arg].items.append(item)

    @handler("LIST_TO_TUPLE", max=(3, 11))
    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().items))

    @handler("UNPACK_SEQUENCE")
    def UNPACK_SEQUENCE(self, inst):
        items = calls.unpack(self, self.pop())
        if len(items) != inst.arg:
            raise ValueError(f"too many values to unpack (expected {inst.arg})"
                             if len(items) > inst.arg else
                             f"not enough values to unpack (expected {inst.arg}, got "
                             f"{len(items)})")
        for v in reversed(items):
            self.push(v)

    @handler("BUILD_SLICE")
    def BUILD_SLICE(self, inst):
        parts = self.popn(inst.arg)
        if not all(v.is_constant() for v in parts):
            raise self.unsupported("slice with non-constant bounds")
        self.push(ConstantVariable(slice(*(v.value for v in parts))))

    @handler("BINARY_SUBSCR")
    def BINARY_SUBSCR(self, inst):
        index, obj = self.pop(), self.pop()
        self.push(calls.subscript(self, obj, index))

    @handler("BINARY_SLICE", min=(3, 12))
    def BINARY_SLICE(self, inst):
        end, start, obj = self.pop(), self.pop(), self.pop()
        if not (start.is_constant() and end.is_constant()):
            raise self.unsupported("slice with non-constant bounds")
        self.push(calls.subscript(self, obj, ConstantVariable(slice(start.value, end.value))))

    # ---- control flow on values known at capture time

    def _truth(self, v: VariableTracker) -> ConstantVariable:
        if v.is_constant():
            return ConstantVariable(bool(v.value))
        if isinstance(v, TensorVariable):
            raise self.unsupported("branch on a tensor value (data-dependent control flow)")
        if isinstance(v, SequenceVariable):
            return ConstantVariable(bool(v.items))
        if isinstance(v, (ModuleVariable, FunctionVariable, OpFunctionVariable,
                          BuiltinVariable)):
            return ConstantVariable(True)
        raise self.unsupported(f"truth value of {v.describe()}")

    def _jump_if(self, inst, cond: bool) -> None:
        if cond:
            self.jump(inst)

    @handler("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
    def POP_JUMP_IF_TRUE(self, inst):
        self._jump_if(inst, self._truth(self.pop()).value)

    @handler("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
    def POP_JUMP_IF_FALSE(self, inst):
        self._jump_if(inst, not self._truth(self.pop()).value)

    def _is_none(self, v: VariableTracker) -> bool:
        return v.is_constant() and v.value is None

    @handler("POP_JUMP_IF_NONE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
    def POP_JUMP_IF_NONE(self, inst):
        self._jump_if(inst, self._is_none(self.pop()))

    @handler("POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
             "POP_JUMP_BACKWARD_IF_NOT_NONE")
    def POP_JUMP_IF_NOT_NONE(self, inst):
        self._jump_if(inst, not self._is_none(self.pop()))

    @handler("JUMP_IF_TRUE_OR_POP", "JUMP_IF_FALSE_OR_POP", max=(3, 11))
    def JUMP_IF_X_OR_POP(self, inst):
        cond = self._truth(self.stack[-1]).value
        if cond == (inst.opname == "JUMP_IF_TRUE_OR_POP"):
            self.jump(inst)
        else:
            self.pop()

    @handler("JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP")
    def JUMP_FORWARD(self, inst):
        self.jump(inst)

    @handler("GET_ITER")
    def GET_ITER(self, inst):
        v = self.pop()
        if isinstance(v, IteratorVariable):
            self.push(v)
            return
        self.push(IteratorVariable(calls.unpack(self, v)))

    @handler("FOR_ITER")
    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if it.index < len(it.items):
            self.push(it.items[it.index])
            it.index += 1
            return
        self.pop()
        self.jump(inst)
        if PY >= (3, 12) and self.instructions[self.ip].opname == "END_FOR":
            self.ip += 1
            if PY >= (3, 13) and self.instructions[self.ip].opname == "POP_TOP":
                self.ip += 1

    # ---- with eager.no_grad(): ...

    @handler("BEFORE_WITH")
    def BEFORE_WITH(self, inst):
        ctx = self.pop()
        if not isinstance(ctx, GradModeVariable):
            raise self.unsupported(f"`with` on {ctx.describe()}")
        prev = ctx.prev if ctx.prev is not None else self.out.grad_enabled
        self.push(GradModeExitVariable(prev))
        self.out.grad_enabled = ctx.mode
        self.push(ConstantVariable(None))

    # ---- return

    @handler("RETURN_VALUE")
    def RETURN_VALUE(self, inst):
        self.result = self.pop()

    @handler("RETURN_CONST", min=(3, 12))
    def RETURN_CONST(self, inst):
        self.result = ConstantVariable(inst.argval)


def supported_opnames() -> list:
    """The opnames this CPython's interpreter handles (for docs and the dump tool)."""
    return sorted(_TABLE)
