"""Regression tests for gaps found by running new tutorial-style PyTorch programs unchanged
under `import eager as torch` (notes/tutorials/progs/p39..p58); each compares with torch."""

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")


def _run_opt(lib, name, kw, shape):
    """Five steps of optimizer `name` on a parameter of `shape` (0-d included) in `lib`."""
    p = lib.nn.Parameter(lib.tensor(np.full(shape, 1.5, np.float32)))
    opt = getattr(lib.optim, name)([p], **kw)
    for i in range(5):
        loss = (p * (2.0 + i)).sum() ** 2
        opt.zero_grad()
        loss.backward()
        opt.step()
    return p.detach().numpy()


@pytest.mark.parametrize("shape", [(), (3,)])
@pytest.mark.parametrize("name,kw", [
    ("Adam", dict(lr=0.01)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, weight_decay=0.1)),
    ("SGD", dict(lr=0.001, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("SGD", dict(lr=0.001)),
])
def test_optimizer_step_on_0d_parameter(name, kw, shape):
    """A learnable 0-d scalar (CLIP's logit_scale) steps as in torch (Adam's array path wrote
    with out= into numpy scalars: TypeError)."""
    got = _run_opt(eager, name, kw, shape)
    want = _run_opt(torch, name, kw, shape)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2), ()])
def test_where_condition_only_is_nonzero_as_tuple(shape):
    """`torch.where(cond)`: PyTorch's one-argument overload, the index tuple of
    `nonzero(cond, as_tuple=True)` (it raised TypeError: missing 'input')."""
    a = np.random.default_rng(0).normal(size=shape).astype(np.float32)
    got = eager.where(eager.tensor(a) > 0)
    want = torch.where(torch.tensor(a) > 0)
    assert isinstance(got, tuple) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == eager.int64
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    kw = eager.where(condition=eager.tensor(a) > 0)
    assert [k.tolist() for k in kw] == [w.tolist() for w in want]
    x = eager.tensor(a)
    np.testing.assert_array_equal(eager.where(x > 0, x, 0.0).numpy(),
                                  torch.where(torch.tensor(a) > 0, torch.tensor(a), 0.0).numpy())


def _ranges():
    rng = np.random.default_rng(1)
    for i in range(60):
        n = int(rng.integers(2, 90))
        a, b = (float(v) for v in rng.normal(0, 3, 2))
        if i % 3 == 0:
            a, b = float(int(a * 10)), float(int(b * 10))
        yield a, b, n
    yield -1.0, 1.0, 8  # the affine_grid / plotting staples
    yield -3.141592653589793, 3.141592653589793, 2000


@pytest.mark.parametrize("dt", ["float32", "float64", "int64", "int32", "float16",
                                "bfloat16"])
def test_linspace_bitwise_as_torch(dt):
    """linspace equals torch's CPU kernel bit for bit (fused multiply-add per half; integer
    dtypes truncate the end points; Half rounds every step): a 1-ulp difference flipped
    nearest-neighbour samples of affine grids (p34)."""
    for a, b, n in _ranges():
        got = eager.linspace(a, b, n, dtype=getattr(eager, dt)).float().numpy()
        want = torch.linspace(a, b, n, dtype=getattr(torch, dt)).float().numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"linspace({a}, {b}, {n})")


@pytest.mark.parametrize("dt", ["float32", "float64", "int64"])
@pytest.mark.parametrize("base", [10.0, 2.0, 0.5, -2.0])
def test_logspace_bitwise_as_torch(dt, base):
    """logspace as ATen's kernel: float64 exponents from the end points in the dtype, C pow."""
    for a, b, n in list(_ranges())[:30]:
        if dt == "int64":
            a, b = abs(a) % 6, abs(b) % 6
        got = eager.logspace(a, b, n, base=base, dtype=getattr(eager, dt)).numpy()
        want = torch.logspace(a, b, n, base=base, dtype=getattr(torch, dt)).numpy()
        np.testing.assert_array_equal(got, want, err_msg=f"logspace({a}, {b}, {n}, {base})")


@pytest.mark.parametrize("align", [True, False])
def test_affine_grid_base_is_torch_linspace(align):
    """affine_grid's normalised pixel centres are torch's `linspace_from_neg_one` exactly (an
    identity theta gives the base grid itself)."""
    th = np.array([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]], np.float32)
    got = eager.nn.functional.affine_grid(eager.tensor(th), (1, 1, 7, 13), align_corners=align)
    want = torch.nn.functional.affine_grid(torch.tensor(th), (1, 1, 7, 13),
                                           align_corners=align)
    np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("dt", ["float32", "float64", "float16"])
