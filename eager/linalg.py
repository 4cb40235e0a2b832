"""`eager.linalg`: PyTorch's `torch.linalg` namespace, over the registry's `linalg_*` ops.

No op is defined here: each name is the generated function of a registry op (`ir/ops/matrix.py`,
`ir/ops/linalg.py`), so autograd, capture and the test matrix see the same ops. Semantics:
the `torch.linalg` documentation. Touches only `eager.dispatch`.
"""

from __future__ import annotations

from ir.ops.linalg import LinAlgError

from .dispatch import FUNCTIONS

norm = FUNCTIONS["linalg_norm"]
vector_norm = FUNCTIONS["linalg_vector_norm"]
matrix_norm = FUNCTIONS["linalg_matrix_norm"]
inv = FUNCTIONS["linalg_inv"]
det = FUNCTIONS["linalg_det"]
slogdet = FUNCTIONS["linalg_slogdet"]
solve = FUNCTIONS["linalg_solve"]
cholesky = FUNCTIONS["linalg_cholesky"]
qr = FUNCTIONS["linalg_qr"]
svd = FUNCTIONS["linalg_svd"]
svdvals = FUNCTIONS["linalg_svdvals"]
eigh = FUNCTIONS["linalg_eigh"]
eigvalsh = FUNCTIONS["linalg_eigvalsh"]
pinv = FUNCTIONS["linalg_pinv"]
matmul = FUNCTIONS["matmul"]

__all__ = [
           "LinAlgError",
           "cholesky",
           "det",
           "eigh",
           "eigvalsh",
           "inv",
           "matmul",
           "matrix_norm",
           "norm",
           "pinv",
           "qr",
           "slogdet",
           "solve",
           "svd",
           "svdvals",
           "vector_norm",
]
