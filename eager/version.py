"""`torch.version` and `torch.__version__` for `import eager as torch`: the PyTorch release
whose API and numbers wick is checked against (torch 2.13), with the local label `+wick`.

`__version__` is a `TorchVersion` (a str, as PyTorch's `torch.torch_version.TorchVersion`)
that also compares with version strings and tuples by release numbers
(`torch.__version__ >= "2.0"`, `>= (2, 1)`), so version gates in user code take their modern
branch. Build facts are those of a CPU build: `cuda`, `hip`, `rocm`, `xpu` are None.
"""

from __future__ import annotations

import re

__all__ = ["TorchVersion", "__version__", "cuda", "debug", "git_version", "hip", "rocm", "xpu"]


def _release(v) -> tuple:
    """The numeric release tuple of a version string or tuple/list ("2.13.0+cpu" -> (2, 13, 0));
    ValueError for something that is not a version."""
    if isinstance(v, (tuple, list)):
        return tuple(int(x) for x in v)
    m = re.match(r"\s*v?(\d+(?:\.\d+)*)", str(v))
    if m is None:
        raise ValueError(f"Invalid version: {v!r}")
    return tuple(int(x) for x in m.group(1).split("."))


def _cmp(a: tuple, b: tuple) -> int:
    n = max(len(a), len(b))
    a, b = a + (0,) * (n - len(a)), b + (0,) * (n - len(b))
    return (a > b) - (a < b)


class TorchVersion(str):
    """A version string comparable with strings and tuples by its release numbers."""

    def _compare(self, other) -> int:
        return _cmp(_release(self), _release(other))

    def __lt__(self, other):
        return self._compare(other) < 0

    def __le__(self, other):
        return self._compare(other) <= 0

    def __gt__(self, other):
        return self._compare(other) > 0

    def __ge__(self, other):
        return self._compare(other) >= 0

    def __eq__(self, other):
        if isinstance(other, (tuple, list)):
            return self._compare(other) == 0
        return str.__eq__(self, other)

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = str.__hash__


__version__ = TorchVersion("2.13.0+wick")
cuda = None
hip = None
rocm = None
xpu = None
debug = False
git_version = "wick"
