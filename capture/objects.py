"""Objects of plain user classes made inside a captured frame (`Out(logits, loss)`, a
dataclass of a model's outputs, a small record object), as Dynamo's
`UserDefinedObjectVariable` for a class built in the frame.

The call of such a class inlines its `__init__` (a dataclass's generated one included) on a
`NewObjectVariable`: a tracker holding the class and the instance dict as trackers. Attribute
stores change that dict (logged, so a graph break undoes them), reads see it, then the class's
attributes: methods bind to the object, static methods, properties (their getter inlined),
constants (a dataclass field's default); `super().__init__(...)` follows the class's MRO
(`super_attr`). Wherever the object leaves the graph (returned,
stored, live at a break) its template makes a fresh instance on every call,
`object.__new__(cls)` plus its instance dict, one object however often it is referenced.

Only classes whose instances are a plain `__dict__` are modelled: `object.__new__`,
`object.__setattr__`, `object.__getattribute__`, no `__getattr__`, `__slots__`, `__del__` or
metaclass, not an exception and not a class of wick or the standard library (but
`eager.distributions`' classes: `Normal(mu, std).log_prob(a)` is user code written in eager's
ops, as Dynamo inlines torch.distributions; their argument validation is off unless
`validate_args=True`, as under torch.compile); anything else stays a named break at the call. Touches `capture` only.
"""

from __future__ import annotations

import inspect
import types

from . import dict_objects
from .variables import (
    ConstantMethodVariable,
    ConstantVariable,
    FunctionVariable,
    VariableTracker,
)

_MISSING = object()
DISTRIBUTIONS = "eager.distributions"  # wick's classes modelled as user objects
# and the plain attribute holder of F.multi_head_attention_forward (`_MHAWeights`)
MODELLED = (DISTRIBUTIONS, "eager.nn.mha")
_PLAIN_CONSTANTS = (int, float, bool, str, bytes, type(None), complex)


class NewObjectVariable(VariableTracker):
    """An instance of user class `cls` made by the code; `attrs` is its `__dict__` as
    trackers."""

    def __init__(self, cls: type):
        self.cls = cls
        self.attrs: dict = {}
        self.source = None
        self.mapping = None  # a dict subclass's items (`dict_objects`)

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        return f"{self.cls.__qualname__} object made by the code"

    def call(self, tx, args: list, kwargs: dict) -> VariableTracker:
        """`obj(*args)`: its class's `__call__` inlined on it (`t.inv(y)`: an
        `_InverseTransform` a distribution made)."""
        call = next((c.__dict__["__call__"] for c in self.cls.__mro__[:-1]
                     if "__call__" in c.__dict__), None)
        if not isinstance(call, types.FunctionType):
            raise tx.unsupported(f"call to {self.describe()}")
        from .calls import inline

        return inline(tx, FunctionVariable(call, None, self_var=self), args, kwargs)


def constructible(cls) -> bool:
    """True for a class whose call capture models as a new plain object (module doc)."""
    if not isinstance(cls, type) or type(cls) is not type or issubclass(cls, BaseException):
        return False
    module = getattr(cls, "__module__", "") or ""
    root = module.split(".")[0]
    if root in ("eager", "ir", "capture", "numpy", "builtins", "typing", "collections",
                "dataclasses", "functools", "enum", "abc") and \
            not module.startswith(MODELLED):
        return False
    if dict_objects.dict_base(cls) is not None:  # a ModelOutput-style dataclass dict
        init = inspect.getattr_static(cls, "__init__")
        return isinstance(init, types.FunctionType) or init in dict_objects.BASE_INITS
    if cls.__new__ is not object.__new__ or cls.__setattr__ is not object.__setattr__ or \
            cls.__getattribute__ is not object.__getattribute__:
        return False
    if any(n in c.__dict__ for c in cls.__mro__[:-1] for n in ("__slots__", "__getattr__",
                                                                 "__del__")):
        return False
    init = inspect.getattr_static(cls, "__init__")
    return init is object.__init__ or isinstance(init, types.FunctionType)


