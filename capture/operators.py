"""Python operators during capture: `binary_op`/`compare_op`/`unary_op` map `a + b`, `a < b`,
`-a` (in-place forms included) to the dunders of `eager.Tensor` from one table; constants fold,
sequences concatenate or repeat, symbolic sizes go through `dynamic`. Re-exported by `calls`.
"""

from __future__ import annotations

import enum
import operator
import types

from eager import Tensor
from ir.opdef import is_number

from . import dynamic
from .guards import NUMPY_SCALARS
from .recording import call_op, inplace
from .variables import (
    ConstantVariable,
    ListVariable,
    ObjectVariable,
    OpFunctionVariable,
    SequenceVariable,
    TensorVariable,
    TupleVariable,
    VariableTracker,
)


BINARY = {
    "+": "add", "-": "sub", "*": "mul", "/": "truediv", "@": "matmul", "**": "pow",
    "//": "floordiv", "%": "mod", "&": "and", "|": "or", "^": "xor", "<<": "lshift",
    ">>": "rshift",
}
COMPARE = {"<": ("lt", "gt"), "<=": ("le", "ge"), ">": ("gt", "lt"), ">=": ("ge", "le"),
           "==": ("eq", "eq"), "!=": ("ne", "ne")}


def _operand_ok(v) -> bool:
    return isinstance(v, TensorVariable) or (v.is_constant() and is_number(v.value))


def binary_op(tx, symbol: str, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    """`a <symbol> b` (in-place forms `+=` included) for BINARY_OP."""
    inplace = symbol.endswith("=")
    base = symbol[:-1] if inplace else symbol
    name = BINARY[base]
    num = dynamic.number_binary(tx, name, a, b)
    if num is None:  # `B * T`, `C // nh` of dynamic sizes: a symbolic size
        num = dynamic.symints().size_binary(tx, name, a, b)
    if num is not None:
        return num
    if a.is_constant() and b.is_constant():
        fn = getattr(operator, ("i" if inplace else "") + (name if name not in
                                                            ("and", "or") else name + "_"))
        return ConstantVariable(fn(a.value, b.value))
    if base == "*" and not (inplace and isinstance(a, ListVariable)):
        rep = _repeat(a, b)
        if rep is not None:
            return rep
    if base == "+" and (isinstance(a, SequenceVariable) or isinstance(b, SequenceVariable)):
        sa, sb = _as_sequence(a), _as_sequence(b)  # `() + (t,)`: a constant side as items
        if sa is not None and sb is not None and sa.kind is sb.kind and \
                (isinstance(a, SequenceVariable) or not inplace or type(a.value) is tuple):
            # (`cache = ()` then `cache += (kv,)`: a tuple's `+=` makes a new tuple)
            a, b = sa, sb
    if isinstance(a, SequenceVariable) and isinstance(b, SequenceVariable) and base == "+":
        items = a.items + b.items
        if inplace and isinstance(a, ListVariable):
            tx.out.side_effects.mutate(tx, a)  # the caller's list: replayed after the graph
            a.items = items
            return a
        return type(a)(items)
    if inplace and isinstance(a, TensorVariable) and hasattr(Tensor, f"__i{name}__"):
        return inplace_op(tx, a, name, b)
    return _dunder(tx, f"__{name}__", f"__r{name}__", a, b, base)


def _as_sequence(v):
    """A constant tuple/list as a sequence tracker of constants (None for anything else)."""
    if isinstance(v, SequenceVariable):
        return v
    if v.is_constant() and type(v.value) in (tuple, list):
        return (TupleVariable if type(v.value) is tuple else ListVariable)(
            [ConstantVariable(x) for x in v.value])
    return None


def _repeat(a, b):
    """`seq * n` / `n * seq` on a sequence tracker (`(k,) * 2` of a built tuple), or None."""
    s, n = (a, b) if isinstance(a, SequenceVariable) else (b, a)
    if isinstance(s, SequenceVariable) and n.is_constant() and isinstance(n.value, int) \
            and not isinstance(n.value, bool):
        return type(s)(s.items * n.value)
    return None


def inplace_op(tx, a, name, b):
    return inplace(tx, a, lambda: _dunder(tx, f"__{name}__", f"__r{name}__", a, b, name))


def _numpy_number(v):
    """A numpy scalar constant (`np.float32(2.0)`, `schedule[i]`) as the Python number it
    stands for in a tensor operator (torch treats numpy scalars as Python scalars)."""
    if v.is_constant() and type(v.value).__module__ == "numpy" and \
            type(v.value).__name__ in NUMPY_SCALARS:
        return ConstantVariable(v.value.item())
    return v


def _dunder(tx, fwd: str, rev: str, a, b, symbol: str) -> VariableTracker:
    a, b = dynamic.number_operands(tx, fwd, a, b)
    if isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        a, b = _numpy_number(a), _numpy_number(b)
    if not (_operand_ok(a) and _operand_ok(b)):
        raise tx.unsupported(f"operator {symbol} on {a.describe()} and {b.describe()}")
    if isinstance(a, TensorVariable):
        fn = getattr(Tensor, fwd, None)
        args = [a, b]
    else:
        fn = getattr(Tensor, rev, None)
        args = [b, a]
    if fn is None or not hasattr(fn, "__wick_op__"):
        raise tx.unsupported(f"operator {symbol} on tensors is not supported by capture")
    var = OpFunctionVariable(fn)
    return call_op(tx, var, args, {})


def compare_op(tx, symbol: str, a: VariableTracker, b: VariableTracker) -> VariableTracker:
    num = dynamic.number_compare(tx, symbol, a, b)
    if num is not None:
        return num
    if a.is_constant() and b.is_constant():
        fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
              "==": operator.eq, "!=": operator.ne}[symbol]
        return ConstantVariable(fn(a.value, b.value))
    same = _identity_equality(tx, symbol, a, b)
    if same is None:
        same = _sequence_equality(tx, symbol, a, b)
    if same is not None:
        return same
    fwd, rev = COMPARE[symbol]
    return _dunder(tx, f"__{fwd}__", f"__{rev}__", a, b, symbol)


