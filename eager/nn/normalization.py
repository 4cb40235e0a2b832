"""Normalization layers of `torch.nn` beyond batch/layer norm: group, instance, RMS and local
response normalization (functions and modules), `BatchNorm3d` and `SyncBatchNorm` (batch norm
on one process), composed of registry ops (means, `rsqrt`, window sums over a padded channel
axis); running statistics are updated in place under `no_grad` as `batch_norm` does.
Semantics, parameters, initialisation, reprs and errors: torch.nn.functional (group_norm,
instance_norm, rms_norm, local_response_norm) and the torch.nn classes of the same names.
Touches `eager` only.
"""

from __future__ import annotations

from ..amp.policy import autocast_function
from ..creation import ones, zeros
from ..dispatch import FUNCTIONS
from ..grad_mode import no_grad
from .conv import batch_norm
from .conv_layers import _BatchNorm
from .module import Module, Parameter

__all__ = ["group_norm", "instance_norm", "local_response_norm", "rms_norm"]
MODULES = ["BatchNorm3d", "CrossMapLRN2d", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d",
           "InstanceNorm3d", "LocalResponseNorm", "RMSNorm", "SyncBatchNorm"]


def _normalize(x, dims, eps):
    mean = x.mean(dims, keepdim=True)
    centered = x - mean
    var = (centered * centered).mean(dims, keepdim=True)
    return centered * (var + eps).rsqrt(), mean, var


def _affine(out, weight, bias, c: int):
    shape = (c,) + (1,) * (out.ndim - 2)
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


