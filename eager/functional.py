"""`torch.functional`: the module PyTorch keeps its Python-defined tensor functions in; here the
same names, re-exported from `eager` (defined in the registry and `eager.extra`). Imported on
first use of `eager.functional` (after `eager` itself is complete)."""

from __future__ import annotations

from eager import (
    atleast_1d,
    atleast_2d,
    atleast_3d,
    block_diag,
    broadcast_shapes,
    broadcast_tensors,
    cartesian_prod,
    cdist,
    chain_matmul,
    einsum,
    lu,
    meshgrid,
    norm,
    split,
    tensordot,
    unique,
    unique_consecutive,
    unravel_index,
)

__all__ = ["atleast_1d", "atleast_2d", "atleast_3d", "block_diag", "broadcast_shapes",
           "broadcast_tensors", "cartesian_prod", "cdist", "chain_matmul", "einsum", "lu",
           "meshgrid", "norm", "split", "tensordot", "unique", "unique_consecutive",
           "unravel_index"]
