"""eager: tensors that run immediately on numpy, with define-by-run autograd.

`import eager as torch` runs simple PyTorch code: `eager.tensor`, `eager.randn`, dtypes
(`eager.float32`), every registry op as a function and a Tensor method (generated from
`ir.REGISTRY` by `eager.dispatch`), `eager.no_grad`, `eager.autograd`, `eager.nn.functional`,
and `eager.compile` (a lazy alias of `capture.compile`). Imports only `ir`.
"""

from __future__ import annotations

from ir.dtypes import (
    DType as dtype, bool_ as bool, float32, float64, int64, get_default_dtype,
    set_default_dtype,
)

from . import autograd, dispatch
from .creation import (
    arange, from_numpy, full, manual_seed, ones, ones_like, rand, randn, tensor, zeros,
    zeros_like, as_tensor,
)
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .printing import set_printoptions
from .tensor import Size, Tensor, device

float = float32  # noqa: A001  (PyTorch's aliases)
double = float64
long = int64

dispatch.install(globals())

from . import indexing  # noqa: E402

indexing.install(Tensor)

from . import nn  # noqa: E402


def compile(fn=None, **kwargs):  # noqa: A001
    """Alias of `capture.compile` (imported on first use to keep `ir <- eager <- capture`)."""
    from capture import compile as _compile

    return _compile(fn, **kwargs)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)
