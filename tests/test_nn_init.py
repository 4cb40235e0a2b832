"""eager.nn.init: each scheme's moments and bounds checked statistically against its formula
(PyTorch's documentation of torch.nn.init), fans and gains against PyTorch's functions (when
installed), in-place identity, no autograd recording, determinism under manual_seed, errors."""

import math

import numpy as np
import pytest

import eager
from eager import nn
from eager.nn import init

try:
    import torch
except ImportError:  # the PyTorch comparisons are skipped
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")

SHAPE = (256, 128, 3)  # fan_in = 384, fan_out = 768; 98304 samples


def _param(shape=SHAPE):
    return nn.Parameter(eager.empty(*shape))


def _check_moments(t, mean, std, k=5.0):
    """Sample mean and std within k standard errors of the expected ones."""
    x = t.detach().numpy().astype(np.float64).ravel()
    n = x.size
    assert abs(x.mean() - mean) < k * std / math.sqrt(n)
    # the standard error of the sample std is about std / sqrt(2n) (normal-like tails)
    assert abs(x.std() - std) < k * std * math.sqrt(2.0 / n) * 1.5


def _uniform_ok(t, bound):
    x = t.detach().numpy()
    assert x.min() >= -bound and x.max() <= bound
    _check_moments(t, 0.0, bound / math.sqrt(3))


def test_uniform_and_normal():
    eager.manual_seed(0)
    p = _param()
    assert init.uniform_(p, -2.0, 4.0) is p
    x = p.detach().numpy()
    assert x.min() >= -2 and x.max() <= 4
    _check_moments(p, 1.0, 6 / math.sqrt(12))
    assert init.normal_(p, 0.5, 2.0) is p
    _check_moments(p, 0.5, 2.0)
    assert p.requires_grad and p.grad_fn is None  # still a leaf: written under no_grad


@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier(gain):
    eager.manual_seed(1)
    fan_in, fan_out = 128 * 3, 256 * 3
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    _uniform_ok(init.xavier_uniform_(_param(), gain), math.sqrt(3) * std)
    _check_moments(init.xavier_normal_(_param(), gain), 0.0, std)


@pytest.mark.parametrize(("a", "mode", "nl"), [(0, "fan_in", "leaky_relu"),
                                               (0.2, "fan_out", "leaky_relu"),
                                               (0, "fan_in", "relu"),
                                               (0, "fan_out", "tanh")])
def test_kaiming(a, mode, nl):
    eager.manual_seed(2)
    fan = 128 * 3 if mode == "fan_in" else 256 * 3
    std = init.calculate_gain(nl, a) / math.sqrt(fan)
    _uniform_ok(init.kaiming_uniform_(_param(), a=a, mode=mode, nonlinearity=nl),
                math.sqrt(3) * std)
    _check_moments(init.kaiming_normal_(_param(), a=a, mode=mode, nonlinearity=nl), 0.0, std)


def test_trunc_normal_moments():
    eager.manual_seed(3)
    p = init.trunc_normal_(_param(), mean=0.5, std=1.0, a=-0.5, b=2.0)
    x = p.detach().numpy().astype(np.float64).ravel()
    assert x.min() >= -0.5 and x.max() <= 2.0
    # moments of the truncated normal on [alpha, beta] in standard units
    alpha, beta = -1.0, 1.5
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)
    cdf = lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2)))
    Z = cdf(beta) - cdf(alpha)
    mean = 0.5 + (pdf(alpha) - pdf(beta)) / Z
    var = 1 + (alpha * pdf(alpha) - beta * pdf(beta)) / Z - ((pdf(alpha) - pdf(beta)) / Z) ** 2
    _check_moments(p, mean, math.sqrt(var))


