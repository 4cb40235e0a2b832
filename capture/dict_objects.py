"""Objects of user dict subclasses made inside a captured frame: HuggingFace's `ModelOutput`
pattern, a `@dataclass` that is also an `OrderedDict` of its non-None fields
(`BaseModelOutput(last_hidden_state=h, ...)`, then `out.last_hidden_state`, `out["logits"]`,
`out[0]`, `out.to_tuple()`), as Dynamo's `UserDefinedDictVariable` for a class made in the frame.

Such an object is a `NewObjectVariable` (`objects`) with a `mapping`: a `DictVariable` of its
items, next to its instance dict. The class's own Python methods run inlined on it: a
`__setattr__` (dataclass `__init__`'s stores go through it), `__getitem__`, `__setitem__`,
`__post_init__`; what reaches the builtin base (`super().__setitem__(k, v)`,
`super().__setattr__(n, v)`, `self.keys()`, `self.items()`, `self[k]` with no override) acts on
the mapping or the instance dict. `dataclasses.fields(obj)` is the class's (constant) fields.
Leaving the graph, the object is rebuilt as `base.__new__(cls)`, its items set through the
base's `__setitem__` (no user code runs) and its instance dict updated.

Only classes whose bases beyond user classes are exactly `dict` or `OrderedDict` (then `object`)
and whose Python-level overrides are plain functions are modelled; anything else stays a break.
Touches `capture` only.
"""

from __future__ import annotations

import dataclasses
import types
from collections import OrderedDict

from .variables import ConstantVariable, DictVariable, FunctionVariable, VariableTracker

_BASES = (OrderedDict, dict)
BASE_INITS = (dict.__init__, OrderedDict.__init__)
_MAPPING_METHODS = ("keys", "items", "values", "get", "pop", "setdefault", "update", "copy",
                    "clear")


def dict_base(cls, read: bool = False) -> type | None:
    """`OrderedDict`/`dict` for a user class built on it (module doc), else None. `read`: an
    object read from a source (not made in the frame) may also define `__getattr__`
    (Lightning's `AttributeDict`): attribute reads inline it (`attributes`)."""
    if not isinstance(cls, type) or type(cls) is not type or not issubclass(cls, dict):
        return None
    mro = cls.__mro__
    builtin = [c for c in mro if c.__module__ in ("builtins", "collections")]
    if builtin not in ([OrderedDict, dict, object], [dict, object]):
        return None
    for c in mro[:mro.index(builtin[0])]:
        if any(n in c.__dict__ for n in ("__slots__", "__del__", "__new__",
                                          "__getattribute__")) or \
                "__getattr__" in c.__dict__ and not read:
            return None
    return builtin[0]


class RawMethodVariable(VariableTracker):
    """A builtin base's method bound to a made dict object (`super().__setitem__`): `fn(tx,
    args, kwargs)` acts on its mapping or instance dict."""

    def __init__(self, fn, what: str):
        self.fn = fn
        self.what = what
        self.source = None

    def describe(self) -> str:
        return self.what

    def call(self, tx, args: list, kwargs: dict) -> VariableTracker:
        return self.fn(tx, args, kwargs)


def _user_override(cls, name: str):
    """The plain function `name` a user class in `cls`'s MRO defines before the builtin base."""
    for c in cls.__mro__:
        if c in _BASES or c is object:
            return None
        f = c.__dict__.get(name)
        if f is not None:
            return f if isinstance(f, types.FunctionType) else False
    return None


def setattr_hook(tx, obj, name: str, value) -> bool:
    """`obj.name = value` on a made dict object whose class defines `__setattr__`: inlined
    (True); False to store it in the instance dict."""
    from .calls import call_function

    fn = _user_override(obj.cls, "__setattr__") if obj.mapping is not None else None
    if not fn:
        return False
    call_function(tx, FunctionVariable(fn, None, self_var=obj), [ConstantVariable(name), value],
                  {})
    return True


