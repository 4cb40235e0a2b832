"""`eager.nn.functional`: PyTorch's functional names for registry ops (no new ops here)."""

from __future__ import annotations

from ..dispatch import FUNCTIONS

relu = FUNCTIONS["relu"]
gelu = FUNCTIONS["gelu"]
sigmoid = FUNCTIONS["sigmoid"]
tanh = FUNCTIONS["tanh"]
softmax = FUNCTIONS["softmax"]
log_softmax = FUNCTIONS["log_softmax"]
