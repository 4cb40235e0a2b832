"""`torch.amp.GradScaler`: dynamic loss scaling for mixed-precision training. The loss is
multiplied by a scale before backward; `step` unscales the gradients, skips the optimizer step
when any of them is inf/NaN, and `update` backs the scale off after such a step or grows it
after `growth_interval` clean ones. Semantics and messages: torch/amp/grad_scaler.py (PyTorch
2.x), with `_amp_foreach_non_finite_check_and_unscale_` and `_amp_update_scale_` written here
in eager ops. Imports `eager` modules only.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from enum import Enum

from ir import dtypes as D

from ..creation import full
from ..device import cuda_is_available
from ..grad_mode import no_grad
from ..tensor import Tensor

__all__ = ["GradScaler", "OptState"]


class OptState(Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf_per_device": {}}


def _non_finite_check_and_unscale_(grads, found_inf: Tensor, inv_scale: Tensor) -> None:
    """grads *= inv_scale in place; found_inf (0-d float32) set to 1 when any value of any
    grad is inf or NaN (`torch._amp_foreach_non_finite_check_and_unscale_`)."""
    for g in grads:
        if not bool(g.isfinite().all()):
            found_inf.fill_(1.0)
        if float(inv_scale) != 1.0:
            g.mul_(inv_scale.to(g.dtype))


def _update_scale_(scale: Tensor, growth_tracker: Tensor, found_inf: Tensor,
                   growth_factor: float, backoff_factor: float, growth_interval: int) -> None:
    """`torch._amp_update_scale_`: after an inf/NaN, scale *= backoff_factor and the tracker
    resets; else the tracker counts the step, and at growth_interval clean steps
    scale *= growth_factor (kept only when finite) and the tracker resets."""
    if float(found_inf) != 0.0:
        scale.mul_(backoff_factor)
        growth_tracker.fill_(0)
        return
    successful = int(growth_tracker) + 1
    if successful == growth_interval:
        grown = scale * growth_factor
        if bool(grown.isfinite()):
            scale.copy_(grown)
        growth_tracker.fill_(0)
    else:
        growth_tracker.fill_(successful)


class GradScaler:
    """`torch.amp.GradScaler(device="cuda", init_scale=2.**16, growth_factor=2.0,
    backoff_factor=0.5, growth_interval=2000, enabled=True)`.

    Usage: `scaler.scale(loss).backward(); scaler.step(opt); scaler.update()`. The scale is a
    0-d float32 tensor on the first scaled output's device, made at the first `scale` call.
    "cuda" without a GPU warns and disables the scaler; a disabled scaler passes everything
    through (`get_scale()` is 1.0, `state_dict()` is {}). AssertionError for
    growth_factor <= 1 or backoff_factor >= 1; RuntimeError for calls out of order (unscale_
    twice, unscale_ after step, step twice before update) and for a `closure` argument;
    ValueError when unscaling float16 gradients.
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not cuda_is_available():
            warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  "
                          "Disabling.", stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_scale_growth_tracker(self, funcname: str):
        fix = ("This may indicate your script did not use scaler.scale(loss or outputs) "
               "earlier in the iteration.")
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  " + fix)
        if self._growth_tracker is None:
            raise AssertionError(f"Attempted {funcname} but _growth_tracker is None.  " + fix)
        return self._scale, self._growth_tracker

    def _lazy_init_scale_growth_tracker(self, dev) -> None:
        if self._growth_tracker is not None:
            raise AssertionError("_growth_tracker initialized before _scale")
        self._scale = full((), self._init_scale, dtype=D.float32, device=dev)
        self._growth_tracker = full((), self._init_growth_tracker, dtype=D.int32, device=dev)

    def scale(self, outputs):
        """outputs * scale: a Tensor, or an iterable of Tensors (lists and tuples keep their
        type, other iterables give a map). ValueError for anything else."""
        if not self._enabled:
            return outputs

        def apply_scale(val):
            if isinstance(val, Tensor):
                if self._scale is None:
                    self._lazy_init_scale_growth_tracker(val.device)
                return val * self._scale.to(device=val.device)
            if isinstance(val, (list, tuple)):
                return type(val)(map(apply_scale, val))
            if hasattr(val, "__iter__"):
                return map(apply_scale, val)
            raise ValueError("outputs must be a Tensor or an iterable of Tensors")

        return apply_scale(outputs)

    def _unscale_grads_(self, optimizer, inv_scale, found_inf, allow_fp16: bool) -> dict:
        per_device: dict = defaultdict(lambda: defaultdict(list))
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    if not isinstance(param, Tensor):
                        raise AssertionError(  # noqa: TRY004  (PyTorch's type)
                            f"expected param to be torch.Tensor, got {type(param).__name__}")
                    if param.grad is None:
                        continue
                    if not allow_fp16 and param.grad.dtype is D.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    per_device[param.grad.device][param.grad.dtype].append(param.grad)
            found = {}
            for device, per_dtype in per_device.items():
                f = found.get(device)
                if f is None:
                    f = found[device] = found_inf.to(device=device, copy=True)
                for grads in per_dtype.values():
                    _non_finite_check_and_unscale_(grads, f, inv_scale.to(device=device))
        return found

    def unscale_(self, optimizer) -> None:
        """Divide `optimizer`'s gradients by the scale in place, recording whether any is
        inf/NaN (for `step`). At most once per optimizer between `update`s."""
        if not self._enabled:
            return
        self._check_scale_growth_tracker("unscale_")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since "
                               "the last update().")
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        with no_grad():
            inv_scale = self._scale.double().reciprocal().float()
            found_inf = full((), 0.0, dtype=D.float32, device=self._scale.device)
        state["found_inf_per_device"] = self._unscale_grads_(optimizer, inv_scale, found_inf,
                                                             False)
        state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless `unscale_` was called) and run `optimizer.step(*args, **kwargs)`
        unless a gradient is inf/NaN; returns what optimizer.step returned (or None)."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is "
                               "enabled.")
        self._check_scale_growth_tracker("step")
        state = self._per_optimizer_states[id(optimizer)]
        if state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        if len(state["found_inf_per_device"]) == 0:
            raise AssertionError("No inf checks were recorded for this optimizer.")
        retval = None
        if not sum(v.item() for v in state["found_inf_per_device"].values()):
            retval = optimizer.step(*args, **kwargs)
        state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Set the scale for the next iteration: `new_scale` (a float or a 1-element tensor)
        when given, else backoff after an inf/NaN step or growth after `growth_interval` clean
        steps (see `_update_scale_`)."""
        if not self._enabled:
            return
        _scale, _growth_tracker = self._check_scale_growth_tracker("update")
        with no_grad():
            if new_scale is not None:
                if isinstance(new_scale, float):
                    self._scale.fill_(new_scale)
                else:
                    reason = ("new_scale should be a float or a 1-element torch.cuda."
                              "FloatTensor or torch.FloatTensor with requires_grad=False.")
                    if not isinstance(new_scale, Tensor) or \
                            new_scale.device.type != self._scale.device.type or \
                            new_scale.numel() != 1 or new_scale.requires_grad:
                        raise AssertionError(reason)
                    self._scale.copy_(new_scale.reshape(()))
            else:
                found_infs = [f.to(device=_scale.device)
                              for state in self._per_optimizer_states.values()
                              for f in state["found_inf_per_device"].values()]
                if len(found_infs) == 0:
                    raise AssertionError("No inf checks were recorded prior to update.")
                combined = found_infs[0]
                for f in found_infs[1:]:
                    combined = combined + f
                _update_scale_(_scale, _growth_tracker, combined, self._growth_factor,
                               self._backoff_factor, self._growth_interval)
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _get_scale_async(self):
        return self._scale

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if self._enabled:
            return self._init_scale if self._scale is None else float(self._scale.item())
        return 1.0

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if self._enabled:
            return self._init_growth_tracker if self._growth_tracker is None \
                else int(self._growth_tracker.item())
        return 0

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """{"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"}
        (Python numbers), or {} when disabled."""
        if self._enabled:
            return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                    "backoff_factor": self._backoff_factor,
                    "growth_interval": self._growth_interval,
                    "_growth_tracker": self._get_growth_tracker()}
        return {}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore a `state_dict()` (no-op when disabled; RuntimeError for an empty dict)."""
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._init_scale = state_dict["scale"]
        if self._scale is not None:
            self._scale.fill_(state_dict["scale"])
        self._growth_factor = state_dict["growth_factor"]
        self._backoff_factor = state_dict["backoff_factor"]
        self._growth_interval = state_dict["growth_interval"]
        self._init_growth_tracker = state_dict["_growth_tracker"]
        if self._growth_tracker is not None:
            self._growth_tracker.fill_(state_dict["_growth_tracker"])

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the "
                                     "beginning of an iteration, or at the end after "
                                     "scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
