"""The scheduler base class `LRScheduler` and the one-formula schedules of
`torch.optim.lr_scheduler`: `StepLR`, `MultiStepLR`, `ConstantLR`, `LinearLR`, `ExponentialLR`,
`CosineAnnealingLR`, `PolynomialLR`, `LambdaLR`, `MultiplicativeLR`, `ReduceLROnPlateau`.

Why it exists: PyTorch training loops call `scheduler.step()` once per epoch after
`optimizer.step()`; the schedulers rewrite each group's `"lr"`. As PyTorch's, `step()` uses
the chainable (recursive) form of each schedule, which reads the groups' current `lr` so that
schedulers compose, and `step(epoch)` (deprecated) the closed form. Semantics:
https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate. Touches
`eager.optim.optimizer` only.
"""

from __future__ import annotations

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

from ...tensor import Tensor
from ..optimizer import Optimizer, _to_scalar

__all__ = ["ConstantLR", "CosineAnnealingLR", "ExponentialLR", "LRScheduler", "LambdaLR",
           "LinearLR", "MultiStepLR", "MultiplicativeLR", "PolynomialLR", "ReduceLROnPlateau",
           "StepLR"]

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where "
    "possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if "
    "epoch is different from None, the closed form is used instead of the new chainable form, "
    "where available. Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose."
)


def _lrs(optimizer) -> list:
    """Each group's current lr (tensor lrs cloned, so that callers never alias them)."""
    return [g["lr"].clone() if isinstance(g["lr"], Tensor) else g["lr"]
            for g in optimizer.param_groups]


def _write_lrs(optimizer, values) -> None:
    """Set each group's lr (a tensor lr is filled in place, as PyTorch's)."""
    for group, lr in zip(optimizer.param_groups, values):
        if isinstance(group["lr"], Tensor):
            group["lr"].fill_(_to_scalar(lr))
        else:
            group["lr"] = lr


class LRScheduler:
    """Base class of the schedulers (`torch.optim.lr_scheduler.LRScheduler`).

    On construction with last_epoch=-1 every group gets `initial_lr` (its current lr), which
    becomes `base_lrs`; then one `step()` runs, so `last_epoch` is 0 and the groups hold the
    schedule's first lr. Subclasses implement `get_lr()` (the chainable form) and may give
    `_get_closed_form_lr()`.

    Raises:
        TypeError: `optimizer` is not an `Optimizer`.
        KeyError: last_epoch != -1 and a group has no `initial_lr`.
    """

    _get_lr_called_within_step = False
    _is_initial = False

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                lr = group["lr"]
                group.setdefault("initial_lr", lr.clone() if isinstance(lr, Tensor) else lr)
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] "
                                   "when resuming scheduler with last_epoch >= 0.")
        self.base_lrs = [g["initial_lr"].clone() if isinstance(g["initial_lr"], Tensor)
                         else g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (`torch`'s layout)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the attributes saved by `state_dict()`."""
        self.__dict__.update(state_dict)

    def get_last_lr(self) -> list:
        """The lrs set by the last `step()`, one per group."""
        return self._last_lr

    def get_lr(self) -> list:
        """The next lr of every group, from the current ones (the chainable form)."""
        raise NotImplementedError

    def step(self, epoch: int | None = None) -> None:
        """Advance the schedule by one epoch (or, deprecated, to `epoch`, by the closed form)
        and write the new lrs into the optimizer's groups. Warns when called before the
        optimizer ever stepped (PyTorch 1.1 ordering)."""
        if self._step_count == 1 and not getattr(self.optimizer, "_opt_called", False):
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                          "In PyTorch 1.1.0 and later, you should call them in the opposite "
                          "order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to "
                          "do this will result in PyTorch skipping the first value of the "
                          "learning rate schedule. See more details at "
                          "https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate",
                          UserWarning, stacklevel=2)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        """Advance `last_epoch` (or set it to `epoch`, closed form) and write the new lrs."""
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed = getattr(self, "_get_closed_form_lr", None)
                values = closed() if closed is not None else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        _write_lrs(self.optimizer, values)
        self._last_lr = _lrs(self.optimizer)

    def _warn_outside_step(self) -> None:
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)


_LRScheduler = LRScheduler


def _per_group(name: str, optimizer, value) -> list:
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError(f"Expected {len(optimizer.param_groups)} {name}, but got "
                             f"{len(value)}")
        return list(value)
    return [value] * len(optimizer.param_groups)


