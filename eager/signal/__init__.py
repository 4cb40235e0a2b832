"""`torch.signal`: signal-processing helpers; `windows` holds the window functions."""

from . import windows

__all__ = ["windows"]
