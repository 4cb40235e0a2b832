"""`eager.linalg`: PyTorch's `torch.linalg` namespace, over the registry's `linalg_*` ops.

No op is defined here: each name is the generated function of a registry op (`ir/ops/matrix.py`,
`ir/ops/norms.py`, `ir/ops/linalg_solve.py`, `ir/ops/linalg_functions.py`), so autograd,
capture and the test matrix see the same ops; `diagonal` is `torch.diagonal` with the
matrix dims as defaults. Semantics: the `torch.linalg` documentation. Touches only
`eager.dispatch`.
"""

from __future__ import annotations

from ir.ops.linalg import LinAlgError

from .dispatch import FUNCTIONS

_NAMES = (
    "norm", "vector_norm", "matrix_norm", "inv", "inv_ex", "det", "slogdet", "solve",
    "solve_ex", "solve_triangular", "cholesky", "cholesky_ex", "qr", "svd", "svdvals", "eigh",
    "eigvalsh", "eig", "eigvals", "pinv", "lstsq", "lu", "lu_factor", "lu_factor_ex",
    "lu_solve", "matrix_exp", "matrix_power", "cond", "matrix_rank", "multi_dot",
    "householder_product", "tensorinv", "tensorsolve", "vander", "vecdot", "cross",
)
globals().update({name: FUNCTIONS["linalg_" + name] for name in _NAMES})
matmul = FUNCTIONS["matmul"]


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """`torch.linalg.diagonal`: `torch.diagonal` over the last two dims by default."""
    return FUNCTIONS["diagonal"](A, offset, dim1, dim2)


__all__ = ["LinAlgError", "diagonal", "matmul", *_NAMES]


# ---------------------------------------------------------------- top-level spellings


def lu(A, pivot=True, get_infos=False):
    """`torch.lu` (deprecated for linalg.lu_factor): (LU, pivots), plus LAPACK's infos with
    `get_infos` (no error is raised for a singular A then, as PyTorch's)."""
    out = FUNCTIONS["linalg_lu_factor_ex"](A, pivot=pivot)
    return tuple(out) if get_infos else (out.LU, out.pivots)


def cholesky(A, upper=False):
    """`torch.cholesky` (deprecated for linalg.cholesky), `upper` positional."""
    return FUNCTIONS["linalg_cholesky"](A, upper=upper)


def chain_matmul(*matrices):
    """`torch.chain_matmul`: `linalg.multi_dot` of 2-D tensors."""
    return FUNCTIONS["linalg_multi_dot"](list(matrices))


def frobenius_norm(input, dim=(-2, -1), keepdim=False):
    """`torch.frobenius_norm`: `linalg.vector_norm` over `dim`."""
    return FUNCTIONS["linalg_vector_norm"](input, 2, dim, keepdim)


def nuclear_norm(input, dim=(-2, -1), keepdim=False):
    """`torch.nuclear_norm`: `linalg.matrix_norm(ord='nuc')` over `dim`."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = (-2, -1), dim
    return FUNCTIONS["linalg_matrix_norm"](input, "nuc", dim, keepdim)


TOPLEVEL = {"lu": lu, "cholesky": cholesky, "chain_matmul": chain_matmul,
            "frobenius_norm": frobenius_norm, "nuclear_norm": nuclear_norm}


def install(namespace: dict, tensor_cls) -> None:
    """Define the top-level spellings in `namespace` (`eager`) and as Tensor methods."""
    namespace.update(TOPLEVEL)
    for name in ("lu", "cholesky"):
        setattr(tensor_cls, name, TOPLEVEL[name])
