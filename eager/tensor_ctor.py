"""The arguments of `Tensor(...)` (`torch.Tensor`'s constructor): one data argument, or, as
PyTorch's legacy constructor, sizes. `torch.Tensor(2, 3)` / `torch.Tensor(torch.Size([2, 3]))`
make a tensor of that shape (uninitialized in PyTorch, zero-filled here) and Python numbers and
lists take the default float dtype (`torch.Tensor([1, 2])` is float32); numpy arrays and tensors
keep their dtype (eager's own uses). Semantics: the torch.Tensor documentation.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from .storage import Size


def _is_size(a) -> bool:
    """An int (not a bool) or a Size: a size argument of the legacy `Tensor(*sizes)`."""
    return isinstance(a, int) and not isinstance(a, bool) or isinstance(a, Size)


def constructor_data(args: tuple, dtype, has_tensor) -> tuple:
    """(data, dtype) for `Tensor(*args, dtype=dtype)`: TypeError for sizes mixed with other
    arguments; `has_tensor(data)` tells a list holding tensors (they keep their dtype)."""
    if len(args) > 1 or args and _is_size(args[0]):
        if dtype is None and all(_is_size(a) for a in args):
            shape = tuple(args[0]) if len(args) == 1 and not isinstance(args[0], int) else args
            return np.zeros(shape, D.get_default_dtype().np), None
        raise TypeError(f"Tensor(): expected sizes (ints) or one data argument, got "
                        f"{', '.join(type(a).__name__ for a in args)}")
    data = args[0] if args else []
    if dtype is None and (isinstance(data, float) or isinstance(data, (list, tuple))
                          and not has_tensor(data)):
        dtype = D.get_default_dtype()
    return data, dtype
