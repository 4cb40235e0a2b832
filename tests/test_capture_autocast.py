"""Autocast regions under `capture.compile` (issue 16 item 5, `capture/autocast.py`): a
`with eager.autocast(...)` region inside a compiled function, and a compiled function called
inside a region, are captured as graphs whose casts are nodes; values and dtypes equal eager
autocast's (and torch's dtypes where torch is installed), one graph and no break for a region
of ops, gradients through the casts equal eager's, the state at call time is guarded, and a
break inside a region leaves the thread's state as eager does. Runs on 3.11, 3.12 and 3.13.
"""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from eager import nn
from eager.nn import functional as F

RNG = np.random.default_rng(0)
X = RNG.standard_normal((4, 8)).astype(np.float32)
W = RNG.standard_normal((8, 8)).astype(np.float32)


def _tol(dtype) -> float:
    return {eager.float32: 1e-5, eager.float16: 2e-3}.get(dtype, 1e-2)


def _state():
    return (eager.is_autocast_enabled("cpu"), eager.get_autocast_dtype("cpu"),
            eager.is_autocast_enabled("cuda"))


def _same(got, want) -> None:
    assert type(got) is type(want)
    if isinstance(want, (tuple, list)):
        assert len(got) == len(want)
        for a, b in zip(got, want):
            _same(a, b)
    elif isinstance(want, eager.Tensor):
        assert got.dtype is want.dtype
        np.testing.assert_allclose(got.detach().float().numpy(), want.detach().float().numpy(),
                                   rtol=_tol(want.dtype), atol=_tol(want.dtype))
    else:
        assert got == want


def _check(fn, *args, calls: int = 3):
    """fn compiled gives eager's results (3 calls: capture, then the cache), with the thread's
    autocast state after each call as eagerly; returns explain's report."""
    state = _state()
    want = fn(*args)
    assert _state() == state
    cf = capture.compile(fn)
    for _ in range(calls):
        _same(cf(*args), want)
        assert _state() == state
    return capture.explain(fn)(*args)


def _counts(report) -> tuple:
    return report.graph_count, report.graph_break_count


# ---------------------------------------------------------------- regions of ops


def test_region_of_ops_is_one_graph_with_cast_nodes():
    w = eager.tensor(W)

    def f(x):
        y = x * 2
        with eager.autocast("cpu", dtype=eager.bfloat16):
            z = y @ w
            s = (z.relu() + 1).softmax(-1)
            t = eager.cat([z, x])  # widest input dtype: float32
        return z, s, t, (z.float() + 1).sum()

    report = _check(f, eager.tensor(X))
    assert _counts(report) == (1, 0)
    ops = [n.target.name for g in report.graphs for n in g.nodes if n.op == "call_function"]
    assert ops.count("cast") >= 3  # y and w to bfloat16, z back to float32 for cat


def test_nested_disabled_and_float16_regions_and_state_queries():
    w = eager.tensor(W)

    def f(x):
        with eager.autocast("cpu"):
            a = x @ w
            with eager.autocast("cpu", enabled=False):
                b = x @ w
                with eager.autocast("cpu", dtype=eager.float16):
                    c = x @ w
                    on, dt = eager.is_autocast_enabled("cpu"), eager.get_autocast_dtype("cpu")
                off = eager.is_autocast_enabled("cpu")
                d = a @ w  # mixed bfloat16 @ float32 outside autocast: eager's promotion
            e = a.float() @ w
        return a, b, c, d, e, on, dt, off, x @ w

    report = _check(f, eager.tensor(X))
    assert _counts(report) == (1, 0)
    got = capture.compile(f)(eager.tensor(X))
    assert [t.dtype for t in got[:5]] == [eager.bfloat16, eager.float32, eager.float16,
                                          eager.float32, eager.bfloat16]
    assert got[5:8] == (True, eager.float16, False) and got[8].dtype is eager.float32


