"""Modules called from the eagerly run part of a compiled frame are compiled as their own
frames (as PEP 523's frame hook makes Dynamo do: a `.item()` in an eval loop runs that loop
eagerly, but `model(x)` inside it is still compiled).

`region(cf)` wraps the run of a loop function or an "eager" resume function of CompiledFunction
`cf` (`transform.py`): while it runs, eager's class-wide hook flag (`_wick_has_hooks`, the one
test of `Module.__call__`'s fast path) is set and `eager.nn.module_hooks.NESTED_CALL` holds
this region's handler, so each module call reaches it. A module whose `forward` is user code
and which has no hooks (`targets.callee_target`) is called through its compiled wrapper
(`targets.compiled_callee`: cached on `cf`, its own graphs, guards and breaks); any other
module (eager's own `Linear`, `Sequential`: torch.compile skips torch.nn's frames too) runs as
it is. The flag is restored around the compiled call (its guards read it) and the handler
declines inside it, so the callee's own eagerly run parts are handled by its own regions.
Outside regions nothing changes (no cost on the fast path). Plain functions called from such
a region still run eagerly (wick has no frame hook for them). Touches `eager.nn.module_hooks`,
`capture`.
"""

from __future__ import annotations

import contextlib

from eager.nn import module_hooks

from .targets import compiled_callee

_HOOKS = module_hooks.ModuleHooks


def _decline(module, args, kwargs):
    return NotImplemented


def _call(cf, outer_flag: bool, module, args, kwargs):
    target = compiled_callee(cf, module)
    if target is module:
        return NotImplemented
    stack = module_hooks.NESTED_CALL
    stack.append(_decline)
    _HOOKS._wick_has_hooks = outer_flag  # (what the callee's guards were made with)
    try:
        return target(*args, **kwargs)
    finally:
        stack.pop()
        _HOOKS._wick_has_hooks = True


@contextlib.contextmanager
def region(cf):
    """Module calls inside the block go through `cf`'s compiled callees (module doc)."""
    stack = module_hooks.NESTED_CALL
    outer = _HOOKS.__dict__.get("_wick_has_hooks", False)
    stack.append(lambda module, args, kwargs: _call(cf, outer, module, args, kwargs))
    _HOOKS._wick_has_hooks = True
    try:
        yield
    finally:
        stack.pop()
        _HOOKS._wick_has_hooks = outer
