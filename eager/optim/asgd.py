"""`ASGD` and `Rprop`, as `torch.optim.ASGD` / `torch.optim.Rprop`: averaged SGD (Polyak &
Juditsky 1992, with PyTorch's decaying step eta_t and averaging from step t0) and resilient
backpropagation (Riedmiller & Braun 1993: per-element step sizes driven by gradient signs).

Each `step` is PyTorch's single-tensor update in its order of operations, under `no_grad` as
in-place tensor ops; complex parameters are updated through `view_as_real`. Touches `eager`
only.
"""

from __future__ import annotations

from ..creation import full_like, tensor, zeros_like
from ..dispatch import FUNCTIONS
from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _new_step,
    _no_grad_step,
    _to_scalar,
)
from .update_rules import TensorOps

__all__ = ["ASGD", "Rprop"]


def _real(*tensors):
    if tensors[0].is_complex():
        view_as_real = FUNCTIONS["view_as_real"]
        return tuple(view_as_real(t) for t in tensors)
    return tensors


class ASGD(Optimizer):
    """Averaged SGD (`torch.optim.ASGD`).

    Per parameter p with gradient g at step t: g <- -g if maximize; g <- g + weight_decay p;
    p <- p (1 - lambd eta) - eta g; ax <- ax + mu (p - ax) (ax <- p while mu == 1); then
    eta <- lr / (1 + lambd lr t)^alpha and mu <- 1 / max(1, t - t0). State: `step`, `eta`,
    `mu` (0-d tensors), `ax` (the average, of the parameter's shape).

    Args: params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0, foreach=None,
    maximize=False, differentiable=False, capturable=False. ValueError for a negative lr or
    weight_decay; NotImplementedError for differentiable=True.
    """

    def __init__(self, params, lr=1e-2, lambd=1e-4, alpha=0.75, t0=1e6, weight_decay=0,
                 foreach=None, maximize=False, differentiable=False, capturable=False):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "lambd": lambd, "alpha": alpha, "t0": t0,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize,
                    "differentiable": differentiable, "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_no_grad_step
    def step(self, closure=None):
        """One ASGD step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            lambd, alpha, t0 = group["lambd"], group["alpha"], group["t0"]
            wd = group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["eta"] = _new_step().add_(lr)
                    state["mu"] = _new_step().add_(1)
                    state["ax"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, ax = _real(p, grad, state["ax"])
                step = state["step"].add_(1).item()
                if wd != 0:
                    grad = grad.add(param, alpha=wd)
                eta = state["eta"].item()
                param.mul_(1 - lambd * eta)
                param.add_(grad, alpha=-eta)
                if state["mu"].item() != 1:
                    ax.add_(param.sub(ax).mul_(state["mu"]))
                else:
                    ax.copy_(param)
                state["eta"].fill_(lr / ((1 + lambd * lr * step) ** alpha))
                state["mu"].fill_(1 / max(1, step - t0))
        return loss


class Rprop(Optimizer):
    """Resilient backpropagation (`torch.optim.Rprop`).

    Per element, with s = sign(g * g_prev): the step size is multiplied by etaplus where
    s > 0, by etaminus where s < 0 (and the gradient there taken as 0), kept where s == 0,
    then clamped to [step_size_min, step_size_max]; p <- p - sign(g) * step_size; g_prev <- g.
    State: `step`, `prev`, `step_size` (starting at lr).

    Args: params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), and keywords
    capturable=False, foreach=None, maximize=False, differentiable=False. ValueError for a
    negative lr or unless 0 < etaminus < 1 < etaplus.
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable=False, foreach=None, maximize=False, differentiable=False):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "etas": etas, "step_sizes": step_sizes, "foreach": foreach,
                    "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_no_grad_step
    def step(self, closure=None):
        """One Rprop step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        where = FUNCTIONS["where"]
        for group in self.param_groups:
            etaminus, etaplus = group["etas"]
            step_size_min, step_size_max = group["step_sizes"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    lr = _to_scalar(group["lr"])
                    state["step"] = _new_step()
                    state["prev"] = zeros_like(p)
                    state["step_size"] = full_like(p.grad, complex(lr, lr) if p.is_complex()
                                                   else lr)
                state["step"].add_(1)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, prev, step_size = _real(p, grad, state["prev"],
                                                     state["step_size"])
                # (torch's masked assignments, as selections: the same values, without
                # boolean-mask indexing)
                sign = grad.mul(prev).sign()
                flipped = sign.lt(0)
                plus, minus, one, zero = (tensor(v, dtype=sign.dtype)
                                          for v in (etaplus, etaminus, 1.0, 0.0))
                factor = where(sign.gt(0), plus, where(flipped, minus, one))
                step_size.mul_(factor).clamp_(step_size_min, step_size_max)
                grad = where(flipped, zero, grad)
                TensorOps.addcmul_(param, grad.sign(), step_size, value=-1)
                prev.copy_(grad)
        return loss
