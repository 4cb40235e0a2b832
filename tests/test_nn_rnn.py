"""nn.RNN / LSTM / GRU, their cells and nn.utils.rnn (eager/nn/rnn.py, rnn_cells.py,
rnn_utils.py) against PyTorch: the same weights copied in (state_dicts load both ways),
outputs, final states and gradients of every parameter, input and initial state, in float32
and float64; layers 1-2, bidirectional, batch_first, proj_size, with/without h0, unbatched
inputs, packed inputs of unequal lengths (sorted and unsorted), dropout between layers (identity
in eval, active only between layers in training), initialisation bounds and error cases."""

import numpy as np
import pytest

import eager
from eager import nn

torch = pytest.importorskip("torch")

TOL = {"float32": {"rtol": 1e-4, "atol": 1e-5}, "float64": {"rtol": 1e-9, "atol": 1e-11}}


def _close(e, t, dtype, what=""):
    np.testing.assert_allclose(np.asarray(e.detach().numpy()), t.detach().numpy(),
                               err_msg=what, **TOL[dtype])


def _pair(a):
    return (eager.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True))


def _to_eager_sd(tm):
    return {k: eager.tensor(v.detach().numpy().copy()) for k, v in tm.state_dict().items()}


def _to_torch_sd(em):
    return {k: torch.from_numpy(np.array(v.detach().numpy())) for k, v in
            em.state_dict().items()}


def _modules(kind, dtype, **kw):
    tdt = getattr(torch, dtype)
    tm = getattr(torch.nn, kind)(**kw).to(tdt)
    em = getattr(nn, kind)(**kw)
    em = em.double() if dtype == "float64" else em
    assert list(em.state_dict()) == list(tm.state_dict())
    for k, v in em.state_dict().items():
        assert tuple(v.shape) == tuple(tm.state_dict()[k].shape), k
    em.load_state_dict(_to_eager_sd(tm))
    return em, tm


def _flat(out):
    if isinstance(out, tuple) and hasattr(out, "batch_sizes"):
        return [out.data]
    if isinstance(out, (tuple, list)):
        return [x for o in out for x in _flat(o)]
    return [out]


def _compare(em, tm, e_args, t_args, leaves, dtype):
    """Run both, compare every output, then backward a weighted sum and compare the gradients
    of the parameters and the given (eager, torch) leaves."""
    eo, to = em(*e_args), tm(*t_args)
    ef, tf = _flat(eo), _flat(to)
    assert len(ef) == len(tf)
    rng = np.random.default_rng(7)
    e_loss, t_loss = 0, 0
    for i, (a, b) in enumerate(zip(ef, tf)):
        assert tuple(a.shape) == tuple(b.shape), (i, a.shape, b.shape)
        _close(a, b, dtype, f"output {i}")
        w = rng.standard_normal(tuple(b.shape)).astype(dtype)
        e_loss = e_loss + (a * eager.tensor(w)).sum()
        t_loss = t_loss + (b * torch.tensor(w)).sum()
    e_loss.backward()
    t_loss.backward()
    for (name, p), (tname, q) in zip(em.named_parameters(), tm.named_parameters()):
        assert name == tname
        _close(p.grad, q.grad, dtype, f"grad {name}")
    for i, (a, b) in enumerate(leaves):
        _close(a.grad, b.grad, dtype, f"grad leaf {i}")
    return eo, to


