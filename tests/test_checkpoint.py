"""eager.utils.checkpoint against torch.utils.checkpoint and against the same model run without
checkpointing: values and gradients (arguments and parameters) for both variants, inputs that
do not require grad, keyword arguments, tuple outputs, dropout recomputed with the same mask
(preserve_rng_state), checkpoint_sequential, no_grad, warnings and errors as torch's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import eager  # noqa: E402

X = np.random.default_rng(0).standard_normal((4, 8)).astype(np.float32)


def _model(lib, seed=0, n=3):
    rng = np.random.default_rng(seed)
    layers = []
    for _ in range(n):
        lin = lib.nn.Linear(8, 8)
        with lib.no_grad():
            lin.weight.copy_(lib.tensor(rng.uniform(-0.3, 0.3, (8, 8)).astype(np.float32)))
            lin.bias.copy_(lib.tensor(rng.uniform(-0.3, 0.3, 8).astype(np.float32)))
        layers += [lin, lib.nn.Tanh()]
    return lib.nn.Sequential(*layers)


def _ck(lib):
    return lib.utils.checkpoint


def _run(lib, reentrant, x_requires_grad, use_ck=True):
    m = _model(lib)
    x = lib.tensor(X, requires_grad=x_requires_grad)

    def block(a, scale=1.0):
        return m[:4](a) * scale

    if use_ck:
        kwargs = {} if reentrant else {"scale": 2.0}
        h = _ck(lib).checkpoint(block, x, use_reentrant=reentrant, **kwargs)
        if reentrant:
            h = h * 2.0
    else:
        h = block(x, 2.0)
    out = m[4:](h)
    (out ** 2).sum().backward()
    grads = [p.grad.numpy().copy() if p.grad is not None else None for p in m.parameters()]
    return out.detach().numpy(), grads, (x.grad.numpy() if x.grad is not None else None)


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("x_requires_grad", [True, False])
def test_values_and_gradients_match_torch_and_plain_run(reentrant, x_requires_grad):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # reentrant without grad inputs warns (both libs)
        t = _run(torch, reentrant, x_requires_grad)
        e = _run(eager, reentrant, x_requires_grad)
    plain = _run(eager, reentrant, x_requires_grad, use_ck=False)
    np.testing.assert_allclose(e[0], t[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e[0], plain[0], rtol=1e-6, atol=1e-7)
    for ge, gt in zip(e[1], t[1]):
        assert (ge is None) == (gt is None)
        if ge is not None:
            np.testing.assert_allclose(ge, gt, rtol=1e-4, atol=1e-6)
    if not (reentrant and not x_requires_grad):  # (torch's reentrant variant drops them)
        for ge, gp in zip(e[1], plain[1]):
            np.testing.assert_allclose(ge, gp, rtol=1e-5, atol=1e-7)
    assert (e[2] is None) == (t[2] is None)
    if e[2] is not None:
        np.testing.assert_allclose(e[2], t[2], rtol=1e-4, atol=1e-6)


def test_dropout_recomputes_the_same_mask():
    m = _model(eager)
    x = eager.tensor(X, requires_grad=True)

    def block(a):
        return eager.nn.functional.dropout(m(a), 0.5, training=True)

    eager.manual_seed(7)
    y = eager.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
    (y * y).sum().backward()
    gx, gw = x.grad.numpy().copy(), m[0].weight.grad.numpy().copy()
    x.grad = None
    for p in m.parameters():
        p.grad = None
    eager.manual_seed(7)
    y2 = block(x)
    (y2 * y2).sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), y2.detach().numpy())
    np.testing.assert_allclose(gx, x.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(gw, m[0].weight.grad.numpy(), rtol=1e-6)
    # preserve_rng_state=False recomputes with a new mask: gradients differ
    eager.manual_seed(7)
    x.grad = None
    y3 = eager.utils.checkpoint.checkpoint(block, x, use_reentrant=False,
                                           preserve_rng_state=False)
    (y3 * y3).sum().backward()
    assert not np.allclose(gx, x.grad.numpy())


def test_tuple_outputs_and_non_tensor_arguments():
    for lib in (torch, eager):
        w = lib.tensor(X.T[:, :4].copy(), requires_grad=True)

        def f(a, k, flag, w=w):
            y = a @ w
            return (y * k, y.sum(), "tag") if flag else y

        a = lib.tensor(X, requires_grad=True)
        y, s, tag = lib.utils.checkpoint.checkpoint(f, a, 3.0, True, use_reentrant=False)
        assert tag == "tag"
        (y.sum() + s * 2).backward()
        if lib is torch:
            want = (a.grad.numpy(), w.grad.numpy())
        else:
            np.testing.assert_allclose(a.grad.numpy(), want[0], rtol=1e-5)
            np.testing.assert_allclose(w.grad.numpy(), want[1], rtol=1e-5)


@pytest.mark.parametrize("reentrant", [False, True])
@pytest.mark.parametrize("segments", [1, 2, 3])
def test_checkpoint_sequential(reentrant, segments):
    res = {}
    for lib in (torch, eager):
        m = _model(lib, n=3)
        x = lib.tensor(X, requires_grad=True)
        out = lib.utils.checkpoint.checkpoint_sequential(m, segments, x,
                                                         use_reentrant=reentrant)
        out.sum().backward()
        res[lib.__name__] = (out.detach().numpy(), x.grad.numpy(),
                             [p.grad.numpy() for p in m.parameters()])
    t, e = res["torch"], res["eager"]
    np.testing.assert_allclose(e[0], t[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(e[1], t[1], rtol=1e-4, atol=1e-6)
    for a, b in zip(e[2], t[2]):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_no_grad_runs_plainly():
    m = _model(eager)
    with eager.no_grad():
        y = eager.utils.checkpoint.checkpoint(m, eager.tensor(X), use_reentrant=False)
    assert not y.requires_grad
    np.testing.assert_allclose(y.numpy(), m(eager.tensor(X)).detach().numpy(), rtol=1e-6)


def test_warnings_and_errors_as_torch():
    for lib in (torch, eager):
        m = _model(lib)
        x = lib.tensor(X, requires_grad=True)
        with pytest.warns(UserWarning, match="use_reentrant parameter should be passed"):
            lib.utils.checkpoint.checkpoint(m, x)
        with pytest.raises(ValueError, match="Unexpected keyword arguments"):
            lib.utils.checkpoint.checkpoint(lambda a, b=1: a, x, use_reentrant=True, b=2)
        with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
            lib.utils.checkpoint.checkpoint(m, lib.tensor(X), use_reentrant=True)


def test_intermediates_are_not_kept():
    """Only the region's node holds the inputs; the forward's own graph is dropped."""
    m = _model(eager)
    x = eager.tensor(X, requires_grad=True)
    y = eager.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
    node = y.grad_fn
    assert node.name() == "_RecomputeBackward"
    nxt = [n for n, _ in node.next_functions if n is not None]
    assert len(nxt) == 1 + len(list(m.parameters()))  # x and the 6 parameters, as leaves
    assert all(type(n).__name__ == "AccumulateGrad" for n in nxt)


@pytest.mark.parametrize("reentrant", [False, True])
def test_recompute_runs_under_the_forwards_autocast_region(reentrant):
    res = {}
    for lib in (torch, eager):
        m = _model(lib)
        x = lib.tensor(X, requires_grad=True)
        with lib.autocast("cpu", dtype=lib.bfloat16):
            y = lib.utils.checkpoint.checkpoint(m, x, use_reentrant=reentrant)
        assert str(y.dtype).endswith("bfloat16")
        y.float().sum().backward()  # outside the region, as the AMP recipe has it
        res[lib.__name__] = (x.grad.numpy(), m[0].weight.grad.numpy())
    for a, b in zip(res["eager"], res["torch"]):
        assert a.dtype == b.dtype == np.float32
        np.testing.assert_allclose(a, b, rtol=5e-2, atol=5e-2)
