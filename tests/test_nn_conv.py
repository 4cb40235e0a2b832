"""eager.nn's convolution, pooling and batch norm against PyTorch (values and gradients), a
finite-difference gradcheck in float64, a LeNet trained in lockstep with torch, PyTorch's error
messages and batch norm's running statistics. Skipped parts need torch (the reference)."""

import numpy as np
import pytest

import eager
import eager.nn.functional as F
from eager import nn
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(0)
pytestmark = pytest.mark.filterwarnings("ignore:Using padding=.same. with even kernel")


def _run_both(efn, tfn, arrays, dtype=np.float64, grad=True):
    """Forward and backward (with a random cotangent) in eager and torch; compare."""
    arrays = [np.asarray(a, dtype) for a in arrays]
    ex = [eager.tensor(a, requires_grad=grad) for a in arrays]
    tx = [torch.tensor(a, requires_grad=grad) for a in arrays]
    eo, to = efn(*ex), tfn(*tx)
    assert tuple(eo.shape) == tuple(to.shape)
    tol = {"rtol": 1e-4, "atol": 1e-5} if dtype == np.float32 else {"rtol": 1e-9, "atol": 1e-10}
    np.testing.assert_allclose(eo.detach().numpy(), to.detach().numpy(), **tol)
    if grad:
        g = RNG.standard_normal(tuple(to.shape)).astype(dtype)
        (eo * eager.tensor(g)).sum().backward()
        (to * torch.tensor(g)).sum().backward()
        for a, b in zip(ex, tx):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), **tol)


CONV2D_CASES = [
    ((2, 4, 7, 8), (6, 4, 3, 3), {}),
    ((2, 4, 7, 8), (6, 2, 3, 2), {"groups": 2, "stride": 2}),
    ((1, 3, 9, 9), (4, 3, 3, 3), {"padding": 2, "dilation": 2}),
    ((2, 4, 6, 7), (4, 1, 3, 3), {"groups": 4, "padding": "same"}),
    ((2, 2, 6, 7), (3, 2, 4, 2), {"padding": "same", "dilation": (1, 2)}),
    ((3, 2, 5, 6), (3, 2, 2, 3), {"padding": "valid", "stride": (2, 1)}),
    ((2, 6, 8), (3, 2, 3, 3), {"padding": (1, 0)}),  # unbatched
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("xs,ws,kw", CONV2D_CASES)
def test_conv2d_matches_torch(xs, ws, kw, dtype):
    b = RNG.standard_normal(ws[0])
    _run_both(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
              [RNG.standard_normal(xs), RNG.standard_normal(ws), b], dtype)


@pytest.mark.parametrize("dt", ["bfloat16", "float16"])
@pytest.mark.parametrize("xs,ws,kw", CONV2D_CASES)
def test_half_conv2d_with_bias_equals_torch(xs, ws, kw, dt):
    """A half type's conv with bias rounds once, as PyTorch's (the bias added to the float32
    sums): equal to torch's but where the float32 sums, added in another order, round to the
    other neighbour (under 2% of elements, 1 ulp). It rounded the sums, then the sum with the
    bias: 1 ulp off on ~30% of elements in bfloat16."""
    arrays = [RNG.standard_normal(s).astype(np.float32) for s in (xs, ws, ws[:1])]
    ours = F.conv2d(*[eager.tensor(a).to(getattr(eager, dt)) for a in arrays], **kw)
    ref = TF.conv2d(*[torch.tensor(a).to(getattr(torch, dt)) for a in arrays], **kw)
    assert ours.dtype is getattr(eager, dt)
    a, b = ours.float().numpy(), ref.float().numpy()
    ulp = 2.0 ** (-7 if dt == "bfloat16" else -10) * np.maximum(np.abs(b), 2.0 ** -14)
    assert np.all(np.abs(a - b) <= ulp)
    assert np.mean(a != b) < 0.02


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 1}, {"dilation": 2, "groups": 2},
                                {"padding": "same", "dilation": 3}])
