"""`Muon`, as `torch.optim.Muon` (Jordan et al. 2024, "Muon: MomentUm Orthogonalized by
Newton-schulz"): SGD momentum on 2-D parameters whose update is replaced by an approximately
orthogonal matrix, five quintic Newton-Schulz iterations computed in bfloat16 as PyTorch's.

A port of PyTorch's `_single_tensor_muon`; runs under `no_grad` as tensor ops. Touches
`eager` only.
"""

from __future__ import annotations

import math

from ..creation import zeros_like
from ..dispatch import FUNCTIONS
from .optimizer import Optimizer, _no_grad_step, _to_scalar

__all__ = ["Muon"]

EPS = 1e-7
DEFAULT_A, DEFAULT_B, DEFAULT_C = 3.4445, -4.7750, 2.0315
DEFAULT_NS_STEPS = 5


def _zeropower_via_newtonschulz(grad, ns_coefficients, ns_steps: int, eps: float):
    """An approximation of U V^T for grad = U S V^T: X <- a X + (b G + c G^2) X with
    G = X X^T, from X = grad / ||grad||, in bfloat16 (on the wide orientation). ValueError
    for ns_steps >= 100, a grad that is not 2-D, or not 3 coefficients."""
    if ns_steps >= 100:
        raise ValueError("Number of steps must be less than 100 for computational efficiency")
    if len(grad.shape) != 2:
        raise ValueError("Input tensor gradient must be a 2D matrix")
    if len(ns_coefficients) != 3:
        raise ValueError("Coefficients must be a tuple of exactly 3 values")
    a, b, c = ns_coefficients
    addmm = FUNCTIONS["addmm"]
    x = grad.bfloat16()
    tall = grad.size(0) > grad.size(1)
    if tall:
        x = x.T
    x = x.div(x.norm().clamp(min=eps))
    for _ in range(ns_steps):
        gram = x @ x.T
        gram_update = addmm(gram, gram, gram, beta=b, alpha=c)
        x = addmm(x, gram_update, x, beta=a)
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn, param_shape) -> float:
    """lr scaled by sqrt(max(1, A / B)) ("original") or 0.2 sqrt(max(A, B))
    ("match_rms_adamw") for an A x B parameter."""
    rows, cols = param_shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        ratio = math.sqrt(max(1, rows / cols))
    elif adjust_lr_fn == "match_rms_adamw":
        ratio = 0.2 * math.sqrt(max(rows, cols))
    else:
        ratio = 1.0
    return lr * ratio


class Muon(Optimizer):
    """Muon (`torch.optim.Muon`), for 2-D parameters only.

    Per parameter: b <- lerp(b, g, 1 - momentum); u = lerp(g, b, momentum) (nesterov) or b;
    O = NewtonSchulz(u); p <- p (1 - lr weight_decay) - adjusted_lr O. State:
    `momentum_buffer`.

    Args: params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
    ns_coefficients=(3.4445, -4.7750, 2.0315), eps=1e-7, ns_steps=5, adjust_lr_fn=None
    ("original" or "match_rms_adamw"). ValueError with PyTorch's messages for negative
    lr/momentum/weight_decay, an unknown adjust_lr_fn, or a parameter that is not 2-D;
    RuntimeError for complex parameters.
    """

    def __init__(self, params, lr=1e-3, weight_decay=0.1, momentum=0.95, nesterov=True,
                 ns_coefficients=(DEFAULT_A, DEFAULT_B, DEFAULT_C), eps=EPS,
                 ns_steps=DEFAULT_NS_STEPS, adjust_lr_fn=None):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 <= momentum:
            raise ValueError(f"momentum should be >= 0 but is: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight decay should be >= 0 but is: {weight_decay}")
        if adjust_lr_fn is not None and adjust_lr_fn not in ("original", "match_rms_adamw"):
            raise ValueError(f"Adjust learning rate function {adjust_lr_fn} is not supported")
        defaults = {"lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                    "nesterov": nesterov, "ns_coefficients": ns_coefficients, "eps": eps,
                    "ns_steps": ns_steps, "adjust_lr_fn": adjust_lr_fn}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                if p.ndim != 2:
                    raise ValueError("Muon only supports 2D parameters whereas we found a "
                                     f"parameter with size: {p.size()}")

    @_no_grad_step
    def step(self, closure=None):
        """One Muon step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            momentum = group["momentum"]
            for p in self._params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Muon does not support complex parameters")
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = zeros_like(p.grad)
                grad, buf = p.grad, state["momentum_buffer"]
                buf.lerp_(grad, 1 - momentum)
                update = grad.lerp(buf, momentum) if group["nesterov"] else buf
                update = _zeropower_via_newtonschulz(update, group["ns_coefficients"],
                                                     group["ns_steps"], group["eps"])
                adjusted_lr = _adjust_lr(lr, group["adjust_lr_fn"], p.shape)
                p.mul_(1 - lr * group["weight_decay"])
                p.add_(update, alpha=-adjusted_lr)
        return loss