CONFIGS = [
    dict(num_layers=1),
    dict(num_layers=2),
    dict(num_layers=2, bidirectional=True),
    dict(num_layers=1, batch_first=True),
    dict(num_layers=2, bidirectional=True, batch_first=True, bias=False),
]
KINDS = [("RNN", {}), ("RNN", {"nonlinearity": "relu"}), ("LSTM", {}), ("GRU", {}),
         ("LSTM", {"proj_size": 3})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("with_h0", [False, True])
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: "-".join(f"{k}{v}" for k, v in c.items()))
@pytest.mark.parametrize("kind,extra", KINDS, ids=lambda k: str(k))
def test_module_matches_torch(kind, extra, cfg, with_h0, dtype):
    I, H, T, B = 4, 6, 5, 3
    em, tm = _modules(kind, dtype, input_size=I, hidden_size=H, **cfg, **extra)
    rng = np.random.default_rng(0)
    shape = (B, T, I) if cfg.get("batch_first") else (T, B, I)
    ex, tx = _pair(rng.standard_normal(shape).astype(dtype))
    leaves = [(ex, tx)]
    e_args, t_args = [ex], [tx]
    if with_h0:
        L = cfg["num_layers"] * (2 if cfg.get("bidirectional") else 1)
        hout = extra.get("proj_size") or H
        eh, th = _pair(rng.standard_normal((L, B, hout)).astype(dtype))
        leaves.append((eh, th))
        if kind == "LSTM":
            ec, tc = _pair(rng.standard_normal((L, B, H)).astype(dtype))
            leaves.append((ec, tc))
            e_args.append((eh, ec))
            t_args.append((th, tc))
        else:
            e_args.append(eh)
            t_args.append(th)
    _compare(em, tm, e_args, t_args, leaves, dtype)


@pytest.mark.parametrize("kind,extra", KINDS, ids=lambda k: str(k))
@pytest.mark.parametrize("with_h0", [False, True])
def test_unbatched(kind, extra, with_h0):
    dtype = "float64"
    em, tm = _modules(kind, dtype, input_size=4, hidden_size=5, num_layers=2,
                      bidirectional=True, **extra)
    rng = np.random.default_rng(1)
    ex, tx = _pair(rng.standard_normal((6, 4)))
    leaves, e_args, t_args = [(ex, tx)], [ex], [tx]
    if with_h0:
        eh, th = _pair(rng.standard_normal((4, extra.get("proj_size") or 5)))
        leaves.append((eh, th))
        if kind == "LSTM":
            ec, tc = _pair(rng.standard_normal((4, 5)))
            leaves.append((ec, tc))
            e_args.append((eh, ec))
            t_args.append((th, tc))
        else:
            e_args.append(eh)
            t_args.append(th)
    eo, to = _compare(em, tm, e_args, t_args, leaves, dtype)
    assert eo[0].dim() == 2


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("enforce_sorted", [True, False])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("kind,extra", KINDS, ids=lambda k: str(k))
def test_packed_matches_torch(kind, extra, bidirectional, enforce_sorted, dtype):
    from torch.nn.utils import rnn as TR

    from eager.nn.utils import rnn as ER

    lengths = [5, 3, 3, 1] if enforce_sorted else [2, 5, 1, 4]
    em, tm = _modules(kind, dtype, input_size=3, hidden_size=4, num_layers=2,
                      bidirectional=bidirectional, batch_first=True, **extra)
    rng = np.random.default_rng(2)
    ex, tx = _pair(rng.standard_normal((4, 5, 3)).astype(dtype))
    ep = ER.pack_padded_sequence(ex, lengths, batch_first=True, enforce_sorted=enforce_sorted)
    tp = TR.pack_padded_sequence(tx, torch.tensor(lengths), batch_first=True,
                                 enforce_sorted=enforce_sorted)
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    _close(ep.data, tp.data, dtype)
    leaves, e_args, t_args = [(ex, tx)], [ep], [tp]
    L = 4 if bidirectional else 2
    eh, th = _pair(rng.standard_normal((L, 4, extra.get("proj_size") or 4)).astype(dtype))
    leaves.append((eh, th))
    if kind == "LSTM":
        ec, tc = _pair(rng.standard_normal((L, 4, 4)).astype(dtype))
        leaves.append((ec, tc))
        e_args.append((eh, ec))
        t_args.append((th, tc))
    else:
        e_args.append(eh)
        t_args.append(th)
    eo, to = _compare(em, tm, e_args, t_args, leaves, dtype)
    assert isinstance(eo[0], ER.PackedSequence)
    epad, elen = ER.pad_packed_sequence(eo[0], batch_first=True, padding_value=-1.0,
                                        total_length=6)
    tpad, tlen = TR.pad_packed_sequence(to[0], batch_first=True, padding_value=-1.0,
                                        total_length=6)
    assert elen.tolist() == tlen.tolist() == lengths
    _close(epad, tpad, dtype)


