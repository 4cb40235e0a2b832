"""Learning-rate schedulers, as `torch.optim.lr_scheduler`.

Why it exists: PyTorch training loops call `scheduler.step()` once per epoch (or batch) after
`optimizer.step()`; the schedulers rewrite each group's `"lr"`. As PyTorch's, `step()` uses
the chainable (recursive) form of each schedule, which reads the groups' current `lr` so that
schedulers compose, and `step(epoch)` (deprecated) the closed form. `basic` holds the base
class and the one-formula schedules, `cyclic` the cyclical ones (CyclicLR, OneCycleLR,
CosineAnnealingWarmRestarts), `composite` SequentialLR and ChainedScheduler. Semantics:
https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate. Touches
`eager.optim.optimizer` only.
"""

from __future__ import annotations

from .basic import (
    EPOCH_DEPRECATION_WARNING,
    ConstantLR,
    CosineAnnealingLR,
    ExponentialLR,
    LambdaLR,
    LinearLR,
    LRScheduler,
    MultiplicativeLR,
    MultiStepLR,
    PolynomialLR,
    ReduceLROnPlateau,
    StepLR,
    _lrs,
    _LRScheduler,
    _per_group,
)
from .composite import ChainedScheduler, SequentialLR
from .cyclic import CosineAnnealingWarmRestarts, CyclicLR, OneCycleLR

__all__ = [
    "EPOCH_DEPRECATION_WARNING", "ChainedScheduler", "ConstantLR", "CosineAnnealingLR",
    "CosineAnnealingWarmRestarts", "CyclicLR", "ExponentialLR", "LRScheduler", "LambdaLR",
    "LinearLR", "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "PolynomialLR",
    "ReduceLROnPlateau", "SequentialLR", "StepLR", "_LRScheduler", "_lrs", "_per_group",
]