def construct(tx, cls: type, args: list, kwargs: dict) -> NewObjectVariable:
    """`cls(*args, **kwargs)`: a new object, its `__init__` inlined on it."""
    from .calls import inline

    obj = NewObjectVariable(cls)
    obj.mapping = dict_objects.new_mapping(cls)
    if cls.__module__.startswith(DISTRIBUTIONS):
        # as torch.compile (`Distribution.set_default_validate_args(False)`): compiled code
        # validates a distribution's arguments only when it passes `validate_args=True`
        obj.attrs["_validate_args"] = ConstantVariable(False)
    init = inspect.getattr_static(cls, "__init__")
    if init in dict_objects.BASE_INITS:  # `class Cache(dict): ...` made empty
        if args or kwargs:
            raise tx.unsupported(f"{cls.__name__}(...) with items (a dict subclass's "
                                 "builtin __init__)")
        return obj
    if init is object.__init__:
        if args or kwargs:
            raise TypeError(f"{cls.__name__}() takes no arguments")
        return obj
    result = inline(tx, FunctionVariable(init, None, self_var=obj), args, kwargs)
    if not (isinstance(result, ConstantVariable) and result.value is None):
        raise TypeError(f"__init__() should return None, not '{result.describe()}'")
    return obj


def get_attr(tx, obj: NewObjectVariable, name: str) -> VariableTracker:
    """`obj.name`: the instance dict, then the class (methods bound, properties inlined)."""
    from .calls import call_function

    value = obj.attrs.get(name, _MISSING)
    if value is not _MISSING:
        return value
    if name == "__class__":
        return ConstantVariable(obj.cls)
    method = dict_objects.get_attr(tx, obj, name)  # `self.keys()` of a dict subclass
    if method is not None:
        return method
    try:
        attr = inspect.getattr_static(obj.cls, name)
    except AttributeError:
        raise AttributeError(f"'{obj.cls.__name__}' object has no attribute '{name}'") from None
    if isinstance(attr, types.FunctionType):
        return FunctionVariable(attr, None, self_var=obj)
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return FunctionVariable(attr.__func__, None)
    if isinstance(attr, property) and isinstance(attr.fget, types.FunctionType):
        return call_function(tx, FunctionVariable(attr.fget, None), [obj], {})
    if _is_lazy_property(attr):  # computed once, then in the instance dict (as its __get__)
        value = call_function(tx, FunctionVariable(attr.wrapped, None), [obj], {})
        store_attr(tx, obj, name, value)
        return value
    if isinstance(attr, _PLAIN_CONSTANTS) or isinstance(attr, tuple) and \
            all(isinstance(x, _PLAIN_CONSTANTS) for x in attr):
        return ConstantVariable(attr)
    if obj.cls.__module__.startswith(DISTRIBUTIONS) and \
            type(attr).__module__.startswith(DISTRIBUTIONS):  # `t.codomain`: a constraint
        from .variables import UserObjectVariable

        return UserObjectVariable(attr, tx.out.guards.name_for(attr, "___dist_attr"))
    raise tx.unsupported(f"attribute {name!r} of {obj.describe()} ({type(attr).__name__} of "
                         "its class)")


def _is_lazy_property(attr) -> bool:
    """`torch.distributions.utils.lazy_property` (Categorical's `probs`/`logits`)."""
    from eager.distributions.utils import lazy_property

    return isinstance(attr, lazy_property) and isinstance(attr.wrapped, types.FunctionType)


