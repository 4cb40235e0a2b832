"""MultivariateNormal and LowRankMultivariateNormal, as torch.distributions': parameterized by a
covariance, precision or lower-triangular scale matrix (exactly one), computed through the
Cholesky factor with triangular solves (torch's `_batch_mahalanobis`); the low-rank form
cov = W W^T + diag(D) through the capacitance matrix I + W^T D^-1 W (Woodbury)."""

from __future__ import annotations

import math

from ..creation import eye
from ..dispatch import FUNCTIONS as F
from ..random import randn
from ..tensor import Size
from .. import linalg
from . import constraints
from .distribution import Distribution
from .utils import lazy_property

__all__ = ["LowRankMultivariateNormal", "MultivariateNormal"]


def _solve_lower(L, b):
    """L^-1 b for lower-triangular L (batched, broadcasting)."""
    return linalg.solve_triangular(L, b, upper=False)


def _batch_mahalanobis(bL, bx):
    """x^T (L L^T)^-1 x over the last dim of `bx`, L broadcast over batch dims."""
    import numpy as np

    shape = np.broadcast_shapes(tuple(bL.shape[:-2]), tuple(bx.shape[:-1]))
    n = bx.shape[-1]
    L = bL.expand(tuple(shape) + (n, n))
    x = bx.expand(tuple(shape) + (n,)).unsqueeze(-1)
    return _solve_lower(L, x).squeeze(-1).pow(2).sum(-1)


def _half_log_det(L):
    return L.diagonal(dim1=-2, dim2=-1).log().sum(-1)


class MultivariateNormal(Distribution):
    """N(loc, Sigma) in d dimensions: `loc` (..., d) and one of `covariance_matrix`,
    `precision_matrix`, `scale_tril` (..., d, d)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, precision_matrix, scale_tril)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        mat = next(m for m in (scale_tril, covariance_matrix, precision_matrix)
                   if m is not None)
        if mat.dim() < 2:
            raise ValueError("scale_tril/covariance_matrix/precision_matrix must be at least "
                             "two-dimensional, with optional leading batch dimensions")
        import numpy as np

        batch_shape = Size(np.broadcast_shapes(tuple(mat.shape[:-2]), tuple(loc.shape[:-1])))
        d = loc.shape[-1]
        if scale_tril is not None:
            self.scale_tril = scale_tril.expand(tuple(batch_shape) + (d, d))
        elif covariance_matrix is not None:
            self.covariance_matrix = covariance_matrix.expand(tuple(batch_shape) + (d, d))
        else:
            self.precision_matrix = precision_matrix.expand(tuple(batch_shape) + (d, d))
        self.loc = loc.expand(tuple(batch_shape) + (d,))
        super().__init__(batch_shape, Size((d,)), validate_args=validate_args)
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg.cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = _precision_to_scale_tril(precision_matrix)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        b = Size(batch_shape)
        loc_shape = tuple(b) + tuple(self.event_shape)
        cov_shape = loc_shape + tuple(self.event_shape)
        new.loc = self.loc.expand(loc_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        for k in ("covariance_matrix", "scale_tril", "precision_matrix"):
            if k in self.__dict__:
                setattr(new, k, getattr(self, k).expand(cov_shape))
        Distribution.__init__(new, b, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def scale_tril(self):
        d = self.event_shape[0]
        return self._unbroadcasted_scale_tril.expand(tuple(self._batch_shape) + (d, d))

    @lazy_property
    def covariance_matrix(self):
        L = self._unbroadcasted_scale_tril
        d = self.event_shape[0]
        return (L @ L.mT).expand(tuple(self._batch_shape) + (d, d))

    @lazy_property
    def precision_matrix(self):
        d = self.event_shape[0]
        return linalg.inv(self.covariance_matrix).expand(tuple(self._batch_shape) + (d, d))

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        d = self.event_shape[0]
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            tuple(self._batch_shape) + (d,))

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = randn(*shape, dtype=self.loc.dtype)
        return self.loc + (self._unbroadcasted_scale_tril @ eps.unsqueeze(-1)).squeeze(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_mahalanobis(self._unbroadcasted_scale_tril, diff)
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        return -0.5 * (self.event_shape[0] * math.log(2 * math.pi) + M) - half_log_det

    def entropy(self):
        half_log_det = _half_log_det(self._unbroadcasted_scale_tril)
        H = 0.5 * self.event_shape[0] * (1.0 + math.log(2 * math.pi)) + half_log_det
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))


def _precision_to_scale_tril(P):
    """torch's: the Cholesky factor of P^-1 from the flipped Cholesky of P."""
    Lf = linalg.cholesky(P.flip((-2, -1)))
    L_inv = Lf.flip((-2, -1)).mT
    Id = eye(P.shape[-1], dtype=P.dtype)
    return linalg.solve_triangular(L_inv, Id, upper=False)


