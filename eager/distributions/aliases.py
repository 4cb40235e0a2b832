"""torch.distributions' one-module-per-family names (`torch.distributions.normal`,
`torch.distributions.categorical`, ...) as modules of `eager.distributions`, so that
`from torch.distributions.normal import Normal` works under `import eager as torch`. Each is
a module object holding the family's classes (defined once, elsewhere in this package),
registered in `sys.modules` by `install`."""

from __future__ import annotations

import sys
import types

# torch's module name -> the names it exports (torch.distributions.<module>.__all__)
MODULES = {
    "bernoulli": ("Bernoulli",), "beta": ("Beta",), "binomial": ("Binomial",),
    "categorical": ("Categorical",), "cauchy": ("Cauchy",), "chi2": ("Chi2",),
    "continuous_bernoulli": ("ContinuousBernoulli",), "dirichlet": ("Dirichlet",),
    "exponential": ("Exponential",), "geometric": ("Geometric",), "gumbel": ("Gumbel",),
    "half_cauchy": ("HalfCauchy",), "half_normal": ("HalfNormal",),
    "independent": ("Independent",), "inverse_gamma": ("InverseGamma",),
    "laplace": ("Laplace",), "log_normal": ("LogNormal",),
    "lowrank_multivariate_normal": ("LowRankMultivariateNormal",),
    "mixture_same_family": ("MixtureSameFamily",), "multinomial": ("Multinomial",),
    "multivariate_normal": ("MultivariateNormal",), "negative_binomial": ("NegativeBinomial",),
    "normal": ("Normal",), "one_hot_categorical": ("OneHotCategorical",
                                                   "OneHotCategoricalStraightThrough"),
    "pareto": ("Pareto",), "poisson": ("Poisson",),
    "relaxed_bernoulli": ("LogitRelaxedBernoulli", "RelaxedBernoulli"),
    "relaxed_categorical": ("ExpRelaxedCategorical", "RelaxedOneHotCategorical"),
    "studentT": ("StudentT",), "transformed_distribution": ("TransformedDistribution",),
    "uniform": ("Uniform",), "von_mises": ("VonMises",), "weibull": ("Weibull",),
}


def install(package: types.ModuleType, classes: dict) -> None:
    """Make `package.<name>` and `sys.modules[package.__name__ + '.' + name]` a module with
    the classes of each family in MODULES (names `package` defines already are kept)."""
    for name, exports in MODULES.items():
        if hasattr(package, name):
            continue
        mod = types.ModuleType(f"{package.__name__}.{name}",
                               f"torch.distributions.{name}: {', '.join(exports)}.")
        for e in exports:
            setattr(mod, e, classes[e])
        mod.__all__ = list(exports)
        sys.modules[mod.__name__] = mod
        setattr(package, name, mod)
