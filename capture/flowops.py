"""The interpreter's operator and control-flow opcodes (mixed into `InstructionTranslator`).

Python operators (`BINARY_OP`, `COMPARE_OP`, `IS_OP`, `CONTAINS_OP`, the unary ops, `TO_BOOL`)
go through `calls.binary_op`/`compare_op`/`unary_op`; branches and loops run on values known at
capture time (a branch on a tensor value is a graph break of kind "branch", which the compiler
may turn into a guarded resume); `with eager.no_grad()` / `eager.autocast` regions enter their
mode; `RETURN_*` set the frame's result. Handlers register in `builders.TABLE` by opname and
CPython version range, as `symbolic.py`'s own.
"""

from __future__ import annotations

import contextlib
import dis
import operator

from . import autocast, calls, dict_objects, inference, vocabulary
from .builders import PY, handler
from .variables import (
    ConstantMethodVariable,
    ConstantVariable,
    DictVariable,
    GradModeExitVariable,
    GradModeVariable,
    IteratorVariable,
    ObjectVariable,
    SequenceVariable,
    SymBoolVariable,
    TensorVariable,
    VariableTracker,
)

BINARY_SYMBOLS = [sym for _, sym in dis._nb_ops]
COMPARE_SHIFT = 0 if PY <= (3, 11) else 4 if PY == (3, 12) else 5


