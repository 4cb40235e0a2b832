"""`torch.func.functional_call` under capture: the module's call is inlined with the given
parameters and buffers in place of its own (capture/functional_call.py). Each case is compared
with eager (values, gradients to the given tensors, the module left untouched) and its counts
with torch._dynamo.explain's where torch is installed (torch.compile: 1 graph, 0 breaks)."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def _mlp(lib):
    lib.manual_seed(0)
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 8), nn.LayerNorm(8), nn.ReLU(), nn.Linear(8, 2))


def _ensemble_loss(lib, model):
    """Model ensembling / MAML style: the same module called with two sets of weights."""
    def f(x, p1, p2):
        a = lib.func.functional_call(model, p1, (x,))
        b = lib.func.functional_call(model, (p2,), x)  # (a sequence of dicts; one argument)
        return (a - b).pow(2).mean() + a.sum() * 0.1
    return f


def test_values_and_gradients_equal_eager_and_the_module_is_untouched():
    model = _mlp(eager)
    own = {k: v.detach().clone() for k, v in model.state_dict().items()}
    f = _ensemble_loss(eager, model)
    cf = capture.compile(f)
    x = eager.randn(3, 4)
    for scale in (0.5, 1.5, -2.0):  # new dicts each call: one entry serves them all
        base = {k: v.detach() * scale for k, v in model.named_parameters()}
        got_p = [{k: v.clone().requires_grad_() for k, v in base.items()} for _ in range(2)]
        want_p = [{k: v.clone().requires_grad_() for k, v in base.items()} for _ in range(2)]
        with eager.no_grad():
            for k in base:
                got_p[1][k] += 0.25
                want_p[1][k] += 0.25
        got, want = cf(x, *got_p), f(x, *want_p)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        got.backward()
        want.backward()
        for gp, wp in zip(got_p, want_p):
            for k in base:
                np.testing.assert_allclose(gp[k].grad.numpy(), wp[k].grad.numpy(), rtol=1e-5,
                                           atol=1e-7)
    for k, v in model.state_dict().items():
        assert np.array_equal(v.numpy(), own[k].numpy())
    assert all(p.grad is None for p in model.parameters())
    e = capture.explain(f)(x, got_p[0], got_p[1])
    assert (e.graph_count, e.graph_break_count, e.break_reasons) == (1, 0, [])
    assert len(cf.__wick_compiled__.entries) == 1  # new dicts of the same layout: one entry


def test_buffers_ties_and_a_partial_dict():
    eager.manual_seed(1)
    nn = eager.nn

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(10, 6)
            self.norm = nn.BatchNorm1d(6)
            self.head = nn.Linear(6, 10, bias=False)
            self.head.weight = self.emb.weight  # tied

        def forward(self, idx):
            return self.head(self.norm(self.emb(idx)))

    model = Tied().eval()
    w = eager.randn(10, 6)
    stats = {"norm.running_mean": eager.randn(6), "norm.running_var": eager.rand(6) + 0.5}

    def f(idx, w, stats):
        return eager.func.functional_call(model, ({"emb.weight": w}, stats), (idx,))

    idx = eager.tensor([1, 4, 7])
    got, want = capture.compile(f)(idx, w, stats), f(idx, w, stats)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    own = model(idx)
    assert not np.allclose(own.detach().numpy(), want.detach().numpy())  # (the swap mattered)
    e = capture.explain(f)(idx, w, stats)
    assert (e.graph_count, e.graph_break_count) == (1, 0)


def test_a_break_inside_runs_the_call_as_eager_does():
    nn = eager.nn

    class Branchy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 3)

        def forward(self, x):
            if self.lin.weight.sum().item() > 0:  # data-dependent: a break
                return self.lin(x)
            return -self.lin(x)

    model = Branchy()

    def f(x, p):
        return eager.func.functional_call(model, p, (x,)) * 2

    x = eager.randn(2, 3)
    for sign in (1.0, -1.0):
        p = {"lin.weight": eager.ones(3, 3) * sign, "lin.bias": eager.zeros(3)}
        got, want = capture.compile(f)(x, p), f(x, p)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert float(model.lin.weight.sum()) != 9.0  # the module kept its own weights


def test_counts_equal_torch_dynamo():
    torch = pytest.importorskip("torch")
    import torch._dynamo as dynamo

    model_t = _mlp(torch)
    f_t = _ensemble_loss(torch, model_t)
    x = torch.randn(3, 4)
    p = {k: v.detach() for k, v in model_t.named_parameters()}
    dynamo.reset()
    te = dynamo.explain(f_t)(x, p, p)
    model = _mlp(eager)
    f = _ensemble_loss(eager, model)
    pe = {k: v.detach() for k, v in model.named_parameters()}
    we = capture.explain(f)(eager.randn(3, 4), pe, pe)
    assert (we.graph_count, we.graph_break_count) == (te.graph_count, te.graph_break_count)
