"""`Adamax`, `NAdam` and `RAdam`, as `torch.optim.Adamax` / `NAdam` / `RAdam` (the
algorithms of their PyTorch doc pages: Adamax of Kingma & Ba 2014 section 7, NAdam of Dozat
2016 with PyTorch's momentum-decay schedule, RAdam of Liu et al. 2019; decoupled weight decay
of Loshchilov & Hutter 2019 for NAdam/RAdam's `decoupled_weight_decay=True`).

Each `step` is PyTorch's single-tensor update (`_single_tensor_<name>`), in its order of
operations, under `no_grad` as in-place tensor ops on parameters and state; complex
parameters are updated through `view_as_real`. Touches `eager` only.
"""

from __future__ import annotations

from ..creation import zeros_like
from ..dispatch import FUNCTIONS
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

__all__ = ["Adamax", "NAdam", "RAdam"]


def _check_adam_args(lr, eps, betas, weight_decay) -> tuple:
    """PyTorch's argument checks of the Adam family (its ValueError messages)."""
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
    return betas


def _real(*tensors):
    """The tensors as real views when the first (the parameter) is complex."""
    if tensors[0].is_complex():
        view_as_real = FUNCTIONS["view_as_real"]
        return tuple(view_as_real(t) for t in tensors)
    return tensors