def _lambdas_state(sched) -> dict:
    """`state_dict` of a lambda scheduler: callable objects' `__dict__`s are saved, plain
    functions and lambdas are not (as PyTorch's)."""
    sd = {k: v for k, v in sched.__dict__.items() if k not in ("optimizer", "lr_lambdas")}
    sd["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                        for fn in sched.lr_lambdas]
    return sd


def _load_lambdas_state(sched, state_dict) -> None:
    state_dict = dict(state_dict)
    lambdas = state_dict.pop("lr_lambdas")
    sched.__dict__.update(state_dict)
    for fn, saved in zip(sched.lr_lambdas, lambdas):
        if saved is not None:
            fn.__dict__.update(saved)


class _LambdaScheduler(LRScheduler):
    """A scheduler driven by one function of the epoch per group (`lr_lambda`)."""

    def __init__(self, optimizer, lr_lambda, last_epoch: int = -1) -> None:
        self.optimizer = optimizer
        self.lr_lambdas = _per_group("lr_lambdas", optimizer, lr_lambda)
        super().__init__(optimizer, last_epoch)

    def state_dict(self) -> dict:
        return _lambdas_state(self)

    def load_state_dict(self, state_dict: dict) -> None:
        _load_lambdas_state(self, state_dict)


class LambdaLR(_LambdaScheduler):
    """lr = base_lr * lr_lambda(epoch) (`torch.optim.lr_scheduler.LambdaLR`); `lr_lambda` is
    a function of the epoch or a list of them, one per group (ValueError if the count
    differs)."""

    def get_lr(self) -> list:
        self._warn_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """lr <- lr * lr_lambda(epoch) at each step after the first
    (`torch.optim.lr_scheduler.MultiplicativeLR`)."""

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * fn(self.last_epoch)
                for fn, g in zip(self.lr_lambdas, self.optimizer.param_groups)]


class StepLR(LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size) (`torch.optim.lr_scheduler.StepLR`):
    multiplied by gamma every `step_size` epochs."""

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """lr multiplied by gamma at each milestone epoch (gamma ** n for a milestone listed n
    times) (`torch.optim.lr_scheduler.MultiStepLR`)."""

    def __init__(self, optimizer, milestones, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self.last_epoch not in self.milestones:
            return _lrs(self.optimizer)
        k = self.milestones[self.last_epoch]
        return [g["lr"] * self.gamma ** k for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base in self.base_lrs]


class ConstantLR(LRScheduler):
    """lr = base_lr * factor until epoch `total_iters`, then base_lr
    (`torch.optim.lr_scheduler.ConstantLR`). ValueError unless 0 <= factor <= 1."""

    def __init__(self, optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if factor > 1.0 or factor < 0:
            raise ValueError("Constant multiplicative factor expected to be between 0 and 1.")
        self.factor = factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [g["lr"] * self.factor for g in self.optimizer.param_groups]
        if self.last_epoch != self.total_iters:
            return _lrs(self.optimizer)
        return [g["lr"] * (1.0 / self.factor) for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * (self.factor + (self.last_epoch >= self.total_iters) * (1 - self.factor))
                for base in self.base_lrs]


class LinearLR(LRScheduler):
    """lr = base_lr * factor, the factor going linearly from `start_factor` (epoch 0) to
    `end_factor` (epoch `total_iters` and after) (`torch.optim.lr_scheduler.LinearLR`).

    Raises:
        ValueError: start_factor not in (0, 1], or end_factor not in [0, 1].
    """

    def __init__(self, optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if start_factor > 1.0 or start_factor <= 0:
            raise ValueError("Starting multiplicative factor expected to be greater than 0 and "
                             "less or equal to 1.")
        if end_factor > 1.0 or end_factor < 0:
            raise ValueError("Ending multiplicative factor expected to be between 0 and 1.")
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self.last_epoch == 0:
            return [g["lr"] * self.start_factor for g in self.optimizer.param_groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * delta)
        return [g["lr"] * ratio for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        frac = min(self.total_iters, self.last_epoch) / self.total_iters
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * frac)
                for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """lr = base_lr * gamma ** epoch (`torch.optim.lr_scheduler.ExponentialLR`)."""

    def __init__(self, optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self._is_initial:
            return _lrs(self.optimizer)
        return [g["lr"] * self.gamma for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    """Cosine annealing without restarts (`torch.optim.lr_scheduler.CosineAnnealingLR`, SGDR
    of Loshchilov & Hutter 2017): lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch /
    T_max)) / 2, computed recursively from the current lr by `step()` (so that it composes
    with other schedulers) and in closed form by `step(epoch)`. Past T_max the lr rises again
    (the cosine continues), as PyTorch's."""

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        groups, eta_min, t_max = self.optimizer.param_groups, self.eta_min, self.T_max
        if self._is_initial:
            return _lrs(self.optimizer)
        if self._step_count == 1 and self.last_epoch > 0:
            return [eta_min + (base - eta_min) * (1 + math.cos(self.last_epoch * math.pi
                                                               / t_max)) / 2
                    for base in self.base_lrs]
        if (self.last_epoch - 1 - t_max) % (2 * t_max) == 0:
            return [g["lr"] + (base - eta_min) * (1 - math.cos(math.pi / t_max)) / 2
                    for base, g in zip(self.base_lrs, groups)]
        return [(1 + math.cos(math.pi * self.last_epoch / t_max))
                / (1 + math.cos(math.pi * (self.last_epoch - 1) / t_max))
                * (g["lr"] - eta_min) + eta_min for g in groups]

    def _get_closed_form_lr(self) -> list:
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """lr = base_lr * (1 - min(epoch, total_iters) / total_iters) ** power
    (`torch.optim.lr_scheduler.PolynomialLR`), computed recursively by `step()`."""

    def __init__(self, optimizer, total_iters: int = 5, power: float = 1.0,
                 last_epoch: int = -1) -> None:
        self.total_iters = total_iters
        self.power = power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        if self._is_initial or self.last_epoch > self.total_iters:
            return _lrs(self.optimizer)
        decay = ((1.0 - self.last_epoch / self.total_iters)
                 / (1.0 - (self.last_epoch - 1) / self.total_iters)) ** self.power
        return [g["lr"] * decay for g in self.optimizer.param_groups]

    def _get_closed_form_lr(self) -> list:
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters)
                ** self.power for base in self.base_lrs]


