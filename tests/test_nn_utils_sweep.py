"""eager.nn.utils (and nn.init's additions) against torch.nn.utils (issue 16's API sweep):
parametrize (custom parametrizations, chaining, caching, assignment through right_inverse,
removal, deepcopy, state_dict keys), parametrizations.weight_norm / spectral_norm /
orthogonal (values and gradients from the same weights and, for spectral norm, the same u/v
and a non-square orthogonal's base), the hook-based weight_norm / spectral_norm,
conv/linear + batch-norm fusion, stateless.functional_call, and the small helpers."""

import copy
import importlib
import warnings

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

LIBS = (eager, torch)


def sub(lib, name):
    return importlib.import_module(f"{lib.__name__}.nn.utils.{name}")


def arr(t):
    return t.detach().numpy()


def close(a, b, rtol=1e-10, atol=1e-12):
    np.testing.assert_allclose(arr(a) if not isinstance(a, np.ndarray) else a,
                               arr(b) if not isinstance(b, np.ndarray) else b,
                               rtol=rtol, atol=atol)


RNG = np.random.default_rng(0)
W43 = RNG.standard_normal((4, 3))
W44 = RNG.standard_normal((4, 4))
X3 = RNG.standard_normal((5, 3))
X4 = RNG.standard_normal((5, 4))
WCONV = RNG.standard_normal((3, 2, 3, 3))


def linear(lib, w):
    m = lib.nn.Linear(w.shape[1], w.shape[0], dtype=lib.float64)
    with lib.no_grad():
        m.weight.copy_(lib.tensor(w))
        m.bias.fill_(0.25)
    return m


def run_and_grads(lib, m, x):
    out = m(lib.tensor(x))
    (out * out).sum().backward()
    grads = {n: p.grad for n, p in m.named_parameters() if p.grad is not None}
    return out, grads


def both_close(ours, ref, rtol=1e-10, atol=1e-12):
    (o_w, g_w), (o_t, g_t) = ours, ref
    close(o_w, o_t, rtol, atol)
    assert sorted(g_w) == sorted(g_t)
    for k in g_t:
        close(g_w[k], g_t[k], rtol, atol)


# ---------------------------------------------------------------- parametrize


def symmetric(lib):
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(-1, -2)

        def right_inverse(self, a):
            return a.triu()

    return Symmetric()


def scale(lib, c):
    class Scale(lib.nn.Module):
        def forward(self, x):
            return x * c

        def right_inverse(self, y):
            return y / c

    return Scale()


def test_parametrize_value_grad_keys_and_class():
    res = []
    for lib in LIBS:
        p = sub(lib, "parametrize")
        m = linear(lib, W44)
        p.register_parametrization(m, "weight", symmetric(lib))
        p.register_parametrization(m, "weight", scale(lib, 3.0))
        assert type(m).__name__ == "ParametrizedLinear"
        assert p.type_before_parametrizations(m) is lib.nn.Linear
        assert p.is_parametrized(m) and p.is_parametrized(m, "weight")
        assert not p.is_parametrized(m, "bias")
        res.append((run_and_grads(lib, m, X4), list(m.state_dict()), m))
    both_close(res[0][0], res[1][0])
    assert res[0][1] == res[1][1]
    m_w, m_t = res[0][2], res[1][2]
    close(m_w.parametrizations.weight.original, m_t.parametrizations.weight.original)


def test_parametrize_assign_cached_remove_and_deepcopy():
    outs = []
    for lib in LIBS:
        p = sub(lib, "parametrize")
        mods = []
        for _ in range(2):
            m = linear(lib, W44)
            p.register_parametrization(m, "weight", symmetric(lib))
            with lib.no_grad():
                m.weight = lib.tensor(W44 + 2 * W44.T)  # through right_inverse
            mods.append(m)
        m, kept = mods
        with p.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
        clone = copy.deepcopy(m)
        assert type(clone).__name__ == "ParametrizedLinear"
        clone_w = arr(clone.weight)
        p.remove_parametrizations(m, "weight")
        p.remove_parametrizations(kept, "weight", leave_parametrized=False)
        assert type(m) is lib.nn.Linear and not hasattr(m, "parametrizations")
        assert isinstance(m.weight, lib.nn.Parameter)
        outs.append((arr(m.weight), arr(kept.weight), clone_w, list(m.state_dict())))
    for a, b in zip(outs[0][:3], outs[1][:3]):
        close(a, b)
    assert outs[0][3] == outs[1][3]