def test_conv1d_matches_torch(kw):
    _run_both(lambda x, w: F.conv1d(x, w, **kw), lambda x, w: TF.conv1d(x, w, **kw),
              [RNG.standard_normal((2, 4, 11)), RNG.standard_normal((6, 4 // kw.get("groups", 1),
                                                                     3))])


def test_conv_gradcheck():
    x = eager.tensor(RNG.standard_normal((1, 2, 5, 4)), requires_grad=True)
    w = eager.tensor(RNG.standard_normal((2, 1, 2, 3)), requires_grad=True)
    b = eager.tensor(RNG.standard_normal(2), requires_grad=True)
    assert gradcheck(lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, groups=2),
                     (x, w, b))
    assert gradcheck(lambda x: F.max_pool2d(x, 2, 1, padding=1), (x,))
    assert gradcheck(lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                            count_include_pad=False), (x,))
    assert gradcheck(lambda x, w, b: F.batch_norm(x, None, None, w, b, True), (x, b, b))


POOL_CASES = [
    {"kernel_size": 2},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": (3, 2), "stride": 1, "padding": (1, 0)},
    {"kernel_size": 3, "stride": 2, "ceil_mode": True},
]


@pytest.mark.parametrize("kw", POOL_CASES + [{"kernel_size": (3, 2), "dilation": 2,
                                              "padding": 1}])
def test_max_pool2d_matches_torch(kw):
    x = RNG.standard_normal((2, 3, 7, 8))
    _run_both(lambda x: F.max_pool2d(x, **kw), lambda x: TF.max_pool2d(x, **kw), [x])
    _, ei = F.max_pool2d(eager.tensor(x), return_indices=True, **kw)
    _, ti = TF.max_pool2d(torch.tensor(x), return_indices=True, **kw)
    np.testing.assert_array_equal(ei.numpy(), ti.numpy())


def test_max_pool_ties_send_gradient_to_first_maximum():
    x = np.zeros((1, 1, 4, 4))
    _run_both(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [x])
    _run_both(lambda x: F.max_pool1d(x, 3, 2, 1), lambda x: TF.max_pool1d(x, 3, 2, 1),
              [RNG.standard_normal((2, 3, 9))])


@pytest.mark.parametrize("kw", POOL_CASES + [
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True,
     "count_include_pad": False},
    {"kernel_size": 3, "padding": 1, "divisor_override": 5}])
def test_avg_pool2d_matches_torch(kw):
    _run_both(lambda x: F.avg_pool2d(x, **kw), lambda x: TF.avg_pool2d(x, **kw),
              [RNG.standard_normal((2, 3, 7, 8))], np.float32)
    kw1 = {k: v for k, v in kw.items() if k != "divisor_override"}
    kw1 = {k: (v[0] if isinstance(v, tuple) else v) for k, v in kw1.items()}
    _run_both(lambda x: F.avg_pool1d(x, **kw1), lambda x: TF.avg_pool1d(x, **kw1),
              [RNG.standard_normal((2, 3, 9))])


@pytest.mark.parametrize("size", [1, (3, 4), (5, 3), (None, 3), 7])
def test_adaptive_avg_pool2d_matches_torch(size):
    _run_both(lambda x: F.adaptive_avg_pool2d(x, size), lambda x: TF.adaptive_avg_pool2d(x, size),
              [RNG.standard_normal((2, 3, 6, 8))])
    _run_both(lambda x: F.adaptive_avg_pool1d(x, 3), lambda x: TF.adaptive_avg_pool1d(x, 3),
              [RNG.standard_normal((3, 7))])


