"""`torch.optim.swa_utils`: stochastic weight averaging (Izmailov et al. 2018) and
exponential moving averages of a model's parameters.

`AveragedModel` keeps a deep copy of a model whose parameters (and, with `use_buffers`,
buffers) are the running average of the model's, updated by `update_parameters`; the
average is SWA's equal-weight mean by default, or any `avg_fn` / `multi_avg_fn` (the
`get_*_avg_fn` factories give SWA and EMA). `update_bn` recomputes BatchNorm running
statistics for the averaged weights; `SWALR` anneals each group's lr to a constant `swa_lr`.
Semantics of PyTorch's `torch/optim/swa_utils.py`. Touches `eager` (nn, optim) only.
"""

from __future__ import annotations

import itertools
import math
import warnings
from copy import deepcopy

from ir.dtypes import int64

from ..creation import tensor
from ..grad_mode import no_grad
from ..nn.module import Module
from .lr_scheduler import LRScheduler, _per_group

__all__ = ["SWALR", "AveragedModel", "get_ema_avg_fn", "get_ema_multi_avg_fn",
           "get_swa_avg_fn", "get_swa_multi_avg_fn", "update_bn"]


def _check_decay(decay: float) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in "
                         "[0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An in-place EMA update of lists of tensors: ema <- lerp(ema, current, 1 - decay)
    (integers: ema * decay + current * (1 - decay)). ValueError for decay outside [0, 1]."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param_list, current_param_list, _) -> None:
        for p_ema, p_model in zip(ema_param_list, current_param_list):
            if p_ema.is_floating_point() or p_ema.is_complex():
                p_ema.lerp_(p_model, 1 - decay)
            else:
                p_ema.copy_(p_ema * decay + p_model * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place SWA update of lists of tensors: avg <- avg + (current - avg) / (n + 1)."""

    @no_grad()
    def swa_update(averaged_param_list, current_param_list, num_averaged) -> None:
        n = float(num_averaged)
        for p_avg, p_model in zip(averaged_param_list, current_param_list):
            if p_avg.is_floating_point() or p_avg.is_complex():
                p_avg.lerp_(p_model, 1 / (n + 1))
            else:
                p_avg.add_(p_model - p_avg, alpha=1.0 / (n + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """`fn(ema, current, n) -> decay * ema + (1 - decay) * current`."""
    _check_decay(decay)

    @no_grad()
    def ema_update(ema_param, current_param, num_averaged):
        return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """`fn(avg, current, n) -> avg + (current - avg) / (n + 1)`."""

    @no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A running average of `model`'s parameters (`torch.optim.swa_utils.AveragedModel`).

    Args: model; device (the copy is moved there); avg_fn (one tensor at a time) or
    multi_avg_fn (lists of tensors), default SWA's mean; use_buffers (average buffers too,
    else copy them). Holds `module` (a deep copy of model) and the buffer `n_averaged` (int64).
    AssertionError when both avg_fn and multi_avg_fn are given.
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None,
                 use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn = avg_fn
        self.multi_avg_fn = multi_avg_fn
        self.use_buffers = use_buffers

    def forward(self, *args, **kwargs):
        """Calls the averaged copy."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model: Module) -> None:
        """Fold `model`'s current parameters into the average (the first call copies them);
        buffers are averaged with `use_buffers`, else copied."""
        if self.use_buffers:
            mine = list(itertools.chain(self.module.parameters(), self.module.buffers()))
            theirs = list(itertools.chain(model.parameters(), model.buffers()))
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        n = int(self.n_averaged.item())
        with no_grad():
            pairs = [(a.detach(), m.detach().to(a.device)) for a, m in zip(mine, theirs)]
            if n == 0:
                for a, m in pairs:
                    a.copy_(m)
            elif self.multi_avg_fn is not None:
                self.multi_avg_fn([a for a, _ in pairs], [m for _, m in pairs],
                                  self.n_averaged)
            else:  # (torch's CPU path: the one-tensor function, SWA's by default)
                fn = self.avg_fn or get_swa_avg_fn()
                for a, m in pairs:
                    a.copy_(fn(a, m, self.n_averaged.to(a.device)))
            if not self.use_buffers:
                for b_swa, b_model in zip(self.module.buffers(), model.buffers()):
                    b_swa.detach().copy_(b_model.detach().to(b_swa.device))
            self.n_averaged += 1


def _is_batchnorm(module) -> bool:
    return any(c.__name__ == "_BatchNorm" for c in type(module).__mro__)


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute the running statistics of every BatchNorm of `model` with one pass over
    `loader` (cumulative averages: momentum None), in training mode; restores momenta and
    the training flag. Items that are lists or tuples give their first element."""
    momenta = {}
    for module in model.modules():
        if _is_batchnorm(module):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for inp in loader:
            if isinstance(inp, (list, tuple)):
                inp = inp[0]
            if device is not None:
                inp = inp.to(device)
            model(inp)
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr to `swa_lr` over `anneal_epochs` ("cos" or "linear"), then
    hold it (`torch.optim.swa_utils.SWALR`). `swa_lr` is a number or one per group.
    ValueError for an unknown strategy or a negative / non-int anneal_epochs."""

    def __init__(self, optimizer, swa_lr, anneal_epochs: int = 10,
                 anneal_strategy: str = "cos", last_epoch: int = -1) -> None:
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got "
                             f"{anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def get_lr(self) -> list:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=2)
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_t = max(0, min(1, (step - 1) / max(1, self.anneal_epochs)))
        prev_alpha = self.anneal_func(prev_t)
        groups = self.optimizer.param_groups
        prev_lrs = [self._get_initial_lr(g["lr"], g["swa_lr"], prev_alpha) for g in groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [g["swa_lr"] * alpha + lr * (1 - alpha) for g, lr in zip(groups, prev_lrs)]

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" \
            else self._linear_anneal

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
