"""Issue 16's sweep additions checked without torch, against numpy/scipy references and
their own definitions: LBFGS reaches Rosenbrock's minimum, the orthogonal maps (matrix_exp
against scipy's expm, householder_product against numpy's QR), weight_norm's formula, conv +
batch-norm fusion against the unfused pair, OneCycleLR's documented endpoints, the new
optimizers decreasing a quadratic, WeightedRandomSampler's frequencies."""

import numpy as np
import pytest
import scipy.linalg

import eager
from eager import nn, optim
from eager.nn.utils import orthogonal_maps, parametrizations


def test_lbfgs_reaches_rosenbrock_minimum():
    x = eager.tensor([-1.2, 1.0], dtype=eager.float64, requires_grad=True)
    opt = optim.LBFGS([x], line_search_fn="strong_wolfe", max_iter=200, tolerance_change=1e-15,
                      tolerance_grad=1e-12)

    def closure():
        opt.zero_grad()
        loss = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        loss.backward()
        return loss

    for _ in range(3):
        opt.step(closure)
    np.testing.assert_allclose(x.detach().numpy(), [1.0, 1.0], atol=1e-6)


@pytest.mark.parametrize("scale", [0.1, 1.0, 20.0])
def test_matrix_exp_against_scipy(scale):
    a = np.random.default_rng(3).standard_normal((5, 5)) * scale
    np.testing.assert_allclose(orthogonal_maps.matrix_exp(eager.tensor(a)).numpy(),
                               scipy.linalg.expm(a), rtol=1e-9, atol=1e-12)


def test_householder_product_against_numpy_qr():
    a = np.random.default_rng(4).standard_normal((6, 4))
    (qr, tau), _ = scipy.linalg.qr(a, mode="raw")
    q = orthogonal_maps.householder_product(eager.tensor(np.ascontiguousarray(qr)),
                                            eager.tensor(tau)).numpy()
    q_ref, _ = np.linalg.qr(a)
    np.testing.assert_allclose(np.abs(q), np.abs(q_ref), atol=1e-12)


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder"])
def test_orthogonal_stays_orthogonal_while_training(orth_map):
    m = nn.Linear(4, 6, dtype=eager.float64)
    parametrizations.orthogonal(m, orthogonal_map=orth_map)
    opt = optim.SGD(m.parameters(), lr=0.1)
    x = eager.tensor(np.random.default_rng(5).standard_normal((8, 4)))
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = (m(x) - 1.0).pow(2).mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        w = m.weight.detach().numpy()
        np.testing.assert_allclose(w.T @ w, np.eye(4), atol=1e-10)
    assert losses[-1] < losses[0]


def test_weight_norm_formula_and_grad_by_finite_differences():
    m = nn.Linear(3, 2, dtype=eager.float64)
    parametrizations.weight_norm(m)
    g = m.parametrizations.weight.original0
    v = m.parametrizations.weight.original1
    vn = v.detach().numpy()
    np.testing.assert_allclose(m.weight.detach().numpy(),
                               g.detach().numpy() * vn / np.linalg.norm(vn, axis=1,
                                                                        keepdims=True))
    assert eager.autograd.gradcheck(lambda gg, vv: vv * (gg / vv.norm(dim=1, keepdim=True)),
                                    (g.detach().clone().requires_grad_(),
                                     v.detach().clone().requires_grad_()))


def test_fuse_conv_bn_equals_unfused():
    conv = nn.Conv2d(2, 3, 3, dtype=eager.float64).eval()
    bn = nn.BatchNorm2d(3, dtype=eager.float64).eval()
    with eager.no_grad():
        bn.running_mean.copy_(eager.tensor([0.1, -0.2, 0.3]))
        bn.running_var.copy_(eager.tensor([0.5, 2.0, 1.5]))
        bn.weight.copy_(eager.tensor([1.5, -0.5, 2.0]))
    x = eager.tensor(np.random.default_rng(6).standard_normal((2, 2, 6, 6)))
    fused = nn.utils.fuse_conv_bn_eval(conv, bn)
    np.testing.assert_allclose(fused(x).detach().numpy(), bn(conv(x)).detach().numpy(),
                               rtol=1e-12, atol=1e-12)


def test_one_cycle_endpoints():
    p = eager.zeros(1, requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    sched = optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=100, pct_start=0.3)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(99):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    assert lrs[0] == pytest.approx(1.0 / 25) and max(lrs) == pytest.approx(1.0)
    assert int(np.argmax(lrs)) == 29 and lrs[-1] == pytest.approx(1.0 / 25 / 1e4)


@pytest.mark.parametrize("name", ["Adadelta", "Adafactor", "Adamax", "ASGD", "NAdam", "RAdam",
                                  "Rprop"])
def test_new_optimizers_decrease_a_quadratic(name):
    x = eager.tensor([3.0, -2.0, 1.5], dtype=eager.float64, requires_grad=True)
    lr = {"Adadelta": 10.0, "Adafactor": 0.5, "ASGD": 0.1}.get(name, 0.1)
    opt = getattr(optim, name)([x], lr=lr)
    first = None
    for _ in range(50):
        opt.zero_grad()
        loss = (x * x).sum()
        loss.backward()
        opt.step()
        first = loss.item() if first is None else first
    assert (x * x).sum().item() < 0.5 * first


def test_weighted_random_sampler_frequencies():
    from eager.utils.data import WeightedRandomSampler

    w = np.array([1.0, 3.0, 0.0, 6.0])
    s = WeightedRandomSampler(w.tolist(), 30000, generator=eager.Generator().manual_seed(0))
    freq = np.bincount(np.array(list(s)), minlength=4) / 30000
    np.testing.assert_allclose(freq, w / w.sum(), atol=0.012)
