"""The device copy: `_to_copy(input, device)`, what `Tensor.to(device)`, `.cuda()` and `.cpu()`
record (PyTorch's `aten::_to_copy`).

It is the one op whose result lives on another device than its operand, so its meta takes the
device from the attribute; its gradient is the same copy back to the operand's device. The
kernel moves arrays between numpy (CPU) and cupy (a CUDA device), importing cupy only when a
CUDA device is named.
"""

from __future__ import annotations

import numpy as np

from ..meta_array import MetaArray
from ..opdef import OpDef, TensorMeta, register


def _cuda_index(device: str) -> int:
    _, _, index = device.partition(":")
    return int(index) if index else 0


def _to_copy_impl(xp, x, device="cpu"):
    """`x` (a numpy or cupy array) copied to `device` ("cpu", "cuda:N" or "meta": an array
    with x's shape and dtype and no data)."""
    if device == "meta":
        return MetaArray(x.shape, x.dtype)
    if device == "cpu":
        return x.copy() if isinstance(x, np.ndarray) else x.get()
    import cupy

    with cupy.cuda.Device(_cuda_index(device)):
        return cupy.asarray(x) if isinstance(x, np.ndarray) else x.copy()


def _device_attrs(inputs, attrs):
    device = str(attrs["device"])
    if device == "cuda":
        device = "cuda:0"
    if device.startswith("meta"):
        device = "meta"
    elif device != "cpu" and not device.startswith("cuda:"):
        raise RuntimeError(f"_to_copy(): expected a device 'cpu', 'cuda:N' or 'meta', got "
                           f"'{device}'")
    return {"device": device}


class DeviceCopyOpDef(OpDef):
    """An OpDef whose result is on the device its `device` attribute names."""

    def meta(self, inputs, attrs):
        (x,) = inputs
        if not isinstance(x, TensorMeta):
            raise TypeError(f"{self.name}(): expected a tensor operand")
        _, out_dtype = self.dtypes(inputs, attrs)
        return TensorMeta(x.shape, out_dtype, attrs["device"])


register(DeviceCopyOpDef(
    "_to_copy", "shape", "input, device='cpu'", 1, "keep", method=False, scalar_ok=False,
    inplace=False, attrs_rule=_device_attrs, impl=_to_copy_impl,
    backward=lambda F, g, out, x, device="cpu": (F._to_copy(g, str(x.device)),),
    ref=lambda x, device="cpu": np.copy(x),
    sample_inputs=lambda rng, dt: ((((rng.standard_normal(s) * 3).astype(dt.np),),
                                    {"device": "cpu"}) for s in ((3, 4), (2, 1, 5))),
))
