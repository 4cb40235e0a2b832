"""`SGD`: stochastic gradient descent with momentum, dampening, Nesterov and weight decay, as
`torch.optim.SGD` (the algorithm of https://pytorch.org/docs/stable/generated/torch.optim.SGD.html).

The update (`update_rules.sgd_update`, the rule the captured graph records too) runs under
`no_grad` as in-place ops on the parameters (`add_`, `mul_`), so version counters and autograd
see it as PyTorch's. Touches `eager.optim` only.
"""

from __future__ import annotations

from .arrays import ArrayOps
from .optimizer import Optimizer, _check_not_differentiable, _no_grad_step, _to_scalar
from .update_rules import TensorOps, sgd_update

__all__ = ["SGD"]


class SGD(Optimizer):
    """Stochastic gradient descent (`torch.optim.SGD`).

    For each parameter with a gradient g (float tensors of the parameter's shape and dtype):
    g <- -g if maximize; g <- g + weight_decay * p; with momentum mu != 0, the buffer b <- g on
    the first step, else b <- mu * b + (1 - dampening) * g, and g <- g + mu * b (nesterov) or
    g <- b; finally p <- p - lr * g. State: `momentum_buffer` (None until the first step with a
    gradient when momentum is 0).

    Args: params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, and
    keywords maximize=False, foreach=None, differentiable=False, fused=None (foreach and fused
    are accepted and ignored).

    Raises:
        ValueError: lr, momentum or weight_decay negative ("Invalid learning rate: -1"), or
            nesterov without momentum > 0 and dampening 0.
        NotImplementedError: differentiable=True.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0,
                 nesterov=False, *, maximize=False, foreach=None, differentiable=False,
                 fused=None):
        if _to_scalar(lr) < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {"lr": lr, "momentum": momentum, "dampening": dampening,
                    "weight_decay": weight_decay, "nesterov": nesterov, "maximize": maximize,
                    "foreach": foreach, "differentiable": differentiable, "fused": fused}
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_not_differentiable(differentiable)
        super().__init__(params, defaults)

    _group_defaults = (
        ("nesterov", False), ("maximize", False), ("foreach", None), ("differentiable", False),
        ("fused", False),
    )

    @_no_grad_step
    def step(self, closure=None):
        """One SGD step over every parameter with a `.grad` (`update_rules.sgd_update`, on
        the numpy arrays when `arrays.ArrayOps` takes them); returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            hyper = (lr, group["momentum"], group["dampening"], group["weight_decay"],
                     group["nesterov"], group["maximize"])
            for p in self._params_with_grad(group):
                state = self.state[p] if hyper[1] != 0 else None
                buf = state.get("momentum_buffer") if state else None
                if hyper[1] == 0 or buf is not None:
                    ops = ArrayOps.take(p, {"momentum_buffer": buf} if hyper[1] else {})
                    if ops is not None:
                        sgd_update(ops, ops.param, ops.grad,
                                   ops.state.get("momentum_buffer"), *hyper)
                        continue
                _, new_buf = sgd_update(TensorOps, p, p.grad, buf, *hyper)
                if state is not None and buf is None:
                    state["momentum_buffer"] = new_buf
        return loss