def test_small_bmm_bitwise_as_torch(dt):
    """Batched products of matrices with K * M * N < 400 equal ATen's small-bmm kernel bit for
    bit, forward and backward (in-order sums without FMA): affine_grid's (N, H*W, 3) @
    (N, 3, 2) product differed in the last bit and moved nearest samples (p34)."""
    rng = np.random.default_rng(0)
    shapes = [((2, 64, 3), (2, 3, 2)), ((5, 4, 7), (5, 7, 3)), ((3, 1, 60), (3, 60, 1)),
              ((2, 3, 4, 5), (2, 3, 5, 4)), ((2, 3, 4, 5), (1, 5, 2)), ((4, 0, 3), (4, 3, 2))]
    for sa, sb in shapes:
        a = rng.normal(size=sa).astype(dt)
        b = rng.normal(size=sb).astype(dt)
        ea, eb = eager.tensor(a, requires_grad=True), eager.tensor(b, requires_grad=True)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        eo, to = eager.matmul(ea, eb), torch.matmul(ta, tb)
        np.testing.assert_array_equal(eo.detach().numpy(), to.detach().numpy(), err_msg=str(sa))
        if dt == "float16" or 0 in sa or sa[:-2] != sb[:-2]:
            continue  # (a broadcast operand's gradient is a reduction: its own summation order)
        g = rng.normal(size=tuple(to.shape)).astype(dt)
        eo.backward(eager.tensor(g))
        to.backward(torch.tensor(g))
        np.testing.assert_array_equal(ea.grad.numpy(), ta.grad.numpy(), err_msg=str(sa))
        np.testing.assert_array_equal(eb.grad.numpy(), tb.grad.numpy(), err_msg=str(sa))


def test_version_attributes_as_torch():
    """`torch.__version__` (a str comparable by release numbers) and `torch.version.cuda` exist
    (`print(torch.__version__)` ended tutorial programs with AttributeError)."""
    v = eager.__version__
    assert isinstance(v, str) and isinstance(torch.__version__, str)
    assert v.split("+")[0].count(".") == 2
    assert v >= "2.0" and v >= (2, 1) and v < "99" and not v < (1, 13)
    assert (v >= "2.0") == (torch.__version__ >= "2.0")
    assert v == (2, 13, 0) and v != "1.0"
    assert eager.version.__version__ == v
    assert eager.version.cuda is None and eager.version.debug is False


def _dist_pair(name, *args, **kw):
    """The same distribution built in eager and torch (tensor arguments converted)."""
    def conv(lib, v):
        return lib.tensor(v) if isinstance(v, np.ndarray) else v
    e = getattr(eager.distributions, name)(*[conv(eager, a) for a in args],
                                           **{k: conv(eager, v) for k, v in kw.items()})
    t = getattr(torch.distributions, name)(*[conv(torch, a) for a in args],
                                           **{k: conv(torch, v) for k, v in kw.items()})
    return e, t


