"""Activation modules (`torch.nn.LeakyReLU`, `SiLU`, `ELU`, ... `PReLU`, `GLU`, `Softmin`):
thin Modules over `eager.nn.functional` with PyTorch's constructor arguments, defaults,
parameter names (`PReLU.weight`) and reprs (`extra_repr`). Shapes: any (*) -> same (*), except
`GLU` (halves `dim`) and `Softmax2d` (softmax over dim -3 of a (C, H, W) or (N, C, H, W) input).
"""

from __future__ import annotations

from ..creation import full
from ..grad_mode import no_grad
from . import functional as F
from .module import Module, Parameter


def _inplace_str(inplace: bool) -> str:
    return ", inplace=True" if inplace else ""


class ReLU(Module):
    """max(x, 0) (`torch.nn.ReLU`); `inplace=True` writes into the input."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class GELU(Module):
    """x * Phi(x) (`torch.nn.GELU`), exact or `approximate="tanh"`."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class _Inplace(Module):
    """An activation whose only argument is `inplace`."""

    _fn = None

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return type(self)._fn(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class SiLU(_Inplace):
    """x * sigmoid(x) (`torch.nn.SiLU`)."""

    _fn = staticmethod(F.silu)


class Mish(_Inplace):
    """x * tanh(softplus(x)) (`torch.nn.Mish`)."""

    _fn = staticmethod(F.mish)


class SELU(_Inplace):
    """scale * elu(x, alpha) with the SELU constants (`torch.nn.SELU`)."""

    _fn = staticmethod(F.selu)


class Hardswish(_Inplace):
    """x * relu6(x + 3) / 6 (`torch.nn.Hardswish`)."""

    _fn = staticmethod(F.hardswish)

    def extra_repr(self) -> str:
        return ""


class Hardsigmoid(Hardswish):
    """relu6(x + 3) / 6 (`torch.nn.Hardsigmoid`)."""

    _fn = staticmethod(F.hardsigmoid)


class LeakyReLU(Module):
    """x if x > 0 else negative_slope * x (`torch.nn.LeakyReLU`)."""

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False):
        super().__init__()
        self.negative_slope, self.inplace = negative_slope, inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"negative_slope={self.negative_slope}{_inplace_str(self.inplace)}"


class ELU(Module):
    """x if x > 0 else alpha * (exp(x) - 1) (`torch.nn.ELU`)."""

    _fn = staticmethod(F.elu)

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        return type(self)._fn(input, self.alpha, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}{_inplace_str(self.inplace)}"


class CELU(ELU):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)) (`torch.nn.CELU`)."""

    _fn = staticmethod(F.celu)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above `threshold` (`torch.nn.Softplus`)."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class Hardtanh(Module):
    """clamp(x, min_val, max_val) (`torch.nn.Hardtanh`)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if max_val <= min_val:
            raise ValueError("max_val must be greater than min_val")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}{_inplace_str(self.inplace)}"


class ReLU6(Hardtanh):
    """min(max(x, 0), 6) (`torch.nn.ReLU6`)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Threshold(Module):
    """x if x > threshold else value (`torch.nn.Threshold`)."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, inplace=self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}{_inplace_str(self.inplace)}"


class LogSigmoid(Module):
    """log(sigmoid(x)) (`torch.nn.LogSigmoid`)."""

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|) (`torch.nn.Softsign`)."""

    def forward(self, input):
        return F.softsign(input)


class Tanhshrink(Module):
    """x - tanh(x) (`torch.nn.Tanhshrink`)."""

    def forward(self, input):
        return F.tanhshrink(input)


class PReLU(Module):
    """x if x > 0 else weight * x, `weight` (num_parameters,) learned, initialised to `init`
    (`torch.nn.PReLU`); with num_parameters > 1 the weight applies along dim 1 (channels)."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(full((num_parameters,), init, dtype=dtype, device=device))

    def reset_parameters(self) -> None:
        with no_grad():
            self.weight.fill_(self.init)

    def forward(self, input):
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(Module):
    """a * sigmoid(b), (a, b) the halves of `input` along `dim` (`torch.nn.GLU`)."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmin(Module):
    """softmax(-x) along `dim` (`torch.nn.Softmin`)."""

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmin(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class Softmax2d(Module):
    """Softmax over the channels of (N, C, H, W) or (C, H, W) (`torch.nn.Softmax2d`)."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             "instead")
        return F.softmax(input, -3)


class Unflatten(Module):
    """Dim `dim` of the input unflattened to `unflattened_size` (`torch.nn.Unflatten`)."""

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        d = self.dim if self.dim >= 0 else input.ndim + self.dim
        shape = tuple(input.shape)
        return input.reshape(shape[:d] + tuple(self.unflattened_size) + shape[d + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


__all__ = ["CELU", "ELU", "GLU", "Hardsigmoid", "Hardswish", "Hardtanh", "LeakyReLU",
           "LogSigmoid", "Mish", "PReLU", "ReLU6", "SELU", "SiLU", "Softmax2d", "Softmin",
           "Softplus", "Softsign", "Tanhshrink", "Threshold", "Unflatten"]
