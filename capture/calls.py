"""What calls, attribute reads and operators mean during capture.

`record(tx, op, inputs, attrs)` is capture's `apply` of the `OpNamespace` protocol: the same
steps as `eager.dispatch.apply` (operand check, attrs canonicalised, composites decomposed so the
graph holds primitives, `op.meta` raising eager's own errors), but it adds a graph node instead of
running a kernel. `call_function` decides, per tracker kind, whether a call records an op, is
inlined (a Python function runs in a child interpreter sharing the graph), folds (a builtin on
constants) or is a graph break. `binary_op`/`compare_op`/`unary_op` map Python operators to the
dunders of `eager.Tensor` from one table. Touches `eager` (to read its functions' `__wick_op__`),
`ir`, and `capture`.
"""

from __future__ import annotations

import functools
import inspect
import math
import operator
import types

from eager import Tensor, device, grad_mode
from ir import REGISTRY, OpNamespace
from ir.autodiff import mark_composite
from ir.dtypes import DType, to_dtype
from ir.opdef import is_number

from . import autocast, config, dynamic, eager_rules, vocabulary
from .variables import (
    BuiltinVariable,
    ConstantMethodVariable,
    ConstantVariable,
    ContainerMethodVariable,
    DictVariable,
    FunctionVariable,
    GeneratorVariable,
    GradModeExitVariable,
    GradModeVariable,
    ListVariable,
    ModuleVariable,
    NestedFunctionVariable,
    ObjectVariable,
    OpFunctionVariable,
    PartialVariable,
    SequenceVariable,
    TensorMethodVariable,
    TensorVariable,
    TupleVariable,
    UserObjectVariable,
    VariableTracker,
)

# ---------------------------------------------------------------- recording ops


def record(tx, op, inputs: tuple, attrs: dict, top: bool = True) -> TensorVariable:
    """Add `op(*inputs, **attrs)` to the graph; inputs are TensorVariables or Python numbers.

    `top` marks a user-level call (not a step of a decomposition): it goes on the op tape that
    dynamic-shape entries replay per concrete shape (`dynamic.py`).
    """
    if getattr(tx.out, "autocast", None) is not None:  # an autocast region: casts as nodes
        hit = autocast.record(tx, op, inputs, attrs, top)
        if hit is not None:
            return hit
    if op.dynamic_shape:
        raise tx.unsupported(f"{op.name}() has a data-dependent output shape")
    if getattr(tx.out, "mutated", None):
        from .writeback import check_stale

        check_stale(tx, inputs)
    vals = []
    names = list(op.input_names)
    names += [names[0] if names else "input"] * (len(inputs) - len(names))  # variadic ops
    for name, x in zip(names, inputs):
        if isinstance(x, ConstantVariable):
            x = x.value
        if isinstance(x, TensorVariable) or (is_number(x) and op.scalar_ok):
            vals.append(x)
            continue
        if isinstance(x, VariableTracker) and not isinstance(x, (TensorVariable,)):
            raise tx.unsupported(f"{op.name}() called with an operand capture does not model "
                                 f"({x.describe()})")
        want = "Tensor or number" if op.scalar_ok else "Tensor"
        raise TypeError(f"{op.name}(): argument '{name}' must be {want}, not "
                        f"{type(x).__name__}")
    metas = tuple(x.meta if isinstance(x, TensorVariable) else x for x in vals)
    user_attrs = attrs
    attrs = op.canonical_attrs(metas, attrs)
    if op.decomp is not None:
        result = op.decomp(OpNamespace(lambda o, i, a: record(tx, o, i, a, False)), *vals,
                           **attrs)
        if isinstance(result, TensorVariable):  # (differentiated by eager's rule where it has one)
            mark_composite(result.node, op, tuple(
                x.node if isinstance(x, TensorVariable) else x for x in vals), attrs)
        if top:
            dynamic.note_op(tx, op, vals, user_attrs, result)
        return result
    meta = op.meta(metas, attrs)
    args = tuple(x.node if isinstance(x, TensorVariable) else x for x in vals)
    node = tx.out.graph.call_function(op, args, attrs, val=meta, source=tx.location())
    node.meta["grad_enabled"] = tx.out.grad_enabled
    requires_grad = (op.backward is not None and tx.out.grad_enabled
                     and meta.dtype.is_floating_point
                     and any(isinstance(x, TensorVariable) and x.requires_grad for x in vals))
    result = TensorVariable(node, meta, requires_grad)
    if top:
        dynamic.note_op(tx, op, vals, user_attrs, result)
    return result


