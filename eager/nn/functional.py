"""`eager.nn.functional`: PyTorch's functional API (`torch.nn.functional`), gathered from the
files that define it: `functional_base.py` (activations, softmax, dropout, embedding,
layer_norm, the losses), `mha.py` (scaled_dot_product_attention,
multi_head_attention_forward), `conv.py`, `conv_transpose.py`, `pooling.py`,
`normalization.py`, `dropout.py`, `upsampling.py`, `misc_layers.py`, `distance.py` and
`losses_extra.py`. Those import `functional_base` and never this module, so every Module file
may import this one (`from . import functional as F`) without an import cycle. Touches `eager`
only.
"""

from __future__ import annotations

from .conv import *  # conv1d/2d, pooling and batch_norm (eager.nn.conv)
from .conv_transpose import *  # (conv3d, conv_transpose*, fold/unfold)
from .distance import cosine_similarity, pairwise_distance, pdist  # noqa: F401
from .dropout import *  # (feature/alpha dropout, rrelu, shrinks)
from .functional_base import *
from .functional_base import _embedding_renorm, _inplace, check_embedding_indices  # noqa: F401
from .losses_extra import *
from .mha import (  # noqa: F401
    _canonical_mask,
    multi_head_attention_forward,
    scaled_dot_product_attention,
)
from .misc_layers import *  # (bilinear, pixel/channel shuffle, bags)
from .normalization import *  # (group/instance/rms/local response)
from .pooling import *  # (3-D, adaptive max, LP, fractional, unpool)
from .upsampling import *  # (interpolate, grid_sample, affine_grid)
