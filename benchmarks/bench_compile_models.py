"""Issue 14's performance table: whole training steps of three models under wick eager, wick
compiled (`capture.compile`), torch eager and `torch.compile`, in one process.

Models (float32, written once as PyTorch code and built by `eager` and by `torch`):
(a) MLP 784-512-512-10 with LayerNorm and GELU, batch 256, SGD with momentum;
(b) 2-layer transformer encoder LM: embedding (vocab 256) + `nn.TransformerEncoder` (d_model 128,
    4 heads, ff 256, dropout 0, batch_first) + linear head + `F.cross_entropy`, seq 64, batch 16,
    Adam;
(c) small CNN on 8x8 "digits" (random data of that shape): conv-BatchNorm(train)-ReLU x2,
    max-pool, linear head, batch 64, SGD.

A step is `loss = f(x, y); opt.zero_grad(); loss.backward(); opt.step()` where `f` (model +
loss) is the compiled function, as users compile it (torch.compile breaks at `backward()` too).
Both libraries start from the same weights (torch's, copied into wick) and the script checks
that their first losses agree. Reported per model and peer: steady-state step time (median,
interleaved rounds: `bench_autograd.medians_us`), first call (the first step, compile
included), graph/break counts (`capture.explain` beside `torch._dynamo.explain`), and for wick
compiled the cache-hit overhead: the compiled forward call minus a direct call of the entry's
compiled forward graph on the same arrays (per model, where it is within the noise of the
kernels, and on a tiny MLP where it is not). First calls start from empty disk caches
(temporary WICK_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR) unless --warm-cache. Goals (issue 14): compiled <= 0.8x wick eager and
<= 1.0x torch.compile; first call <= 1/20 of torch.compile's; a hit adds <= 10 us.
torch is optional (its columns are left empty without it). BLAS and torch use one thread.

    python benchmarks/bench_compile_models.py [--quick] [--repeat N] [--models mlp,lm,cnn]
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import sys
import tempfile
import time

if "--warm-cache" not in sys.argv:  # first calls from empty disk caches (wick's and inductor's)
    _CACHE = tempfile.mkdtemp(prefix="bench_compile_models_")
    os.environ["WICK_CACHE_DIR"] = os.path.join(_CACHE, "wick")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(_CACHE, "inductor")
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_autograd import medians_us

import capture
import eager

try:
    import torch
except ImportError:  # an optional peer
    torch = None


def build_mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, 512), nn.LayerNorm(512), nn.GELU(),
                         nn.Linear(512, 512), nn.LayerNorm(512), nn.GELU(), nn.Linear(512, 10))


def build_lm(lib):
    nn = lib.nn

    class LM(nn.Module):
        def __init__(self, vocab=256, d=128, heads=4, layers=2):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=256, dropout=0.0,
                                               batch_first=True)
            self.enc = nn.TransformerEncoder(layer, layers)
            self.head = nn.Linear(d, vocab)

        def forward(self, idx):
            return self.head(self.enc(self.emb(idx)))

    return LM()


def build_cnn(lib):
    nn = lib.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(32 * 4 * 4, 10))


def data(name, rng):
    if name == "mlp":
        return (rng.standard_normal((256, 784)).astype(np.float32), rng.integers(0, 10, 256))
    if name == "lm":
        return rng.integers(0, 256, (16, 64)), rng.integers(0, 256, (16, 64))
    return rng.standard_normal((64, 1, 8, 8)).astype(np.float32), rng.integers(0, 10, 64)


MODELS = {"mlp": ("(a) MLP 784-512-512-10 LN+GELU b256", build_mlp, "sgd"),
          "lm": ("(b) transformer LM d128 h4 L2 s64 b16", build_lm, "adam"),
          "cnn": ("(c) CNN+BatchNorm 8x8 digits b64", build_cnn, "sgd")}


def make(lib, name, state, arrays):
    """(model, loss function, optimizer, x, y) for `lib`, with the weights in `state`
    ({name: numpy array}; None: keep the library's own initialisation)."""
    torch_like = lib
    model = MODELS[name][1](torch_like)
    if state is not None:
        with lib.no_grad():
            for k, v in model.state_dict().items():
                v.copy_(lib.tensor(state[k]))
    model.train()
    F = lib.nn.functional
    if name == "lm":
        def loss_fn(x, y):
            logits = model(x)
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    else:
        def loss_fn(x, y):
            return F.cross_entropy(model(x), y)
    params = list(model.parameters())
    opt = (lib.optim.Adam(params, lr=1e-3) if MODELS[name][2] == "adam"
           else lib.optim.SGD(params, lr=0.01, momentum=0.9))
    x, y = (lib.tensor(a) for a in arrays)
    return model, loss_fn, opt, x, y


def stepper(f, opt, x, y, last):
    def step():
        loss = f(x, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        last.append(loss)
        del last[:-1]
    return step


def timed_first(step):
    t0 = time.perf_counter()
    step()
    return (time.perf_counter() - t0) * 1e3


def hit_overhead_us(compiled, x, y, repeat) -> tuple | None:
    """What a cache hit adds over its kernels, in us, two ways: the compiled forward call minus
    its entry's compiled forward graph called directly on the same arrays (within the noise of
    the kernels, and the hit's outputs stay alive in autograd nodes where the direct call's are
    freed at once: memory effects count as overhead), and the compiled call with the kernels
    replaced by a replay of their last results (`replayed`: the overhead alone; patches the
    entry, so measured last). None when the call did not run one whole-call graph."""
    cf = compiled.__wick_compiled__
    graphs = [e for e in cf.entries if e.mode == "graph" and e.runner is not None]
    if len(cf.entries) != 1 or len(graphs) != 1:
        return None
    entry = graphs[0]
    inputs = entry.fetch(x, y)
    runner = entry.runner
    if runner.aot is not None and runner.aot.plans:
        wrt = tuple(t.requires_grad for t in inputs)
        fwd = runner.aot.plans[wrt].fwd
    elif runner.compiled is not None:
        fwd = runner.compiled
    else:
        return None
    fwd = getattr(fwd, "run_unchecked", fwd)
    arrays = [t._data for t in inputs]
    t = medians_us({"hit": lambda: compiled(x, y), "kernels": lambda: fwd(*arrays)},
                   repeat, warmup=3)
    replay = replayed(compiled, (x, y))
    alone = medians_us({"r": replay}, max(300, repeat * 10), warmup=20)["r"]
    return t["hit"] - t["kernels"], alone


def replayed(compiled, args):
    """The compiled call with its entry's kernels replaced by a replay of their last results
    (the hit's overhead alone, free of the kernels' noise); None when it cannot be set up.
    Patches the entry: measure it last. Each call's result is kept until the next call's
    returns, as a training loop keeps the last loss (its graph holds the parameters'
    AccumulateGrad nodes, which the next forward then finds instead of making)."""
    entry = compiled.__wick_compiled__.entries[-1]
    runner, ns = entry.runner, entry.hit.__globals__
    slots = []  # (namespace, key) holding the forward kernels
    if runner.aot is not None:
        slots += [(plan.__dict__, "fwd") for plan in runner.aot.plans.values()]
        for cell in getattr(ns.get("___aot"), "__closure__", None) or ():
            found = cell.cell_contents
            if isinstance(found, list) and found and hasattr(found[0], "__globals__"):
                slots.append((found[0].__globals__, "fwd"))  # (the generated node builder)
    elif "___graph" in ns:
        slots.append((ns, "___graph"))
    elif runner.compiled is not None:
        slots.append((runner.__dict__, "compiled"))
    if not slots:
        return None
    last = []
    for d, key in slots:
        real = d[key]

        def record(*arrays, real=real):
            last[:] = [real(*arrays)]
            return last[0]

        d[key] = record
    compiled(*args)
    for d, key in slots:
        d[key] = lambda *arrays: last[0]
    kept = [None]

    def call():
        kept[0] = compiled(*args)

    return call


def run_model(name, repeat, use_torch):
    rng = np.random.default_rng(0)
    arrays = data(name, rng)
    res = {}
    state = None
    if use_torch:
        torch.manual_seed(0)
        tm, tf, topt, tx, ty = make(torch, name, None, arrays)
        state = {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}
    wm, wf, wopt, wx, wy = make(eager, name, state, arrays)
    wm2, wf2, wopt2, wx2, wy2 = make(eager, name, state or
                                     {k: v.numpy().copy() for k, v in wm.state_dict().items()},
                                     arrays)
    peers, firsts, last = {}, {}, {}
    ex = capture.explain(wf2)(wx2, wy2)
    res["wick counts"] = (ex.graph_count, ex.graph_break_count)
    capture.reset()
    wc = capture.compile(wf2)
    for label, f, opt, x, y in (("wick eager", wf, wopt, wx, wy),
                                ("wick compiled", wc, wopt2, wx2, wy2)):
        last[label] = []
        peers[label] = stepper(f, opt, x, y, last[label])
        firsts[label] = timed_first(peers[label])
    if use_torch:
        import torch._dynamo as dynamo

        dynamo.reset()
        tm2, tf2, topt2, tx2, ty2 = make(torch, name, state, arrays)
        te = dynamo.explain(tf2)(tx2, ty2)
        res["torch counts"] = (te.graph_count, te.graph_break_count)
        dynamo.reset()
        tc = torch.compile(tf2)
        for label, f, opt, x, y in (("torch eager", tf, topt, tx, ty),
                                    ("torch.compile", tc, topt2, tx2, ty2)):
            last[label] = []
            peers[label] = stepper(f, opt, x, y, last[label])
            firsts[label] = timed_first(peers[label])
    losses = {k: float(v[-1].item()) for k, v in last.items()}
    ref = losses.get("torch eager", losses["wick eager"])
    res["loss ok"] = all(abs(v - ref) <= 2e-3 * max(1.0, abs(ref)) for v in losses.values())
    res["losses"] = losses
    res["steady"] = {k: v / 1e3 for k, v in medians_us(peers, repeat, rounds=min(5, repeat),
                                                     warmup=2).items()}
    res["first"] = firsts
    res["hit us"] = hit_overhead_us(wc, wx2, wy2, max(20, repeat * 4))
    return res


def tiny_hit_us(repeat) -> dict:
    """The cache-hit overhead where the kernels are cheap (a 16-16-4 MLP + cross entropy on 8
    rows): parameters requiring grad (the AOT autograd path) and under `no_grad`."""
    nn, F = eager.nn, eager.nn.functional
    model = nn.Sequential(nn.Linear(16, 16), nn.GELU(), nn.Linear(16, 4))
    x, y = eager.randn(8, 16), eager.randint(0, 4, (8,))

    def loss_fn(x, y):
        return F.cross_entropy(model(x), y)

    out = {}
    for label, grad in (("params require grad", True), ("no_grad", False)):
        with eager.set_grad_enabled(grad):
            c = capture.compile(loss_fn)
            c(x, y)
            eager_us = medians_us({"e": lambda: loss_fn(x, y)}, repeat, warmup=3)["e"]
            out[label] = hit_overhead_us(c, x, y, repeat)
            out[label] = (out[label], eager_us)
    return out


def fmt(v, spec=".1f"):
    return "" if v is None else format(v, spec)


def table(results) -> str:
    out = ["| model | peer | step ms (median) | first call ms | graphs/breaks | "
           "compiled / this (steady) | compiled first / this first |",
           "| --- | --- | --- | --- | --- | --- | --- |"]
    for name, r in results.items():
        wc = r["steady"]["wick compiled"]
        wf = r["first"]["wick compiled"]
        for peer in ("wick eager", "wick compiled", "torch eager", "torch.compile"):
            if peer not in r["steady"]:
                continue
            counts = (r["wick counts"] if peer == "wick compiled" else
                      r.get("torch counts") if peer == "torch.compile" else None)
            cnt = f"{counts[0]}/{counts[1]}" if counts else ""
            ratio = "" if peer == "wick compiled" else f"{wc / r['steady'][peer]:.2f}x"
            fr = ("" if peer == "wick compiled" else f"{wf / r['first'][peer]:.3f}x")
            out.append(f"| {MODELS[name][0] if peer == 'wick eager' else ''} | {peer} | "
                       f"{r['steady'][peer]:.2f} | {r['first'][peer]:.0f} | {cnt} | {ratio} | "
                       f"{fr} |")
        hit = r["hit us"] or (None, None)
        out.append(f"| | wick cache hit over kernels (difference; kernels replayed) | "
                   f"{fmt(hit[0])} us; {fmt(hit[1])} us | | | | |")
        if not r["loss ok"]:
            out.append(f"| | LOSSES DISAGREE: {r['losses']} | | | | | |")
    return "\n".join(out)


def goals(results) -> str:
    lines = ["goals (issue 14):"]
    for name, r in results.items():
        s, f = r["steady"], r["first"]
        parts = [f"compiled/eager {s['wick compiled'] / s['wick eager']:.2f} (<= 0.8)"]
        if "torch.compile" in s:
            parts.append(f"compiled/torch.compile {s['wick compiled'] / s['torch.compile']:.2f}"
                         " (<= 1.0)")
            parts.append(f"first/torch.compile first {f['wick compiled'] / f['torch.compile']:.3f}"
                         " (<= 0.05)")
        if r["hit us"] is not None:
            parts.append(f"hit {fmt(r['hit us'][1])} us (kernels replayed; <= 10)")
        lines.append(f"  {name}: " + ", ".join(parts))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=30, help="timed steps per peer")
    ap.add_argument("--quick", action="store_true", help="few steps (< 2 minutes in all)")
    ap.add_argument("--models", default="mlp,lm,cnn")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--warm-cache", action="store_true",
                    help="keep the default disk caches (first calls may hit them)")
    args = ap.parse_args(argv)
    repeat = 5 if args.quick else args.repeat
    use_torch = torch is not None and not args.no_torch
    if use_torch:
        torch.set_num_threads(1)
    results = {}
    t0 = time.perf_counter()
    for name in args.models.split(","):
        try:
            results[name] = run_model(name, repeat, use_torch)
        except Exception as e:  # noqa: BLE001 (report it, keep the other models)
            print(f"{name}: {type(e).__name__}: {e}", file=sys.stderr)
    tiny = tiny_hit_us(300 if args.quick else 3000)
    print(f"medians of {repeat} steps per peer; torch {'absent' if torch is None else torch.__version__}"
          f"; {time.perf_counter() - t0:.0f} s in all")
    print(table(results))
    for label, (hit, eager_us) in tiny.items():
        hit = hit or (None, None)
        print(f"cache hit over kernels, 16-16-4 MLP + CE, {label}: {fmt(hit[0])} us "
              f"(kernels replayed: {fmt(hit[1])} us) "
              f"(goal <= 10; eager call {eager_us:.1f} us)")
    print(goals(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
