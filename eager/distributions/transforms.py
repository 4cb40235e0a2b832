"""Bijective transforms and `TransformedDistribution`, as torch.distributions': a transform
maps x to y = T(x) with `inv` and `log_abs_det_jacobian(x, y)`; a transformed distribution's
samples are T(base samples) and its log_prob is the base's at T^-1(y) minus the log-Jacobian.
`LogNormal` is Normal through ExpTransform."""

from __future__ import annotations

import math

from ..dispatch import FUNCTIONS as F
from ..tensor import Size
from . import constraints
from .continuous import Normal
from .distribution import Distribution
from .utils import broadcast_all

__all__ = [
    "AbsTransform", "AffineTransform", "ComposeTransform", "ExpTransform", "LogNormal",
    "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform",
    "TanhTransform", "Transform", "TransformedDistribution",
]


def _sum_rightmost(value, dim: int):
    return value.reshape(tuple(value.shape[:value.dim() - dim]) + (-1,)).sum(-1) if dim else \
        value


class Transform:
    """A map y = T(x); `bijective`, `sign`, `domain`/`codomain` constraints, `inv`."""

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        self._inv = None

    @property
    def event_dim(self):
        return self.domain.event_dim

    @property
    def inv(self):
        if self._inv is None:
            self._inv = _InverseTransform(self)
        return self._inv

    def __call__(self, x):
        return self._call(x)

    def _inv_call(self, y):
        return self._inverse(y)

    def log_abs_det_jacobian(self, x, y):
        raise NotImplementedError

    def forward_shape(self, shape):
        return shape

    def inverse_shape(self, shape):
        return shape

    def __repr__(self) -> str:
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__()
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def inv(self):
        return self._inv

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)


