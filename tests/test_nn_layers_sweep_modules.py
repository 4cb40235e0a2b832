"""The torch.nn modules of the layer sweep (issue 16) against PyTorch: each module is built
with the same arguments in both libraries, torch's state_dict is loaded into wick's, and the
reprs, state_dict keys, outputs and gradients w.r.t. the input and every parameter are
compared (float64, rtol 1e-5); lazy modules, nn.Buffer, Container, factory_kwargs,
initialisation bounds and constructor errors."""

import warnings

import numpy as np
import pytest

import eager
from eager import nn as enn
from eager.autograd import gradcheck

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")
S2 = np.random.default_rng(5).random((2, 3, 2))
TOL = {"rtol": 1e-5, "atol": 1e-8}


def load_from_torch(em, tm) -> None:
    em.load_state_dict({k: eager.tensor(v.detach().numpy()) for k, v in
                        tm.state_dict().items()})


def compare_module(name, args, kwargs, shapes, positive=False, train=True, grad=True,
                   call_kwargs=None):
    tm = getattr(torch.nn, name)(*args, **kwargs).double()
    em = getattr(enn, name)(*args, **kwargs).double()
    assert repr(em) == repr(tm)
    assert list(em.state_dict()) == list(tm.state_dict())
    load_from_torch(em, tm)
    tm.train(train)
    em.train(train)
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s) for s in shapes]
    if positive:
        arrays = [np.abs(a) + 0.1 for a in arrays]
    ts = [torch.tensor(a, requires_grad=grad) for a in arrays]
    es = [eager.tensor(a, requires_grad=grad) for a in arrays]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tout = tm(*ts, **(call_kwargs or {}))
        eout = em(*es, **(call_kwargs or {}))
    touts = tout if isinstance(tout, tuple) else (tout,)
    eouts = eout if isinstance(eout, tuple) else (eout,)
    tl = el = 0
    for a, b in zip(touts, eouts):
        assert tuple(a.shape) == tuple(b.shape)
        if not a.dtype.is_floating_point:
            np.testing.assert_array_equal(b.numpy(), a.numpy())
            continue
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **TOL)
        g = rng.standard_normal(tuple(a.shape))
        tl, el = tl + (a * torch.tensor(g)).sum(), el + (b * eager.tensor(g)).sum()
    for k, v in tm.state_dict().items():  # running statistics after the step
        np.testing.assert_allclose(em.state_dict()[k].numpy(), v.numpy(), **TOL)
    if not grad:
        return
    tl.backward()
    el.backward()
    for a, b in zip(ts, es):
        np.testing.assert_allclose(b.grad.numpy(), a.grad.numpy(), **TOL)
    eparams = dict(em.named_parameters())
    for k, p in tm.named_parameters():
        np.testing.assert_allclose(eparams[k].grad.numpy(), p.grad.numpy(), **TOL)


