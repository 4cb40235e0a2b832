"""Relaxed (continuous) stand-ins for discrete draws and two more unit-interval / circular
families, as torch.distributions': LogitRelaxedBernoulli / RelaxedBernoulli, ExpRelaxedCategorical
/ RelaxedOneHotCategorical (the Concrete / Gumbel-softmax distributions of Maddison et al. 2017
and Jang et al. 2017), OneHotCategoricalStraightThrough, ContinuousBernoulli (Loaiza-Ganem &
Cunningham 2019) and VonMises. Formulas are torch's (relaxed_bernoulli.py,
relaxed_categorical.py, continuous_bernoulli.py, von_mises.py); draws come from eager's
generator."""

from __future__ import annotations

import math

from ..creation import full_like, ones_like, zeros_like
from ..dispatch import FUNCTIONS as F
from ..grad_mode import no_grad
from ..random import rand
from ..tensor import Size, Tensor
from . import constraints
from .discrete import BinaryTrials, Categorical, OneHotCategorical, _set_probs_or_logits
from .distribution import Distribution
from .transforms import ExpTransform, SigmoidTransform, TransformedDistribution
from .utils import broadcast_all, clamp_probs, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["ContinuousBernoulli", "ExpRelaxedCategorical", "LogitRelaxedBernoulli",
           "OneHotCategoricalStraightThrough", "RelaxedBernoulli", "RelaxedOneHotCategorical",
           "VonMises"]


def _uniform(shape, like):
    """Uniform draws in (0, 1) clamped away from 0 and 1 (torch's clamp_probs of rand)."""
    return clamp_probs(rand(*shape, dtype=like.dtype))


def _as_tensor(t, like):
    """The temperature as a tensor (a number becomes a 0-d tensor of `like`'s dtype)."""
    return t if isinstance(t, Tensor) else full_like(like.new_zeros(()), float(t))


class LogitRelaxedBernoulli(BinaryTrials):
    """The logit of a RelaxedBernoulli draw: (log u - log(1-u) + logits) / temperature."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self.temperature = temperature
        param = self._set_probs_or_logits(probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(LogitRelaxedBernoulli, batch_shape, _instance, "probs",
                                  "logits")
        new.temperature = self.temperature
        return new

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = _uniform(shape, probs)
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = _as_tensor(self.temperature, logits)
        diff = logits - value * t
        return t.log() + diff - 2 * diff.exp().log1p()


class _RelaxedParams:
    """`temperature`, `logits` and `probs` of a relaxed distribution read from its base (the
    relaxed distribution is a transform of it)."""

    temperature = property(lambda self: self.base_dist.temperature)
    logits = property(lambda self: self.base_dist.logits)
    probs = property(lambda self: self.base_dist.probs)


class RelaxedBernoulli(_RelaxedParams, TransformedDistribution):
    """A draw in (0, 1) that tends to a Bernoulli draw as `temperature` -> 0
    (sigmoid of a LogitRelaxedBernoulli); reparameterized."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = LogitRelaxedBernoulli(temperature, probs, logits)
        super().__init__(base, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)