def get_attr(tx, obj, name: str) -> VariableTracker | None:
    """A mapping method of the builtin base (`self.keys()`), else None."""
    from .variables import ContainerMethodVariable

    if obj.mapping is None or name not in _MAPPING_METHODS or _user_override(obj.cls, name):
        return None
    return ContainerMethodVariable(obj.mapping, name)


def super_attr(tx, obj, owner: type, name: str) -> VariableTracker | None:
    """`super().name` reaching the builtin base (`owner`) of a made dict object, else None."""
    from . import pycalls
    from .variables import ContainerMethodVariable

    if obj.mapping is None or owner not in _BASES + (object,):
        return None
    m = obj.mapping
    if name == "__setattr__":
        return RawMethodVariable(lambda tx, a, kw: _raw_setattr(tx, obj, *a), "__setattr__")
    if name == "__setitem__":
        return RawMethodVariable(
            lambda tx, a, kw: _none(pycalls.store_subscript(tx, m, *a)), "__setitem__")
    if name == "__getitem__":
        return RawMethodVariable(lambda tx, a, kw: pycalls.subscript(tx, m, *a), "__getitem__")
    if name in _MAPPING_METHODS:
        return ContainerMethodVariable(m, name)
    return None


def _none(_):
    return ConstantVariable(None)


def _raw_setattr(tx, obj, name, value):
    from .objects import store_attr

    store_attr(tx, obj, name.value, value, raw=True)
    return ConstantVariable(None)


def subscript(tx, obj, index) -> VariableTracker | None:
    """`obj[k]` on a made dict object: its `__getitem__` inlined, or the mapping's item."""
    from . import pycalls
    from .calls import call_function

    fn = _user_override(obj.cls, "__getitem__")
    if fn:
        return call_function(tx, FunctionVariable(fn, None, self_var=obj), [index], {})
    return pycalls.subscript(tx, obj.mapping, index)


def store_subscript(tx, obj, index, value) -> None:
    """`obj[k] = v` on a made dict object: its `__setitem__` inlined, or the mapping's."""
    from . import pycalls
    from .calls import call_function

    fn = _user_override(obj.cls, "__setitem__")
    if fn:
        call_function(tx, FunctionVariable(fn, None, self_var=obj), [index, value], {})
        return
    pycalls.store_subscript(tx, obj.mapping, index, value)


def fields_rule(tx, fn, args: list, kwargs: dict) -> VariableTracker | None:
    """`dataclasses.fields(obj)` / `is_dataclass(obj)` of an object made by the code: its
    class's constants (None: another call)."""
    from .objects import NewObjectVariable

    if fn not in (dataclasses.fields, dataclasses.is_dataclass) or len(args) != 1 or kwargs \
            or not isinstance(args[0], NewObjectVariable):
        return None
    return ConstantVariable(fn(args[0].cls))


def new_mapping(cls) -> DictVariable | None:
    base = dict_base(cls)
    return None if base is None else DictVariable({}, ordered=base is OrderedDict)


def rebuild(cls, items: dict):
    """The object (module doc): `base.__new__(cls)` with `items` set through the base."""
    base = dict_base(cls)
    obj = base.__new__(cls)
    if base is OrderedDict:
        OrderedDict.__init__(obj)
    fill(obj, items)
    return obj


def fill(obj, items: dict) -> None:
    """Set `items` on a rebuilt object through its builtin base (no user `__setitem__`)."""
    base = dict_base(type(obj))
    for k, v in items.items():
        base.__setitem__(obj, k, v)


