"""`Adam` and `AdamW`, as `torch.optim.Adam` / `torch.optim.AdamW` (the algorithms of
https://pytorch.org/docs/stable/generated/torch.optim.Adam.html and AdamW.html: Kingma & Ba
2014, AMSGrad of Reddi et al. 2018, decoupled weight decay of Loshchilov & Hutter 2019).

The update is `update_rules.adam_update` (the rule the captured graph records too), run under
`no_grad` as in-place ops on the parameters and state (`lerp_`, `mul_`, `addcmul_`,
`addcdiv_`), in PyTorch's order of operations so that float32 results agree with PyTorch's to
rounding. Complex parameters are updated through `view_as_real`, as PyTorch's. Touches
`eager` only.
"""

from __future__ import annotations

from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _no_grad_step,
    _to_scalar,
)
from .update_rules import FORMS, run_form

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
        """One Adam step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["adam.Adam"], closure)


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
