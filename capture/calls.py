"""What calls mean during capture.

`call_function` decides, per tracker kind, whether a call records an op, is inlined (a Python
function runs in a child interpreter sharing the graph: `inline`), folds (a builtin on
constants), runs an `eager` function by its vocabulary rule (`call_eager`) or is a graph break.
The steps it builds on live by concept and are re-exported here, so `calls.X` keeps working:
recording ops (`record`, `call_op`, `inplace`: `recording.py`), attribute reads and tensor
methods (`get_attr`, `call_tensor_method`: `attributes.py`), Python operators (`binary_op`,
`compare_op`, `unary_op`: `operators.py`) and containers (`unpack`, `subscript`: `pycalls.py`).
Touches `eager` (to read its functions' `__wick_op__`), `ir`, and `capture`.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import types

import numpy as np

from eager import device

from . import (autocast, autograd_functions, config, dict_objects, eager_rules, inference,
               made_modules, more_rules, objects, out_arg, pyfunctional, vocabulary)
from .attributes import (  # noqa: F401  (re-exported: `calls.get_attr`, ...)
    CAST_METHODS,
    TENSOR_BREAKS,
    TENSOR_METHODS,
    _cast,
    call_tensor_method,
    get_attr,
    tensor_attr,
)
from .dynamic import SizeVariable
from .operators import (  # noqa: F401  (re-exported: `calls.binary_op`, ...)
    BINARY,
    COMPARE,
    _dunder,
    binary_op,
    compare_op,
    inplace_op,
    unary_op,
)
from .recording import (  # noqa: F401  (re-exported: `calls.record`, `calls.call_op`, ...)
    as_constant,
    call_op,
    inplace,
    record,
)
from .variables import (
    BuiltinVariable,
    ConstantMethodVariable,
    ConstantVariable,
    ContainerMethodVariable,
    DictVariable,
    FunctionVariable,
    GeneratorVariable,
    GradModeExitVariable,
    NestedFunctionVariable,
    ObjectVariable,
    OpFunctionVariable,
    PartialVariable,
    TensorMethodVariable,
    TupleVariable,
    UserObjectVariable,
    VariableTracker,
)

# ---------------------------------------------------------------- calls


def _constant_object(value, args: list, kwargs: dict):
    """A constant made by a call of constants: `nullcontext()` (a no-op block),
    `torch.device("cpu")`, `np.float32(0.5)`; else None."""
    if not all(v.is_constant() for v in args + list(kwargs.values())):
        return None
    pos, kw = [v.value for v in args], {k: v.value for k, v in kwargs.items()}
    if value is contextlib.nullcontext and not kw and len(pos) <= 1:
        return ConstantVariable(value(*pos))
    if value is device:
        return ConstantVariable(value(*pos, **kw))
    from .handlers import make_exception  # lazy: handlers imports builders, which imports us

    exc = make_exception(value, pos, kw)  # `ValueError("bad key " + k)`
    if exc is not None:
        return ConstantVariable(exc)
    if isinstance(value, type) and value.__module__ == "numpy" and \
            issubclass(value, np.generic) and not kw:
        return ConstantVariable(value(*pos))
    return None


# trackers called through their own `call(tx, args, kwargs)`: `super().__setitem__(k, v)`,
# `loss_fct(x, y)` of a module made in the frame, an object made in the frame with `__call__`
CALLABLE_TRACKERS = (dict_objects.RawMethodVariable, made_modules.MadeModuleVariable,
                     objects.NewObjectVariable)


def call_function(tx, fn: VariableTracker, args: list, kwargs: dict) -> VariableTracker:
    """The tracker of `fn(*args, **kwargs)`, recording ops or inlining; else a graph break."""
    from . import pycalls

    if isinstance(fn, OpFunctionVariable):  # out=c: the op, then a copy into c (out_arg)
        return (out_arg.call_with_out if "out" in kwargs else call_op)(tx, fn, args, kwargs)
    if isinstance(fn, FunctionVariable):
        value = fn.value
        if getattr(value, "__wick_graph_break__", False):
            raise tx.unsupported("capture.graph_break() called")
        if vocabulary.is_internal(value):
            decorated = eager_rules.grad_mode_decorated(value)
            if decorated is not None:  # `@no_grad()` def f(...): f inlined in that mode
                if fn.self_var is not None:  # a decorated method: `self.push(k, v)`
                    args = [fn.self_var] + args
                return eager_rules.call_in_grad_mode(tx, *decorated, args, kwargs)
            return call_eager(tx, fn, args, kwargs)
        return _inline_user(tx, fn, args, kwargs)
    if isinstance(fn, NestedFunctionVariable):
        return inline(tx, fn, args, kwargs)
    if isinstance(fn, PartialVariable):
        return call_function(tx, fn.fn, fn.args + args, {**fn.kwargs, **kwargs})
    if isinstance(fn, BuiltinVariable) or pycalls.builtin_class(fn):  # (`type(t)(items)`)
        return dict_objects.call_builtin(tx, fn.value, args, kwargs)
    if isinstance(fn, TensorMethodVariable):
        return call_tensor_method(tx, fn.tensor, fn.name, args, kwargs)
    if isinstance(fn, ContainerMethodVariable):
        return pycalls.call_container_method(tx, fn, args, kwargs)
    if isinstance(fn, ConstantMethodVariable):
        from .pycalls import _const_data, _is_const_data

        if all(_is_const_data(v) for v in args + list(kwargs.values())):  # "-".join(names)
            return ConstantVariable(fn.bound(*[_const_data(v) for v in args],
                                             **{k: _const_data(v) for k, v in kwargs.items()}))
        raise tx.unsupported(f"call to {fn.describe()} with non-constant arguments")
    if isinstance(fn, GradModeExitVariable):  # restores the mode, closes an inference block
        return inference.leave(tx, fn)
    if isinstance(fn, autocast.AutocastExitVariable):
        return autocast.leave(tx, fn)
    if getattr(fn, "value", None) is super and not isinstance(fn, ConstantVariable):
        from .supers import make_super

        if not kwargs:
            return make_super(tx, args)
    if isinstance(fn, CALLABLE_TRACKERS):
        return fn.call(tx, args, kwargs)  # `super().__setitem__(k, v)`, `loss_fct(x, y)`
    if isinstance(fn, UserObjectVariable):
        value = fn.value
        made = made_modules.make(tx, value, args, kwargs)  # `nn.CrossEntropyLoss()`
        made = made if made is not None else inference.make(tx, value, args, kwargs)  # no_grad(), inference_mode(), ...
        made = made if made is not None else pyfunctional.make(tx, value, args, kwargs)
        if made is not None:  # (or OrderedDict(), itertools.accumulate())
            return made
        if value is functools.partial and args:
            return PartialVariable(args[0], args[1:], kwargs)
        made = _constant_object(value, args, kwargs)
        if made is not None:
            return made
        if isinstance(value, type) and vocabulary.is_internal(value):
            rule = vocabulary.rule_for(value)  # eager's classes with a rule: `finfo(dtype)`
            if rule is not None:
                return rule(tx, value, args, kwargs)
        if isinstance(value, type) and issubclass(value, autocast.REGION):
            return autocast.make_region(tx, args, kwargs, value)
        if isinstance(value, type) and issubclass(value, tuple) and \
                hasattr(value, "_fields") and type(value.__new__) is types.FunctionType:
            return _make_namedtuple(value, args, kwargs)  # `Output(logits=y, loss=l)`
        if objects.constructible(value):  # `Out(logits, loss)`: a dataclass, a record
            return objects.construct(tx, value, args, kwargs)
        call = next((c.__dict__["__call__"] for c in type(value).__mro__
                     if "__call__" in c.__dict__), None)
        if not isinstance(value, type) and isinstance(call, types.FunctionType):
            tx.out.guards.identity(f"type({fn.source}).__call__", call, "__call__")
            return inline(tx, FunctionVariable(call, None, self_var=fn), args, kwargs)
    if isinstance(fn, ObjectVariable):  # np.dtype(...), np.meshgrid(...) inside eager
        folded = eager_rules.fold_constant_helper(tx, fn.value, args, kwargs) or \
            _inline_lru_cached(tx, fn, args, kwargs)  # `@lru_cache def mask(T)`: inlined
        if folded is not None:
            return folded
    raise tx.unsupported(f"call to {fn.describe()}")


def _inline_lru_cached(tx, fn, args: list, kwargs: dict):
    """A `functools.lru_cache` wrapper of a user function: its `__wrapped__` inlined (the cache
    is not consulted), as Dynamo does, guarded on the wrapped function; None: not one."""
    value = fn.value
    if not isinstance(value, functools._lru_cache_wrapper) or \
            not isinstance(value.__wrapped__, types.FunctionType):
        return None
    inner = value.__wrapped__
    if fn.source is not None:
        tx.out.guards.identity(f"{fn.source}.__wrapped__", inner, inner.__name__)
    return _inline_user(tx, FunctionVariable(inner, None), args, kwargs)


def _inline_user(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """A user function's call: inlined, unless refused (`_refuse_opaque`) or folded
    (`dataclasses.fields(obj)` of an object made by the code)."""
    _refuse_opaque(tx, fn.value)
    from .context_generators import make

    made = make(tx, fn, args, kwargs)  # `with ddp.no_sync():` of a user @contextmanager
    if made is not None:
        return made
    folded = dict_objects.fields_rule(tx, fn.value, args, kwargs)
    return folded if folded is not None else inline(tx, fn, args, kwargs)


def _refuse_opaque(tx, value) -> None:
    """A break for a user function capture must not inline: marked `capture.disable`, or
    logging's (it writes to the log's handlers; as print, one break at the call)."""
    if getattr(value, "__wick_disable__", False):
        raise tx.unsupported(f"call to {value.__qualname__}, marked capture.disable")
    if (getattr(value, "__module__", None) or "").split(".")[0] == "logging":
        raise tx.unsupported(f"call to logging's {value.__qualname__} (writes to the "
                             "log's handlers)")


def _make_namedtuple(cls, args, kwargs) -> TupleVariable:
    """A named tuple built by the code: its fields' trackers in order, keeping its type."""
    bound = inspect.signature(cls).bind(*args, **kwargs)  # a TypeError here is the user's
    bound.apply_defaults()
    var = TupleVariable([v if isinstance(v, VariableTracker) else ConstantVariable(v)
                         for v in bound.arguments.values()])
    var.namedtuple = cls
    return var


