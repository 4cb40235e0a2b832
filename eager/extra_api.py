"""The rest of PyTorch's Tensor/top-level surface that is naming, not new semantics (issue 16's
sweep): in-place variants derived from the registry the way `eager.dispatch` derives them
(`Tensor.cumsum_`, `torch.abs_`...), in-place shape changes (`t_`, `transpose_`, `squeeze_`,
`unsqueeze_`, `swapaxes_`), `*_copy` functions (a view op's result as a new tensor), small
factories (`scalar_tensor`, `range`, `empty_strided`, `frombuffer`...), Tensor introspection
(`layout`, `get_device`, `H`, `mH`...), and `install`, which puts these and the names of
`extra_functional.py` (top-level nn.functional aliases, window functions) and
`extra_settings.py` (layouts, memory formats, constants, process settings) on the `eager`
module and on Tensor. Semantics: the PyTorch documentation of each name. Imports eager's
modules only.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ir import REGISTRY
from ir import dtypes as D

from . import creation, extra, extra_numeric, extra_spectral
from . import dispatch as _dispatch
from . import storage as _storage
from .autograd import anomaly, set_detect_anomaly
from .dispatch import FUNCTIONS as _F
from .extra_functional import (
    _SAME_ORDER,
    _alias,
    _dropout_inplace,
    _functional,
    adaptive_max_pool1d,
    alpha_dropout,
    bartlett_window,
    batch_norm,
    blackman_window,
    dropout,
    embedding,
    feature_alpha_dropout,
    feature_dropout,
    hamming_window,
    hann_window,
    instance_norm,
    kaiser_window,
    max_pool1d_with_indices,
)
from .extra_settings import (
    CONSTANTS,
    are_deterministic_algorithms_enabled,
    channels_last,
    channels_last_3d,
    contiguous_format,
    get_default_device,
    get_deterministic_debug_mode,
    get_float32_matmul_precision,
    get_num_interop_threads,
    get_num_threads,
    init_num_threads,
    is_deterministic_algorithms_warn_only_enabled,
    is_warn_always_enabled,
    layout,
    legacy_contiguous_format,
    memory_format,
    preserve_format,
    set_deterministic_debug_mode,
    set_float32_matmul_precision,
    set_flush_denormal,
    set_num_interop_threads,
    set_num_threads,
    set_warn_always,
    strided,
    use_deterministic_algorithms,
)
from .extra_tensor import (
    _H,
    apply_,
    as_subclass,
    cauchy_,
    geometric_,
    get_device,
    log_normal_,
    map2_,
    map_,
    new,
    new_empty,
    new_empty_strided,
    new_full,
    new_ones,
    new_tensor,
    nonzero_static,
    resize_,
    resize_as_,
    set_,
)
from .extra_tensor import (
    empty_strided as _empty_strided,
)
from .func import vmap
from .grad_mode import is_grad_enabled
from .tensor import Tensor

# ---------------------------------------------------------------- in-place variants

# Registry ops whose PyTorch Tensor has `<name>_` though the op is not elementwise.
INPLACE_OPS = ("cumsum", "cumprod", "lgamma", "digamma", "i0", "polygamma", "igamma", "igammac",
               "addmm", "addbmm", "addmv", "addr", "baddbmm", "logit", "nan_to_num", "sinc",
               "xlogy", "renorm")
# Top-level `torch.<name>_(input, ...)`: the method applied to `input`.
TOPLEVEL_INPLACE = (
    "abs", "acos", "acosh", "addmv", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctanh", "asin", "asinh", "atan", "atanh", "ceil", "clamp", "clamp_max", "clamp_min",
    "clip", "cos", "cosh", "erf", "erfc", "exp", "exp2", "expm1", "fix", "floor", "frac", "gcd",
    "i0", "lcm", "ldexp", "log", "log10", "log1p", "log2", "logit", "nan_to_num", "neg",
    "negative", "reciprocal", "round", "rsqrt", "sigmoid", "sin", "sinc", "sinh", "sqrt",
    "square", "tan", "tanh", "trunc", "xlogy", "deg2rad", "rad2deg", "relu", "selu", "celu",
    "threshold", "fill", "zero", "detach", "index_put", "resize_as", "conj_physical", "rrelu",
)


def _composite_inplace(name):
    """`Tensor.<name>_` for a function of `eager.extra`: compute, then write into self."""
    def method(self, *args, **kwargs):
        self._check_inplace()
        # (on a copy carrying self's history: the composite's nodes may save self)
        source = self.clone() if self.requires_grad and _grad_enabled() else self
        return self._inplace_update(getattr(Tensor, name)(source, *args, **kwargs))
    method.__name__ = name + "_"
    method.__doc__ = f"In-place version of `{name}` (writes the result into self)."
    return method


def _shape_inplace(name, view):
    """`Tensor.<name>_`: self becomes the view `view(self, ...)` of its own memory (PyTorch's
    in-place metadata change); under autograd the view's history becomes self's."""
    def method(self, *args, **kwargs):
        old = Tensor._make(self._data)
        old._vc, old._base = self._vc, self._base
        old.grad_fn, old.requires_grad = self.grad_fn, self.requires_grad
        if self.requires_grad and self.is_leaf and _grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        out = view(old, *args, **kwargs)
        self._data = out._data
        if out.grad_fn is not None:
            self.grad_fn = out.grad_fn
        return self
    method.__name__ = name + "_"
    method.__doc__ = f"In-place `{name}`: changes self's shape/strides, not its data."
    return method


def _grad_enabled():
    return is_grad_enabled()


def _toplevel_inplace(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name + "_")(*args, **kwargs)
    fn.__name__ = name + "_"
    fn.__doc__ = f"`torch.{name}_(input, ...)`: `input.{name}_(...)`."
    return fn


# ---------------------------------------------------------------- *_copy functions

COPY_OF = ("alias", "as_strided", "detach", "diagonal", "expand", "permute", "select", "slice",
           "split", "split_with_sizes", "squeeze", "t", "transpose", "unbind", "unfold",
           "unsqueeze", "view", "view_as_real", "view_as_complex")


def _slice(input, dim=0, start=None, end=None, step=1):
    key = (slice(None),) * (dim % builtins.max(input.ndim, 1)) + (slice(start, end, step),)
    return input[key]


def _copy_fn(name):
    def fn(input, *args, **kwargs):
        if name == "alias":
            view = input.view(input.shape)
        elif name == "slice":
            view = _slice(input, *args, **kwargs)
        else:
            view = getattr(input, name)(*args, **kwargs) if hasattr(Tensor, name) else \
                _F[name](input, *args, **kwargs)
        if isinstance(view, (tuple, list)):
            return tuple(v.clone() for v in view)
        return view.clone()
    fn.__name__ = name + "_copy"
    fn.__doc__ = f"`torch.{name}_copy`: `{name}`'s result as a new tensor (no shared memory)."
    return fn


def typename(obj) -> str:
    """`torch.typename`: "torch.FloatTensor"-style names for tensors, else the class path."""
    if isinstance(obj, Tensor):
        names = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16":
                 "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char",
                 "uint8": "Byte", "bool": "Bool", "complex64": "ComplexFloat",
                 "complex128": "ComplexDouble"}
        return f"torch.{names.get(obj.dtype.name, obj.dtype.name)}Tensor"
    cls = obj if isinstance(obj, type) else type(obj)
    mod = cls.__module__
    return cls.__qualname__ if mod in ("builtins", None) else f"{mod}.{cls.__qualname__}"


def scalar_tensor(s, *, dtype=None, layout=None, device=None, requires_grad=False):
    """`torch.scalar_tensor(s)`: a 0-d tensor of the default float dtype (or `dtype`)."""
    return creation.tensor(s, dtype=D.get_default_dtype() if dtype is None else dtype,
                           device=device, requires_grad=requires_grad)


def rsub(input, other, *, alpha=1):
    """`torch.rsub(input, other, alpha=1)`: other - alpha * input."""
    return _F["sub"](other if isinstance(other, Tensor) else
                     creation.full_like(input, other), input, alpha=alpha)


def fill(input, value):
    """`torch.fill(input, value)`: a new tensor of input's shape and dtype filled with value."""
    return creation.full_like(input, value.item() if isinstance(value, Tensor) else value)


