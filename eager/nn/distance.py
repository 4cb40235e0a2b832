"""Distance functions and modules of `torch.nn` / `torch`: `cosine_similarity`,
`pairwise_distance`, `dist`, `pdist` (the registry's), and `nn.CosineSimilarity`,
`nn.PairwiseDistance`.

Compositions of registry ops written as ATen writes them (`aten/src/ATen/native/Distance.cpp`),
so their gradients are PyTorch's: `norm`'s backward gives 0 where a norm is 0 (PyTorch's
subgradient), and `cosine_similarity` clamps the norms at `eps` without a gradient through the
clamp (ATen clamps a clone in place under no_grad). `cdist` and `pdist` are registry ops
(`ir/ops/distance.py`). Touches `eager` only; re-exported by `eager.nn.functional`, `eager.nn`
and `eager`.
"""

from __future__ import annotations

from ir import dtypes as D

from ..dispatch import FUNCTIONS as _F
from .module import Module

_norm = _F["norm"]
pdist = _F["pdist"]
cdist = _F["cdist"]


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps), dim) of the broadcast operands
    (`torch.nn.functional.cosine_similarity`; result: the broadcast shape without `dim`).
    Integer operands are cast to the floating common dtype; RuntimeError when that dtype is not
    floating; IndexError for `dim` out of range. The clamp at `eps` carries no gradient (the
    norms' own gradient flows, 0 at a zero vector), as ATen's."""
    f1, f2 = x1.dtype.is_floating_point, x2.dtype.is_floating_point
    if not (f1 or f2):
        common = D.result_type((x1.dtype, x1.ndim), (x2.dtype, x2.ndim))
        raise RuntimeError(f"expected common dtype to be floating point, yet common dtype is "
                           f"{common.title}")
    if not f1:  # an integer operand takes the other's (floating) dtype, as ATen's
        x1 = x1.to(x2.dtype)
    elif not f2:
        x2 = x2.to(x1.dtype)
    x1, x2 = _F["broadcast_tensors"](x1, x2)
    n1 = _norm(x1, 2, dim, keepdim=True)
    n2 = _norm(x2, 2, dim, keepdim=True)
    n1 = n1 + (n1.clamp_min(eps) - n1).detach()
    n2 = n2 + (n2.clamp_min(eps) - n2).detach()
    return ((x1 / n1) * (x2 / n2)).sum(dim)


def pairwise_distance(x1, x2, p=2.0, eps=1e-6, keepdim=False):
    """The p-norm of x1 - x2 + eps over the last dim of the broadcast operands
    (`torch.nn.functional.pairwise_distance`); `keepdim` keeps it as size 1. The norm's
    gradient is PyTorch's (0 where the norm is 0)."""
    dim = max(x1.ndim, x2.ndim) - 1
    return _norm(x1 - x2 + eps, p, dim if dim >= 0 else None, keepdim=keepdim)


def dist(input, other, p=2):
    """The p-norm of input - other over every element, a 0-d tensor (`torch.dist`): operands
    broadcast and promote; RuntimeError for integer operands (PyTorch's norm message)."""
    diff = input - other
    if not (diff.dtype.is_floating_point or diff.dtype.is_complex):
        raise RuntimeError("norm(): input dtype should be either floating point or complex. "
                           f"Got {diff.dtype.title} instead.")
    return _norm(diff, p)


class PairwiseDistance(Module):
    """`F.pairwise_distance(x1, x2, norm, eps, keepdim)` (`torch.nn.PairwiseDistance`):
    x1, x2 (N, D) or (D,), broadcasting; result (N,) or () (keepdim: a trailing 1)."""

    def __init__(self, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
        super().__init__()
        self.norm, self.eps, self.keepdim = p, eps, keepdim

    def forward(self, x1, x2):
        return pairwise_distance(x1, x2, self.norm, self.eps, self.keepdim)


class CosineSimilarity(Module):
    """`F.cosine_similarity(x1, x2, dim, eps)` (`torch.nn.CosineSimilarity`): x1, x2
    broadcastable (*, D_dim, *); result without `dim`."""

    def __init__(self, dim: int = 1, eps: float = 1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return cosine_similarity(x1, x2, self.dim, self.eps)


__all__ = ["cosine_similarity", "pairwise_distance", "pdist"]
