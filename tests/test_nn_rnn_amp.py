"""nn.LSTM / nn.GRU / nn.RNN under `autocast("cpu", dtype=bfloat16)` against PyTorch's: the
output dtypes (LSTM and RNN give bfloat16 as PyTorch's fused kernels, GRU float32), the values
and the parameter gradients (bfloat16 tolerance), with two layers and both directions. wick
runs the recurrent op in float32 on the bfloat16-rounded projection (eager/nn/rnn.py)."""

import numpy as np
import pytest

import eager

torch = pytest.importorskip("torch")

T, B, I, H = 6, 3, 5, 4


def _pair(kind, bidirectional, rng):
    tm = getattr(torch.nn, kind)(I, H, num_layers=2, bidirectional=bidirectional)
    em = getattr(eager.nn, kind)(I, H, num_layers=2, bidirectional=bidirectional)
    sd = {k: rng.uniform(-0.5, 0.5, tuple(v.shape)).astype(np.float32)
          for k, v in tm.state_dict().items()}
    tm.load_state_dict({k: torch.tensor(v) for k, v in sd.items()})
    em.load_state_dict({k: eager.tensor(v) for k, v in sd.items()})
    return em, tm


@pytest.mark.parametrize("bidirectional", [False, True], ids=["uni", "bi"])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
def test_autocast_bfloat16_matches_torch(kind, bidirectional):
    rng = np.random.default_rng(11)
    em, tm = _pair(kind, bidirectional, rng)
    x = rng.standard_normal((T, B, I)).astype(np.float32)
    w = rng.standard_normal((T, B, H * (2 if bidirectional else 1))).astype(np.float32)
    outs = []
    for lib, m in ((eager, em), (torch, tm)):
        with lib.autocast("cpu", dtype=lib.bfloat16):
            out, hn = m(lib.tensor(x))
        hn = hn[0] if kind == "LSTM" else hn
        outs.append((out.dtype, hn.dtype))
        loss = (out.float() * lib.tensor(w)).sum() + hn.float().sum()
        loss.backward()
        outs.append((out.detach().float().numpy(), hn.detach().float().numpy()))
    (edt, eh_dt), (eo, eh), (tdt, th_dt), (to, th) = outs
    assert (edt.name, eh_dt.name) == (str(tdt).split(".")[1], str(th_dt).split(".")[1])
    np.testing.assert_allclose(eo, to, atol=3e-2)
    np.testing.assert_allclose(eh, th, atol=3e-2)
    tgrads = dict(tm.named_parameters())
    for name, p in em.named_parameters():
        g, tg = p.grad.numpy(), tgrads[name].grad.numpy()
        np.testing.assert_allclose(g, tg, atol=6e-2 * max(1.0, np.abs(tg).max()), err_msg=name)