def range(start=0, end=None, step=1, *, dtype=None, layout=None, device=None,
          requires_grad=False):
    """`torch.range` (deprecated in PyTorch): like arange but including `end`, default float
    dtype."""
    warnings.warn("torch.range is deprecated and will be removed in a future release because "
                  "its behavior is inconsistent with Python's range builtin. Instead, use "
                  "torch.arange, which produces values in [start, end).", UserWarning,
                  stacklevel=2)
    if end is None:
        start, end = 0, start
    n = math.floor((end - start) / step) + 1
    vals = start + step * np.arange(builtins.max(n, 0))
    return creation.tensor(vals, dtype=D.get_default_dtype() if dtype is None else dtype,
                           device=device, requires_grad=requires_grad)


def empty_strided(size, stride, *, dtype=None, layout=None, device=None, requires_grad=False,
                  pin_memory=False):
    """`torch.empty_strided`: an uninitialised tensor of `size` (wick's strides are
    numpy's; a zero-filled C-contiguous tensor)."""
    return _empty_strided(size, stride, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad=False, pin_memory=False):
    """`torch.empty_permuted`: an uninitialised tensor of `size` laid out in
    `physical_layout` order (a permuted view of a contiguous buffer)."""
    size, order = tuple(size), tuple(physical_layout)
    if sorted(order) != list(builtins.range(len(size))):
        raise RuntimeError(f"Dimension mismatch: physical_layout {list(order)} is not a "
                           f"permutation of {len(size)} dims")
    base = creation.zeros(tuple(size[i] for i in order), dtype=dtype, device=device)
    inv = tuple(np.argsort(order).tolist())
    return base.permute(inv).requires_grad_(requires_grad) if requires_grad else \
        base.permute(inv)


