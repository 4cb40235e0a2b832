"""The cyclical schedules of `torch.optim.lr_scheduler`: `CyclicLR` (Smith 2017, triangular /
triangular2 / exp_range, momentum cycled inversely), `OneCycleLR` (Smith & Topin 2018, two or
three phases, cos or linear annealing) and `CosineAnnealingWarmRestarts` (SGDR, Loshchilov &
Hutter 2017). Each computes every lr in closed form from the epoch counter, as PyTorch's, and
cycles the optimizer's `momentum` (or Adam's beta1) where asked. Touches
`eager.optim.lr_scheduler.basic` only.
"""

from __future__ import annotations

import math
import types
from functools import partial

from ..optimizer import Optimizer
from .basic import LRScheduler, _lrs, _per_group, _write_lrs

__all__ = ["CosineAnnealingWarmRestarts", "CyclicLR", "OneCycleLR"]


def _check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def _set_momentum(group, momentum, use_beta1: bool) -> None:
    if use_beta1:
        group["betas"] = (momentum, *group["betas"][1:])
    else:
        group["momentum"] = momentum


def _init_momenta(sched, optimizer, base_momentum, max_momentum, last_epoch):
    """Cycle momentum: check the optimizer has `momentum` or `betas`, and (fresh start) set
    each group's momentum to its max and remember the range. Returns (max, base) lists."""
    if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
        raise ValueError("optimizer must support momentum or beta1 with `cycle_momentum` "
                         "option enabled")
    sched.use_beta1 = "betas" in optimizer.defaults
    max_m = _per_group("max_momentum", optimizer, max_momentum)
    base_m = _per_group("base_momentum", optimizer, base_momentum)
    if last_epoch == -1:
        for m, b, group in zip(max_m, base_m, optimizer.param_groups):
            _set_momentum(group, m, sched.use_beta1)
            group["max_momentum"] = m
            group["base_momentum"] = b
    return max_m, base_m


