"""Python data to arrays for `Tensor(...)` (`torch.Tensor`'s constructor) and `tensor(data)`.

`Tensor(...)` takes one data argument, or, as PyTorch's legacy constructor, sizes:
`torch.Tensor(2, 3)` / `torch.Tensor(torch.Size([2, 3]))` make a tensor of that shape
(uninitialized in PyTorch, zero-filled here), and Python numbers and lists take the default
float dtype (`torch.Tensor([1, 2])` is float32); numpy arrays and tensors keep their dtype
(eager's own uses). `to_array` converts nested data as `torch.tensor` does. Semantics: the
torch.Tensor and torch.tensor documentation.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from .storage import Size

TENSOR_TYPE: list = []  # [eager.Tensor], registered by eager.tensor (which imports this module)


def _is_size(a) -> bool:
    """An int (not a bool) or a Size: a size argument of the legacy `Tensor(*sizes)`."""
    return isinstance(a, int) and not isinstance(a, bool) or isinstance(a, Size)


def constructor_data(args: tuple, dtype) -> tuple:
    """(data, dtype) for `Tensor(*args, dtype=dtype)`: TypeError for sizes mixed with other
    arguments; a list holding tensors keeps their dtype."""
    if len(args) > 1 or args and _is_size(args[0]):
        if dtype is None and all(_is_size(a) for a in args):
            shape = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args
            return np.zeros(shape, D.get_default_dtype().np), None
        raise TypeError(f"Tensor(): expected sizes (ints) or one data argument, got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    data = args[0] if args else []
    if dtype is None and (isinstance(data, float) or isinstance(data, (list, tuple))
                          and not _has_tensor(data)):
        dtype = D.get_default_dtype()
    return data, dtype


def to_array(data, dtype=None):
    """Convert nested lists / numbers / numpy arrays / Tensors to a supported numpy array.

    Python bools, ints, floats and complex numbers take bool, int64, the default float dtype
    and the default complex dtype (as `torch.tensor`); numpy arrays keep their dtype.
    """
    if isinstance(data, TENSOR_TYPE[0]):
        data = data._host()
    elif isinstance(data, (list, tuple)) and _has_tensor(data):
        data = _untensor(data)
    dt = D.to_dtype(dtype) if dtype is not None else None
    if dt is None:
        arr = np.asarray(data)
        if not isinstance(data, (np.ndarray, np.generic)) and not _first_leaf_is_numpy(data):
            kind = arr.dtype.kind
            if kind == "f":
                arr = arr.astype(D.get_default_dtype().np)
            elif kind == "c":
                arr = arr.astype(D.default_complex_dtype().np)
            elif kind in "iu":
                arr = arr.astype(np.int64)
            elif kind != "b":
                raise TypeError(f"can't convert {type(data).__name__} of {arr.dtype} to a "
                                "tensor")
        dt = D.from_numpy(arr.dtype)
        return np.array(arr, copy=True)
    if isinstance(data, np.ndarray) and data.dtype == dt.np:
        return data.copy()
    try:
        return np.array(data, dtype=dt.np)
    except (TypeError, ValueError):
        return np.array(np.asarray(data).astype(dt.np))


def _first_leaf_is_numpy(data) -> bool:
    """Numpy scalars in a list keep their dtype (torch.tensor([np.float64(1)]) is float64)."""
    while isinstance(data, (list, tuple)) and data:
        data = data[0]
    return isinstance(data, np.generic)


def _has_tensor(seq) -> bool:
    return any(isinstance(x, TENSOR_TYPE[0]) or (isinstance(x, (list, tuple)) and _has_tensor(x))
               for x in seq)


def _untensor(seq):
    return [x.item() if isinstance(x, TENSOR_TYPE[0]) else
            _untensor(x) if isinstance(x, (list, tuple)) else x for x in seq]
