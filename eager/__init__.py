"""eager: tensors that run immediately on numpy, with define-by-run autograd.

`import eager as torch` runs simple PyTorch code: `eager.tensor`, `eager.randn`, dtypes
(`eager.float32`), every registry op as a function and a Tensor method (generated from
`ir.REGISTRY` by `eager.dispatch`), `eager.no_grad`, `eager.autograd`, `eager.nn.functional`,
and `eager.compile` (a lazy alias of `capture.compile`). Imports only `ir`.
"""

from __future__ import annotations

import importlib as _importlib

from builtins import bool as builtins_bool
from builtins import int as builtins_int

from ir.dtypes import (
    DType as dtype,
)
from ir.dtypes import (
    bfloat16,
    complex64,
    complex128,
    finfo,
    float16,
    float32,
    float64,
    get_default_dtype,
    iinfo,
    int8,
    int16,
    int32,
    int64,
    promote_types,
    set_default_dtype,
    uint8,
)
from ir.dtypes import (
    bool_ as bool,
)
from ir.dtypes import can_cast as _can_cast
from ir.dtypes import result_type as _rt

from . import autograd, dispatch, fastpaths  # (fastpaths registers into dispatch)
from . import random as _random
from .creation import (
    arange,
    as_tensor,
    asarray,
    empty,
    empty_like,
    eye,
    from_numpy,
    full,
    full_like,
    linspace,
    logspace,
    ones,
    ones_like,
    tensor,
    zeros,
    zeros_like,
)
from . import cuda  # noqa: E402  (torch.cuda: a module, so `import torch.cuda` works)
from .device import device, get_default_device, set_default_device
from .grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .printing import get_printoptions, printoptions, set_printoptions
from .random import (
    Generator,
    bernoulli,
    default_generator,
    get_rng_state,
    initial_seed,
    manual_seed,
    multinomial,
    normal,
    rand,
    rand_like,
    randint,
    randint_like,
    randn,
    randn_like,
    randperm,
    seed,
    set_rng_state,
)
from .serialization import load, save
from .tensor import Size, Tensor, UntypedStorage

try:
    from .grad_mode import inference_mode, is_inference_mode_enabled
except ImportError:  # the autograd helper adds these
    pass

# PyTorch's dtype aliases
float = float32
double = float64
half = float16
cfloat = complex64
cdouble = complex128
long = int64
int = int32
short = int16


def can_cast(from_, to) -> builtins_bool:
    """`torch.can_cast(from_, to)`: whether casting may not lose category (see in-place ops)."""
    return _can_cast(from_, to)


def result_type(tensor1, tensor2) -> dtype:
    """`torch.result_type`: the dtype an arithmetic op on these operands would produce."""
    ops = [(x.dtype, x.ndim) if isinstance(x, Tensor) else x for x in (tensor1, tensor2)]
    return _rt(*ops)


dispatch.install(globals())
_random.install(Tensor)

from . import indexing

indexing.install(Tensor)

from . import (
    amp,
    backends,
    compiler,
    fft,
    linalg,
    nn,
    optim,
    utils,
)

linalg.install(globals(), Tensor)  # torch.lu, torch.cholesky, chain_matmul...
from .amp.autocast_mode import (
    autocast,
    autocast_decrement_nesting,
    autocast_increment_nesting,
    clear_autocast_cache,
    get_autocast_cpu_dtype,
    get_autocast_dtype,
    get_autocast_gpu_dtype,
    is_autocast_cache_enabled,
    is_autocast_cpu_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_cpu_dtype,
    set_autocast_cpu_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
    set_autocast_gpu_dtype,
)

from .nn.aten_losses import (
    binary_cross_entropy_with_logits,
    cosine_embedding_loss,
    ctc_loss,
    hinge_embedding_loss,
    kl_div,
    margin_ranking_loss,
    poisson_nll_loss,
    triplet_margin_loss,
)
from .nn.distance import cosine_similarity, dist, pairwise_distance
from . import special
from .special import mvlgamma, sinc, xlogy

