"""`torch.nn.utils`: gradient clipping, parameter flattening, parametrizations (`parametrize`,
`parametrizations.weight_norm/spectral_norm/orthogonal`) and the older hook-based
`weight_norm` / `spectral_norm`, conv/linear + batch-norm fusion, `stateless.functional_call`,
`skip_init`, memory-format conversion (identity in wick). `nn.utils.rnn` is
`eager.nn.rnn_utils`, attached by `eager.nn`. Semantics: the PyTorch documentation of
`torch.nn.utils`. Touches `eager` only.
"""

from __future__ import annotations

from . import parametrizations, parametrize, stateless
from .clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
    parameters_to_vector,
    vector_to_parameters,
)
from .fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from .legacy_norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm
from .misc import (
    convert_conv2d_weight_memory_format,
    convert_conv3d_weight_memory_format,
    skip_init,
)

__all__ = [
    "clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
    "convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format",
    "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights",
    "get_total_norm", "parameters_to_vector", "parametrizations", "parametrize",
    "remove_spectral_norm", "remove_weight_norm", "skip_init", "spectral_norm", "stateless",
    "vector_to_parameters", "weight_norm",
]