def _method_of(name):
    def fn(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"`torch.{name}(input, ...)`: `input.{name}(...)`."
    return fn


# Top-level functions that are Tensor methods applied to their first argument.
METHOD_FUNCTIONS = ("is_complex", "is_floating_point", "is_conj", "is_neg", "resolve_conj",
                    "resolve_neg", "detach", "is_inference", "get_device", "conj_physical",
                    "unsafe_chunk", "unsafe_split", "unsafe_split_with_sizes", "sum_to_size",
                    "nonzero_static")


def is_storage(obj) -> bool:
    """`torch.is_storage`: whether `obj` is a storage object."""
    return isinstance(obj, (_storage.UntypedStorage, _storage.TypedStorage))


def to_dlpack(tensor):
    """`torch.to_dlpack`: a DLPack capsule of the tensor's memory (numpy's `__dlpack__`)."""
    return tensor._data.__dlpack__()


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """`torch.frombuffer`: a 1-d tensor sharing the memory of a buffer-protocol object."""
    arr = np.frombuffer(buffer, dtype=D.to_dtype(dtype).np, count=count, offset=offset)
    if not arr.flags.writeable:
        warnings.warn("The given buffer is not writable, and PyTorch does not support "
                      "non-writable tensors.", UserWarning, stacklevel=2)
    t = creation.from_numpy(arr)
    return t.requires_grad_(True) if requires_grad else t


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None,
              pin_memory=False, requires_grad=False):
    """`torch.from_file`: the first `size` elements of a raw binary file (default dtype)."""
    dt = D.get_default_dtype() if dtype is None else D.to_dtype(dtype)
    arr = np.fromfile(filename, dtype=dt.np, count=size)
    if arr.shape[0] < size:
        raise RuntimeError(f"unable to read {size} elements of {dt.name} from {filename}")
    return creation.tensor(arr, dtype=dt, requires_grad=requires_grad)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """`torch.set_anomaly_enabled`: `torch.autograd.set_detect_anomaly`'s switch."""
    set_detect_anomaly(enabled, check_nan)