def kl_rule(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """`torch.distributions.kl_divergence(p, q)` of two distributions the code made: the
    closed form registered for their classes (constants of the code, resolved as eagerly),
    inlined."""
    from eager.distributions import kl

    from .calls import inline

    p, q = inspect.signature(fn).bind(*args, **kwargs).args
    if not (isinstance(p, NewObjectVariable) and isinstance(q, NewObjectVariable)):
        return inline(tx, FunctionVariable(fn, None), [p, q], {})
    key = (p.cls, q.cls)
    fun = kl._KL_MEMOIZE.get(key)
    if fun is None:
        fun = kl._KL_MEMOIZE[key] = kl._dispatch_kl(*key)
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{p.cls.__name__} and q type {q.cls.__name__}")
    return inline(tx, FunctionVariable(fun, None), [p, q], {})


def super_attr(tx, cls: type, obj: NewObjectVariable, name: str) -> VariableTracker:
    """`super(cls, obj).name` for an object made by the code: the first class after `cls` in
    its MRO defining `name`; a function is bound to the object, `object.__init__` is a call
    that does nothing."""
    mro = obj.cls.__mro__
    if cls not in mro:
        raise TypeError("super(type, obj): obj must be an instance or subtype of type")
    for c in mro[mro.index(cls) + 1:]:
        if name in c.__dict__:
            attr = c.__dict__[name]
            based = dict_objects.super_attr(tx, obj, c, name)  # `super().__setitem__(k, v)`
            if based is not None:
                return based
            break
    else:
        raise AttributeError(f"'super' object has no attribute '{name}'")
    if attr is object.__init__:  # (no arguments: nothing to do; else object's TypeError)
        return ConstantMethodVariable(_object_init)
    if isinstance(attr, types.FunctionType):
        return FunctionVariable(attr, None, self_var=obj)
    if isinstance(attr, staticmethod) and isinstance(attr.__func__, types.FunctionType):
        return FunctionVariable(attr.__func__, None)
    raise tx.unsupported(f"super().{name} ({type(attr).__name__}) on {obj.describe()}")


def _object_init():
    """`super().__init__()` reaching `object.__init__`: nothing to do."""


def store_attr(tx, obj: NewObjectVariable, name: str, value, raw: bool = False) -> None:
    """`obj.name = value` on an object made by the code: its instance dict (logged); a dict
    subclass's own `__setattr__` inlined unless `raw` (`dict_objects`)."""
    if not raw and dict_objects.setattr_hook(tx, obj, name, value):
        return
    attr = inspect.getattr_static(obj.cls, name, None)
    if attr is not None and hasattr(type(attr), "__set__"):
        raise tx.unsupported(f"{obj.cls.__name__}.{name} is a descriptor (a property setter "
                             "runs user code)")
    attrs = obj.attrs
    prev = attrs.get(name, _MISSING)
    attrs[name] = value

    def undo():
        if prev is _MISSING:
            attrs.pop(name, None)
        else:
            attrs[name] = prev

    tx.out.side_effects.undo.append(undo)


def template(templater, obj: NewObjectVariable) -> tuple:
    """("newobj", cls, {name: template}, key): one fresh instance per call."""
    from .resume import CannotResume

    key = id(obj)
    memo = templater.memo
    if key in memo:
        if memo[key] is None:
            raise CannotResume(f"cannot rebuild {obj.describe()} that refers to itself")
        return memo[key]
    memo[key] = None
    items = None if obj.mapping is None else \
        {k: templater.t(v) for k, v in obj.mapping.items.items()}
    t = ("newobj", obj.cls, {k: templater.t(v) for k, v in obj.attrs.items()}, key, items)
    memo[key] = t
    return t


def rebuild(t: tuple, r, cells: dict):
    """The object of template `t` for one call (`r` rebuilds a sub-template)."""
    _, cls, attrs, key, items = t
    if key in cells:
        return cells[key]
    obj = object.__new__(cls) if items is None else dict_objects.rebuild(cls, {})
    cells[key] = obj
    if items is not None:
        dict_objects.fill(obj, {k: r(v) for k, v in items.items()})
    obj.__dict__.update({k: r(v) for k, v in attrs.items()})
    return obj
