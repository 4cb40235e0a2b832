"""PyTorch's legacy tensor types: `torch.FloatTensor`, `LongTensor`, ... (and the
`torch.cuda.*Tensor` forms) as classes whose call makes a tensor of their dtype
(`FloatTensor(2, 3)`: uninitialized of that shape; `FloatTensor([1, 2])`: from data;
`FloatTensor()`: empty) and whose `isinstance` tests a tensor's dtype and device, and the
`Tensor.type()` strings ("torch.FloatTensor") with `t.type(...)` casting to a type, its name
or a dtype. Semantics: the torch.Tensor documentation of these legacy constructors.
"""

from __future__ import annotations

from ir import dtypes as D
from ir.dtypes import set_default_dtype

from . import creation
from .device import device as _device
from .tensor import Tensor

# legacy type name stem -> dtype name
STEMS = {"Float": "float32", "Double": "float64", "Half": "float16", "BFloat16": "bfloat16",
         "Long": "int64", "Int": "int32", "Short": "int16", "Char": "int8", "Byte": "uint8",
         "Bool": "bool_", "ComplexFloat": "complex64", "ComplexDouble": "complex128"}
_STEM_OF = {D.to_dtype(v.rstrip("_")).name: k for k, v in STEMS.items()}


def type_name(t: Tensor) -> str:
    """"torch.FloatTensor" / "torch.cuda.FloatTensor" for tensor `t`."""
    stem = _STEM_OF.get(t.dtype.name, t.dtype.name)
    cuda = ".cuda" if t.device.type == "cuda" else ""
    return f"torch{cuda}.{stem}Tensor"


def parse(name: str):
    """(dtype, device type) of a legacy type name ("torch.cuda.LongTensor"); ValueError for
    another string."""
    parts = name.split(".")
    if parts[0] in ("torch", "eager"):
        parts = parts[1:]
    dev = "cpu"
    if parts and parts[0] == "cuda":
        dev, parts = "cuda", parts[1:]
    if len(parts) == 1 and parts[0].endswith("Tensor") and parts[0][:-6] in STEMS:
        return getattr(D, STEMS[parts[0][:-6]]), dev
    raise ValueError(f"invalid type: '{name}'")


def cast_to_type(t: Tensor, dtype=None, non_blocking=False, **kwargs):
    """`Tensor.type(dtype=None)`: the type name, or `t` converted to a legacy type (class or
    name) or a dtype."""
    if dtype is None:
        return type_name(t)
    if isinstance(dtype, _LegacyTensorMeta):
        return t.to(device=dtype.device_type, dtype=dtype.dtype)
    if isinstance(dtype, str):
        dt, dev = parse(dtype)
        return t.to(device=dev, dtype=dt)
    return t.to(dtype)


class _LegacyTensorMeta(type):
    """The metaclass of the legacy types: calling makes a tensor, isinstance tests dtype and
    device."""

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype is cls.dtype and \
            obj.device.type == cls.device_type

    def __call__(cls, *args, device=None):
        dev = device if device is not None else cls.device_type
        if len(args) == 0:
            return creation.empty(0, dtype=cls.dtype, device=dev)
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return creation.empty(*args, dtype=cls.dtype, device=dev)
        if len(args) == 1 and isinstance(args[0], (tuple, list)) and args[0] and \
                type(args[0]).__name__ == "Size":
            return creation.empty(*args[0], dtype=cls.dtype, device=dev)
        if len(args) == 1:
            data = args[0]
            if isinstance(data, Tensor):
                if data.dtype is not cls.dtype:
                    raise TypeError(f"expected {cls.__name__} (got {type_name(data)})")
                return data
            return creation.tensor(data, dtype=cls.dtype, device=dev)
        raise TypeError(f"{cls.__name__}(): arguments must be sizes or one sequence of data")

    def __repr__(cls) -> str:
        return f"<class '{cls.__qualname__}'>"


def _make(stem: str, device_type: str):
    prefix = "torch.cuda." if device_type == "cuda" else "torch."
    return _LegacyTensorMeta(f"{stem}Tensor", (), {
        "dtype": getattr(D, STEMS[stem]), "device_type": device_type,
        "__qualname__": f"{prefix}{stem}Tensor", "__module__": prefix[:-1]})


CPU_TYPES = {f"{s}Tensor": _make(s, "cpu") for s in STEMS if s not in ("ComplexFloat",
                                                                        "ComplexDouble")}
CUDA_TYPES = {f"{s}Tensor": _make(s, "cuda") for s in STEMS if s not in ("ComplexFloat",
                                                                          "ComplexDouble")}


def set_default_tensor_type(t) -> None:
    """`torch.set_default_tensor_type` (deprecated in PyTorch 2.1): the default floating
    dtype of a legacy type or its name, and the CUDA default device for a torch.cuda type.
    TypeError for a non-floating type."""
    import warnings

    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    dt, dev = parse(t) if isinstance(t, str) else (t.dtype, t.device_type)
    if dt.category != D.FLOATING:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(dt)
    if dev == "cuda":
        _device.set_default_device("cuda")


def install(namespace: dict, cuda_module) -> None:
    """The CPU types into `namespace` (the eager module), the CUDA ones into `eager.cuda`, and
    `Tensor.type`."""
    for name, cls in CPU_TYPES.items():
        namespace.setdefault(name, cls)
    namespace.setdefault("set_default_tensor_type", set_default_tensor_type)
    for name, cls in CUDA_TYPES.items():
        setattr(cuda_module, name, cls)
    Tensor.type = cast_to_type
