"""`kl_divergence(p, q)` and `register_kl`, as torch.distributions.kl: a registry of closed
forms keyed by the (type(p), type(q)) pair, the most specific registered pair chosen by the
classes' MROs; NotImplementedError for pairs without one."""

from __future__ import annotations

import math

from .. import linalg
from ..dispatch import FUNCTIONS as F
from ..special import xlogy
from .composite import Independent
from .continuous import Exponential, Laplace, Normal, Uniform
from .discrete import Bernoulli, Binomial, Categorical, OneHotCategorical, Poisson
from .gamma import Beta, Dirichlet, Gamma
from .multivariate import MultivariateNormal, _batch_mahalanobis
from .transforms import _sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY: dict = {}
_KL_MEMOIZE: dict = {}


def register_kl(type_p, type_q):
    """Decorator: `@register_kl(Normal, Normal) def kl(p, q): ...`."""
    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError("Expected type_p and type_q to be subclasses of Distribution")

    def decorator(fun):
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()
        return fun
    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [(sp, sq) for sp, sq in _KL_REGISTRY
               if issubclass(type_p, sp) and issubclass(type_q, sq)]
    if not matches:
        return NotImplemented

    def rank(pair):
        return (type_p.__mro__.index(pair[0]), type_q.__mro__.index(pair[1]))
    return _KL_REGISTRY[min(matches, key=rank)]


def kl_divergence(p, q):
    """KL(p || q) over the batch shape; NotImplementedError when no closed form is
    registered for the pair."""
    key = (type(p), type(q))
    fun = _KL_MEMOIZE.get(key)
    if fun is None:
        fun = _KL_MEMOIZE[key] = _dispatch_kl(*key)
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type "
                                  f"{type(p).__name__} and q type {type(q).__name__}")
    return fun(p, q)


def _xlogy(x, y):
    return xlogy(x, y)


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    t1 = p.probs * (F["softplus"](-q.logits) - F["softplus"](-p.logits))
    t1 = F["where"](q.probs == 0, math.inf, t1)
    t1 = F["where"](p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (F["softplus"](q.logits) - F["softplus"](p.logits))
    t2 = F["where"](q.probs == 1, math.inf, t2)
    t2 = F["where"](p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = F["where"]((q.probs == 0).expand_as(t), math.inf, t)
    t = F["where"]((p.probs == 0).expand_as(t), 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehot(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError("KL between Binomials where q.total_count > p.total_count "
                                  "is not implemented")
    kl = p.total_count * (p.probs * (p.logits - q.logits) + F["log1p"](-p.probs)
                          - F["log1p"](-q.probs))
    inf_idxs = p.total_count > q.total_count
    return F["where"](inf_idxs, math.inf, kl)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rate_ratio.log()


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = F["lgamma"](q.concentration) - F["lgamma"](p.concentration)
    t3 = (p.concentration - q.concentration) * F["digamma"](p.concentration)
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return F["where"](outside, math.inf, result)


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    common_term = p.high - p.low
    t1 = (math.sqrt(math.pi * 2) * q.scale / common_term).log()
    t2 = common_term.pow(2) / 12
    t3 = ((p.high + p.low - 2 * q.loc) / 2).pow(2)
    return t1 + 0.5 * (t2 + t3) / q.scale.pow(2)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    sum_p_concentration = p.concentration.sum(-1)
    sum_q_concentration = q.concentration.sum(-1)
    t1 = F["lgamma"](sum_p_concentration) - F["lgamma"](sum_q_concentration)
    t2 = (F["lgamma"](p.concentration) - F["lgamma"](q.concentration)).sum(-1)
    t3 = p.concentration - q.concentration
    t4 = F["digamma"](p.concentration) - F["digamma"](sum_p_concentration).unsqueeze(-1)
    return t1 - t2 + (t3 * t4).sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_mvn_mvn(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError("KL-divergence between two Multivariate Normals with different "
                         "event shapes cannot be computed")
    Lp, Lq = p._unbroadcasted_scale_tril, q._unbroadcasted_scale_tril
    half_term1 = (Lq.diagonal(dim1=-2, dim2=-1).log().sum(-1)
                  - Lp.diagonal(dim1=-2, dim2=-1).log().sum(-1))
    import numpy as np

    n = p.event_shape[0]
    shape = np.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))
    term2 = linalg.solve_triangular(Lq.expand(shape + (n, n)), Lp.expand(shape + (n, n)),
                                    upper=False).pow(2).sum((-2, -1))
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    return half_term1 + 0.5 * (term2 + term3 - n)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return _sum_rightmost(result, p.reinterpreted_batch_ndims)
