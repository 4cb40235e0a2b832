"""Discrete distributions, as torch.distributions': Bernoulli, Categorical, OneHotCategorical,
Binomial, Poisson, Geometric, Multinomial. Parameterized by `probs` or `logits` (exactly one),
the other computed lazily; formulas are torch's. Samples come from eager's default generator
(no gradient: these have no `rsample`)."""

from __future__ import annotations

import math

import numpy as np

from ir.dtypes import finfo

from ..creation import eye, tensor
from ..dispatch import FUNCTIONS as F
from ..grad_mode import no_grad
from ..nn.functional import one_hot
from ..random import _gen, multinomial, rand
from ..special import xlogy
from ..tensor import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Bernoulli", "Binomial", "Categorical", "Geometric", "Multinomial",
           "OneHotCategorical", "Poisson"]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _set_probs_or_logits(self, probs, logits):
    """Store exactly one of `probs`/`logits` (broadcast to a tensor) as given; the other is
    computed lazily. Returns it (also kept as `_param`)."""
    _one_of(probs, logits)
    name, value = ("probs", probs) if probs is not None else ("logits", logits)
    (param,) = broadcast_all(value)
    setattr(self, name, param)
    self._param = param
    return param


def _bce_with_logits(logits, value):
    """Elementwise binary cross entropy of `value` under sigmoid(`logits`), stably."""
    return logits.clamp(min=0) - logits * value + F["log1p"]((-logits.abs()).exp())


Distribution._set_probs_or_logits = _set_probs_or_logits