def _plain(v):
    """A prebind argument as the Python value an op's prebind expects: strings as str, lists
    and tuples of trackers as lists/tuples (their items stay trackers)."""
    if isinstance(v, ConstantVariable) and isinstance(v.value, str):
        return v.value
    if isinstance(v, SequenceVariable):
        return v.kind(v.items)
    return v


def _is_none(v) -> bool:
    return isinstance(v, ConstantVariable) and v.value is None


def as_constant(tx, v):
    """The Python value of an attribute argument (constants, tuples/lists of constants)."""
    if isinstance(v, (tuple, list)):  # *varargs attributes (`x.reshape(2, 3)`)
        return type(v)(as_constant(tx, x) for x in v)
    if not isinstance(v, VariableTracker):  # a default filled in by bind
        return v
    if isinstance(v, ConstantVariable):
        return v.value
    if isinstance(v, SequenceVariable):
        return v.kind(as_constant(tx, x) for x in v.items)
    raise tx.unsupported(f"{v.describe()} passed where a Python constant is expected")


def call_op(tx, fn: OpFunctionVariable, args: list, kwargs: dict) -> VariableTracker:
    """A call of an eager registry function, method or dunder: record its op."""
    if fn.self_var is not None:
        args = [fn.self_var] + args
    if fn.reflected and len(args) == 2:
        args = [args[1], args[0]]
    op = fn.op
    if fn.inplace:
        return inplace(tx, args[0], lambda: call_op(tx, OpFunctionVariable(
            getattr(Tensor, op.name) if op.method else _function_of(op)), args, kwargs))
    if getattr(op, "prebind", None) is not None:  # einsum("ij,jk", a, b): prebind reads the
        args = [_plain(a) for a in args]          # Python values (str equation, operand list)
    if getattr(op, "variadic", False):  # cat([a, b], dim): the tensors' tracker is a list
        args = [list(a.items) if i == 0 and isinstance(a, SequenceVariable) else a
                for i, a in enumerate(args)]
        kwargs = {k: list(v.items) if isinstance(v, SequenceVariable) and
                  k == op.input_names[0] else v for k, v in kwargs.items()}
    kwargs = {k: v if k in op.input_names else as_constant(tx, v) for k, v in kwargs.items()}
    # an optional operand given as None (`F.linear(x, w, None)`, Linear(bias=False)): eager's
    # bind drops it, so it must reach bind as None, not as its tracker
    args = [None if _is_none(a) else a for a in args]
    kwargs = {k: None if _is_none(v) else v for k, v in kwargs.items()}
    inputs, attrs = op.bind(tuple(args), kwargs)
    if op.name in _BINARY_FORMS and isinstance(attrs.get("dim"), TensorVariable):
        # torch.max(a, b): the elementwise form (the op's decomposition takes it as `dim`)
        return record(tx, REGISTRY[_BINARY_FORMS[op.name]], (inputs[0], attrs["dim"]), {})
    attrs = {k: as_constant(tx, v) for k, v in attrs.items()}
    result = record(tx, op, inputs, attrs)
    if isinstance(result, tuple):  # a multi-output composite (max with indices, sort...)
        var = TupleVariable(list(result))
        if type(result) is not tuple:
            var.namedtuple = type(result)  # torch.return_types-like
        return var
    return result


_BINARY_FORMS = {"max": "maximum", "min": "minimum"}


def _function_of(op):
    from eager.dispatch import FUNCTIONS

    return FUNCTIONS[op.name]


