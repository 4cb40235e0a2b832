"""`eager.save` / `eager.load`: objects holding tensors (state dicts, optimizer states,
tensors, whole modules) to a file with pickle.

Tensors pickle through `Tensor.__reduce_ex__` (host data, view geometry, requires_grad;
Parameters stay Parameters), rebuilt by `_rebuild_tensor` below (the array-level helpers are
`eager/tensor_copy.py`'s). `load(weights_only=True)` (PyTorch's default since 2.6) unpickles
with an allow-list: containers, numbers, strings, tensors and numpy arrays; anything else is an
`UnpicklingError` naming the global (`add_safe_globals` extends the list). Files are plain
pickles, not PyTorch's zip format: they round-trip within wick only. Semantics follow the
PyTorch documentation of `torch.save` / `torch.load`. Touches `eager.tensor` only.
"""

from __future__ import annotations

import os
import pickle

from .device import resolve, to_device
from .tensor import Tensor
from .tensor_copy import REBUILD_TENSOR, _view_of

__all__ = ["add_safe_globals", "get_safe_globals", "load", "save"]

DEFAULT_PROTOCOL = 2

# (module, name) pairs weights-only loading may resolve
_SAFE = {
    ("collections", "OrderedDict"), ("builtins", "set"), ("builtins", "frozenset"),
    ("builtins", "complex"), ("builtins", "slice"), ("builtins", "range"),
    ("_codecs", "encode"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
    ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
    ("numpy.core.multiarray", "scalar"), ("numpy._core.multiarray", "scalar"),
    ("eager.serialization", "_rebuild_tensor"), ("eager.tensor", "Tensor"), ("eager.tensor", "Size"),
    ("eager.nn.module", "Parameter"), ("ir.meta_array", "MetaArray"),
}
_SAFE_MODULES = ("ml_dtypes", "numpy.dtypes")  # dtype classes of bfloat16 & co.
_USER_SAFE: dict = {}


def add_safe_globals(safe_globals) -> None:
    """Allow these classes / functions in `load(weights_only=True)`
    (`torch.serialization.add_safe_globals`)."""
    for g in safe_globals:
        _USER_SAFE[(g.__module__, g.__qualname__)] = g


def get_safe_globals() -> list:
    return list(_USER_SAFE.values())


class _WeightsUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) in _USER_SAFE:
            return _USER_SAFE[(module, name)]
        if (module, name) in _SAFE or module.split(".")[0] in _SAFE_MODULES or \
                module in _SAFE_MODULES:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(
            "Weights only load failed. This file can still be loaded, to do so you have two "
            "options, do those steps only if you trust the source of the checkpoint.\n\t(1) "
            "Re-running `eager.load` with `weights_only` set to `False` will likely succeed, "
            "but it can result in arbitrary code execution.\n\t(2) Alternatively, to load with "
            "`weights_only=True` please check the recommended steps in the following error "
            f"message.\n\tWeightsUnpickler error: Unsupported global: GLOBAL {module}.{name} "
            "was not an allowed global by default. Please use `eager.serialization."
            f"add_safe_globals([{name}])` to allowlist this global if you trust it.")


def save(obj, f, pickle_module=pickle, pickle_protocol: int = DEFAULT_PROTOCOL,
         _use_new_zipfile_serialization: bool = True) -> None:
    """Pickle `obj` to `f`, a path (str or os.PathLike) or a binary file object."""
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as fh:
            pickle_module.dump(obj, fh, protocol=pickle_protocol)
    else:
        pickle_module.dump(obj, f, protocol=pickle_protocol)


def _remap(map_location):
    """`map_location` (None, a device / string, or a dict {saved: wanted}) -> a function of
    the saved device string, or None."""
    if map_location is None:
        return None
    if isinstance(map_location, dict):
        table = {str(k): str(v) for k, v in map_location.items()}
        return lambda dev: table.get(dev, dev)
    if callable(map_location):
        raise NotImplementedError("eager.load: a callable map_location is not supported; pass "
                                  "a device, a string or a dict")
    target = str(resolve(map_location))
    return lambda dev: target


def load(f, map_location=None, pickle_module=None, *, weights_only: bool | None = None,
         mmap=None, **pickle_load_args):
    """Unpickle what `save` wrote to `f` (a path or a binary file object). `weights_only`
    (default True, as PyTorch >= 2.6) restricts the globals to tensors, containers and numbers
    (pickle.UnpicklingError otherwise); `map_location` moves tensors ("cpu", a device, or a
    dict {"cuda:0": "cpu"})."""
    if weights_only is None:
        weights_only = os.environ.get("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "0") in ("0", "")
    if weights_only and pickle_module is not None:
        raise RuntimeError("Can not safely load weights when explicit pickle_module is "
                           "specified")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as fh:
            return load(fh, map_location, pickle_module, weights_only=weights_only,
                        **pickle_load_args)
    saved = REBUILD_DEVICE[0]
    REBUILD_DEVICE[0] = _remap(map_location)
    try:
        if weights_only:
            return _WeightsUnpickler(f, **pickle_load_args).load()
        return (pickle_module or pickle).Unpickler(f, **pickle_load_args).load()
    finally:
        REBUILD_DEVICE[0] = saved


# ---------------------------------------------------------------- pickling helpers

# Set by `load`'s `map_location`: device string -> device string to rebuild on.
REBUILD_DEVICE: list = [None]


def _rebuild_tensor(cls, data, geometry, requires_grad, vc, device_str):
    """Unpickle a tensor (see `Tensor.__reduce_ex__`)."""
    arr = data if geometry is None else _view_of(data, geometry)
    remap = REBUILD_DEVICE[0]
    if remap is not None:
        device_str = remap(device_str)
    if device_str != "cpu":
        arr = to_device(arr, resolve(device_str))
    t = Tensor.__new__(cls)
    t._init(arr)
    t.requires_grad = bool(requires_grad)
    if isinstance(vc, list) and len(vc) == 1:
        t._vc = vc
    return t


REBUILD_TENSOR[0] = _rebuild_tensor  # (the hook Tensor.__reduce_ex__ pickles with)
