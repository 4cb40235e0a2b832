"""`torch.nn.parameter`'s path: `Parameter`, `Buffer`, `UninitializedParameter`,
`UninitializedBuffer` (defined in `module.py` and `lazy.py`) and `is_lazy`, so that
`from torch.nn.parameter import Parameter` runs unchanged. Touches `eager` only."""

from .lazy import Buffer, UninitializedBuffer, UninitializedParameter, UninitializedTensorMixin
from .module import Parameter

__all__ = ["Buffer", "Parameter", "UninitializedBuffer", "UninitializedParameter",
           "UninitializedTensorMixin", "is_lazy"]


def is_lazy(param) -> bool:
    """Whether `param` is an uninitialized placeholder (`torch.nn.parameter.is_lazy`)."""
    return isinstance(param, UninitializedTensorMixin)