def inplace(tx, target, compute) -> VariableTracker:
    """`t.add_(y)` / `t += y`: captured when `t` is a fresh intermediate that nothing aliases
    (not a graph input, not a view, not viewed), by rebinding its tracker to the new value."""
    if not isinstance(target, TensorVariable):
        raise tx.unsupported("in-place op on a value that is not a tensor")
    node = target.node
    if node.op == "placeholder" and eager_rules.made_by_the_code(tx, target):
        pass  # `pe = zeros(n, d); pe[:, 0::2] = ...`: made fresh each call, nothing aliases it
    elif node.op == "placeholder" or any(
            w is target for w in getattr(tx.out, "writebacks", {}).values()):
        from .writeback import inplace_input

        return inplace_input(tx, target, compute)  # a graph input: written back after
    if node.op == "call_function" and node.target.kind == "view" or \
            any(u.target.kind == "view" for u in node.users if u.op == "call_function"):
        raise tx.unsupported("in-place op on a tensor that may alias a graph input or a view")
    if node.op not in ("call_function", "placeholder"):
        raise tx.unsupported("in-place op on a tensor that may alias a graph input or a view")
    result = compute()
    if result.meta.shape != target.meta.shape or result.meta.dtype is not target.meta.dtype:
        raise tx.unsupported("in-place op whose result changes its target's shape or dtype")
    target.node, target.meta, target.requires_grad = result.node, result.meta, \
        result.requires_grad or target.requires_grad
    target.shadow = result.shadow
    return target


# ---------------------------------------------------------------- calls


def call_function(tx, fn: VariableTracker, args: list, kwargs: dict) -> VariableTracker:
    """The tracker of `fn(*args, **kwargs)`, recording ops or inlining; else a graph break."""
    from . import pycalls

    if isinstance(fn, OpFunctionVariable):
        return call_op(tx, fn, args, kwargs)
    if isinstance(fn, FunctionVariable):
        value = fn.value
        if getattr(value, "__wick_graph_break__", False):
            raise tx.unsupported("capture.graph_break() called")
        if vocabulary.is_internal(value):
            decorated = eager_rules.grad_mode_decorated(value)
            if decorated is not None:  # `@no_grad()` def f(...): f inlined in that mode
                return eager_rules.call_in_grad_mode(tx, *decorated, args, kwargs)
            return call_eager(tx, fn, args, kwargs)
        if getattr(value, "__wick_disable__", False):
            raise tx.unsupported(f"call to {value.__qualname__}, marked capture.disable")
        if (getattr(value, "__module__", None) or "").split(".")[0] == "logging":
            raise tx.unsupported(f"call to logging's {value.__qualname__} (writes to the "
                                 "log's handlers)")  # as print: one break at the call
        return inline(tx, fn, args, kwargs)
    if isinstance(fn, NestedFunctionVariable):
        return inline(tx, fn, args, kwargs)
    if isinstance(fn, PartialVariable):
        return call_function(tx, fn.fn, fn.args + args, {**fn.kwargs, **kwargs})
    if isinstance(fn, BuiltinVariable):
        return pycalls.call_builtin(tx, fn.value, args, kwargs)
    if isinstance(fn, TensorMethodVariable):
        return call_tensor_method(tx, fn.tensor, fn.name, args, kwargs)
    if isinstance(fn, ContainerMethodVariable):
        return pycalls.call_container_method(tx, fn, args, kwargs)
    if isinstance(fn, ConstantMethodVariable):
        if all(v.is_constant() for v in args + list(kwargs.values())):
            return ConstantVariable(fn.bound(*[v.value for v in args],
                                             **{k: v.value for k, v in kwargs.items()}))
        raise tx.unsupported(f"call to {fn.describe()} with non-constant arguments")
    if isinstance(fn, GradModeExitVariable):
        tx.out.grad_enabled = fn.prev
        return ConstantVariable(None)
    if isinstance(fn, autocast.AutocastExitVariable):
        return autocast.leave(tx, fn)
    if getattr(fn, "value", None) is super and not isinstance(fn, ConstantVariable):
        from .supers import make_super

        if not kwargs:
            return make_super(tx, args)
    if isinstance(fn, UserObjectVariable):
        value = fn.value
        if value in (grad_mode.no_grad, grad_mode.enable_grad) and not args and not kwargs:
            return GradModeVariable(value is grad_mode.enable_grad)
        if value is grad_mode.set_grad_enabled and len(args) == 1 and args[0].is_constant():
            var = GradModeVariable(bool(args[0].value))
            var.prev = tx.out.grad_enabled
            tx.out.grad_enabled = var.mode  # takes effect at the call, as in PyTorch
            return var
        if value is functools.partial and args:
            return PartialVariable(args[0], args[1:], kwargs)
        if isinstance(value, type) and issubclass(value, autocast.REGION):
            return autocast.make_region(tx, args, kwargs, value)
        if isinstance(value, type) and issubclass(value, tuple) and \
                hasattr(value, "_fields") and type(value.__new__) is types.FunctionType:
            return _make_namedtuple(value, args, kwargs)  # `Output(logits=y, loss=l)`
        call = next((c.__dict__["__call__"] for c in type(value).__mro__
                     if "__call__" in c.__dict__), None)
        if not isinstance(value, type) and isinstance(call, types.FunctionType):
            tx.out.guards.identity(f"type({fn.source}).__call__", call, "__call__")
            return inline(tx, FunctionVariable(call, None, self_var=fn), args, kwargs)
    if isinstance(fn, ObjectVariable):  # np.dtype(...), np.meshgrid(...) inside eager
        folded = eager_rules.fold_constant_helper(tx, fn.value, args, kwargs)
        if folded is not None:
            return folded
    raise tx.unsupported(f"call to {fn.describe()}")


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
    if fn.self_var is not None:
        args = [fn.self_var] + args
    rule = vocabulary.rule_for(value) or eager_rules.rule_for(value)
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
    if nested and ".0" in code.co_varnames and "implicit0" in f_locals:
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


