"""eager.distributions and the special functions under it (issue 17, item 4): densities,
cdf/icdf, entropy and moments against scipy.stats; the same quantities, gradients and KL
divergences against torch.distributions when torch is installed; reparameterized gradients
against finite differences of the inverse CDF; sample moments; validation errors; expand.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st

import eager
import eager.distributions as D

torch = None
try:
    import torch
    import torch.distributions as TD
except ImportError:  # torch is an optional reference
    pass

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")


def T(x, dt=eager.float64):
    return eager.tensor(np.asarray(x, dtype=np.float64), dtype=dt)


def close(a, b, rtol=1e-6, atol=1e-8):
    a = a.detach().numpy() if hasattr(a, "detach") else np.asarray(a)
    b = b.detach().numpy() if hasattr(b, "detach") else np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


# (wick ctor, scipy frozen distribution, values inside the support)
LOC = np.array([0.0, 1.5, -2.0])
SCALE = np.array([1.0, 0.5, 2.0])
CONT = {
    "Normal": (lambda: D.Normal(T(LOC), T(SCALE)), st.norm(LOC, SCALE), [0.3, 1.0, -1.0]),
    "Laplace": (lambda: D.Laplace(T(LOC), T(SCALE)), st.laplace(LOC, SCALE), [0.3, 1.0, -1.0]),
    "Cauchy": (lambda: D.Cauchy(T(LOC), T(SCALE)), st.cauchy(LOC, SCALE), [0.3, 1.0, -1.0]),
    "Uniform": (lambda: D.Uniform(T([0.0, -1.0, 2.0]), T([1.0, 3.0, 2.5])),
                st.uniform([0.0, -1.0, 2.0], [1.0, 4.0, 0.5]), [0.3, 1.0, 2.2]),
    "Exponential": (lambda: D.Exponential(T(SCALE)), st.expon(scale=1 / SCALE),
                    [0.3, 1.0, 2.0]),
    "Gamma": (lambda: D.Gamma(T([0.5, 2.0, 5.0]), T(SCALE)),
              st.gamma([0.5, 2.0, 5.0], scale=1 / SCALE), [0.3, 1.0, 2.0]),
    "Chi2": (lambda: D.Chi2(T([1.0, 3.0, 6.5])), st.chi2([1.0, 3.0, 6.5]), [0.3, 1.0, 2.0]),
    "Beta": (lambda: D.Beta(T([0.5, 2.0, 5.0]), T([1.5, 2.0, 0.7])),
             st.beta([0.5, 2.0, 5.0], [1.5, 2.0, 0.7]), [0.3, 0.5, 0.9]),
    "StudentT": (lambda: D.StudentT(T([1.5, 4.0, 10.0]), T(LOC), T(SCALE)),
                 st.t([1.5, 4.0, 10.0], LOC, SCALE), [0.3, 1.0, -1.0]),
    "LogNormal": (lambda: D.LogNormal(T(LOC), T(SCALE)), st.lognorm(SCALE, scale=np.exp(LOC)),
                  [0.3, 1.0, 2.0]),
    "HalfNormal": (lambda: D.HalfNormal(T(SCALE)), st.halfnorm(scale=SCALE), [0.3, 1.0, 2.0]),
}
HAS_CDF = {"Normal", "Laplace", "Cauchy", "Uniform", "Exponential", "Gamma", "Chi2",
           "LogNormal", "HalfNormal"}
HAS_ICDF = {"Normal", "Laplace", "Cauchy", "Uniform", "Exponential", "LogNormal",
            "HalfNormal"}
FINITE_MOMENTS = set(CONT) - {"Cauchy"}


@pytest.mark.parametrize("name", sorted(CONT))
def test_continuous_against_scipy(name):
    make, ref, vals = CONT[name]
    d = make()
    v = T(vals)
    close(d.log_prob(v), ref.logpdf(vals), rtol=1e-6)
    if name != "LogNormal":
        close(d.entropy(), ref.entropy(), rtol=1e-6)
    else:
        close(d.entropy(), ref.entropy(), rtol=1e-6)
    if name in HAS_CDF:
        close(d.cdf(v), ref.cdf(vals), rtol=1e-6)
    if name in HAS_ICDF:
        q = T([0.2, 0.5, 0.9])
        close(d.icdf(q), ref.ppf([0.2, 0.5, 0.9]), rtol=1e-6)
    if name in FINITE_MOMENTS:
        close(d.mean, ref.mean(), rtol=1e-6)
        close(d.variance, ref.var(), rtol=1e-6)
    assert tuple(d.batch_shape) == (3,)
    assert tuple(d.sample((4, 2)).shape) == (4, 2, 3)


@pytest.mark.parametrize("name", sorted(CONT))
def test_sample_moments(name):
    make, ref, _ = CONT[name]
    if name in ("Cauchy", "StudentT"):
        return  # heavy tails: no finite variance to check against
    eager.manual_seed(0)
    d = make()
    s = d.sample((40000,)).numpy()
    se = np.sqrt(ref.var() / s.shape[0])
    assert np.all(np.abs(s.mean(0) - ref.mean()) < 6 * se + 1e-3), (s.mean(0), ref.mean())
    assert np.all(d.support.check(eager.tensor(s)).numpy())


def test_reparameterized_location_scale_gradients():
    loc = T([0.5, -1.0]).requires_grad_()
    scale = T([2.0, 0.3]).requires_grad_()
    eager.manual_seed(3)
    x = D.Normal(loc, scale).rsample((5,))
    eager.manual_seed(3)
    eps = eager.randn(5, 2, dtype=eager.float64)
    x.sum().backward()
    close(loc.grad, [5.0, 5.0])
    close(scale.grad, eps.sum(0))


@pytest.mark.parametrize("alpha", [0.3, 1.0, 2.5, 9.0])
def test_gamma_implicit_reparameterization(alpha):
    """d sample / d alpha at fixed quantile u equals d/d alpha of the inverse CDF at u."""
    a = T([alpha]).requires_grad_()
    x = D.Gamma(a, T([1.0])).rsample()
    x.sum().backward()
    u = sp.gammainc(alpha, float(x.item()))
    h = 1e-6 * alpha
    fd = (sp.gammaincinv(alpha + h, u) - sp.gammaincinv(alpha - h, u)) / (2 * h)
    np.testing.assert_allclose(a.grad.item(), fd, rtol=1e-4)


def test_dirichlet_and_beta_rsample_differentiable():
    c = T([1.5, 2.0, 0.7]).requires_grad_()
    s = D.Dirichlet(c).rsample((3,))
    close(s.sum(-1), np.ones(3))
    s[:, 0].sum().backward()
    assert c.grad is not None and np.all(np.isfinite(c.grad.numpy()))
    a = T([2.0]).requires_grad_()
    D.Beta(a, T([3.0])).rsample((4,)).sum().backward()
    assert np.isfinite(a.grad.numpy()).all()


# ------------------------------------------------------------------------ discrete


def test_discrete_against_scipy():
    p = np.array([0.2, 0.7, 0.5])
    b = D.Bernoulli(probs=T(p))
    close(b.log_prob(T([1.0, 0.0, 1.0])), st.bernoulli(p).logpmf([1, 0, 1]))
    close(b.entropy(), st.bernoulli(p).entropy())
    bl = D.Bernoulli(logits=T(sp.logit(p)))
    close(bl.probs, p)
    close(D.Binomial(10, probs=T(p)).log_prob(T([3.0, 7.0, 5.0])),
          st.binom(10, p).logpmf([3, 7, 5]))
    close(D.Binomial(6, probs=T(p)).entropy(), st.binom(6, p).entropy(), rtol=1e-6)
    rate = np.array([0.5, 3.0, 10.0])
    close(D.Poisson(T(rate)).log_prob(T([0.0, 2.0, 12.0])), st.poisson(rate).logpmf([0, 2, 12]))
    close(D.Geometric(probs=T(p)).log_prob(T([0.0, 3.0, 1.0])),
          st.geom(p, loc=-1).logpmf([0, 3, 1]))
    close(D.Geometric(probs=T(p)).entropy(), st.geom(p, loc=-1).entropy())
    probs = np.array([[0.1, 0.6, 0.3], [0.5, 0.25, 0.25]])
    c = D.Categorical(probs=T(probs))
    close(c.log_prob(T([1.0, 2.0])), np.log([0.6, 0.25]))
    close(c.entropy(), -(probs * np.log(probs)).sum(-1))
    oh = D.OneHotCategorical(probs=T(probs))
    close(oh.log_prob(T([[0, 1, 0], [0, 0, 1]])), np.log([0.6, 0.25]))
    m = D.Multinomial(5, probs=T(probs[0]))
    close(m.log_prob(T([1.0, 3.0, 1.0])), st.multinomial(5, probs[0]).logpmf([1, 3, 1]))


def test_discrete_sampling():
    eager.manual_seed(0)
    s = D.Categorical(probs=T([0.1, 0.6, 0.3])).sample((20000,)).numpy()
    np.testing.assert_allclose(np.bincount(s, minlength=3) / s.size, [0.1, 0.6, 0.3],
                               atol=0.02)
    b = D.Bernoulli(probs=T([0.25])).sample((20000,)).numpy()
    assert abs(b.mean() - 0.25) < 0.02 and set(np.unique(b)) <= {0.0, 1.0}
    p = D.Poisson(T([4.0])).sample((20000,)).numpy()
    assert abs(p.mean() - 4.0) < 0.1
    oh = D.OneHotCategorical(probs=T([0.5, 0.5])).sample((10,)).numpy()
    assert np.all(oh.sum(-1) == 1)
    eager.manual_seed(5)
    a = D.Normal(T([0.0]), T([1.0])).sample((3,))
    eager.manual_seed(5)
    b2 = D.Normal(T([0.0]), T([1.0])).sample((3,))
    close(a, b2, rtol=0, atol=0)


def test_categorical_log_prob_gradient_reinforce():
    logits = T([0.2, -0.5, 1.0]).requires_grad_()
    pol = D.Categorical(logits=logits)
    loss = -(pol.log_prob(T([2.0, 0.0, 2.0, 1.0])) * T([1.0, -1.0, 0.5, 0.2])).mean()
    loss.backward()
    p = sp.softmax([0.2, -0.5, 1.0])
    grad = np.zeros(3)
    for a, r in zip([2, 0, 2, 1], [1.0, -1.0, 0.5, 0.2]):
        onehot = np.eye(3)[a]
        grad += -r * (onehot - p) / 4
    close(logits.grad, grad)


# ------------------------------------------------------------------------ multivariate


def test_multivariate_normal_against_scipy():
    mu = np.array([0.0, 1.0, -1.0])
    A = np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 1.5]])
    x = np.array([[0.5, 0.5, 0.0], [1.0, -1.0, 2.0]])
    ref = st.multivariate_normal(mu, A)
    for kw in ({"covariance_matrix": T(A)}, {"precision_matrix": T(np.linalg.inv(A))},
               {"scale_tril": T(np.linalg.cholesky(A))}):
        d = D.MultivariateNormal(T(mu), **kw)
        close(d.log_prob(T(x)), ref.logpdf(x))
        close(d.entropy(), ref.entropy())
        close(d.covariance_matrix, A)
        close(d.variance, np.diag(A))
    W = np.array([[1.0, 0.0], [0.5, 1.0], [0.0, -1.0]])
    Dg = np.array([0.5, 1.0, 2.0])
    lr = D.LowRankMultivariateNormal(T(mu), T(W), T(Dg))
    ref2 = st.multivariate_normal(mu, W @ W.T + np.diag(Dg))
    close(lr.log_prob(T(x)), ref2.logpdf(x))
    close(lr.entropy(), ref2.entropy())
    eager.manual_seed(0)
    s = D.MultivariateNormal(T(mu), covariance_matrix=T(A)).sample((30000,)).numpy()
    np.testing.assert_allclose(np.cov(s.T), A, atol=0.06)


def test_mixture_independent_transformed():
    mix = D.Categorical(probs=T([0.3, 0.7]))
    comp = D.Normal(T([-1.0, 2.0]), T([0.5, 1.0]))
    gmm = D.MixtureSameFamily(mix, comp)
    x = np.array([0.0, 1.5, -1.2])
    want = np.log(0.3 * st.norm(-1, 0.5).pdf(x) + 0.7 * st.norm(2, 1).pdf(x))
    close(gmm.log_prob(T(x)), want)
    close(gmm.mean, 0.3 * -1 + 0.7 * 2)
    assert tuple(gmm.sample((7,)).shape) == (7,)
    ind = D.Independent(D.Normal(T(np.zeros((2, 3))), T(np.ones((2, 3)))), 1)
    assert tuple(ind.batch_shape) == (2,) and tuple(ind.event_shape) == (3,)
    close(ind.log_prob(T(np.zeros((2, 3)))), 3 * st.norm.logpdf(0) * np.ones(2))
    td = D.TransformedDistribution(D.Normal(T([0.0]), T([1.0])),
                                   [D.AffineTransform(1.0, 2.0), D.ExpTransform()])
    close(td.log_prob(T([1.7])), st.lognorm(2.0, scale=math.e).logpdf(1.7))
    sig = D.TransformedDistribution(D.Normal(T([0.0]), T([1.0])), D.SigmoidTransform())
    y = 0.3
    close(sig.log_prob(T([y])), st.norm.logpdf(sp.logit(y)) - np.log(y * (1 - y)))


def test_validation_and_expand():
    with pytest.raises(ValueError, match="scale"):
        D.Normal(T([0.0]), T([-1.0]), validate_args=True)
    with pytest.raises(ValueError, match="support"):
        D.Exponential(T([1.0]), validate_args=True).log_prob(T([-1.0]))
    with pytest.raises(ValueError):
        D.Categorical(probs=T([0.5]), logits=T([0.0]))
    d = D.Normal(T([0.0]), T([1.0])).expand((4, 1))
    assert tuple(d.batch_shape) == (4, 1) and tuple(d.sample().shape) == (4, 1)
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Normal(T([0.0]), T([1.0])), D.Poisson(T([1.0])))


# ------------------------------------------------------------------------ torch as reference


def _pair(name):
    P = [0.5, 2.0]
    Q = [1.5, 0.7]
    return {
        "Normal": (lambda m: m.Normal(tt(m, [0.0, 1.0]), tt(m, P)),
                   lambda m: m.Normal(tt(m, [0.5, -1.0]), tt(m, Q))),
        "Gamma": (lambda m: m.Gamma(tt(m, P), tt(m, Q)), lambda m: m.Gamma(tt(m, Q), tt(m, P))),
        "Beta": (lambda m: m.Beta(tt(m, P), tt(m, Q)), lambda m: m.Beta(tt(m, Q), tt(m, P))),
        "Exponential": (lambda m: m.Exponential(tt(m, P)), lambda m: m.Exponential(tt(m, Q))),
        "Laplace": (lambda m: m.Laplace(tt(m, [0.0, 1.0]), tt(m, P)),
                    lambda m: m.Laplace(tt(m, [1.0, 0.0]), tt(m, Q))),
        "Poisson": (lambda m: m.Poisson(tt(m, P)), lambda m: m.Poisson(tt(m, Q))),
        "Bernoulli": (lambda m: m.Bernoulli(probs=tt(m, [0.2, 0.6])),
                      lambda m: m.Bernoulli(probs=tt(m, [0.5, 0.1]))),
        "Categorical": (lambda m: m.Categorical(probs=tt(m, [[0.2, 0.8], [0.5, 0.5]])),
                        lambda m: m.Categorical(logits=tt(m, [[0.1, 0.3], [1.0, -1.0]]))),
        "Dirichlet": (lambda m: m.Dirichlet(tt(m, [[0.5, 2.0, 1.0]])),
                      lambda m: m.Dirichlet(tt(m, [[1.5, 0.7, 3.0]]))),
        "MultivariateNormal": (
            lambda m: m.MultivariateNormal(tt(m, [0.0, 1.0]),
                                           covariance_matrix=tt(m, [[2.0, 0.3], [0.3, 1.0]])),
            lambda m: m.MultivariateNormal(tt(m, [1.0, 0.0]),
                                           scale_tril=tt(m, [[1.0, 0.0], [0.4, 0.5]]))),
        "Uniform": (lambda m: m.Uniform(tt(m, [0.0, 1.0]), tt(m, [1.0, 2.0])),
                    lambda m: m.Uniform(tt(m, [-1.0, 0.0]), tt(m, [2.0, 3.0]))),
    }[name]


def tt(m, x):
    lib = eager if m is D else torch
    return lib.tensor(x, dtype=lib.float64)


KL_PAIRS = ["Normal", "Gamma", "Beta", "Exponential", "Laplace", "Poisson", "Bernoulli",
            "Categorical", "Dirichlet", "MultivariateNormal", "Uniform"]


@needs_torch
@pytest.mark.parametrize("name", KL_PAIRS)
def test_against_torch(name):
    mk_p, mk_q = _pair(name)
    p, q = mk_p(D), mk_q(D)
    tp, tq = mk_p(TD), mk_q(TD)
    close(D.kl_divergence(p, q), TD.kl_divergence(tp, tq).numpy(), rtol=1e-6)
    try:
        want = tp.entropy().numpy()
    except NotImplementedError:  # torch's Poisson has none; scipy's is the reference
        want = st.poisson(tp.rate.numpy()).entropy()
    close(p.entropy(), want, rtol=1e-6)
    close(p.mean, tp.mean.numpy(), rtol=1e-6)
    close(p.variance, tp.variance.numpy(), rtol=1e-6)
    x = tp.sample((3,))
    close(p.log_prob(eager.tensor(x.numpy())), tp.log_prob(x).numpy(), rtol=1e-6)


@needs_torch
def test_gradients_against_torch():
    def run(lib, M):
        loc = lib.tensor([0.3, -0.2], dtype=lib.float64, requires_grad=True)
        conc = lib.tensor([1.5, 2.5], dtype=lib.float64, requires_grad=True)
        x = lib.tensor([0.7, 1.2], dtype=lib.float64)
        val = (M.Normal(loc, conc).log_prob(x).sum() + M.Gamma(conc, loc.exp()).log_prob(x).sum()
               + M.Beta(conc, conc * 2).entropy().sum()
               + M.StudentT(conc * 2, loc, conc).log_prob(x).sum())
        val.backward()
        return val.item(), loc.grad.numpy(), conc.grad.numpy()
    ours, ref = run(eager, D), run(torch, TD)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-10)
    close(ours[1], ref[1], rtol=1e-9)
    close(ours[2], ref[2], rtol=1e-9)


# ------------------------------------------------------------------------ special functions


@pytest.mark.parametrize("name,ref", [
    ("lgamma", sp.gammaln), ("digamma", sp.digamma), ("i0", sp.i0),
    ("special_i0e", sp.i0e), ("special_i1", sp.i1), ("special_i1e", sp.i1e),
    ("special_erfcx", sp.erfcx), ("special_log_ndtr", sp.log_ndtr)])
def test_special_functions_values_and_gradients(name, ref):
    x = np.array([0.3, 1.2, 2.5, 4.0])
    close(getattr(eager, name)(T(x)), ref(x), rtol=1e-12)
    t = T(x).requires_grad_()
    assert eager.autograd.gradcheck(getattr(eager, name), (t,))
    assert getattr(eager, name)(T(x, eager.float32)).dtype is eager.float32
    assert getattr(eager, name)(eager.tensor([1, 2])).dtype is eager.float32


def test_special_namespace():
    x = np.array([0.2, 0.5, 0.9])
    close(eager.special.ndtri(T(x)), sp.ndtri(x))
    close(eager.special.ndtr(T(x)), sp.ndtr(x))
    close(eager.polygamma(2, T(x)), sp.polygamma(2, x))
    close(T(x).polygamma(1), sp.polygamma(1, x))
    close(eager.special.gammainc(T([1.0, 2.0, 3.0]), T(x)), sp.gammainc([1, 2, 3], x))
    close(eager.special.gammaincc(T([1.0, 2.0, 3.0]), T(x)), sp.gammaincc([1, 2, 3], x))
    close(eager.special.zeta(T([2.0, 3.0, 4.0]), T([1.0, 2.0, 0.5])),
          sp.zeta([2, 3, 4], [1, 2, 0.5]))
    close(eager.special.entr(T([0.0, 0.5, 2.0])), sp.entr([0.0, 0.5, 2.0]))
    close(eager.sinc(T([0.0, 0.5, 1.5])), np.sinc([0.0, 0.5, 1.5]))
    close(eager.mvlgamma(T([2.5, 3.0]), 3), [sp.multigammaln(2.5, 3), sp.multigammaln(3.0, 3)])
    close(eager.xlogy(T([0.0, 2.0]), T([0.0, 3.0])), sp.xlogy([0.0, 2.0], [0.0, 3.0]))
    close(eager.special.xlog1py(T([0.0, 2.0]), T([-1.0, 3.0])), sp.xlog1py([0, 2], [-1, 3]))
    with pytest.raises(RuntimeError):
        eager.mvlgamma(T([0.5]), 3)
    with pytest.raises(RuntimeError):
        eager.polygamma(-1, T([1.0]))
    a = T([1.5, 2.5])
    x2 = T([0.7, 2.0]).requires_grad_()
    assert eager.autograd.gradcheck(lambda t: eager.igamma(a, t), (x2,))
    assert eager.autograd.gradgradcheck(eager.lgamma, (T([0.5, 3.0]).requires_grad_(),))


@needs_torch
def test_special_against_torch():
    x = np.array([0.0, 0.5, 2.0, -1.0])
    y = np.array([0.5, 3.0, 0.0, 2.0])
    for name in ("xlogy", "xlog1py"):
        a = eager.tensor(x, requires_grad=True)
        b = eager.tensor(y, requires_grad=True)
        ta = torch.tensor(x, requires_grad=True)
        tb = torch.tensor(y, requires_grad=True)
        getattr(eager.special, name)(a, b).sum().backward()
        getattr(torch.special, name)(ta, tb).sum().backward()
        close(a.grad, ta.grad.numpy())
        close(b.grad, tb.grad.numpy())
    s = eager.tensor(x, requires_grad=True)
    ts = torch.tensor(x, requires_grad=True)
    eager.sinc(s).sum().backward()
    torch.sinc(ts).sum().backward()
    close(s.grad, ts.grad.numpy())


@pytest.mark.parametrize("name", KL_PAIRS)
def test_expand_keeps_the_distribution(name):
    """expand(batch) gives the batch shape asked for, and log_prob/entropy equal to the
    unexpanded distribution's broadcast (every family's expand goes through one helper)."""
    p = _pair(name)[0](D)
    batch = (4,) + tuple(p.batch_shape)
    e = p.expand(batch)
    assert tuple(e.batch_shape) == batch and tuple(e.event_shape) == tuple(p.event_shape)
    x = p.sample((4,))
    close(e.log_prob(x), p.log_prob(x), rtol=1e-12)
    close(e.entropy(), np.broadcast_to(p.entropy().numpy(), batch), rtol=1e-12)
    assert tuple(e.sample().shape) == batch + tuple(p.event_shape)


@pytest.mark.parametrize("name", ["Gumbel", "HalfCauchy", "Weibull", "InverseGamma", "Pareto"])
def test_more_families_against_scipy(name):
    s3 = [1.0, 0.5, 2.0]
    k3 = [3.0, 4.0, 5.0]
    make, ref, v = {
        "Gumbel": (lambda: D.Gumbel(T([0.0, 1.0, -1.0]), T(s3)),
                   st.gumbel_r([0, 1, -1], s3), [0.3, 1.0, 2.5]),
        "HalfCauchy": (lambda: D.HalfCauchy(T(s3)), st.halfcauchy(scale=s3), [0.3, 1.0, 2.5]),
        "Weibull": (lambda: D.Weibull(T(s3), T([1.5, 2.0, 0.8])),
                    st.weibull_min([1.5, 2.0, 0.8], scale=s3), [0.3, 1.0, 2.5]),
        "InverseGamma": (lambda: D.InverseGamma(T(k3), T(s3)), st.invgamma(k3, scale=s3),
                         [0.3, 1.0, 2.5]),
        "Pareto": (lambda: D.Pareto(T(s3), T(k3)), st.pareto(k3, scale=s3), [1.5, 1.0, 2.5]),
    }[name]
    d = make()
    close(d.log_prob(T(v)), ref.logpdf(v), rtol=1e-10)
    close(d.entropy(), ref.entropy(), rtol=1e-10)
    if name != "HalfCauchy":
        close(d.mean, ref.mean(), rtol=1e-10)
        close(d.variance, ref.var(), rtol=1e-10)
    eager.manual_seed(0)
    s = d.sample((20000,)).numpy()
    np.testing.assert_allclose(np.median(s, 0), ref.median(), rtol=0.05, atol=0.08)


def test_negative_binomial_against_scipy():
    probs = np.array([0.3, 0.6, 0.5])
    nb = D.NegativeBinomial(T([3.0, 5.0, 2.0]), probs=T(probs))
    ref = st.nbinom([3, 5, 2], 1 - probs)  # scipy counts failures before n successes
    k = np.array([0.0, 4.0, 2.0])
    close(nb.log_prob(T(k)), ref.logpmf(k), rtol=1e-10)
    close(nb.mean, ref.mean(), rtol=1e-10)
    close(nb.variance, ref.var(), rtol=1e-10)
    eager.manual_seed(0)
    np.testing.assert_allclose(nb.sample((20000,)).numpy().mean(0), ref.mean(), rtol=0.05)
    nbl = D.NegativeBinomial(T([3.0, 5.0, 2.0]), logits=T(sp.logit(probs)))
    close(nbl.log_prob(T(k)), ref.logpmf(k), rtol=1e-10)
