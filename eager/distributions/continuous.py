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

from ..dispatch import FUNCTIONS as F
from ..random import rand, randn
from ..tensor import Size, Tensor
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Cauchy", "Exponential", "HalfNormal", "Laplace", "Normal", "Uniform"]

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
        return self._expand_params(type(self), batch_shape, _instance, "loc", "scale")

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
        return self._expand_params(Uniform, batch_shape, _instance, "low", "high")

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
        return self._expand_params(Exponential, batch_shape, _instance, "rate")

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