class ExpRelaxedCategorical(Distribution):
    """The log of a RelaxedOneHotCategorical draw (log-softmax of Gumbel-perturbed logits
    over `temperature`); reparameterized. Event shape (K,)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        self.temperature = temperature
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(Size(batch_shape))
        Distribution.__init__(new, Size(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        return self._categorical.param_shape

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def probs(self):
        return self._categorical.probs

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = _uniform(shape, self.logits)
        gumbels = -((-(u.log())).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(dim=-1, keepdim=True)

    def log_prob(self, value):
        k = self.event_shape[0]
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        t = _as_tensor(self.temperature, logits)
        log_scale = full_like(t, float(k)).lgamma() - t.log() * (-(k - 1))
        score = logits - value * t
        score = (score - score.logsumexp(dim=-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(_RelaxedParams, TransformedDistribution):
    """A point of the simplex that tends to a one-hot Categorical draw as `temperature` -> 0
    (the Gumbel-softmax / Concrete distribution); reparameterized."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose `rsample` is the one-hot draw plus `probs - probs.detach()`:
    the straight-through gradient estimator (Bengio et al., 2013)."""

    has_rsample = True

    def rsample(self, sample_shape=Size()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())


class ContinuousBernoulli(Distribution):
    """The continuous Bernoulli distribution on [0, 1] with parameter `probs` (or `logits`):
    density C(p) p^x (1-p)^(1-x); near p = 1/2 (within `lims`) the normalizer and moments
    use torch's Taylor expansions."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, lims=(0.499, 0.501), validate_args=None):
        param = _set_probs_or_logits(self, probs, logits)
        if probs is not None:
            if validate_args and not bool(constraints.unit_interval.check(param).all()):
                raise ValueError("The parameter probs has invalid values")
            self.probs = clamp_probs(param)
        self._lims = lims
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._expand_params(ContinuousBernoulli, batch_shape, _instance, "probs",
                                  "logits")
        new._lims = self._lims
        return new

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return clamp_probs(logits_to_probs(self.logits, is_binary=True))

    def _outside_unstable_region(self):
        return (self.probs <= self._lims[0]) | (self.probs > self._lims[1])

    def _cut_probs(self):
        return F["where"](self._outside_unstable_region(), self.probs,
                          self._lims[0] * ones_like(self.probs))

    def _cont_bern_log_norm(self):
        """log C(p), the log normalizing constant."""
        cut = self._cut_probs()
        below = F["where"](cut <= 0.5, cut, zeros_like(cut))
        above = F["where"](cut >= 0.5, cut, ones_like(cut))
        log_norm = ((-cut).log1p() - cut.log()).abs().log() - F["where"](
            cut <= 0.5, (-2.0 * below).log1p(), (2.0 * above - 1.0).log())
        x = (self.probs - 0.5) ** 2
        taylor = math.log(2.0) + (4.0 / 3.0 + 104.0 / 45.0 * x) * x
        return F["where"](self._outside_unstable_region(), log_norm, taylor)

    @property
    def mean(self):
        cut = self._cut_probs()
        mus = cut / (2.0 * cut - 1.0) + 1.0 / ((-cut).log1p() - cut.log())
        x = self.probs - 0.5
        taylor = 0.5 + (1.0 / 3.0 + 16.0 / 45.0 * x ** 2) * x
        return F["where"](self._outside_unstable_region(), mus, taylor)

    @property
    def stddev(self):
        return self.variance.sqrt()

    @property
    def variance(self):
        cut = self._cut_probs()
        variances = cut * (cut - 1.0) / (1.0 - 2.0 * cut) ** 2 + 1.0 / (
            (-cut).log1p() - cut.log()) ** 2
        x = (self.probs - 0.5) ** 2
        taylor = 1.0 / 12.0 - (1.0 / 15.0 - 128.0 / 945.0 * x) * x
        return F["where"](self._outside_unstable_region(), variances, taylor)

    def sample(self, sample_shape=Size()):
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return self.icdf(rand(*shape, dtype=self.probs.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        bce = logits.clamp(min=0) - logits * value + F["log1p"]((-logits.abs()).exp())
        return -bce + self._cont_bern_log_norm()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        cut = self._cut_probs()
        cdfs = (cut ** value * (1.0 - cut) ** (1.0 - value) + cut - 1.0) / (2.0 * cut - 1.0)
        unbounded = F["where"](self._outside_unstable_region(), cdfs, value)
        return F["where"](value <= 0.0, zeros_like(value),
                          F["where"](value >= 1.0, ones_like(value), unbounded))

    def icdf(self, value):
        cut = self._cut_probs()
        return F["where"](
            self._outside_unstable_region(),
            ((-cut + value * (2.0 * cut - 1.0)).log1p() - (-cut).log1p())
            / (cut.log() - (-cut).log1p()),
            value)

    def entropy(self):
        log_p0 = (-self.probs).log1p()
        log_p1 = self.probs.log()
        return self.mean * (log_p0 - log_p1) - self._cont_bern_log_norm() - log_p0


def _log_i(x, order):
    """log I_order(x) for x >= 0, order 0 or 1, from the exponentially scaled Bessel
    functions (log(i0e(x)) + x)."""
    scaled = F["special_i0e"](x) if order == 0 else F["special_i1e"](x)
    return scaled.log() + x


class VonMises(Distribution):
    """The von Mises (circular normal) distribution on angles, with mean direction `loc` and
    `concentration` kappa > 0: density exp(kappa cos(x - loc)) / (2 pi I0(kappa)). Sampling
    is Best & Fisher's rejection method (not reparameterized)."""

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(VonMises, batch_shape, _instance, "loc", "concentration")

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lp = self.concentration * (value - self.loc).cos()
        return lp - math.log(2 * math.pi) - _log_i(self.concentration, 0)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        k = self.concentration
        return 1 - (_log_i(k, 1) - _log_i(k, 0)).exp()

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            k = self.concentration.double().expand(shape)
            tau = 1 + (1 + 4 * k ** 2).sqrt()
            rho = (tau - (2 * tau).sqrt()) / (2 * k)
            proposal_r = (1 + rho ** 2) / (2 * rho)
            x = zeros_like(k)
            done = zeros_like(k).bool()
            while not bool(done.all()):
                u = rand(3, *shape, dtype=k.dtype)
                z = (math.pi * u[0]).cos()
                f = (1 + proposal_r * z) / (proposal_r + z)
                c = k * (proposal_r - f)
                accept = ((c * (2 - c) - u[1]) > 0) | ((c / u[1]).log() + 1 - c >= 0)
                new = accept & ~done
                x = F["where"](new, (u[2] - 0.5).sign() * f.acos(), x)
                done = done | accept
            angle = (x + self.loc.double().expand(shape) + math.pi).remainder(2 * math.pi)
            return (angle - math.pi).to(self.loc.dtype)
