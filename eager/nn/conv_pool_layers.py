"""`torch.nn`'s 3-D and transposed convolution modules and the pooling modules beyond
`conv_layers.py` (3-D max/avg, adaptive max, LP, fractional max, max unpooling), over the
functions of `conv_transpose.py` and `pooling.py`. Constructor signatures, stored attributes,
initialisation (PyTorch's `reset_parameters`) and `extra_repr` follow the torch.nn class of
each name. Touches `eager` only.
"""

from __future__ import annotations

import math

from ..grad_mode import no_grad
from . import conv_transpose as CT
from . import pooling as P
from .conv_layers import AdaptiveAvgPool1d, _ConvNd, _MaxPoolNd, _uniform
from .module import Module, Parameter

__all__ = ["AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
           "AvgPool3d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
           "FractionalMaxPool2d", "FractionalMaxPool3d", "LPPool1d", "LPPool2d", "LPPool3d",
           "MaxPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d"]


def _ntuple(value, n: int) -> tuple:
    return (value,) * n if isinstance(value, (int, float)) else tuple(value)


class Conv3d(_ConvNd):
    """`F.conv3d` with a learnt weight (out_channels, in_channels / groups, kD, kH, kW) and
    bias (`torch.nn.Conv3d`): (N, C_in, D, H, W) -> (N, C_out, D_out, H_out, W_out); arguments
    and errors as `Conv1d`."""

    _nd = 3
    _fn = staticmethod(CT.conv3d)


