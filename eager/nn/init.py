"""`torch.nn.init`: fill a tensor in place with an initialisation scheme.

Every function works under `no_grad`, writes into the tensor it is given (so a Parameter keeps
its identity), returns it, and draws from eager's random generators (`eager.random`; an explicit
`generator=` may be passed). Formulas and errors follow the PyTorch documentation of
`torch.nn.init` (Glorot & Bengio 2010 for xavier, He et al. 2015 for kaiming, Saxe et al. 2013
for orthogonal). Touches `eager` only.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..grad_mode import no_grad
from ..random import _gen, randperm
from ..tensor import Tensor

__all__ = [
    "calculate_gain", "constant", "constant_", "dirac", "dirac_", "eye", "eye_", "kaiming_normal",
    "kaiming_normal_", "kaiming_uniform", "kaiming_uniform_", "normal", "normal_", "ones_",
    "orthogonal", "orthogonal_", "sparse", "sparse_", "trunc_normal_", "uniform", "uniform_",
    "xavier_normal", "xavier_normal_", "xavier_uniform", "xavier_uniform_", "zeros_",
]

_LINEAR = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
           "conv_transpose3d", "sigmoid")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity: 1 for linear/conv/sigmoid, 5/3 for tanh,
    sqrt(2) for relu, sqrt(2 / (1 + negative_slope**2)) for leaky_relu (slope `param`,
    default 0.01), 3/4 for selu. ValueError for others (`torch.nn.init.calculate_gain`)."""
    if nonlinearity in _LINEAR:
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif not isinstance(param, bool) and isinstance(param, (int, float)):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _fill(tensor: Tensor, values) -> Tensor:
    """Write numpy `values` (broadcast to the tensor's shape) into `tensor` under no_grad."""
    with no_grad():
        tensor.copy_(Tensor._make(np.asarray(values)))  # copy_ casts and moves
    return tensor


