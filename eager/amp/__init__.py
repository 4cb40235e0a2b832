"""eager.amp: automatic mixed precision (`torch.amp`): `autocast` regions (the cast policy in
`policy.py`, applied where ops are applied), `GradScaler` for loss scaling, `custom_fwd` /
`custom_bwd` for custom autograd Functions, `is_autocast_available`. `cuda_amp` is
`eager.cuda.amp` (the legacy `torch.cuda.amp` spellings, device_type fixed to "cuda").
Imports `eager` modules only.
"""

from . import autocast_mode, grad_scaler, policy
from .autocast_mode import autocast, custom_bwd, custom_fwd, is_autocast_available
from .grad_scaler import GradScaler

__all__ = [
           "GradScaler",
           "autocast",
           "autocast_mode",
           "custom_bwd",
           "custom_fwd",
           "grad_scaler",
           "is_autocast_available",
]
