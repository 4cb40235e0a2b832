"""In-place writes into graph inputs whose new value requires grad (issue 14 item 3): a KV-cache
write `cache[:, :, pos] = k` where `k` comes from a Linear and the cache is a buffer or an
argument that does not require grad, and an in-place op on a non-leaf input. Compiled
(backends "eager": the graph through eager autograd, "llvm": the AOT bridge) and eager runs on
copies of the same inputs must agree on results, on the mutated tensor afterwards (values,
`requires_grad`, `is_leaf`, version) and on the gradients of a backward that goes through the
mutated tensor, over several calls (the cache's history chains through the calls). A leaf
requiring grad mutated with grad on stays a break (eager raises).
"""

import numpy as np
import pytest

import capture
import eager
from eager import nn

BACKENDS = ["eager", "llvm"]


def _t(a, rg=False):
    return eager.tensor(np.array(a, dtype=np.float32), requires_grad=rg)


def _np(v):
    return v.detach().numpy()


class Layer(nn.Module):
    def __init__(self, d=8, tmax=6):
        super().__init__()
        self.k = nn.Linear(d, d)
        self.register_buffer("cache", eager.zeros(1, tmax, d))

    def forward(self, x, pos: int):
        k = self.k(x)
        self.cache[:, pos:pos + 1] = k
        keys = self.cache[:, :pos + 1]
        att = (x @ keys.transpose(-2, -1)).softmax(-1)
        return att @ keys


def _pair():
    eager.manual_seed(0)
    a = Layer()
    eager.manual_seed(0)
    b = Layer()
    return a, b


def _assert_same_state(a, b):
    assert a.cache.requires_grad == b.cache.requires_grad
    assert a.cache.is_leaf == b.cache.is_leaf
    np.testing.assert_allclose(_np(b.cache), _np(a.cache), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", BACKENDS)
def test_kv_cache_buffer_write_then_backward_through_the_cache(backend):
    ref, mod = _pair()
    cm = capture.compile(mod, backend=backend)
    x = np.random.default_rng(0).standard_normal((3, 1, 1, 8)).astype(np.float32)
    outs_r, outs_c = [], []
    for pos in range(3):
        outs_r.append(ref(_t(x[pos]), pos))
        outs_c.append(cm(_t(x[pos]), pos))
        np.testing.assert_allclose(_np(outs_c[-1]), _np(outs_r[-1]), rtol=1e-5, atol=1e-6)
        _assert_same_state(ref, mod)
        assert mod.cache._version > 0
    # the loss reads the last output and the cache itself (earlier outputs saved views of the
    # cache that later writes made stale, in eager as in torch): gradients reach k's Linear
    # through every call's write
    w = _t(np.arange(48).reshape(1, 6, 8) / 48.0)
    loss_r = outs_r[-1].sum() + (ref.cache * w).sum()
    loss_c = outs_c[-1].sum() + (mod.cache * w).sum()
    loss_r.backward()
    loss_c.backward()
    for (n, p), (_, q) in zip(ref.named_parameters(), mod.named_parameters()):
        np.testing.assert_allclose(_np(q.grad), _np(p.grad), rtol=1e-4, atol=1e-5, err_msg=n)
    report = capture.explain(_pair()[0], backend=backend)(_t(x[0]), 0)
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)


def write_into_argument(cache, k, w):
    cache[:, 1:3] = k * w
    return (cache * 2).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_write_into_argument_cache_gets_history(backend):
    cf = capture.compile(write_into_argument, backend=backend)
    for _ in range(2):
        kv = np.arange(8, dtype=np.float32).reshape(4, 2)
        c_r, c_c = _t(np.zeros((4, 5))), _t(np.zeros((4, 5)))
        w_r, w_c = _t(kv, rg=True), _t(kv, rg=True)
        out_r = write_into_argument(c_r, _t(kv + 1), w_r)
        out_c = cf(c_c, _t(kv + 1), w_c)
        np.testing.assert_allclose(_np(out_c), _np(out_r))
        assert c_c.requires_grad and not c_c.is_leaf and c_r.requires_grad
        (c_r.sum() * 3 + out_r).backward()
        (c_c.sum() * 3 + out_c).backward()
        np.testing.assert_allclose(_np(w_c.grad), _np(w_r.grad))
    report = capture.explain(write_into_argument, backend=backend)(
        _t(np.zeros((4, 5))), _t(np.ones((4, 2))), _t(np.ones((4, 2)), rg=True))
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)