TENSOR_BREAKS = {
    "item": "Tensor.item() reads a tensor value into Python",
    "tolist": "Tensor.tolist() reads tensor values into Python",
    "numpy": "Tensor.numpy() leaves the graph (a numpy array aliases the tensor's memory)",
    "backward": "Tensor.backward() runs autograd (call it outside the compiled function)",
}
CAST_METHODS = {"float": "float32", "double": "float64", "long": "int64", "bool": "bool"}


def call_tensor_method(tx, t: TensorVariable, name: str, args: list, kwargs: dict):
    """Tensor methods that are not registry ops: shape queries fold, casts record `cast`."""
    if name in TENSOR_BREAKS:
        raise tx.unsupported(TENSOR_BREAKS[name])
    if not all(v.is_constant() or isinstance(v, TensorVariable)
               for v in args + list(kwargs.values())):
        raise tx.unsupported(f"Tensor.{name}() with arguments capture does not model")
    shape = t.meta.shape
    if name == "size":
        dim = (args[0] if args else kwargs.get("dim", ConstantVariable(None))).value
        if dim is None:
            dynamic.check_read(tx, t)
            return ConstantVariable(_size(shape))
        from ir.opdef import normalize_dim

        d = normalize_dim(dim, len(shape))
        dynamic.check_read(tx, t, (d,))
        return ConstantVariable(shape[d])
    if name == "dim" and not args:
        return ConstantVariable(len(shape))
    if name == "numel" and not args:
        dynamic.check_read(tx, t)
        return ConstantVariable(math.prod(shape))
    if name == "cpu" and not args:
        return t
    if name == "t" and not args:
        if len(shape) > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{len(shape)}D")
        return _transpose(tx, t, 0, 1) if len(shape) == 2 else t
    if name in CAST_METHODS and not args:
        return _cast(tx, t, to_dtype(CAST_METHODS[name]))
    if name == "to":
        dtype = kwargs.get("dtype", ConstantVariable(None)).value
        for a in args:
            if isinstance(a, TensorVariable):
                dtype = a.meta.dtype
            elif isinstance(a.value, (str, device)):
                if device(a.value).type != "cpu":
                    raise tx.unsupported(f"Tensor.to({a.value!r})")
            else:
                dtype = a.value
        return t if dtype is None else _cast(tx, t, to_dtype(dtype))
    raise tx.unsupported(f"Tensor.{name}() is not supported by capture")