@pytest.mark.parametrize("module,shape", [("BatchNorm1d", (8, 3)), ("BatchNorm1d", (4, 3, 5)),
                                          ("BatchNorm2d", (4, 3, 5, 2))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_running_stats_match_torch(module, shape, momentum):
    em = getattr(nn, module)(3, momentum=momentum, dtype=eager.float64)
    tm = getattr(torch.nn, module)(3, momentum=momentum, dtype=torch.float64)
    for step in range(3):
        x = RNG.standard_normal(shape) * (step + 1) + step
        _run_both(em, tm, [x])
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(getattr(em, name).numpy(), getattr(tm, name).numpy(),
                                       rtol=1e-12)
        assert int(em.num_batches_tracked) == int(tm.num_batches_tracked) == step + 1
    assert em.running_mean.grad_fn is None
    em.eval(), tm.eval()
    _run_both(em, tm, [RNG.standard_normal(shape)])
    assert int(em.num_batches_tracked) == 3


def test_batch_norm_without_running_stats_and_affine():
    em = nn.BatchNorm2d(3, affine=False, track_running_stats=False, dtype=eager.float64)
    tm = torch.nn.BatchNorm2d(3, affine=False, track_running_stats=False, dtype=torch.float64)
    em.eval(), tm.eval()  # no running stats: batch statistics even in eval
    _run_both(em, tm, [RNG.standard_normal((3, 3, 2, 2))])
    assert em.running_mean is None and list(em.state_dict()) == []
    assert repr(em) == repr(tm)


def test_module_reprs_and_init():
    pairs = [("Conv2d", (3, 4, 3), {"padding": "same", "bias": False}),
             ("Conv2d", (4, 4, (3, 2)), {"dilation": 2, "groups": 2, "padding_mode": "reflect"}),
             ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}),
             ("MaxPool2d", (2,), {}), ("MaxPool2d", (3, 2, 1), {"ceil_mode": True}),
             ("AvgPool2d", (2,), {}), ("AvgPool1d", (3,), {}), ("MaxPool1d", (3,), {}),
             ("BatchNorm2d", (3,), {}), ("BatchNorm1d", (3,), {"bias": False}),
             ("AdaptiveAvgPool2d", ((2, 3),), {}), ("AdaptiveAvgPool1d", (1,), {})]
    for name, args, kw in pairs:
        assert repr(getattr(nn, name)(*args, **kw)) == repr(getattr(torch.nn, name)(*args, **kw))
    conv = nn.Conv2d(6, 8, 3, groups=2)
    bound = 1 / np.sqrt(3 * 9)
    for p in (conv.weight, conv.bias):
        a = p.detach().numpy()
        assert np.abs(a).max() <= bound and np.abs(a).max() > 0.5 * bound
    assert tuple(conv.weight.shape) == (8, 3, 3, 3) and conv.weight.requires_grad


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_conv_padding_modes(mode):
    em = nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, dtype=eager.float64)
    tm = torch.nn.Conv2d(2, 3, 3, padding=1, padding_mode=mode, dtype=torch.float64)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(em.weight.detach().numpy()))
        tm.bias.copy_(torch.tensor(em.bias.detach().numpy()))
    _run_both(em, tm, [RNG.standard_normal((1, 2, 5, 4))])


class _LeNet:
    """LeNet-5 on 28x28 inputs, built from the namespace `m` (eager or torch)."""

    def __init__(self, m):
        nn_ = m.nn
        self.net = nn_.Sequential(
            nn_.Conv2d(1, 6, 5, padding=2), nn_.BatchNorm2d(6), nn_.ReLU(), nn_.MaxPool2d(2),
            nn_.Conv2d(6, 16, 5), nn_.ReLU(), nn_.AvgPool2d(2),
            nn_.Conv2d(16, 32, 3, padding=1, groups=2), nn_.ReLU(), nn_.AdaptiveAvgPool2d(1),
            nn_.Flatten(), nn_.Linear(32, 10))