class ComposeTransform(Transform):
    """parts[-1](...parts[0](x))."""

    def __init__(self, parts, cache_size=0):
        super().__init__()
        self.parts = list(parts)

    @property
    def domain(self):
        return self.parts[0].domain if self.parts else constraints.real

    @property
    def codomain(self):
        return self.parts[-1].codomain if self.parts else constraints.real

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def inv(self):
        return ComposeTransform([p.inv for p in reversed(self.parts)])

    def __call__(self, x):
        for p in self.parts:
            x = p(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return x * 0
        terms, event_dim = [], self.codomain.event_dim
        for part in self.parts:
            y_ = part(x)
            terms.append(_sum_rightmost(part.log_abs_det_jacobian(x, y_),
                                        event_dim - part.codomain.event_dim))
            x = y_
        out = terms[0]
        for t in terms[1:]:
            out = out + t
        return out


class ExpTransform(Transform):
    bijective = True
    codomain = constraints.positive
    sign = 1

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    bijective = True
    domain = constraints.positive
    codomain = constraints.positive

    def __init__(self, exponent, cache_size=0):
        super().__init__()
        (self.exponent,) = broadcast_all(exponent)

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        return (self.exponent * y / x).abs().log()


class SigmoidTransform(Transform):
    bijective = True
    codomain = constraints.unit_interval
    sign = 1

    def _call(self, x):
        return x.sigmoid()

    def _inverse(self, y):
        eps = 1e-7 if y.dtype.itemsize <= 4 else 1e-15
        y = y.clamp(min=eps, max=1 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F["softplus"](-x) - F["softplus"](x)


class SoftplusTransform(Transform):
    bijective = True
    codomain = constraints.positive
    sign = 1

    def _call(self, x):
        return F["softplus"](x)

    def _inverse(self, y):
        return (-y).expm1().neg().log() + y

    def log_abs_det_jacobian(self, x, y):
        return -F["softplus"](-x)


class TanhTransform(Transform):
    bijective = True
    codomain = constraints.interval(-1.0, 1.0)
    sign = 1

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        return F["atanh"](y)

    def log_abs_det_jacobian(self, x, y):
        return 2.0 * (math.log(2.0) - x - F["softplus"](-2.0 * x))


class AbsTransform(Transform):
    codomain = constraints.positive

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """y = loc + scale * x (over `event_dim` rightmost dims)."""

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__()
        self.loc, self.scale = loc, scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        return self._event_dim

    @property
    def domain(self):
        return constraints.real if self._event_dim == 0 else \
            constraints.independent(constraints.real, self._event_dim)

    codomain = domain

    @property
    def sign(self):
        return self.scale.sign() if hasattr(self.scale, "sign") else math.copysign(1, self.scale)

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        scale = self.scale
        if isinstance(scale, (int, float)):
            result = x * 0 + math.log(abs(scale))
        else:
            result = scale.abs().log()
            result = result.expand(tuple(x.shape)) if tuple(result.shape) != tuple(x.shape) \
                else result
        return _sum_rightmost(result, self._event_dim)


class SoftmaxTransform(Transform):
    codomain = constraints.simplex

    @property
    def domain(self):
        return constraints.real_vector

    def _call(self, x):
        p = (x - x.max(-1, keepdim=True).values).exp()
        return p / p.sum(-1, keepdim=True)

    def _inverse(self, y):
        return y.log()


class TransformedDistribution(Distribution):
    """The distribution of T(X) for X ~ `base_distribution`, T the composition of
    `transforms` (a Transform or a list)."""

    arg_constraints = {}

    def __init__(self, base_distribution, transforms, validate_args=None):
        self.transforms = [transforms] if isinstance(transforms, Transform) else list(
            transforms)
        if not all(isinstance(t, Transform) for t in self.transforms):
            raise ValueError("transforms must be a Transform or a list of Transforms")
        self.base_dist = base_distribution
        shape = tuple(base_distribution.batch_shape) + tuple(base_distribution.event_shape)
        event_dim = max([len(base_distribution.event_shape)]
                        + [t.codomain.event_dim for t in self.transforms])
        cut = len(shape) - event_dim
        super().__init__(Size(shape[:cut]), Size(shape[cut:]), validate_args=validate_args)

    @property
    def support(self):
        return self.transforms[-1].codomain if self.transforms else self.base_dist.support

    @property
    def has_rsample(self):
        return self.base_dist.has_rsample

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(TransformedDistribution, _instance)
        new.base_dist = self.base_dist.expand(Size(batch_shape))
        new.transforms = self.transforms
        Distribution.__init__(new, Size(batch_shape), self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def sample(self, sample_shape=Size()):
        x = self.base_dist.sample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def rsample(self, sample_shape=Size()):
        x = self.base_dist.rsample(sample_shape)
        for t in self.transforms:
            x = t(x)
        return x

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        event_dim = len(self.event_shape)
        log_prob = 0.0
        y = value
        for t in reversed(self.transforms):
            x = t.inv(y)
            event_dim += t.domain.event_dim - t.codomain.event_dim
            log_prob = log_prob - _sum_rightmost(t.log_abs_det_jacobian(x, y),
                                                 event_dim - t.domain.event_dim)
            y = x
        return log_prob + _sum_rightmost(self.base_dist.log_prob(y),
                                         event_dim - len(self.base_dist.event_shape))

    def cdf(self, value):
        for t in reversed(self.transforms):
            value = t.inv(value)
        value = self.base_dist.cdf(value)
        return value if all(getattr(t, "sign", 1) == 1 for t in self.transforms) else 1 - value

    def icdf(self, value):
        x = self.base_dist.icdf(value)
        for t in self.transforms:
            x = t(x)
        return x


class LogNormal(TransformedDistribution):
    """exp(X) for X ~ N(loc, scale^2)."""

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base = Normal(loc, scale, validate_args=validate_args)
        super().__init__(base, ExpTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        return self.base_dist.loc

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return (self.loc + self.scale.pow(2) / 2).exp()

    @property
    def mode(self):
        return (self.loc - self.scale.pow(2)).exp()

    @property
    def variance(self):
        s2 = self.scale.pow(2)
        return F["expm1"](s2) * (2 * self.loc + s2).exp()

    def entropy(self):
        return self.base_dist.entropy() + self.loc
