"""The rest of PyTorch's Tensor/top-level surface that is naming, not new semantics (issue 16's
sweep): in-place variants derived from the registry the way `eager.dispatch` derives them
(`Tensor.cumsum_`, `torch.abs_`...), in-place shape changes (`t_`, `transpose_`, `squeeze_`,
`unsqueeze_`, `swapaxes_`), `*_copy` functions (a view op's result as a new tensor), the
top-level aliases of `torch.nn.functional` (with the top-level argument orders where they differ:
`torch.embedding(weight, input)`, `torch.batch_norm(input, weight, bias, running_mean, ...)`),
`new_*` factories, window functions, layouts and memory formats, constants and process settings
(threads, determinism, matmul precision), Tensor introspection (`layout`, `get_device`, `H`,
`mH`...). Semantics: the PyTorch documentation of each name. Imports eager's modules only.
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
from .dispatch import FUNCTIONS as _F
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
    from .grad_mode import is_grad_enabled

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


# ---------------------------------------------------------------- nn.functional aliases


def _functional():
    from .nn import functional as F

    return F


_SAME_ORDER = ("adaptive_avg_pool1d", "avg_pool1d", "bilinear", "channel_shuffle", "conv1d",
               "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
               "group_norm", "hardshrink", "layer_norm", "max_pool1d", "max_pool2d",
               "max_pool3d", "pixel_shuffle", "pixel_unshuffle", "prelu", "rms_norm", "rrelu",
               "native_channel_shuffle")


def _alias(name):
    def fn(*args, **kwargs):
        return getattr(_functional(), name)(*args, **kwargs)
    fn.__name__ = name
    fn.__doc__ = f"`torch.{name}`: `torch.nn.functional.{name}`."
    return fn


def dropout(input, p, train):
    """`torch.dropout(input, p, train)` (nn.functional.dropout with `training=train`)."""
    return _functional().dropout(input, p, train)


def alpha_dropout(input, p, train):
    """`torch.alpha_dropout(input, p, train)`."""
    return _functional().alpha_dropout(input, p, train)


def feature_dropout(input, p, train):
    """`torch.feature_dropout(input, p, train)`: whole channels (dim 1) dropped."""
    return _functional().dropout2d(input, p, train) if input.ndim != 3 else \
        _functional().dropout1d(input, p, train)


def feature_alpha_dropout(input, p, train):
    """`torch.feature_alpha_dropout(input, p, train)`."""
    return _functional().feature_alpha_dropout(input, p, train)


def _dropout_inplace(fn):
    def inplace(input, p, train):
        out = fn(input, p, train)
        input._check_inplace()
        return input._inplace_update(out)
    inplace.__name__ = fn.__name__ + "_"
    inplace.__doc__ = f"In-place `torch.{fn.__name__}`."
    return inplace


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """`torch.embedding(weight, indices, ...)` (aten's order: weight first; padding_idx -1
    means none)."""
    return _functional().embedding(indices, weight,
                                   padding_idx=None if padding_idx < 0 else padding_idx,
                                   scale_grad_by_freq=scale_grad_by_freq, sparse=sparse)


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps,
               cudnn_enabled=True):
    """`torch.batch_norm` (aten's order: weight and bias before the running statistics)."""
    return _functional().batch_norm(input, running_mean, running_var, weight, bias, training,
                                    momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum,
                  eps, cudnn_enabled=True):
    """`torch.instance_norm` (aten's order)."""
    return _functional().instance_norm(input, running_mean, running_var, weight, bias,
                                       use_input_stats, momentum, eps)


def adaptive_max_pool1d(input, output_size):
    """`torch.adaptive_max_pool1d`: (values, indices), always."""
    return _functional().adaptive_max_pool1d(input, output_size, return_indices=True)


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False):
    """`torch.max_pool1d_with_indices`: (values, indices)."""
    return _functional().max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode,
                                    return_indices=True)


# ---------------------------------------------------------------- windows


def _window(name, formula):
    def fn(window_length, periodic=True, *, dtype=None, layout=None, device=None,
           requires_grad=False, **params):
        if window_length < 0:
            raise RuntimeError(f"{name} requires non-negative window_length, got "
                               f"window_length={window_length}")
        dtype = D.get_default_dtype() if dtype is None else dtype
        if not dtype.is_floating_point:
            raise RuntimeError(f"{name} expects floating point dtypes, got: {dtype.name}")
        if window_length <= 1:
            w = np.ones(window_length)
        else:
            n = window_length + 1 if periodic else window_length
            w = formula(np.arange(n, dtype=np.float64), n, **params)[:window_length]
        return creation.tensor(w, dtype=dtype, device=device, requires_grad=requires_grad)
    fn.__name__ = name
    fn.__doc__ = (f"`torch.{name}(window_length, periodic=True, *, dtype=None, ...)`: the "
                  "window as PyTorch defines it (periodic: the first N of N + 1 points).")
    return fn


def _cosine(*coefs):
    return lambda k, n: builtins.sum((-1) ** i * c * np.cos(2 * math.pi * i * k / (n - 1))
                                     for i, c in enumerate(coefs))