CASES = [
    ("Conv3d", (3, 4, 2), {"stride": (1, 2, 1), "padding": 1}, [(2, 3, 4, 5, 6)]),
    ("Conv3d", (4, 6, 3), {"groups": 2, "padding": "same", "padding_mode": "reflect"},
     [(2, 4, 5, 5, 5)]),
    ("ConvTranspose1d", (4, 6, 3), {"stride": 2, "padding": 1, "output_padding": 1,
                                    "groups": 2}, [(2, 4, 5)]),
    ("ConvTranspose2d", (3, 4, (3, 2)), {"stride": 2, "dilation": (1, 2)}, [(2, 3, 4, 5)]),
    ("ConvTranspose2d", (3, 4, 3), {"bias": False, "padding": 1}, [(3, 4, 5)]),
    ("ConvTranspose3d", (2, 3, 2), {"stride": 2, "bias": False}, [(1, 2, 3, 3, 3)]),
    ("MaxPool3d", (2,), {"stride": 1, "padding": 1, "ceil_mode": True}, [(2, 2, 4, 5, 3)]),
    ("MaxPool3d", ((2, 1, 2),), {"return_indices": True}, [(2, 4, 5, 3)]),
    ("AvgPool3d", (3, 2, 1), {"count_include_pad": False}, [(2, 2, 4, 5, 6)]),
    ("AdaptiveAvgPool3d", ((2, 3, None),), {}, [(2, 2, 4, 5, 6)]),
    ("AdaptiveMaxPool1d", (3,), {}, [(2, 3, 7)]),
    ("AdaptiveMaxPool2d", ((2, 3),), {"return_indices": True}, [(2, 3, 7, 5)]),
    ("AdaptiveMaxPool3d", (2,), {}, [(2, 3, 4, 5, 3)]),
    ("LPPool1d", (2, 3), {}, [(2, 3, 7)]),
    ("LPPool2d", (3, 2), {"stride": 1}, [(2, 3, 4, 5)]),
    ("LPPool3d", (2, 2), {}, [(2, 3, 4, 4, 4)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("GroupNorm", (3, 6), {"affine": False, "eps": 1e-3}, [(2, 6, 2, 3)]),
    ("InstanceNorm1d", (3,), {"affine": True}, [(2, 3, 5)]),
    ("InstanceNorm2d", (3,), {"track_running_stats": True, "momentum": 0.2}, [(2, 3, 4, 5)]),
    ("InstanceNorm3d", (2,), {}, [(2, 3, 4, 2)]),
    ("LocalResponseNorm", (3,), {}, [(2, 5, 4)]),
    ("RMSNorm", ([4, 5],), {}, [(3, 4, 5)]),
    ("RMSNorm", (5,), {"eps": 1e-3, "elementwise_affine": False}, [(3, 5)]),
    ("BatchNorm3d", (3,), {}, [(2, 3, 2, 3, 2)]),
    ("SyncBatchNorm", (3,), {"momentum": None}, [(4, 3, 5)]),
    ("Hardshrink", (0.3,), {}, [(4, 5)]),
    ("Softshrink", (), {}, [(4, 5)]),
    ("RReLU", (0.1, 0.4), {}, [(4, 5)]),
    ("Bilinear", (3, 2, 4), {}, [(5, 3), (5, 2)]),
    ("Bilinear", (3, 2, 4), {"bias": False}, [(2, 5, 3), (2, 5, 2)]),
    ("ChannelShuffle", (2,), {}, [(2, 4, 3)]),
    ("PixelShuffle", (2,), {}, [(2, 8, 3, 4)]),
    ("PixelUnshuffle", (2,), {}, [(2, 2, 4, 6)]),
    ("Fold", ((4, 5), 2), {}, [(2, 12, 12)]),
    ("Unfold", (2,), {"padding": 1, "stride": 2}, [(2, 3, 4, 5)]),
    ("Upsample", (), {"scale_factor": 2, "mode": "bilinear"}, [(2, 3, 4, 5)]),
    ("Upsample", ((3, 5),), {}, [(2, 3, 4, 5)]),
    ("Upsample", (), {"scale_factor": (2, 1.5, 1), "mode": "trilinear",
                      "align_corners": True}, [(1, 2, 3, 4, 2)]),
    ("UpsamplingNearest2d", (), {"scale_factor": 2}, [(2, 3, 4, 5)]),
    ("UpsamplingBilinear2d", ((5, 6),), {}, [(2, 3, 4, 5)]),
]
PADS = [(f"{kind}Pad{nd}d", pad, shape)
        for kind in ("Zero", "Reflection", "Replication", "Circular")
        for nd, pad, shape in [(1, 2, (2, 3, 5)), (1, (1, 2), (3, 5)),
                               (2, (1, 0, 2, 1), (2, 3, 4, 5)), (2, 1, (3, 4, 5)),
                               (3, (1, 2, 0, 1, 1, 1), (2, 2, 3, 4, 5)), (3, 1, (2, 3, 3, 4))]]


@pytest.mark.parametrize("name,args,kwargs,shapes", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_module_matches_torch(name, args, kwargs, shapes):
    compare_module(name, args, kwargs, shapes, positive=name.startswith("LP"),
                   train=name != "RReLU")


@pytest.mark.parametrize("name,pad,shape", PADS, ids=[f"{p[0]}-{i}" for i, p in
                                                      enumerate(PADS)])
def test_padding_modules(name, pad, shape):
    compare_module(name, (pad,), {}, [shape])


@pytest.mark.parametrize("nd,pad,value,shape", [(1, 2, 3.5, (2, 3, 5)),
                                                (2, (1, 0, 2, 1), -1.0, (3, 4, 5)),
                                                (3, 1, 0.5, (1, 2, 3, 4))])
def test_constant_pad(nd, pad, value, shape):
    compare_module(f"ConstantPad{nd}d", (pad, value), {}, [shape])


@pytest.mark.parametrize("name,args,shape", [("Dropout1d", (), (2, 3, 4)),
                                             ("Dropout2d", (0.2,), (2, 3, 4, 5)),
                                             ("Dropout3d", (0.5,), (2, 3, 4, 5)),
                                             ("AlphaDropout", (0.1,), (2, 3)),
                                             ("FeatureAlphaDropout", (), (2, 3, 4))])
def test_dropout_modules_in_eval_are_identity(name, args, shape):
    compare_module(name, args, {}, [shape], train=False)


def test_dropout_modules_train_drop_channels():
    eager.manual_seed(0)
    x = eager.randn(8, 6, 20)
    y = enn.Dropout1d(0.5)(x).numpy()
    dropped = np.all(y == 0, axis=2)
    assert 0 < dropped.mean() < 1
    np.testing.assert_allclose(y[~dropped], 2 * x.numpy()[~dropped], rtol=1e-6)


def test_fractional_max_pool_modules():
    for name, samples, shape, kw in [
            ("FractionalMaxPool2d", S2, (2, 3, 9, 10), {"output_size": (4, 5)}),
            ("FractionalMaxPool3d", np.random.default_rng(1).random((2, 3, 3)), (2, 3, 6, 7, 8),
             {"output_ratio": 0.5, "return_indices": True})]:
        tm = getattr(torch.nn, name)(2, _random_samples=torch.tensor(samples), **kw)
        em = getattr(enn, name)(2, _random_samples=eager.tensor(samples), **kw)
        x = np.random.default_rng(2).standard_normal(shape)
        a, b = tm(torch.tensor(x)), em(eager.tensor(x))
        a, b = (a, b) if isinstance(a, tuple) else ((a,), (b,))
        for u, v in zip(a, b):
            np.testing.assert_allclose(v.numpy(), u.numpy())


@pytest.mark.parametrize("nd", [1, 2, 3])
def test_max_unpool_modules(nd):
    x = torch.randn((2, 3) + (4, 6, 4)[:nd], dtype=torch.float64)
    y, i = getattr(torch.nn, f"MaxPool{nd}d")(2, return_indices=True)(x)
    tm, em = getattr(torch.nn, f"MaxUnpool{nd}d")(2), getattr(enn, f"MaxUnpool{nd}d")(2)
    assert repr(tm) == repr(em)
    size = tuple(x.shape[2:])[:-1] + (x.shape[-1] + 1,)
    a = tm(y, i, output_size=size)
    b = em(eager.tensor(y.numpy()), eager.tensor(i.numpy()), output_size=size)
    np.testing.assert_allclose(b.numpy(), a.numpy())


def test_conv_transpose_output_size():
    tm = torch.nn.ConvTranspose2d(3, 2, 3, stride=3, padding=1).double()
    em = enn.ConvTranspose2d(3, 2, 3, stride=3, padding=1).double()
    load_from_torch(em, tm)
    x = np.random.default_rng(0).standard_normal((1, 3, 4, 4))
    for size in [(10, 11), [1, 2, 12, 10]]:
        a, b = tm(torch.tensor(x), output_size=size), em(eager.tensor(x), output_size=size)
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **TOL)
    with pytest.raises(ValueError):
        em(eager.tensor(x), output_size=(20, 20))


def test_embedding_bag_module():
    tm = torch.nn.EmbeddingBag(10, 3, mode="max", padding_idx=1).double()
    em = enn.EmbeddingBag(10, 3, mode="max", padding_idx=1).double()
    assert repr(em) == repr(tm)
    assert np.all(em.weight.detach().numpy()[1] == 0)
    load_from_torch(em, tm)
    idx, off = np.array([1, 2, 4, 1, 4, 3]), np.array([0, 2, 3])
    a = tm(torch.tensor(idx), torch.tensor(off))
    b = em(eager.tensor(idx), eager.tensor(off))
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy())
    w = eager.randn(5, 2)
    bag = enn.EmbeddingBag.from_pretrained(w, mode="sum")
    assert not bag.weight.requires_grad and bag(eager.tensor([[0, 1]])).shape == (1, 2)


def test_cross_map_lrn2d():
    x = np.random.default_rng(0).standard_normal((2, 7, 3, 2))
    for size in (1, 2, 3, 4, 5):
        a = torch.nn.CrossMapLRN2d(size, 0.3, 0.6, 1.5)(torch.tensor(x))
        em = enn.CrossMapLRN2d(size, 0.3, 0.6, 1.5)
        b = em(eager.tensor(x))
        np.testing.assert_allclose(b.numpy(), a.numpy(), **TOL)
    # torch's legacy backward is not the derivative of its forward: check ours numerically
    assert gradcheck(lambda t: em(t), (eager.tensor(x[:1, :, :1], requires_grad=True),))
    assert repr(em) == repr(torch.nn.CrossMapLRN2d(5, 0.3, 0.6, 1.5))


# ---------------------------------------------------------------- lazy modules

LAZY = [("LazyLinear", (4,), (3, 5)), ("LazyConv1d", (4, 3), (2, 3, 7)),
        ("LazyConv2d", (4, 3), (3, 6, 5)), ("LazyConv3d", (2, 2), (1, 2, 3, 4, 3)),
        ("LazyConvTranspose1d", (4, 3), (2, 3, 7)), ("LazyConvTranspose2d", (2, 2), (1, 3, 3, 4)),
        ("LazyConvTranspose3d", (2, 2), (1, 3, 2, 2, 2)), ("LazyBatchNorm1d", (), (4, 3)),
        ("LazyBatchNorm2d", (), (4, 3, 2, 2)), ("LazyBatchNorm3d", (), (2, 3, 2, 2, 2)),
        ("LazyInstanceNorm1d", (), (2, 3, 4)), ("LazyInstanceNorm2d", (), (2, 3, 4, 2)),
        ("LazyInstanceNorm3d", (), (2, 3, 2, 2, 2))]


@pytest.mark.parametrize("name,args,shape", LAZY, ids=[c[0] for c in LAZY])
def test_lazy_modules(name, args, shape):
    tm, em = getattr(torch.nn, name)(*args).double(), getattr(enn, name)(*args).double()
    assert repr(em) == repr(tm)
    assert em.has_uninitialized_params()
    x = np.random.default_rng(0).standard_normal(shape)
    tm(torch.tensor(x))
    em(eager.tensor(x))
    assert type(em).__name__ == type(tm).__name__ and repr(em) == repr(tm)
    assert {k: tuple(v.shape) for k, v in em.state_dict().items()} == \
        {k: tuple(v.shape) for k, v in tm.state_dict().items()}
    assert all(type(p) is enn.Parameter for p in em.parameters())
    load_from_torch(em, tm)
    a, b = tm(torch.tensor(x)), em(eager.tensor(x))
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **TOL)


