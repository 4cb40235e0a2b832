"""The `Optimizer` base class: parameter groups, per-parameter state, `zero_grad`, hooks and
`state_dict` / `load_state_dict`, as `torch.optim.Optimizer`.

Why it exists: `import eager as torch` must run ordinary PyTorch training loops
(`opt = torch.optim.Adam(model.parameters()); opt.zero_grad(); loss.backward(); opt.step()`).
The algorithms (`sgd.py`, `adam.py`, ...) subclass it and write only their `step`; everything
about groups, state layout and checkpointing lives here, with PyTorch's layout (a state dict's
params are integer ids, its state is keyed by those ids) and PyTorch's error types and
messages. Semantics: https://pytorch.org/docs/stable/optim.html#torch.optim.Optimizer.
Touches `eager` (grad mode, `Tensor`, autograd's `RemovableHandle`) and `ir.dtypes`.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from collections import defaultdict
from collections.abc import Iterable
from copy import deepcopy
from typing import Any

from ir.dtypes import float32, float64, get_default_dtype

from ..autograd.hooks import RemovableHandle
from ..grad_mode import enable_grad, no_grad
from ..tensor import Tensor

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton marking a default that every param group must give (`torch.optim.required`)."""

    def __repr__(self) -> str:
        return "<required parameter>"


required = _RequiredParameter()

_hook_ids = itertools.count()


def _typename(obj) -> str:
    """`torch.typename`: a tensor's type name, else the object's qualified class name."""
    if isinstance(obj, Tensor):
        return "eager.Tensor"
    cls = type(obj)
    mod = cls.__module__
    return cls.__qualname__ if mod in ("builtins", None) else f"{mod}.{cls.__qualname__}"


def _to_scalar(x):
    """A hyperparameter given as a one-element tensor, as a Python number (PyTorch accepts a
    Tensor `lr`; the update here takes it as a number)."""
    return x.item() if isinstance(x, Tensor) else x


def _new_step() -> Tensor:
    """A fresh `step` counter: a 0-d tensor on the CPU, float64 when that is the default dtype
    and float32 otherwise (PyTorch's `_get_scalar_dtype`)."""
    dt = float64 if get_default_dtype() is float64 else float32
    return Tensor(0.0, dtype=dt)


def _check_not_differentiable(differentiable: bool) -> None:
    if differentiable:
        raise NotImplementedError("eager.optim does not support differentiable=True: the "
                                  "updates run under no_grad")


