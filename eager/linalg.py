"""`eager.linalg`: PyTorch's `torch.linalg` namespace, over the registry's `linalg_*` ops.

No op is defined here: each name is the generated function of a registry op (`ir/ops/matrix.py`,
`ir/ops/norms.py`, `ir/ops/linalg_solve.py`, `ir/ops/linalg_functions.py`), so autograd,
capture and the test matrix see the same ops; `diagonal` is `torch.diagonal` with the
matrix dims as defaults. Semantics: the `torch.linalg` documentation. Touches only
`eager.dispatch`.
"""

from __future__ import annotations

from ir.ops.linalg import LinAlgError
from ir.ops.linalg_functions import geqrf_result
from ir.ops.linalg_lstsq import ldl_factor_ex_result, ldl_factor_result, ldl_info_error

from .dispatch import FUNCTIONS

norm = FUNCTIONS["linalg_norm"]
vector_norm = FUNCTIONS["linalg_vector_norm"]
matrix_norm = FUNCTIONS["linalg_matrix_norm"]
inv = FUNCTIONS["linalg_inv"]
inv_ex = FUNCTIONS["linalg_inv_ex"]
det = FUNCTIONS["linalg_det"]
slogdet = FUNCTIONS["linalg_slogdet"]
solve = FUNCTIONS["linalg_solve"]
solve_ex = FUNCTIONS["linalg_solve_ex"]
solve_triangular = FUNCTIONS["linalg_solve_triangular"]
cholesky = FUNCTIONS["linalg_cholesky"]
cholesky_ex = FUNCTIONS["linalg_cholesky_ex"]
qr = FUNCTIONS["linalg_qr"]
svd = FUNCTIONS["linalg_svd"]
svdvals = FUNCTIONS["linalg_svdvals"]
eigh = FUNCTIONS["linalg_eigh"]
eigvalsh = FUNCTIONS["linalg_eigvalsh"]
eig = FUNCTIONS["linalg_eig"]
eigvals = FUNCTIONS["linalg_eigvals"]
pinv = FUNCTIONS["linalg_pinv"]
lstsq = FUNCTIONS["linalg_lstsq"]
lu = FUNCTIONS["linalg_lu"]
lu_factor = FUNCTIONS["linalg_lu_factor"]
lu_factor_ex = FUNCTIONS["linalg_lu_factor_ex"]
lu_solve = FUNCTIONS["linalg_lu_solve"]
matrix_exp = FUNCTIONS["linalg_matrix_exp"]
matrix_power = FUNCTIONS["linalg_matrix_power"]
cond = FUNCTIONS["linalg_cond"]
matrix_rank = FUNCTIONS["linalg_matrix_rank"]
multi_dot = FUNCTIONS["linalg_multi_dot"]
householder_product = FUNCTIONS["linalg_householder_product"]
tensorinv = FUNCTIONS["linalg_tensorinv"]
tensorsolve = FUNCTIONS["linalg_tensorsolve"]
vander = FUNCTIONS["linalg_vander"]
vecdot = FUNCTIONS["linalg_vecdot"]
cross = FUNCTIONS["linalg_cross"]
ldl_solve = FUNCTIONS["linalg_ldl_solve"]
matmul = FUNCTIONS["matmul"]


def ldl_factor_ex(A, *, hermitian=False, check_errors=False):
    """`torch.linalg.ldl_factor_ex`: (LD, pivots, info) of LAPACK's sytrf/hetrf (lower);
    not differentiable, as in PyTorch."""
    parts = [FUNCTIONS["_linalg_ldl_factor"](A, hermitian, p) for p in ("LD", "pivots", "info")]
    if check_errors and parts[2].numpy().any():
        raise ldl_info_error(parts[2].numpy(), A.ndim > 2)
    return ldl_factor_ex_result(*parts)