def get_device_module(device=None):
    """`torch.get_device_module`: `eager.cuda` for CUDA devices, else `eager.cpu`."""
    import importlib

    kind = "cpu" if device is None else str(getattr(device, "type", device)).split(":")[0]
    if kind not in ("cpu", "cuda"):
        raise RuntimeError(f"Device '{kind}' does not have a corresponding module registered "
                           "as 'torch.{kind}'.")
    return importlib.import_module(f"eager.{kind}") if kind == "cpu" else \
        importlib.import_module("eager").cuda


def _where_overloads(general):
    """`torch.where` with PyTorch's two overloads: `where(condition, input, other)` is the
    registry op `general`; `where(condition)` is `nonzero(condition, as_tuple=True)` (a tuple
    of int64 index tensors, one per dimension), as the PyTorch documentation states."""
    def where(*args, **kwargs):
        if len(args) + len(kwargs) == 1 and (args or "condition" in kwargs):
            cond = args[0] if args else kwargs["condition"]
            return _F["nonzero"](cond, as_tuple=True)
        return general(*args, **kwargs)

    where.__doc__ = general.__doc__
    where.__wick_op__ = general.__wick_op__  # captured as the registry op (3-operand form)
    where.__wick_general__ = general
    return where


def _vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`torch.vmap`: `torch.func.vmap`."""
    return vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


_vmap.__name__ = "vmap"


def _lazy_module(name):
    """Module `__getattr__` of `eager`: submodules imported on first use (`eager.distributions`
    pulls scipy.stats-sized imports that `import eager` should not pay for)."""
    if name in ("distributions", "cpu", "functional", "testing", "signal", "func",
                "quasirandom", "jit", "onnx", "_dynamo", "array_api"):
        import importlib

        return importlib.import_module(f"eager.{name}")
    if name == "windows":  # (torch.windows is torch.signal.windows)
        import importlib

        return importlib.import_module("eager.signal.windows")
    raise AttributeError(f"module 'eager' has no attribute {name!r}")


def install(namespace: dict, tensor_cls) -> None:
    """Add the names above to `namespace` (the `eager` module) and to Tensor, skipping names
    already defined (other modules' definitions win)."""
    T = tensor_cls

    def meth(name, fn):
        if not hasattr(T, name):
            setattr(T, name, fn)

    def top(name, fn):
        namespace.setdefault(name, fn)

    _install_inplace(T, meth)
    _install_functions(top)
    _install_functional(meth, top)
    _install_namespace(top)
    _install_tensor(T, meth, namespace)
    namespace["where"] = _where_overloads(namespace["where"])


def _install_inplace(T, meth) -> None:
    """Tensor's in-place variants: registry ops', compositions', shape changes'."""
    for name in INPLACE_OPS:
        if name in REGISTRY:
            meth(name + "_", _dispatch._make_inplace(REGISTRY[name]))
        elif hasattr(T, name):
            meth(name + "_", _composite_inplace(name))
    for name in ("index_reduce", "conj_physical"):
        meth(name + "_", _composite_inplace(name))
    meth("conj_physical", lambda self: _F["conj"](self).clone() if self.dtype.is_complex
         else self.clone())
    meth("unsafe_chunk", lambda self, chunks, dim=0: self.chunk(chunks, dim))
    meth("unsafe_split", lambda self, split_size, dim=0: self.split(split_size, dim))
    meth("unsafe_split_with_sizes", lambda self, split_sizes, dim=0:
         extra.split_with_sizes(self, split_sizes, dim))
    for name, view in (("t", _F["t"]), ("transpose", _F["transpose"]),
                       ("squeeze", lambda x, *a, **k: x.squeeze(*a, **k)),
                       ("unsqueeze", _F["unsqueeze"]), ("swapaxes", extra.swapaxes),
                       ("swapdims", extra.swapdims), ("as_strided", _F["as_strided"])):
        meth(name + "_", _shape_inplace(name, view))


def _install_functions(top) -> None:
    """Top-level in-place forms, `*_copy` functions, nn.functional aliases, windows, settings
    and factories."""
    for name in TOPLEVEL_INPLACE:
        top(name + "_", _toplevel_inplace(name))
    for name in COPY_OF:
        top(name + "_copy", _copy_fn(name))
    for name in _SAME_ORDER:
        top(name, _alias(name))
    for fn in (dropout, alpha_dropout, feature_dropout, feature_alpha_dropout):
        top(fn.__name__, fn)
        top(fn.__name__ + "_", _dropout_inplace(fn))
    for fn in (embedding, batch_norm, instance_norm, adaptive_max_pool1d,
               max_pool1d_with_indices, hann_window, hamming_window, bartlett_window,
               blackman_window, kaiser_window, get_num_threads, set_num_threads,
               get_num_interop_threads, set_num_interop_threads, init_num_threads,
               use_deterministic_algorithms, are_deterministic_algorithms_enabled,
               is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
               get_deterministic_debug_mode, set_float32_matmul_precision,
               get_float32_matmul_precision, set_warn_always, is_warn_always_enabled,
               set_flush_denormal, get_default_device, typename, scalar_tensor, rsub, fill,
               range, empty_strided, empty_permuted):
        top(fn.__name__, fn)


def _install_functional(meth, top) -> None:
    """Tensor methods over nn.functional, and the numeric and spectral helpers."""
    for name in ("relu", "selu", "celu", "threshold", "rrelu", "hardshrink", "prelu"):
        meth_fn = getattr(_functional(), name + "_", None)
        if meth_fn is not None and name in ("relu", "selu", "celu", "threshold", "rrelu"):
            meth(name + "_", meth_fn)
    meth("hardshrink", lambda self, lambd=0.5: _functional().hardshrink(self, lambd))
    meth("prelu", lambda self, weight: _functional().prelu(self, weight))
    for fn in extra_numeric.FUNCTIONS + extra_spectral.FUNCTIONS:
        top(fn.__name__, fn)
    meth("stft", extra_spectral.stft)
    meth("istft", extra_spectral.istft)
    meth("nanquantile", extra_numeric.nanquantile)
    meth("where", lambda self, condition, other: _F["where"](condition, self, other))
    meth("resize_as", resize_as_)
    meth("storage", lambda self: _storage.TypedStorage(self.untyped_storage()._array,
                                                      self.dtype))
    meth("nonzero_static", nonzero_static)


def _install_namespace(top) -> None:
    """Module-level names: storage/DLPack/anomaly helpers, lazy submodules, methods as
    functions, layouts, memory formats and constants."""
    for fn in (is_storage, to_dlpack, frombuffer, from_file, set_anomaly_enabled,
               anomaly.is_anomaly_enabled, anomaly.is_anomaly_check_nan_enabled):
        top(fn.__name__, fn)
    top("__getattr__", _lazy_module)
    top("get_device_module", get_device_module)
    top("vmap", _vmap)
    for name in METHOD_FUNCTIONS + ("as_strided_",):
        top(name, _method_of(name))
    for obj in (strided, contiguous_format, channels_last, channels_last_3d, preserve_format,
                legacy_contiguous_format):
        top(obj.name, obj)
    top("layout", layout)
    top("memory_format", memory_format)
    for k, v in CONSTANTS.items():
        top(k, v)


def _install_tensor(T, meth, namespace) -> None:
    """Tensor introspection (`H`, `mH`, `layout`, `is_meta`...), `new_*` factories and the
    in-place samplers."""
    T.H = property(_H)
    if not hasattr(T, "mH"):
        T.mH = property(extra.adjoint)
    T.layout = property(lambda self: strided)
    for fn in (new_empty, new_full, new_ones, new_tensor, new_empty_strided, new, get_device,
               nonzero_static, apply_, map_, map2_, as_subclass, cauchy_, geometric_,
               log_normal_, resize_, resize_as_, set_):
        meth(fn.__name__, fn)
    meth("is_meta", property(lambda self: False))
    meth("is_pinned", lambda self, device=None: False)
    meth("pin_memory", lambda self, device=None: self)
    meth("ndimension", lambda self: self.ndim)
    meth("const_data_ptr", lambda self: self.data_ptr())
    for name in ("bernoulli", "multinomial"):
        meth(name, namespace[name])
