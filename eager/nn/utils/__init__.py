"""`torch.nn.utils`: gradient clipping, parameter flattening, parametrizations (`parametrize`,
`parametrizations.weight_norm/spectral_norm/orthogonal`) and the older hook-based
`weight_norm` / `spectral_norm`, conv/linear + batch-norm fusion, `stateless.functional_call`,
`skip_init`, memory-format conversion (identity in wick). `nn.utils.rnn` is
`eager.nn.rnn_utils`, attached by `eager.nn`. Semantics: the PyTorch documentation of
`torch.nn.utils`. Touches `eager` only.
"""

from __future__ import annotations

from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
    "get_total_norm", "parameters_to_vector", "vector_to_parameters",
]
