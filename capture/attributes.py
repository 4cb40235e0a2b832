"""Attribute reads and tensor methods during capture: `get_attr(tx, obj, name)` is the tracker of
`obj.name` (tensor attributes, module and object attributes guarded by source, container methods,
named-tuple fields, constants), and `call_tensor_method` handles the Tensor methods that are not
registry ops (shape queries fold, casts record `cast`, reads into Python break). An attribute
computed by user code (a property, `__getattr__`) is a graph break. Re-exported by `calls`.
"""

from __future__ import annotations

import enum
import inspect
import math
import types

from eager import Tensor, device
from ir.dtypes import DType, to_dtype

from . import dict_objects, dynamic, local_generators, made_modules, objects
from .recording import call_op
from .variables import (
    ConstantMethodVariable,
    ConstantVariable,
    ContainerMethodVariable,
    DictVariable,
    FunctionVariable,
    ModuleVariable,
    NumpyOfVariable,
    OpFunctionVariable,
    SequenceVariable,
    TensorMethodVariable,
    TensorVariable,
    TupleVariable,
    UnknownVariable,
    UserObjectVariable,
    VariableTracker,
)


TENSOR_BREAKS = {
    "item": "Tensor.item() reads a tensor value into Python",
    "tolist": "Tensor.tolist() reads tensor values into Python",
    "numpy": "Tensor.numpy() leaves the graph (a numpy array aliases the tensor's memory)",
    "backward": "Tensor.backward() runs autograd (call it outside the compiled function)",
}
CAST_METHODS = {"float": "float32", "double": "float64", "long": "int64", "bool": "bool",
                "half": "float16", "bfloat16": "bfloat16", "int": "int32", "short": "int16",
                "char": "int8", "byte": "uint8", "cfloat": "complex64", "cdouble": "complex128"}
DTYPE_QUERIES = {"is_floating_point": "is_floating_point", "is_complex": "is_complex"}


def call_tensor_method(tx, t: TensorVariable, name: str, args: list, kwargs: dict):
    """Tensor methods that are not registry ops: shape queries fold, casts record `cast`."""
    if name == "numpy" and not args and not kwargs and not t.requires_grad:
        return NumpyOfVariable(t)  # (eager raises for a tensor that requires grad)
    if name in TENSOR_BREAKS:
        raise tx.unsupported(TENSOR_BREAKS[name])
    if not all(v.is_constant() or isinstance(v, TensorVariable)
               for v in args + list(kwargs.values())):
        raise tx.unsupported(f"Tensor.{name}() with arguments capture does not model")
    shape = t.meta.shape
    if name == "size":
        dim = (args[0] if args else kwargs.get("dim", ConstantVariable(None))).value
        if dim is None:  # (`B, T, C = x.size()`: dynamic sizes are symbolic, as `x.shape`)
            return tensor_attr(tx, t, "shape")
        from ir.opdef import normalize_dim

        return dynamic.SizeVariable(tx, t).item(normalize_dim(dim, len(shape)))
    if name in ("dim", "ndimension") and not args:
        return ConstantVariable(len(shape))
    if name in DTYPE_QUERIES and not args and not kwargs:  # (the dtype is guarded)
        return ConstantVariable(getattr(t.meta.dtype, DTYPE_QUERIES[name]))
    if name in ("numel", "nelement") and not args:
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


