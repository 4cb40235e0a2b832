"""The whole-sequence recurrent ops (`ir/ops/rnn.py`: `_lstm_layer`, `_gru_layer`,
`_rnn_layer` and their BPTT backward kernels): every output part (the states and the saved
gates) and every gradient, against PyTorch's LSTM/GRU/RNN on the same weights (float64,
rtol 1e-5) and through gradcheck in float64; half precision computed in float32; shape
errors. The modules' public behaviour is tests/test_nn_rnn.py's."""

import numpy as np
import pytest

import eager
from eager.dispatch import FUNCTIONS

torch = pytest.importorskip("torch")

T, B, I, H = 5, 3, 4, 3
RTOL = {"rtol": 1e-5, "atol": 1e-9}


def _rand(rng, *shape, scale=1.0):
    return rng.standard_normal(shape) * scale


def _weights(rng, k):
    return [_rand(rng, k * H, I, scale=0.5), _rand(rng, k * H, H, scale=0.5),
            _rand(rng, k * H, scale=0.5), _rand(rng, k * H, scale=0.5)]


def _torch_module(kind, ws, reverse, **kw):
    m = getattr(torch.nn, kind)(I, H, bidirectional=reverse, dtype=torch.float64, **kw)
    sfx = "_l0_reverse" if reverse else "_l0"
    with torch.no_grad():
        for name, w in zip(("weight_ih", "weight_hh", "bias_ih", "bias_hh"), ws):
            getattr(m, name + sfx).copy_(torch.tensor(w))
    return m


def _eager_run(kind, x, ws, h0, c0, reverse, nonlinearity="tanh"):
    """The fused op on leaves (x, weights, h0[, c0]); returns (h sequence, h_T, c_T, leaves)."""
    leaves = [eager.tensor(a, requires_grad=True) for a in [x, *ws, h0] +
              ([c0] if c0 is not None else [])]
    ex, wih, whh, bih, bhh, eh = leaves[:6]
    last = 0 if reverse else -1
    if kind == "LSTM":
        gx = FUNCTIONS["linear"](ex, wih, bih + bhh)
        res = FUNCTIONS["_lstm_layer"](gx, eh, leaves[6], whh, reverse=reverse)
        return res[0], res[0][last], res[1][last], leaves, res
    if kind == "GRU":
        gx = FUNCTIONS["linear"](ex, wih, bih)
        res = FUNCTIONS["_gru_layer"](gx, eh, whh, bhh, reverse=reverse)
        return res[0], res[0][last], None, leaves, res
    gx = FUNCTIONS["linear"](ex, wih, bih + bhh)
    res = FUNCTIONS["_rnn_layer"](gx, eh, whh, nonlinearity=nonlinearity, reverse=reverse)
    return res, res[last], None, leaves, res