def test_lenet_training_steps_in_lockstep_with_torch():
    ours, ref = _LeNet(eager).net, _LeNet(torch).net
    with torch.no_grad():
        for (_, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
            q.copy_(torch.tensor(p.detach().numpy()))
    opt_e = eager.optim.SGD(ours.parameters(), lr=0.1, momentum=0.9)
    opt_t = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        x = RNG.standard_normal((8, 1, 28, 28)).astype(np.float32)
        y = RNG.integers(0, 10, 8)
        le = F.cross_entropy(ours(eager.tensor(x)), eager.tensor(y))
        lt = TF.cross_entropy(ref(torch.tensor(x)), torch.tensor(y))
        np.testing.assert_allclose(le.item(), lt.item(), rtol=1e-4)
        opt_e.zero_grad(), opt_t.zero_grad()
        le.backward(), lt.backward()
        opt_e.step(), opt_t.step()
        for (_, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
            np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-3,
                                       atol=1e-5)
    bn_e, bn_t = ours[1], ref[1]
    np.testing.assert_allclose(bn_e.running_var.numpy(), bn_t.running_var.numpy(), rtol=1e-4)


ERRORS = [
    (lambda m: m.conv2d(m.ones(1, 2, 2, 2), m.ones(3, 2, 3, 3)), "Kernel size can't be greater"),
    (lambda m: m.conv2d(m.ones(1, 2, 2, 2, 2, 2), m.ones(3, 2, 3, 3)), "Expected 3D"),
    (lambda m: m.conv2d(m.ones(1, 4, 5, 5), m.ones(3, 2, 3, 3), groups=2), "divisible by 2"),
    (lambda m: m.conv2d(m.ones(1, 3, 5, 5), m.ones(4, 2, 3, 3)), "to have 2 channels"),
    (lambda m: m.conv2d(m.ones(1, 3, 5, 5), m.ones(4, 3, 3, 3), stride=2, padding="same"),
     "not supported for strided"),
    (lambda m: m.conv2d(m.ones(1, 3, 5, 5), m.ones(4, 3, 3, 3), padding="foo"),
     "Invalid padding string"),
    (lambda m: m.conv2d(m.ones(1, 3, 5, 5), m.ones(4, 3, 3, 3), padding=-1), "negative padding"),
    (lambda m: m.conv2d(m.ones(1, 3, 5, 5), m.ones(4, 3, 3, 3), stride=0), "non-positive stride"),
    (lambda m: m.conv2d(m.ones(1, 3, 5, 5), m.ones(4, 3, 3, 3), m.ones(3)), "expected bias"),
    (lambda m: m.conv1d(m.ones(1, 3, 5, 5), m.ones(4, 3, 3)), "Expected 2D"),
    (lambda m: m.max_pool2d(m.ones(1, 3, 5, 5), 3, padding=2), "at most half"),
    (lambda m: m.max_pool2d(m.ones(1, 3, 2, 2), 3), "Output size is too small"),
    (lambda m: m.max_pool2d(m.ones(3, 5), 3), "3D or 4D"),
    (lambda m: m.max_pool2d(m.ones(1, 3, 5, 5), 3, stride=0), "stride should not be zero"),
    (lambda m: m.avg_pool2d(m.ones(1, 3, 2, 2), 3), "Output size is too small"),
    (lambda m: m.batch_norm(m.ones(2, 3), m.zeros(4), m.ones(4), training=True),
     "running_mean should contain 3 elements not 4"),
    (lambda m: m.adaptive_avg_pool2d(m.ones(2, 3, 4, 5, 6), 2), "Expected 3D or 4D"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    fn, fragment = ERRORS[case]

    class NS:
        def __init__(self, mod, fun):
            self.mod, self.fun = mod, fun

        def __getattr__(self, name):
            return getattr(self.fun, name, None) or getattr(self.mod, name)

    with pytest.raises(RuntimeError, match=None) as te:
        fn(NS(torch, TF))
    with pytest.raises(RuntimeError) as ee:
        fn(NS(eager, F))
    assert fragment in str(ee.value)
    assert str(ee.value) == str(te.value)


def test_value_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel"):
        F.batch_norm(eager.ones(1, 3), eager.zeros(3), eager.ones(3), training=True)
    with pytest.raises(ValueError, match="expected 4D input"):
        nn.BatchNorm2d(3)(eager.ones(2, 3, 4))
    with pytest.raises(ValueError, match="expected 2D or 3D input"):
        nn.BatchNorm1d(3)(eager.ones(2, 3, 4, 5))
    with pytest.raises(ValueError, match="in_channels must be divisible by groups"):
        nn.Conv2d(3, 4, 3, groups=2)
