"""`Adadelta` and `Adafactor`, as `torch.optim.Adadelta` / `torch.optim.Adafactor`: the
adaptive methods that scale steps by running averages without Adam's bias correction
(Zeiler 2012; Shazeer & Stern 2018 with PyTorch's variant: lr-relative step size rho_t, no
momentum, factored second moments for matrices).

Each `step` is PyTorch's single-tensor update in its order of operations, under `no_grad` as in-
place tensor ops. The rule is in `update_rules.FORMS`, shared with the captured graph. Touches
`eager` only.
"""

from __future__ import annotations

from ir.dtypes import finfo

from ..creation import zeros_like
from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _new_step,
    _no_grad_step,
    _to_scalar,
)
from .update_rules import FORMS, run_form

__all__ = ["Adadelta", "Adafactor"]


class Adadelta(Optimizer):
    """Adadelta (`torch.optim.Adadelta`).

    Per parameter p with gradient g: g <- -g if maximize; g <- g + weight_decay * p;
    v <- rho v + (1 - rho) g^2; delta = sqrt(u + eps) / sqrt(v + eps) * g;
    u <- rho u + (1 - rho) delta^2; p <- p - lr * delta. State: `step`, `square_avg` (v),
    `acc_delta` (u).

    Args: params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, and keywords
    capturable=False, maximize=False, differentiable=False. ValueError for a negative
    lr/eps/weight_decay or rho outside [0, 1]; NotImplementedError for differentiable=True.
    """

    def __init__(self, params, lr=1.0, rho=0.9, eps=1e-6, weight_decay=0, foreach=None, *,
                 capturable=False, maximize=False, differentiable=False):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "rho": rho, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "capturable": capturable, "foreach": foreach,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_no_grad_step
    def step(self, closure=None):
        """One Adadelta step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["adadelta.Adadelta"], closure)


class Adafactor(Optimizer):
    """Adafactor (`torch.optim.Adafactor`, PyTorch's variant of Shazeer & Stern 2018).

    At step t: beta2_t = 1 - t^beta2_decay; rho_t = min(lr, 1 / sqrt(t)); alpha = max(eps2,
    RMS(p)) * rho_t; p <- p * (1 - lr * weight_decay). For a gradient of 2+ dimensions the
    second moment is factored: row_var <- lerp(row_var, mean(g^2, -1), 1 - beta2_t), col_var
    likewise over dim -2, and var = row_var @ col_var / max(mean(row_var, -2), eps1); for a
    vector, variance <- lerp(variance, g^2, 1 - beta2_t). u = g / sqrt(max(var, eps1^2));
    p <- p - alpha / max(1, RMS(u) / d) * u. State: `step`, `row_var` and `col_var` (the
    gradient's shape with dim -1, resp. -2, of size 1) or `variance`.

    Args: params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3) (eps1 None: the dtype's
    machine epsilon), d=1.0, weight_decay=0.0, keywords foreach=None, maximize=False.
    Raises ValueError with PyTorch's messages for out-of-range arguments; RuntimeError for
    complex parameters.
    """

    def __init__(self, params, lr=1e-2, beta2_decay=-0.8, eps=(None, 1e-3), d=1.0,
                 weight_decay=0.0, *, foreach=None, maximize=False):
        if not 0.0 <= _to_scalar(lr):
            raise ValueError(f"Learning rate should be >= 0 but is: {lr}")
        if not 0.0 >= beta2_decay:
            raise ValueError(f"beta2_decay should be <= 0 but is: {beta2_decay}")
        if eps[0] is not None and not 0.0 <= eps[0]:
            raise ValueError(f"epsilon1 should be >= 0 but is: {eps[0]}")
        if not 0.0 <= eps[1]:
            raise ValueError(f"epsilon2 should be >= 0 but is: {eps[1]}")
        if not 1.0 <= d:
            raise ValueError(f"Clipping threshold d should be >= 1 but is: {d}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"weight_decay should be >= 0 but is: {weight_decay}")
        defaults = {"lr": lr, "beta2_decay": beta2_decay, "eps": eps, "d": d,
                    "weight_decay": weight_decay, "foreach": foreach, "maximize": maximize}
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None),)

    def _init_state(self, state, grad) -> None:
        state["step"] = _new_step()
        if grad.ndim > 1:
            row = list(grad.shape)
            row[-1] = 1
            state["row_var"] = grad.new_zeros(row)
            col = list(grad.shape)
            col[-2] = 1
            state["col_var"] = grad.new_zeros(col)
        else:
            state["variance"] = zeros_like(grad)

    @_no_grad_step
    def step(self, closure=None):
        """One Adafactor step over every parameter with a `.grad`; returns the closure's
        loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            eps1, eps2 = group["eps"]
            wd, d = group["weight_decay"], group["d"]
            for p in self._params_with_grad(group):
                if p.is_complex():
                    raise RuntimeError("Adafactor does not support complex parameters")
                state = self.state[p]
                if len(state) == 0:
                    self._init_state(state, p.grad)
                grad = -p.grad if group["maximize"] else p.grad
                e1 = eps1 if eps1 is not None else finfo(p.dtype).eps
                step = state["step"].add_(1).item()
                one_minus_beta2_t = step ** group["beta2_decay"]
                rho_t = min(lr, 1 / (step ** 0.5))
                alpha = max(eps2, p.norm(2).item() / (p.numel() ** 0.5)) * rho_t
                if wd != 0:
                    p.mul_(1 - lr * wd)
                if grad.ndim > 1:
                    row_var, col_var = state["row_var"], state["col_var"]
                    row_mean = grad.norm(dim=-1, keepdim=True).square_().div_(grad.size(-1))
                    row_var.lerp_(row_mean, one_minus_beta2_t)
                    col_mean = grad.norm(dim=-2, keepdim=True).square_().div_(grad.size(-2))
                    col_var.lerp_(col_mean, one_minus_beta2_t)
                    var_estimate = row_var @ col_var
                    var_estimate.div_(row_var.mean(dim=-2, keepdim=True).clamp_(min=e1))
                else:
                    state["variance"].lerp_(grad * grad, one_minus_beta2_t)
                    var_estimate = state["variance"].clone()
                update = var_estimate.clamp_(min=e1 * e1).rsqrt_()
                update.mul_(grad)
                denom = max(1.0, update.norm(2).item() / ((update.numel() ** 0.5) * d))
                p.add_(update, alpha=-alpha / denom)
        return loss