def _size(shape):
    from eager.tensor import Size

    return Size(shape)


def _cast(tx, t, dtype: DType):
    if dtype is t.meta.dtype:
        return t
    return call_op(tx, OpFunctionVariable(_function_of_name("cast")), [t], {
        "dtype": ConstantVariable(dtype)})


def _transpose(tx, t, d0, d1):
    return call_op(tx, OpFunctionVariable(_function_of_name("transpose")), [t],
                   {"dim0": ConstantVariable(d0), "dim1": ConstantVariable(d1)})


def _function_of_name(name):
    from eager.dispatch import FUNCTIONS

    return FUNCTIONS[name]


# ---------------------------------------------------------------- attribute reads

TENSOR_METHODS = {"size", "dim", "numel", "t", "to", "cpu", "item", "tolist", "numpy",
                  "backward", *CAST_METHODS}


def _trusted(cls) -> bool:
    """Classes of wick itself, whose attribute hooks only read (nn.Module.__getattr__)."""
    return getattr(cls, "__module__", "").split(".")[0] in ("eager", "ir", "capture",
                                                             "builtins")


def _getter_runs_user_code(value, name: str) -> bool:
    """True when reading `value.name` would run user code (a property, another descriptor
    with `__get__` written in Python, `__getattr__`/`__getattribute__`): capture must not run
    it while tracing (and guards must not re-read it), so the read is a graph break."""
    if isinstance(value, types.ModuleType):
        return False
    cls = type(value)
    ga = getattr(cls, "__getattribute__", None)
    if ga is not object.__getattribute__ and ga is not type.__getattribute__ and \
            not _trusted(_owner(cls, "__getattribute__")):
        return True
    try:
        attr = inspect.getattr_static(value, name)
    except AttributeError:
        return hasattr(cls, "__getattr__") and not _trusted(_owner(cls, "__getattr__"))
    if isinstance(attr, (types.FunctionType, staticmethod, classmethod,
                         types.BuiltinFunctionType, types.MemberDescriptorType,
                         types.GetSetDescriptorType, types.WrapperDescriptorType,
                         types.MethodDescriptorType, types.MethodWrapperType)):
        return False
    if not hasattr(type(attr), "__get__"):
        return False
    if not isinstance(value, type) and name in getattr(value, "__dict__", {}) and \
            not hasattr(type(attr), "__set__"):
        return False  # an instance attribute (a non-data descriptor in the class is shadowed)
    owner = next((c for c in (value.__mro__ if isinstance(value, type) else cls.__mro__)
                  if name in c.__dict__), cls)
    return not _trusted(owner)


def _owner(cls, name: str):
    return next((c for c in cls.__mro__ if name in c.__dict__), object)


def get_attr(tx, obj: VariableTracker, name: str) -> VariableTracker:
    """The tracker of `obj.name`."""
    if isinstance(obj, TensorVariable):
        return tensor_attr(tx, obj, name)
    if type(obj).__name__ == "SuperVariable":
        from .supers import super_attr

        return super_attr(tx, obj, name)
    if isinstance(obj, UserObjectVariable) and obj.source is not None:
        stored = tx.out.side_effects.load_attr(obj.value, name)  # `self.n = ...` before
        if stored is not None:
            return stored
        tx.out.side_effects.note_read(obj, name)
    if isinstance(obj, (ModuleVariable, UserObjectVariable)):
        if _getter_runs_user_code(obj.value, name):  # a property: run it once, eagerly
            raise tx.unsupported(f"attribute {name!r} of {obj.describe()} is computed by user "
                                 "code (a property or __getattr__)")
        value = getattr(obj.value, name)  # an AttributeError here is the user's
        if obj.source is None:
            raise tx.unsupported(f"attribute {name!r} of {obj.describe()} made by the code")
        if isinstance(value, types.MethodType) and value.__self__ is obj.value and \
                isinstance(value.__func__, types.FunctionType):
            tx.out.guards.identity(f"{obj.source}.{name}.__func__", value.__func__,
                                   value.__func__.__name__)
            return FunctionVariable(value.__func__, None, self_var=obj)
        return tx.out.wrap(value, f"{obj.source}.{name}")
    if isinstance(obj, (SequenceVariable, DictVariable)) and not isinstance(obj, TupleVariable):
        from .pycalls import CONTAINER_METHODS

        if name in CONTAINER_METHODS:
            return ContainerMethodVariable(obj, name)
    fields = getattr(getattr(obj, "namedtuple", None), "_fields", ())
    if isinstance(obj, TupleVariable) and name in fields:  # `x.max(dim=0).values`
        return obj.items[fields.index(name)]
    if isinstance(obj, ConstantVariable):
        value = getattr(obj.value, name)
        if isinstance(value, (types.BuiltinMethodType, types.MethodType)):
            return ConstantMethodVariable(value)
        if isinstance(value, types.FunctionType):  # `type(self)._fn(x)`: a class's function
            return FunctionVariable(value, None)
        return ConstantVariable(value)
    raise tx.unsupported(f"attribute {name!r} of {obj.describe()}")