def call_builtin(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """`len(out)` of a made dict object (its items' count, no `__len__` override); any other
    builtin call as `pycalls.call_builtin`."""
    from . import pycalls

    obj = args[0] if len(args) == 1 and not kwargs else None
    if fn is len and getattr(obj, "mapping", None) is not None and \
            not _user_override(obj.cls, "__len__"):
        return ConstantVariable(len(obj.mapping.items))
    if fn is dict and getattr(obj, "mapping", None) is not None and \
            not _user_override(obj.cls, "keys"):
        return _as_dict(tx, obj)
    return pycalls.call_builtin(tx, fn, args, kwargs)


def _as_dict(tx, obj) -> DictVariable:
    """`dict(out)`: as CPython merges a mapping: a plain dict subclass keeping dict's
    iteration copies its items; an OrderedDict subclass goes through `keys()` and its
    `__getitem__` (inlined when the class overrides it)."""
    items = obj.mapping.items
    if dict_base(obj.cls) is dict and not _user_override(obj.cls, "__iter__"):
        return DictVariable(dict(items))
    return DictVariable({k: subscript(tx, obj, ConstantVariable(k)) for k in list(items)})


def iterate(obj) -> list | None:
    """`for k in out:` over a made dict object: its keys (no `__iter__` override), else None."""
    if getattr(obj, "mapping", None) is None or _user_override(obj.cls, "__iter__"):
        return None
    return [ConstantVariable(k) for k in obj.mapping.items]


def unbound(cls_var, name: str) -> RawMethodVariable | None:
    """`dict.get` / `dict.__getitem__` / `OrderedDict.__setitem__` read off the builtin class
    (called with the object first, in a dict subclass's methods): the base's method on the
    object's mapping (or on a dict the code built); None for another attribute."""
    base = getattr(cls_var, "value", None)
    if base not in _BASES or not (name in _MAPPING_METHODS or name in (
            "__getitem__", "__setitem__", "__contains__", "__len__")):
        return None
    return RawMethodVariable(lambda tx, a, kw: _unbound_call(tx, name, a, kw),
                             f"{base.__name__}.{name}")


def _unbound_call(tx, name: str, args: list, kwargs: dict) -> VariableTracker:
    from . import pycalls
    from .calls import call_function
    from .variables import ContainerMethodVariable

    m = getattr(args[0], "mapping", None) if args else None
    m = args[0] if args and isinstance(args[0], DictVariable) else m
    if m is None:
        raise tx.unsupported(f"dict.{name} on {args[0].describe() if args else 'nothing'}")
    rest = args[1:]
    if name == "__getitem__":
        return pycalls.subscript(tx, m, *rest)
    if name == "__setitem__":
        return _none(pycalls.store_subscript(tx, m, *rest))
    if name == "__contains__" and rest and rest[0].is_constant():
        return ConstantVariable(rest[0].value in m.items)
    if name == "__len__":
        return ConstantVariable(len(m.items))
    return call_function(tx, ContainerMethodVariable(m, name), rest, kwargs)


_USERDICT_READS = ("__getitem__", "__iter__", "__len__", "__contains__", "keys", "items",
                   "values", "get")


def user_dict_data(tx, obj) -> VariableTracker | None:
    """The `data` dict of a `collections.UserDict` read from a source (HF's `BatchEncoding`)
    whose reads are UserDict's own (no override of `__getitem__`, `keys`...): `**enc` and
    `enc["input_ids"]` read it, as UserDict's methods do (the dict read lazily, guarded on
    what is read); else None."""
    from collections import UserDict
    from collections.abc import Mapping, MutableMapping

    from .variables import UserObjectVariable

    if type(obj) is not UserObjectVariable or obj.source is None or \
            not isinstance(obj.value, UserDict):  # (type first: a dynamic number's .value
        return None                                # would specialise it)
    cls = type(obj.value)
    if any(_owner(cls, n) not in (UserDict, MutableMapping, Mapping) for n in _USERDICT_READS):
        return None
    from .calls import get_attr

    data = get_attr(tx, obj, "data")
    return data if isinstance(data, DictVariable) else None


def _owner(cls, name: str):
    return next((c for c in cls.__mro__ if name in c.__dict__), object)
