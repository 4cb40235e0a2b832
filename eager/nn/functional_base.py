"""The core of `eager.nn.functional`: activations, softmax, dropout, embedding, layer_norm
and the losses, PyTorch's functional API over registry ops (no new ops here).

Each name is the registry function (`ir/ops/activations.py`, `reductions.py`, ...) or a thin
wrapper adding what the functional form has on top: `inplace=` (the result is written into the
input, as `Tensor.<op>_` does: same checks, version bump) and PyTorch's functional defaults
(`softmax(dim=None)` picks PyTorch's legacy implicit dim). Compositions as PyTorch writes them:
`dropout`, `one_hot`, `embedding`, `layer_norm` here, the losses in `losses.py` (re-exported).
The functional files beside the Modules (`mha.py`, `dropout.py`, `misc_layers.py`) import this
file, never `eager.nn.functional`, which re-exports them all. Semantics:
torch.nn.functional. Touches `eager` only.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from ..amp.policy import autocast_function
from ..creation import as_tensor
from ..dispatch import FUNCTIONS
from ..grad_mode import no_grad
from ..random import rand
from .losses import *  # the losses (mse_loss, cross_entropy, ...), re-exported
from .losses import value_check

gelu = FUNCTIONS["gelu"]
sigmoid = FUNCTIONS["sigmoid"]
tanh = FUNCTIONS["tanh"]
softsign = FUNCTIONS["softsign"]
tanhshrink = FUNCTIONS["tanhshrink"]
logsigmoid = FUNCTIONS["logsigmoid"]
softplus = FUNCTIONS["softplus"]


def _inplace(input, result):
    """Write `result` into `input` (the `inplace=True` form): PyTorch's in-place checks."""
    input._check_inplace()
    return input._inplace_update(result)


def _activation(name, doc):
    fn = FUNCTIONS[name]

    def wrapper(input, *args, inplace=False, **kwargs):
        out = fn(input, *args, **kwargs)
        return _inplace(input, out) if inplace else out

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__doc__ = (f"{name}(input, ..., inplace=False) -> Tensor: torch.nn.functional."
                       f"{name}. {doc} With `inplace=True` the result is written into `input` "
                       "(RuntimeError for a leaf that requires grad or a dtype that cannot "
                       "hold the result).")
    return wrapper


relu = _activation("relu", "max(input, 0); RuntimeError for bool inputs.")
relu6 = _activation("relu6", "min(max(input, 0), 6).")
leaky_relu = _activation("leaky_relu", "input if > 0 else negative_slope * input "
                         "(negative_slope=0.01); floating inputs only.")
elu = _activation("elu", "input if > 0 else alpha * (exp(input) - 1) (alpha=1.0).")
selu = _activation("selu", "scale * elu(input, alpha) with the SELU constants.")
celu = _activation("celu", "max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).")
hardtanh = _activation("hardtanh", "clamp(input, min_val=-1.0, max_val=1.0).")
hardsigmoid = _activation("hardsigmoid", "relu6(x + 3) / 6.")
hardswish = _activation("hardswish", "x * relu6(x + 3) / 6.")
silu = _activation("silu", "x * sigmoid(x).")
mish = _activation("mish", "x * tanh(softplus(x)).")
threshold = _activation("threshold", "input if input > threshold else value; the result keeps "
                        "the input's dtype.")


def relu_(input):
    """In-place relu: `torch.nn.functional.relu_`."""
    return relu(input, inplace=True)


def elu_(input, alpha=1.0):
    return elu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope=0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val=-1.0, max_val=1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold, value):
    return globals()["threshold"](input, threshold, value, inplace=True)