def uniform_(tensor: Tensor, a: float = 0.0, b: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of U(a, b)."""
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator=None) -> Tensor:
    """Fill with samples of N(mean, std**2)."""
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor: Tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0,
                  b: float = 2.0, generator=None) -> Tensor:
    """Fill with samples of N(mean, std**2) truncated to [a, b] (absolute bounds, not in
    units of std). Drawn by rejection, then clamped to [a, b]."""
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn("mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
                      "The distribution of values may be incorrect.", stacklevel=2)
    if tensor.is_meta:  # nothing drawn on meta (PyTorch's draws by uniform_, a no-op there)
        return tensor
    rng = _gen(generator)
    n = tensor.numel()
    out = np.empty(0)
    lo, hi = (a - mean) / std, (b - mean) / std
    for _ in range(100):
        draw = rng.standard_normal(max(2 * (n - out.size), 16))
        out = np.concatenate([out, draw[(draw >= lo) & (draw <= hi)]])
        if out.size >= n:
            break
    else:  # a far tail: the inverse-CDF method of the uniform on [cdf(lo), cdf(hi)]
        out = _tail_inverse_cdf(rng, n, lo, hi)
    return _fill(tensor, np.clip(mean + std * out[:n], a, b).reshape(tuple(tensor.shape)))


def _tail_inverse_cdf(rng, n, lo, hi):
    """Truncated N(0, 1) on [lo, hi] by bisection of the CDF (rare: far-tail bounds)."""
    cdf = np.vectorize(lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2))))
    u = rng.uniform(cdf(lo), cdf(hi), n)
    left, right = np.full(n, float(lo)), np.full(n, float(hi))
    for _ in range(60):
        mid = (left + right) / 2
        below = cdf(mid) < u
        left, right = np.where(below, mid, left), np.where(below, right, mid)
    return (left + right) / 2


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fill with the value `val`."""
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fill a 2-D tensor with the identity (ones on the diagonal); ValueError otherwise."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fill a {3, 4, 5}-D convolution weight (out, in, *kernel) with the Dirac delta: each
    group's first min(out // groups, in) channels pass their input through unchanged."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    sizes = tuple(tensor.shape)
    if sizes[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    per_group = sizes[0] // groups
    w = np.zeros(sizes)
    center = tuple(k // 2 for k in sizes[2:])
    for g in range(groups):
        for d in range(min(per_group, sizes[1])):
            w[(g * per_group + d, d, *center)] = 1
    return _fill(tensor, w)


def _calculate_fan_in_and_fan_out(tensor: Tensor) -> tuple[int, int]:
    """(fan_in, fan_out) of a weight (out, in, *kernel): in * prod(kernel), out *
    prod(kernel). ValueError for fewer than 2 dimensions."""
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         "dimensions")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor: Tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        valid = ["fan_in", "fan_out"]
        raise ValueError(f"Mode {mode} not supported, please use one of {valid}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def xavier_uniform_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot initialisation)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(tensor: Tensor, gain: float = 1.0, generator=None) -> Tensor:
    """N(0, std**2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    if 0 in tuple(tensor.shape):
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    fan = _calculate_correct_fan(tensor, mode)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """U(-bound, bound) with bound = gain * sqrt(3 / fan_mode) (He initialisation); `a` is
    the leaky_relu negative slope, `mode` "fan_in" or "fan_out"."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Tensor, a: float = 0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu", generator=None) -> Tensor:
    """N(0, std**2) with std = gain / sqrt(fan_mode) (He initialisation)."""
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)


def orthogonal_(tensor: Tensor, gain: float = 1, generator=None) -> Tensor:
    """A (semi-)orthogonal matrix (the tensor viewed as (size(0), numel / size(0))) from the
    QR decomposition of a normal matrix, signs fixed by diag(R), times `gain`. ValueError for
    fewer than 2 dimensions."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0 or tensor.is_meta:  # (nothing drawn on meta, as PyTorch's)
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _gen(generator).standard_normal((rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, (gain * q).reshape(tuple(tensor.shape)))


def sparse_(tensor: Tensor, sparsity: float, std: float = 0.01, generator=None) -> Tensor:
    """Fill a 2-D tensor as a sparse matrix (Martens 2010): N(0, std**2) values, then in each
    column ceil(sparsity * rows) entries, at rows drawn by `randperm`, set to zero. ValueError
    unless the tensor is 2-D (`torch.nn.init.sparse_`)."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tuple(tensor.shape)
    num_zeros = math.ceil(sparsity * rows)
    if tensor.is_meta:  # (nothing drawn on meta, as PyTorch's)
        return tensor
    with no_grad():
        tensor.normal_(0, std, generator=generator)
        for col in range(cols):
            tensor[randperm(rows)[:num_zeros], col] = 0
    return tensor


def _make_deprecate(meth):
    """`nn.init.<name>` (no underscore): the old spelling of `<name>_`, warning FutureWarning
    as torch's."""
    new_name = meth.__name__
    old_name = new_name[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(f"`nn.init.{old_name}` is now deprecated in favor of "
                      f"`nn.init.{new_name}`.", FutureWarning, stacklevel=2)
        return meth(*args, **kwargs)

    deprecated_init.__doc__ = f"{old_name}(...): deprecated, see `nn.init.{new_name}`."
    deprecated_init.__name__ = old_name
    return deprecated_init


uniform = _make_deprecate(uniform_)
normal = _make_deprecate(normal_)
constant = _make_deprecate(constant_)
eye = _make_deprecate(eye_)
dirac = _make_deprecate(dirac_)
xavier_uniform = _make_deprecate(xavier_uniform_)
xavier_normal = _make_deprecate(xavier_normal_)
kaiming_uniform = _make_deprecate(kaiming_uniform_)
kaiming_normal = _make_deprecate(kaiming_normal_)
orthogonal = _make_deprecate(orthogonal_)
sparse = _make_deprecate(sparse_)