def test_parametrize_errors():
    for lib in LIBS:
        p = sub(lib, "parametrize")
        m = linear(lib, W43)

        class Shrink(lib.nn.Module):
            def forward(self, x):
                return x[:2]

        with pytest.raises(ValueError, match="may not change the shape"):
            p.register_parametrization(m, "weight", Shrink())
        with pytest.raises(ValueError, match="does not have a parameter, a buffer"):
            p.register_parametrization(m, "nope", symmetric(lib))
        with pytest.raises(ValueError, match="does not have a parametrization"):
            p.remove_parametrizations(m, "weight")
        p.register_parametrization(m, "weight", Shrink(), unsafe=True)
        assert tuple(m.weight.shape) == (2, 3)


# ---------------------------------------------------------------- parametrizations


@pytest.mark.parametrize("dim", [0, 1, None])
def test_weight_norm_parametrization(dim):
    res = []
    for lib in LIBS:
        m = sub(lib, "parametrizations").weight_norm(linear(lib, W43), dim=dim)
        wn = m.parametrizations.weight
        res.append((run_and_grads(lib, m, X3), (wn.original0, wn.original1),
                    list(m.state_dict())))
    both_close(res[0][0], res[1][0])
    close(res[0][1][0], res[1][1][0])
    assert res[0][2] == res[1][2]


def test_weight_norm_conv():
    res = []
    for lib in LIBS:
        c = lib.nn.Conv2d(2, 3, 3, dtype=lib.float64)
        with lib.no_grad():
            c.weight.copy_(lib.tensor(WCONV))
            c.bias.fill_(0.1)
        sub(lib, "parametrizations").weight_norm(c)
        res.append(run_and_grads(lib, c, np.linspace(-1, 1, 2 * 2 * 5 * 5).reshape(2, 2, 5, 5)))
    both_close(*res)


@pytest.mark.parametrize("shape,dim", [((4, 3), None), ((3, 2, 3, 3), None), ((4, 3), 1)])
def test_spectral_norm_parametrization(shape, dim):
    w = RNG.standard_normal(shape)
    ref = None
    x = RNG.standard_normal((5, shape[-1]))
    for lib in (torch, eager):
        if len(shape) == 2:
            m = linear(lib, w)
        else:
            m = lib.nn.Conv2d(2, 3, 3, dtype=lib.float64)
            with lib.no_grad():
                m.weight.copy_(lib.tensor(w))
                m.bias.fill_(0.1)
            x = np.linspace(-1, 1, 100).reshape(2, 2, 5, 5)
        sub(lib, "parametrizations").spectral_norm(m, dim=dim)
        sn = m.parametrizations.weight[0]
        if ref is None:
            u0, v0 = arr(sn._u).copy(), arr(sn._v).copy()
        else:
            with lib.no_grad():
                sn._u.copy_(lib.tensor(u0))
                sn._v.copy_(lib.tensor(v0))
        outs = [run_and_grads(lib, m, x) for _ in range(3)]
        m.eval()
        outs.append((m(lib.tensor(x)), {}))
        state = (arr(sn._u), arr(sn._v), list(m.state_dict()))
        if ref is None:
            ref = (outs, state)
    for a, b in zip(outs, ref[0]):
        both_close(a, b, rtol=1e-9)
    close(state[0], ref[1][0], rtol=1e-9)
    close(state[1], ref[1][1], rtol=1e-9)
    assert state[2] == ref[1][2]


@pytest.mark.parametrize("orth_map", ["matrix_exp", "cayley", "householder", None])
@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5)])
def test_orthogonal_parametrization(orth_map, shape):
    w = RNG.standard_normal(shape)
    x = RNG.standard_normal((6, shape[1]))
    res = []
    base = None
    for lib in (torch, eager):
        m = linear(lib, w)
        sub(lib, "parametrizations").orthogonal(m, orthogonal_map=orth_map)
        orth = m.parametrizations.weight[0]
        if base is None:
            base = arr(orth.base).copy()
        else:  # the same base (drawn at random when the matrix is not square)
            with lib.no_grad():
                orth.base.copy_(lib.tensor(base))
        q = m.weight
        k = min(shape)
        eye = np.eye(k)
        gram = arr(q.T @ q if shape[0] >= shape[1] else q @ q.T)
        np.testing.assert_allclose(gram, eye, atol=1e-12)
        # a few SGD steps move the original: the map's gradient is exercised
        opt = lib.optim.SGD(m.parameters(), lr=0.05)
        for _ in range(3):
            opt.zero_grad()
            out, _ = run_and_grads(lib, m, x)
            opt.step()
        res.append((arr(m.weight), arr(m.parametrizations.weight.original), arr(out)))
    for a, b in zip(res[0], res[1]):
        close(a, b, rtol=1e-8, atol=1e-10)


