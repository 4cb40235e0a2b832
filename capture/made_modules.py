"""Stateless `eager.nn` modules made inside a captured frame: `loss_fct = nn.CrossEntropyLoss()`
then `loss_fct(logits, labels)` in a forward (HuggingFace's heads write their losses so), or
`nn.ReLU()(x)`, as Dynamo traces a module built in the frame.

The call of an `eager.nn` module class with constant arguments builds the module now, at capture
time: the object is a function of those constants alone (the class is guarded where the code
read it). Only a module with no parameters, buffers or submodules is kept (a loss, an
activation, `Flatten`, `Dropout`): building one draws no random numbers and leaves no state
that a later call could see. Its attribute reads are the constants it holds (`reduction`,
`ignore_index`, `weight=None`); its methods bind to it; calling it inlines its class's
`forward` (a module made here has no hooks of its own; global module hooks present at capture
time refuse it). Anything else (a module with parameters, non-constant arguments, the module
leaving the graph) stays a named break at the call.
"""

from __future__ import annotations

import types

from .variables import ConstantVariable, FunctionVariable, UserObjectVariable, VariableTracker

_PLAIN = (int, float, bool, str, bytes, complex, type(None))


class MadeModuleVariable(UserObjectVariable):
    """A stateless module of `eager.nn` built by the code (module doc); no source."""

    def describe(self) -> str:
        return f"{type(self.value).__name__} module made by the code"

    def call(self, tx, args: list, kwargs: dict) -> VariableTracker:
        return call(tx, self, args, kwargs)


def _global_hooks() -> bool:
    from eager.nn import module_hooks as h

    return any(getattr(h, n) for n in dir(h) if n.startswith("_global_") and
               isinstance(getattr(h, n), dict))


def make(tx, cls, args: list, kwargs: dict) -> VariableTracker | None:
    """`nn.CrossEntropyLoss(...)` of constants: the module (module doc), else None."""
    from eager.nn.module import Module

    from . import vocabulary

    if not (isinstance(cls, type) and issubclass(cls, Module) and vocabulary.is_internal(cls)):
        return None
    if not all(v.is_constant() for v in list(args) + list(kwargs.values())):
        return None
    if _global_hooks():
        return None
    mod = cls(*[v.value for v in args], **{k: v.value for k, v in kwargs.items()})
    if any(v is not None for d in (mod._parameters, mod._buffers, mod._modules)
           for v in d.values()):
        raise tx.unsupported(f"{cls.__name__}(...) made in the frame holds parameters, "
                             "buffers or submodules")
    return MadeModuleVariable(mod, None)


def get_attr(tx, obj: MadeModuleVariable, name: str) -> VariableTracker:
    """`loss_fct.reduction`: a constant it holds; a method bound to it."""
    value = getattr(obj.value, name)  # an AttributeError here is the user's
    if isinstance(value, types.MethodType) and value.__self__ is obj.value and \
            isinstance(value.__func__, types.FunctionType):
        return FunctionVariable(value.__func__, None, self_var=obj)
    if isinstance(value, _PLAIN) or isinstance(value, tuple) and \
            all(isinstance(x, _PLAIN) for x in value):
        return ConstantVariable(value)
    raise tx.unsupported(f"attribute {name!r} of {obj.describe()} "
                         f"({type(value).__name__})")


def call(tx, obj: MadeModuleVariable, args: list, kwargs: dict) -> VariableTracker:
    """`loss_fct(logits, labels)`: its class's forward inlined on it."""
    from .calls import inline

    forward = type(obj.value).forward
    if not isinstance(forward, types.FunctionType):
        raise tx.unsupported(f"call to {obj.describe()}")
    return inline(tx, FunctionVariable(forward, None, self_var=obj), args, kwargs)
