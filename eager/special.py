"""`torch.special`, and the top-level special functions that are compositions (`xlogy`,
`xlog1py`, `sinc`, `mvlgamma`): semantics of the torch.special documentation.

The library functions (`lgamma`, `digamma`, `polygamma`, `i0`, `igamma`, `special_i1`, ...) are
registry ops (ir/ops/special.py, scipy.special kernels); here they get their torch.special names,
and the compositions are written with eager ops, so their gradients come from those ops'
rules (`where` keeps the defined value at the removable points: xlogy(0, y) = 0, sinc(0) = 1,
entr(0) = 0, with PyTorch's gradients there).
"""

from __future__ import annotations

import math

from ir import dtypes as D

from .creation import tensor as _tensor
from .dispatch import FUNCTIONS as _F
from .tensor import Tensor

__all__ = [
    "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc",
    "gammaincc", "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax",
    "logit", "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round", "sinc",
    "softmax", "xlog1py", "xlogy", "zeta", "airy_ai", "bessel_j0", "bessel_j1", "bessel_y0",
    "bessel_y1", "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
    "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
    "laguerre_polynomial_l", "legendre_polynomial_p", "modified_bessel_i0", "modified_bessel_i1",
    "modified_bessel_k0", "modified_bessel_k1", "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1", "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w", "spherical_bessel_j0",
]


def _t(x, like=None):
    if isinstance(x, Tensor):
        return x
    dt = like.dtype if isinstance(like, Tensor) and like.is_floating_point() else None
    return _tensor(x, dtype=dt) if dt is not None else _tensor(float(x))


def _xlog(x, y, log, pole):
    """x * log(y) (log = log or log1p, whose argument is singular at `pole`), 0 where x is 0
    and y is not NaN. Where x is 0 and y is at or past the pole (or infinite), y is replaced by
    a harmless value, so the gradient in x there is 0 and elsewhere log(y) (PyTorch's)."""
    x, y = _t(x, y), _t(y, x)
    if not x.is_floating_point() and not y.is_floating_point():
        x = x.to(D.get_default_dtype())
    bad = (x == 0) & ((y <= pole) | _F["isinf"](y))
    return x * log(_F["where"](bad, pole + 1.0, y))


def xlogy(input, other, *, out=None):
    """`input * log(other)`, 0 where input is 0 (unless other is NaN). Broadcasting; int
    inputs promote to the default float. Gradients as PyTorch's."""
    r = _xlog(input, other, _F["log"], 0.0)
    return r if out is None else out.copy_(r)


def xlog1py(input, other, *, out=None):
    """`input * log1p(other)`, 0 where input is 0 (unless other is NaN)."""
    r = _xlog(input, other, _F["log1p"], -1.0)
    return r if out is None else out.copy_(r)


def sinc(input, *, out=None):
    """The normalized sinc, sin(pi x) / (pi x), 1 at x = 0 (derivative 0 there)."""
    x = input if input.is_floating_point() or input.is_complex() else input.float()
    zero = x == 0
    safe = _F["where"](zero, 1.0, x) * math.pi
    r = _F["where"](zero, 1.0, _F["sin"](safe) / safe)
    return r if out is None else out.copy_(r)


def entr(input, *, out=None):
    """Elementwise entropy -x ln x: 0 at 0, -inf for x < 0."""
    x = input if input.is_floating_point() else input.float()
    pos = x > 0
    safe = _F["where"](pos, x, 1.0)
    r = _F["where"](pos, -x * _F["log"](safe), _F["where"](x == 0, 0.0, -math.inf))
    return r if out is None else out.copy_(r)


