"""The Python array API standard (2024.12) for eager tensors: `x.__array_namespace__()` (or
`import eager.array_api as xp`) is a native namespace, as `array_api_compat` gives torch, so
array-agnostic code (scipy, scikit-learn's Array API support, array-api-tests) runs on wick.

Most functions are eager's own under the standard's names and signatures (`axis` for `dim`,
`x1`/`x2`, keyword-only `dtype`/`device`/`copy`, `correction`, `descending`/`stable`,
`include_initial`, ...); type promotion is torch's, a superset of the standard's lattice (mixed
int/float pairs, which the standard leaves undefined, promote as torch does). Python scalars
combine with arrays as the standard says. wick has no uint16/uint32/uint64 dtypes, so those are
absent here (the standard's tests skip absent dtypes). The `linalg` and `fft` extensions are
`eager.array_api.linalg` and `eager.array_api.fft`; `__array_namespace_info__()` describes
devices and default dtypes. Semantics: https://data-apis.org/array-api/2024.12/.
"""

from __future__ import annotations

import builtins
import math

import numpy as np

import eager as _e
from ir import dtypes as _D

from . import fft, linalg  # noqa: F401  (extensions)
from ._core import *  # noqa: F401,F403
from ._core import __all__ as _core_all
from ._shape import *  # noqa: F401,F403
from ._shape import __all__ as _shape_all
from ._stats import *  # noqa: F401,F403
from ._stats import __all__ as _stats_all
from ._info import __array_namespace_info__

__array_api_version__ = "2024.12"

bool = _e.bool  # noqa: A001
int8, int16, int32, int64, uint8 = _e.int8, _e.int16, _e.int32, _e.int64, _e.uint8
float32, float64, complex64, complex128 = _e.float32, _e.float64, _e.complex64, _e.complex128
e, inf, nan, pi, newaxis = math.e, math.inf, math.nan, math.pi, None

__all__ = ["__array_api_version__", "__array_namespace_info__", "bool", "complex128",
           "complex64", "e", "fft", "float32", "float64", "inf", "int16", "int32", "int64",
           "int8", "linalg", "nan", "newaxis", "pi", "uint8"]
__all__ += list(_core_all) + list(_shape_all) + list(_stats_all)

_ = (builtins, np, _D)


def _namespace(self, api_version=None):
    """`x.__array_namespace__()`: this module (ValueError for an unknown api_version)."""
    if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
        raise ValueError(f"Unrecognized array API version: {api_version!r}")
    import sys

    return sys.modules[__name__]


def _to_device(self, device, /, *, stream=None):
    if stream is not None:
        raise ValueError("stream is not supported")
    return self.to(device)


_e.Tensor.to_device = _to_device  # (the standard's array method; torch has none)
