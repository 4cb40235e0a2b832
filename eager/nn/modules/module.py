"""eager.nn.modules.module: torch's `torch.nn.modules.module` path - `Module`, `Parameter`
and the global module hooks (`register_module_forward_hook`, ...), defined in
`eager/nn/module.py` and `eager/nn/module_hooks.py`."""

from ..module import Module, Parameter
from ..module_hooks import (
    register_module_backward_hook,
    register_module_forward_hook,
    register_module_forward_pre_hook,
    register_module_full_backward_hook,
    register_module_full_backward_pre_hook,
)

__all__ = ["Module", "Parameter", "register_module_forward_pre_hook",
           "register_module_forward_hook", "register_module_full_backward_pre_hook",
           "register_module_full_backward_hook", "register_module_backward_hook"]
