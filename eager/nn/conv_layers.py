"""`torch.nn`'s convolution, pooling and batch-norm modules over `eager.nn.conv`.

Each module stores its constructor arguments as PyTorch does (tuples for conv sizes, the raw
values for pooling), holds `weight`/`bias` as `Parameter`s initialised as PyTorch's
`reset_parameters` (kaiming-uniform with a = sqrt(5), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
for conv weights; the bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))), keeps running statistics as
buffers, and calls the functional form in `forward`. Constructor signatures, defaults and
`extra_repr` follow the `torch.nn` documentation of each class (Conv1d, Conv2d, MaxPool1d/2d,
AvgPool1d/2d, AdaptiveAvgPool1d/2d, BatchNorm1d/2d). Touches `eager` only.
"""

from __future__ import annotations

import math

from ir import dtypes as D

from ..creation import ones, tensor, zeros
from ..dispatch import FUNCTIONS
from ..grad_mode import no_grad
from ..random import rand
from . import conv as F
from .module import Module, Parameter

_PADDING_MODES = {"zeros", "reflect", "replicate", "circular"}


def _ntuple(value, n: int) -> tuple:
    return (value,) * n if isinstance(value, int) else tuple(value)


def _uniform(shape, bound: float, dtype, device):
    return rand(*shape, dtype=dtype, device=device) * (2 * bound) - bound


# ---------------------------------------------------------------- convolution


