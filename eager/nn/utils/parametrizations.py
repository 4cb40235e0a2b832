"""`torch.nn.utils.parametrizations`: `weight_norm`, `spectral_norm` and `orthogonal` as
parametrizations (`nn.utils.parametrize`), the forms PyTorch recommends over the older
hook-based `nn.utils.weight_norm` / `spectral_norm`.

`weight_norm`: w = g * v / ||v|| (Salimans & Kingma 2016), norms over every dim but `dim`,
originals `original0` (g) and `original1` (v). `spectral_norm`: w / sigma(w) with sigma by
power iteration on the buffers `_u`, `_v` (Miyato et al. 2018), one iteration per training
forward. `orthogonal`: an orthogonal (unitary) matrix through the matrix exponential, the
Cayley map or Householder reflections of an unconstrained original (PyTorch's trivialization:
the original starts as -I and a `base` holds the initial matrix). Semantics of PyTorch's
`torch/nn/utils/parametrizations.py`. Touches `eager` (nn, linalg) only.
"""

from __future__ import annotations

from enum import Enum, auto

from ir.dtypes import finfo

from ...creation import empty, eye, zeros_like
from ...dispatch import FUNCTIONS
from ...grad_mode import no_grad
from ...tensor import Tensor
from .. import functional as F
from ..module import Module
from . import parametrize
from .orthogonal_maps import geqrf, householder_product, make_orthogonal, matrix_exp

__all__ = ["orthogonal", "spectral_norm", "weight_norm"]


def _mh(x: Tensor) -> Tensor:
    """The conjugate transpose of the last two dimensions (`Tensor.mH`)."""
    return x.mT.conj() if x.is_complex() else x.mT


def norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of v over every dimension but `dim`, kept as size-1 dimensions (dim -1:
    the norm of the whole tensor, 0-d), as `torch.norm_except_dim(v, 2, dim)`."""
    if dim == -1:
        return FUNCTIONS["linalg_vector_norm"](v, 2)
    dims = [d for d in range(v.ndim) if d != dim]
    return FUNCTIONS["linalg_vector_norm"](v, 2, dims, True)


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g, weight_v):
        return weight_v * (weight_g / norm_except_dim(weight_v, self.dim))

    def right_inverse(self, weight):
        return norm_except_dim(weight, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Reparametrize `module.<name>` as g * v / ||v|| (norms over all dims but `dim`; None:
    the whole tensor). The magnitude g is `parametrizations.<name>.original0`, the direction
    v `original1`. Returns the module."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError("Dimension out of range (expected to be in range of "
                             f"[-{ndim}, {ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = self._reshape_weight_to_matrix(weight)
            h, w = tuple(weight_mat.shape)
            u = empty(h, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            v = empty(w, dtype=weight.dtype, device=weight.device).normal_(0, 1)
            self.register_buffer("_u", F.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", F.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.ndim) if d != self.dim))
        return weight.flatten(1)

    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            for _ in range(n_power_iterations):
                self._u.copy_(F.normalize(FUNCTIONS["mv"](weight_mat, self._v), dim=0,
                                          eps=self.eps))
                self._v.copy_(F.normalize(FUNCTIONS["mv"](_mh(weight_mat), self._u), dim=0,
                                          eps=self.eps))

    def forward(self, weight):
        if weight.ndim == 1:
            return F.normalize(weight, dim=0, eps=self.eps)
        weight_mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        sigma = FUNCTIONS["vdot"](u, FUNCTIONS["mv"](weight_mat, v))
        return weight / sigma

    def right_inverse(self, value):
        return value


def _is_conv_transpose(module) -> bool:
    return parametrize.type_before_parametrizations(module).__name__ in (
        "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d")


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrize `module.<name>` as w / sigma(w), sigma the largest singular value of w
    viewed as a matrix (dim `dim` first; default 1 for ConvTranspose, else 0), estimated by
    power iteration on the buffers `parametrizations.<name>[0]._u` / `_v` (15 iterations at
    registration, `n_power_iterations` per training forward). ValueError when the module has
    no such tensor; IndexError for a bad dim."""
    weight = getattr(module, name, None)
    is_tensor = isinstance(weight, Tensor)
    if not is_tensor:  # (ValueError: torch's type)
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if _is_conv_transpose(module) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    def __init__(self, weight, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        if weight.is_complex() and orthogonal_map == _OrthMaps.householder:
            raise ValueError("The householder parametrization does not support complex "
                             "tensors.")
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, x: Tensor) -> Tensor:
        n, k = x.size(-2), x.size(-1)
        transposed = n < k
        if transposed:
            x = x.mT
            n, k = k, n
        if self.orthogonal_map in (_OrthMaps.matrix_exp, _OrthMaps.cayley):
            x = x.tril()
            if n != k:
                x = FUNCTIONS["cat"]([x, x.new_zeros(n, n - k).expand(*x.shape[:-2], -1, -1)],
                                     -1)
            a = x - _mh(x)
            if self.orthogonal_map == _OrthMaps.matrix_exp:
                q = matrix_exp(a)
            else:
                ident = eye(n, dtype=a.dtype, device=a.device)
                q = FUNCTIONS["linalg_solve"](ident - 0.5 * a, ident + 0.5 * a)
            if n != k:
                q = q[..., :k]
        else:
            a = x.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (a * a).sum(dim=-2))
            q = householder_product(a, tau)
            q = q * x.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        if "base" in self._buffers:
            q = self.base @ q
        return q.mT if transposed else q

    def right_inverse(self, q: Tensor) -> Tensor:
        with no_grad():
            return self._right_inverse(q)

    def _right_inverse(self, q: Tensor) -> Tensor:
        if tuple(q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        q_init = q
        n, k = q.size(-2), q.size(-1)
        transpose = n < k
        if transpose:
            q = q.mT
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map != _OrthMaps.householder:
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            a, tau = geqrf(q)
            diag = a.diagonal(dim1=-2, dim2=-1)
            diag.copy_(diag.sign() * (1 - 2 * (tau == 0.0).to(diag.dtype)))
            return a.mT if transpose else a
        if n == k:
            ident = eye(k, dtype=q.dtype, device=q.device)
            tol = 10.0 * n * finfo(q.real.dtype if q.is_complex() else q.dtype).eps
            is_orthogonal = bool(((_mh(q) @ q - ident).abs() <= tol).all())
            q = q.clone() if is_orthogonal else make_orthogonal(q)
        else:
            noise = empty(*(tuple(q.shape[:-2]) + (n, n - k)), dtype=q.dtype,
                          device=q.device).normal_()
            q = make_orthogonal(FUNCTIONS["cat"]([q, noise], -1))
        self.base = q
        neg_id = zeros_like(q_init)
        neg_id.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_id


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Constrain `module.<name>` (a matrix or batch of them) to be orthogonal (unitary),
    through `orthogonal_map` "matrix_exp" (default for square or complex), "cayley" or
    "householder" (default otherwise). ValueError for a missing tensor, fewer than 2
    dimensions, or an unknown map."""
    weight = getattr(module, name, None)
    is_tensor = isinstance(weight, Tensor)
    if not is_tensor:  # (ValueError: torch's type)
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. Got a tensor of "
                         f"{weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.size(-2) == weight.size(-1) \
            or weight.is_complex() else "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