def test_uninitialized_parameter_and_buffer():
    p = enn.UninitializedParameter()
    assert repr(p) == "<UninitializedParameter>" and p.requires_grad
    with pytest.raises(RuntimeError):
        _ = p.shape
    p.materialize((2, 3), dtype=eager.float64)
    assert type(p) is enn.Parameter and tuple(p.shape) == (2, 3) and p.dtype == eager.float64
    b = enn.UninitializedBuffer()
    b.materialize(4)
    assert type(b) is eager.Tensor and tuple(b.shape) == (4,) and not b.requires_grad


def test_buffer_container_factory_kwargs():
    m = enn.Module()
    m.a = enn.Buffer(eager.ones(2))
    m.b = enn.Buffer(eager.zeros(3), persistent=False)
    tm = torch.nn.Module()
    tm.a = torch.nn.Buffer(torch.ones(2))
    tm.b = torch.nn.Buffer(torch.zeros(3), persistent=False)
    assert list(m.state_dict()) == list(tm.state_dict())
    assert [n for n, _ in m.named_buffers()] == [n for n, _ in tm.named_buffers()]
    with pytest.warns(UserWarning, match="deprecated"):
        c = enn.Container(lin=enn.Linear(2, 3))
    assert [n for n, _ in c.named_children()] == ["lin"]
    for kw in [None, {"device": "cpu"}, {"dtype": "d", "factory_kwargs": {"device": "x"}}]:
        assert enn.factory_kwargs(kw) == torch.nn.factory_kwargs(kw)
    for kw in [{"size": 2}, {"device": 1, "factory_kwargs": {"device": 2}}]:
        with pytest.raises(TypeError):
            enn.factory_kwargs(kw)