special.install(Tensor)

from . import extra, extra_api  # issue 16's sweep: compositions and naming (install last)

extra.install(globals(), Tensor)
extra_api.install(globals(), Tensor)

from . import extra_foreach  # noqa: E402  (torch._foreach_*)

extra_foreach.install(globals())

from . import version  # noqa: E402  (torch.version / torch.__version__)
from .version import __version__  # noqa: E402

from . import dlpack as _dlpack
from .dlpack import from_dlpack

_dlpack.install(Tensor)

Tensor.dist = dist


_COMPILE_MODES = ("default", "lite", "reduce-overhead", "max-autotune-no-cudagraphs",
                  "max-autotune")
_BACKEND_NAMES = {"inductor": "auto", "aot_eager": "eager"}  # torch's names -> wick's


def compile(fn=None, *, fullgraph=False, dynamic=None, backend="auto", mode=None,
            options=None, disable=False):
    """`torch.compile`: `capture.compile` (imported on first use to keep `ir <- eager <-
    capture`). torch's backend names "inductor" and "aot_eager" are wick's "auto" and
    "eager"; `mode` (one of torch's modes) and `options` are tuning hints wick's compiler does
    not take (checked as torch checks them); `disable=True` returns `fn` itself."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be "
                           "specified at the same time.")
    if mode is not None and mode not in _COMPILE_MODES:
        raise RuntimeError(f"Unrecognized mode={mode}, should be one of: "
                           f"{', '.join(_COMPILE_MODES)}")
    if disable:
        return fn if fn is not None else (lambda f: f)
    from capture import compile as _compile  # lazy: capture imports eager (ir <- eager <- capture)

    if isinstance(backend, str):
        backend = _BACKEND_NAMES.get(backend, backend)
    return _compile(fn, backend=backend, fullgraph=fullgraph, dynamic=dynamic)


def is_tensor(obj) -> bool:
    return isinstance(obj, Tensor)


def _assert(condition, message):
    """`torch._assert`: a symbolically traceable `assert condition, message` (timm's
    `_assert(H == self.img_size[0], ...)`); AssertionError with `message` when falsy."""
    assert condition, message


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> builtins_bool:
    """`torch.allclose`: whether `isclose` holds everywhere (broadcast operands, same dtype;
    RuntimeError otherwise, as `isclose`)."""
    close = dispatch.FUNCTIONS["isclose"](input, other, rtol=rtol, atol=atol,
                                          equal_nan=equal_nan)
    return builtins_bool(close.all().item())


def equal(input, other) -> builtins_bool:
    """`torch.equal`: same shape and the same values (False for other shapes)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return builtins_bool((input == other).all().item())


def numel(input) -> builtins_int:
    """`torch.numel`: the number of elements."""
    return input.numel()


Tensor.allclose = allclose  # (Tensor.allclose / Tensor.equal, as PyTorch's methods)
Tensor.equal = equal


def __array_namespace__(api_version=None):
    """The Python array API namespace of eager tensors, `eager.array_api` (also
    `x.__array_namespace__()`); ValueError for an api_version other than 2021.12-2024.12."""
    # (imported on first use, not with eager: the namespace is built on eager's public names)
    xp = _importlib.import_module(__name__ + ".array_api")
    return xp._namespace(None, api_version)


Tensor.__array_namespace__ = lambda self, api_version=None: __array_namespace__(api_version)
Tensor.__pos__ = positive  # (unary plus: the tensor itself; RuntimeError for bool, as torch's)


from . import legacy_tensors as _legacy_tensors  # noqa: E402

_legacy_tensors.install(globals(), cuda)  # torch.FloatTensor..., Tensor.type()
from . import profiler  # noqa: E402  (torch.profiler; needs dispatch)
from .autograd import profiler as _autograd_profiler  # noqa: E402,F401  (torch.autograd.profiler)
from . import multiprocessing  # noqa: E402  (torch.multiprocessing; Tensor.share_memory_)

multiprocessing.install(Tensor, nn.Module)
