"""More distributions built on the others, as torch.distributions': Gumbel, HalfCauchy,
Pareto, Weibull, InverseGamma (transformed distributions, with torch's closed-form moments
and entropies) and NegativeBinomial. Formulas are torch's; checked against scipy.stats."""

from __future__ import annotations

import math

from ir.dtypes import finfo

from ..dispatch import FUNCTIONS as F
from ..grad_mode import no_grad
from ..tensor import Size
from . import constraints
from .continuous import Cauchy, Exponential, Uniform
from .discrete import BinaryTrials, Poisson
from .distribution import Distribution
from .gamma import Gamma
from .transforms import AffineTransform, ExpTransform, PowerTransform, TransformedDistribution
from .utils import broadcast_all

__all__ = ["Gumbel", "HalfCauchy", "InverseGamma", "NegativeBinomial", "Pareto", "Weibull"]

EULER_GAMMA = 0.57721566490153286060


def _finfo(t):
    return finfo(t.dtype)


class Gumbel(TransformedDistribution):
    """The Gumbel (type-I extreme value) distribution with location `loc` and scale `scale`."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        fi = _finfo(self.loc)
        base = Uniform(self.loc * 0 + float(fi.tiny), self.loc * 0 + 1 - float(fi.eps),
                       validate_args=validate_args)
        super().__init__(base, [ExpTransform().inv, AffineTransform(0, -1), ExpTransform().inv,
                                AffineTransform(self.loc, -self.scale)],
                         validate_args=validate_args)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        y = (self.loc - value) / self.scale
        return (y - y.exp()) - self.scale.log()

    @property
    def mean(self):
        return self.loc + self.scale * EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + EULER_GAMMA)


class HalfCauchy(Distribution):
    """|X| for X ~ Cauchy(0, scale)."""

    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        (self.scale,) = broadcast_all(scale)
        self.base_dist = Cauchy(self.scale * 0, self.scale, validate_args=False)
        super().__init__(self.scale.shape, validate_args=validate_args)

    def rsample(self, sample_shape=Size()):
        return self.base_dist.rsample(sample_shape).abs()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lp = self.base_dist.log_prob(value) + math.log(2)
        return F["where"](value >= 0, lp, -math.inf)

    def cdf(self, value):
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)

    @property
    def mean(self):
        return self.scale * 0 + math.inf

    @property
    def variance(self):
        return self.scale * 0 + math.inf


class Pareto(TransformedDistribution):
    """The Pareto (type I) distribution with `scale` (minimum) and shape `alpha`."""

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        super().__init__(Exponential(self.alpha, validate_args=validate_args),
                         [ExpTransform(), AffineTransform(0, self.scale)],
                         validate_args=validate_args)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return a * self.scale / (a - 1)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        return self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class Weibull(TransformedDistribution):
    """The Weibull distribution with `scale` and shape `concentration`."""

    arg_constraints = {"scale": constraints.positive, "concentration": constraints.positive}
    support = constraints.positive

    def __init__(self, scale, concentration, validate_args=None):
        self.scale, self.concentration = broadcast_all(scale, concentration)
        self.concentration_reciprocal = self.concentration.reciprocal()
        base = Exponential(self.scale * 0 + 1, validate_args=validate_args)
        super().__init__(base, [PowerTransform(self.concentration_reciprocal),
                                AffineTransform(0, self.scale)], validate_args=validate_args)

    @property
    def mean(self):
        return self.scale * F["lgamma"](1 + self.concentration_reciprocal).exp()

    @property
    def mode(self):
        c = self.concentration
        return self.scale * ((c - 1) / c) ** c.reciprocal()

    @property
    def variance(self):
        return self.scale.pow(2) * (
            F["lgamma"](1 + 2 * self.concentration_reciprocal).exp()
            - F["lgamma"](1 + self.concentration_reciprocal).exp().pow(2))

    def entropy(self):
        return (EULER_GAMMA * (1 - self.concentration_reciprocal)
                + (self.scale * self.concentration_reciprocal).log() + 1)


class InverseGamma(TransformedDistribution):
    """1/X for X ~ Gamma(concentration, rate)."""

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        base = Gamma(concentration, rate, validate_args=validate_args)
        super().__init__(base, PowerTransform(base.rate * 0 - 1), validate_args=validate_args)

    @property
    def concentration(self):
        return self.base_dist.concentration

    @property
    def rate(self):
        return self.base_dist.rate

    @property
    def mean(self):
        c, r = self.concentration, self.rate
        return F["where"](c > 1, r / (c - 1), math.inf)

    @property
    def mode(self):
        return self.rate / (self.concentration + 1)

    @property
    def variance(self):
        c, r = self.concentration, self.rate
        return F["where"](c > 2, r.pow(2) / ((c - 1).pow(2) * (c - 2)), math.inf)

    def entropy(self):
        c, r = self.concentration, self.rate
        return c + r.log() + F["lgamma"](c) - (1 + c) * F["digamma"](c)


class NegativeBinomial(BinaryTrials):
    """The number of successes before `total_count` failures of Bernoulli(probs) trials."""

    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        param = self._set_trials(total_count, probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    def sample(self, sample_shape=Size()):
        with no_grad():
            rate = Gamma(self.total_count, (-self.logits).exp(),
                         validate_args=False).sample(sample_shape)
            return Poisson(rate, validate_args=False).sample()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logsig = F["log_sigmoid"] if "log_sigmoid" in F else None
        ls_neg = logsig(-self.logits) if logsig else -F["softplus"](self.logits)
        ls_pos = logsig(self.logits) if logsig else -F["softplus"](-self.logits)
        log_unnormalized = self.total_count * ls_neg + value * ls_pos
        lg = F["lgamma"]
        log_normalization = -lg(self.total_count + value) + lg(1.0 + value) + \
            lg(self.total_count)
        log_normalization = F["where"](self.total_count + value == 0.0, 0.0,
                                       log_normalization)
        return log_unnormalized - log_normalization