class _ConvNd(Module):
    """Shared by Conv1d/Conv2d: weight (out_channels, in_channels / groups, *kernel_size)."""

    _nd = 2
    _fn = staticmethod(F.conv2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__()
        nd = self._nd
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string {padding!r}, should be one of "
                                 f"{{'valid', 'same'}}")
            if padding == "same" and any(s != 1 for s in _ntuple(stride, nd)):
                raise ValueError("padding='same' is not supported for strided convolutions")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {sorted(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        self.in_channels, self.out_channels = in_channels, out_channels
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride, nd)
        self.padding = padding if isinstance(padding, str) else _ntuple(padding, nd)
        self.dilation = _ntuple(dilation, nd)
        self.transposed, self.output_padding = False, (0,) * nd
        self.groups, self.padding_mode = groups, padding_mode
        if isinstance(self.padding, str):  # F.pad's list for the non-zeros padding modes
            total = [d * (k - 1) for d, k in zip(self.dilation, self.kernel_size)]
            pairs = [(t // 2, t - t // 2) if self.padding == "same" else (0, 0) for t in total]
        else:
            pairs = [(p, p) for p in self.padding]
        self._reversed_padding_repeated_twice = [v for lo, hi in reversed(pairs)
                                                 for v in (lo, hi)]
        shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Parameter(_uniform(shape, 0.0, dtype, device))
        self.bias = Parameter(_uniform((out_channels,), 0.0, dtype, device)) if bias else None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(weight, a=sqrt(5)) and bias U(-1/sqrt(fan_in), 1/sqrt(fan_in))."""
        fan_in = (self.in_channels // self.groups) * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        w, b = self.weight, self.bias
        with no_grad():
            w.copy_(_uniform(tuple(w.shape), bound, w.dtype, w.device))
            if b is not None:
                b.copy_(_uniform(tuple(b.shape), bound, b.dtype, b.device))

    def _conv_forward(self, input, weight, bias):
        if self.padding_mode != "zeros":
            mode = self.padding_mode
            input = FUNCTIONS["pad"](input, self._reversed_padding_repeated_twice, mode)
            return self._fn(input, weight, bias, self.stride, 0, self.dilation, self.groups)
        return self._fn(input, weight, bias, self.stride, self.padding, self.dilation,
                        self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * len(self.kernel_size):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class Conv1d(_ConvNd):
    """`F.conv1d` with a learnt weight (out_channels, in_channels / groups, kernel_size) and
    bias (`torch.nn.Conv1d`): (N, C_in, L) -> (N, C_out, L_out). padding: int, "valid" or
    "same"; padding_mode "zeros" | "reflect" | "replicate" | "circular". ValueError for
    channels not divisible by groups, a bad padding string or mode, or "same" with stride."""

    _nd = 1
    _fn = staticmethod(F.conv1d)


class Conv2d(_ConvNd):
    """`F.conv2d` with a learnt weight (out_channels, in_channels / groups, kH, kW) and bias
    (`torch.nn.Conv2d`): (N, C_in, H, W) -> (N, C_out, H_out, W_out). Arguments and errors as
    `Conv1d`, sizes as int or pair."""

    _nd = 2
    _fn = staticmethod(F.conv2d)


# ---------------------------------------------------------------- pooling


class _MaxPoolNd(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.dilation = padding, dilation
        self.return_indices, self.ceil_mode = return_indices, ceil_mode

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"
                f", dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd):
    """`F.max_pool1d` (`torch.nn.MaxPool1d`): (N, C, L) -> (N, C, L_out); stride defaults to
    kernel_size."""

    def forward(self, input):
        return F.max_pool1d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class MaxPool2d(_MaxPoolNd):
    """`F.max_pool2d` (`torch.nn.MaxPool2d`): (N, C, H, W) -> (N, C, H_out, W_out); stride
    defaults to kernel_size; return_indices also returns the argmax positions."""

    def forward(self, input):
        return F.max_pool2d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool1d(Module):
    """`F.avg_pool1d` (`torch.nn.AvgPool1d`): (N, C, L) -> (N, C, L_out)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__()
        self.kernel_size = _ntuple(kernel_size, 1)
        self.stride = _ntuple(stride if stride is not None else kernel_size, 1)
        self.padding = _ntuple(padding, 1)
        self.ceil_mode, self.count_include_pad = ceil_mode, count_include_pad

    def forward(self, input):
        return F.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(Module):
    """`F.avg_pool2d` (`torch.nn.AvgPool2d`): (N, C, H, W) -> (N, C, H_out, W_out); stride
    defaults to kernel_size; count_include_pad and divisor_override as the function."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return F.avg_pool2d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool1d(Module):
    """`F.adaptive_avg_pool1d` (`torch.nn.AdaptiveAvgPool1d`): (N, C, L) -> (N, C, size)."""

    _fn = staticmethod(F.adaptive_avg_pool1d)

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return self._fn(input, self.output_size)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveAvgPool2d(AdaptiveAvgPool1d):
    """`F.adaptive_avg_pool2d` (`torch.nn.AdaptiveAvgPool2d`): (N, C, H, W) ->
    (N, C, *output_size); output_size an int, or a pair whose None entries keep the input's
    size."""

    _fn = staticmethod(F.adaptive_avg_pool2d)


# ---------------------------------------------------------------- batch norm


class _BatchNorm(Module):
    """Shared by BatchNorm1d/2d: weight (ones) and bias (zeros) when affine; buffers
    running_mean (zeros), running_var (ones) and num_batches_tracked (int64 0) when
    track_running_stats."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum=0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.weight = self.bias = None
        if affine:
            self.weight = Parameter(ones(num_features, dtype=dtype, device=device))
            if bias:
                self.bias = Parameter(zeros(num_features, dtype=dtype, device=device))
        if track_running_stats:
            self.register_buffer("running_mean", zeros(num_features, dtype=dtype,
                                                       device=device))
            self.register_buffer("running_var", ones(num_features, dtype=dtype, device=device))
            self.register_buffer("num_batches_tracked", tensor(0, dtype=D.int64,
                                                               device=device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """As PyTorch's `_NormBase`: a state dict without version metadata (older than the
        `num_batches_tracked` buffer, or a hand-made dict) that lacks `num_batches_tracked`
        keeps the module's count instead of reporting it missing."""
        version = local_metadata.get("version", None)
        key = prefix + "num_batches_tracked"
        if (version is None or version < 2) and self.track_running_stats and \
                key not in state_dict and self.num_batches_tracked is not None:
            state_dict[key] = self.num_batches_tracked
        super()._load_from_state_dict(state_dict, prefix, local_metadata, strict,
                                      missing_keys, unexpected_keys, error_msgs)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            self.weight.data.fill_(1.0)
        if self.bias is not None:
            self.bias.data.zero_()

    def _check_input_dim(self, input) -> None:
        raise NotImplementedError

    def forward(self, input):
        """As `torch.nn.modules.batchnorm._BatchNorm.forward`: momentum=None averages all
        batches seen (factor 1 / num_batches_tracked)."""
        self._check_input_dim(input)
        factor = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            with no_grad():
                self.num_batches_tracked.add_(1)
            if self.momentum is None:
                factor = 1.0 / float(self.num_batches_tracked)
        bn_training = self.training or (self.running_mean is None and self.running_var is None)
        use_stats = not self.training or self.track_running_stats
        return F.batch_norm(input, self.running_mean if use_stats else None,
                            self.running_var if use_stats else None, self.weight, self.bias,
                            bn_training, factor, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class BatchNorm1d(_BatchNorm):
    """`F.batch_norm` over (N, C) or (N, C, L) inputs (`torch.nn.BatchNorm1d`): batch
    statistics while training (running statistics updated), running statistics in eval.
    ValueError "expected 2D or 3D input (got 4D input)" for other ranks."""

    def _check_input_dim(self, input) -> None:
        if input.ndim not in (2, 3):
            raise ValueError(f"expected 2D or 3D input (got {input.ndim}D input)")


class BatchNorm2d(_BatchNorm):
    """`F.batch_norm` over (N, C, H, W) inputs (`torch.nn.BatchNorm2d`); see BatchNorm1d.
    ValueError "expected 4D input (got 3D input)" for other ranks."""

    def _check_input_dim(self, input) -> None:
        if input.ndim != 4:
            raise ValueError(f"expected 4D input (got {input.ndim}D input)")
