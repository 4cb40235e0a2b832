"""`super()` inside captured code: `super().forward(x)`, `super(Cls, self).method(...)`.

`super()` with no arguments reads the frame's `__class__` cell and its first argument, as
CPython does; `super(cls, obj)` takes them from its arguments. The result is a `SuperVariable`;
reading an attribute of it resolves `getattr(super(cls, obj), name)` at capture time: a plain
function of a later class in the MRO becomes a bound `FunctionVariable` (inlined when called,
`self` = the object's tracker) guarded by identity; any other attribute is wrapped as a value
read from that expression. 3.12+ compile `super().name` to `LOAD_SUPER_ATTR` (handled here).
Touches `capture`.
"""

from __future__ import annotations

import types

from .builders import PY, handler
from .variables import NULL, FunctionVariable, ObjectVariable, VariableTracker


class SuperVariable(VariableTracker):
    """`super(cls, obj)` with `cls` a known class and `obj` a tracker of a known object."""

    def __init__(self, cls, obj):
        self.cls, self.obj, self.source = cls, obj, None

    def describe(self) -> str:
        return f"super({self.cls.__qualname__}, ...)"


def _class_of(tx, var):
    value = getattr(var, "value", None)
    if isinstance(var, ObjectVariable) and isinstance(value, type):
        return value
    if var.is_constant() and isinstance(value, type):
        return value
    raise tx.unsupported(f"super() with a first argument that is not a known class "
                         f"({var.describe()})")


def make_super(tx, args: list) -> SuperVariable:
    """The tracker of `super(*args)` called in `tx`'s frame."""
    if len(args) == 2:
        return SuperVariable(_class_of(tx, args[0]), args[1])
    if args:
        raise tx.unsupported("super() with one argument")
    code = tx.code
    if "__class__" not in code.co_freevars or not code.co_argcount:
        raise RuntimeError("super(): no arguments")
    cls = _class_of(tx, tx._cell_value("__class__"))
    first = code.co_varnames[0]
    if first in tx.cells:
        obj = tx._cell_value(first)
    else:
        obj = tx.locals.get(first)
        if obj is None:
            raise RuntimeError("super(): arg[0] deleted")
    return SuperVariable(cls, obj)


def super_attr(tx, sup: SuperVariable, name: str) -> VariableTracker:
    """The tracker of `super(cls, obj).name`."""
    obj = sup.obj
    from .objects import NewObjectVariable, super_attr as new_super_attr

    if isinstance(obj, NewObjectVariable):  # `super().__init__(x)` in an object made here
        return new_super_attr(tx, sup.cls, obj, name)
    value_obj = getattr(obj, "value", None)
    if not isinstance(obj, ObjectVariable) or obj.source is None:
        raise tx.unsupported(f"super().{name} on {obj.describe()}")
    value = getattr(super(sup.cls, value_obj), name)  # an AttributeError here is the user's
    guards = tx.out.guards
    cls_name = guards.name_for(sup.cls, sup.cls.__name__)
    src = f"super({cls_name}, {obj.source}).{name}"
    if isinstance(value, types.MethodType) and value.__self__ is value_obj and \
            isinstance(value.__func__, types.FunctionType):
        guards.identity(f"{src}.__func__", value.__func__, value.__func__.__name__)
        return FunctionVariable(value.__func__, None, self_var=obj)
    return tx.out.wrap(value, src)


@handler("LOAD_SUPER_ATTR", min=(3, 12))
def LOAD_SUPER_ATTR(tx, inst):
    """Stack: super, class, self -> the attribute (method form: with NULL, as LOAD_ATTR)."""
    g, cls, obj = tx.stack[-3:]
    if not (isinstance(g, ObjectVariable) and g.value is super):
        raise tx.unsupported("LOAD_SUPER_ATTR with a shadowed `super`")
    var = super_attr(tx, SuperVariable(_class_of(tx, cls), obj), inst.argval)
    tx.popn(3)
    is_method = inst.arg & 1
    if is_method and PY == (3, 12):
        tx.push(NULL)
    tx.push(var)
    if is_method and PY >= (3, 13):
        tx.push(NULL)
