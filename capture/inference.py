"""`with torch.inference_mode():` inside compiled code, as Dynamo traces it: the block runs as
`no_grad` in the graph, and the tensors made inside it that leave the graph (outputs, values
stored by side effects) are marked inference tensors after the graph runs, as eager's tensor
constructor marks them inside the mode (`Tensor.is_inference()`; in-place use outside the mode
then raises eager's error). `inference_mode(False)` and a break inside the block are not
modelled (a break: the call runs eagerly at the user's line).

`enter(tx, ctx, exit_var)` opens a block at BEFORE_WITH (its nodes so far noted),
`leave(tx, exit_var)` closes it (the nodes made since are inference nodes of the graph); `template(templater, v,
inner)` wraps an output's template so that `rebuild` marks it.
"""

from __future__ import annotations

from .variables import ConstantVariable, GradModeVariable


def make(tx, value, args: list, kwargs: dict):
    """The tracker of a grad-mode context the code makes: `no_grad()`, `enable_grad()`,
    `set_grad_enabled(b)` (which switches at the call, as in PyTorch), `inference_mode()` /
    `inference_mode(True)`; None for other calls."""
    from eager import grad_mode

    if value in (grad_mode.no_grad, grad_mode.enable_grad) and not args and not kwargs:
        return GradModeVariable(value is grad_mode.enable_grad)
    if value is grad_mode.set_grad_enabled and len(args) == 1 and args[0].is_constant():
        var = GradModeVariable(bool(args[0].value))
        var.prev = tx.out.grad_enabled
        tx.out.grad_enabled = var.mode
        return var
    if value is not grad_mode.inference_mode or kwargs or len(args) > 1 or \
            args and not (args[0].is_constant() and args[0].value is True):
        return None
    var = GradModeVariable(False)
    var.inference = True
    return var


def enter(tx, ctx, exit_var) -> None:
    """BEFORE_WITH of an inference block: remember the graph's nodes made before it."""
    if getattr(ctx, "inference", False):
        exit_var.inference_before = set(tx.out.graph.nodes)


def leave(tx, exit_var):
    """A grad-mode block's `__exit__`: the previous grad mode back, and for an inference
    block the nodes made inside are inference nodes. The call's result (None)."""
    tx.out.grad_enabled = exit_var.prev
    before = getattr(exit_var, "inference_before", None)
    if before is not None:
        made = [n for n in tx.out.graph.nodes if n not in before]
        tx.out.__dict__.setdefault("inference_nodes", set()).update(made)
    return ConstantVariable(None)


def template(templater, v, inner: tuple) -> tuple:
    """`inner`, marked as an inference tensor when rebuilt if `v` was made in a block."""
    if v.node in templater.out.__dict__.get("inference_nodes", ()):
        return ("inference", inner)
    return inner


def rebuild(value):
    """Mark a rebuilt output made inside an inference block (`template`)."""
    from eager.autograd.hooks import meta_of

    if not value.is_inference():
        meta_of(value).inference = True
    return value
