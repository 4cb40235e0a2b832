"""Continuous distributions of one variable, as torch.distributions': Normal, Uniform,
Exponential, Laplace, Cauchy, Gamma, Chi2, Beta, Dirichlet, StudentT. Formulas for log_prob,
entropy, moments, cdf and icdf are torch's (checked against scipy.stats and torch in
tests/test_distributions.py). Samples draw from eager's default generator (reproducible under
`eager.manual_seed`; the streams differ from torch's). `rsample` is reparameterized: location-
scale families by transforming standard draws; Gamma (and Beta, Dirichlet, StudentT, Chi2
through it) by implicit reparameterization, d sample / d concentration = -(dP/dalpha) / p at
the sample, P the regularized incomplete gamma function (torch's `_standard_gamma_grad`
approximates the same derivative)."""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ..creation import tensor
from ..dispatch import FUNCTIONS as F
from ..random import _gen, rand, randn
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Beta", "Cauchy", "Chi2", "Dirichlet", "Exponential", "Gamma", "HalfNormal",
           "Laplace", "Normal", "StudentT", "Uniform"]

LOG_SQRT_2PI = math.log(math.sqrt(2 * math.pi))


def _like(shape, p: Tensor, draw) -> Tensor:
    """Standard draws of `shape` in p's dtype."""
    return draw(*shape, dtype=p.dtype) if shape else draw((), dtype=p.dtype)


def _tiny(t) -> float:
    return float(np.finfo(t.detach().numpy().dtype).tiny)


def _eps(t) -> float:
    return float(np.finfo(t.detach().numpy().dtype).eps)


class _LocScale(Distribution):
    """Shared init/expand of (loc, scale) families."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(type(self), _instance)
        batch_shape = Size(batch_shape)
        new.loc, new.scale = self.loc.expand(batch_shape), self.scale.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def _check(self, value):
        if self._validate_args:
            self._validate_sample(value)


class Normal(_LocScale):
    """The normal distribution N(loc, scale^2)."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return self.scale

    @property
    def variance(self):
        return self.scale.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.loc + _like(shape, self.loc, randn) * self.scale

    def log_prob(self, value):
        self._check(value)
        var = self.scale ** 2
        return -((value - self.loc) ** 2) / (2 * var) - self.scale.log() - LOG_SQRT_2PI

    def cdf(self, value):
        self._check(value)
        return 0.5 * (1 + F["erf"]((value - self.loc) * self.scale.reciprocal() / math.sqrt(2)))

    def icdf(self, value):
        return self.loc + self.scale * F["erfinv"](2 * value - 1) * math.sqrt(2)

    def entropy(self):
        return 0.5 + 0.5 * math.log(2 * math.pi) + self.scale.log()