def test_policy_lists_losses_and_einsum_in_a_region():
    """float32 losses (Python-level `autocast_function`s), promotion (cat, stack), einsum's
    emulated low precision: eager's dtypes and values, one graph."""
    w = eager.tensor(W)

    def f(x):
        with eager.autocast("cpu"):
            r = x @ w
            loss = F.mse_loss(r, x) + F.l1_loss(r, x)
            c = eager.cat([x, r])
            s = eager.stack([r, r.float()])
            e = eager.einsum("ij,jk->ik", x, w)
            p = F.log_softmax(r, -1)
        return r, loss, c, s, e, p

    report = _check(f, eager.tensor(X))
    assert _counts(report) == (1, 0)
    got = capture.compile(f)(eager.tensor(X))
    assert [t.dtype for t in got] == [eager.bfloat16, eager.float32, eager.float32,
                                      eager.float32, eager.bfloat16, eager.bfloat16]


def test_dtypes_match_torch():
    torch = pytest.importorskip("torch")

    def program(lib, compile_fn):
        w = lib.tensor(W)
        lin = lib.nn.Linear(8, 8)

        def f(x, y):
            with lib.autocast("cpu", dtype=lib.bfloat16):
                h = lin(x).relu()
                z = h @ w
                loss = lib.nn.functional.cross_entropy(z, y)
                c = lib.cat([z, x])
                e = lib.exp(z)
            return h, z, loss, c, e

        return compile_fn(f)(lib.tensor(X), lib.tensor([0, 1, 2, 3]))

    ours = program(eager, capture.compile)
    theirs = program(torch, lambda f: f)
    assert [str(t.dtype).split(".")[-1] for t in ours] == \
        [str(t.dtype).split(".")[-1] for t in theirs]


# ---------------------------------------------------------------- called inside a region


def test_compiled_function_called_inside_a_region_is_guarded_on_the_state():
    torch_mlp = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    cf = capture.compile(lambda x: torch_mlp(x).relu().sum(-1))
    x = eager.tensor(X)
    with eager.autocast("cpu"):
        inside = cf(x)
        want = torch_mlp(x).relu().sum(-1)
        again = cf(x)
    with eager.autocast("cpu", dtype=eager.float16):
        half = cf(x)
        want_half = torch_mlp(x).relu().sum(-1)
    outside = cf(x)
    _same(inside, want)
    _same(again, want)
    _same(half, want_half)
    assert inside.dtype is eager.bfloat16 and half.dtype is eager.float16
    assert outside.dtype is eager.float32
    with eager.autocast("cpu"):
        report = capture.explain(lambda x: torch_mlp(x).relu().sum(-1))(x)
    assert _counts(report) == (1, 0)
    assert "cast" in [n.target.name for n in report.graphs[0].nodes if n.op == "call_function"]


# ---------------------------------------------------------------- decorator, objects


def test_decorator_form_and_a_region_object_from_globals():
    w = eager.tensor(W)

    @eager.autocast("cpu")
    def inner(x):
        return (x @ w).sigmoid(), eager.is_autocast_enabled("cpu")

    def outer(x):
        return inner(x), x @ w

    region = eager.autocast("cpu", dtype=eager.float16)

    def with_object(x):
        with region:
            r = x @ w
        return r, F.mse_loss(r.float(), x)

    for fn in (inner, outer, with_object):
        assert _counts(_check(fn, eager.tensor(X))) == (1, 0)
    assert capture.compile(inner)(eager.tensor(X))[0].dtype is eager.bfloat16


# ---------------------------------------------------------------- breaks inside a region


def test_a_break_inside_a_region_runs_under_the_region_and_costs_one_break(capsys):
    w = eager.tensor(W)

    def f(x):
        with eager.autocast("cpu"):
            a = (x @ w).relu()
            print("inside", eager.is_autocast_enabled("cpu"))
            b = a @ w + 1
        return a, b, x @ w

    report = _check(f, eager.tensor(X))
    assert _counts(report) == (2, 1)
    assert "inside True" in capsys.readouterr().out