def _legacy_dim(ndim):
    """PyTorch's `_get_softmax_dim`: the dim used when softmax is called without one."""
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.softmax: exp(x) / sum(exp(x)) along `dim` (computed after casting
    to `dtype` when given); without `dim`, PyTorch's legacy choice (0 for 0-, 1- and 3-D
    inputs, else 1)."""
    return FUNCTIONS["softmax"](input, _legacy_dim(input.ndim) if dim is None else dim, dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.log_softmax: x - logsumexp(x) along `dim` (see `softmax`)."""
    return FUNCTIONS["log_softmax"](input, _legacy_dim(input.ndim) if dim is None else dim,
                                    dtype)


@autocast_function("prelu")
def prelu(input, weight):
    """x if x > 0 else weight * x: torch.nn.functional.prelu. `weight` (1,) or (C,), applied
    along dim 1 (channels) of an input of >= 2 dims; RuntimeError for a mismatched size."""
    w = weight
    if weight.numel() != 1:
        c = input.shape[1] if input.ndim >= 2 else input.shape[0] if input.ndim == 1 else 1
        if weight.numel() != c:
            raise RuntimeError(f"Mismatch of parameter numbers and input channel size. Found "
                               f"parameter numbers = {weight.numel()} and channel size = {c}.")
        if input.ndim >= 2:
            w = weight.reshape((c,) + (1,) * (input.ndim - 2))
    return FUNCTIONS["where"](input > 0, input, w * input)


def glu(input, dim=-1):
    """a * sigmoid(b), (a, b) the two halves of `input` along `dim`: torch.nn.functional.glu.
    RuntimeError for an odd size or a 0-d input."""
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    if input.shape[dim] % 2:
        raise RuntimeError(f"Halving dimension must be even, but dimension {dim % input.ndim} "
                           f"is size {input.shape[dim]}")
    a, b = input.chunk(2, dim)
    return a * sigmoid(b)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.softmin: softmax(-input)."""
    return softmax(FUNCTIONS["neg"](input), dim, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """torch.nn.functional.normalize: input / max(norm_p(input, dim), eps)."""
    norm = FUNCTIONS["norm"](input, p, dim, keepdim=True)
    return FUNCTIONS["div"](input, FUNCTIONS["clamp_min"](norm, eps))


pad = FUNCTIONS["pad"]
linear = FUNCTIONS["linear"]


# ---------------------------------------------------------------- dropout and layers


def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability `p` and scale the others by 1 / (1 - p)
    (`torch.nn.functional.dropout`); the mask comes from eager's default generator
    (`eager.manual_seed`). `training=False` or p = 0 return `input` itself; p = 1 gives zeros
    (input * 0). ValueError for p outside [0, 1]; RuntimeError for a non-floating input."""
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{input.dtype.title}")
    if p == 1:
        out = input * 0.0
    else:
        keep = rand(tuple(input.shape), dtype=D.float64, device=input.device) >= p
        out = input * FUNCTIONS["div"](keep.to(input.dtype), 1.0 - p)
    return _inplace(input, out) if inplace else out


def one_hot(tensor, num_classes=-1):
    """int64 tensor of shape tensor.shape + (num_classes,) with 1 at each class index
    (`torch.nn.functional.one_hot`); num_classes = -1 infers max + 1. RuntimeError for a
    tensor that is not int64, negative classes, classes >= num_classes, or an empty tensor
    with num_classes = -1."""
    if tensor.dtype is not D.int64:
        raise RuntimeError("one_hot is only applicable to index tensor of type LongTensor.")
    a = tensor._host()
    if num_classes == -1:
        if a.size == 0:
            raise RuntimeError("Can not infer total number of classes from empty tensor.")
        num_classes = int(a.max()) + 1
    if a.size and a.min() < 0:
        raise RuntimeError("Class values must be non-negative.")
    if (a.size and a.max() >= num_classes) or num_classes < 0:
        raise RuntimeError("Class values must be smaller than num_classes.")
    out = (a[..., None] == np.arange(num_classes)).astype(np.int64)
    return as_tensor(out, device=tensor.device)