def test_orthogonal_errors():
    for lib in LIBS:
        P = sub(lib, "parametrizations")
        with pytest.raises(ValueError, match="orthogonal_map has to be one of"):
            P.orthogonal(linear(lib, W43), orthogonal_map="qr")
        with pytest.raises(ValueError, match="Expected a matrix"):
            P.orthogonal(lib.nn.BatchNorm1d(3))


# ---------------------------------------------------------------- hook-based norms


def test_legacy_weight_norm_and_removal():
    res = []
    for lib in LIBS:
        m = linear(lib, W43)
        with pytest.warns(FutureWarning, match="parametrizations.weight_norm"):
            lib.nn.utils.weight_norm(m, dim=0)
        assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_g", "weight_v"]
        first = run_and_grads(lib, m, X3)
        lib.nn.utils.remove_weight_norm(m)
        assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight"]
        res.append((first, arr(m.weight)))
        with pytest.raises(ValueError, match="weight_norm of 'weight' not found"):
            lib.nn.utils.remove_weight_norm(m)
    both_close(res[0][0], res[1][0])
    close(res[0][1], res[1][1])


def test_legacy_spectral_norm_and_removal():
    ref = None
    for lib in (torch, eager):
        m = linear(lib, W43)
        lib.nn.utils.spectral_norm(m, n_power_iterations=2)
        if ref is None:
            u0, v0 = arr(m.weight_u).copy(), arr(m.weight_v).copy()
        else:
            with lib.no_grad():
                m.weight_u.copy_(lib.tensor(u0))
                m.weight_v.copy_(lib.tensor(v0))
        keys = list(m.state_dict())
        outs = [run_and_grads(lib, m, X3) for _ in range(2)]
        lib.nn.utils.remove_spectral_norm(m)
        got = (outs, keys, arr(m.weight), sorted(n for n, _ in m.named_parameters()))
        if ref is None:
            ref = got
    for a, b in zip(got[0], ref[0]):
        both_close(a, b, rtol=1e-9)
    assert got[1] == ref[1] and got[3] == ref[3]
    close(got[2], ref[2], rtol=1e-9)


# ---------------------------------------------------------------- fusion


def _bn(lib, n, seed):
    r = np.random.default_rng(seed)
    bn = lib.nn.BatchNorm2d(n, dtype=lib.float64) if seed % 2 == 0 else \
        lib.nn.BatchNorm1d(n, dtype=lib.float64)
    with lib.no_grad():
        bn.running_mean.copy_(lib.tensor(r.standard_normal(n)))
        bn.running_var.copy_(lib.tensor(r.uniform(0.5, 2.0, n)))
        bn.weight.copy_(lib.tensor(r.standard_normal(n)))
        bn.bias.copy_(lib.tensor(r.standard_normal(n)))
    return bn.eval()


@pytest.mark.parametrize("transpose", [False, True])
def test_fuse_conv_bn(transpose):
    x = np.linspace(-2, 2, 2 * 2 * 5 * 5).reshape(2, 2, 5, 5)
    outs = []
    for lib in LIBS:
        conv = (lib.nn.ConvTranspose2d(2, 3, 3, dtype=lib.float64) if transpose
                else lib.nn.Conv2d(2, 3, 3, dtype=lib.float64)).eval()
        with lib.no_grad():
            conv.weight.copy_(lib.tensor(WCONV.transpose(1, 0, 2, 3) if transpose else WCONV))
            conv.bias.fill_(-0.3)
        bn = _bn(lib, 3, 0)
        fused = lib.nn.utils.fuse_conv_bn_eval(conv, bn, transpose=transpose)
        xt = lib.tensor(x)
        outs.append((fused(xt), bn(conv(xt)), fused.weight, fused.bias))
        assert isinstance(fused.weight, lib.nn.Parameter) and fused is not conv
    close(outs[0][0], outs[0][1], rtol=1e-10)
    for a, b in zip(outs[0], outs[1]):
        close(a, b, rtol=1e-10)


def test_fuse_linear_bn_and_eval_check():
    outs = []
    for lib in LIBS:
        lin = linear(lib, W43).eval()
        bn = _bn(lib, 4, 1)
        fused = lib.nn.utils.fuse_linear_bn_eval(lin, bn)
        xt = lib.tensor(X3)
        outs.append((fused(xt), bn(lin(xt))))
        with pytest.raises(AssertionError, match="Fusion only for eval"):
            lib.nn.utils.fuse_linear_bn_eval(lin.train(), bn)
        w, b = lib.nn.utils.fuse_conv_bn_weights(lib.tensor(WCONV), None, bn.running_mean[:3],
                                                 bn.running_var[:3], 1e-5, None, None)
        outs[-1] += (w, b)
    close(outs[0][0], outs[0][1], rtol=1e-10)
    for a, b in zip(outs[0], outs[1]):
        close(a, b, rtol=1e-10)