class HalfNormal(Distribution):
    """|X| for X ~ N(0, scale^2)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        (self.scale,) = broadcast_all(scale)
        self.base = Normal(0.0 * self.scale, self.scale, validate_args=False)
        super().__init__(self.scale.shape, validate_args=validate_args)

    def rsample(self, sample_shape=Size()):
        return self.base.rsample(sample_shape).abs()

    def log_prob(self, value):
        lp = self.base.log_prob(value) + math.log(2)
        return F["where"](value >= 0, lp, -math.inf)

    def cdf(self, value):
        return 2 * self.base.cdf(value) - 1

    def icdf(self, prob):
        return self.base.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base.entropy() - math.log(2)

    @property
    def mean(self):
        return self.scale * math.sqrt(2 / math.pi)

    @property
    def variance(self):
        return self.scale.pow(2) * (1 - 2 / math.pi)


class Laplace(_LocScale):
    """The Laplace distribution with location `loc` and scale `scale`."""

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return math.sqrt(2) * self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = _like(shape, self.loc, rand) * (2 - _eps(self.loc)) - 1 + _eps(self.loc)
        return self.loc - self.scale * u.sign() * F["log1p"](-u.abs())

    def log_prob(self, value):
        self._check(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        self._check(value)
        return 0.5 - 0.5 * (value - self.loc).sign() * F["expm1"](
            -(value - self.loc).abs() / self.scale)

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * F["log1p"](-2 * term.abs())

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Cauchy(_LocScale):
    """The Cauchy (Lorentz) distribution."""

    @property
    def mean(self):
        return self.loc * math.nan

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return self.loc * 0 + math.inf

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = _like(shape, self.loc, rand)
        return self.loc + self.scale * F["tan"](math.pi * (u - 0.5))

    def log_prob(self, value):
        self._check(value)
        return -math.log(math.pi) - self.scale.log() - F["log1p"](
            ((value - self.loc) / self.scale) ** 2)

    def cdf(self, value):
        self._check(value)
        return F["atan"]((value - self.loc) / self.scale) / math.pi + 0.5

    def icdf(self, value):
        return F["tan"](math.pi * (value - 0.5)) * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class Uniform(Distribution):
    """The uniform distribution on [low, high)."""

    arg_constraints = {"low": constraints.dependent(is_discrete=False, event_dim=0),
                       "high": constraints.dependent(is_discrete=False, event_dim=0)}
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(self.low.shape, validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError("Uniform is not defined when low >= high")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Uniform, _instance)
        batch_shape = Size(batch_shape)
        new.low, new.high = self.low.expand(batch_shape), self.high.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return self.low * math.nan

    @property
    def stddev(self):
        return (self.high - self.low) / 12 ** 0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.low + _like(shape, self.low, rand) * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        inside = (self.low <= value) & (self.high > value)
        return inside.to(self.low.dtype).log() - (self.high - self.low).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(min=0, max=1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(Distribution):
    """The exponential distribution with rate `rate` (mean 1 / rate)."""

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Exponential, _instance)
        new.rate = self.rate.expand(Size(batch_shape))
        Distribution.__init__(new, Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return self.rate * 0

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = _like(shape, self.rate, rand)
        return -F["log1p"](-u) / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -F["log1p"](-value) / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


# ----------------------------------------------------------------- the gamma family


class _StandardGamma(Function):
    """Draws of Gamma(alpha, 1) with implicit-reparameterization gradients."""

    @staticmethod
    def forward(ctx, alpha):
        a = alpha.detach().numpy().astype(np.float64)
        x = _gen(None).standard_gamma(a)
        x = np.maximum(x, np.finfo(alpha.detach().numpy().dtype).tiny)
        out = tensor(x.astype(alpha.detach().numpy().dtype))
        ctx.save_for_backward(alpha, out)
        return out

    @staticmethod
    def backward(ctx, grad):
        import scipy.special as sp
        import scipy.stats as st

        alpha, x = ctx.saved_tensors
        a = alpha.detach().numpy().astype(np.float64)
        xv = x.detach().numpy().astype(np.float64)
        h = 1e-6 * np.maximum(a, 1.0)
        dP = (sp.gammainc(a + h, xv) - sp.gammainc(a - h, xv)) / (2 * h)
        dx = -dP / np.maximum(st.gamma.pdf(xv, a), 1e-300)
        return grad * tensor(dx.astype(x.detach().numpy().dtype))


def standard_gamma(alpha: Tensor) -> Tensor:
    """Gamma(alpha, 1) draws (`torch._standard_gamma`), differentiable in alpha."""
    return _StandardGamma.apply(alpha)


class Gamma(Distribution):
    """The gamma distribution with shape `concentration` and `rate` (mean c / rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(self.concentration.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gamma, _instance)
        b = Size(batch_shape)
        new.concentration, new.rate = self.concentration.expand(b), self.rate.expand(b)
        Distribution.__init__(new, b, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return (self.concentration - 1).clamp(min=0) / self.rate

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        return value.clamp(min=_tiny(value))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c, r = self.concentration, self.rate
        return _xlogy(c, r) + _xlogy(c - 1, value) - r * value - F["lgamma"](c)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return F["igamma"](self.concentration, self.rate * value)

    def entropy(self):
        c = self.concentration
        return c - self.rate.log() + F["lgamma"](c) + (1.0 - c) * F["digamma"](c)


def _xlogy(x, y):
    from ..special import xlogy

    return xlogy(x, y)


class Chi2(Gamma):
    """The chi-squared distribution with `df` degrees of freedom (Gamma(df / 2, 1 / 2))."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5 * df / df, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        return self.concentration * 2


class Dirichlet(Distribution):
    """The Dirichlet distribution on the simplex, with `concentration` (..., K)."""

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        super().__init__(concentration.shape[:-1], concentration.shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        b = Size(batch_shape)
        new.concentration = self.concentration.expand(b + self.event_shape)
        Distribution.__init__(new, b, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        g = standard_gamma(self.concentration.expand(shape))
        return g / g.sum(-1, keepdim=True)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        c = self.concentration
        return _xlogy(c - 1.0, value).sum(-1) + F["lgamma"](c.sum(-1)) - F["lgamma"](c).sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        cm1 = (self.concentration - 1).clamp(min=0.0)
        return cm1 / cm1.sum(-1, keepdim=True)

    @property
    def variance(self):
        con0 = self.concentration.sum(-1, keepdim=True)
        c = self.concentration
        return c * (con0 - c) / (con0.pow(2) * (con0 + 1))

    def entropy(self):
        c = self.concentration
        k = c.shape[-1]
        a0 = c.sum(-1)
        return (F["lgamma"](c).sum(-1) - F["lgamma"](a0) - (k - a0) * F["digamma"](a0)
                - ((c - 1.0) * F["digamma"](c)).sum(-1))


class Beta(Distribution):
    """The beta distribution on [0, 1] with concentrations `concentration1` (alpha) and
    `concentration0` (beta)."""

    arg_constraints = {"concentration1": constraints.positive,
                       "concentration0": constraints.positive}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(F["stack"]([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        new._dirichlet = self._dirichlet.expand(Size(batch_shape))
        Distribution.__init__(new, Size(batch_shape), validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape)[..., 0]

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(F["stack"]([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()


class StudentT(Distribution):
    """Student's t distribution with `df` degrees of freedom, location and scale."""

    arg_constraints = {"df": constraints.positive, "loc": constraints.real,
                       "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(StudentT, _instance)
        b = Size(batch_shape)
        new.df, new.loc, new.scale = (self.df.expand(b), self.loc.expand(b),
                                      self.scale.expand(b))
        new._chi2 = self._chi2.expand(b)
        Distribution.__init__(new, b, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return F["where"](self.df > 1, self.loc, math.nan)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        v = self.scale.pow(2) * self.df / (self.df - 2)
        v = F["where"](self.df > 2, v, math.inf)
        return F["where"](self.df > 1, v, math.nan)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        x = _like(shape, self.df, randn)
        z = self._chi2.rsample(sample_shape)
        y = x * (z / self.df).rsqrt()
        return self.loc + self.scale * y

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (value - self.loc) / self.scale
        z = (self.scale.log() + 0.5 * self.df.log() + 0.5 * math.log(math.pi)
             + F["lgamma"](0.5 * self.df) - F["lgamma"](0.5 * (self.df + 1.0)))
        return -0.5 * (self.df + 1.0) * F["log1p"](y ** 2.0 / self.df) - z

    def entropy(self):
        lbeta = (F["lgamma"](0.5 * self.df) + math.lgamma(0.5)
                 - F["lgamma"](0.5 * (self.df + 1)))
        return (self.scale.log() + 0.5 * (self.df + 1) * (
            F["digamma"](0.5 * (self.df + 1)) - F["digamma"](0.5 * self.df))
            + 0.5 * self.df.log() + lbeta)
