"""Vocabulary rules of eager callables for issue 14's named items (B2), kept apart from
`eager_rules.py`'s table: an LR scheduler's `step()` (`schedulers.py`), and
`Tensor.requires_grad_`, `autograd.grad` and `autograd.functional.jacobian` in the graph
(`autograd_grad.py`).
`rule_for(value)` is consulted by `calls.call_eager` after the other tables.
Touches `eager`, `capture`.
"""

from __future__ import annotations

_RULES: dict = {}


def _build() -> dict:
    from eager import Tensor
    from eager.autograd import engine, functional

    from . import autograd_grad, schedulers

    rules = schedulers.rules()  # `sched.step()`: deferred after the graph

    rules[Tensor.requires_grad_] = autograd_grad.requires_grad_rule
    rules[engine.grad] = autograd_grad.grad_rule
    rules[functional.jacobian] = autograd_grad.jacobian_rule
    return rules


def rule_for(value):
    """The rule `rule(tx, fn, args, kwargs)` of eager callable `value`, or None."""
    if not _RULES:
        _RULES.update(_build())
    try:
        return _RULES.get(value)
    except TypeError:  # an unhashable callable
        return None
