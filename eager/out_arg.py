"""PyTorch's `out=` argument: a result written into a caller's tensor (resized, dtype- and
device-checked). Used by the op-application path (`eager/dispatch.py`) and by the creation
functions (`eager/creation.py`, which dispatch imports through autograd, so it cannot import
dispatch). Semantics: PyTorch's out= notes (resizing a non-empty `out` warns)."""

from __future__ import annotations

import warnings

import numpy as np

from ir import dtypes as D
from ir.opdef import OpDef

from .tensor import Tensor, bump_version

_ND = np.ndarray


def write_out(op: OpDef, result, out):
    """Write `result` into `out` (PyTorch's out= semantics) and return `out`.

    `out` of another shape is resized (with PyTorch's deprecation UserWarning unless it was
    empty); RuntimeError when its dtype cannot hold the result (`torch.can_cast`) or it lives on
    another device.
    """
    if isinstance(result, tuple):
        if not isinstance(out, (tuple, list)) or len(out) != len(result):
            raise TypeError(f"{op.name}(): argument 'out' must be a tuple of {len(result)} "
                            "Tensors")
        return type(result)(*[write_out(op, r, o) for r, o in zip(result, out)]) \
            if hasattr(result, "_fields") else tuple(write_out(op, r, o)
                                                     for r, o in zip(result, out))
    if not isinstance(out, Tensor):
        raise TypeError(f"{op.name}(): argument 'out' must be Tensor, not {type(out).__name__}")
    if out.device != result.device:
        raise RuntimeError(f"Expected out tensor to have device {result.device}, but got "
                           f"{out.device} instead")
    rd, od = result.dtype, out.dtype
    if rd is not od and not D.can_cast(rd, od):
        raise RuntimeError(f"result type {rd.title} can't be cast to the desired output type "
                           f"{od.title}")
    if out._data.shape != result._data.shape:
        if out._data.size != 0:
            warnings.warn(
                f"An output with one or more elements was resized since it had shape "
                f"{list(out.shape)}, which does not match the required output shape "
                f"{list(result.shape)}. This behavior is deprecated, and in a future PyTorch "
                "release outputs will not be resized unless they have zero elements. You can "
                "explicitly reuse an out tensor t by resizing it, inplace, to zero elements "
                "with t.resize_(0).", UserWarning, stacklevel=3)
        xp = np if isinstance(out._data, _ND) else __import__("cupy")
        out._data = xp.empty(result._data.shape, out._data.dtype)
        out._base = None
    out._data[...] = result._data
    bump_version(out)
    return out