# ---------------------------------------------------------------- functional_call


def test_functional_call_values_grads_and_restores():
    res = []
    for lib in LIBS:
        m = lib.nn.Sequential(linear(lib, W43), lib.nn.Tanh(), linear(lib, W44))
        w = lib.tensor(W43 * 0.5, requires_grad=True)
        b = lib.tensor(np.ones(4), requires_grad=True)
        with pytest.warns(FutureWarning, match="torch.func.functional_call"):
            out = sub(lib, "stateless").functional_call(m, {"0.weight": w, "2.bias": b},
                                                        lib.tensor(X3))
        out.sum().backward()
        assert m[0].weight.grad is None
        close(m[0].weight, W43)  # restored
        res.append((out, w.grad, b.grad, m(lib.tensor(X3))))
    for a, c in zip(*res):
        close(a, c)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_functional_call_ties_and_strict():
    for lib in LIBS:
        fc = sub(lib, "stateless").functional_call
        m = lib.nn.Sequential(linear(lib, W44), linear(lib, W44))
        m[1].weight = m[0].weight  # tied
        z = lib.zeros(4, 4, dtype=lib.float64)
        out = fc(m, {"0.weight": z}, (lib.tensor(X4),))
        close(out, np.full((5, 4), 0.25))  # both layers saw the zero weight
        untied = fc(m, {"0.weight": z}, lib.tensor(X4), tie_weights=False)
        assert not np.allclose(arr(untied), 0.25)
        with pytest.raises(RuntimeError, match="Missing key"):
            fc(m, {"0.weight": z}, lib.tensor(X4), strict=True)
        with pytest.raises(ValueError, match="tied"):
            fc(m, {"0.weight": z, "1.weight": z + 1}, lib.tensor(X4))
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):  # (torch.func's)
        sub(eager, "stateless")._functional_call(
            m, ({"0.bias": z[0]}, {"0.bias": z[0]}), eager.tensor(X4))
    m2 = eager.nn.Sequential(linear(eager, W44), linear(eager, W44))
    out = sub(eager, "stateless")._functional_call(
        m2, ({"0.weight": eager.zeros(4, 4, dtype=eager.float64)}, {"1.bias": eager.zeros(
            4, dtype=eager.float64)}), eager.tensor(X4))
    close(out, arr(m2[1](m2[0].bias.expand(5, 4) * 1.0)) - 0.25)


# ---------------------------------------------------------------- small helpers, nn.init


def test_small_helpers():
    for lib in LIBS:
        m = linear(lib, W43)
        m.weight.grad = lib.ones(4, 3, dtype=lib.float64) * 3
        with pytest.warns(FutureWarning, match="clip_grad_norm_"):
            total = lib.nn.utils.clip_grad_norm(m.weight, 1.0)
        close(total, np.array(np.sqrt(12 * 9)))
        assert abs(float(m.weight.grad.norm()) - 1.0) < 1e-5
        fmt = getattr(lib, "channels_last", None)
        assert lib.nn.utils.convert_conv2d_weight_memory_format(m, fmt) is m
        s = lib.nn.utils.skip_init(lib.nn.Linear, 3, 4, device="cpu")
        assert tuple(s.weight.shape) == (4, 3)


def test_init_additions():
    for lib in LIBS:
        t = lib.empty(10, 6)
        lib.nn.init.sparse_(t, sparsity=0.3)
        assert ((arr(t) == 0).sum(0) == 3).all()
        with pytest.raises(ValueError, match="2 dimensions"):
            lib.nn.init.sparse_(lib.empty(3), 0.1)
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            lib.nn.init.eye(lib.empty(3, 4))
            lib.nn.init.constant(t, 2.0)
        assert [type(r.message) for r in rec] == [FutureWarning, FutureWarning]
        assert "nn.init.eye_" in str(rec[0].message)
        for old in ("uniform", "normal", "constant", "eye", "dirac", "xavier_uniform",
                    "xavier_normal", "kaiming_uniform", "kaiming_normal", "orthogonal", "sparse"):
            assert getattr(lib.nn.init, old).__name__ == old
    d = [arr(lib.nn.init.dirac_(lib.empty(4, 2, 3, 3), groups=2)) for lib in LIBS]
    np.testing.assert_array_equal(*d)
