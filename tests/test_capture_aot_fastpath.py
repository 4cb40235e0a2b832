"""The AOT bridge's direct node construction (`capture.aot._apply_direct`) builds exactly the
node `Function.apply` builds: the same edges, saved entries, output metadata and errors (saved
tensors modified in place, a second backward without retain_graph, outputs without a gradient),
and the general path still serves anomaly mode and forward AD."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager
from capture import aot
from eager import autograd
from eager.autograd import forward_ad


def _two_outputs(x, w, idx):
    h = (x @ w).tanh()
    return h.sum(), h * 2, idx + 1, x.exp()


def _inputs(seed=0):
    rng = np.random.default_rng(seed)
    x = eager.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    w = eager.tensor(rng.standard_normal((4, 2)), requires_grad=True)
    idx = eager.tensor(np.arange(3))
    return x, w, idx


def _both_paths(monkeypatch, calls=1):
    """(direct results, general results) of the `calls`-th compiled call on equal inputs (the
    first call builds the node with `_apply_direct`, later hits with the entry's generated
    `direct_function`)."""
    out = []
    for direct in (True, False):
        capture.reset()
        if not direct:
            monkeypatch.setattr(aot, "_apply_direct", lambda plan, inputs:
                                aot._AOT.apply(plan, *inputs))
            monkeypatch.setattr(aot, "direct_function", lambda plan:
                                lambda *inputs: aot._AOT.apply(plan, *inputs))
        c = capture.compile(_two_outputs)
        for _ in range(calls):
            ins = _inputs()
            res = c(*ins)
        out.append((res, ins))
        assert c.__wick_compiled__.entries[0].runner.aot.plans  # the bridge served the call
    return out


def _saved_kind(e):
    """A saved entry's kind, version and output number: a graph temporary that the direct
    path saves as a bare array (`("o", (array, vc, False), 0, 0)`) counts as the Tensor
    `Function.apply` saves for it (the same values reach the backward: `_saved_arrays`)."""
    if e[0] == "o" and e[1][2] is False:
        return ("t", e[2], e[3])
    return (e[0], e[2], e[3])


def _node_state(res, ins):
    fn = res[0].grad_fn
    edges = [(type(n).__name__ if n is not None else None, k) for n, k in fn.next_functions]
    saved = [_saved_kind(e) if e is not None else None for e in fn._saved]
    return (fn.name(), edges, fn.needs_input_grad, [tuple(s) for s, _ in fn._outs],
            fn.num_outputs, fn.out_version, saved, fn.materialize_grads,
            [(r.requires_grad, r.grad_fn is fn, getattr(r._backward_hooks, "output_nr", 0))
             for r in res])


@pytest.mark.parametrize("calls", [1, 3])
def test_direct_node_equals_function_apply(monkeypatch, calls):
    (rd, ind), (rg, ing) = _both_paths(monkeypatch, calls)
    if calls > 1:  # (the hit's generated node builder served the call)
        assert type(rd[0].grad_fn).__name__ == "_AOTNode"
    assert _node_state(rd, ind) == _node_state(rg, ing)
    for a, b in zip(rd, rg):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy())
    (rd[0] + rd[1].sum() + rd[3].sum()).backward()
    (rg[0] + rg[1].sum() + rg[3].sum()).backward()
    for a, b in zip(ind[:2], ing[:2]):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())


def _eager_errors(fn):
    """The error (type, message) or None of `fn` run on eager's and on the compiled call."""
    out = []
    for f in (_two_outputs, capture.compile(_two_outputs)):
        ins = _inputs()
        try:
            fn(f(*ins), ins)
            out.append(None)
        except RuntimeError as e:
            out.append(str(e)[:60])
    return out


def test_saved_input_modified_in_place_raises_as_eager():
    def use(res, ins):
        with eager.no_grad():
            ins[1].mul_(2)
        res[0].backward()

    capture.reset()
    got = _eager_errors(use)
    assert got[0] is not None and got[0] == got[1]


def test_second_backward_without_retain_graph_raises_as_eager():
    def use(res, ins):
        res[0].backward()
        res[0].backward()

    capture.reset()
    got = _eager_errors(use)
    assert got[0] is not None and got[0] == got[1]


def test_retain_graph_and_unused_outputs_as_eager():
    capture.reset()
    c = capture.compile(_two_outputs)
    ins, ref = _inputs(), _inputs()
    r, e = c(*ins), _two_outputs(*ref)
    assert r[2].requires_grad is e[2].requires_grad is False
    r[1].sum().backward(retain_graph=True)
    e[1].sum().backward(retain_graph=True)
    r[1].sum().backward()
    e[1].sum().backward()
    for a, b in zip(ins[:2], ref[:2]):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy())
    gx = autograd.grad(c(*ins)[3].sum(), [ins[0], ins[1]], allow_unused=True)
    ge = autograd.grad(_two_outputs(*ref)[3].sum(), [ref[0], ref[1]], allow_unused=True)
    assert (gx[1] is None) == (ge[1] is None) and gx[1] is None
    np.testing.assert_allclose(gx[0].numpy(), ge[0].numpy())


@pytest.mark.parametrize("mode", ["anomaly", "forward_ad"])
def test_general_path_serves_anomaly_and_forward_ad(monkeypatch, mode):
    capture.reset()
    c = capture.compile(_two_outputs)
    c(*_inputs())
    calls = []
    real = aot._AOT.apply
    monkeypatch.setattr(aot._AOT, "apply", lambda *a: calls.append(1) or real(*a))
    ins, ref = _inputs(), _inputs()
    if mode == "anomaly":
        with autograd.detect_anomaly():
            r = c(*ins)
            r[0].backward()
        _two_outputs(*ref)[0].backward()
        np.testing.assert_allclose(ins[1].grad.numpy(), ref[1].grad.numpy())
    else:
        with forward_ad.dual_level():
            r = c(*ins)
        np.testing.assert_allclose(r[0].detach().numpy(), _two_outputs(*ref)[0].detach().numpy())
    assert calls, "the general Function.apply path was not taken"


def test_direct_path_after_inference_mode_runs_its_check():
    """Once inference mode was used in the process its saved-tensor check stays on: hits keep
    the generated node builder and run the check, raising as eager for an inference input;
    and a graph whose outputs are differentiated one at a time (a GAN step) keeps its saved
    values on the general `Function.apply` path too (anomaly mode)."""
    import eager
    from eager import autograd

    with eager.inference_mode():
        frozen = eager.ones(3)
    c = capture.compile(lambda w, x: (w * x).sum())
    w = eager.ones(3, requires_grad=True)
    for _ in range(3):
        out = c(w, eager.full((3,), 2.0))
    assert type(out.grad_fn).__name__ == "_AOTNode"
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        (w * frozen).sum()
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved"):
        c(w, frozen)

    def two(w, x):
        h = w * x
        return (h * 3.0).sum(), h.exp().sum()

    g = capture.compile(two)
    with autograd.detect_anomaly():
        for _ in range(2):
            w.grad = None
            a, b = g(w, eager.full((3,), 0.5))
            a.backward()
            b.backward()  # the second output's path survives the first pass
            np.testing.assert_allclose(w.grad.numpy(), 1.5 + 0.5 * np.exp(0.5 * np.ones(3)),
                                       rtol=1e-6)
