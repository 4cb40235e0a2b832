"""Schedulers made of schedulers, as `torch.optim.lr_scheduler`'s: `SequentialLR` (one
scheduler after another, switching at milestone epochs) and `ChainedScheduler` (all of them
stepped together, their chainable forms multiplying). State dicts nest the members'. Touches
`eager.optim.lr_scheduler.basic` only.
"""

from __future__ import annotations

from bisect import bisect_right

from .basic import LRScheduler, ReduceLROnPlateau, _lrs, _write_lrs

__all__ = ["ChainedScheduler", "SequentialLR"]


def _check_members(owner: str, optimizer, schedulers) -> None:
    """PyTorch's checks: at least one scheduler, each with an `optimizer` (TypeError), none a
    ReduceLROnPlateau, all on `optimizer` (ValueError)."""
    for i, sched in enumerate(schedulers):
        if not hasattr(sched, "optimizer"):
            raise TypeError(f"{owner} at index {i} should have `optimizer` as its attribute.")
        if isinstance(sched, ReduceLROnPlateau):
            raise ValueError(  # noqa: TRY004  (torch's type)
                f"{owner} does not support `ReduceLROnPlateau` scheduler as it requires "
                "additional kwargs to be specified when calling `step`, but got one at index "
                f"{i} in the given schedulers sequence.")
        if optimizer != sched.optimizer:
            raise ValueError(f"{owner} expects all schedulers to belong to the same optimizer, "
                             f"but got scheduler {type(sched).__name__} at index {i} has "
                             f"{sched.optimizer}, which is different from "
                             f"{type(optimizer).__name__}.")


def _nested_state(sched) -> dict:
    state = {k: v for k, v in sched.__dict__.items() if k not in ("optimizer", "_schedulers")}
    state["_schedulers"] = [s.state_dict() for s in sched._schedulers]
    return state


def _load_nested_state(sched, state_dict: dict) -> None:
    state_dict = dict(state_dict)
    members = state_dict.pop("_schedulers")
    sched.__dict__.update(state_dict)
    for s, saved in zip(sched._schedulers, members):
        s.load_state_dict(saved)


class SequentialLR(LRScheduler):
    """`schedulers[i]` drives the lr from `milestones[i - 1]` on (`torch.optim.lr_scheduler.
    SequentialLR`); at each milestone the next scheduler restarts from its epoch 0 (its
    closed form at 0). The members were constructed (and stepped once) before; their
    construction steps are undone, as PyTorch's.

    Raises: ValueError for no schedulers, len(milestones) != len(schedulers) - 1, a
    ReduceLROnPlateau member or one on another optimizer; TypeError for a member without
    `optimizer`.
    """

    def __init__(self, optimizer, schedulers, milestones, last_epoch: int = -1) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler, but got no scheduler.")
        _check_members(name, optimizer, schedulers)
        if len(milestones) != len(schedulers) - 1:
            raise ValueError("Sequential Schedulers expects number of schedulers provided to be "
                             "one more than the number of milestone points, but got number of "
                             f"schedulers {len(schedulers)} and the number of milestones to be "
                             f"equal to {len(milestones)}")
        self._schedulers = schedulers
        self._milestones = milestones
        self.last_epoch = last_epoch + 1
        self.optimizer = optimizer
        _write_lrs(optimizer, [g["initial_lr"] for g in optimizer.param_groups])
        self.recursive_undo()
        idx = bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = schedulers[idx].get_last_lr()

    def recursive_undo(self, sched=None) -> None:
        """Step every member (and members' members) back by one epoch."""
        scheds = self if sched is None else sched
        if hasattr(scheds, "_schedulers"):
            for s in scheds._schedulers:
                self.recursive_undo(s)
        elif hasattr(scheds, "last_epoch"):
            scheds.last_epoch -= 1

    def step(self) -> None:
        """One epoch of the scheduler in charge (the next one restarts at a milestone)."""
        self.last_epoch += 1
        idx = bisect_right(self._milestones, self.last_epoch)
        sched = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            sched._update_lr(0)
        else:
            sched.step()
        self._last_lr = sched.get_last_lr()

    def state_dict(self) -> dict:
        return _nested_state(self)

    def load_state_dict(self, state_dict: dict) -> None:
        _load_nested_state(self, state_dict)


class ChainedScheduler(LRScheduler):
    """Step every scheduler of `schedulers` at each `step()` (`torch.optim.lr_scheduler.
    ChainedScheduler`): their chainable forms compose (e.g. a warm-up factor times a decay).
    `optimizer` defaults to the first scheduler's. Raises as SequentialLR."""

    def __init__(self, schedulers, optimizer=None) -> None:
        name = type(self).__name__
        if len(schedulers) < 1:
            raise ValueError(f"{name} expects at least one scheduler to be chained, but got no "
                             "scheduler.")
        optimizer = optimizer or schedulers[0].optimizer
        _check_members(name, optimizer, schedulers)
        self._schedulers = schedulers
        self.optimizer = optimizer
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

    def step(self) -> None:
        """Step each member in order."""
        for sched in self._schedulers:
            sched.step()
        self._last_lr = _lrs(self._schedulers[-1].optimizer)

    def state_dict(self) -> dict:
        return _nested_state(self)

    def load_state_dict(self, state_dict: dict) -> None:
        _load_nested_state(self, state_dict)
