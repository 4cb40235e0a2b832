"""`torch.optim.swap_in_optimizer_params_and_state`: run an optimizer, for the duration of a
`with` block, on other parameter tensors and another state (an `optimizer.state_dict()`-shaped
dict), leaving the live optimizer as it was afterwards.

PyTorch uses it to trace `optimizer.step()` on stand-in tensors; in wick it runs a step on
copies (a look-ahead, a functional step over a second set of weights). Semantics of
PyTorch's `torch/optim/_stateless.py`. Touches `eager.optim.optimizer` only.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict

__all__ = ["swap_in_optimizer_params_and_state"]


def _prepare(optimizer, swapin_parameters: dict, swapin_optim_state: dict):
    """Check the swapped-in state against the live groups; returns (state by packed id,
    [(live group, swapped-in group, its parameters)])."""
    if not optimizer.state:
        raise RuntimeError("swap_in_optimizer_params_and_state requires initialized optimizer "
                           "state.")
    if not isinstance(swapin_optim_state, dict):
        raise RuntimeError(  # noqa: TRY004  (torch's type)
            "swap_in_optimizer_params_and_state requires a DCP-style optimizer state_dict.")
    state = swapin_optim_state.get("state")
    groups = swapin_optim_state.get("param_groups")
    if not isinstance(state, dict) or not isinstance(groups, list) or \
            len(groups) != len(optimizer.param_groups):
        raise RuntimeError("swap_in_optimizer_params_and_state requires swapin_optim_state to "
                           "have 'state' (a dict) and 'param_groups' matching "
                           "optimizer.param_groups.")
    flat = list(swapin_parameters.values())
    offset, seen, infos = 0, set(), []
    for live, swap in zip(optimizer.param_groups, groups):
        ids = list(swap["params"])
        if len(ids) != len(live["params"]) or offset + len(ids) > len(flat):
            raise RuntimeError("swap_in_optimizer_params_and_state requires the explicit "
                               "parameter state to match optimizer.param_groups ordering.")
        seen.update(ids)
        infos.append((live, swap, flat[offset:offset + len(ids)]))
        offset += len(ids)
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError("swap_in_optimizer_params_and_state requires "
                           "swapin_optim_state['state'] to be keyed only by packed parameter "
                           f"ids from param_groups[*]['params']; got extra keys {extra!r}.")
    return state, infos


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer, swapin_parameters: dict,
                                       swapin_optim_state: dict):
    """Within the block, `optimizer`'s groups hold `swapin_parameters` (a dict of tensors in
    the optimizer's parameter order) and the hyperparameters of
    `swapin_optim_state["param_groups"]`, and its state is `swapin_optim_state["state"]`
    (keyed by packed ids, as `state_dict()`); in-place updates of those tensors are what
    remains. RuntimeError when the optimizer has no state yet or the layouts differ."""
    state, infos = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped = defaultdict(dict)
        for live, swap, params in infos:
            live["params"] = params
            live.update((k, v) for k, v in swap.items() if k != "params")
            for p, pid in zip(params, swap["params"]):
                swapped[p] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
