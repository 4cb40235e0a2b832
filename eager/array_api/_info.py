"""`__array_namespace_info__()`: what this namespace supports (the standard's inspection API)."""

from __future__ import annotations

import eager as _e
from ir import dtypes as _D

from ._core import isdtype

__all__ = ["__array_namespace_info__"]


class _Info:
    def capabilities(self):
        return {"boolean indexing": True, "data-dependent shapes": True,
                "max dimensions": 64}

    def default_device(self):
        return _e.device("cpu")

    def devices(self):
        out = [_e.device("cpu")]
        if _e.cuda.is_available():
            out += [_e.device(f"cuda:{i}") for i in range(_e.cuda.device_count())]
        return out

    def default_dtypes(self, *, device=None):
        f = _D.get_default_dtype()
        return {"real floating": f,
                "complex floating": _e.complex128 if f is _e.float64 else _e.complex64,
                "integral": _e.int64, "indexing": _e.int64}

    def dtypes(self, *, device=None, kind=None):
        every = {"bool": _e.bool, "int8": _e.int8, "int16": _e.int16, "int32": _e.int32,
                 "int64": _e.int64, "uint8": _e.uint8, "float32": _e.float32,
                 "float64": _e.float64, "complex64": _e.complex64,
                 "complex128": _e.complex128}
        if kind is None:
            return every
        return {k: v for k, v in every.items() if isdtype(v, kind)}


def __array_namespace_info__():
    return _Info()