class _ConvTransposeNd(_ConvNd):
    """Shared by ConvTranspose1d/2d/3d: weight (in_channels, out_channels / groups,
    *kernel_size), initialised as PyTorch (fan_in from weight dim 1); only "zeros" padding;
    forward(input, output_size=None) picks output_padding to reach output_size."""

    _nd = 2
    _fn = staticmethod(CT.conv_transpose2d)

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f"{type(self).__name__}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)
        nd = self._nd
        self.transposed = True
        self.output_padding = _ntuple(output_padding, nd)
        shape = (in_channels, out_channels // groups) + self.kernel_size
        self.weight = Parameter(_uniform(shape, 0.0, dtype, device))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """kaiming_uniform_(weight, a=sqrt(5)), bias U(-1/sqrt(fan_in), 1/sqrt(fan_in)),
        fan_in = weight.size(1) * prod(kernel_size) (PyTorch's fan of a transposed weight)."""
        w, b = self.weight, self.bias
        fan_in = w.shape[1] * math.prod(w.shape[2:]) if w.ndim > 1 else 0
        bound = 1.0 / math.sqrt(fan_in) if fan_in else 0.0
        with no_grad():
            w.copy_(_uniform(tuple(w.shape), bound, w.dtype, w.device))
            if b is not None:
                b.copy_(_uniform(tuple(b.shape), bound, b.dtype, b.device))

    def _output_padding(self, input, output_size):
        """PyTorch's `_ConvTransposeNd._output_padding`: output_padding from a requested
        output size (ValueError when it is out of the reachable range)."""
        nd = self._nd
        if output_size is None:
            return self.output_padding
        lead = 2 if input.ndim == nd + 2 else 1
        output_size = list(output_size)
        if len(output_size) == lead + nd:
            output_size = output_size[lead:]
        if len(output_size) != nd:
            raise ValueError(f"ConvTranspose{nd}D: for {input.ndim}D input, output_size must "
                             f"have {nd} or {lead + nd} elements (got {len(output_size)})")
        mins = [(input.shape[d + lead] - 1) * self.stride[d] - 2 * self.padding[d] +
                self.dilation[d] * (self.kernel_size[d] - 1) + 1 for d in range(nd)]
        maxs = [m + s - 1 for m, s in zip(mins, self.stride)]
        for size, lo, hi in zip(output_size, mins, maxs):
            if not lo <= size <= hi:
                raise ValueError(f"requested an output size of {output_size}, but valid sizes "
                                 f"range from {mins} to {maxs} (for an input of "
                                 f"{list(input.shape[lead:])})")
        return tuple(s - m for s, m in zip(output_size, mins))

    def forward(self, input, output_size=None):
        op = self._output_padding(input, output_size)
        return self._fn(input, self.weight, self.bias, self.stride, self.padding, op,
                        self.groups, self.dilation)

    def extra_repr(self) -> str:
        s = super().extra_repr()
        if self.output_padding != (0,) * self._nd:  # after dilation, before groups
            at = min([s.find(k) for k in (", groups=", ", bias=", ", padding_mode=")
                      if k in s] + [len(s)])
            s = s[:at] + f", output_padding={self.output_padding}" + s[at:]
        return s


class ConvTranspose1d(_ConvTransposeNd):
    """`F.conv_transpose1d` with a learnt weight (in_channels, out_channels / groups, kW) and
    bias (`torch.nn.ConvTranspose1d`): (N, C_in, L) -> (N, C_out, L_out)."""

    _nd = 1
    _fn = staticmethod(CT.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    """`F.conv_transpose2d` module (`torch.nn.ConvTranspose2d`): (N, C_in, H, W) ->
    (N, C_out, H_out, W_out)."""

    _nd = 2
    _fn = staticmethod(CT.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    """`F.conv_transpose3d` module (`torch.nn.ConvTranspose3d`)."""

    _nd = 3
    _fn = staticmethod(CT.conv_transpose3d)


# ---------------------------------------------------------------- pooling


class MaxPool3d(_MaxPoolNd):
    """`F.max_pool3d` (`torch.nn.MaxPool3d`): (N, C, D, H, W) -> (N, C, D_out, H_out, W_out)."""

    def forward(self, input):
        return P.max_pool3d(input, self.kernel_size, self.stride, self.padding, self.dilation,
                            self.ceil_mode, self.return_indices)


class AvgPool3d(Module):
    """`F.avg_pool3d` (`torch.nn.AvgPool3d`)."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = stride if stride is not None else kernel_size
        self.padding, self.ceil_mode = padding, ceil_mode
        self.count_include_pad, self.divisor_override = count_include_pad, divisor_override

    def forward(self, input):
        return P.avg_pool3d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad, self.divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AdaptiveAvgPool3d(AdaptiveAvgPool1d):
    """`F.adaptive_avg_pool3d` (`torch.nn.AdaptiveAvgPool3d`)."""

    _fn = staticmethod(P.adaptive_avg_pool3d)


class _AdaptiveMaxPoolNd(Module):
    _fn = staticmethod(P.adaptive_max_pool1d)

    def __init__(self, output_size, return_indices: bool = False):
        super().__init__()
        self.output_size, self.return_indices = output_size, return_indices

    def forward(self, input):
        return self._fn(input, self.output_size, self.return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool1d(_AdaptiveMaxPoolNd):
    """`F.adaptive_max_pool1d` (`torch.nn.AdaptiveMaxPool1d`)."""


class AdaptiveMaxPool2d(_AdaptiveMaxPoolNd):
    """`F.adaptive_max_pool2d` (`torch.nn.AdaptiveMaxPool2d`)."""

    _fn = staticmethod(P.adaptive_max_pool2d)


class AdaptiveMaxPool3d(_AdaptiveMaxPoolNd):
    """`F.adaptive_max_pool3d` (`torch.nn.AdaptiveMaxPool3d`)."""

    _fn = staticmethod(P.adaptive_max_pool3d)


class _LPPoolNd(Module):
    _fn = staticmethod(P.lp_pool1d)

    def __init__(self, norm_type: float, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__()
        self.norm_type, self.kernel_size = norm_type, kernel_size
        self.stride, self.ceil_mode = stride, ceil_mode

    def forward(self, input):
        return self._fn(input, float(self.norm_type), self.kernel_size, self.stride,
                        self.ceil_mode)

    def extra_repr(self) -> str:
        return (f"norm_type={self.norm_type}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, ceil_mode={self.ceil_mode}")


class LPPool1d(_LPPoolNd):
    """`F.lp_pool1d` (`torch.nn.LPPool1d`)."""


class LPPool2d(_LPPoolNd):
    """`F.lp_pool2d` (`torch.nn.LPPool2d`)."""

    _fn = staticmethod(P.lp_pool2d)


class LPPool3d(_LPPoolNd):
    """`F.lp_pool3d` (`torch.nn.LPPool3d`)."""

    _fn = staticmethod(P.lp_pool3d)


class _FractionalMaxPoolNd(Module):
    _nd = 2
    _fn = staticmethod(P.fractional_max_pool2d)

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None):
        super().__init__()
        nd, name = self._nd, type(self).__name__
        self.kernel_size = _ntuple(kernel_size, nd)
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = _ntuple(output_size, nd) if output_size is not None else None
        self.output_ratio = _ntuple(output_ratio, nd) if output_ratio is not None else None
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a "
                             f"pooling ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        return self._fn(input, self.kernel_size, self.output_size, self.output_ratio,
                        self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """`F.fractional_max_pool2d` (`torch.nn.FractionalMaxPool2d`); ValueError without one
    of output_size / output_ratio, with both, or a ratio outside (0, 1)."""


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """`F.fractional_max_pool3d` (`torch.nn.FractionalMaxPool3d`)."""

    _nd = 3
    _fn = staticmethod(P.fractional_max_pool3d)


class _MaxUnpoolNd(Module):
    _nd = 1
    _fn = staticmethod(P.max_unpool1d)

    def __init__(self, kernel_size, stride=None, padding=0):
        super().__init__()
        nd = self._nd
        self.kernel_size = _ntuple(kernel_size, nd)
        self.stride = _ntuple(stride if stride is not None else kernel_size, nd)
        self.padding = _ntuple(padding, nd)

    def forward(self, input, indices, output_size=None):
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding,
                        output_size)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class MaxUnpool1d(_MaxUnpoolNd):
    """`F.max_unpool1d` (`torch.nn.MaxUnpool1d`): forward(input, indices, output_size=None).
    """


class MaxUnpool2d(_MaxUnpoolNd):
    """`F.max_unpool2d` (`torch.nn.MaxUnpool2d`)."""

    _nd = 2
    _fn = staticmethod(P.max_unpool2d)


class MaxUnpool3d(_MaxUnpoolNd):
    """`F.max_unpool3d` (`torch.nn.MaxUnpool3d`)."""

    _nd = 3
    _fn = staticmethod(P.max_unpool3d)