def _embedding_renorm(weight, idx, max_norm, norm_type) -> None:
    """`torch.embedding_renorm_`: rows of `weight` used by the lookup (int tensor `idx`) whose
    `norm_type`-norm exceeds `max_norm` are scaled in place to norm max_norm (no gradient
    recorded). A repeated index copies the same new row again (no host read of the indices,
    so capture keeps it in the graph)."""
    with no_grad():
        idx = idx.reshape(-1)
        sel = FUNCTIONS["index_select"](weight, 0, idx)
        norms = FUNCTIONS["linalg_vector_norm"](sel, norm_type, 1, True)
        scale = FUNCTIONS["where"](norms > max_norm, max_norm / (norms + 1e-7), 1.0)
        weight.index_copy_(0, idx, sel * scale)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Rows of `weight` (num_embeddings, embedding_dim) at the int64/int32 indices `input`:
    result input.shape + (embedding_dim,) (`torch.nn.functional.embedding`). The gradient of
    row `padding_idx` is zero; `max_norm` renormalises the used rows in place first. The
    weight gradient is dense (`sparse=True` is accepted). RuntimeError for other index dtypes
    or a weight that is not 2-D; IndexError for indices outside [0, num_embeddings);
    AssertionError for padding_idx out of range. `scale_grad_by_freq` divides each looked-up
    row's gradient by the number of times its index occurs in `input` (PyTorch's
    embedding_backward)."""
    if weight.ndim != 2:
        raise RuntimeError("'weight' must be 2-D")
    if input.dtype not in (D.int64, D.int32):
        raise RuntimeError("Expected tensor for argument #1 'indices' to have one of the "
                           "following scalar types: Long, Int; but got "
                           f"{input.dtype.title} instead (while checking arguments for "
                           "embedding)")
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx % num
    check_embedding_indices(input, num)
    if max_norm is not None:
        _embedding_renorm(weight, input, max_norm, norm_type)
    idx = input.reshape(-1)
    rows = FUNCTIONS["index_select"](weight, 0, idx)
    if padding_idx is not None and weight.requires_grad:
        pad = (idx == padding_idx).unsqueeze(1)
        rows = FUNCTIONS["where"](pad, rows.detach(), rows)
    if scale_grad_by_freq and weight.requires_grad:
        # same values; the gradient reaching each row is divided by its index's count
        freq = FUNCTIONS["index_select"](FUNCTIONS["bincount"](idx, minlength=num), 0, idx)
        scale = (1.0 / freq.to(weight.dtype)).unsqueeze(1)
        fixed = rows.detach()
        rows = fixed + (rows - fixed) * scale
    return rows.reshape(tuple(input.shape) + (weight.shape[1],))


@value_check
def check_embedding_indices(input, num_embeddings: int) -> None:
    """IndexError "index out of range in self" for an index outside [0, num_embeddings)."""
    a = input._host()
    if a.size and (a.min() < 0 or a.max() >= num_embeddings):
        raise IndexError("index out of range in self")


def _same_sizes(a, b) -> bool:
    """a == b for two sequences of ints, written element by element so that capture folds it
    when one side is a list the caller built (a tuple made from it is not a constant)."""
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x != y:
            return False
    return True


@autocast_function("layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(x - mean) / sqrt(var + eps) * weight + bias over the last len(normalized_shape) dims
    (biased variance; `torch.nn.functional.layer_norm`). weight and bias: normalized_shape.
    RuntimeError when input's trailing dims, weight or bias do not match normalized_shape, or
    normalized_shape is empty; NotImplementedError for non-floating input."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and not _same_sizes(t.shape, shape):
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    k = len(shape)
    if input.ndim < k or not _same_sizes(input.shape[input.ndim - k:], shape):
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    if not input.dtype.is_floating_point:
        raise NotImplementedError(f'"LayerNormKernelImpl" not implemented for '
                                  f"'{input.dtype.title}'")
    return FUNCTIONS["_layer_norm"](input, weight, bias, k=k, eps=eps)  # (ir/ops/transformer)
