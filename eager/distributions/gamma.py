"""The gamma family, as torch.distributions': Gamma, Chi2, Dirichlet, Beta, StudentT. Samples
are reparameterized through `standard_gamma`, whose gradient is implicit: d sample / d alpha =
-(dP/dalpha) / p at the sample, P the regularized incomplete gamma function (torch's
`_standard_gamma_grad` approximates the same derivative)."""

from __future__ import annotations

import math

import numpy as np

from ..autograd.function import Function
from ..creation import tensor
from ..dispatch import FUNCTIONS as F
from ..random import _gen, randn
from ..special import xlogy
from ..tensor import Size, Tensor
from . import constraints
from .continuous import _like, _tiny
from .distribution import Distribution
from .utils import broadcast_all

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma", "StudentT", "standard_gamma"]


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
        return self._expand_params(Gamma, batch_shape, _instance, "concentration", "rate")

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
        return self._expand_params(Dirichlet, batch_shape, _instance, "concentration")

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
        new = self._expand_params(StudentT, batch_shape, _instance, "df", "loc", "scale")
        new._chi2 = self._chi2.expand(Size(batch_shape))
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