def test_trunc_normal_far_tail_uses_inverse_cdf():
    eager.manual_seed(4)
    with pytest.warns(UserWarning, match="more than 2 std"):
        p = init.trunc_normal_(_param((2000,)), mean=0.0, std=1.0, a=9.0, b=9.5)
    x = p.detach().numpy()
    assert x.min() >= 9.0 and x.max() <= 9.5 and x.mean() < 9.2  # mass piles up near a


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (5, 2, 3)])
def test_orthogonal(shape):
    eager.manual_seed(5)
    p = init.orthogonal_(_param(shape), gain=2.0)
    q = p.detach().numpy().reshape(shape[0], -1).astype(np.float64)
    small = q @ q.T if q.shape[0] <= q.shape[1] else q.T @ q
    np.testing.assert_allclose(small, 4.0 * np.eye(small.shape[0]), atol=1e-5)


def test_constants_eye_dirac():
    p = _param((3, 4))
    assert init.constant_(p, 0.25) is p and (p.detach().numpy() == 0.25).all()
    assert (init.ones_(p).detach().numpy() == 1).all()
    assert (init.zeros_(p).detach().numpy() == 0).all()
    np.testing.assert_array_equal(init.eye_(p).detach().numpy(), np.eye(3, 4))
    w = init.dirac_(_param((4, 2, 3, 3)), groups=2)
    x = np.random.default_rng(0).standard_normal((1, 4, 5, 5)).astype(np.float32)
    y = eager.nn.functional.conv2d(eager.tensor(x), w.detach(), padding=1, groups=2) \
        if hasattr(eager.nn.functional, "conv2d") else None
    expect = np.zeros((4, 2, 3, 3))
    expect[0, 0, 1, 1] = expect[1, 1, 1, 1] = expect[2, 0, 1, 1] = expect[3, 1, 1, 1] = 1
    np.testing.assert_array_equal(w.detach().numpy(), expect)
    if y is not None:
        np.testing.assert_allclose(y.numpy(), x, rtol=1e-6)  # groups of identities


def test_seeded_draws_repeat():
    eager.manual_seed(7)
    a = init.kaiming_uniform_(_param((8, 8))).detach().numpy().copy()
    eager.manual_seed(7)
    b = init.kaiming_uniform_(_param((8, 8))).detach().numpy()
    np.testing.assert_array_equal(a, b)
    g = eager.Generator().manual_seed(3)
    c = init.normal_(_param((4,)), generator=g).detach().numpy().copy()
    g.manual_seed(3)
    np.testing.assert_array_equal(init.normal_(_param((4,)), generator=g).detach().numpy(), c)


@needs_torch
@pytest.mark.parametrize("shape", [(3, 4), (5, 2, 3, 3), (7, 1, 2)])
def test_fans_match_torch(shape):
    e = init._calculate_fan_in_and_fan_out(eager.empty(*shape))
    t = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(*shape))
    assert e == t


@needs_torch
@pytest.mark.parametrize(("nl", "param"), [("linear", None), ("conv2d", None), ("sigmoid", None),
                                           ("tanh", None), ("relu", None), ("leaky_relu", None),
                                           ("leaky_relu", 0.3), ("selu", None)])
def test_gains_match_torch(nl, param):
    assert init.calculate_gain(nl, param) == pytest.approx(torch.nn.init.calculate_gain(nl, param))


@needs_torch
@pytest.mark.parametrize("case", [
    lambda lib: lib.nn.init.calculate_gain("nope"),
    lambda lib: lib.nn.init.calculate_gain("leaky_relu", True),
    lambda lib: lib.nn.init.xavier_uniform_(lib.empty(3)),
    lambda lib: lib.nn.init.kaiming_normal_(lib.empty(3, 3), mode="fan_x"),
    lambda lib: lib.nn.init.eye_(lib.empty(3, 3, 3)),
    lambda lib: lib.nn.init.dirac_(lib.empty(3, 3)),
    lambda lib: lib.nn.init.dirac_(lib.empty(3, 3, 3), groups=2),
    lambda lib: lib.nn.init.orthogonal_(lib.empty(3)),
])
def test_errors_match_torch(case):
    msgs = []
    for lib in (eager, torch):
        with pytest.raises(ValueError) as info:
            case(lib)
        msgs.append(str(info.value))
    assert msgs[0] == msgs[1]
