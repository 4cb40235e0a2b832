"""`Adagrad`, as `torch.optim.Adagrad` (the algorithm of
https://pytorch.org/docs/stable/generated/torch.optim.Adagrad.html: Duchi et al. 2011).

Unlike the other optimizers, Adagrad's state (`step`, `sum`) is created for every parameter in
the constructor, as PyTorch's (and, for groups added later, at their first step). The update
runs under `no_grad` as in-place tensor ops. Complex parameters are updated through
`view_as_real`, as PyTorch's. The rule is in `update_rules.FORMS`, shared with the captured
graph. Touches `eager` only.
"""

from __future__ import annotations

from ..creation import full_like
from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _new_step,
    _no_grad_step,
    _to_scalar,
)
from .update_rules import FORMS, run_form

__all__ = ["Adagrad"]


class Adagrad(Optimizer):
    """Adagrad (`torch.optim.Adagrad`).

    Per parameter p with gradient g, at step t (from 1): g <- -g if maximize;
    g <- g + weight_decay * p; clr = lr / (1 + (t - 1) * lr_decay); s <- s + g * g;
    p <- p - clr * g / (sqrt(s) + eps). State: `step`, `sum` (starting at
    initial_accumulator_value, of the parameter's shape and dtype).

    Args: params, lr=1e-2, lr_decay=0, weight_decay=0, initial_accumulator_value=0,
    eps=1e-10, foreach=None, and keywords maximize=False, differentiable=False, fused=None
    (foreach and fused are accepted and ignored).

    Raises:
        ValueError: a negative lr, lr_decay, weight_decay, initial_accumulator_value or eps
            ("Invalid lr_decay value: -1").
        NotImplementedError: differentiable=True.
    """

    def __init__(self, params, lr=1e-2, lr_decay=0, weight_decay=0,
                 initial_accumulator_value=0, eps=1e-10, foreach=None, *, maximize=False,
                 differentiable=False, fused=None):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= lr_decay:
            raise ValueError(f"Invalid lr_decay value: {lr_decay}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not 0.0 <= initial_accumulator_value:
            raise ValueError("Invalid initial_accumulator_value value: "
                             f"{initial_accumulator_value}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "lr_decay": lr_decay, "eps": eps, "weight_decay": weight_decay,
                    "initial_accumulator_value": initial_accumulator_value, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable, "fused": fused}
        super().__init__(params, defaults)
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group)

    def _init_state(self, p, group) -> None:
        state = self.state[p]
        state["step"] = _new_step()
        init = group["initial_accumulator_value"]
        state["sum"] = full_like(p, complex(init, init) if p.is_complex() else init)

    _group_defaults = (
        ("foreach", None), ("maximize", False), ("differentiable", False), ("fused", None),
    )

    @_no_grad_step
    def step(self, closure=None):
        """One Adagrad step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["adagrad.Adagrad"], closure)