class FlowOps:
    """Handlers for operators, branches, loops, `with` and return (mixed into
    InstructionTranslator, which provides the stack, `jump` and `unsupported`)."""

    # ---- operators

    @handler("BINARY_OP")
    def BINARY_OP(self, inst):
        b, a = self.stack[-1], self.stack[-2]
        result = calls.binary_op(self, BINARY_SYMBOLS[inst.arg], a, b)
        self.popn(2)
        self.push(result)

    @handler("COMPARE_OP")
    def COMPARE_OP(self, inst):
        b, a = self.stack[-1], self.stack[-2]
        result = calls.compare_op(self, dis.cmp_op[inst.arg >> COMPARE_SHIFT], a, b)
        if PY >= (3, 13) and inst.arg & 16:
            result = self._to_bool(result)
        self.popn(2)
        self.push(result)

    @handler("IS_OP")
    def IS_OP(self, inst):
        b, a = self.stack[-1], self.stack[-2]
        if a.is_constant() and b.is_constant():
            same = a.value is b.value
        elif a is b:
            same = True
        elif isinstance(a, (ObjectVariable, ConstantVariable)) and \
                isinstance(b, (ObjectVariable, ConstantVariable)):
            same = a.value is b.value  # (`type(w) is nn.Parameter`: a class both ways)
        elif (a.is_constant() and a.value is None) or (b.is_constant() and b.value is None):
            same = False  # a non-constant tracker is never None
        elif isinstance(a, TensorVariable) and isinstance(b, TensorVariable):
            same = a.node is b.node
        else:
            raise self.unsupported("`is` between values capture cannot compare")
        self.popn(2)
        self.push(ConstantVariable(same != bool(inst.arg)))

    @handler("CONTAINS_OP")
    def CONTAINS_OP(self, inst):
        b, a = self.stack[-1], self.stack[-2]
        if a.is_constant() and b.is_constant():
            found = a.value in b.value
        elif a.is_constant() and isinstance(b, DictVariable):
            found = a.value in b.items
        elif a.is_constant() and getattr(b, "mapping", None) is not None and \
                "__contains__" not in vars(b.cls):  # `"loss" in out` of a ModelOutput
            found = a.value in b.mapping.items
        elif a.is_constant() and isinstance(b, SequenceVariable) and \
                all(v.is_constant() for v in b.items):
            found = a.value in [v.value for v in b.items]
        elif a.is_constant() and isinstance(b, ObjectVariable) and b.source is not None and \
                type(b.value) in (set, frozenset) and \
                all(type(k) in (str, int, bool) for k in b.value):  # `name in self._set`
            g = self.out.guards
            g.add(f"{b.source} == {g.name_for(frozenset(b.value), '___set')}")
            found = a.value in b.value
        elif a.is_constant() and dict_objects.user_dict_data(self, b) is not None:
            found = a.value in dict_objects.user_dict_data(self, b).items  # `k in enc`
        elif a.is_constant() and vocabulary.container_entries(self, b) is not None:
            found = hasattr(type(b.value), "keys") and \
                a.value in [k for k, _ in vocabulary.container_entries(self, b)]  # guarded
        else:
            raise self.unsupported("`in` on values that are not constants")
        self.popn(2)
        self.push(ConstantVariable(found != bool(inst.arg)))

    def _unary(self, dunder, fold):
        result = calls.unary_op(self, dunder, fold, self.stack[-1])
        self.pop()
        self.push(result)

    @handler("UNARY_NEGATIVE")
    def UNARY_NEGATIVE(self, inst):
        self._unary("__neg__", operator.neg)

    @handler("UNARY_POSITIVE", max=(3, 11))
    def UNARY_POSITIVE(self, inst):
        self._unary("__pos__", operator.pos)

    @handler("UNARY_INVERT")
    def UNARY_INVERT(self, inst):
        self._unary("__invert__", operator.invert)

    @handler("UNARY_NOT")
    def UNARY_NOT(self, inst):
        v = self.stack[-1]
        if isinstance(v, SymBoolVariable):
            result = SymBoolVariable(v.tensor, not v.negate)
        else:
            result = ConstantVariable(not self._truth(v).value)
        self.pop()
        self.push(result)

    @handler("TO_BOOL", min=(3, 13))
    def TO_BOOL(self, inst):
        result = self._to_bool(self.stack[-1])
        self.pop()
        self.push(result)

    def _to_bool(self, v):
        if isinstance(v, (TensorVariable, SymBoolVariable)):
            return v if isinstance(v, SymBoolVariable) else SymBoolVariable(v)
        return self._truth(v)

    # ---- control flow on values known at capture time

    def _truth(self, v: VariableTracker) -> ConstantVariable:
        if v.is_constant():
            return ConstantVariable(bool(v.value))
        if isinstance(v, (TensorVariable, SymBoolVariable)):
            raise self.unsupported("branch on a tensor value (data-dependent control flow)")
        if isinstance(v, (SequenceVariable, DictVariable)):
            return ConstantVariable(bool(v.items))
        if isinstance(v, ObjectVariable) and type(v.value).__bool__ is object.__bool__ \
                if hasattr(type(v.value), "__bool__") else isinstance(v, ObjectVariable) and \
                not hasattr(type(v.value), "__len__"):
            return ConstantVariable(True)
        raise self.unsupported(f"truth value of {v.describe()}")

    def _branch(self, inst, jump_when: bool) -> None:
        v = self.stack[-1]
        if isinstance(v, (TensorVariable, SymBoolVariable)):
            tensor = v.tensor if isinstance(v, SymBoolVariable) else v
            negate = v.negate if isinstance(v, SymBoolVariable) else False
            raise self.unsupported("branch on a tensor value (data-dependent control flow)",
                                   "branch", tensor, negate)
        cond = self._truth(v).value
        self.pop()
        if cond == jump_when:
            self.jump(inst)

    @handler("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE")
    def POP_JUMP_IF_TRUE(self, inst):
        self._branch(inst, True)

    @handler("POP_JUMP_IF_FALSE", "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE")
    def POP_JUMP_IF_FALSE(self, inst):
        self._branch(inst, False)

    def _is_none(self, v: VariableTracker) -> bool:
        return v.is_constant() and v.value is None

    @handler("POP_JUMP_IF_NONE", "POP_JUMP_FORWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NONE")
    def POP_JUMP_IF_NONE(self, inst):
        if self._is_none(self.pop()):
            self.jump(inst)

    @handler("POP_JUMP_IF_NOT_NONE", "POP_JUMP_FORWARD_IF_NOT_NONE",
             "POP_JUMP_BACKWARD_IF_NOT_NONE")
    def POP_JUMP_IF_NOT_NONE(self, inst):
        if not self._is_none(self.pop()):
            self.jump(inst)

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
        v = self.stack[-1]
        it = v if isinstance(v, IteratorVariable) else IteratorVariable(calls.unpack(self, v))
        self.pop()
        self.push(it)

    @handler("FOR_ITER")
    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if not isinstance(it, IteratorVariable):
            raise self.unsupported(f"iterating over {it.describe()}")
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
        ctx = self.stack[-1]
        region = autocast.region_of(self, ctx)
        if region is not None:  # with eager.autocast(...): see capture/autocast.py
            self.pop()
            self.stack.extend(autocast.enter(self, region))
            return
        if type(ctx).__name__ == "ContextGeneratorVariable":  # a user @contextmanager's
            from .context_generators import enter

            self.pop()
            self.stack.extend(enter(self, ctx))
            return
        if isinstance(ctx, ConstantVariable) and type(ctx.value) is contextlib.nullcontext:
            self.pop()  # (its __exit__ does nothing; __enter__ gives the constant it holds)
            self.push(ConstantMethodVariable(ctx.value.__exit__))
            self.push(ConstantVariable(ctx.value.enter_result))
            return
        if not isinstance(ctx, GradModeVariable):
            raise self.unsupported(f"`with` on {ctx.describe()}")
        self.pop()
        prev = ctx.prev if ctx.prev is not None else self.out.grad_enabled
        self.push(GradModeExitVariable(prev))
        inference.enter(self, ctx, self.stack[-1])
        self.out.grad_enabled = ctx.mode
        self.push(ConstantVariable(None))

    # ---- return

    @handler("RETURN_VALUE")
    def RETURN_VALUE(self, inst):
        self.result = self.pop()

    @handler("RETURN_CONST", min=(3, 12))
    def RETURN_CONST(self, inst):
        self.result = ConstantVariable(inst.argval)