def mul_non_leaf(x, y):
    x.mul_(y)  # x's old value is needed for y's gradient: the graph keeps a copy
    return x.sum() + y.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_in_place_on_a_non_leaf_input(backend):
    cf = capture.compile(mul_non_leaf, backend=backend)
    for _ in range(2):
        grads = []
        for f in (mul_non_leaf, cf):
            a, b = _t([1.0, 2.0, 3.0], rg=True), _t([4.0, 5.0, 6.0], rg=True)
            x = a * 2
            out = f(x, b)
            assert x.requires_grad and not x.is_leaf and x._version == 1
            (out + (x * x).sum()).backward()
            grads.append((_np(out), _np(x), _np(a.grad), _np(b.grad)))
        for got, want in zip(grads[1], grads[0]):
            np.testing.assert_allclose(got, want)
    report = capture.explain(mul_non_leaf, backend=backend)(
        _t([1.0, 2.0], rg=True) * 2, _t([1.0, 2.0], rg=True))
    assert (report.graph_count, report.graph_break_count) == (1, 0), str(report)


def add_leaf(x):
    x.add_(1)
    return x


def test_leaf_requiring_grad_mutated_raises_as_eager():
    cf = capture.compile(add_leaf)
    with pytest.raises(RuntimeError):
        add_leaf(_t([1.0], rg=True))
    with pytest.raises(RuntimeError):
        cf(_t([1.0], rg=True))
    with eager.no_grad():  # (no history is recorded: captured, the leaf updated)
        x = _t([1.0], rg=True)
        cf(x)
    np.testing.assert_allclose(_np(x), [2.0])


def test_torch_counts():
    torch = pytest.importorskip("torch")
    import torch._dynamo as dynamo

    def twrite(cache, k, w):
        cache[:, 1:3] = k * w
        return (cache * 2).sum()

    dynamo.reset()
    e = dynamo.explain(twrite)(torch.zeros(4, 5), torch.ones(4, 2),
                               torch.ones(4, 2, requires_grad=True))
    assert (e.graph_count, e.graph_break_count) == (1, 0)

    def tmul(x, y):
        x.mul_(y)
        return x.sum() + y.sum()

    dynamo.reset()
    a = torch.ones(2, requires_grad=True)
    e = dynamo.explain(tmul)(a * 2, torch.ones(2, requires_grad=True))
    assert (e.graph_count, e.graph_break_count) == (1, 0)


def test_batchnorm_training_runs_on_the_aot_bridge():
    """BatchNorm in training mode updates its running statistics under no_grad inside the
    graph: those ops end gradient paths (as eager records no history for them), so the graph
    runs on the compiled forward/backward pair, not through eager autograd; gradients and
    running statistics equal eager's."""
    def build():
        eager.manual_seed(0)
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(),
                             nn.Flatten(), nn.Linear(4 * 6 * 6, 3)).train()

    ref, mod = build(), build()
    cm = capture.compile(mod, backend="llvm")
    x = np.random.default_rng(3).standard_normal((2, 5, 1, 6, 6)).astype(np.float32)
    for i in range(2):
        (ref(_t(x[i])) ** 2).sum().backward()
        (cm(_t(x[i])) ** 2).sum().backward()
    for (n, a), (_, b) in zip(ref.named_parameters(), mod.named_parameters()):
        np.testing.assert_allclose(_np(b.grad), _np(a.grad), rtol=1e-4, atol=1e-5, err_msg=n)
    for (n, a), (_, b) in zip(ref.named_buffers(), mod.named_buffers()):
        np.testing.assert_allclose(_np(b), _np(a), rtol=1e-5, atol=1e-6, err_msg=n)
    entries = cm.__wick_compiled__.entries
    assert len(entries) == 1 and entries[0].runner.aot is not None
    assert entries[0].runner.aot.plans  # (the compiled backward ran)


def add_then_read(x, v):
    x.add_(1)
    return v * 2


def test_disjointness_guard_catches_a_view_beside_its_base():
    """Compiled on two separate tensors, then called with a view of the mutated tensor as the
    second argument: the one-term disjointness guard (owners compared) must fail, and the call
    gives eager's result (the view sees the write)."""
    cf = capture.compile(add_then_read)
    a, b = _t(np.zeros((2, 3))), _t(np.ones(3))
    np.testing.assert_allclose(_np(cf(a, b)), [2, 2, 2])
    for make_v in (lambda x: x[1], lambda x: x[:, 0][:2].view(2)):
        x_r, x_c = _t(np.zeros((2, 3))), _t(np.zeros((2, 3)))
        want, got = add_then_read(x_r, make_v(x_r)), cf(x_c, make_v(x_c))
        np.testing.assert_allclose(_np(got), _np(want))
        np.testing.assert_allclose(_np(x_c), _np(x_r))
