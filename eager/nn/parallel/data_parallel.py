"""`nn.DataParallel` for wick's one device per process: PyTorch's wrapper with a single (or
no) GPU, where it scatters nothing and calls the module directly (inputs moved to
`device_ids[0]` when CUDA is used). The wrapped module is `.module`, so state dicts carry
PyTorch's "module." prefix. Several GPUs in one process are out of scope (use
`DistributedDataParallel`). Semantics: torch.nn.DataParallel's documentation.
"""

from __future__ import annotations

from ... import cuda
from ...tensor import Tensor
from ..module import Module

__all__ = ["DataParallel", "data_parallel"]


def _to(obj, dev):
    """Tensors in (nested) tuples/lists/dicts moved to `dev`."""
    if isinstance(obj, Tensor):
        return obj.to(dev)
    if isinstance(obj, (tuple, list)):
        return type(obj)(_to(o, dev) for o in obj)
    if isinstance(obj, dict):
        return {k: _to(v, dev) for k, v in obj.items()}
    return obj


def _device_ids(device_ids):
    if not cuda.is_available():
        return []
    ids = list(range(cuda.device_count())) if device_ids is None else [
        d if isinstance(d, int) else d.index for d in device_ids]
    if len(ids) > 1:
        raise NotImplementedError("nn.DataParallel over several GPUs in one process is not "
                                  "supported by wick; use nn.parallel.DistributedDataParallel")
    return ids


class DataParallel(Module):
    """`DataParallel(module, device_ids=None, output_device=None, dim=0)`: calls `module`
    on inputs moved to the one GPU (or as given on the CPU)."""

    def __init__(self, module, device_ids=None, output_device=None, dim=0):
        super().__init__()
        self.module = module
        self.device_ids = _device_ids(device_ids)
        self.output_device = output_device if output_device is not None else (
            self.device_ids[0] if self.device_ids else None)
        self.dim = dim
        if self.device_ids:
            self.src_device_obj = f"cuda:{self.device_ids[0]}"
            self.module.to(self.src_device_obj)

    def forward(self, *inputs, **kwargs):
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        dev = self.src_device_obj
        return self.module(*_to(inputs, dev), **_to(kwargs, dev))


def data_parallel(module, inputs, device_ids=None, output_device=None, dim=0,
                  module_kwargs=None):
    """`nn.parallel.data_parallel`: `DataParallel(module, ...)(*inputs, **module_kwargs)`."""
    if not isinstance(inputs, tuple):
        inputs = (inputs,) if inputs is not None else ()
    return DataParallel(module, device_ids, output_device, dim)(*inputs,
                                                                 **(module_kwargs or {}))