def _close(e, t, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(e.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


@pytest.mark.parametrize("kw", [
    {"probs": np.array([0.1, 0.4995, 0.5, 0.7, 0.95], np.float32)},
    {"logits": np.array([-2.0, 0.0, 0.001, 1.5, 3.0], np.float32)},
])
def test_continuous_bernoulli_as_torch(kw):
    """ContinuousBernoulli (VAE decoders on [0, 1] data): log_prob, cdf, icdf, moments and
    entropy, Taylor region near 1/2 included (it was missing)."""
    e, t = _dist_pair("ContinuousBernoulli", **kw)
    x = np.array([0.05, 0.3, 0.5, 0.8, 0.99], np.float32)
    _close(e.log_prob(eager.tensor(x)), t.log_prob(torch.tensor(x)), rtol=1e-4)
    _close(e.cdf(eager.tensor(x)), t.cdf(torch.tensor(x)), rtol=1e-4)
    _close(e.icdf(eager.tensor(x)), t.icdf(torch.tensor(x)), rtol=1e-4)
    for attr in ("mean", "variance", "probs", "logits"):
        _close(getattr(e, attr), getattr(t, attr), rtol=1e-4)
    _close(e.entropy(), t.entropy(), rtol=1e-4)
    s = e.rsample((7,))
    assert tuple(s.shape) == (7, 5) and bool(((s >= 0) & (s <= 1)).all())


def test_relaxed_distributions_as_torch():
    """RelaxedBernoulli / RelaxedOneHotCategorical (Gumbel-softmax) log densities and
    reparameterized draws; OneHotCategoricalStraightThrough's straight-through gradient."""
    temp = np.array(0.7, np.float32)
    e, t = _dist_pair("RelaxedBernoulli", temp, probs=np.array([0.2, 0.6, 0.9], np.float32))
    x = np.array([0.1, 0.5, 0.97], np.float32)
    _close(e.log_prob(eager.tensor(x)), t.log_prob(torch.tensor(x)), rtol=1e-4)
    assert e.has_rsample and tuple(e.rsample((4,)).shape) == (4, 3)
    logits = np.array([[0.2, -1.0, 0.5], [1.0, 0.0, -0.5]], np.float32)
    e, t = _dist_pair("RelaxedOneHotCategorical", temp, logits=logits)
    v = np.array([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], np.float32)
    _close(e.log_prob(eager.tensor(v)), t.log_prob(torch.tensor(v)), rtol=1e-4)
    lg = eager.tensor(logits, requires_grad=True)
    s = eager.distributions.RelaxedOneHotCategorical(eager.tensor(temp), logits=lg).rsample((5,))
    assert tuple(s.shape) == (5, 2, 3)
    np.testing.assert_allclose(s.sum(-1).detach().numpy(), 1.0, rtol=1e-5)
    s.pow(2).sum().backward()
    assert lg.grad is not None and float(lg.grad.abs().sum()) > 0
    lg = eager.tensor(logits, requires_grad=True)
    st = eager.distributions.OneHotCategoricalStraightThrough(logits=lg).rsample()
    assert sorted(st.detach().sum(-1).tolist()) == [1.0, 1.0]
    (st * eager.tensor([1.0, 2.0, 3.0])).sum().backward()
    lt = torch.tensor(logits, requires_grad=True)
    p = torch.softmax(lt, -1)
    (p * torch.tensor([1.0, 2.0, 3.0])).sum().backward()  # the straight-through part
    _close(lg.grad, lt.grad)


def test_von_mises_as_torch():
    e, t = _dist_pair("VonMises", np.array([0.0, 1.0, -2.0], np.float32),
                      np.array([0.5, 2.0, 20.0], np.float32))
    x = np.array([0.3, 1.2, 3.0], np.float32)
    _close(e.log_prob(eager.tensor(x)), t.log_prob(torch.tensor(x)), rtol=1e-4)
    _close(e.variance, t.variance, rtol=1e-4)
    _close(e.mean, t.mean)
    eager.manual_seed(0)
    s = e.sample((4000,))
    assert tuple(s.shape) == (4000, 3) and bool((s.abs() <= np.pi + 1e-6).all())
    # circular mean direction and resultant length agree with loc and 1 - variance
    c, si = s.cos().mean(0), s.sin().mean(0)
    np.testing.assert_allclose(eager.atan2(si, c).numpy()[1:], [1.0, -2.0], atol=0.1)
    np.testing.assert_allclose((c ** 2 + si ** 2).sqrt().numpy(),
                               1 - t.variance.numpy(), atol=0.05)


def test_distribution_family_modules():
    """`from torch.distributions.normal import Normal` and the other per-family modules."""
    import importlib
    for name in ("normal", "categorical", "bernoulli", "beta", "multivariate_normal",
                 "relaxed_categorical", "one_hot_categorical", "transformed_distribution",
                 "mixture_same_family", "independent", "uniform", "studentT"):
        mod = importlib.import_module(f"eager.distributions.{name}")
        tmod = importlib.import_module(f"torch.distributions.{name}")
        for export in tmod.__all__:
            assert getattr(mod, export) is getattr(eager.distributions, export), export


def _pair_models(n=3):
    out = []
    for lib in (eager, torch):
        ms = []
        for i in range(n):
            r = np.random.default_rng(i)
            m = lib.nn.Sequential(lib.nn.Linear(4, 8), lib.nn.ReLU(), lib.nn.Linear(8, 2))
            with lib.no_grad():
                for p in m.parameters():
                    p.copy_(lib.tensor(r.normal(0, 0.5, tuple(p.shape)).astype(np.float32)))
            ms.append(m)
        out.append(ms)
    return out


def test_func_ensembling_and_per_sample_grads_as_torch():
    """The torch.func tutorials: stack_module_state + vmap(functional_call) (model
    ensembling) and vmap(grad(loss)) over a dict of parameters (per-sample gradients): both
    raised (stack_module_state missing; grad took only tensors)."""
    x = np.random.default_rng(5).normal(size=(5, 4)).astype(np.float32)
    y = [0, 1, 1, 0, 1]
    res = []
    for lib, models in zip((eager, torch), _pair_models()):
        params, buffers = lib.func.stack_module_state(models)
        assert all(v.requires_grad for v in params.values())

        def fmodel(p, b, xb, lib=lib, base=models[0]):
            return lib.func.functional_call(base, (p, b), (xb,))
        ens = lib.func.vmap(fmodel, in_dims=(0, 0, None))(params, buffers, lib.tensor(x))
        model = models[0]
        p = {k: v.detach() for k, v in model.named_parameters()}

        def loss_fn(p, xb, yb, lib=lib, model=model):
            pred = lib.func.functional_call(model, p, (xb.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(pred, yb.unsqueeze(0))
        g = lib.func.vmap(lib.func.grad(loss_fn), in_dims=(None, 0, 0))(
            p, lib.tensor(x), lib.tensor(y))
        res.append((ens.detach().numpy(), {k: v.numpy() for k, v in g.items()}))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-5, atol=1e-6)
    assert res[0][1].keys() == res[1][1].keys()
    for k in res[1][1]:
        np.testing.assert_allclose(res[0][1][k], res[1][1][k], rtol=1e-5, atol=1e-6)


def test_func_jvp_linearize_and_composition_as_torch():
    """torch.func.jvp / linearize, hvp as jvp(grad(f)), jacrev over a tuple of argnums."""
    x0 = np.array([0.3, 0.7, 1.1], np.float32)
    t0 = np.array([1.0, -2.0, 0.5], np.float32)
    got, want = [], []
    for lib, acc in ((eager, got), (torch, want)):
        x, t = lib.tensor(x0), lib.tensor(t0)

        def f(z):
            return z.sin() * z.sum()
        out, jv = lib.func.jvp(f, (x,), (t,))
        acc += [out, jv, lib.func.linearize(f, x)[1](t)]
        acc.append(lib.func.jvp(lib.func.grad(lambda z: (z ** 3).sum() * z[0]), (x,), (t,))[1])
        ja, jb = lib.func.jacrev(lambda a, b: (a * b.sin()).sum(-1, keepdim=True),
                                 argnums=(0, 1))(x, x + 1)
        acc += [ja, jb]
        _, jv2, aux = lib.func.jvp(lambda z: (z.exp(), z.sum()), (x,), (t,), has_aux=True)
        acc += [jv2, aux]
    for a, b in zip(got, want):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    with pytest.raises(RuntimeError, match="same shape"):
        eager.func.jvp(lambda z: z, (eager.ones(2),), (eager.ones(3),))


def _pruning_run(lib):
    """The pruning tutorial's steps on a deterministic conv + linear model."""
    import importlib
    prune = importlib.import_module(f"{lib.__name__}.nn.utils.prune")
    r = np.random.default_rng(3)
    conv, lin = lib.nn.Conv2d(2, 4, 3), lib.nn.Linear(8, 5)
    with lib.no_grad():
        for p in list(conv.parameters()) + list(lin.parameters()):
            p.copy_(lib.tensor(r.normal(size=tuple(p.shape)).astype(np.float32)))
    out = {}
    prune.l1_unstructured(conv, name="weight", amount=0.3)
    prune.ln_structured(conv, name="weight", amount=0.5, n=2, dim=0)  # a PruningContainer
    prune.l1_unstructured(conv, name="bias", amount=1)
    out["conv_mask"] = conv.weight_mask.numpy().copy()
    out["bias_mask"] = conv.bias_mask.numpy().copy()
    out["keys"] = sorted(conv.state_dict().keys())
    out["params"] = sorted(n for n, _ in conv.named_parameters())
    out["hooks"] = len(conv._forward_pre_hooks)
    x = lib.tensor(r.normal(size=(1, 2, 5, 5)).astype(np.float32))
    y = conv(x)
    y.sum().backward()
    out["y"] = y.detach().numpy()
    out["grad"] = conv.weight_orig.grad.numpy().copy()
    prune.global_unstructured([(lin, "weight"), (conv, "weight")],
                              pruning_method=prune.L1Unstructured, amount=20)
    out["global"] = (lin.weight_mask.numpy().copy(), conv.weight_mask.numpy().copy())
    out["pruned"] = prune.is_pruned(lin)
    prune.remove(conv, "weight")
    out["after"] = (sorted(n for n, _ in conv.named_parameters()), hasattr(conv, "weight_orig"),
                    int((conv.weight == 0).sum()))
    m = prune.custom_from_mask(lib.nn.Linear(2, 2), "weight", lib.tensor([[1.0, 0.0], [0.0, 1.0]]))
    out["custom"] = m.weight_mask.numpy()
    with pytest.raises(ValueError):
        prune.remove(lin, "bias")
    with pytest.raises(ValueError):
        prune.l1_unstructured(lib.nn.Linear(2, 2), "weight", amount=1.5)
    return out


def test_prune_as_torch():
    """torch.nn.utils.prune (the pruning tutorial; the module was missing): masks, combined
    masks, the pre-hook's recomputed weight and its gradient, global pruning, remove."""
    got, want = _pruning_run(eager), _pruning_run(torch)
    assert got.keys() == want.keys()
    for k in got:
        if isinstance(want[k], np.ndarray):
            np.testing.assert_allclose(got[k], want[k], rtol=1e-5, atol=1e-6, err_msg=k)
        elif isinstance(want[k], tuple) and isinstance(want[k][0], np.ndarray):
            for a, b in zip(got[k], want[k]):
                np.testing.assert_array_equal(a, b, err_msg=k)
        else:
            assert got[k] == want[k], k


def test_cuda_module_and_backends_as_tutorials_use_them():
    """`import torch.cuda`, `from torch.cuda.amp import GradScaler`, `torch.cuda.manual_seed_all`
    and `torch.backends.cudnn.benchmark = True` (each raised under `import eager as torch`)."""
    import importlib
    mod = importlib.import_module("eager.cuda")
    assert mod is eager.cuda
    assert importlib.import_module("eager.cuda.amp").GradScaler is eager.cuda.amp.GradScaler
    for name in ("manual_seed", "manual_seed_all", "seed_all", "synchronize", "empty_cache",
                 "memory_allocated", "max_memory_allocated", "get_device_name",
                 "is_bf16_supported", "get_rng_state", "set_device", "device"):
        assert hasattr(torch.cuda, name) and hasattr(eager.cuda, name), name
    if not eager.cuda.is_available():  # PyTorch's behaviour without a GPU
        eager.manual_seed(5)
        a = eager.rand(3)
        eager.manual_seed(5)
        eager.cuda.manual_seed_all(123)  # silently ignored: the host stream is untouched
        eager.cuda.manual_seed(7)
        np.testing.assert_array_equal(eager.rand(3).numpy(), a.numpy())
        assert eager.cuda.device_count() == 0 and eager.cuda.memory_allocated() == 0
        assert eager.cuda.max_memory_allocated() == 0 and not eager.cuda.is_bf16_supported()
        eager.cuda.empty_cache()
        with pytest.raises(RuntimeError):
            eager.cuda.synchronize()
    else:
        eager.cuda.synchronize()
        assert isinstance(eager.cuda.get_device_name(), str)
        assert eager.cuda.memory_allocated() >= 0
    b = importlib.import_module("eager.backends.cudnn")
    eager.backends.cudnn.benchmark = True
    eager.backends.cudnn.deterministic = True
    assert b.benchmark is True and isinstance(b.is_available(), bool)
    eager.backends.cudnn.benchmark = False
    eager.backends.cuda.matmul.allow_tf32 = True
    assert eager.backends.mps.is_available() is False and eager.backends.mps.is_built() is False
    assert eager.backends.cuda.flash_sdp_enabled()
    with eager.backends.cuda.sdp_kernel(enable_flash=False):
        assert not eager.backends.cuda.flash_sdp_enabled()
    assert eager.backends.cuda.flash_sdp_enabled()
    assert isinstance(eager.backends.opt_einsum.is_available(), bool)
    eager.backends.cuda.matmul.allow_tf32 = False


def test_data_parallel_single_device_as_torch():
    """`model = nn.DataParallel(model)` (unguarded in many scripts; it raised AttributeError):
    on one device the wrapped module's outputs, gradients and a "module."-prefixed state_dict."""
    got = []
    for lib in (eager, torch):
        m = lib.nn.Linear(3, 2)
        with lib.no_grad():
            m.weight.copy_(lib.tensor([[1.0, -2.0, 0.5], [0.0, 1.0, 2.0]]))
            m.bias.copy_(lib.tensor([0.1, -0.1]))
        dp = lib.nn.DataParallel(m)
        y = dp(lib.ones(4, 3))
        y.sum().backward()
        got.append((y.detach().numpy(), m.weight.grad.numpy(), sorted(dp.state_dict()),
                    dp.module is m))
    np.testing.assert_allclose(got[0][0], got[1][0])
    np.testing.assert_allclose(got[0][1], got[1][1])
    assert got[0][2:] == got[1][2:] == (["module.bias", "module.weight"], True)


def test_compile_takes_torch_arguments():
    """torch.compile(model, mode="reduce-overhead") / backend="inductor" / disable=True and
    torch.compiler (each raised TypeError / AttributeError)."""
    m = eager.nn.Linear(3, 2)
    x = eager.ones(4, 3)
    want = m(x).detach().numpy()
    for kw in ({"mode": "reduce-overhead"}, {"mode": "max-autotune"}, {"backend": "inductor"},
               {"backend": "aot_eager"}, {"options": {"trace.enabled": False}}):
        np.testing.assert_allclose(eager.compile(m, **kw)(x).detach().numpy(), want,
                                   rtol=1e-6, err_msg=str(kw))
    f = lambda t: t * 2  # noqa: E731
    assert eager.compile(f, disable=True) is f
    for bad in ({"mode": "fast"}, {"mode": "default", "options": {}}):
        with pytest.raises(RuntimeError) as e:
            eager.compile(f, **bad)
        with pytest.raises(RuntimeError) as t:
            torch.compile(f, **bad)
        assert str(e.value) == str(t.value)
    assert eager.compiler.is_compiling() is torch.compiler.is_compiling() is False
    assert "eager" in eager.compiler.list_backends()
    g = eager.compiler.disable(lambda t: t + 1)
    assert float(eager.compile(lambda t: g(t) * 2)(eager.ones(1))) == 4.0
    eager.compiler.reset()


def test_profiler_records_ops_and_ranges(tmp_path):
    """torch.profiler / torch.autograd.profiler and record_function (the profiler recipe
    raised ModuleNotFoundError): op events named aten::<op>, counted; ranges; table; trace;
    schedule as PyTorch's."""
    import json
    from eager.profiler import ProfilerActivity, profile, record_function, schedule
    x = eager.ones(4, 3)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("model_inference"):
            for _ in range(3):
                x = x * 2.0
            y = x.exp()
    avg = {e.key: e for e in prof.key_averages()}
    assert avg["aten::mul"].count == 3 and avg["aten::exp"].count == 1
    assert avg["model_inference"].count == 1
    assert avg["model_inference"].cpu_time_total >= avg["aten::mul"].cpu_time_total > 0
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=2)
    assert "Name" in table and "model_inference" in table and len(table.splitlines()) == 7
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    assert {e["name"] for e in json.load(open(path))["traceEvents"]} >= {"aten::exp"}
    n = len(prof.events())
    (y * 2).sum()  # outside: not recorded
    assert len(prof.events()) == n
    with eager.autograd.profiler.profile() as p2:
        eager.ones(2) + 1
    assert "aten::add" in {e.key for e in p2.key_averages()}
    for kw in ({"wait": 1, "warmup": 1, "active": 2, "repeat": 2},
               {"wait": 0, "warmup": 0, "active": 1, "skip_first": 3}):
        ours, theirs = schedule(**kw), torch.profiler.schedule(**kw)
        assert [ours(s).name for s in range(12)] == [theirs(s).name for s in range(12)]
    saved = []
    with profile(schedule=schedule(wait=1, warmup=0, active=1),
                 on_trace_ready=lambda p: saved.append(len(p.events()))) as p3:
        for _ in range(4):
            eager.ones(2).neg()
            p3.step()
    assert saved == [1, 1]


def test_benchmark_timer():
    """torch.utils.benchmark.Timer (import torch.utils.benchmark raised
    ModuleNotFoundError): timeit / blocked_autorange Measurements and Compare."""
    from eager.utils import benchmark
    t = benchmark.Timer("x * 2", globals={"x": eager.ones(3)}, label="mul", sub_label="3",
                        description="eager")
    m = t.timeit(20)
    assert m.number_per_run == 20 and len(m.times) == 1 and m.median > 0
    assert "mul: 3" in repr(m) and "1 measurement, 20 runs" in repr(m)
    b = t.blocked_autorange(min_run_time=0.01)
    assert sum(b.raw_times) >= 0.01 and b.mean > 0 and b.iqr >= 0
    assert "eager" in str(benchmark.Compare([m, b]))


def test_legacy_tensor_types_as_torch():
    """torch.FloatTensor(...), isinstance(x, torch.LongTensor), x.type() and x.type(...)
    (FloatTensor raised AttributeError; x.type() returned 'eager.int64')."""
    for name in ("FloatTensor", "DoubleTensor", "LongTensor", "IntTensor", "ByteTensor",
                 "BoolTensor", "HalfTensor", "BFloat16Tensor", "ShortTensor", "CharTensor"):
        e, t = getattr(eager, name), getattr(torch, name)
        assert e.dtype.name == str(t.dtype).split(".")[1], name
        assert tuple(e(2, 3).shape) == tuple(t(2, 3).shape) == (2, 3)
        assert tuple(e().shape) == tuple(t().shape) == (0,)
        assert e([1, 0]).tolist() == t([1, 0]).tolist()
        assert e([1, 0]).dtype is e.dtype
        assert e([1, 0]).type() == t([1, 0]).type() == f"torch.{name}"
        assert isinstance(e([1]), e) and isinstance(t([1]), t)
    assert not isinstance(eager.ones(2), eager.LongTensor)
    assert not isinstance(torch.ones(2), torch.LongTensor)
    x, tx = eager.tensor([1.5, 2.5]), torch.tensor([1.5, 2.5])
    for arg in ("torch.LongTensor", eager.DoubleTensor, eager.int32):
        targ = arg if isinstance(arg, str) else (torch.DoubleTensor if arg is eager.DoubleTensor
                                                 else torch.int32)
        got, want = x.type(arg), tx.type(targ)
        assert got.type() == want.type() and got.tolist() == want.tolist()
    with pytest.raises(ValueError):
        x.type("torch.NoSuchTensor")
    assert eager.cuda.FloatTensor.dtype is eager.float32
    assert eager.FloatTensor(eager.Size([2, 2])).shape == (2, 2)


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_sorter_as_torch(right):
    """searchsorted(seq, x, sorter=...) searches seq in sorter's order (sorter was ignored)."""
    cases = [([3.0, 1.0, 2.0], [2.5, 0.5, 3.5, 2.0], [1, 2, 0]),
             ([[5.0, 1.0, 3.0], [2.0, 9.0, 4.0]], [[2.0, 4.0], [3.0, 10.0]],
              [[1, 2, 0], [0, 2, 1]])]
    for seq, v, order in cases:
        got = eager.searchsorted(eager.tensor(seq), eager.tensor(v), right=right,
                                 sorter=eager.tensor(order))
        want = torch.searchsorted(torch.tensor(seq), torch.tensor(v), right=right,
                                  sorter=torch.tensor(order))
        assert got.tolist() == want.tolist()
    with pytest.raises(RuntimeError, match="same size"):
        eager.searchsorted(eager.tensor([1.0, 2.0]), eager.tensor([1.0]),
                           sorter=eager.tensor([0]))


def test_batchnorm_load_without_num_batches_tracked_as_torch():
    """A hand-made / pre-1.x state dict without num_batches_tracked loads into BatchNorm as in
    PyTorch (the count is kept, not reported missing); other missing keys are reported."""
    sd = {"weight": np.array([2.0, 3.0], np.float32), "bias": np.zeros(2, np.float32),
          "running_mean": np.ones(2, np.float32), "running_var": np.ones(2, np.float32)}
    res = []
    for lib in (eager, torch):
        bn = lib.nn.BatchNorm1d(2)
        bn(lib.ones(4, 2))  # num_batches_tracked = 1
        keys = bn.load_state_dict({k: lib.tensor(v) for k, v in sd.items()})
        part = lib.nn.BatchNorm1d(2).load_state_dict({"weight": lib.ones(2)}, strict=False)
        res.append((list(keys.missing_keys), int(bn.num_batches_tracked), bn.weight.tolist(),
                    sorted(part.missing_keys)))
    assert res[0] == res[1]


@pytest.mark.parametrize("padding_idx", [None, 2])
def test_embedding_scale_grad_by_freq_as_torch(padding_idx):
    """nn.Embedding(scale_grad_by_freq=True) (word2vec-style models) divides each row's
    gradient by its index's count in the batch (it raised NotImplementedError)."""
    w = np.random.default_rng(0).normal(size=(6, 3)).astype(np.float32)
    idx = np.array([[0, 2, 2, 5], [5, 5, 1, 2]])
    g = np.random.default_rng(1).normal(size=(2, 4, 3)).astype(np.float32)
    res = []
    for lib in (eager, torch):
        emb = lib.nn.Embedding(6, 3, padding_idx=padding_idx, scale_grad_by_freq=True)
        with lib.no_grad():
            emb.weight.copy_(lib.tensor(w))
        out = emb(lib.tensor(idx))
        out.backward(lib.tensor(g))
        res.append((out.detach().numpy(), emb.weight.grad.numpy()))
    np.testing.assert_array_equal(res[0][0], res[1][0])
    np.testing.assert_allclose(res[0][1], res[1][1], rtol=1e-6, atol=1e-7)


def test_set_default_tensor_type_as_torch():
    """torch.set_default_tensor_type (deprecated, still in older tutorials)."""
    import warnings
    try:
        for lib in (eager, torch):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lib.set_default_tensor_type(lib.DoubleTensor)
                assert lib.ones(1).dtype is lib.float64 and lib.tensor([1.5]).dtype is lib.float64
                lib.set_default_tensor_type("torch.FloatTensor")
                assert lib.ones(1).dtype is lib.float32
                with pytest.raises(TypeError):
                    lib.set_default_tensor_type(lib.LongTensor)
    finally:
        eager.set_default_dtype(eager.float32)
        torch.set_default_dtype(torch.float32)


def test_grad_fn_names_of_whole_composites_as_torch():
    """`print(loss)` shows PyTorch's node names for ops eager records whole (cross_entropy
    printed CrossEntropyBackward0 where PyTorch prints NllLossBackward0)."""
    x = np.random.default_rng(0).normal(size=(4, 3)).astype(np.float32)
    names = []
    for lib in (eager, torch):
        t = lib.tensor(x, requires_grad=True)
        F = lib.nn.functional
        outs = [F.cross_entropy(t, lib.tensor([0, 1, 2, 1])), F.layer_norm(t, (3,)),
                F.batch_norm(t, None, None, training=True), t.mean(), F.softmax(t, 1),
                F.log_softmax(t, 1), F.nll_loss(F.log_softmax(t, 1), lib.tensor([0, 1, 2, 1]))]
        names.append([type(o.grad_fn).__name__ for o in outs])
        names[-1].append(repr(outs[0]).split("grad_fn=")[1])
    assert names[0] == names[1]


def test_typed_storage_as_torch():
    """tensor.storage() counts elements of the dtype (it returned the untyped byte storage:
    size() 24 for six float32 elements where PyTorch says 6)."""
    import warnings
    got = []
    for lib in (eager, torch):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            x = lib.arange(6.0).reshape(2, 3)
            v = x[1]
            s = x.storage()
            got.append((s.size(), len(s), s.tolist(), s[4], v.storage().data_ptr() ==
                        s.data_ptr(), v.storage_offset(), s.element_size(), s.nbytes(),
                        lib.tensor([1, 2], dtype=lib.int16).storage().size(),
                        x.untyped_storage().nbytes()))
    assert got[0] == got[1]


def test_clamp_number_with_0d_tensor_bound_as_torch():
    """torch.clamp(x, min=torch.tensor(2.), max=5): a 0-d tensor bound binds as a number
    beside a Python number (it raised TypeError); a number beside a 1-d tensor still does."""
    res = []
    for lib in (eager, torch):
        x = lib.arange(12.0).reshape(3, 4)
        outs = [lib.clamp(x, min=lib.tensor(2.0), max=5), lib.clamp(x, min=2, max=lib.tensor(5.0)),
                lib.clamp(lib.arange(4), min=lib.tensor(1.5), max=2),
                lib.clamp(x, lib.tensor([1.0, 2, 3, 4]), lib.tensor(5.0))]
        res.append([(o.tolist(), str(o.dtype).split(".")[1]) for o in outs])
        for bad in (dict(min=1, max=lib.tensor([5.0, 6, 7, 8])),
                    dict(min=lib.tensor([1.0, 2, 3, 4]), max=9)):
            with pytest.raises(TypeError):
                lib.clamp(x, **bad)
    assert res[0] == res[1]


def test_sdpa_kernel_context_as_torch():
    """from torch.nn.attention import sdpa_kernel, SDPBackend (ImportError before): the
    context accepts backends and leaves results unchanged (wick has one math kernel)."""
    from eager.nn.attention import SDPBackend, sdpa_kernel
    assert [b.name for b in SDPBackend] == list(torch.nn.attention.SDPBackend.__members__)
    q = eager.tensor(np.random.default_rng(0).normal(size=(1, 2, 3, 4)).astype(np.float32))
    want = eager.nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    with sdpa_kernel([SDPBackend.MATH, SDPBackend.FLASH_ATTENTION]):
        got = eager.nn.functional.scaled_dot_product_attention(q, q, q).numpy()
    np.testing.assert_array_equal(got, want)
    with pytest.raises(TypeError):
        with sdpa_kernel("math"):
            pass


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_special_bessel_and_polynomials_as_torch(dt):
    """torch.special's Bessel functions and orthogonal polynomials (they were missing)."""
    rng = np.random.default_rng(0)
    x = rng.uniform(-3, 4, 20).astype(dt)
    xp = np.abs(x) + 0.1
    for name in ("bessel_j0", "bessel_j1", "modified_bessel_i0", "modified_bessel_i1",
                 "spherical_bessel_j0", "airy_ai"):
        got = getattr(eager.special, name)(eager.tensor(x)).numpy()
        want = getattr(torch.special, name)(torch.tensor(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=name)
    for name in ("bessel_y0", "bessel_y1", "modified_bessel_k0", "modified_bessel_k1",
                 "scaled_modified_bessel_k0", "scaled_modified_bessel_k1"):
        got = getattr(eager.special, name)(eager.tensor(xp)).numpy()
        want = getattr(torch.special, name)(torch.tensor(xp)).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6, err_msg=name)
    u = rng.uniform(-0.99, 0.99, (4, 1)).astype(dt)
    s = rng.uniform(0.01, 0.99, (4, 1)).astype(dt)
    n = np.array([-1, 0, 1, 2, 5, 8], dt)
    for name in ("chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
                 "chebyshev_polynomial_w", "hermite_polynomial_h", "hermite_polynomial_he",
                 "laguerre_polynomial_l", "legendre_polynomial_p",
                 "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
                 "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w"):
        a = s if name.startswith("shifted") else u
        got = getattr(eager.special, name)(eager.tensor(a), eager.tensor(n))
        want = getattr(torch.special, name)(torch.tensor(a), torch.tensor(n))
        assert got.dtype.name == str(want.dtype).split(".")[1], name
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4,
                                   err_msg=name)
        np.testing.assert_allclose(
            getattr(eager.special, name)(eager.tensor(a), 3).numpy(),
            getattr(torch.special, name)(torch.tensor(a), 3).numpy(), rtol=1e-4, atol=1e-4)


def _hogwild_worker(model, rank):
    opt = eager.optim.SGD(model.parameters(), lr=1.0)
    loss = (model.weight * (rank + 1)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_multiprocessing_shared_model_hogwild():
    """torch.multiprocessing + model.share_memory() (the Hogwild example; the module was
    missing): updates made in forked processes reach the parent's parameters, as in PyTorch."""
    import importlib
    mp = importlib.import_module("eager.multiprocessing")
    ctx = mp.get_context("fork")
    model = eager.nn.Linear(2, 1, bias=False)
    with eager.no_grad():
        model.weight.zero_()
    assert not model.weight.is_shared()
    model.share_memory()
    assert model.weight.is_shared() and model.weight.is_leaf
    procs = [ctx.Process(target=_hogwild_worker, args=(model, r)) for r in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    assert [p.exitcode for p in procs] == [0, 0, 0]
    np.testing.assert_array_equal(model.weight.detach().numpy(), [[-6.0, -6.0]])  # -(1+2+3)
    assert mp.get_sharing_strategy() in mp.get_all_sharing_strategies()
    assert mp.Queue is not None and callable(mp.spawn)
    y = eager.arange(4.0).share_memory_()
    assert y.is_shared() and y.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_autograd_graph_module():
    """`from torch.autograd.graph import Node` (ModuleNotFoundError: graph was only an
    attribute), get_gradient_edge, increment_version."""
    import importlib
    g = importlib.import_module("eager.autograd.graph")
    assert g is eager.autograd.graph
    x = eager.ones(2, requires_grad=True)
    y = x * 2
    assert isinstance(y.grad_fn, g.Node) and isinstance(x.grad_fn, type(None))
    tx = torch.ones(2, requires_grad=True)
    ty = tx * 2
    for ours, theirs in ((g.get_gradient_edge(y), torch.autograd.graph.get_gradient_edge(ty)),
                         (g.get_gradient_edge(x), torch.autograd.graph.get_gradient_edge(tx))):
        assert ours.output_nr == theirs.output_nr
        assert ours.node.name().split("::")[-1] == theirs.node.name().split("::")[-1]
    v = x._version
    g.increment_version(x)
    assert x._version == v + 1
    with pytest.raises(RuntimeError):
        g.get_gradient_edge(eager.ones(2))


def _repr_models(lib):
    nn = lib.nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1))
            self.heads = nn.ModuleList([nn.Linear(3, 1) for _ in range(3)] + [nn.Tanh()])
            self.rnn = nn.LSTM(4, 8, num_layers=2, batch_first=True)

        def extra_repr(self):
            return "custom=1"

    return [Net(), nn.ModuleList([nn.Linear(2, 2), nn.Linear(2, 2)]), nn.ModuleList(),
            nn.Sequential(nn.ReLU(), nn.ReLU())[1:], nn.TransformerEncoder(
                nn.TransformerEncoderLayer(8, 2, 16), 2, enable_nested_tensor=False),
            nn.ModuleDict({"a": nn.Linear(1, 1)})]


def test_module_repr_as_torch():
    """print(model) as PyTorch: extra_repr on its own line beside children, and ModuleList's
    runs of equal children compressed to "(0-2): 3 x Linear(...)" (both differed; a printed
    model's numbers then did not line up with torch's)."""
    for ours, theirs in zip(_repr_models(eager), _repr_models(torch)):
        assert repr(ours) == repr(theirs)


def test_return_types_print_as_torch():
    """print(x.max(1)) lays out as PyTorch's structseq ("...return_types.max(\\nvalues=...,
    \\nindices=...)"), field access and unpacking unchanged."""
    x = np.array([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], np.float32)
    for fn in (lambda L, t: t.max(1), lambda L, t: t.sort(1), lambda L, t: L.topk(t, 2),
               lambda L, t: L.aminmax(t), lambda L, t: t.min(dim=0), lambda L, t: t.kthvalue(2),
               lambda L, t: L.slogdet(t[:, :2])):
        ours, theirs = fn(eager, eager.tensor(x)), fn(torch, torch.tensor(x))
        assert repr(ours).replace("eager.", "torch.") == repr(theirs)
        assert len(ours) == len(theirs) and all(hasattr(theirs, f) for f in ours._fields)
    values, indices = eager.tensor(x).max(1)
    assert indices.tolist() == [1, 0] and isinstance(eager.tensor(x).max(1), tuple)


def test_custom_function_grad_fn_name_as_torch():
    """A custom Function's grad_fn is '<Name>Backward' (it printed FunctionNode)."""
    got = []
    for lib in (eager, torch):
        class MyExp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                y = x.exp()
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        x = lib.ones(2, requires_grad=True)
        y = MyExp.apply(x)
        y.sum().backward()
        got.append((type(y.grad_fn).__name__, y.grad_fn.name(),
                    [round(v, 5) for v in x.grad.tolist()], repr(y).split("grad_fn=")[1]))
    assert got[0] == got[1]
