"""`Adam` and `AdamW`, as `torch.optim.Adam` / `torch.optim.AdamW` (the algorithms of
https://pytorch.org/docs/stable/generated/torch.optim.Adam.html and AdamW.html: Kingma & Ba
2014, AMSGrad of Reddi et al. 2018, decoupled weight decay of Loshchilov & Hutter 2019).

The update runs under `no_grad` as in-place tensor ops on the parameters and state (`lerp_`,
`mul_`, `addcmul_`, `addcdiv_`; the three-operand ones through optimizer.py's unfused forms,
equal to them bit for bit), in PyTorch's order of operations so that float32 results agree
with PyTorch's to rounding. Complex parameters are updated through `view_as_real`, as
PyTorch's. Touches `eager` only.
"""

from __future__ import annotations

from ..creation import zeros_like
from ..dispatch import FUNCTIONS
from .arrays import adam_update
from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _new_step,
    _no_grad_step,
    _to_scalar,
    addcdiv_,
    addcmul_,
    lerp_,
)

__all__ = ["Adam", "AdamW"]


class Adam(Optimizer):
    """Adam (`torch.optim.Adam`).

    Per parameter p with gradient g, at step t (t from 1): g <- -g if maximize; with
    weight_decay l, g <- g + l * p (or, decoupled, p <- p * (1 - lr * l)); m <- lerp(m, g,
    1 - beta1); v <- beta2 * v + (1 - beta2) * g * g; with amsgrad, v_max <- max(v_max, v) and
    v_max replaces v below; p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) +
    eps). State: `step` (a 0-d float tensor), `exp_avg`, `exp_avg_sq`, `max_exp_avg_sq`
    (amsgrad), of the parameter's shape and dtype.

    Args: params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, and
    keywords foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
    decoupled_weight_decay=False (foreach, capturable and fused are accepted and ignored).

    Raises:
        ValueError: negative lr, eps or weight_decay, or a beta outside [0, 1)
            ("Invalid beta parameter at index 0: 1.0").
        NotImplementedError: differentiable=True.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 amsgrad=False, *, foreach=None, maximize=False, capturable=False,
                 differentiable=False, fused=None, decoupled_weight_decay=False):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        betas = tuple(_to_scalar(b) for b in betas)
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "amsgrad": amsgrad, "maximize": maximize, "foreach": foreach,
                    "capturable": capturable, "differentiable": differentiable, "fused": fused,
                    "decoupled_weight_decay": decoupled_weight_decay}
        super().__init__(params, defaults)

    _group_defaults = (
        ("amsgrad", False), ("maximize", False), ("foreach", None), ("capturable", False),
        ("differentiable", False), ("decoupled_weight_decay", False), ("fused", None),
    )

    @_no_grad_step
    def step(self, closure=None):
        """One Adam step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        view_as_real = FUNCTIONS["view_as_real"]
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            wd, eps, amsgrad = group["weight_decay"], group["eps"], group["amsgrad"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                    if amsgrad:
                        state["max_exp_avg_sq"] = zeros_like(p)
                elif not amsgrad and adam_update(p, state, lr, beta1, beta2, eps, wd,
                                                 group["decoupled_weight_decay"],
                                                 group["maximize"]):
                    continue  # (the same numbers on the arrays: optim/arrays.py)
                grad = -p.grad if group["maximize"] else p.grad
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                max_sq = state.get("max_exp_avg_sq") if amsgrad else None
                step_t = state["step"]
                step_t.add_(1)
                param = p
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                if param.is_complex():
                    grad, exp_avg, exp_avg_sq, param = (
                        view_as_real(t) for t in (grad, exp_avg, exp_avg_sq, param))
                    if max_sq is not None:
                        max_sq = view_as_real(max_sq)
                lerp_(exp_avg, grad, 1 - beta1)
                addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
                step = step_t.item()
                step_size = lr / (1 - beta1 ** step)
                bias_correction2_sqrt = (1 - beta2 ** step) ** 0.5
                if amsgrad:
                    max_sq.copy_(FUNCTIONS["maximum"](max_sq, exp_avg_sq))
                    denom = (max_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                else:
                    denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
                addcdiv_(param, exp_avg, denom, value=-step_size)
        return loss


class AdamW(Adam):
    """AdamW (`torch.optim.AdamW`): Adam with decoupled weight decay, p <- p * (1 - lr *
    weight_decay) before the Adam update (the decay does not enter the moments). Same
    arguments, state and errors as `Adam`, with weight_decay=1e-2 by default."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2,
                 amsgrad=False, *, maximize=False, foreach=None, capturable=False,
                 differentiable=False, fused=None):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, foreach=foreach,
                         maximize=maximize, capturable=capturable,
                         differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group["decoupled_weight_decay"] = True
