"""`Adamax`, `NAdam` and `RAdam`, as `torch.optim.Adamax` / `NAdam` / `RAdam` (the
algorithms of their PyTorch doc pages: Adamax of Kingma & Ba 2014 section 7, NAdam of Dozat
2016 with PyTorch's momentum-decay schedule, RAdam of Liu et al. 2019; decoupled weight decay
of Loshchilov & Hutter 2019 for NAdam/RAdam's `decoupled_weight_decay=True`).

Each `step` is PyTorch's single-tensor update (`_single_tensor_<name>`), in its order of
operations, under `no_grad` as in-place tensor ops on parameters and state; complex parameters
are updated through `view_as_real`. The rule is in `update_rules.FORMS`, shared with the
captured graph. Touches `eager` only.
"""

from __future__ import annotations

from ..dispatch import FUNCTIONS
from .optimizer import (
    Optimizer,
    _check_not_differentiable,
    _no_grad_step,
    _to_scalar,
)
from .update_rules import FORMS, run_form

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
        """One Adamax step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["adam_family.Adamax"], closure)


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
        """One NAdam step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["adam_family.NAdam"], closure)


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
        """One RAdam step over every parameter with a `.grad` (`update_rules.FORMS`); returns
        the closure's loss."""
        return run_form(self, FORMS["adam_family.RAdam"], closure)