class ReduceLROnPlateau(LRScheduler):
    """Multiply each group's lr by `factor` once the metric passed to `step(metrics)` has not
    improved for `patience` epochs (`torch.optim.lr_scheduler.ReduceLROnPlateau`).

    mode "min"/"max"; improvement by `threshold`, relative ("rel": beyond best * (1 -+ t)) or
    absolute ("abs"); `cooldown` epochs of no counting after a reduction; lrs never go below
    `min_lr` (a number or one per group), and changes smaller than `eps` are skipped.
    ValueError for a factor >= 1, an unknown mode or threshold_mode, or a min_lr list of the
    wrong length (PyTorch's messages)."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8):
        if factor >= 1.0:
            raise ValueError("Factor should be < 1.0.")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError(f"expected {len(optimizer.param_groups)} min_lrs, got "
                                 f"{len(min_lr)}")
            self.default_min_lr, self.min_lrs = None, list(min_lr)
        else:
            self.default_min_lr, self.min_lrs = min_lr, [min_lr] * len(optimizer.param_groups)
        if mode not in {"min", "max"}:
            raise ValueError("mode " + mode + " is unknown!")
        if threshold_mode not in {"rel", "abs"}:
            raise ValueError("threshold mode " + threshold_mode + " is unknown!")
        self.factor, self.patience, self.cooldown, self.eps = factor, patience, cooldown, eps
        self.mode, self.threshold, self.threshold_mode = mode, threshold, threshold_mode
        self.cooldown_counter = 0
        self.last_epoch = 0
        self._last_lr = _lrs(optimizer)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_epochs = 0

    def is_better(self, a, best) -> bool:
        if self.mode == "min":
            bound = best * (1.0 - self.threshold) if self.threshold_mode == "rel" else \
                best - self.threshold
            return a < bound
        bound = best * (self.threshold + 1.0) if self.threshold_mode == "rel" else \
            best + self.threshold
        return a > bound

    def step(self, metrics, epoch=None) -> None:
        """One epoch with validation metric `metrics` (a number or a one-element tensor)."""
        current = float(metrics.item() if isinstance(metrics, Tensor) else metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            for i, group in enumerate(self.optimizer.param_groups):
                old = float(group["lr"])
                new = max(old * self.factor, self.min_lrs[i])
                if old - new > self.eps:
                    group["lr"] = new
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = _lrs(self.optimizer)

    @property
    def in_cooldown(self) -> bool:
        return self.cooldown_counter > 0

    def state_dict(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
