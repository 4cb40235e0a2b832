"""nn.LSTM / GRU / RNN through their whole-sequence layer ops (`ir/ops/rnn.py`) as users call
them: multi-layer, bidirectional, batch_first modules; parameter and input gradients by
central finite differences in float64 (independent of the BPTT kernels and of PyTorch); a
compiled model calling the module captures one graph with the layer ops as nodes and gives
eager's loss and gradients; the per-step path (proj_size) and the fused path agree where both
apply. Module-level comparisons with PyTorch are tests/test_nn_rnn.py's, the ops' own
(every output part, gradcheck) tests/test_nn_rnn_fused.py's."""

import numpy as np
import pytest

import capture
import eager

nn = eager.nn
KINDS = [("LSTM", {}), ("GRU", {}), ("RNN", {"nonlinearity": "relu"})]
IDS = ["lstm", "gru", "rnn_relu"]


def _module(kind, kw, dtype=eager.float32, **cfg):
    eager.manual_seed(0)
    return getattr(nn, kind)(3, 4, num_layers=2, bidirectional=True, batch_first=True,
                             dtype=dtype, **kw, **cfg)


def _loss(m, x, weights):
    """A scalar that reads every output and final state with distinct weights."""
    out, final = m(x)
    states = final if isinstance(final, tuple) else (final,)
    total = (out * weights[0]).sum()
    for s, w in zip(states, weights[1:]):
        total = total + (s * w).sum()
    return total


def _weights(m, x, seed=1):
    rng = np.random.default_rng(seed)
    with eager.no_grad():
        out, final = m(x)
    states = final if isinstance(final, tuple) else (final,)
    return [eager.tensor(rng.standard_normal(tuple(t.shape)), dtype=t.dtype)
            for t in (out, *states)]


@pytest.mark.parametrize("kind,kw", KINDS, ids=IDS)
def test_gradients_match_finite_differences_float64(kind, kw):
    m = _module(kind, kw, dtype=eager.float64)
    rng = np.random.default_rng(2)
    x = eager.tensor(rng.standard_normal((2, 4, 3)), requires_grad=True)
    ws = _weights(m, x)
    _loss(m, x, ws).backward()
    params = [x] + list(m.parameters())
    grads = [p.grad.numpy().copy() for p in params]
    eps = 1e-6
    for p, g in zip(params, grads):
        flat = p.data.numpy().reshape(-1)  # a view: writes reach the module
        for j in rng.choice(flat.size, size=min(6, flat.size), replace=False):
            old = flat[j]
            with eager.no_grad():
                flat[j] = old + eps
                up = float(_loss(m, x, ws))
                flat[j] = old - eps
                down = float(_loss(m, x, ws))
                flat[j] = old
            fd = (up - down) / (2 * eps)
            assert abs(fd - g.reshape(-1)[j]) <= 1e-6 * max(1.0, abs(fd)), (kind, j, fd)


@pytest.mark.parametrize("kind,kw", KINDS, ids=IDS)
def test_compiled_model_keeps_layer_ops_and_matches_eager(kind, kw):
    m = _module(kind, kw)
    head = nn.Linear(8, 2)
    x = eager.randn(2, 5, 3)

    def f(x):
        out, _ = m(x)
        return head(out).square().mean()

    op = {"LSTM": "_lstm_layer", "GRU": "_gru_layer", "RNN": "_rnn_layer"}[kind]
    report = capture.explain(f)(x)
    assert report.graph_count == 1 and report.graph_break_count == 0
    assert report.ops_per_graph[0].count(op) == 4  # 2 layers x 2 directions
    params = list(m.parameters()) + list(head.parameters())
    want = f(x)
    want.backward()
    want_grads = [p.grad.numpy().copy() for p in params]
    for p in params:
        p.grad = None
    got = capture.compile(f)(x)
    got.backward()
    np.testing.assert_allclose(float(got), float(want), rtol=1e-6)
    for p, g in zip(params, want_grads):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-5, atol=1e-7)


def test_fused_and_per_step_paths_agree():
    """A PackedSequence of full-length rows takes the per-step path: same values and
    gradients as the fused path on the plain tensor."""
    m = _module("LSTM", {}, dtype=eager.float64)
    rng = np.random.default_rng(3)
    data = rng.standard_normal((2, 4, 3))
    results = []
    for packed in (False, True):
        x = eager.tensor(data, requires_grad=True)
        inp = nn.utils.rnn.pack_padded_sequence(x, [4, 4], batch_first=True) if packed else x
        out, (h, c) = m(inp)
        if packed:
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        (out.sin().sum() + h.cos().sum() + (c * c).sum()).backward()
        results.append([out.detach().numpy(), h.detach().numpy(), c.detach().numpy(),
                        x.grad.numpy()] + [p.grad.numpy().copy() for p in m.parameters()])
        m.zero_grad()
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