def test_breaks_in_nested_regions_branches_and_exceptions(capsys):
    w = eager.tensor(W)

    def nested(x):
        y = x @ w
        with eager.autocast("cpu"):
            a = (y @ w).relu()
            capture.graph_break()
            b = a @ w + 1
            with eager.autocast("cpu", enabled=False):
                capture.graph_break()
                c = b @ w
            d = c @ w
        return a, b, c, d, x @ w

    def branch(x):
        with eager.autocast("cpu"):
            r = x @ w
            r = r * 2 if r.sum() > 0 else r - 1
            r = r @ w
        return r, x @ w

    def raises(x):
        try:
            with eager.autocast("cpu"):
                r = x @ w
                print("before the raise")
                raise ValueError("boom")
        except ValueError:
            pass
        return r, x @ w, eager.is_autocast_enabled("cpu")

    assert _counts(_check(nested, eager.tensor(X))) == (3, 2)
    assert _counts(_check(branch, eager.tensor(X))) == (2, 1)
    _check(raises, eager.tensor(X))
    assert "before the raise" in capsys.readouterr().out


# ---------------------------------------------------------------- training


def _model():
    eager.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.LayerNorm(32), nn.Linear(32, 4))


def test_training_step_under_autocast_gives_eager_gradients():
    x, y = eager.tensor(X), eager.tensor([0, 1, 2, 3])
    results = []
    for compiled in (False, True, True):
        model = _model()
        opt = eager.optim.SGD(model.parameters(), lr=0.1)

        def step(x, y, model=model):
            with eager.autocast("cpu", dtype=eager.bfloat16):
                loss = F.cross_entropy(model(x), y)
            return loss

        fn = capture.compile(step) if compiled else step
        losses, grads = [], []
        for _ in range(3):
            opt.zero_grad()
            loss = fn(x, y)
            loss.backward()
            grads.append([p.grad.numpy().copy() for p in model.parameters()])
            losses.append(loss.item())
            opt.step()
        results.append((losses, grads))
        if compiled:
            assert _counts(capture.explain(step)(x, y)) == (1, 0)
    (l0, g0), (l1, g1), _ = results
    np.testing.assert_allclose(l1, l0, rtol=1e-5)
    for a, b in zip(g1, g0):
        for u, v in zip(a, b):
            assert u.dtype == v.dtype == np.float32
            np.testing.assert_allclose(u, v, rtol=1e-2, atol=1e-3)


def test_gradients_through_cast_nodes_match_torch():
    torch = pytest.importorskip("torch")

    def grads(lib, compile_fn):
        w = lib.tensor(W, requires_grad=True)
        x = lib.tensor(X, requires_grad=True)

        def f(x):
            with lib.autocast("cpu", dtype=lib.bfloat16):
                h = (x @ w).tanh()
                return (h @ w).float().pow(2).mean()

        compile_fn(f)(x).backward()
        return x.grad.numpy(), w.grad.numpy()

    for a, b in zip(grads(eager, capture.compile), grads(torch, lambda f: f)):
        np.testing.assert_allclose(a, b, rtol=3e-2, atol=3e-2)


# ---------------------------------------------------------------- dynamic shapes


def test_dynamic_shapes_keep_the_policy():
    """A dynamic entry replays its op tape per shape: the casts of listed ops are on it; a
    composite whose decomposition casts (tensordot -> matmul) keeps the capture static."""
    w = eager.tensor(W)

    def region(x):
        with eager.autocast("cpu"):
            return (x @ w).relu() * 2, F.mse_loss(x @ w, x)

    def composite(x):
        with eager.autocast("cpu"):
            return (eager.tensordot(x, w, dims=1),)

    for fn, dyn in ((region, None), (composite, True)):
        cf = capture.compile(fn, dynamic=dyn)
        for n in (2, 3, 4, 5, 6):
            x = eager.tensor(RNG.standard_normal((n, 8)).astype(np.float32))
            _same(cf(x), fn(x))
    assert len(cf.__wick_compiled__.entries) == 5  # composite: static entries