def call_eager(tx, fn: FunctionVariable, args: list, kwargs: dict) -> VariableTracker:
    """A call of a function of `eager` (or numpy): graph nodes by its vocabulary rule, an
    `eager.nn` composition inlined, else one break named at the user's call (`vocabulary`)."""
    from .breaks import GraphBreak

    value = fn.value
    if value is autograd_functions.APPLY and fn.self_var is not None:  # `MyFn.apply(x)`
        return autograd_functions.apply_rule(tx, fn.self_var, args, kwargs)
    if fn.self_var is not None:
        args = [fn.self_var] + args
    rule = vocabulary.rule_for(value) or eager_rules.rule_for(value) or \
        more_rules.rule_for(value)
    if rule is not None:
        return rule(tx, value, args, kwargs)
    if getattr(value, "__wick_value_check__", False):
        return ConstantVariable(None)  # (the kernels check their indices: see vocabulary)
    folded = eager_rules.fold_constant_helper(tx, value, args, kwargs)
    if folded is not None:
        return folded
    if not vocabulary.is_composition(value):
        raise vocabulary.no_graph_form(tx, value)
    if vocabulary.is_internal_frame(tx):  # a composition calling another: the outer one names it
        return inline(tx, FunctionVariable(value), args, kwargs)
    try:
        return inline(tx, FunctionVariable(value), args, kwargs)
    except GraphBreak as gb:
        raise vocabulary.no_graph_form(tx, value, gb.reason.reason) from None


