"""Opcode handlers that build Python values: containers, unpacking, subscripts, functions
(closures, lambdas, comprehensions, generator expressions), f-strings, assert/raise.

A mixin of `symbolic.InstructionTranslator` (which holds the stack and the locals), plus the
version-ranged handler table both share: `@handler("OPNAME", min=(3, 12))` registers a method
for the CPython versions min..max, so that each version's opcode set is explicit (as Thunder
does). Values stay trackers: a list built by the code is a `ListVariable`, a dict a
`DictVariable`, a nested function a `NestedFunctionVariable` whose call is inlined. Touches
`capture` only.
"""

from __future__ import annotations

import sys

from . import calls, dict_objects, symints
from .variables import (
    NULL,
    BuiltinVariable,
    ConstantVariable,
    DictVariable,
    IteratorVariable,
    ListVariable,
    NestedFunctionVariable,
    SequenceVariable,
    SetVariable,
    TupleVariable,
    VariableTracker,
)

PY = sys.version_info[:2]
TABLE: dict[str, object] = {}


def handler(*opnames, min=(3, 11), max=(3, 99)):
    """Register the decorated method for `opnames` on CPython versions min..max (inclusive)."""

    def deco(fn):
        if min <= PY <= max:
            for name in opnames:
                TABLE[name] = fn
        return fn

    return deco


def _fresh(tx, v) -> bool:
    """True when `v` was built by the captured code (mutating it changes no outside state)."""
    return v.source is None


