"""`eager.cuda.amp` (`torch.cuda.amp`): the legacy CUDA spellings of `eager.amp`, defined in
`eager.amp.cuda_amp`; this module makes `from torch.cuda.amp import GradScaler` importable."""

from ..amp.cuda_amp import GradScaler, autocast, custom_bwd, custom_fwd

__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
