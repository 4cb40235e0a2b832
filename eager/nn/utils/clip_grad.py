"""`torch.nn.utils`' gradient clipping and flattening of parameters to one vector.

`clip_grad_norm_` (and its deprecated alias `clip_grad_norm`), `clip_grad_value_`,
`get_total_norm`, `clip_grads_with_norm_`, `parameters_to_vector`, `vector_to_parameters`,
with PyTorch's signatures, results and errors (the PyTorch documentation of `torch.nn.utils`).
They run under `no_grad` with eager ops, so gradients on any device work. Touches `eager`
only.
"""

from __future__ import annotations

import math
import warnings

from ... import linalg
from ...creation import tensor
from ...dispatch import FUNCTIONS
from ...grad_mode import no_grad
from ...tensor import Tensor

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_",
           "get_total_norm", "parameters_to_vector", "vector_to_parameters"]


def _tensors(parameters) -> list:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach=None) -> Tensor:
    """The `norm_type`-norm of all `tensors` together (as if concatenated), a 0-d tensor (0.
    when there are none). RuntimeError when it is nan or inf and `error_if_nonfinite`."""
    tensors = [t for t in _tensors(tensors) if t is not None]
    norm_type = float(norm_type)
    if not tensors:
        return tensor(0.0)
    with no_grad():
        norms = [linalg.vector_norm(t, norm_type) for t in tensors]
        dev = tensors[0].device
        total = linalg.vector_norm(FUNCTIONS["stack"]([n.to(dev) for n in norms]), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(f"The total norm of order {norm_type} for gradients from `parameters` "
                           "is non-finite, so it cannot be clipped. To disable this error and "
                           "scale the gradients by the non-finite norm anyway, set "
                           "`error_if_nonfinite=False`")
    return total


def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor, foreach=None) -> None:
    """Scale the gradients by min(1, max_norm / (total_norm + 1e-6)), in place."""
    grads = [p.grad for p in _tensors(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.device, g.dtype))


def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Rescale the gradients of `parameters` (a tensor or an iterable of them) in place so
    that their total `norm_type`-norm is at most `max_norm`; returns the total norm before
    clipping, a 0-d tensor (`torch.nn.utils.clip_grad_norm_`). `norm_type` may be inf."""
    params = _tensors(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach=None) -> Tensor:
    """Deprecated alias of `clip_grad_norm_` (FutureWarning, as torch's)."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters, clip_value: float, foreach=None) -> None:
    """Clamp every gradient of `parameters` to [-clip_value, clip_value], in place."""
    clip_value = float(clip_value)
    with no_grad():
        for p in _tensors(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """The parameters flattened and concatenated into one 1-D tensor (differentiable)."""
    device = None
    flat = []
    for p in _tensors(parameters):
        device = _check_same_device(p, device)
        flat.append(p.reshape(-1))
    return FUNCTIONS["cat"](flat)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Give each parameter its slice of the 1-D `vec`: afterwards the parameters' data are
    views of `vec` (as PyTorch's `param.data = vec[...].view_as(param).data`). TypeError when
    `vec` is not a tensor."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device = None
    pointer = 0
    for p in _tensors(parameters):
        device = _check_same_device(p, device)
        n = p.numel()
        p.data = vec[pointer:pointer + n].view(tuple(p.shape)).data
        pointer += n
