"""`SGD`: stochastic gradient descent with momentum, dampening, Nesterov and weight decay, as
`torch.optim.SGD` (the algorithm of https://pytorch.org/docs/stable/generated/torch.optim.SGD.html).

The update runs under `no_grad` as in-place tensor ops on the parameters (`add_`, `mul_`), so
version counters and autograd see it as PyTorch's. Touches `eager.optim.optimizer` only.
"""

from __future__ import annotations

from .arrays import sgd_update
from .optimizer import Optimizer, _check_not_differentiable, _no_grad_step, _to_scalar

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
        """One SGD step over every parameter with a `.grad`; returns the closure's loss."""
        loss = self._eval_closure(closure)
        for group in self.param_groups:
            lr = _to_scalar(group["lr"])
            wd, momentum = group["weight_decay"], group["momentum"]
            dampening, nesterov = group["dampening"], group["nesterov"]
            maximize = group["maximize"]
            for p in self._params_with_grad(group):
                state = self.state[p] if momentum != 0 else None
                if (momentum == 0 or state) and sgd_update(
                        p, state.get("momentum_buffer") if state else None, lr, momentum,
                        dampening, wd, nesterov, maximize):
                    continue  # (the same numbers on the arrays: optim/arrays.py)
                grad = -p.grad if maximize else p.grad
                if wd != 0:
                    grad = grad.add(p, alpha=wd)
                if momentum != 0:
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = grad.detach().clone()
                        state["momentum_buffer"] = buf
                    else:
                        buf.mul_(momentum).add_(grad, alpha=1 - dampening)
                    grad = grad.add(buf, alpha=momentum) if nesterov else buf
                p.add_(grad.mul(-lr))  # (= add_(grad, alpha=-lr), bit for bit: y * alpha
                # first, as the registry's add; this form writes into p without a copy)
        return loss