def tensor_attr(tx, t: TensorVariable, name: str) -> VariableTracker:
    meta = t.meta
    if name == "shape":
        if t.shadow is None:
            return ConstantVariable(_size(meta.shape))
        return dynamic.SizeVariable(tx, t)
    if name == "dtype":
        return ConstantVariable(meta.dtype)
    if name == "ndim":
        return ConstantVariable(len(meta.shape))
    if name == "device":
        return ConstantVariable(device(meta.device))
    if name == "requires_grad":
        return ConstantVariable(t.requires_grad)
    if name == "grad":
        from .sideeffects import load_grad

        got = load_grad(tx, t)
        if got is not None:
            return got
    if name == "is_leaf" and t.node.op == "call_function":
        return ConstantVariable(not t.requires_grad)
    if name == "T":
        out, n = t, len(meta.shape)
        for i in range(n // 2):
            out = _transpose(tx, out, i, n - 1 - i)
        return out
    if name in TENSOR_METHODS:
        return TensorMethodVariable(t, name)
    attr = getattr(Tensor, name, None)
    if attr is not None and hasattr(attr, "__wick_op__"):
        return OpFunctionVariable(attr, None, self_var=t)
    if isinstance(inspect.getattr_static(Tensor, name, None), types.FunctionType):
        return FunctionVariable(attr, None, self_var=t)  # eager's vocabulary (call_eager)
    raise tx.unsupported(f"Tensor attribute {name!r} is not supported by capture")


# ---------------------------------------------------------------- operators

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
                (isinstance(a, SequenceVariable) or not inplace):
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


def _dunder(tx, fwd: str, rev: str, a, b, symbol: str) -> VariableTracker:
    a, b = dynamic.number_operands(tx, fwd, a, b)
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
    if a.is_constant() and b.is_constant():
        fn = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
              "==": operator.eq, "!=": operator.ne}[symbol]
        return ConstantVariable(fn(a.value, b.value))
    fwd, rev = COMPARE[symbol]
    return _dunder(tx, f"__{fwd}__", f"__{rev}__", a, b, symbol)


def unary_op(tx, dunder: str, fold, v: VariableTracker) -> VariableTracker:
    if v.is_constant():
        return ConstantVariable(fold(v.value))
    if isinstance(v, TensorVariable):
        fn = getattr(Tensor, dunder, None)
        if fn is not None and hasattr(fn, "__wick_op__"):
            return call_op(tx, OpFunctionVariable(fn), [v], {})
    raise tx.unsupported(f"unary {dunder} on {v.describe()}")




# ---------------------------------------------------------------- containers (pycalls.py)


def unpack(tx, v: VariableTracker) -> list:
    from .pycalls import unpack as _unpack

    return _unpack(tx, v)


def subscript(tx, obj: VariableTracker, index: VariableTracker) -> VariableTracker:
    from .pycalls import subscript as _subscript

    return _subscript(tx, obj, index)


def store_subscript(tx, obj, index, value) -> None:
    from .pycalls import store_subscript as _store

    _store(tx, obj, index, value)