# ---------------------------------------------------------------- init and constructor errors


def test_initialisation_bounds():
    eager.manual_seed(0)
    w = enn.ConvTranspose2d(4, 6, 3, groups=2).weight.detach().numpy()
    bound = 1 / np.sqrt(3 * 9)  # fan_in = (out / groups) * kernel, as torch's
    assert w.shape == (4, 3, 3, 3) and np.abs(w).max() <= bound and np.abs(w).max() > 0.8 * bound
    b = enn.Bilinear(16, 2, 64)
    assert np.abs(b.weight.detach().numpy()).max() <= 0.25 and b.weight.detach().numpy().std() > 0.1
    g = enn.GroupNorm(2, 4)
    assert np.all(g.weight.detach().numpy() == 1) and np.all(g.bias.detach().numpy() == 0)


@pytest.mark.parametrize("ctor", [
    lambda nn: nn.GroupNorm(3, 4), lambda nn: nn.FractionalMaxPool2d(2),
    lambda nn: nn.FractionalMaxPool2d(2, output_size=3, output_ratio=0.5),
    lambda nn: nn.FractionalMaxPool2d(2, output_ratio=1.5),
    lambda nn: nn.ConvTranspose2d(2, 3, 2, padding_mode="reflect"),
    lambda nn: nn.Dropout2d(2.0), lambda nn: nn.ConvTranspose1d(3, 2, 2, groups=2),
])
def test_constructor_errors_match_torch(ctor):
    with pytest.raises(Exception) as te:
        ctor(torch.nn)
    with pytest.raises(type(te.value)):
        ctor(enn)


