"""eager.nn: neural-network building blocks (`torch.nn`): `functional`, a small `Module` system
(`Parameter`, `Module`, `Linear`, `ReLU`, `GELU`), the containers (`ModuleList`, `Sequential`,
`ModuleDict`, `ParameterList`, `ParameterDict`), the losses, dropout and common layers of
`layers.py` (`CrossEntropyLoss`, `MSELoss`, `Dropout`, `LayerNorm`, `Embedding`, ...), and the
`init` and `utils` namespaces."""

from . import functional, init, utils
from .activation import *  # noqa: F401,F403  (LeakyReLU, SiLU, ELU, PReLU, GLU, ...)
from .attention import (  # brief A: attention and transformer encoder
    MultiheadAttention,
    TransformerEncoder,
    TransformerEncoderLayer,
)
from .containers import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from .conv_layers import (  # brief C: convolution, pooling, batch norm
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AvgPool1d,
    AvgPool2d,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    MaxPool1d,
    MaxPool2d,
)
from .layers import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    HuberLoss,
    Identity,
    KLDivLoss,
    L1Loss,
    LayerNorm,
    LogSoftmax,
    MSELoss,
    NLLLoss,
    Sigmoid,
    SmoothL1Loss,
    Softmax,
    Tanh,
)
from .activation import GELU, ReLU
from .module import Linear, Module, Parameter
from .rnn import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNBase, RNNCell, RNNCellBase  # recurrent
from .transformer import Transformer, TransformerDecoder, TransformerDecoderLayer
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .loss_modules import (  # noqa: E402  (the other losses)
    AdaptiveLogSoftmaxWithLoss, CosineEmbeddingLoss, CTCLoss, GaussianNLLLoss,
    HingeEmbeddingLoss, LinearCrossEntropyLoss, MarginRankingLoss, MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss, MultiMarginLoss, NLLLoss2d, PoissonNLLLoss, SoftMarginLoss,
    TripletMarginLoss, TripletMarginWithDistanceLoss,
)
from .losses_extra import LinearCrossEntropyOptions  # noqa: E402
from . import rnn_utils as _rnn_utils  # noqa: E402

utils.rnn = _rnn_utils  # `nn.utils.rnn` (utils is a module, not a package: alias the import)
__import__("sys").modules[__name__ + ".utils.rnn"] = _rnn_utils
from . import parallel  # noqa: E402  (DistributedDataParallel over eager.distributed)
from .parallel import DataParallel, DistributedDataParallel  # noqa: E402
from . import modules  # noqa: E402  (torch path: nn.modules.module.register_module_forward_hook)
from .conv_pool_layers import *  # (Conv3d, ConvTranspose*, pooling)
from .padding import *  # (Zero/Constant/Reflection/... Pad1d-3d)
from .lazy import *  # (Lazy*, Uninitialized*, Buffer, Container)
from .normalization import (
    BatchNorm3d, CrossMapLRN2d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
    LocalResponseNorm, RMSNorm, SyncBatchNorm)
from .dropout import (
    AlphaDropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout, Hardshrink, RReLU,
    Softshrink)
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d
from .misc_layers import (
    Bilinear, ChannelShuffle, EmbeddingBag, Fold, PixelShuffle, PixelUnshuffle, Unfold)
from . import parameter  # (torch.nn.parameter: Parameter, Buffer, Uninitialized*)
modules.paths.install(modules, globals())  # nn.modules.conv, .batchnorm, .utils, ...
