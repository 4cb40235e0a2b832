"""`torch.nn.utils.skip_init` and `convert_conv2d/3d_weight_memory_format`.

`skip_init(cls, *args, **kwargs)` builds a module whose parameters need not be initialised;
wick builds it normally (torch's values are unspecified there, so initialised ones are valid;
wick has no meta device to skip the work on). The memory-format conversions return the
module unchanged: wick's tensors are always row-major (channels_last is a layout hint
without effect). Touches `eager.nn.module` only.
"""

from __future__ import annotations

import inspect

from ..module import Module

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
           "skip_init"]


def skip_init(module_cls, *args, **kwargs):
    """`module_cls(*args, **kwargs)` with uninitialised parameters (here zeros): built on the
    meta device, then `to_empty(device=...)` (default "cpu"), as PyTorch's. RuntimeError when
    `module_cls` is not a Module subclass or takes no `device` argument."""
    if not (inspect.isclass(module_cls) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    final_device = kwargs.pop("device", "cpu")
    kwargs["device"] = "meta"
    return module_cls(*args, **kwargs).to_empty(device=final_device)


def convert_conv2d_weight_memory_format(module, memory_format):
    """The module itself (torch re-lays out Conv2d / ConvTranspose2d weights in
    `memory_format`; wick keeps one layout)."""
    return module


def convert_conv3d_weight_memory_format(module, memory_format):
    """The module itself (as `convert_conv2d_weight_memory_format`, for 3-D convolutions)."""
    return module