@autocast_function("group_norm")
def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Group normalization (Wu & He, 2018) `torch.nn.functional.group_norm`: input (N, C, *)
    split into num_groups groups of channels, each normalised over its channels and spatial
    dims (biased variance), then weight/bias (C,) per channel. RuntimeError when C is not
    divisible by num_groups or weight/bias do not have C elements."""
    if input.ndim < 2:
        raise RuntimeError(f"Expected at least 2 dimensions for input tensor but received "
                           f"{input.ndim}")
    n, c = input.shape[0], input.shape[1]
    if c % num_groups:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != c):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number "
                               f"of channels in input, but got {name} of shape "
                               f"{list(t.shape)} and input of shape {list(input.shape)}")
    x = input.reshape(n, num_groups, -1)
    out = _normalize(x, (2,), eps)[0].reshape(tuple(input.shape))
    return _affine(out, weight, bias, c)


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats=True, momentum=0.1, eps=1e-5):
    """Instance normalization (Ulyanov et al., 2016) `torch.nn.functional.instance_norm`:
    input (N, C, *) normalised per sample and channel over the spatial dims; with
    use_input_stats=False the running statistics (C,) are used instead. When given and
    use_input_stats, running_mean/var are updated in place with the batch average of the
    instance statistics (unbiased variance), momentum as batch norm. ValueError for one
    spatial element when using input statistics."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    dims = tuple(range(2, input.ndim))
    if not use_input_stats:
        return batch_norm(input, running_mean, running_var, weight, bias, False, momentum, eps)
    count = input.numel() // max(input.shape[0] * c, 1)
    if count <= 1:
        raise ValueError(f"Expected more than 1 spatial element when training, got input size "
                         f"torch.Size({list(input.shape)})")
    out, mean, var = _normalize(input, dims, eps)
    if running_mean is not None or running_var is not None:
        with no_grad():
            if running_mean is not None:
                m = mean.detach().reshape(input.shape[0], c).mean(0)
                running_mean.mul_(1 - momentum).add_(m * momentum)
            if running_var is not None:
                v = var.detach().reshape(input.shape[0], c).mean(0) * (count / (count - 1))
                running_var.mul_(1 - momentum).add_(v * momentum)
    return _affine(out, weight, bias, c)


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """Root-mean-square normalization (Zhang & Sennrich, 2019) `torch.nn.functional.rms_norm`:
    x / sqrt(mean(x ** 2 over the last len(normalized_shape) dims) + eps) * weight; eps None
    is the dtype's machine epsilon. RuntimeError when the trailing dims do not match."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    k = len(shape)
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if eps is None:
        import numpy as np

        eps = float(np.finfo(input.dtype.np).eps)
    dims = tuple(range(input.ndim - k, input.ndim))
    out = input * ((input * input).mean(dims, keepdim=True) + eps).rsqrt()
    return out * weight if weight is not None else out


def _channel_window_sum(sq, before: int, after: int):
    """Sum of `sq` (N, C, *) over channels [c - before, c + after] (zeros outside)."""
    x = sq.movedim(1, -1)
    x = FUNCTIONS["pad"](x, [before, after])
    return x.unfold(-1, before + after + 1, 1).sum(-1).movedim(-1, 1)


def local_response_norm(input, size, alpha=1e-4, beta=0.75, k=1.0):
    """Local response normalization (Krizhevsky et al., 2012)
    `torch.nn.functional.local_response_norm`: x / (k + alpha / size * sum of x ** 2 over
    channels [c - size // 2, c + (size - 1) // 2]) ** beta. input (N, C, *) of >= 3 dims
    (ValueError otherwise)."""
    if input.ndim < 3:
        raise ValueError(f"Expected 3D or higher dimensionality input (got {input.ndim} "
                         f"dimensions)")
    if input.numel() == 0:
        return input
    div = _channel_window_sum(input * input, size // 2, (size - 1) // 2) / size
    return input / (div * alpha + k).pow(beta)


def _cross_map_lrn2d(input, size, alpha, beta, k):
    """`torch.nn._functions.CrossMapLRN2d` (the legacy Lua-torch layer): scale over channels
    [c - pre + 1, c + pre - 1], pre = (size - 1) // 2 + 1, plus channel 0 for c >= pre (that
    implementation's running sum never drops channel 0)."""
    c = input.shape[1]
    pre = int((size - 1) / 2 + 1)
    sq = input * input
    scale = _channel_window_sum(sq, pre - 1, pre - 1)
    if c > pre:
        first = sq[:, :1].expand(-1, c - pre, -1, -1)
        keep = FUNCTIONS["cat"]([scale[:, :pre], scale[:, pre:] + first], 1)
        scale = keep
    return input * (scale * (alpha / size) + k).pow(-beta)


# ---------------------------------------------------------------- modules


class GroupNorm(Module):
    """`F.group_norm` with per-channel `weight` (ones) and `bias` (zeros) when affine
    (`torch.nn.GroupNorm`): (N, C, *) -> same. ValueError when num_channels is not divisible
    by num_groups."""

    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        if num_channels % num_groups != 0:
            raise ValueError("num_channels must be divisible by num_groups")
        self.num_groups, self.num_channels, self.eps, self.affine = \
            num_groups, num_channels, eps, affine
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(ones(num_channels, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(num_channels, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        if self.weight is not None:
            self.weight.data.fill_(1.0)
        if self.bias is not None:
            self.bias.data.zero_()

    def forward(self, input):
        return group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class _InstanceNorm(_BatchNorm):
    """Shared by InstanceNorm1d/2d/3d (`torch.nn.modules.instancenorm._InstanceNorm`):
    affine and track_running_stats default to False; unbatched inputs accepted."""

    _nd = 2

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)

    def _check_input_dim(self, input) -> None:
        if input.ndim not in (self._nd + 1, self._nd + 2):
            raise ValueError(f"expected {self._nd + 1}D or {self._nd + 2}D input (got "
                             f"{input.ndim}D input)")

    def forward(self, input):
        self._check_input_dim(input)
        feature_dim = input.ndim - self._nd - 1
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]}.")
            import warnings

            warnings.warn(f"input's size at dim={feature_dim} does not match num_features. "
                          "You can silence this warning by not passing in num_features, "
                          "which is not used because affine=False", stacklevel=2)
        unbatched = input.ndim == self._nd + 1
        x = input.unsqueeze(0) if unbatched else input
        out = instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                            self.training or not self.track_running_stats, self.momentum
                            if self.momentum is not None else 0.0, self.eps)
        return out.squeeze(0) if unbatched else out


class InstanceNorm1d(_InstanceNorm):
    """`F.instance_norm` over (N, C, L) or (C, L) (`torch.nn.InstanceNorm1d`)."""

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """`F.instance_norm` over (N, C, H, W) or (C, H, W) (`torch.nn.InstanceNorm2d`)."""

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """`F.instance_norm` over (N, C, D, H, W) or (C, D, H, W) (`torch.nn.InstanceNorm3d`)."""

    _nd = 3


class BatchNorm3d(_BatchNorm):
    """`F.batch_norm` over (N, C, D, H, W) inputs (`torch.nn.BatchNorm3d`); see BatchNorm1d.
    ValueError "expected 5D input (got 4D input)" for other ranks."""

    def _check_input_dim(self, input) -> None:
        if input.ndim != 5:
            raise ValueError(f"expected 5D input (got {input.ndim}D input)")


class SyncBatchNorm(_BatchNorm):
    """`torch.nn.SyncBatchNorm` on one process: batch norm over (N, C, *) inputs of >= 2 dims
    (statistics of the local batch; there is no process group to synchronise with).
    ValueError for inputs of fewer than 2 dims."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias=bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every BatchNorm*d replaced by a SyncBatchNorm holding the same
        parameters and buffers (recursively), as torch's."""
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            out = cls(module.num_features, module.eps, module.momentum, module.affine,
                      module.track_running_stats, process_group)
            if module.affine:
                out.weight, out.bias = module.weight, module.bias
            for name in ("running_mean", "running_var", "num_batches_tracked"):
                out._buffers[name] = getattr(module, name)
                object.__setattr__(out, name, getattr(module, name))
            out.training = module.training
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out


class RMSNorm(Module):
    """`F.rms_norm` over the trailing `normalized_shape` dims (`torch.nn.RMSNorm`); `weight`
    (ones, normalized_shape) when elementwise_affine; eps None uses the dtype's epsilon."""

    def __init__(self, normalized_shape, eps=None, elementwise_affine: bool = True,
                 device=None, dtype=None):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(s) for s in normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(ones(self.normalized_shape, dtype=dtype, device=device))
        else:
            self.register_parameter("weight", None)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            self.weight.data.fill_(1.0)

    def forward(self, x):
        return rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LocalResponseNorm(Module):
    """`F.local_response_norm` (`torch.nn.LocalResponseNorm`)."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        return local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    """The legacy cross-map LRN of Lua torch (`torch.nn.CrossMapLRN2d`), 4-D inputs only
    (ValueError otherwise); see `_cross_map_lrn2d` for its window."""

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__(size, alpha, beta, k)

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D "
                             f"instead.")
        return _cross_map_lrn2d(input, self.size, self.alpha, self.beta, self.k)

