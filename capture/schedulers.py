"""`scheduler.step()` of eager's LR schedulers inside a captured function, beside
`opt.step()`: no graph break (torch.compile: 1 graph, 0 breaks).

The optimizer's step reads each group's lr as a graph input (`optim_forms.py`), so the
schedule's change only needs to reach the real `param_groups` before the next call reads
them. The rule records the call as a deferred side effect (`SideEffects.defer_call`): after
the graph, with the other Python side effects in program order, eager's own `step()` runs on
the real scheduler (StepLR, MultiStepLR, LinearLR, ConstantLR, ExponentialLR,
CosineAnnealingLR, PolynomialLR, LambdaLR and MultiplicativeLR with any function, CyclicLR,
OneCycleLR, CosineAnnealingWarmRestarts, SequentialLR, ChainedScheduler, user subclasses that
only override `get_lr`), so lrs, `last_epoch`, `_last_lr` and its warnings are eager's exactly.
Later in the same frame the scheduler and its optimizer are opaque: reading an attribute of
either (a second `opt.step()`, `sched.get_last_lr()`) breaks the graph, and the deferred step
runs before that eager code, as in program order. Named breaks remain for an `epoch` argument
(deprecated), a scheduler made in the frame, and ReduceLROnPlateau (its `step(metric)`
reads a value: a break in torch too). Touches `eager.optim`, `capture`.
"""

from __future__ import annotations

from .variables import ConstantVariable, UserObjectVariable


def step_rule(tx, fn, args: list, kwargs: dict):
    """The vocabulary rule of the schedulers' `step` (module doc)."""
    from .vocabulary import no_graph_form

    sched = args[0]
    if len(args) > 1 or kwargs:
        raise no_graph_form(tx, fn, "an epoch argument (deprecated: the closed form)")
    if not isinstance(sched, UserObjectVariable) or sched.source is None:
        raise no_graph_form(tx, fn, "a scheduler made in the compiled function")
    value = sched.value
    optimizer = getattr(value, "optimizer", None)
    tx.out.side_effects.defer_call(sched, "step", (value, optimizer))
    return ConstantVariable(None)


def rules() -> dict:
    """{step function: step_rule} for eager's schedulers (ReduceLROnPlateau's stays a
    break)."""
    from eager.optim import lr_scheduler as L

    steps = {getattr(L, name).step for name in dir(L)
             if isinstance(getattr(L, name), type) and issubclass(getattr(L, name),
                                                                  L.LRScheduler)}
    steps.discard(L.ReduceLROnPlateau.step)
    return dict.fromkeys(steps, step_rule)