def test_state_dict_loads_both_ways():
    for kind, extra in KINDS:
        kw = dict(input_size=3, hidden_size=4, num_layers=2, bidirectional=True, **extra)
        em = getattr(nn, kind)(**kw)
        tm = getattr(torch.nn, kind)(**kw)
        res = tm.load_state_dict(_to_torch_sd(em))
        assert not res.missing_keys and not res.unexpected_keys
        rng = np.random.default_rng(3)
        x = rng.standard_normal((5, 2, 3)).astype("float32")
        eo = _flat(em(eager.tensor(x)))
        to = _flat(tm(torch.tensor(x)))
        for a, b in zip(eo, to):
            _close(a, b, "float32")


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_init_and_names(kind):
    m = getattr(nn, kind)(3, 16, num_layers=2)
    bound = 1 / 4
    for name, p in m.named_parameters():
        a = p.detach().numpy()
        assert a.min() >= -bound and a.max() <= bound and a.std() > bound / 4, name
    assert getattr(nn, kind)(3, 16, bias=False).state_dict().keys() == \
        getattr(torch.nn, kind)(3, 16, bias=False).state_dict().keys()
    assert repr(getattr(nn, kind)(3, 4, 2, batch_first=True)) == \
        repr(getattr(torch.nn, kind)(3, 4, 2, batch_first=True))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_dropout_between_layers(kind):
    em, tm = _modules(kind, "float64", input_size=3, hidden_size=5, num_layers=3, dropout=0.5)
    x = np.random.default_rng(4).standard_normal((4, 2, 3))
    em.eval()
    tm.eval()
    eo, to = _flat(em(eager.tensor(x))), _flat(tm(torch.tensor(x)))
    for a, b in zip(eo, to):
        _close(a, b, "float64")
    # training: dropout changes the output, but not after the last layer
    em.train()
    eager.manual_seed(0)
    a = _flat(em(eager.tensor(x)))[0].detach().numpy()
    assert not np.allclose(a, eo[0].detach().numpy())
    one = getattr(nn, kind)(3, 5, num_layers=1)
    one.load_state_dict({k: v for k, v in em.state_dict().items() if k.endswith("_l0")})
    one.train()
    with pytest.warns(UserWarning):
        d = getattr(nn, kind)(3, 5, num_layers=1, dropout=0.5)
    d.load_state_dict(one.state_dict())
    np.testing.assert_array_equal(_flat(d(eager.tensor(x)))[0].detach().numpy(),
                                  _flat(one(eager.tensor(x)))[0].detach().numpy())


CELLS = [("RNNCell", {}), ("RNNCell", {"nonlinearity": "relu"}), ("LSTMCell", {}),
         ("GRUCell", {}), ("GRUCell", {"bias": False})]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("with_h", [False, True])
@pytest.mark.parametrize("kind,extra", CELLS, ids=lambda k: str(k))
def test_cells_match_torch(kind, extra, with_h, batched, dtype):
    em, tm = _modules(kind, dtype, input_size=4, hidden_size=5, **extra)
    rng = np.random.default_rng(5)
    bshape = (3,) if batched else ()
    ex, tx = _pair(rng.standard_normal(bshape + (4,)).astype(dtype))
    leaves, e_args, t_args = [(ex, tx)], [ex], [tx]
    if with_h:
        eh, th = _pair(rng.standard_normal(bshape + (5,)).astype(dtype))
        leaves.append((eh, th))
        if kind == "LSTMCell":
            ec, tc = _pair(rng.standard_normal(bshape + (5,)).astype(dtype))
            leaves.append((ec, tc))
            e_args.append((eh, ec))
            t_args.append((th, tc))
        else:
            e_args.append(eh)
            t_args.append(th)
    _compare(em, tm, e_args, t_args, leaves, dtype)


