"""The matrix functions behind `parametrizations.orthogonal`, composed of eager ops so that
autograd differentiates them: `matrix_exp` (scaling and squaring with the [13/13] Padé
approximant, Higham 2005, "The scaling and squaring method for the matrix exponential
revisited", SIAM J. Matrix Anal. Appl. 26(4), algorithm 2.3), `householder_product`
(LAPACK's orgqr: Q = H_1 ... H_k, H_i = I - tau_i v_i v_i^H) and `make_orthogonal` (the Q of a
QR decomposition with R's diagonal made positive, as PyTorch's `_make_orthogonal`).

wick's op registry has no matrix_exp or householder_product yet; these serve the
parametrization only (batched over leading dimensions). Touches `eager` only.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg

from ...creation import eye, tensor
from ...dispatch import FUNCTIONS
from ...tensor import Tensor

__all__ = ["geqrf", "householder_product", "make_orthogonal", "matrix_exp"]

_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0,
           1187353796428800.0, 129060195264000.0, 10559470521600.0, 670442572800.0,
           33522128640.0, 1323241920.0, 40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def matrix_exp(a: Tensor) -> Tensor:
    """exp(A) of a square matrix (or batch), differentiable: A / 2^s with s = max(0,
    ceil(log2(||A||_1 / theta_13))), the [13/13] Padé approximant r = (V - U)^-1 (V + U),
    squared s times."""
    n = a.size(-1)
    norm1 = float(a.abs().sum(-2).amax().item()) if a.numel() else 0.0
    s = max(0, math.ceil(math.log2(norm1 / _THETA13))) if norm1 > _THETA13 else 0
    if s:
        a = a / (2.0 ** s)
    b = _PADE13
    ident = eye(n, dtype=a.dtype, device=a.device)
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2)
             + b[7] * a6 + b[5] * a4 + b[3] * a2 + b[1] * ident)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 \
        + b[0] * ident
    r = FUNCTIONS["linalg_solve"](v - u, v + u)
    for _ in range(s):
        r = r @ r
    return r


def householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """The first k columns of H_1 H_2 ... H_k (n x k from an n x k `a`, k = tau's last size),
    H_i = I - tau_i v_i v_i^H with v_i = (0, ..., 0, 1, a[i+1:, i]) (`torch.linalg.
    householder_product`, LAPACK orgqr), differentiable in a and tau."""
    n, k = a.size(-2), a.size(-1)
    rows = np.arange(n)
    q = eye(n, dtype=a.dtype, device=a.device).expand(*a.shape[:-2], n, n)
    for i in range(tau.size(-1)):
        below = tensor((rows > i).astype(np.float64), dtype=a.real.dtype if a.is_complex()
                       else a.dtype)
        unit = tensor((rows == i).astype(np.float64), dtype=below.dtype)
        v = a[..., :, i] * below + unit
        qv = (q @ v.unsqueeze(-1))
        q = q - (qv * tau[..., i, None, None]) @ v.conj().unsqueeze(-2)
    return q[..., :, :k]


def make_orthogonal(a: Tensor) -> Tensor:
    """Q of A = QR with diag(R) made non-negative (Q's columns times sgn(diag(R))), for a
    tall or square matrix (or batch); not differentiable (used under no_grad)."""
    arr = a.detach().numpy()
    q, r = np.linalg.qr(arr)
    d = np.diagonal(r, axis1=-2, axis2=-1)
    sgn = np.where(d == 0, 0, d / np.where(d == 0, 1, np.abs(d)))
    return tensor(q * sgn[..., None, :], dtype=a.dtype, device=a.device)


def geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """LAPACK geqrf of a matrix: (R above the diagonal and the Householder vectors below,
    tau), as `torch.geqrf` (through scipy)."""
    (qr_, tau), _ = scipy.linalg.qr(a.detach().numpy(), mode="raw")
    return tensor(np.ascontiguousarray(qr_), dtype=a.dtype), tensor(tau, dtype=a.dtype)