class BinaryTrials(Distribution):
    """The base of distributions over Bernoulli trials (Bernoulli, Binomial, Geometric,
    NegativeBinomial): exactly one of `probs`/`logits` is given, the other computed lazily."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def _set_trials(self, total_count, probs, logits):
        """Store the trial count and the one parameter given, broadcast together (the count
        in the parameter's dtype); returns the parameter."""
        _one_of(probs, logits)
        name, value = ("probs", probs) if probs is not None else ("logits", logits)
        count, param = broadcast_all(total_count, value)
        setattr(self, name, param)
        self._param = param
        self.total_count = count.type_as(param)
        return param


class Bernoulli(BinaryTrials):
    """1 with probability `probs` (or sigmoid(`logits`)), else 0."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Bernoulli, batch_shape, _instance, "probs", "logits")

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        m = (self.probs >= 0.5).to(self.probs.dtype)
        return F["where"](self.probs == 0.5, math.nan, m)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        with no_grad():
            return (rand(*shape, dtype=self._param.dtype) < self.probs.expand(shape)).to(
                self._param.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -_bce_with_logits(logits, value)

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs)

    def enumerate_support(self, expand=True):
        values = tensor([0.0, 1.0], dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


class Categorical(Distribution):
    """One of K categories, with `probs` (..., K) or `logits` (normalized over the last dim)."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
            param = self.probs
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
            param = self.logits
        self._param = param
        self._num_events = param.shape[-1]
        super().__init__(param.shape[:-1], validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        b = Size(batch_shape)
        shape = b + Size((self._num_events,))
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(shape)
            new._param = new.logits
        new._num_events = self._num_events
        Distribution.__init__(new, b, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        return self._param.shape

    @property
    def mean(self):
        return self.probs.sum(-1) * math.nan

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return self.probs.sum(-1) * math.nan

    def sample(self, sample_shape=Size()):
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        probs_2d = self.probs.reshape(-1, self._num_events).detach()
        n = int(np.prod(sample_shape)) if len(sample_shape) else 1
        with no_grad():
            draws = _multinomial(probs_2d, n).T
        return draws.reshape(tuple(self._extended_shape(sample_shape)))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        value, log_pmf = F["broadcast_tensors"](value, self.logits)
        value = value[..., :1]
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        min_real = float(finfo(self.logits.dtype).min)
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        values = tensor(list(range(self._num_events)))
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


def _multinomial(probs_2d, n):
    return multinomial(probs_2d, n, replacement=True)


class OneHotCategorical(Distribution):
    """A Categorical draw as a one-hot vector of size K."""

    arg_constraints = {"probs": constraints.simplex,
                       "logits": constraints.independent(constraints.real, 1)}
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        new._categorical = self._categorical.expand(Size(batch_shape))
        Distribution.__init__(new, Size(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return _one_hot(probs.argmax(-1), probs.shape[-1], probs.dtype)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        return self._categorical.param_shape

    def sample(self, sample_shape=Size()):
        idx = self._categorical.sample(sample_shape)
        return _one_hot(idx, self._categorical._num_events, self._categorical.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._categorical.log_prob(value.max(-1)[1])

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = eye(n, dtype=self._categorical._param.dtype)
        values = values.view((n,) + (1,) * len(self.batch_shape) + (n,))
        return values.expand((n,) + tuple(self.batch_shape) + (n,)) if expand else values


def _one_hot(idx, n, dtype):
    return one_hot(idx, n).to(dtype)


class Binomial(BinaryTrials):
    """The number of successes in `total_count` Bernoulli(probs) trials."""

    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        param = self._set_trials(total_count, probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Binomial, batch_shape, _instance, "total_count", "probs",
                                   "logits")

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        n = np.broadcast_to(self.total_count.detach().numpy(), shape).astype(np.int64)
        p = np.broadcast_to(self.probs.detach().numpy(), shape)
        out = _gen(None).binomial(n, p).astype(self._param.detach().numpy().dtype)
        return tensor(out)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lg = F["lgamma"]
        log_factorial_n = lg(self.total_count + 1)
        log_factorial_k = lg(value + 1)
        log_factorial_nmk = lg(self.total_count - value + 1)
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * F["log1p"]((-self.logits.abs()).exp())
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def entropy(self):
        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`entropy`.")
        lp = self.log_prob(self.enumerate_support(False))
        return -(lp.exp() * lp).sum(0)

    def enumerate_support(self, expand=True):
        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by "
                                      "`enumerate_support`.")
        values = tensor(np.arange(1 + total), dtype=self._param.dtype)
        values = values.view((-1,) + (1,) * len(self._batch_shape))
        return values.expand((-1,) + tuple(self._batch_shape)) if expand else values


def _clamp_by_zero(x):
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Poisson(Distribution):
    """The Poisson distribution with mean `rate`."""

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(self.rate.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_params(Poisson, batch_shape, _instance, "rate")

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        lam = np.broadcast_to(self.rate.detach().numpy(), shape)
        return tensor(_gen(None).poisson(lam).astype(self.rate.detach().numpy().dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return xlogy(value, rate) - rate - F["lgamma"](value + 1)

    def entropy(self):
        """-sum_k p(k) log p(k), summed to far in the tail (rate + 30 sqrt(rate) + 30), as the
        value torch's exponential-family entropy gives."""
        top = float(self.rate.max()) if self.rate.numel() else 0.0
        k = tensor(np.arange(int(top + 30 * math.sqrt(top) + 30)), dtype=self.rate.dtype)
        k = k.reshape((-1,) + (1,) * self.rate.dim())
        lp = self.log_prob(k.expand((k.shape[0],) + tuple(self.rate.shape)))
        return -(lp.exp() * lp).sum(0)


class Geometric(BinaryTrials):
    """The number of failures before the first success of Bernoulli(probs) trials."""

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        param = self._set_probs_or_logits(probs, logits)
        super().__init__(param.shape, validate_args=validate_args)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return self.probs * 0

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        tiny = float(np.finfo(self.probs.detach().numpy().dtype).tiny)
        with no_grad():
            u = rand(*shape, dtype=self.probs.dtype).clamp(min=tiny)
            return (u.log() / F["log1p"](-self.probs)).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = probs.clone()
        probs = F["where"]((probs == 1) & (value == 0), 0.0, probs)
        return value * F["log1p"](-probs) + self.probs.log()

    def entropy(self):
        return _bce_with_logits(self.logits, self.probs) / self.probs


class Multinomial(Distribution):
    """Counts of `total_count` Categorical(probs) draws."""

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        super().__init__(self._categorical.batch_shape, self._categorical.param_shape[-1:],
                         validate_args=validate_args)

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def probs(self):
        return self._categorical.probs

    @property
    def logits(self):
        return self._categorical.logits

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = tuple(self._extended_shape(sample_shape))
        p = self.probs.detach().numpy()
        flat = p.reshape(-1, p.shape[-1])
        n = int(np.prod(tuple(sample_shape))) if len(sample_shape) else 1
        out = np.stack([_gen(None).multinomial(self.total_count, row / row.sum(), size=n)
                        for row in flat], axis=1)
        return tensor(out.reshape(shape).astype(p.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        logits = logits.clone()
        log_factorial_n = F["lgamma"](value.sum(-1) + 1)
        log_factorial_xs = F["lgamma"](value + 1).sum(-1)
        logits = F["where"]((value == 0) & (logits == -math.inf), 0.0, logits)
        log_powers = (logits * value).sum(-1)
        return log_factorial_n - log_factorial_xs + log_powers