def _signature_function(fn):
    """A real function object with `fn`'s signature (defaults are trackers for nested ones)."""
    if isinstance(fn, NestedFunctionVariable):
        f = types.FunctionType(fn.code, fn.f_globals, fn.code.co_name, fn.defaults or None,
                               tuple(types.CellType() for _ in fn.code.co_freevars))
        f.__kwdefaults__ = fn.kwdefaults or None
        return f
    return fn.value


def inline(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """Run a Python function's bytecode in a child interpreter that shares the graph."""
    from .symbolic import InstructionTranslator, _Func

    value = _signature_function(fn)
    code = value.__code__
    if tx.depth >= config.inline_depth_limit:
        raise tx.unsupported(f"inlining deeper than {config.inline_depth_limit} calls")
    if code.co_flags & (inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR |
                        inspect.CO_ITERABLE_COROUTINE):
        raise tx.unsupported(f"call to coroutine function {value.__qualname__}")
    self_var = getattr(fn, "self_var", None)
    if self_var is not None:
        args = [self_var] + args
    sig = inspect.signature(value, follow_wrapped=False)  # (its code's, not a __wrapped__'s)
    bound = sig.bind(*args, **kwargs)  # a TypeError here is the user's, as eagerly
    f_locals = {}
    nested = isinstance(fn, NestedFunctionVariable)
    fname = None if nested else tx.out.guards.name_for(value, value.__name__)
    positional = [p for p in sig.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    for name, param in sig.parameters.items():
        if name in bound.arguments:
            v = bound.arguments[name]
            if param.kind == param.VAR_POSITIONAL:
                v = TupleVariable(v)
            elif param.kind == param.VAR_KEYWORD:
                v = DictVariable(v)
        elif param.kind == param.VAR_POSITIONAL:
            v = TupleVariable([])
        elif param.kind == param.VAR_KEYWORD:
            v = DictVariable({})
        elif nested:
            v = param.default
        elif param.kind == param.KEYWORD_ONLY:
            v = tx.out.wrap(param.default, f"{fname}.__kwdefaults__[{name!r}]")
        else:
            i = positional.index(param) - (len(positional) - len(value.__defaults__))
            v = tx.out.wrap(param.default, f"{fname}.__defaults__[{i}]")
        f_locals[name] = v
    if ".0" in code.co_varnames and "implicit0" in f_locals:
        f_locals[".0"] = f_locals.pop("implicit0")  # inspect renames comprehension args
    if nested:
        target = _Func(code, fn.f_globals, None, fn.qualname)
        child = InstructionTranslator(tx.out, target, f_locals, tx.depth + 1, fn.closure)
    else:
        child = InstructionTranslator(tx.out, value, f_locals, tx.depth + 1)
    child.parent = tx  # (what the caller's frame still holds: writeback's live views)
    if code.co_flags & inspect.CO_GENERATOR:
        return GeneratorVariable(child, [])
    return child.run()


# ---------------------------------------------------------------- containers (pycalls.py)


def unpack(tx, v: VariableTracker) -> list:
    from .pycalls import unpack as _unpack

    if type(v) is SizeVariable:  # `B, T, C = x.shape`: one size each (dynamic: symbolic)
        return [v.item(i) for i in range(len(v.t.meta.shape))]
    items = _sequence_subclass_items(tx, v)
    return items if items is not None else _unpack(tx, v)


def _sequence_subclass_items(tx, v) -> list | None:
    """`for processor in self:` in a method of a list/tuple subclass read from the frame
    (HF's `LogitsProcessorList(list)`): its items read as `src[i]`, its type and length
    guarded; None for anything else."""
    value = getattr(v, "value", None)
    if not isinstance(v, UserObjectVariable) or v.source is None or \
            not isinstance(value, (list, tuple)) or type(value) in (list, tuple):
        return None
    base = list if isinstance(value, list) else tuple
    if type(value).__iter__ is not base.__iter__ or type(value).__getitem__ is not \
            base.__getitem__ or type(value).__len__ is not base.__len__:
        return None
    tx.out.guards.length(v.source, value)
    return [tx.out.wrap(x, f"{v.source}[{i}]") for i, x in enumerate(value)]


def subscript(tx, obj: VariableTracker, index: VariableTracker) -> VariableTracker:
    from .optim_user import state_entry
    from .pycalls import subscript as _subscript

    if getattr(obj, "mapping", None) is not None:  # `out["logits"]` of a ModelOutput
        return dict_objects.subscript(tx, obj, index)
    entry = state_entry(tx, obj, index)  # `self.state[p]` in a user's optimizer step
    if entry is not None:
        return entry
    data = dict_objects.user_dict_data(tx, obj)  # `batch_encoding["input_ids"]`
    return _subscript(tx, obj if data is None else data, index)


def store_subscript(tx, obj, index, value) -> None:
    from .pycalls import store_subscript as _store

    if getattr(obj, "mapping", None) is not None:  # `self[name] = v` in a ModelOutput
        dict_objects.store_subscript(tx, obj, index, value)
        return
    _store(tx, obj, index, value)