def _view_property(tx, t, name: str):
    """`x.T`, `x.mT`, `x.H`, `x.mH`, `x.real`, `x.imag` as the views eager's properties make
    (transposes, then `conj` for a complex tensor); a shape eager rejects is a break, so the
    error is eager's own when the code runs."""
    n, complex_ = len(t.meta.shape), t.meta.dtype.is_complex
    if name in ("real", "imag"):
        if name == "real" and not complex_:
            return t
        return call_op(tx, OpFunctionVariable(_function_of_name(name)), [t], {})
    if (name in ("mT", "mH") and n < 2) or (name == "H" and n not in (0, 2)):
        raise tx.unsupported(f"Tensor.{name} of a {n}-D tensor (an error in eager)")
    out = t
    if name in ("T", "H"):
        for i in range(n // 2):
            out = _transpose(tx, out, i, n - 1 - i)
    else:
        out = _transpose(tx, out, n - 2, n - 1)
    if name in ("H", "mH") and complex_:
        out = call_op(tx, OpFunctionVariable(_function_of_name("conj")), [out], {})
    return out


def _constant_property(meta, name: str):
    """`itemsize`, `nbytes`, `is_cpu`, `is_cuda`, `is_meta`, `layout` of a traced tensor, from
    its meta (the values eager's properties give)."""
    import eager

    size = meta.dtype.itemsize
    return {"itemsize": size, "nbytes": size * math.prod(meta.shape),
            "is_cpu": meta.device == "cpu", "is_cuda": meta.device.startswith("cuda"),
            "is_meta": False, "layout": eager.strided}[name]


def _function_of_name(name):
    from eager.dispatch import FUNCTIONS

    return FUNCTIONS[name]


# ---------------------------------------------------------------- attribute reads

TENSOR_METHODS = {"size", "dim", "ndimension", "numel", "nelement", "t", "to", "cpu", "item",
                  "tolist", "numpy", "backward", *CAST_METHODS, *DTYPE_QUERIES}


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
            not _trusted(_owner(cls, "__getattribute__")) and \
            not isinstance(ga, types.WrapperDescriptorType):  # (SimpleNamespace's: C)
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


def _user_property(value, name: str):
    """The getter of a plain `property` of `value`'s class written in Python (`Model.device`,
    `AverageMeter.avg`), when nothing else intercepts the read (no `__getattribute__` of the
    user's); else None."""
    cls = type(value)
    if isinstance(value, (type, types.ModuleType)) or \
            getattr(cls, "__getattribute__", None) is not object.__getattribute__ and \
            not _trusted(_owner(cls, "__getattribute__")):
        return None
    attr = _owner(cls, name).__dict__.get(name)
    if type(attr) is property and isinstance(attr.fget, types.FunctionType):
        return attr.fget
    return None


def _user_getattr(value, name: str):
    """The `__getattr__` written in Python of `value`'s class (an `AttributeDict(dict)`, a
    config wrapper) when `value.name` is found nowhere else, so Python calls it, and nothing
    else intercepts the read (no `__getattribute__` of the user's); else None. Inlined as
    Dynamo does; the name's absence is fixed by the guards on the object and its class."""
    cls = type(value)
    if isinstance(value, (type, types.ModuleType)) or \
            getattr(cls, "__getattribute__", None) is not object.__getattribute__ and \
            not _trusted(_owner(cls, "__getattribute__")):
        return None
    fn = _owner(cls, "__getattr__").__dict__.get("__getattr__")
    if not isinstance(fn, types.FunctionType) or _trusted(_owner(cls, "__getattr__")):
        return None
    try:
        inspect.getattr_static(value, name)
    except AttributeError:
        return fn
    return None


def _owner(cls, name: str):
    return next((c for c in cls.__mro__ if name in c.__dict__), object)


def get_attr(tx, obj: VariableTracker, name: str) -> VariableTracker:
    """The tracker of `obj.name`."""
    if isinstance(obj, TensorVariable):
        return tensor_attr(tx, obj, name)
    if isinstance(obj, objects.NewObjectVariable):
        return objects.get_attr(tx, obj, name)
    if type(obj).__name__ == "SuperVariable":
        from .supers import super_attr

        return super_attr(tx, obj, name)
    if isinstance(obj, made_modules.MadeModuleVariable):
        return made_modules.get_attr(tx, obj, name)
    if isinstance(obj, local_generators.LocalGeneratorVariable):  # `g.manual_seed`
        return local_generators.get_attr(tx, obj, name)
    if getattr(obj, "mapping", None) is not None and isinstance(obj, UserObjectVariable):
        method = dict_objects.get_attr(tx, obj, name)  # `out.keys()` of a ModelOutput input
        if method is not None:
            return method
    if isinstance(obj, UserObjectVariable) and obj.source is not None:
        stored = tx.out.side_effects.load_attr(tx, obj.value, name)  # `self.n = ...` before
        if stored is not None:
            return stored
        tx.out.side_effects.note_read(obj, name)
    if isinstance(obj, (ModuleVariable, UserObjectVariable)):
        fget = _user_property(obj.value, name)
        if fget is not None and obj.source is not None:  # `self.device`: inlined, as Dynamo
            from .calls import call_function

            tx.out.guards.identity(f"type({obj.source}).{name}.fget", fget, fget.__name__)
            return call_function(tx, FunctionVariable(fget, None), [obj], {})
        if isinstance(obj.value, enum.Enum) and name in ("value", "name") and \
                obj.source is not None:  # `cfg.pool.value`: the member's (guarded) constant
            tx.out.guards.identity(obj.source, obj.value, type(obj.value).__name__)
            return tx.out.wrap(getattr(obj.value, name), f"{obj.source}.{name}")
        fget = _user_getattr(obj.value, name)
        if fget is not None and obj.source is not None:  # `hparams.lr`: __getattr__ inlined
            from .calls import call_function

            tx.out.guards.identity(f"type({obj.source}).__getattr__", fget, fget.__name__)
            return call_function(tx, FunctionVariable(fget, None),
                                 [obj, ConstantVariable(name)], {})
        if _getter_runs_user_code(obj.value, name):  # a descriptor, __getattr__: eagerly
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
    if isinstance(obj, TupleVariable) and fields and name in ("_fields", "_asdict", "_replace"):
        return _namedtuple_member(obj, name)
    if isinstance(obj, ConstantVariable):
        value = getattr(obj.value, name)
        if isinstance(value, (types.BuiltinMethodType, types.MethodType)):
            return ConstantMethodVariable(value)
        if isinstance(value, types.FunctionType):  # `type(self)._fn(x)`: a class's function
            return FunctionVariable(value, None)
        return ConstantVariable(value)
    slot = _slot_attr(tx, obj, name)  # `field._field_type` of a dataclasses.Field
    if slot is not None:
        return slot
    method = _numpy_method(tx, obj, name) or dict_objects.unbound(obj, name)
    if method is not None:  # (`dict.get(self, k, 0)` in a dict subclass: dict_objects)
        return method
    raise tx.unsupported(f"attribute {name!r} of {obj.describe()}")


def _namedtuple_member(obj, name: str) -> VariableTracker:
    """`out._fields`, `out._asdict()`, `out._replace(pooler_output=p)` of a named tuple the
    code holds (a `typing.NamedTuple` output): its class's fields, a dict of its items, a new
    tuple of the same class (a TypeError for an unknown field, as namedtuple's ValueError)."""
    from .dict_objects import RawMethodVariable

    cls = obj.namedtuple
    if name == "_fields":
        return ConstantVariable(cls._fields)
    if name == "_asdict":
        return RawMethodVariable(lambda tx, a, kw: DictVariable(dict(zip(cls._fields,
                                                                         obj.items))),
                                 f"{cls.__name__}._asdict")

    def replace(tx, args, kwargs):
        unknown = set(kwargs) - set(cls._fields)
        if args or unknown:
            raise ValueError(f"Got unexpected field names: {sorted(unknown)!r}")
        out = TupleVariable([kwargs.get(f, v) for f, v in zip(cls._fields, obj.items)])
        out.namedtuple = cls
        return out

    return RawMethodVariable(replace, f"{cls.__name__}._replace")


def _slot_attr(tx, obj, name: str) -> VariableTracker | None:
    """`obj.name` of an object without a `__dict__` read from a source (a
    `dataclasses.Field` that `dataclasses.replace`/`asdict` read, a library's `__slots__`
    class) whose attribute is a plain slot (a member descriptor runs no user code): the value,
    wrapped and guarded from `source.name`; else None."""
    if not isinstance(obj, UnknownVariable) or obj.source is None:
        return None
    slot = inspect.getattr_static(type(obj.value), name, None)
    if not isinstance(slot, types.MemberDescriptorType) or \
            isinstance(obj.value, (type, types.ModuleType)):
        return None
    value = getattr(obj.value, name)  # an AttributeError (an empty slot) is the user's
    return tx.out.wrap(value, f"{obj.source}.{name}")


def _numpy_method(tx, obj, name: str):
    """`np.multiply.outer` read inside an inlined `eager` composition: the C method of a
    numpy object (a ufunc) that the call folds on constants (`eager_rules.fold_constant_helper`),
    else None. The object is guarded where it was read (a bound method has no stable identity
    to guard)."""
    from .vocabulary import is_internal_frame

    if not isinstance(obj, UnknownVariable) or obj.source is None or \
            type(obj.value).__module__.split(".")[0] != "numpy" or not is_internal_frame(tx):
        return None
    value = getattr(obj.value, name, None)
    if isinstance(value, types.BuiltinMethodType):
        from .variables import BuiltinVariable

        return BuiltinVariable(value, None)
    return None


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
    if name == "data":  # a detached alias sharing memory, its own version counter
        from .vocabulary import _same_shape_view
        from .writeback import note_alias

        return note_alias(tx, t, _same_shape_view(tx, t, grad=False), "data")
    if name == "is_leaf" and t.node.op == "call_function":
        return ConstantVariable(not t.requires_grad)
    if name in ("T", "mT", "H", "mH", "real", "imag"):
        return _view_property(tx, t, name)
    if name in ("itemsize", "nbytes", "is_cpu", "is_cuda", "is_meta", "layout"):
        return ConstantVariable(_constant_property(meta, name))
    if name in TENSOR_METHODS:
        return TensorMethodVariable(t, name)
    attr = getattr(Tensor, name, None)
    if attr is not None and hasattr(attr, "__wick_op__"):
        return OpFunctionVariable(attr, None, self_var=t)
    if isinstance(inspect.getattr_static(Tensor, name, None), types.FunctionType):
        return FunctionVariable(attr, None, self_var=t)  # eager's vocabulary (call_eager)
    raise tx.unsupported(f"Tensor attribute {name!r} is not supported by capture")
