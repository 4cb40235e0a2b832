"""eager.nn.modules: torch's `torch.nn.modules` path (`nn.modules.module.Module`,
`nn.modules.module.register_module_forward_hook`); the classes live in `eager.nn`."""

from . import module, paths
from .module import Module

__all__ = ["module", "Module"]
