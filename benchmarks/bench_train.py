"""Whole training steps written as PyTorch code (`nn.Sequential`, `F.cross_entropy`,
`torch.optim`), run by wick (`import eager as torch`) and by torch eager.

1. `small`: 64-32-10 MLP (ReLU), batch 64, float32, cross entropy, SGD with momentum.
2. `mnist-sized`: 784-256-10 MLP (ReLU), batch 64, float32, cross entropy, Adam.
3. `lstm`: 2-layer LSTM, seq 32, batch 32, input and hidden 256, a Linear(256, 10) head on the
   last step, cross entropy, SGD with momentum (`--lstm-repeat` steps: one step is ~0.1 s);
   `gru`: the same with `nn.GRU`.
4. `decoder`: a 2-layer `nn.TransformerDecoder` (d_model 128, 4 heads, feed-forward 256,
   dropout 0) over target seq 32 with a causal mask and memory seq 32, batch 16, a Linear head
   to 100 classes, cross entropy, SGD with momentum.
Cases 3 and 4 also run under `autocast("cpu", dtype=bfloat16)` (forward and loss in the region,
backward outside, as the AMP recipe has it), beside float32.

The recurrent cases add a third row, `numpy GEMMs`: the step's matrix products alone (per
layer the input projection, one recurrent GEMM per time step, and in backward one per step
for d h plus d W_ih, d W_hh and d x), run by numpy's BLAS on arrays of the step's shapes: no
implementation of the step on numpy's BLAS can be faster than this floor.

Run: `python benchmarks/bench_train.py [--repeat N] [--only lstm,decoder]
[--openblas-coretype SkylakeX]` (the last sets `OPENBLAS_CORETYPE` before numpy loads
OpenBLAS, to measure on other kernels than the environment's). Prints the median
time of one step (forward, backward, optimizer step) per peer and the ratio wick / torch; both
peers start from the same weights and data, and the script checks that their losses agree over
the timed steps (bfloat16: within 2%). No goal is asserted (timings are not tests); BLAS and
torch run on one thread.

The table's first line names numpy's BLAS and the kernels it runs: an environment's
`OPENBLAS_CORETYPE` (e.g. `Haswell`, AVX2) overrides OpenBLAS's own CPU detection, and on an
AVX-512 CPU (where torch's oneDNN uses AVX-512) that halves wick's GEMM speed; unset it (or set
`SkylakeX`) to compare on the CPU's own kernels.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
for _i, _a in enumerate(sys.argv):  # before numpy loads OpenBLAS (argparse runs too late)
    if _a.startswith("--openblas-coretype"):
        os.environ["OPENBLAS_CORETYPE"] = _a.partition("=")[2] or sys.argv[_i + 1]

import argparse
import contextlib
import functools
import itertools
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_autograd import medians_us

import eager

try:
    import torch
except ImportError:  # an optional peer
    torch = None


def make_step(lib, sizes, optimizer, lr, seed=0):
    """A training step closure for `lib` (eager or torch): same weights (numpy-drawn), same
    batch, the given optimizer; returns the step and a function giving the last loss."""
    rng = np.random.default_rng(seed)
    nn = lib.nn
    layers = []
    for i, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
        lin = nn.Linear(fan_in, fan_out)
        with lib.no_grad():
            bound = 1 / fan_in ** 0.5
            lin.weight.copy_(lib.tensor(rng.uniform(-bound, bound, (fan_out, fan_in))
                                        .astype(np.float32)))
            lin.bias.copy_(lib.tensor(rng.uniform(-bound, bound, fan_out).astype(np.float32)))
        layers.append(lin)
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    opt = {"sgd": lambda p: lib.optim.SGD(p, lr=lr, momentum=0.9),
           "adam": lambda p: lib.optim.Adam(p, lr=lr)}[optimizer](model.parameters())
    x = lib.tensor(rng.standard_normal((64, sizes[0])).astype(np.float32))
    y = lib.tensor(rng.integers(0, sizes[-1], 64))
    last = []

    def step():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last.append(loss)

    return step, lambda: float(last[-1].item())


def _region(lib, amp):
    """The forward's context: an autocast bfloat16 region when `amp`, else nothing."""
    return lib.autocast("cpu", dtype=lib.bfloat16) if amp else contextlib.nullcontext()