_PLAIN = (int, float, complex, str, bytes, bool, type(None), tuple)


def _identity_equality(tx, symbol: str, a, b) -> ConstantVariable | None:
    """`self.cfg.norm == NormType.RMS`: `==`/`!=` of objects read from the frame whose class
    keeps `object.__eq__` (enum members, plain objects), or of one with a plain constant, is
    their identity; each object's identity is guarded. None: another comparison."""
    if symbol not in ("==", "!=") or not any(isinstance(v, ObjectVariable) for v in (a, b)):
        return None
    for v in (a, b):
        if isinstance(v, ObjectVariable):
            if not _folds_equality(v.value) or v.source is None and not _plain_class(v.value):
                return None
        elif not (v.is_constant() and (type(v.value) in _PLAIN or _plain_class(v.value))):
            return None
    for v in (a, b):
        if isinstance(v, ObjectVariable) and v.source is not None:
            tx.out.guards.identity(v.source, v.value, type(v.value).__name__)
    return ConstantVariable((a.value == b.value) == (symbol == "=="))


def _plain_class(value) -> bool:
    """A class whose metaclass compares by identity (`type(m) == nn.Linear` in an init
    function; `type(m)` of a guarded object is a constant)."""
    return isinstance(value, type) and type(value).__eq__ is object.__eq__


def _folds_equality(value) -> bool:
    """An object whose `==` is its identity, or an enum member with a builtin mixin's
    `__eq__` (timm's `class Format(str, Enum)`): guarded by identity, `==` folds."""
    eq = type(value).__eq__
    return eq is object.__eq__ or isinstance(value, enum.Enum) and \
        not isinstance(eq, types.FunctionType)


def _sequence_equality(tx, symbol: str, a, b) -> ConstantVariable | None:
    """`tuple(d * 2 for d in x.shape[2:]) == (8, 8)`: `==`/`!=` of two sequences (built
    trackers or constant tuples/lists) as Python compares them, item by item, when every
    item comparison folds to a constant. None: another comparison (a tensor or symbolic
    item: the dunder path names the break)."""
    if symbol not in ("==", "!="):
        return None
    sa, sb = _as_sequence(a), _as_sequence(b)
    if sa is None or sb is None:
        return None
    equal = type(sa) is type(sb) and len(sa.items) == len(sb.items)
    for x, y in zip(sa.items, sb.items) if equal else ():
        r = compare_op(tx, "==", x, y)
        if not r.is_constant():
            return None
        if not r.value:
            equal = False
            break
    return ConstantVariable(equal == (symbol == "=="))


def unary_op(tx, dunder: str, fold, v: VariableTracker) -> VariableTracker:
    if dunder == "__neg__" and isinstance(v, dynamic.SymNumberVariable) and \
            type(v.number) is int:  # `-pos`: 0 - pos, a dynamic int (`cache[-pos:]`)
        return dynamic.number_binary(tx, "sub", ConstantVariable(0), v)
    if dunder == "__neg__" and type(v).__name__ == "SymSizeVariable":  # `x[-n + 1:]`
        return dynamic.symints().size_binary(tx, "sub", ConstantVariable(0), v)
    if v.is_constant():
        return ConstantVariable(fold(v.value))
    if isinstance(v, TensorVariable):
        fn = getattr(Tensor, dunder, None)
        if fn is not None and hasattr(fn, "__wick_op__"):
            return call_op(tx, OpFunctionVariable(fn), [v], {})
    raise tx.unsupported(f"unary {dunder} on {v.describe()}")