class Adamax(Optimizer):
    """Adamax (`torch.optim.Adamax`): Adam with the infinity norm.

    Per parameter p with gradient g at step t: g <- -g if maximize; g <- g + weight_decay * p;
    m <- lerp(m, g, 1 - beta1); u <- max(beta2 * u, |g| + eps); p <- p - lr / (1 - beta1^t)
    * m / u. State: `step`, `exp_avg`, `exp_inf`.

    Args: params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, foreach=None, and
    keywords maximize=False, differentiable=False, capturable=False (foreach and capturable
    accepted and ignored). Raises ValueError for a negative lr/eps/weight_decay or a beta
    outside [0, 1); NotImplementedError for differentiable=True.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 foreach=None, *, maximize=False, differentiable=False, capturable=False):
        betas = _check_adam_args(lr, eps, betas, weight_decay)
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "foreach": foreach, "maximize": maximize, "differentiable": differentiable,
                    "capturable": capturable}
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False))

    @_no_grad_step
    def step(self, closure=None):
        """One Adamax step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        maximum = FUNCTIONS["maximum"]
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["exp_avg"] = zeros_like(p)
                    state["exp_inf"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                state["step"].add_(1)
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                param, grad, exp_avg, exp_inf = _real(p, grad, state["exp_avg"],
                                                      state["exp_inf"])
                lerp_(exp_avg, grad, 1 - beta1)
                exp_inf.copy_(maximum(exp_inf.mul_(beta2), grad.abs().add_(eps)))
                clr = lr / (1 - beta1 ** state["step"].item())
                addcdiv_(param, exp_avg, exp_inf, value=-clr)
        return loss


class NAdam(Optimizer):
    """NAdam (`torch.optim.NAdam`): Adam with Nesterov momentum.

    At step t, mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)); the state keeps the
    product of the mu's. Per parameter: g <- -g if maximize; weight decay on g (or decoupled
    on p); m <- lerp(m, g, 1 - beta1); v <- beta2 v + (1 - beta2) g^2; denom = sqrt(v / (1 -
    beta2^t)) + eps; p <- p - lr (1 - mu_t) / (1 - prod_t) g / denom - lr mu_{t+1} / (1 -
    prod_t mu_{t+1}) m / denom. State: `step`, `mu_product`, `exp_avg`, `exp_avg_sq`.

    Args: params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    momentum_decay=4e-3, decoupled_weight_decay=False, and keywords foreach=None,
    maximize=False, capturable=False, differentiable=False. Raises as Adam, and ValueError
    for a negative momentum_decay.
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 momentum_decay=4e-3, decoupled_weight_decay=False, *, foreach=None,
                 maximize=False, capturable=False, differentiable=False):
        betas = _check_adam_args(lr, eps, betas, weight_decay)
        if not 0.0 <= momentum_decay:
            raise ValueError(f"Invalid momentum_decay value: {momentum_decay}")
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "momentum_decay": momentum_decay,
                    "decoupled_weight_decay": decoupled_weight_decay, "maximize": maximize,
                    "foreach": foreach, "capturable": capturable,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = (("maximize", False), ("foreach", None), ("capturable", False),
                       ("differentiable", False), ("decoupled_weight_decay", False))

    @_no_grad_step
    def step(self, closure=None):
        """One NAdam step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd, psi = group["eps"], group["weight_decay"], group["momentum_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["mu_product"] = _new_step().add_(1)
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, exp_avg, exp_avg_sq = _real(p, grad, state["exp_avg"],
                                                         state["exp_avg_sq"])
                step = state["step"].add_(1).item()
                bias_correction2 = 1 - beta2 ** step
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                mu = beta1 * (1.0 - 0.5 * 0.96 ** (step * psi))
                mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((step + 1) * psi))
                mu_product = state["mu_product"].mul_(mu).item()
                lerp_(exp_avg, grad, 1 - beta1)
                addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
                denom = exp_avg_sq.div(bias_correction2).sqrt().add_(eps)
                addcdiv_(param, grad, denom, value=-lr * (1.0 - mu) / (1.0 - mu_product))
                addcdiv_(param, exp_avg, denom,
                         value=(-lr * mu_next) / (1.0 - mu_product * mu_next))
        return loss


class RAdam(Optimizer):
    """RAdam (`torch.optim.RAdam`): Adam with the variance of the adaptive lr rectified.

    Per parameter at step t: moments as Adam; rho_inf = 2 / (1 - beta2) - 1, rho_t = rho_inf
    - 2 t beta2^t / (1 - beta2^t); m_hat = m / (1 - beta1^t); when rho_t > 5, p <- p - lr
    m_hat sqrt(1 - beta2^t) / (sqrt(v) + eps) r_t with r_t = sqrt((rho_t - 4)(rho_t - 2)
    rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t)), else p <- p - lr m_hat. State: `step`,
    `exp_avg`, `exp_avg_sq`.

    Args: params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
    decoupled_weight_decay=False, and keywords foreach=None, maximize=False,
    capturable=False, differentiable=False. Raises as Adam.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0,
                 decoupled_weight_decay=False, *, foreach=None, maximize=False,
                 capturable=False, differentiable=False):
        betas = _check_adam_args(lr, eps, betas, weight_decay)
        _check_not_differentiable(differentiable)
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay,
                    "maximize": maximize, "foreach": foreach, "capturable": capturable,
                    "decoupled_weight_decay": decoupled_weight_decay,
                    "differentiable": differentiable}
        super().__init__(params, defaults)

    _group_defaults = (("foreach", None), ("maximize", False), ("differentiable", False),
                       ("capturable", False), ("decoupled_weight_decay", False))

    @_no_grad_step
    def step(self, closure=None):
        """One RAdam step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            beta1, beta2 = group["betas"]
            eps, wd = group["eps"], group["weight_decay"]
            for p in self._params_with_grad(group):
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = _new_step()
                    state["exp_avg"] = zeros_like(p)
                    state["exp_avg_sq"] = zeros_like(p)
                grad = -p.grad if group["maximize"] else p.grad
                param, grad, exp_avg, exp_avg_sq = _real(p, grad, state["exp_avg"],
                                                         state["exp_avg_sq"])
                step = state["step"].add_(1).item()
                if wd != 0:
                    if group["decoupled_weight_decay"]:
                        param.mul_(1 - lr * wd)
                    else:
                        grad = grad.add(param, alpha=wd)
                lerp_(exp_avg, grad, 1 - beta1)
                addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1 ** step
                bias_correction2 = 1 - beta2 ** step
                m_hat = exp_avg / bias_correction1
                rho_inf = 2 / (1 - beta2) - 1
                rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
                if rho_t > 5.0:
                    rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                            / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                    adaptive = (bias_correction2 ** 0.5) / exp_avg_sq.sqrt().add_(eps)
                    param.add_(m_hat * lr * adaptive * rect, alpha=-1.0)
                else:
                    param.add_(m_hat * lr, alpha=-1.0)
        return loss
