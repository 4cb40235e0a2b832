"""`RMSprop`, as `torch.optim.RMSprop` (the algorithm of
https://pytorch.org/docs/stable/generated/torch.optim.RMSprop.html: Hinton's lecture 6.5,
centered version of Graves 2013).

The update runs under `no_grad` as in-place tensor ops on the parameters and state, in PyTorch's
order of operations. Complex parameters are updated through `view_as_real`, as PyTorch's. The
rule is in `update_rules.FORMS`, shared with the captured graph. Touches `eager` only.
"""

from __future__ import annotations

from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _no_grad_step,
    _to_scalar,
)
from .update_rules import FORMS, run_form

__all__ = ["RMSprop"]


class RMSprop(Optimizer):
    """RMSprop (`torch.optim.RMSprop`).

    Per parameter p with gradient g: g <- -g if maximize; g <- g + weight_decay * p;
    v <- alpha * v + (1 - alpha) * g * g; centered: gavg <- lerp(gavg, g, 1 - alpha) and
    avg = sqrt(v - gavg^2), else avg = sqrt(v); avg <- avg + eps; with momentum mu > 0,
    b <- mu * b + g / avg and p <- p - lr * b, else p <- p - lr * g / avg. State: `step`,
    `square_avg`, `momentum_buffer` (momentum > 0), `grad_avg` (centered).

    Args: params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0, centered=False,
    capturable=False, foreach=None, maximize=False, differentiable=False (foreach and
    capturable are accepted and ignored).

    Raises:
        ValueError: negative lr, eps, momentum, weight_decay or alpha ("Invalid alpha value: -1").
        NotImplementedError: differentiable=True.
    """

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0, momentum=0,
                 centered=False, capturable=False, foreach=None, maximize=False,
                 differentiable=False):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= momentum:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= alpha:
            raise ValueError(f"Invalid alpha value: {alpha}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "momentum": momentum, "alpha": alpha, "eps": eps,
                    "centered": centered, "weight_decay": weight_decay, "capturable": capturable,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = (
        ("momentum", 0), ("centered", False), ("foreach", None), ("maximize", False),
        ("differentiable", False), ("capturable", False),
    )

    @_no_grad_step
    def step(self, closure=None):
        """One RMSprop step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["rmsprop.RMSprop"], closure)