def mvlgamma(input, p, *, out=None):
    """The log of the multivariate gamma function of dimension `p`: sum_i lgamma(x - i/2) +
    p(p-1)/4 log(pi). RuntimeError where an element is <= (p - 1) / 2 (PyTorch's check)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.is_floating_point() else input.float()
    if bool((x <= (p - 1) / 2).any()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    args = x.unsqueeze(-1) - _tensor([i / 2 for i in range(p)], dtype=x.dtype)
    r = _F["lgamma"](args).sum(-1) + p * (p - 1) / 4 * math.log(math.pi)
    return r if out is None else out.copy_(r)


def ndtr(input, *, out=None):
    """The standard normal CDF, (1 + erf(x / sqrt 2)) / 2."""
    x = input if input.is_floating_point() else input.float()
    r = _F["erfc"](x * (-1 / math.sqrt(2))) * 0.5
    return r if out is None else out.copy_(r)


def _named(op):
    fn = _F[op]

    def f(input, *args, out=None, **kwargs):
        r = fn(input, *args, **kwargs)
        return r if out is None else out.copy_(r)
    f.__name__ = op
    f.__doc__ = f"`torch.special` name of the registry op `{op}`."
    return f


def polygamma(n, input, *, out=None):
    r = _F["polygamma"](input, n)
    return r if out is None else out.copy_(r)


digamma = psi = _named("digamma")
gammaln = _named("lgamma")
erf, erfc, erfinv = _named("erf"), _named("erfc"), _named("erfinv")
erfcx, log_ndtr, ndtri = _named("special_erfcx"), _named("special_log_ndtr"), \
    _named("special_ndtri")
exp2, expm1, log1p = _named("exp2"), _named("expm1"), _named("log1p")
expit, logit = _named("sigmoid"), _named("logit")
i0, i0e, i1, i1e = _named("i0"), _named("special_i0e"), _named("special_i1"), \
    _named("special_i1e")
gammainc, gammaincc = _named("igamma"), _named("igammac")
zeta = _named("special_zeta")
# Bessel functions and orthogonal polynomials (ir/ops/special_functions.py)
bessel_j0, bessel_j1 = _named("special_bessel_j0"), _named("special_bessel_j1")
bessel_y0, bessel_y1 = _named("special_bessel_y0"), _named("special_bessel_y1")
modified_bessel_i0 = _named("special_modified_bessel_i0")
modified_bessel_i1 = _named("special_modified_bessel_i1")
modified_bessel_k0 = _named("special_modified_bessel_k0")
modified_bessel_k1 = _named("special_modified_bessel_k1")
scaled_modified_bessel_k0 = _named("special_scaled_modified_bessel_k0")
scaled_modified_bessel_k1 = _named("special_scaled_modified_bessel_k1")
spherical_bessel_j0 = _named("special_spherical_bessel_j0")
airy_ai = _named("special_airy_ai")
chebyshev_polynomial_t = _named("special_chebyshev_polynomial_t")
chebyshev_polynomial_u = _named("special_chebyshev_polynomial_u")
chebyshev_polynomial_v = _named("special_chebyshev_polynomial_v")
chebyshev_polynomial_w = _named("special_chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _named("special_shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _named("special_shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _named("special_shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _named("special_shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _named("special_hermite_polynomial_h")
hermite_polynomial_he = _named("special_hermite_polynomial_he")
laguerre_polynomial_l = _named("special_laguerre_polynomial_l")
legendre_polynomial_p = _named("special_legendre_polynomial_p")
round = _named("round")  # noqa: A001  (torch.special.round)
logsumexp = _named("logsumexp")
multigammaln = mvlgamma


def softmax(input, dim, *, dtype=None):
    return _F["softmax"](input, dim, dtype=dtype) if dtype is not None else \
        _F["softmax"](input, dim)


def log_softmax(input, dim, *, dtype=None):
    return _F["log_softmax"](input, dim, dtype=dtype) if dtype is not None else \
        _F["log_softmax"](input, dim)


def install(tensor_cls) -> None:
    """Tensor methods of the compositions (`x.xlogy(y)`, `x.sinc()`, `x.mvlgamma(p)`, ...)."""
    tensor_cls.xlogy = xlogy
    tensor_cls.sinc = sinc
    tensor_cls.mvlgamma = mvlgamma

    def xlogy_(self, other):
        return self.copy_(xlogy(self, other))

    def sinc_(self):
        return self.copy_(sinc(self))

    def mvlgamma_(self, p):
        return self.copy_(mvlgamma(self, p))
    tensor_cls.xlogy_, tensor_cls.sinc_, tensor_cls.mvlgamma_ = xlogy_, sinc_, mvlgamma_