hann_window = _window("hann_window", _cosine(0.5, 0.5))
blackman_window = _window("blackman_window", _cosine(0.42, 0.5, 0.08))
bartlett_window = _window("bartlett_window",
                          lambda k, n: 1 - np.abs(2 * k / (n - 1) - 1))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None,
                   layout=None, device=None, requires_grad=False):
    """`torch.hamming_window`: alpha - beta cos(2 pi k / (N - 1))."""
    return _window("hamming_window", lambda k, n: alpha - beta * np.cos(2 * math.pi * k / (n - 1)))(
        window_length, periodic, dtype=dtype, device=device, requires_grad=requires_grad)


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, layout=None,
                  device=None, requires_grad=False):
    """`torch.kaiser_window`: I0(beta sqrt(1 - (2k/(N-1) - 1)^2)) / I0(beta)."""
    return _window("kaiser_window", lambda k, n: np.i0(
        beta * np.sqrt(np.clip(1 - (2 * k / (n - 1) - 1) ** 2, 0, None))) / np.i0(beta))(
        window_length, periodic, dtype=dtype, device=device, requires_grad=requires_grad)


# ---------------------------------------------------------------- layouts, formats, constants


class layout:
    """`torch.layout`: wick has the strided (dense) layout only."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


class memory_format:
    """`torch.memory_format`: accepted and ignored by wick's (C-contiguous) tensors."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"torch.{self.name}"


strided = layout("strided")
contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")
legacy_contiguous_format = memory_format("legacy_contiguous_format")

CONSTANTS = {"e": math.e, "pi": math.pi, "inf": math.inf, "nan": math.nan, "newaxis": None}

# ---------------------------------------------------------------- process settings

_SETTINGS = {"threads": 1, "interop": 1, "deterministic": False, "warn_only": False,
             "precision": "highest", "warn_always": False}


def get_num_threads() -> int:
    """`torch.get_num_threads` (wick's kernels are numpy's; this records the request)."""
    return _SETTINGS["threads"]


def set_num_threads(n: int) -> None:
    """`torch.set_num_threads(n)`: recorded; RuntimeError for n <= 0."""
    if int(n) <= 0:
        raise RuntimeError("set_num_threads expects a positive integer")
    _SETTINGS["threads"] = int(n)


def get_num_interop_threads() -> int:
    return _SETTINGS["interop"]


def set_num_interop_threads(n: int) -> None:
    if int(n) <= 0:
        raise RuntimeError("Expected positive number of threads")
    _SETTINGS["interop"] = int(n)


def init_num_threads() -> None:
    """`torch.init_num_threads`: nothing to initialise."""


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """`torch.use_deterministic_algorithms`: recorded (wick's kernels are deterministic)."""
    _SETTINGS["deterministic"], _SETTINGS["warn_only"] = bool(mode), bool(warn_only)


def are_deterministic_algorithms_enabled() -> bool:
    return _SETTINGS["deterministic"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _SETTINGS["warn_only"]


def set_deterministic_debug_mode(debug_mode) -> None:
    """`torch.set_deterministic_debug_mode`: 0/"default", 1/"warn", 2/"error"."""
    names = {"default": 0, "warn": 1, "error": 2}
    mode = names.get(debug_mode, debug_mode)
    if mode not in (0, 1, 2):
        raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, "
                           f"`error`, but got {debug_mode}")
    use_deterministic_algorithms(mode > 0, warn_only=mode == 1)


def get_deterministic_debug_mode() -> int:
    return 0 if not _SETTINGS["deterministic"] else 1 if _SETTINGS["warn_only"] else 2


def set_float32_matmul_precision(precision: str) -> None:
    """`torch.set_float32_matmul_precision`: "highest", "high" or "medium" (recorded)."""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      "setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _SETTINGS["precision"] = precision


def get_float32_matmul_precision() -> str:
    return _SETTINGS["precision"]


def set_warn_always(b: bool) -> None:
    _SETTINGS["warn_always"] = bool(b)


def is_warn_always_enabled() -> bool:
    return _SETTINGS["warn_always"]


def set_flush_denormal(mode: bool) -> bool:
    """`torch.set_flush_denormal`: False (not supported on numpy's kernels), as PyTorch on a
    CPU without the feature."""
    return False


def get_default_device():
    """`torch.get_default_device`: where factories put tensors (the CPU)."""
    from .device import device

    return device("cpu")


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
    from .tensor import UntypedStorage

    return isinstance(obj, UntypedStorage)


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
    from .autograd import set_detect_anomaly

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


def _vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """`torch.vmap`: `torch.func.vmap`."""
    from .func import vmap

    return vmap(func, in_dims, out_dims, randomness, chunk_size=chunk_size)


_vmap.__name__ = "vmap"


def _lazy_module(name):
    """Module `__getattr__` of `eager`: submodules imported on first use (`eager.distributions`
    pulls scipy.stats-sized imports that `import eager` should not pay for)."""
    if name in ("distributions", "cpu", "functional", "testing", "signal", "func",
                "quasirandom"):
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
    meth("storage", lambda self: self.untyped_storage())
    meth("nonzero_static", nonzero_static)
    from .autograd import anomaly

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
    meth("share_memory_", lambda self: self)
    meth("is_shared", lambda self: False)
    meth("ndimension", lambda self: self.ndim)
    meth("const_data_ptr", lambda self: self.data_ptr())
    for name in ("bernoulli", "multinomial"):
        meth(name, namespace[name])
