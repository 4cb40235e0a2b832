"""torch's `torch.nn.modules.<submodule>` paths (`nn.modules.conv.Conv2d`,
`nn.modules.batchnorm._BatchNorm`, `nn.modules.utils._pair`, ...) as small modules holding the
classes of `eager.nn`, so that `isinstance(m, nn.modules.batchnorm._BatchNorm)` and
`from torch.nn.modules.utils import _pair` run unchanged. Names per submodule as torch's
`__all__`, plus the private bases user code subclasses or tests against. Touches `eager` only.
"""

from __future__ import annotations

import collections.abc
import sys
import types
from itertools import repeat

from .. import conv_layers, conv_pool_layers, dropout, layers, normalization, padding

PUBLIC = {
    "activation": ("CELU ELU GELU GLU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid "
        "LogSoftmax Mish MultiheadAttention PReLU RReLU ReLU ReLU6 SELU SiLU Sigmoid Softmax "
        "Softmax2d Softmin Softplus Softshrink Softsign Tanh Tanhshrink Threshold"),
    "adaptive": "AdaptiveLogSoftmaxWithLoss",
    "batchnorm": ("BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d "
        "SyncBatchNorm"),
    "channelshuffle": "ChannelShuffle",
    "container": "Container ModuleDict ModuleList ParameterDict ParameterList Sequential",
    "conv": ("Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d "
        "LazyConv2d LazyConv3d LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d"),
    "distance": "CosineSimilarity PairwiseDistance",
    "dropout": "AlphaDropout Dropout Dropout1d Dropout2d Dropout3d FeatureAlphaDropout",
    "flatten": "Flatten Unflatten",
    "fold": "Fold Unfold",
    "instancenorm": ("InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
        "LazyInstanceNorm3d"),
    "lazy": "LazyModuleMixin",
    "linear": "Bilinear Identity LazyLinear Linear",
    "loss": ("BCELoss BCEWithLogitsLoss CTCLoss CosineEmbeddingLoss CrossEntropyLoss "
        "GaussianNLLLoss HingeEmbeddingLoss HuberLoss KLDivLoss L1Loss LinearCrossEntropyLoss "
        "MSELoss MarginRankingLoss MultiLabelMarginLoss MultiLabelSoftMarginLoss "
        "MultiMarginLoss NLLLoss NLLLoss2d PoissonNLLLoss SmoothL1Loss SoftMarginLoss "
        "TripletMarginLoss TripletMarginWithDistanceLoss"),
    "normalization": "CrossMapLRN2d GroupNorm LayerNorm LocalResponseNorm RMSNorm",
    "padding": ("CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d "
        "ReflectionPad1d ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d "
        "ReplicationPad3d ZeroPad1d ZeroPad2d ZeroPad3d"),
    "pixelshuffle": "PixelShuffle PixelUnshuffle",
    "pooling": ("AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d "
        "AdaptiveMaxPool2d AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d "
        "FractionalMaxPool2d FractionalMaxPool3d LPPool1d LPPool2d LPPool3d MaxPool1d "
        "MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d"),
    "rnn": "GRU GRUCell LSTM LSTMCell RNN RNNBase RNNCell RNNCellBase",
    "sparse": "Embedding EmbeddingBag",
    "transformer": ("Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder "
        "TransformerEncoderLayer"),
    "upsampling": "Upsample UpsamplingBilinear2d UpsamplingNearest2d",
}
PRIVATE = {
    "batchnorm": {"_BatchNorm": conv_layers._BatchNorm, "_NormBase": conv_layers._BatchNorm},
    "conv": {"_ConvNd": conv_layers._ConvNd,
             "_ConvTransposeNd": conv_pool_layers._ConvTransposeNd},
    "pooling": {"_MaxPoolNd": conv_layers._MaxPoolNd,
                "_AdaptiveMaxPoolNd": conv_pool_layers._AdaptiveMaxPoolNd,
                "_LPPoolNd": conv_pool_layers._LPPoolNd,
                "_MaxUnpoolNd": conv_pool_layers._MaxUnpoolNd},
    "dropout": {"_DropoutNd": dropout._DropoutNd},
    "instancenorm": {"_InstanceNorm": normalization._InstanceNorm},
    "padding": {"_ConstantPadNd": padding._ConstantPadNd},
    "loss": {"_Loss": layers._Loss, "_WeightedLoss": layers._WeightedLoss},
}


def _ntuple(n, name="parse"):
    """torch.nn.modules.utils._ntuple: an iterable as a tuple, anything else repeated n times."""
    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(repeat(x, n))

    parse.__name__ = name
    return parse


def _reverse_repeat_tuple(t, n):
    """(a, b) -> (b, b, a, a) for n = 2: F.pad's order from per-dim paddings."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _list_with_default(out_size, defaults):
    if isinstance(out_size, (int,)):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def consume_prefix_in_state_dict_if_present(state_dict, prefix) -> None:
    """Strip `prefix` from the keys of `state_dict` (and its `_metadata`) in place, as
    torch.nn.modules.utils (loading a DataParallel checkpoint into a plain module)."""
    for key in sorted(state_dict.keys()):
        if key.startswith(prefix):
            state_dict[key[len(prefix):]] = state_dict.pop(key)
    metadata = getattr(state_dict, "_metadata", None)
    if metadata is not None:
        for key in list(metadata.keys()):
            if key == prefix.rstrip(".") or key.startswith(prefix):
                new = "" if key == prefix.rstrip(".") else key[len(prefix):]
                metadata[new] = metadata.pop(key)


UTILS = {"_ntuple": _ntuple, "_single": _ntuple(1, "_single"), "_pair": _ntuple(2, "_pair"),
         "_triple": _ntuple(3, "_triple"), "_quadruple": _ntuple(4, "_quadruple"),
         "_reverse_repeat_tuple": _reverse_repeat_tuple, "_list_with_default": _list_with_default,
         "consume_prefix_in_state_dict_if_present": consume_prefix_in_state_dict_if_present}


def install(package, nn: dict) -> None:
    """Create `package.<submodule>` for every entry from the names of `nn` (eager.nn's
    namespace, complete: called at the end of its import) and register it in sys.modules."""
    for sub in sorted(set(PUBLIC) | {"utils"}):
        mod = types.ModuleType(f"{package.__name__}.{sub}",
                               f"torch.nn.modules.{sub}'s names (classes of eager.nn).")
        names = PUBLIC.get(sub, "").split()
        for name in names:
            setattr(mod, name, nn[name])
        for name, value in {**PRIVATE.get(sub, {}), **(UTILS if sub == "utils" else {})}.items():
            setattr(mod, name, value)
        mod.__all__ = names
        sys.modules[mod.__name__] = mod
        setattr(package, sub, mod)
