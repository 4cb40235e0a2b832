"""`torch.nn`'s loss modules, dropout and common layers, as `eager.nn.module.Module`s.

Each module stores its constructor arguments and calls the matching function of
`eager.nn.functional` in `forward`; parameters (`LayerNorm.weight`, `Embedding.weight`) are
`Parameter`s and class weights of losses are buffers, as in PyTorch. Constructor signatures,
defaults, initialisation and `extra_repr` follow the `torch.nn` documentation of each class.
Touches `eager` only.
"""

from __future__ import annotations

from ..creation import ones, zeros
from ..dispatch import FUNCTIONS
from ..random import normal_, randn
from . import functional as F
from .losses import legacy_reduction
from .module import Module, Parameter

# ---------------------------------------------------------------- losses


class _Loss(Module):
    """Base of the losses: `reduction` ("none" | "mean" | "sum"), or the deprecated
    `size_average`/`reduce` pair turned into one."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = legacy_reduction(size_average, reduce)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    """A loss with a per-class `weight` (a buffer, None when not given)."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """`F.mse_loss`: mean squared error (`torch.nn.MSELoss`); input and target (*)."""

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """`F.l1_loss`: mean absolute error (`torch.nn.L1Loss`)."""

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """`F.smooth_l1_loss` with threshold `beta` (`torch.nn.SmoothL1Loss`)."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 beta: float = 1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return F.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """`F.huber_loss` with threshold `delta` (`torch.nn.HuberLoss`)."""

    def __init__(self, reduction: str = "mean", delta: float = 1.0):
        super().__init__(reduction=reduction)
        self.delta = delta

    def forward(self, input, target):
        return F.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class NLLLoss(_WeightedLoss):
    """`F.nll_loss` of log-probabilities (`torch.nn.NLLLoss`): input (N, C, ...), target
    (N, ...) class indices; `ignore_index` targets are skipped."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean"):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return F.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                          reduction=self.reduction)


class CrossEntropyLoss(_WeightedLoss):
    """`F.cross_entropy` of logits (`torch.nn.CrossEntropyLoss`): class-index or
    class-probability targets, `weight`, `ignore_index`, `label_smoothing`."""

    def __init__(self, weight=None, size_average=None, ignore_index: int = -100, reduce=None,
                 reduction: str = "mean", label_smoothing: float = 0.0):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(input, target, weight=self.weight,
                               ignore_index=self.ignore_index, reduction=self.reduction,
                               label_smoothing=self.label_smoothing)


class BCELoss(_WeightedLoss):
    """`F.binary_cross_entropy` of probabilities (`torch.nn.BCELoss`)."""

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight,
                                      reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """`F.binary_cross_entropy_with_logits` (`torch.nn.BCEWithLogitsLoss`); `weight` and
    `pos_weight` are buffers."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean",
                 pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(input, target, self.weight,
                                                  pos_weight=self.pos_weight,
                                                  reduction=self.reduction)


class KLDivLoss(_Loss):
    """`F.kl_div` (`torch.nn.KLDivLoss`): input log-probabilities; reduction may also be
    "batchmean"."""

    def __init__(self, size_average=None, reduce=None, reduction: str = "mean",
                 log_target: bool = False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return F.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


# ---------------------------------------------------------------- stateless layers


class Dropout(Module):
    """`F.dropout(input, p, self.training, inplace)` (`torch.nn.Dropout`): zeroes elements with
    probability p while training (`module.train()`), the identity after `module.eval()`.
    ValueError for p outside [0, 1]."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p, self.inplace = p, inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Identity(Module):
    """Returns its input (`torch.nn.Identity`); constructor arguments are ignored."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Flatten(Module):
    """`input.flatten(start_dim, end_dim)` (`torch.nn.Flatten`): (N, *) -> (N, prod(*)) by
    default."""

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, input):
        return FUNCTIONS["flatten"](input, self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Tanh(Module):
    """Elementwise tanh (`torch.nn.Tanh`)."""

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """Elementwise 1 / (1 + exp(-x)) (`torch.nn.Sigmoid`)."""

    def forward(self, input):
        return F.sigmoid(input)


class Softmax(Module):
    """`F.softmax(input, dim)` (`torch.nn.Softmax`); dim=None uses PyTorch's legacy choice."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Softmax):
    """`F.log_softmax(input, dim)` (`torch.nn.LogSoftmax`)."""

    def forward(self, input):
        return F.log_softmax(input, self.dim)


# ---------------------------------------------------------------- layers with parameters


class LayerNorm(Module):
    """`F.layer_norm` over the trailing `normalized_shape` dims (`torch.nn.LayerNorm`); with
    `elementwise_affine`, `weight` (ones) and `bias` (zeros, unless bias=False) are Parameters
    of shape normalized_shape."""

    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self.weight = self.bias = None
        if elementwise_affine:
            self.weight = Parameter(ones(self.normalized_shape, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(self.normalized_shape, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        if self.weight is not None:
            self.weight.data.fill_(1.0)
        if self.bias is not None:
            self.bias.data.zero_()

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, " \
               f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"


def _padding_idx(padding_idx, num_embeddings: int):
    if padding_idx is None:
        return None
    if not -num_embeddings <= padding_idx < num_embeddings:
        raise AssertionError("Padding_idx must be within num_embeddings")
    return padding_idx % num_embeddings


class Embedding(Module):
    """A lookup table (`torch.nn.Embedding`): int indices (*) -> (*, embedding_dim) rows of
    `weight` (num_embeddings, embedding_dim), initialised N(0, 1) with row `padding_idx` zero
    (that row gets no gradient). AssertionError for padding_idx out of range or a `_weight`
    of the wrong shape."""

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx=None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        self.padding_idx = _padding_idx(padding_idx, num_embeddings)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if _weight is None:
            self.weight = Parameter(randn(num_embeddings, embedding_dim, dtype=dtype,
                                          device=device), requires_grad=not _freeze)
            self._fill_padding_idx_with_zero()
        else:
            if tuple(_weight.shape) != (num_embeddings, embedding_dim):
                raise AssertionError("Shape of weight does not match num_embeddings and "
                                     "embedding_dim")
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def _fill_padding_idx_with_zero(self) -> None:
        if self.padding_idx is not None:
            self.weight._data[self.padding_idx] = 0

    def reset_parameters(self) -> None:
        normal_(self.weight.data)
        self._fill_padding_idx_with_zero()

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False):
        """An Embedding whose weight is `embeddings` (2-D), frozen unless freeze=False."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   _weight=embeddings, _freeze=freeze)

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += ", scale_grad_by_freq=True"
        if self.sparse:
            s += ", sparse=True"
        return s
