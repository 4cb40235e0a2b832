"""eager.autograd: define-by-run reverse mode with PyTorch's semantics, forward mode, tools.

- `engine`: graph nodes (`BackwardNode`, `AccumulateGrad`), `backward`, `grad`.
- `views`: in-place ops on views rebase their base's history (CopySlices).
- `hooks`: tensor/node hooks, `retain_grad`; `function`: custom `Function`s.
- `forward_ad`: dual tensors; `functional`: vjp, jvp, jacobian, hessian, hvp, vhp.
- `gradcheck`: finite-difference checks; `anomaly`: `detect_anomaly`.

Importing this package installs the autograd methods of `eager.Tensor` (`retain_grad`,
`register_hook`, `retains_grad`, `detach_`, `requires_grad_`, `is_inference`...) with
`install_tensor_methods()`; `eager/tensor.py` and `eager/dispatch.py` import `backward`,
`grad`, `BackwardNode` and `AccumulateGrad` from here. Semantics: PyTorch's `torch.autograd`.
"""

from __future__ import annotations

from .. import grad_mode
from ..grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from . import anomaly, engine, forward_ad, functional, hooks, variable
from . import gradcheck as _gradcheck_module
from .anomaly import detect_anomaly, is_anomaly_enabled, set_detect_anomaly
from .engine import AccumulateGrad, BackwardNode, Node, backward, grad
from .function import Function, FunctionCtx, once_differentiable
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .tensor_methods import install_tensor_methods
from .variable import Variable, enforce_grad_layout_policy, set_multithreading_enabled

from . import graph  # noqa: E402  (torch.autograd.graph: Node, GradientEdge...)

__all__ = [
    "AccumulateGrad", "BackwardNode", "Function", "FunctionCtx", "GradcheckError", "Node",
    "Variable", "anomaly", "backward", "detect_anomaly", "enable_grad",
    "enforce_grad_layout_policy", "forward_ad", "functional", "grad", "grad_mode", "gradcheck",
    "gradgradcheck", "hooks", "inference_mode", "is_anomaly_enabled", "is_grad_enabled",
    "is_inference_mode_enabled", "no_grad", "once_differentiable", "set_detect_anomaly",
    "set_grad_enabled", "set_multithreading_enabled", "variable",
]

install_tensor_methods()
del _gradcheck_module
