"""`eager.autograd.graph` (`torch.autograd.graph`): the autograd graph's node type (`Node`,
the base of every `grad_fn` and of `AccumulateGrad`), `GradientEdge` / `get_gradient_edge`
(the (node, input_nr) through which a tensor's gradient flows), and `increment_version`.
Saved-tensor hooks (`saved_tensors_hooks`, `save_on_cpu`) are not provided: wick's nodes keep
their operands as recorded. Semantics: the torch.autograd.graph documentation."""

from __future__ import annotations

from typing import NamedTuple

from ..tensor import bump_version
from .engine import AccumulateGrad, BackwardNode, Node, edge_of

__all__ = ["AccumulateGrad", "BackwardNode", "GradientEdge", "Node", "get_gradient_edge",
           "increment_version"]


class GradientEdge(NamedTuple):
    """The gradient's way into the graph: `node` and which of its inputs (`output_nr`)."""

    node: object
    output_nr: int


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge through which `tensor`'s gradient flows (its grad_fn, or the leaf's
    AccumulateGrad); RuntimeError for a tensor that does not require grad."""
    if not tensor.requires_grad:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that "
                           "does not require gradients")
    node, nr = edge_of(tensor)
    return GradientEdge(node, nr)


def increment_version(tensor) -> None:
    """Bump `tensor`'s version counter, as an in-place write would."""
    tensors = tensor if isinstance(tensor, (tuple, list)) else (tensor,)
    for t in tensors:
        bump_version(t)
