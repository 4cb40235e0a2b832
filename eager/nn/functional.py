"""`eager.nn.functional`: PyTorch's functional API over registry ops (no new ops here).

Each name is the registry function (`ir/ops/activations.py`, `reductions.py`, ...) or a thin
wrapper adding what the functional form has on top: `inplace=` (the result is written into the
input, as `Tensor.<op>_` does: same checks, version bump) and PyTorch's functional defaults
(`softmax(dim=None)` picks PyTorch's legacy implicit dim). Semantics: torch.nn.functional.
"""

from __future__ import annotations

from ..dispatch import FUNCTIONS

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


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """torch.nn.functional.softmin: softmax(-input)."""
    return softmax(FUNCTIONS["neg"](input), dim, dtype=dtype)


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """torch.nn.functional.normalize: input / max(norm_p(input, dim), eps)."""
    norm = FUNCTIONS["norm"](input, p, dim, keepdim=True)
    return FUNCTIONS["div"](input, FUNCTIONS["clamp_min"](norm, eps))


pad = FUNCTIONS["pad"]
linear = FUNCTIONS["linear"]