@pytest.mark.parametrize("mod,shape", [
    (lambda nn: nn.BatchNorm3d(3), (2, 3, 4)), (lambda nn: nn.InstanceNorm2d(3), (3, 4)),
    (lambda nn: nn.InstanceNorm1d(3, affine=True), (2, 4, 5)),
    (lambda nn: nn.CrossMapLRN2d(3), (2, 3, 4)),
])
def test_forward_errors_match_torch(mod, shape):
    x = np.zeros(shape)
    with pytest.raises(Exception) as te:
        mod(torch.nn)(torch.tensor(x))
    with pytest.raises(type(te.value)):
        mod(enn)(eager.tensor(x))


def test_convert_sync_batchnorm_matches_torch():
    em = enn.Sequential(enn.Conv2d(3, 4, 3), enn.BatchNorm2d(4),
                        enn.Sequential(enn.BatchNorm1d(2)))
    tm = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.BatchNorm2d(4),
                             torch.nn.Sequential(torch.nn.BatchNorm1d(2)))
    es = enn.SyncBatchNorm.convert_sync_batchnorm(em)
    ts = torch.nn.SyncBatchNorm.convert_sync_batchnorm(tm)
    assert repr(es) == repr(ts)
    assert es[1].weight is em[1].weight and es[1].running_mean is em[1].running_mean


def test_decoder_block_captures_as_one_graph():
    import capture

    block = enn.Sequential(enn.ConvTranspose2d(4, 6, 2, stride=2), enn.GroupNorm(2, 6),
                           enn.ReflectionPad2d(1), enn.Hardshrink(0.1), enn.InstanceNorm2d(6))
    x = eager.randn(2, 4, 5, 5)
    report = capture.explain(block)(x)
    assert report.graph_count == 1 and report.graph_break_count == 0, str(report)
    np.testing.assert_allclose(capture.compile(block)(x).detach().numpy(),
                               block(x).detach().numpy(), rtol=1e-5,
                               atol=1e-6)


def _params(f):
    import inspect

    try:
        sig = inspect.signature(f)
    except (TypeError, ValueError):
        return None
    out = [(p.name, p.default) for p in sig.parameters.values() if p.name != "self"]
    return None if any(n in ("args", "kwargs") for n, _ in out) else out


def test_signatures_match_torch():
    """Argument names, order and defaults of every sweep function and module constructor
    and forward, as torch's (where torch's signature is not *args, **kwargs)."""
    from eager.nn import (
        conv_pool_layers,
        conv_transpose,
        dropout,
        lazy,
        misc_layers,
        normalization,
        padding,
        pooling,
        upsampling,
    )

    bad = []
    for mod in (conv_transpose, pooling, normalization, dropout, upsampling, misc_layers):
        for n in mod.__all__:
            t = getattr(torch.nn.functional, n, None)
            if callable(t) and not isinstance(t, type):
                a, b = _params(t), _params(getattr(eager.nn.functional, n))
                if a is not None and a != b:
                    bad.append((n, a, b))
    names = set(conv_pool_layers.__all__) | set(padding.__all__) | set(lazy.__all__)
    for mod in (normalization, dropout, upsampling, misc_layers):
        names |= set(mod.MODULES)
    for n in sorted(names):
        t = getattr(torch.nn, n, None)
        if not isinstance(t, type) or n == "Buffer":
            continue
        for method in ("__init__", "forward"):
            if method in vars(t) or method == "__init__":
                a, b = _params(getattr(t, method)), _params(getattr(getattr(enn, n), method))
                if a is not None and a != b:
                    bad.append((f"{n}.{method}", a, b))
    assert not bad, "\n".join(map(str, bad))