class LowRankMultivariateNormal(Distribution):
    """N(loc, W W^T + diag(D)): `loc` (..., d), `cov_factor` W (..., d, r), `cov_diag` D
    (..., d)."""

    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        import numpy as np

        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        d = loc.shape[-1]
        if cov_factor.dim() < 2 or cov_factor.shape[-2] != d:
            raise ValueError(f"cov_factor must be at least two-dimensional, with optional "
                             f"leading batch dimensions and shape (..., {d}, rank)")
        if cov_diag.shape[-1:] != (d,):
            raise ValueError(f"cov_diag must be at least one-dimensional, with shape {(d,)}")
        batch = np.broadcast_shapes(tuple(loc.shape[:-1]), tuple(cov_factor.shape[:-2]),
                                    tuple(cov_diag.shape[:-1]))
        r = cov_factor.shape[-1]
        self.loc = loc.expand(batch + (d,))
        self.cov_factor = cov_factor.expand(batch + (d, r))
        self.cov_diag = cov_diag.expand(batch + (d,))
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = _capacitance_tril(cov_factor, cov_diag)
        super().__init__(Size(batch), Size((d,)), validate_args=validate_args)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        return (self._unbroadcasted_cov_factor.pow(2).sum(-1)
                + self._unbroadcasted_cov_diag).expand(tuple(self._batch_shape)
                                                       + tuple(self.event_shape))

    @lazy_property
    def covariance_matrix(self):
        W = self._unbroadcasted_cov_factor
        cov = W @ W.mT + F["diag_embed"](self._unbroadcasted_cov_diag)
        d = self.event_shape[0]
        return cov.expand(tuple(self._batch_shape) + (d, d))

    @lazy_property
    def scale_tril(self):
        return linalg.cholesky(self.covariance_matrix)

    @lazy_property
    def precision_matrix(self):
        return linalg.inv(self.covariance_matrix)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        r = self.cov_factor.shape[-1]
        eps_w = randn(*(tuple(shape[:-1]) + (r,)), dtype=self.loc.dtype)
        eps_d = randn(*tuple(shape), dtype=self.loc.dtype)
        return (self.loc + (self._unbroadcasted_cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
                + self._unbroadcasted_cov_diag.sqrt() * eps_d)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diff = value - self.loc
        M = _batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                       self._unbroadcasted_cov_diag, diff,
                                       self._capacitance_tril)
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        return -0.5 * (self.event_shape[0] * math.log(2 * math.pi) + log_det + M)

    def entropy(self):
        log_det = _batch_lowrank_logdet(self._unbroadcasted_cov_diag, self._capacitance_tril)
        H = 0.5 * (self.event_shape[0] * (1.0 + math.log(2 * math.pi)) + log_det)
        return H if len(self._batch_shape) == 0 else H.expand(tuple(self._batch_shape))


def _capacitance_tril(W, D):
    m = W.shape[-1]
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    K = Wt_Dinv @ W
    return linalg.cholesky(K + eye(m, dtype=W.dtype))


def _batch_lowrank_logdet(D, capacitance_tril):
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def _batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = (Wt_Dinv @ x.unsqueeze(-1)).squeeze(-1)
    mahalanobis_term1 = (x.pow(2) / D).sum(-1)
    mahalanobis_term2 = _batch_mahalanobis(capacitance_tril, Wt_Dinv_x)
    return mahalanobis_term1 - mahalanobis_term2