def _hooked_step(step):
    """Wrap a subclass's `step` so that step pre/post hooks run around it and the optimizer
    remembers it stepped (the learning-rate schedulers warn when they step first). A step that
    calls `super().step()` runs the hooks once."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if self.__dict__.get("_in_step"):
            return step(self, *args, **kwargs)
        for pre in tuple(self.__dict__.get("_optimizer_step_pre_hooks", {}).values()):
            result = pre(self, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError(f"{pre} must return None or a tuple of (new_args, "
                                       f"new_kwargs), but got {result}.")
                args, kwargs = result
        self._in_step = True
        try:
            out = step(self, *args, **kwargs)
        finally:
            self._in_step = False
        self._opt_called = True
        for post in tuple(self.__dict__.get("_optimizer_step_post_hooks", {}).values()):
            post(self, args, kwargs)
        return out

    wrapper._hooked = True
    return wrapper


class Optimizer:
    """Base class of all optimizers (`torch.optim.Optimizer`).

    Args:
        params: an iterable of tensors, of `(name, tensor)` pairs, or of dicts (parameter
            groups: a `"params"` entry plus per-group options overriding `defaults`).
        defaults: the default value of every option (`lr`, `weight_decay`, ...); a value of
            `required` must be given by every group.

    Attributes: `defaults`; `param_groups` (a list of dicts, each with `"params"`, a list of
    tensors, and every option); `state` (a `defaultdict(dict)` keyed by the parameter tensor).

    Raises:
        TypeError: `params` is a single Tensor, a set, or holds something not a Tensor.
        ValueError: `params` is empty ("optimizer got an empty parameter list"); a parameter is
            not a leaf ("can't optimize a non-leaf Tensor"); a parameter is in two groups; a
            group lacks a required option.
    """

    def __init__(self, params, defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self._optimizer_step_pre_hooks: dict = {}
        self._optimizer_step_post_hooks: dict = {}
        self._in_step = False  # (True inside step's hook wrapper: there from the start, so a
        # compiled `opt.step` does not recompile when the first step sets it)
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            "Tensors or dicts, but got " + _typename(params))
        self.state: defaultdict = defaultdict(dict)
        self.param_groups: list[dict[str, Any]] = []
        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for group in param_groups:
            self.add_param_group(group)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        step = cls.__dict__.get("step")
        if step is not None and not getattr(step, "_hooked", False):
            cls.step = _hooked_step(step)

    # ---------------------------------------------------------------- groups

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Append a parameter group (a dict with `"params"` and optional per-group options;
        missing options take `defaults`). Raises as the constructor does."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        else:
            params = list(params)
        tensors, names = [], []
        for p in params:
            if isinstance(p, tuple):
                names.append(p[0])
                tensors.append(p[1])
            else:
                tensors.append(p)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError("all optimizer params should be with/without names. Some param "
                                 "names are missing")
            param_group["param_names"] = names
        for p in tensors:
            if not isinstance(p, Tensor):
                raise TypeError("optimizer can only optimize Tensors, but one of the params is "
                                + _typename(p))
            if not self.defaults.get("differentiable", None) and not (p.is_leaf
                                                                      or p.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")
        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError("parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            param_group.setdefault(name, default)
        ids = [id(p) for p in tensors]
        if len(ids) != len(set(ids)):
            warnings.warn("optimizer contains a parameter group with duplicate parameters; in "
                          "future, this will cause an error; see "
                          "github.com/pytorch/pytorch/issues/40967 for more information",
                          stacklevel=3)
        seen: set[int] = set()
        for group in self.param_groups:
            seen.update(id(p) for p in group["params"])
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError("all optimizer param groups should be with/without names. "
                                 f"cannot add param group {which} to the optimizer")
        if not seen.isdisjoint(ids):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    # ---------------------------------------------------------------- stepping

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of every parameter: `.grad = None` (default), or, with
        `set_to_none=False`, detach the grad and fill it with zeros in place."""
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    if g.grad_fn is not None:
                        g.detach_()
                    else:
                        g.requires_grad_(False)
                    g.zero_()

    def step(self, closure=None):
        """Perform one optimization step (subclasses implement it). `closure`, when given, is
        called under `eager.enable_grad()` to re-evaluate the model; its loss is returned."""
        raise NotImplementedError

    @staticmethod
    def _eval_closure(closure):
        if closure is None:
            return None
        with enable_grad():
            return closure()

    def _params_with_grad(self, group):
        """The group's parameters that have a gradient (the others are skipped, as PyTorch)."""
        return [p for p in group["params"] if p.grad is not None]

    def register_step_pre_hook(self, hook) -> RemovableHandle:
        """`hook(optimizer, args, kwargs) -> None or (new_args, new_kwargs)`, run before each
        `step`."""
        key = next(_hook_ids)
        self._optimizer_step_pre_hooks[key] = hook
        return RemovableHandle(self._optimizer_step_pre_hooks, key)

    def register_step_post_hook(self, hook) -> RemovableHandle:
        """`hook(optimizer, args, kwargs) -> None`, run after each `step`."""
        key = next(_hook_ids)
        self._optimizer_step_post_hooks[key] = hook
        return RemovableHandle(self._optimizer_step_post_hooks, key)

    # ---------------------------------------------------------------- checkpoints

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state as `{"state": {id: {...}}, "param_groups": [{..., "params":
        [id, ...]}]}`: parameters are replaced by integer ids numbered in group order (PyTorch's
        layout). The state's tensors are the live ones (not copies), as PyTorch's."""
        mapping: dict[int, int] = {}
        start = 0

        def pack_group(group):
            nonlocal start
            packed = {k: v for k, v in group.items() if k != "params"}
            for i, p in enumerate(group["params"], start):
                mapping.setdefault(id(p), i)
            packed["params"] = [mapping[id(p)] for p in group["params"]]
            start += len(packed["params"])
            return packed

        groups = [pack_group(g) for g in self.param_groups]
        state = {(mapping[id(k)] if isinstance(k, Tensor) else k): v
                 for k, v in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load a `state_dict()`: groups are matched in order and parameters by position; the
        loaded hyperparameters replace the current ones; floating state tensors are cast to
        their parameter's dtype and device (`step` counters are kept as they are).

        Raises:
            ValueError: the number of groups, or of parameters in a group, differs.
        """
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError("loaded state dict contains a parameter group that doesn't match "
                             "the size of optimizer's group")
        id_map = dict(zip(itertools.chain.from_iterable(g["params"] for g in saved_groups),
                          itertools.chain.from_iterable(g["params"] for g in groups)))

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                if key == "step":
                    return value
                if param.is_floating_point():
                    return value.to(dtype=param.dtype, device=param.device)
                return value.to(device=param.device)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, Iterable) and not isinstance(value, str):
                return type(value)(cast(param, v) for v in value)
            return value

        state: defaultdict = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                param = id_map[k]
                state[param] = cast(param, v)
            else:
                state[k] = v

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})

    def __getstate__(self) -> dict[str, Any]:
        return {"defaults": self.defaults, "state": self.state,
                "param_groups": self.param_groups}

    # (key, value) options that groups saved by older versions may lack (PyTorch's setstate)
    _group_defaults: tuple = ()

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self.__dict__.setdefault("_optimizer_step_pre_hooks", {})
        self.__dict__.setdefault("_optimizer_step_post_hooks", {})
        self.defaults.setdefault("differentiable", False)
        for group in self.param_groups:
            for key, value in self._group_defaults:
                group.setdefault(key, value)

    def __repr__(self) -> str:
        s = type(self).__name__ + " ("
        for i, group in enumerate(self.param_groups):
            s += f"\nParameter Group {i}\n"
            for key in sorted(group):
                if key != "params":
                    s += f"    {key}: {group[key]}\n"
        return s + ")"


def _no_grad_step(step):
    """Run an algorithm's `step` under `no_grad` (PyTorch's `_use_grad_for_differentiable` with
    `differentiable=False`); the closure still runs under `enable_grad`."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper


# ---------------------------------------------------------------- fused updates, unfused