def ldl_factor(A, *, hermitian=False):
    """`torch.linalg.ldl_factor`: (LD, pivots); LinAlgError where D has a zero pivot."""
    LD, pivots, _ = ldl_factor_ex(A, hermitian=hermitian, check_errors=True)
    return ldl_factor_result(LD, pivots)


def diagonal(A, *, offset=0, dim1=-2, dim2=-1):
    """`torch.linalg.diagonal`: `torch.diagonal` over the last two dims by default."""
    return FUNCTIONS["diagonal"](A, offset, dim1, dim2)


__all__ = [
    "LinAlgError",
    "cholesky",
    "cholesky_ex",
    "cond",
    "cross",
    "det",
    "diagonal",
    "eig",
    "eigh",
    "eigvals",
    "eigvalsh",
    "householder_product",
    "inv",
    "inv_ex",
    "ldl_factor",
    "ldl_factor_ex",
    "ldl_solve",
    "lstsq",
    "lu",
    "lu_factor",
    "lu_factor_ex",
    "lu_solve",
    "matmul",
    "matrix_exp",
    "matrix_norm",
    "matrix_power",
    "matrix_rank",
    "multi_dot",
    "norm",
    "pinv",
    "qr",
    "slogdet",
    "solve",
    "solve_ex",
    "solve_triangular",
    "svd",
    "svdvals",
    "tensorinv",
    "tensorsolve",
    "vander",
    "vecdot",
    "vector_norm",
]


# ---------------------------------------------------------------- top-level spellings
# (`torch.lu`, `torch.cholesky`...: not members of this namespace, whose `lu` and `cholesky`
# are linalg's)


def _top_lu(A, pivot=True, get_infos=False):
    """`torch.lu` (deprecated for linalg.lu_factor): (LU, pivots), plus LAPACK's infos with
    `get_infos` (no error is raised for a singular A then, as PyTorch's)."""
    out = FUNCTIONS["linalg_lu_factor_ex"](A, pivot=pivot)
    return tuple(out) if get_infos else (out.LU, out.pivots)


def _top_cholesky(A, upper=False):
    """`torch.cholesky` (deprecated for linalg.cholesky), `upper` positional."""
    return FUNCTIONS["linalg_cholesky"](A, upper=upper)


def _top_chain_matmul(*matrices):
    """`torch.chain_matmul`: `linalg.multi_dot` of 2-D tensors."""
    return FUNCTIONS["linalg_multi_dot"](list(matrices))


def _top_frobenius_norm(input, dim=(-2, -1), keepdim=False):
    """`torch.frobenius_norm`: `linalg.vector_norm` over `dim`."""
    return FUNCTIONS["linalg_vector_norm"](input, 2, dim, keepdim)


def _top_nuclear_norm(input, dim=(-2, -1), keepdim=False):
    """`torch.nuclear_norm`: `linalg.matrix_norm(ord='nuc')` over `dim`."""
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = (-2, -1), dim
    return FUNCTIONS["linalg_matrix_norm"](input, "nuc", dim, keepdim)


def _top_geqrf(input):
    """`torch.geqrf`: LAPACK's QR in Householder form, (a, tau); not differentiable (as in
    PyTorch)."""
    geqrf = FUNCTIONS["_geqrf"]
    return geqrf_result(geqrf(input, "a"), geqrf(input, "tau"))


TOPLEVEL = {"geqrf": _top_geqrf, "lu": _top_lu, "cholesky": _top_cholesky, "chain_matmul": _top_chain_matmul,
            "frobenius_norm": _top_frobenius_norm, "nuclear_norm": _top_nuclear_norm}
for _name, _fn in TOPLEVEL.items():
    _fn.__name__ = _fn.__qualname__ = _name


def install(namespace: dict, tensor_cls) -> None:
    """Define the top-level spellings in `namespace` (`eager`) and as Tensor methods."""
    namespace.update(TOPLEVEL)
    for name in ("lu", "cholesky", "geqrf"):
        setattr(tensor_cls, name, TOPLEVEL[name])