def test_cell_loop_equals_module():
    """An LSTMCell stepped by hand gives nn.LSTM's output (the same weights)."""
    m = nn.LSTM(3, 4)
    cell = nn.LSTMCell(3, 4)
    cell.load_state_dict({k[:-3]: v for k, v in m.state_dict().items()})
    x = eager.randn(6, 2, 3)
    out, (h, c) = m(x)
    hc = None
    for t in range(6):
        hc = cell(x[t], hc)
        np.testing.assert_allclose(hc[0].detach().numpy(), out[t].detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    np.testing.assert_allclose(hc[1].detach().numpy(), c[0].detach().numpy(), rtol=1e-5,
                               atol=1e-6)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence(batch_first, side):
    from torch.nn.utils import rnn as TR

    from eager.nn.utils import rnn as ER

    rng = np.random.default_rng(6)
    arrs = [rng.standard_normal((n, 2)) for n in (3, 5, 1)]
    e = [eager.tensor(a, requires_grad=True) for a in arrs]
    t = [torch.tensor(a, requires_grad=True) for a in arrs]
    ep = ER.pad_sequence(e, batch_first=batch_first, padding_value=7.0, padding_side=side)
    tp = TR.pad_sequence(t, batch_first=batch_first, padding_value=7.0, padding_side=side)
    _close(ep, tp, "float64")
    w = rng.standard_normal(tuple(tp.shape))
    (ep * eager.tensor(w)).sum().backward()
    (tp * torch.tensor(w)).sum().backward()
    for a, b in zip(e, t):
        _close(a.grad, b.grad, "float64")


@pytest.mark.parametrize("enforce_sorted", [True, False])
def test_pack_sequence_roundtrip(enforce_sorted):
    from torch.nn.utils import rnn as TR

    from eager.nn.utils import rnn as ER

    rng = np.random.default_rng(8)
    lens = (4, 3, 1) if enforce_sorted else (1, 4, 2)
    arrs = [rng.standard_normal((n, 2)) for n in lens]
    ep = ER.pack_sequence([eager.tensor(a) for a in arrs], enforce_sorted=enforce_sorted)
    tp = TR.pack_sequence([torch.tensor(a) for a in arrs], enforce_sorted=enforce_sorted)
    _close(ep.data, tp.data, "float64")
    assert ep.batch_sizes.tolist() == tp.batch_sizes.tolist()
    for a, b in ((ep.sorted_indices, tp.sorted_indices),
                 (ep.unsorted_indices, tp.unsorted_indices)):
        assert (a is None) == (b is None)
        if a is not None:
            assert a.tolist() == b.tolist()
    for a, b in zip(ER.unpack_sequence(ep), arrs):
        np.testing.assert_array_equal(a.numpy(), b)


def test_errors():
    from eager.nn.utils import rnn as ER

    with pytest.raises(ValueError):
        nn.GRU(3, 4, proj_size=2)
    with pytest.raises(ValueError):
        nn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError):
        nn.RNN(3, 4, nonlinearity="gelu")
    with pytest.raises(ValueError):
        nn.LSTM(3, 4, dropout=1.5)
    with pytest.raises(RuntimeError):
        nn.LSTM(3, 4)(eager.randn(5, 2, 3), (eager.zeros(1, 2, 4), eager.zeros(1, 3, 4)))
    with pytest.raises(RuntimeError):
        nn.GRU(3, 4)(eager.randn(5, 2, 5))
    with pytest.raises(ValueError):
        nn.GRU(3, 4)(eager.randn(5, 2, 3, 1))
    with pytest.raises(RuntimeError):
        nn.RNN(3, 4)(eager.randn(5, 2, 3), eager.zeros(1, 4))
    with pytest.raises(ValueError):
        nn.GRUCell(3, 4)(eager.randn(5, 2, 3))
    with pytest.raises(RuntimeError, match="sorted in decreasing order"):
        ER.pack_padded_sequence(eager.randn(5, 2, 3), [2, 4])
    with pytest.raises(ValueError):
        ER.pad_packed_sequence(ER.pack_padded_sequence(eager.randn(5, 2, 3), [4, 2]),
                               total_length=3)