@pytest.mark.parametrize("name,args,kwargs,shape", [
    ("InstanceNorm2d", (3,), {"track_running_stats": True, "affine": True}, (2, 3, 4, 5)),
    ("InstanceNorm1d", (3,), {"track_running_stats": True}, (3, 5)),
    ("BatchNorm3d", (3,), {}, (2, 3, 2, 3, 2)),
    ("SyncBatchNorm", (3,), {}, (4, 3)),
    ("GroupNorm", (1, 3), {}, (2, 3, 4)),
])
def test_norm_modules_in_eval(name, args, kwargs, shape):
    """Eval mode after a training step: the running statistics loaded from torch are used."""
    tm = getattr(torch.nn, name)(*args, **kwargs).double()
    tm(torch.randn(shape, dtype=torch.float64))  # a training step moves the statistics
    em = getattr(enn, name)(*args, **kwargs).double()
    load_from_torch(em, tm)
    tm.eval()
    em.eval()
    x = np.random.default_rng(4).standard_normal(shape)
    a, b = tm(torch.tensor(x)), em(eager.tensor(x))
    np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), **TOL)


def test_parameter_module_path():
    from eager.nn.parameter import Buffer, Parameter, UninitializedParameter, is_lazy

    assert Parameter is enn.Parameter and Buffer is enn.Buffer
    assert is_lazy(UninitializedParameter()) and not is_lazy(Parameter(eager.ones(1)))
    assert is_lazy(enn.LazyLinear(3).weight) == torch.nn.parameter.is_lazy(
        torch.nn.LazyLinear(3).weight)


@pytest.mark.parametrize("name,args,shape", [("LazyLinear", (4,), (3, 5)),
                                             ("LazyConv2d", (4, 3), (2, 3, 6, 5)),
                                             ("LazyBatchNorm1d", (), (4, 3))])
def test_lazy_module_loads_a_checkpoint_before_its_first_call(name, args, shape):
    x = np.random.default_rng(0).standard_normal(shape)
    tm = getattr(torch.nn, name)(*args).double()
    tm(torch.tensor(x))
    tm.eval()
    em = getattr(enn, name)(*args).double()
    load_from_torch(em, tm)
    assert not em.has_uninitialized_params()
    em.eval()
    np.testing.assert_allclose(em(eager.tensor(x)).detach().numpy(),
                               tm(torch.tensor(x)).detach().numpy(), **TOL)


def test_nn_modules_paths_match_torch():
    import importlib

    from eager.nn.modules import paths

    for sub in sorted(paths.PUBLIC):
        theirs = importlib.import_module(f"torch.nn.modules.{sub}")
        ours = importlib.import_module(f"eager.nn.modules.{sub}")
        for name in getattr(theirs, "__all__", []):
            assert getattr(ours, name) is getattr(enn, name), (sub, name)
        for name in paths.PRIVATE.get(sub, {}):
            assert hasattr(theirs, name), (sub, name)
    from eager.nn.modules.utils import _pair, _reverse_repeat_tuple, _triple
    from torch.nn.modules import utils as tu

    assert _pair(3) == tu._pair(3) and _triple([1, 2, 3]) == tu._triple([1, 2, 3])
    assert _reverse_repeat_tuple((1, 2), 2) == tu._reverse_repeat_tuple((1, 2), 2)
    assert isinstance(enn.InstanceNorm2d(3), enn.modules.batchnorm._NormBase)
    assert isinstance(enn.ConvTranspose2d(2, 2, 2), enn.modules.conv._ConvNd)
    sd_t = {"module.a": 1, "module.b.c": 2, "d": 3}
    sd_e = dict(sd_t)
    tu.consume_prefix_in_state_dict_if_present(sd_t, "module.")
    enn.modules.utils.consume_prefix_in_state_dict_if_present(sd_e, "module.")
    assert sd_t == sd_e
