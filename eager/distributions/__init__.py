"""eager.distributions: `torch.distributions` for eager tensors - parameterizable probability
distributions with sampling (`rsample` reparameterized where torch's is), `log_prob`,
`entropy`, `cdf`/`icdf`, moments, `expand`, argument validation, constraints, transforms and
the KL registry. Semantics and formulas follow torch/distributions (PyTorch 2.x); draws come
from eager's generator (reproducible under `eager.manual_seed`, other streams than torch's).
"""

from . import constraints, kl, transforms
from .composite import Independent, MixtureSameFamily
from .continuous import Cauchy, Exponential, HalfNormal, Laplace, Normal, Uniform
from .gamma import Beta, Chi2, Dirichlet, Gamma, StudentT
from .discrete import (
    Bernoulli, Binomial, Categorical, Geometric, Multinomial, OneHotCategorical, Poisson,
)
from .distribution import Distribution
from .kl import kl_divergence, register_kl
from .more import Gumbel, HalfCauchy, InverseGamma, NegativeBinomial, Pareto, Weibull
from .multivariate import LowRankMultivariateNormal, MultivariateNormal
from .relaxed import (
    ContinuousBernoulli, ExpRelaxedCategorical, LogitRelaxedBernoulli,
    OneHotCategoricalStraightThrough, RelaxedBernoulli, RelaxedOneHotCategorical, VonMises,
)
from .transforms import (
    AbsTransform, AffineTransform, ComposeTransform, ExpTransform, LogNormal, PowerTransform,
    SigmoidTransform, SoftmaxTransform, SoftplusTransform, TanhTransform, Transform,
    TransformedDistribution,
)

__all__ = [
    "AbsTransform", "AffineTransform", "Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy",
    "Chi2", "ComposeTransform", "ContinuousBernoulli", "ExpRelaxedCategorical",
    "LogitRelaxedBernoulli", "OneHotCategoricalStraightThrough", "RelaxedBernoulli",
    "RelaxedOneHotCategorical", "VonMises", "Dirichlet", "Distribution", "ExpTransform", "Exponential",
    "Gamma", "Geometric", "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma",
    "Laplace", "LogNormal", "LowRankMultivariateNormal", "MixtureSameFamily", "Multinomial",
    "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical", "Pareto", "Poisson",
    "PowerTransform", "SigmoidTransform", "SoftmaxTransform", "SoftplusTransform", "StudentT",
    "TanhTransform", "Transform", "TransformedDistribution", "Uniform", "Weibull", "constraints",
    "kl", "kl_divergence", "register_kl", "transforms",
]

from . import aliases as _aliases  # noqa: E402  (torch.distributions.normal, ...)

_aliases.install(__import__("sys").modules[__name__], globals())