def _same_weights(rng, *modules, lib):
    """Load numpy-drawn U(-1/sqrt(fan), 1/sqrt(fan)) weights into `modules` (the state_dict
    names are torch's, so both peers get the same values)."""
    for m in modules:
        sd = {}
        for k, v in m.state_dict().items():
            fan = v.shape[-1] if len(v.shape) > 1 else max(v.shape[0], 1)
            b = 1 / fan ** 0.5
            val = rng.uniform(-b, b, tuple(v.shape)).astype(np.float32)
            if k.endswith(("norm1.weight", "norm2.weight", "norm3.weight")):
                val = np.ones(tuple(v.shape), np.float32)
            sd[k] = lib.tensor(val)
        m.load_state_dict(sd)


def make_decoder_step(lib, seq=32, batch=16, d_model=128, nhead=4, ff=256, layers=2,
                      classes=100, lr=0.05, seed=0, amp=False):
    """A training step of an `nn.TransformerDecoder` (causal target mask) + `nn.Linear` head
    for `lib`, same numpy-drawn weights and batch; `amp`: forward under autocast bfloat16.
    Returns the step and a function giving the last loss."""
    rng = np.random.default_rng(seed)
    nn = lib.nn
    layer = nn.TransformerDecoderLayer(d_model, nhead, ff, dropout=0.0)
    dec, head = nn.TransformerDecoder(layer, layers), nn.Linear(d_model, classes)
    _same_weights(rng, dec, head, lib=lib)
    opt = lib.optim.SGD(list(dec.parameters()) + list(head.parameters()), lr=lr, momentum=0.9)
    tgt = lib.tensor(rng.standard_normal((seq, batch, d_model)).astype(np.float32))
    mem = lib.tensor(rng.standard_normal((seq, batch, d_model)).astype(np.float32))
    mask = nn.Transformer.generate_square_subsequent_mask(seq)
    y = lib.tensor(rng.integers(0, classes, seq * batch))
    last = []

    def step():
        with _region(lib, amp):
            out = head(dec(tgt, mem, tgt_mask=mask, tgt_is_causal=True))
            loss = nn.functional.cross_entropy(out.reshape(seq * batch, classes), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last.append(loss)

    return step, lambda: float(last[-1].item())


def make_lstm_step(lib, seq=32, batch=32, hidden=256, layers=2, classes=10, lr=0.05, seed=0,
                   amp=False, kind="LSTM"):
    """A training step of an `nn.LSTM` + `nn.Linear` head for `lib` (eager or torch), same
    numpy-drawn weights and batch; `amp`: forward under autocast bfloat16. Returns the step
    and a function giving the last loss."""
    rng = np.random.default_rng(seed)
    nn = lib.nn
    lstm, head = getattr(nn, kind)(hidden, hidden, layers), nn.Linear(hidden, classes)
    bound = 1 / hidden ** 0.5
    for m in (lstm, head):  # the same weights for both peers (state_dict names are torch's)
        m.load_state_dict({k: lib.tensor(rng.uniform(-bound, bound, tuple(v.shape))
                                         .astype(np.float32)) for k, v in m.state_dict().items()})
    params = list(lstm.parameters()) + list(head.parameters())
    opt = lib.optim.SGD(params, lr=lr, momentum=0.9)
    x = lib.tensor(rng.standard_normal((seq, batch, hidden)).astype(np.float32))
    y = lib.tensor(rng.integers(0, classes, batch))
    last = []

    def step():
        with _region(lib, amp):
            out, _ = lstm(x)
            loss = nn.functional.cross_entropy(head(out[-1]), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last.append(loss)

    return step, lambda: float(last[-1].item())


def make_gemm_floor(seq=32, batch=32, hidden=256, layers=2, kind="LSTM"):
    """The matrix products of one `make_lstm_step` step on numpy arrays (float32, the
    step's shapes), in the faster of the two orientations where BLAS's speed depends on it:
    the floor of any numpy implementation of the step. Returns a callable."""
    rng = np.random.default_rng(0)
    G = {"LSTM": 4, "GRU": 3}[kind] * hidden
    def f32(*shape):
        return rng.random(shape, np.float32)

    x, dx, w_ih, w_hh = f32(seq * batch, hidden), f32(seq * batch, hidden), f32(G, hidden), \
        f32(G, hidden)
    gx, at, h, dh, dw = f32(seq * batch, G), f32(G, batch), f32(batch, hidden), \
        f32(batch, hidden), f32(G, hidden)

    def step():
        for layer in range(layers):
            np.matmul(x, w_ih.T, out=gx)  # the input projection, all steps
            for _ in range(seq):
                np.matmul(w_hh, h.T, out=at)  # one recurrent GEMM per step
        for layer in range(layers):
            for t in range(seq):
                np.matmul(gx[t * batch:(t + 1) * batch], w_hh, out=dh)  # d h per step
            np.matmul(gx.T, x, out=dw)  # d W_hh
            np.matmul(gx.T, x, out=dw)  # d W_ih
            if layer:
                np.matmul(gx, w_ih, out=dx)  # d x of the layer above
    return step


def blas_core() -> str:
    """numpy's BLAS and the kernels it runs (threadpoolctl's report), or '' if unknown."""
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        return ""
    for info in threadpool_info():
        if info.get("user_api") == "blas":
            return f"{info.get('internal_api', '?')} {info.get('architecture', '?')} kernels"
    return ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=600)
    ap.add_argument("--lstm-repeat", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated: small,mnist,lstm,gru,decoder")
    ap.add_argument("--openblas-coretype", default="",
                    help="OPENBLAS_CORETYPE for numpy's OpenBLAS (e.g. SkylakeX, Haswell)")
    args = ap.parse_args(argv)
    if torch is not None:
        torch.set_num_threads(1)
    rows = []
    lstm_amp = functools.partial(make_lstm_step, amp=True)
    dec_amp = functools.partial(make_decoder_step, amp=True)
    cases = [("small", "small: 64-32-10, SGD momentum",
              lambda lib: make_step(lib, (64, 32, 10), "sgd", 0.05), args.repeat),
             ("mnist", "mnist-sized: 784-256-10, Adam",
              lambda lib: make_step(lib, (784, 256, 10), "adam", 1e-3), args.repeat),
             ("lstm", "LSTM 2x256, seq 32, batch 32, SGD momentum", make_lstm_step,
              args.lstm_repeat),
             ("lstm", "  the same, autocast bf16", lstm_amp, args.lstm_repeat),
             ("gru", "GRU 2x256, seq 32, batch 32, SGD momentum",
              functools.partial(make_lstm_step, kind="GRU"), args.lstm_repeat),
             ("decoder", "TransformerDecoder 2x128, seq 32, batch 16", make_decoder_step,
              args.lstm_repeat),
             ("decoder", "  the same, autocast bf16", dec_amp, args.lstm_repeat)]
    only = set(filter(None, args.only.split(",")))
    for key, name, make, repeat in cases:
        if only and key not in only:
            continue
        peers, losses = {}, {}
        for label, lib in (("wick", eager), ("torch eager", torch)):
            if lib is None:
                continue
            peers[label], losses[label] = make(lib)
        if key in ("lstm", "gru") and "bf16" not in name:
            peers["numpy GEMMs"] = make_gemm_floor(kind=key.upper())
        t = medians_us(peers, repeat, rounds=min(15, repeat), warmup=5 if repeat > 30 else 2)
        if "torch eager" in peers:  # both ran the same number of steps from the same start
            a, b = losses["wick"](), losses["torch eager"]()
            tol = 2e-2 if "bf16" in name else 1e-3
            assert abs(a - b) <= tol * max(1.0, abs(b)), (name, a, b)
        for label, us in t.items():
            ratio = us / t["torch eager"] if "torch eager" in t else None
            rows.append((name if label == "wick" else "", label, us, ratio))
    print(f"numpy BLAS: {blas_core() or 'unknown'}")
    print(f"{'training step (fwd + bwd + optimizer), f32 unless said':52s} {'peer':12s} "
          f"{'median us':>10s} {'/ torch':>8s}")
    for name, label, us, ratio in rows:
        r = f"{ratio:8.2f}" if ratio is not None else ""
        print(f"{name:52s} {label:12s} {us:10.1f} {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