CASES = [("LSTM", {}), ("GRU", {}), ("RNN", {"nonlinearity": "tanh"}),
         ("RNN", {"nonlinearity": "relu"})]


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kind,kw", CASES, ids=["lstm", "gru", "rnn_tanh", "rnn_relu"])
def test_values_and_gradients_match_torch(kind, kw, reverse):
    rng = np.random.default_rng(7)
    k = {"LSTM": 4, "GRU": 3, "RNN": 1}[kind]
    ws = _weights(rng, k)
    x, h0 = _rand(rng, T, B, I), _rand(rng, B, H, scale=0.5)
    c0 = _rand(rng, B, H, scale=0.5) if kind == "LSTM" else None
    hs, hT, cT, leaves, _ = _eager_run(kind, x, ws, h0, c0, reverse, **kw)
    m = _torch_module(kind, ws, reverse, **kw)
    d = 2 if reverse else 1
    tx = torch.tensor(x, requires_grad=True)
    zero = np.zeros((B, H))
    th0 = torch.tensor(np.stack([zero, h0] if reverse else [h0]), requires_grad=True)
    if kind == "LSTM":
        tc0 = torch.tensor(np.stack([zero, c0] if reverse else [c0]), requires_grad=True)
        tout, (thn, tcn) = m(tx, (th0, tc0))
    else:
        tout, thn = m(tx, th0)
    tout = tout[..., (d - 1) * H:]
    np.testing.assert_allclose(hs.detach().numpy(), tout.detach().numpy(), **RTOL)
    np.testing.assert_allclose(hT.detach().numpy(), thn[d - 1].detach().numpy(), **RTOL)
    # a loss on every output the module gives: the sequence, h_T and c_T
    wo, wh = _rand(rng, T, B, H), _rand(rng, B, H)
    loss = (hs * eager.tensor(wo)).sum() + (hT * eager.tensor(wh)).sum()
    tloss = (tout * torch.tensor(wo)).sum() + (thn[d - 1] * torch.tensor(wh)).sum()
    if kind == "LSTM":
        np.testing.assert_allclose(cT.detach().numpy(), tcn[d - 1].detach().numpy(), **RTOL)
        wc = _rand(rng, B, H)
        loss = loss + (cT * eager.tensor(wc)).sum()
        tloss = tloss + (tcn[d - 1] * torch.tensor(wc)).sum()
    loss.backward()
    tloss.backward()
    sfx = "_l0_reverse" if reverse else "_l0"
    want = [tx.grad] + [getattr(m, n + sfx).grad for n in
                        ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    want.append(th0.grad[d - 1])
    if kind == "LSTM":
        want.append(tc0.grad[d - 1])
    for name, e, t in zip(("x", "w_ih", "w_hh", "b_ih", "b_hh", "h0", "c0"), leaves, want):
        np.testing.assert_allclose(e.grad.numpy(), t.numpy(), err_msg=name, **RTOL)


def _gates_ref(kind, gx, h0, c0, w, b, reverse):
    """Every row of the fused output from the plain formulas (PyTorch's docs)."""
    sig = lambda a: 1 / (1 + np.exp(-a))  # noqa: E731
    order = range(T - 1, -1, -1) if reverse else range(T)
    rows = [[None] * T for _ in range(6 if kind == "LSTM" else 5)]
    h, c = h0, c0
    for t in order:
        if kind == "LSTM":
            a = gx[t] + h @ w.T
            i, f, g, o = (a[:, j * H:(j + 1) * H] for j in range(4))
            i, f, g, o = sig(i), sig(f), np.tanh(g), sig(o)
            c = f * c + i * g
            h = o * np.tanh(c)
            parts = (h, c, i, f, o, g)
        else:
            a = h @ w.T + b
            r = sig(gx[t][:, :H] + a[:, :H])
            z = sig(gx[t][:, H:2 * H] + a[:, H:2 * H])
            n = np.tanh(gx[t][:, 2 * H:] + r * a[:, 2 * H:])
            h = (1 - z) * n + z * h
            parts = (h, r, z, n, a[:, 2 * H:])
        for row, p in zip(rows, parts):
            row[t] = p
    return np.stack([np.stack(r) for r in rows])


@pytest.mark.parametrize("reverse", [False, True], ids=["forward", "reverse"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_saved_gates_and_their_gradients(kind, reverse):
    """The gate rows of the output are values too: their gradient enters BPTT exactly
    (gradcheck with a loss on every row, float64)."""
    rng = np.random.default_rng(3)
    k = 4 if kind == "LSTM" else 3
    gx, h0, c0 = _rand(rng, T, B, k * H), _rand(rng, B, H), _rand(rng, B, H)
    w, b = _rand(rng, k * H, H, scale=0.5), _rand(rng, k * H)
    if kind == "LSTM":
        args = [gx, h0, c0, w]
        fn = lambda *a: FUNCTIONS["_lstm_layer"](*a, reverse=reverse)  # noqa: E731
    else:
        args = [gx, h0, w, b]
        fn = lambda *a: FUNCTIONS["_gru_layer"](*a, reverse=reverse)  # noqa: E731
    got = fn(*[eager.tensor(a) for a in args]).numpy()
    np.testing.assert_allclose(got, _gates_ref(kind, gx, h0, c0, w, b, reverse), rtol=1e-12,
                               atol=1e-13)
    leaves = [eager.tensor(a, requires_grad=True) for a in args]
    assert eager.autograd.gradcheck(fn, leaves)


@pytest.mark.parametrize("name,k,nstate", [("_lstm_layer", 4, 2), ("_gru_layer", 3, 1),
                                           ("_rnn_layer", 1, 1)])
def test_gradcheck_float64(name, k, nstate):
    rng = np.random.default_rng(5)
    args = [_rand(rng, T, B, k * H)] + [_rand(rng, B, H) for _ in range(nstate)]
    args.append(_rand(rng, k * H, H, scale=0.5))
    if name == "_gru_layer":
        args.append(_rand(rng, k * H))
    for reverse in (False, True):
        leaves = [eager.tensor(a, requires_grad=True) for a in args]
        assert eager.autograd.gradcheck(
            lambda *a: FUNCTIONS[name](*a, reverse=reverse), leaves)


def test_half_precision_is_computed_in_float32():
    rng = np.random.default_rng(1)
    gx, h0, c0 = _rand(rng, T, B, 4 * H), _rand(rng, B, H), _rand(rng, B, H)
    w = _rand(rng, 4 * H, H, scale=0.5)
    want = FUNCTIONS["_lstm_layer"](*[eager.tensor(a.astype(np.float32))
                                      for a in (gx, h0, c0, w)])
    got = FUNCTIONS["_lstm_layer"](*[eager.tensor(a.astype(np.float32)).to(eager.bfloat16)
                                     for a in (gx, h0, c0, w)])
    assert got.dtype == eager.bfloat16
    np.testing.assert_allclose(got.float().numpy(), want.numpy(), atol=5e-2)
    grads = []
    for dt in (eager.float32, eager.bfloat16):  # the backward kernel too
        leaves = [eager.tensor(a.astype(np.float32)).to(dt).requires_grad_()
                  for a in (gx, h0, c0, w)]
        FUNCTIONS["_lstm_layer"](*leaves)[0].sum().backward()
        assert all(x.grad.dtype == dt for x in leaves)
        grads.append([x.grad.float().numpy() for x in leaves])
    for a, b in zip(*grads):
        np.testing.assert_allclose(b, a, atol=1e-1, rtol=5e-2)


def test_shape_errors():
    x = eager.zeros(T, B, 4 * H)
    with pytest.raises(RuntimeError, match="shape"):
        FUNCTIONS["_lstm_layer"](x, eager.zeros(B, H + 1), eager.zeros(B, H),
                                 eager.zeros(4 * H, H))
    with pytest.raises(RuntimeError, match="gates"):
        FUNCTIONS["_gru_layer"](eager.zeros(T, B, 4), eager.zeros(B, H),
                                eager.zeros(3 * H, H), eager.zeros(3 * H))
    with pytest.raises(ValueError, match="nonlinearity"):
        FUNCTIONS["_rnn_layer"](eager.zeros(T, B, H), eager.zeros(B, H), eager.zeros(H, H),
                                nonlinearity="gelu")


def test_module_uses_one_op_per_layer_and_direction():
    """nn.LSTM records one `_lstm_layer` node per layer and direction (no per-step graph)."""
    m = eager.nn.LSTM(I, H, num_layers=2, bidirectional=True)
    out, _ = m(eager.randn(T, B, I))
    seen, stack = set(), [out.grad_fn]
    names = []
    while stack:
        fn = stack.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        names.append(type(fn).__name__)
        stack.extend(f for f, _ in fn.next_functions)
    assert names.count("LstmLayerBackward0") == 4, names