class BuildOps:
    """Handlers for building values (mixed into InstructionTranslator)."""

    # ---- tuples, lists, sets, dicts

    @handler("BUILD_TUPLE")
    def BUILD_TUPLE(self, inst):
        items = self.popn(inst.arg)
        if all(v.is_constant() and not getattr(v, "unfolded", False) for v in items):
            self.push(ConstantVariable(tuple(v.value for v in items)))
        else:
            self.push(TupleVariable(items))

    @handler("BUILD_LIST")
    def BUILD_LIST(self, inst):
        self.push(ListVariable(self.popn(inst.arg)))

    @handler("BUILD_SET")
    def BUILD_SET(self, inst):
        items = self.popn(inst.arg)
        self.push(SetVariable(_dedupe(self, items)))

    @handler("LIST_EXTEND", "SET_UPDATE")
    def LIST_EXTEND(self, inst):
        items = calls.unpack(self, self.stack[-1])
        target = self.stack[-inst.arg - 1]
        self.pop()
        target.items.extend(items)
        if isinstance(target, SetVariable):
            target.items = _dedupe(self, target.items)

    @handler("LIST_APPEND", "SET_ADD")
    def LIST_APPEND(self, inst):
        item = self.pop()
        target = self.stack[-inst.arg]
        target.items.append(item)
        if isinstance(target, SetVariable):
            target.items = _dedupe(self, target.items)

    @handler("LIST_TO_TUPLE", max=(3, 11))
    def LIST_TO_TUPLE(self, inst):
        self.push(TupleVariable(self.pop().items))

    @handler("BUILD_MAP")
    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        keys, values = flat[0::2], flat[1::2]
        self.push(DictVariable({self._key(k): v for k, v in zip(keys, values)}))

    @handler("BUILD_CONST_KEY_MAP")
    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.pop().value
        values = self.popn(inst.arg)
        self.push(DictVariable(dict(zip(keys, values))))

    @handler("MAP_ADD")
    def MAP_ADD(self, inst):
        value, key = self.pop(), self.pop()
        self.stack[-inst.arg].items[self._key(key)] = value

    @handler("DICT_UPDATE", "DICT_MERGE")
    def DICT_UPDATE(self, inst):
        other = self.stack[-1]
        if isinstance(other, DictVariable):
            items = other.items
        elif other.is_constant() and isinstance(other.value, dict):
            items = {k: ConstantVariable(v) for k, v in other.value.items()}
        else:
            data = dict_objects.user_dict_data(self, other)  # `model(**batch_encoding)`
            if data is None:
                raise self.unsupported(f"dict update with {other.describe()}")
            items = data.items
        self.pop()
        self.stack[-inst.arg].items.update(items)

    def _key(self, k: VariableTracker):
        if not k.is_constant():
            raise self.unsupported(f"dict key {k.describe()} is not a constant")
        return k.value

    # ---- unpacking and subscripts

    @handler("UNPACK_SEQUENCE")
    def UNPACK_SEQUENCE(self, inst):
        items = calls.unpack(self, self.stack[-1])
        if len(items) != inst.arg:
            raise ValueError(f"too many values to unpack (expected {inst.arg})"
                             if len(items) > inst.arg else
                             f"not enough values to unpack (expected {inst.arg}, got "
                             f"{len(items)})")
        self.pop()
        for v in reversed(items):
            self.push(v)

    @handler("UNPACK_EX")
    def UNPACK_EX(self, inst):
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = calls.unpack(self, self.stack[-1])
        if len(items) < before + after:
            raise ValueError(f"not enough values to unpack (expected at least "
                             f"{before + after}, got {len(items)})")
        self.pop()
        middle = ListVariable(items[before:len(items) - after])
        for v in reversed(items[:before] + [middle] + items[len(items) - after:]):
            self.push(v)

    @handler("BUILD_SLICE")
    def BUILD_SLICE(self, inst):
        parts = self.stack[-inst.arg:]
        if not all(v.is_constant() for v in parts):
            raise self.unsupported("slice with non-constant bounds")
        sym = symints.make_slice(self, parts)  # `pos:pos + T` of a dynamic int
        self.popn(inst.arg)
        self.push(sym or ConstantVariable(slice(*(v.value for v in parts))))

    @handler("BINARY_SUBSCR")
    def BINARY_SUBSCR(self, inst):
        index, obj = self.stack[-1], self.stack[-2]
        result = calls.subscript(self, obj, index)
        self.popn(2)
        self.push(result)

    @handler("BINARY_SLICE", min=(3, 12))
    def BINARY_SLICE(self, inst):
        end, start, obj = self.stack[-1], self.stack[-2], self.stack[-3]
        if not (start.is_constant() and end.is_constant()):
            raise self.unsupported("slice with non-constant bounds")
        key = symints.make_slice(self, [start, end]) or ConstantVariable(
            slice(start.value, end.value))
        result = calls.subscript(self, obj, key)
        self.popn(3)
        self.push(result)

    @handler("STORE_SUBSCR")
    def STORE_SUBSCR(self, inst):
        index, obj, value = self.stack[-1], self.stack[-2], self.stack[-3]
        calls.store_subscript(self, obj, index, value)
        self.popn(3)

    @handler("STORE_SLICE", min=(3, 12))
    def STORE_SLICE(self, inst):
        end, start, obj, value = self.stack[-1], self.stack[-2], self.stack[-3], self.stack[-4]
        if not (start.is_constant() and end.is_constant()):
            raise self.unsupported("slice with non-constant bounds")
        key = symints.make_slice(self, [start, end]) or ConstantVariable(
            slice(start.value, end.value))
        calls.store_subscript(self, obj, key, value)
        self.popn(4)

    @handler("DELETE_SUBSCR")
    def DELETE_SUBSCR(self, inst):
        index, obj = self.stack[-1], self.stack[-2]
        if isinstance(obj, (DictVariable, ListVariable)) and index.is_constant() and (
                isinstance(obj, DictVariable) or isinstance(index.value, int)):
            self.out.side_effects.mutate(self, obj)  # (the caller's: replayed after)
            del obj.items[index.value]
        else:
            raise self.unsupported(f"mutation of Python state (del {obj.describe()}[...])")
        self.popn(2)

    # ---- intrinsics (3.12+)

    @handler("CALL_INTRINSIC_1", min=(3, 12))
    def CALL_INTRINSIC_1(self, inst):
        if inst.argrepr == "INTRINSIC_UNARY_POSITIVE":
            self._unary("__pos__", lambda v: +v)
        elif inst.argrepr == "INTRINSIC_LIST_TO_TUPLE":
            self.push(TupleVariable(self.pop().items))
        else:
            raise self.unsupported(f"intrinsic {inst.argrepr}")

    # ---- functions, closures, generators

    @handler("MAKE_FUNCTION")
    def MAKE_FUNCTION(self, inst):
        code = self.pop().value
        fn = NestedFunctionVariable(code, self.f_globals,
                                    qualname=f"{self.code.co_name}.<locals>.{code.co_name}")
        if PY <= (3, 12):
            flags = inst.arg
            if flags & 0x08:
                fn.closure = tuple(self.pop().items)
            if flags & 0x04:
                self.pop()  # annotations
            if flags & 0x02:
                fn.kwdefaults = dict(self.pop().items)
            if flags & 0x01:
                fn.defaults = tuple(calls.unpack(self, self.pop()))
        self.push(fn)

    @handler("SET_FUNCTION_ATTRIBUTE", min=(3, 13))
    def SET_FUNCTION_ATTRIBUTE(self, inst):
        fn, value = self.pop(), self.pop()
        if inst.arg == 0x08:
            fn.closure = tuple(value.items)
        elif inst.arg == 0x02:
            fn.kwdefaults = dict(value.items)
        elif inst.arg == 0x01:
            fn.defaults = tuple(calls.unpack(self, value))
        self.push(fn)

    @handler("RETURN_GENERATOR")
    def RETURN_GENERATOR(self, inst):
        if self.yields is None:
            raise self.unsupported("generator run outside a consumer")
        self.push(ConstantVariable(None))

    @handler("YIELD_VALUE")
    def YIELD_VALUE(self, inst):
        if self.yields is None:
            raise self.unsupported("yield outside a consumed generator")
        self.yields.append(self.pop())
        self.push(ConstantVariable(None))
        if getattr(self, "suspend_at_yield", False):  # a @contextmanager's `with` entered
            from .context_generators import SUSPENDED

            self.result = SUSPENDED

    # ---- `yield from` in a consumed generator (`yield from self.stage1.named_children()`)

    @handler("GET_YIELD_FROM_ITER")
    def GET_YIELD_FROM_ITER(self, inst):
        v = self.pop()
        self.push(v if isinstance(v, IteratorVariable) else
                  IteratorVariable(calls.unpack(self, v)))

    @handler("SEND")
    def SEND(self, inst):
        """The sub-iterator's next item replaces the sent value; exhausted, its return value
        (None for an iterator) does and the code jumps (3.11: it replaces the iterator)."""
        it = self.stack[-2]
        if not isinstance(it, IteratorVariable):
            raise self.unsupported(f"`yield from` / send to {it.describe()}")
        self.pop()
        if it.index < len(it.items):
            it.index += 1
            self.push(it.items[it.index - 1])
            return
        if PY < (3, 12):
            self.pop()
        self.push(ConstantVariable(None))
        self.jump(inst)

    @handler("END_SEND", min=(3, 12))
    def END_SEND(self, inst):
        value = self.pop()
        self.pop()
        self.push(value)

    # ---- f-strings

    def _format(self, value, conversion: int, spec) -> ConstantVariable:
        if not value.is_constant() or (spec is not None and not spec.is_constant()):
            raise self.unsupported(f"f-string of {value.describe()}")
        v = value.value
        v = (v, str(v), repr(v), ascii(v))[conversion]
        return ConstantVariable(format(v, spec.value if spec is not None else ""))

    @handler("FORMAT_VALUE", max=(3, 12))
    def FORMAT_VALUE(self, inst):
        has_spec = inst.arg & 0x04
        spec = self.stack[-1] if has_spec else None
        value = self.stack[-2] if has_spec else self.stack[-1]
        result = self._format(value, inst.arg & 0x03, spec)
        self.popn(2 if has_spec else 1)
        self.push(result)

    @handler("CONVERT_VALUE", min=(3, 13))
    def CONVERT_VALUE(self, inst):
        result = self._format(self.stack[-1], inst.arg, None)
        self.pop()
        self.push(result)

    @handler("FORMAT_SIMPLE", min=(3, 13))
    def FORMAT_SIMPLE(self, inst):
        result = self._format(self.stack[-1], 0, None)
        self.pop()
        self.push(result)

    @handler("FORMAT_WITH_SPEC", min=(3, 13))
    def FORMAT_WITH_SPEC(self, inst):
        result = self._format(self.stack[-2], 0, self.stack[-1])
        self.popn(2)
        self.push(result)

    @handler("BUILD_STRING")
    def BUILD_STRING(self, inst):
        parts = self.stack[-inst.arg:] if inst.arg else []
        if not all(v.is_constant() for v in parts):
            raise self.unsupported("string built from non-constant parts")
        self.popn(inst.arg)
        self.push(ConstantVariable("".join(v.value for v in parts)))

    # ---- assert / raise: the raise itself runs eagerly

    @handler("LOAD_ASSERTION_ERROR")
    def LOAD_ASSERTION_ERROR(self, inst):
        self.push(BuiltinVariable(AssertionError))

    @handler("RAISE_VARARGS")
    def RAISE_VARARGS(self, inst):
        from .handlers import raise_caught  # lazy: handlers imports this module

        raise_caught(self, inst)  # an exception a `try` of the capture catches: traced
        raise self.unsupported("raise statement (the exception is raised eagerly)")


def _dedupe(tx, items: list) -> list:
    if not all(v.is_constant() for v in items):
        raise tx.unsupported("set of values that are not constants")
    seen, out = set(), []
    for v in items:
        if v.value not in seen:
            seen.add(v.value)
            out.append(v)
    return out


__all__ = ["NULL", "PY", "TABLE", "BuildOps", "SequenceVariable", "handler"]
