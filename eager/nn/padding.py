"""`torch.nn`'s padding modules (Zero/Constant/Reflection/Replication/Circular Pad 1d/2d/3d)
over the registry's `pad` op (`F.pad` with mode "constant", "reflect", "replicate",
"circular"). Each stores `padding` as the tuple PyTorch does (an int repeated 2, 4 or 6
times, last dim first) and checks the input rank as PyTorch's padding kernels (unbatched
inputs accepted). Reprs as torch.nn's `_ConstantPadNd` and friends. Touches `eager` only.
"""

from __future__ import annotations

from ..dispatch import FUNCTIONS
from .module import Module

__all__ = ["CircularPad1d", "CircularPad2d", "CircularPad3d", "ConstantPad1d",
           "ConstantPad2d", "ConstantPad3d", "ReflectionPad1d", "ReflectionPad2d",
           "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d"]


def _padding(padding, nd: int) -> tuple:
    if isinstance(padding, int):
        return (padding,) * (2 * nd)
    padding = tuple(int(p) for p in padding)
    if len(padding) != 2 * nd:
        raise ValueError(f"expected padding to be a single integer value or a list of "
                         f"{2 * nd} values, got {len(padding)}")
    return padding


class _PadNd(Module):
    _nd = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _padding(padding, self._nd)

    def _check_input_dim(self, input) -> None:
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise ValueError(f"expected {nd + 1}D or {nd + 2}D input (got {input.ndim}D "
                             f"input)")

    def forward(self, input):
        if self._mode != "constant":
            self._check_input_dim(input)
        return FUNCTIONS["pad"](input, list(self.padding), self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPadNd(_PadNd):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return FUNCTIONS["pad"](input, list(self.padding), "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pad the last dim with `value` (`torch.nn.ConstantPad1d`); padding int or (left,
    right)."""

    _nd = 1


class ConstantPad2d(_ConstantPadNd):
    """Pad the last 2 dims with `value` (`torch.nn.ConstantPad2d`); padding int or (left,
    right, top, bottom)."""

    _nd = 2


class ConstantPad3d(_ConstantPadNd):
    """Pad the last 3 dims with `value` (`torch.nn.ConstantPad3d`); padding int or 6-tuple."""

    _nd = 3


class _ZeroPadNd(_ConstantPadNd):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad1d(_ZeroPadNd):
    """Pad the last dim with zeros (`torch.nn.ZeroPad1d`)."""

    _nd = 1


class ZeroPad2d(_ZeroPadNd):
    """Pad the last 2 dims with zeros (`torch.nn.ZeroPad2d`)."""

    _nd = 2


class ZeroPad3d(_ZeroPadNd):
    """Pad the last 3 dims with zeros (`torch.nn.ZeroPad3d`)."""

    _nd = 3


class ReflectionPad1d(_PadNd):
    """Reflect the last dim about its edges (`torch.nn.ReflectionPad1d`): (C, W) or (N, C, W);
    padding must be smaller than the size (RuntimeError otherwise)."""

    _nd, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Reflection padding of the last 2 dims (`torch.nn.ReflectionPad2d`)."""

    _nd, _mode = 2, "reflect"


class ReflectionPad3d(_PadNd):
    """Reflection padding of the last 3 dims (`torch.nn.ReflectionPad3d`)."""

    _nd, _mode = 3, "reflect"


class ReplicationPad1d(_PadNd):
    """Repeat the edge values of the last dim (`torch.nn.ReplicationPad1d`)."""

    _nd, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Replication padding of the last 2 dims (`torch.nn.ReplicationPad2d`)."""

    _nd, _mode = 2, "replicate"


class ReplicationPad3d(_PadNd):
    """Replication padding of the last 3 dims (`torch.nn.ReplicationPad3d`)."""

    _nd, _mode = 3, "replicate"


class CircularPad1d(_PadNd):
    """Wrap-around padding of the last dim (`torch.nn.CircularPad1d`)."""

    _nd, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Wrap-around padding of the last 2 dims (`torch.nn.CircularPad2d`)."""

    _nd, _mode = 2, "circular"


class CircularPad3d(_PadNd):
    """Wrap-around padding of the last 3 dims (`torch.nn.CircularPad3d`)."""

    _nd, _mode = 3, "circular"