class CyclicLR(LRScheduler):
    """Cycle each group's lr between `base_lr` and `max_lr` (`torch.optim.lr_scheduler.
    CyclicLR`): up for `step_size_up` steps, down for `step_size_down` (default the same),
    the amplitude scaled per cycle ("triangular": 1, "triangular2": halved each cycle) or per
    iteration ("exp_range": gamma ** iteration), or by a custom `scale_fn` with `scale_mode`.
    With `cycle_momentum` the momentum (or beta1) moves inversely between `max_momentum` and
    `base_momentum`. Meant to be stepped per batch.

    Raises:
        TypeError: `optimizer` is not an Optimizer.
        ValueError: an unknown mode without scale_fn; cycle_momentum with an optimizer
            without momentum or betas; per-group lists of the wrong length.
    """

    def __init__(self, optimizer, base_lr, max_lr, step_size_up: int = 2000,
                 step_size_down: int | None = None, mode: str = "triangular",
                 gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9,
                 last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        base_lrs = _per_group("base_lr", optimizer, base_lr)
        if last_epoch == -1:
            _write_lrs(optimizer, base_lrs)
        self.max_lrs = _per_group("max_lr", optimizer, max_lr)
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        self.total_size = up + down
        self.step_ratio = up / self.total_size
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError("mode is invalid and scale_fn is None")
        self.mode, self.gamma = mode, gamma
        self._scale_fn_custom = scale_fn
        self.scale_mode = scale_mode
        self._init_scale_fn()
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.max_momentums, self.base_momentums = _init_momenta(
                self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def _init_scale_fn(self) -> None:
        if self._scale_fn_custom is not None:
            return
        if self.mode == "triangular":
            self._scale_fn_ref, self.scale_mode = self._triangular_scale_fn, "cycle"
        elif self.mode == "triangular2":
            self._scale_fn_ref, self.scale_mode = self._triangular2_scale_fn, "cycle"
        elif self.mode == "exp_range":
            self._scale_fn_ref = partial(self._exp_range_scale_fn, self.gamma)
            self.scale_mode = "iterations"

    def scale_fn(self, x) -> float:
        """The amplitude factor at cycle (or iteration) x."""
        if self._scale_fn_custom is not None:
            return self._scale_fn_custom(x)
        return self._scale_fn_ref(x)

    @staticmethod
    def _triangular_scale_fn(x: float) -> float:
        return 1.0

    @staticmethod
    def _triangular2_scale_fn(x: float) -> float:
        return 1 / (2.0 ** (x - 1))

    @staticmethod
    def _exp_range_scale_fn(gamma: float, x: float) -> float:
        return gamma ** x

    def get_lr(self) -> list:
        self._warn_outside_step()
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        if x <= self.step_ratio:
            scale_factor = x / self.step_ratio
        else:
            scale_factor = (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [base + ((top - base) * scale_factor) * scale
               for base, top in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for group, base_m, max_m in zip(self.optimizer.param_groups, self.base_momentums,
                                            self.max_momentums):
                momentum = max_m - ((max_m - base_m) * scale_factor) * scale
                _set_momentum(group, momentum, self.use_beta1)
        return lrs

    def state_dict(self) -> dict:
        state = super().state_dict()
        state.pop("_scale_fn_ref", None)
        fn = state.pop("_scale_fn_custom")
        state["_scale_fn_custom"] = None
        if fn is not None and not isinstance(fn, types.FunctionType):
            state["_scale_fn_custom"] = fn.__dict__.copy()
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = dict(state_dict)
        fn = state_dict.pop("_scale_fn_custom")
        super().load_state_dict(state_dict)
        if fn is not None:
            self._scale_fn_custom.__dict__.update(fn)
        self._init_scale_fn()


def _phases(total_steps: int, pct_start: float, three_phase: bool) -> list[dict]:
    up = float(pct_start * total_steps) - 1
    if three_phase:
        return [
            {"end_step": up, "start_lr": "initial_lr", "end_lr": "max_lr",
             "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
            {"end_step": float(2 * pct_start * total_steps) - 2, "start_lr": "max_lr",
             "end_lr": "initial_lr", "start_momentum": "base_momentum",
             "end_momentum": "max_momentum"},
            {"end_step": total_steps - 1, "start_lr": "initial_lr", "end_lr": "min_lr",
             "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
        ]
    return [
        {"end_step": up, "start_lr": "initial_lr", "end_lr": "max_lr",
         "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
        {"end_step": total_steps - 1, "start_lr": "max_lr", "end_lr": "min_lr",
         "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
    ]


def _total_steps(total_steps, epochs, steps_per_epoch) -> int:
    if total_steps is not None:
        if total_steps <= 0 or not isinstance(total_steps, int):
            raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
        return total_steps
    if epochs is not None and steps_per_epoch is not None:
        if not isinstance(epochs, int) or epochs <= 0:
            raise ValueError(f"Expected positive integer epochs, but got {epochs}")
        if not isinstance(steps_per_epoch, int) or steps_per_epoch <= 0:
            raise ValueError("Expected positive integer steps_per_epoch, but got "
                             f"{steps_per_epoch}")
        return epochs * steps_per_epoch
    raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")


class OneCycleLR(LRScheduler):
    """The 1cycle policy (`torch.optim.lr_scheduler.OneCycleLR`): lr rises from max_lr /
    div_factor to max_lr over pct_start of `total_steps` (or epochs * steps_per_epoch), then
    anneals ("cos" or "linear") to initial_lr / final_div_factor; `three_phase` goes back to
    the initial lr first. Momentum (or beta1) moves inversely between max_momentum and
    base_momentum. Meant to be stepped per batch; stepping past total_steps raises
    ValueError ("Tried to step N times...").

    Raises:
        TypeError: `optimizer` is not an Optimizer.
        ValueError: no or bad total_steps / epochs / steps_per_epoch; pct_start not a float
            in [0, 1]; an unknown anneal_strategy; cycle_momentum with an optimizer without
            momentum or betas.
    """

    def __init__(self, optimizer, max_lr, total_steps: int | None = None,
                 epochs: int | None = None, steps_per_epoch: int | None = None,
                 pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4,
                 three_phase: bool = False, last_epoch: int = -1) -> None:
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        self.total_steps = _total_steps(total_steps, epochs, steps_per_epoch)
        self._schedule_phases = _phases(self.total_steps, pct_start, three_phase)
        if pct_start < 0 or pct_start > 1 or not isinstance(pct_start, float):
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("anneal_strategy must be one of 'cos' or 'linear', instead got "
                             f"{anneal_strategy}")
        self._anneal_func_type = anneal_strategy
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for top, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = top / div_factor
                group["max_lr"] = top
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            _init_momenta(self, optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _anneal_func(self, start, end, pct):
        if self._anneal_func_type == "cos":
            return self._annealing_cos(start, end, pct)
        return self._annealing_linear(start, end, pct)

    @staticmethod
    def _annealing_cos(start, end, pct):
        """Cosine from start to end as pct goes 0 -> 1."""
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start, end, pct):
        """Linear from start to end as pct goes 0 -> 1."""
        return (end - start) * pct + start

    def get_lr(self) -> list:
        self._warn_outside_step()
        step_num = self.last_epoch
        if step_num > self.total_steps:
            raise ValueError(f"Tried to step {step_num} times. The specified number of total "
                             f"steps is {self.total_steps}")
        lrs = []
        last = len(self._schedule_phases) - 1
        for group in self.optimizer.param_groups:
            start_step = 0.0
            for i, phase in enumerate(self._schedule_phases):
                end_step = phase["end_step"]
                if step_num <= end_step or i == last:
                    pct = (step_num - start_step) / (end_step - start_step)
                    lrs.append(self._anneal_func(group[phase["start_lr"]],
                                                 group[phase["end_lr"]], pct))
                    if self.cycle_momentum:
                        momentum = self._anneal_func(group[phase["start_momentum"]],
                                                     group[phase["end_momentum"]], pct)
                        _set_momentum(group, momentum, self.use_beta1)
                    break
                start_step = phase["end_step"]
        return lrs


class CosineAnnealingWarmRestarts(LRScheduler):
    """SGDR (`torch.optim.lr_scheduler.CosineAnnealingWarmRestarts`): lr = eta_min +
    (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2, restarting (T_cur = 0) every T_i
    epochs, T_i starting at T_0 and multiplied by T_mult at each restart. `step(epoch)` takes
    fractional epochs (per-batch stepping). ValueError for T_0 not a positive int, T_mult not
    an int >= 1, eta_min not a number, or a negative epoch."""

    def __init__(self, optimizer, T_0: int, T_mult: int = 1, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        if T_0 <= 0 or not isinstance(T_0, int):
            raise ValueError(f"Expected positive integer T_0, but got {T_0}")
        if T_mult < 1 or not isinstance(T_mult, int):
            raise ValueError(f"Expected integer T_mult >= 1, but got {T_mult}")
        if not isinstance(eta_min, (float, int)):
            raise ValueError(  # noqa: TRY004  (torch's type)
                f"Expected float or int eta_min, but got {eta_min} of type "
                             f"{type(eta_min)}")
        self.T_0 = T_0
        self.T_i = T_0
        self.T_mult = T_mult
        self.eta_min = eta_min
        self.T_cur = last_epoch
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        self._warn_outside_step()
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.T_cur / self.T_i)) / 2
                for base in self.base_lrs]

    def step(self, epoch=None) -> None:
        """Advance one epoch, or go to (fractional) `epoch`."""
        if epoch is None and self.last_epoch < 0:
            epoch = 0
        if epoch is None:
            epoch = self.last_epoch + 1
            self.T_cur = self.T_cur + 1
            if self.T_cur >= self.T_i:
                self.T_cur = self.T_cur % self.T_i
                self.T_i = self.T_i * self.T_mult
        else:
            if epoch < 0:
                raise ValueError(f"Expected non-negative epoch, but got {epoch}")
            if epoch >= self.T_0:
                if self.T_mult == 1:
                    self.T_cur = epoch % self.T_0
                else:
                    n = int(math.log((epoch / self.T_0 * (self.T_mult - 1) + 1), self.T_mult))
                    self.T_cur = epoch - self.T_0 * (self.T_mult ** n - 1) / (self.T_mult - 1)
                    self.T_i = self.T_0 * self.T_mult ** n
            else:
                self.T_i = self.T_0
                self.T_cur = epoch
        self.last_epoch = math.floor(epoch)
        self._get_lr_called_within_step = True
        try:
            values = self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        _write_lrs(self.optimizer, values)
        self._last_lr = _lrs(self.optimizer)
