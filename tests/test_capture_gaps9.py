"""Code around models that capture got wrong or broke on (issue 14's bar, held-out set N:
training/eval/inference script code): each case is written as PyTorch code and built by
`build(lib)` for `lib` = wick's `eager` or the real torch. It runs eagerly and compiled (twice:
capture, then the cache hit, or once per argument tuple of `calls`) from the same seed,
comparing outputs (values and dtypes) and the state it names; its graph and break counts from
`capture.explain` are checked, and when torch is installed torch._dynamo.explain's counts on the
same code are too.
"""

from __future__ import annotations

import numpy as np
import pytest
from capture_cases import case_tests, same
from capture_cases import rand as _rand

import capture
import eager


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def _same(a, b):
    same(a, b, _flat)


def wgan_gradient_penalty(torch):
    """A WGAN-GP critic step: the penalty's `autograd.grad(..., create_graph=True)` runs
    after a break, through the compiled graph of `critic(interp)` (its backward raised "double
    backward through a compiled graph is not supported")."""
    nn = torch.nn
    critic = nn.Sequential(nn.Linear(6, 12), nn.LeakyReLU(0.2), nn.Linear(12, 1))

    def gradient_penalty(real, fake, alpha):
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        out = critic(interp)
        grads = torch.autograd.grad(outputs=out, inputs=interp,
                                    grad_outputs=torch.ones_like(out),
                                    create_graph=True, retain_graph=True)[0]
        return ((grads.norm(2, dim=1) - 1) ** 2).mean()

    def step(real, fake, alpha):
        critic.zero_grad()
        loss = (critic(fake).mean() - critic(real).mean()
                + 10.0 * gradient_penalty(real, fake, alpha))
        loss.backward()
        return loss.detach() * 1  # (an op after the break: a second graph)

    alpha = torch.tensor(np.random.default_rng(8).random((4, 1)).astype(np.float32))
    return (step, (_rand(torch, 4, 6), _rand(torch, 4, 6, seed=7), alpha),
            lambda: [p.grad for p in critic.parameters()])


WEIGHTS = np.random.default_rng(11).standard_normal((4, 3)).astype(np.float32)


def numpy_interop(torch):
    """A projection by a numpy constant of the module (`torch.from_numpy(W)`), a numpy scalar
    (`torch.as_tensor(np.float32(0.5))`) and a numpy result (`y.detach().numpy()`): each was a
    break (from_numpy/as_tensor of an array, `np.float32(...)`, `.numpy()`)."""
    def project(x):
        w = torch.from_numpy(WEIGHTS)
        y = torch.relu(x @ w) + torch.as_tensor(np.float32(0.5))
        z = torch.tensor(WEIGHTS, dtype=torch.float64).sum(0)
        return y.sum(0), y.detach().numpy(), z

    return project, (_rand(torch, 5, 4),), lambda: []


def script_plumbing(torch):
    """Script code around a model: a device from a parameter and `torch.device("cpu")`, a
    Hann window over sliding windows (`unfold`), an AMP context picked by a flag
    (`contextlib.nullcontext()` when off), a metrics tracker testing `hasattr(v, "detach")`:
    `torch.device(...)`, `hann_window`, `nullcontext` and `hasattr` of a tensor were breaks."""
    import contextlib

    nn = torch.nn
    model = nn.Linear(8, 3)
    values = {}

    def run(signal, use_amp=False):
        device = next(model.parameters()).device
        win = signal.unfold(-1, 8, 4).to(device, non_blocking=True)
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if use_amp \
            else contextlib.nullcontext()
        with ctx:
            out = model(win).to(torch.device("cpu"))
        w = torch.hann_window(out.size(1), periodic=False) + 1e-3
        score = (out * w[:, None]).sum(1) / w.sum()
        for k, v in {"mean": score.mean(), "n": out.size(1)}.items():
            values[k] = v.detach() if hasattr(v, "detach") else v
        return score, out.device.type == "cpu"

    return run, (_rand(torch, 2, 20),), lambda: dict(values)


def nullcontext_break_inside(torch):
    """A break inside `with nullcontext():` (a print): the block's exit is rebuilt for the
    resumed code."""
    import contextlib

    def f(x):
        with contextlib.nullcontext():
            y = x * 2
            print("", end="")
            y = y + 1
        return y.sum()

    return f, (_rand(torch, 3, 2),), lambda: []


def best_snapshot(torch):
    """A best-model snapshot `{k: v.detach().clone() for k, v in model.state_dict().items()}`
    on a model with BatchNorm: state_dict's `name not in self._non_persistent_buffers_set`
    (`in` on a set attribute) was a break."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    best = {"loss": float("inf"), "state": None}

    def maybe_snapshot(val_loss):
        if val_loss < best["loss"]:
            best["loss"] = val_loss
            best["state"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        return best["loss"]

    return maybe_snapshot, (0.5,), lambda: [best["loss"], best["state"]]


def enum_config_and_named_parts(torch):
    """A head configured by an Enum member (`cfg.pool.value` returned, `is`/`==` branches) and
    features named by `dict(zip(names, torch.split(...)))`: the Enum's `value` (a descriptor)
    and `dict()` of pairs were breaks (torch.compile: 1 graph)."""
    import enum

    class Pool(enum.Enum):
        MEAN = "mean"
        MAX = "max"

    class Cfg:
        pool = Pool.MAX
        names = ["xy", "rgb", "alpha"]

    lin = torch.nn.Linear(6, 2)

    def head(points):
        feats = dict(zip(Cfg.names, torch.split(points, [2, 3, 1], dim=-1)))
        h = points.mean(0) if Cfg.pool is Pool.MEAN else points.amax(0)
        xs, ys = feats["xy"].unbind(-1)
        return lin(h), Cfg.pool.value, Cfg.pool.name, torch.hypot(xs, ys) * feats["alpha"][:, 0]

    def switch():
        Cfg.pool = Pool.MEAN  # (the next call takes the other branch: the member is guarded)
        return []

    return head, (_rand(torch, 4, 6),), switch


def named_param_decay(torch):
    """Weight decay over parameters picked by name tests, with a sorted report of the module
    names joined into a string: `sorted(<genexpr of str>)` and `"-".join(<list the code
    made>)` were breaks (torch.compile: 1 graph)."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 6), nn.LayerNorm(6), nn.Linear(6, 2))
    no_decay = ("bias", "1.weight")

    def l2_penalty(wd=0.01):
        decay = [p for n, p in model.named_parameters()
                 if not any(nd in n for nd in no_decay) and not n.endswith(".bias")]
        names = sorted((n.split(".")[0] for n, _ in model.named_parameters()), reverse=True)
        by_len = sorted(["ccc", "a", "bb"], key=len)
        return (wd * sum((p ** 2).sum() for p in decay), len(decay), "-".join(names).upper(),
                by_len)

    return l2_penalty, (0.01,), lambda: []


CASES = [
    (named_param_decay, 1, 0, 1, 0),
    (enum_config_and_named_parts, 1, 0, 1, 0),
    (best_snapshot, 1, 0, 1, 0),
    (script_plumbing, 1, 0, 1, 0),
    (nullcontext_break_inside, 2, 1, 2, 1),
    (wgan_gradient_penalty, 2, 1, 6, 5),  # (autograd.grad in the graph: autograd_grad.py)
    (numpy_interop, 1, 0, 1, 0),
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def test_double_backward_through_compiled_graph():
    """Second derivatives through a compiled graph whose input requires grad equal eager's
    (the backward under create_graph=True recomputes the graph through eager ops)."""
    def f(x, w):
        return (eager.tanh(x @ w) ** 3).sum()

    cf = capture.compile(f)
    capture.reset()
    got = []
    for fn in (f, cf, cf):
        x = _rand(eager, 3, 4).requires_grad_()
        w = _rand(eager, 4, 2, seed=2).requires_grad_()
        (gx,) = eager.autograd.grad(fn(x, w), x, create_graph=True)
        gx.pow(2).sum().backward()
        got.append((gx.detach(), x.grad, w.grad))
    _same(got[0], got[1])
    _same(got[0], got[2])


def test_numpy_interop_aliasing_and_errors():
    """`from_numpy(W)` reads the array on every call (an in-place change of W is seen; a new
    shape recompiles), `.numpy()` of a returned tensor shares its memory, and `.numpy()` of a
    tensor that requires grad raises as eagerly."""
    holder = {"w": np.ones((2, 2), np.float32)}

    class Box:
        w = holder["w"]

    def f(x):
        return x @ eager.from_numpy(Box.w), (x + 1).numpy()

    def g(x):
        y = x * 2
        return y, y.numpy()

    cf, cg = capture.compile(f), capture.compile(g)
    x = _rand(eager, 2, 2)
    _same(f(x), cf(x))
    Box.w *= 3.0
    _same(f(x), cf(x))
    Box.w = np.ones((2, 3), np.float32)
    _same(f(x), cf(x))
    y, a = cg(x)
    assert np.shares_memory(y.numpy(), a)
    with pytest.raises(RuntimeError):
        capture.compile(lambda t: (t * 2).numpy())(x.clone().requires_grad_())


def test_contains_on_a_set_attribute_is_guarded():
    """`name in self._names` (a set of strings): folded and guarded on the set's contents, so
    a changed set recompiles instead of replaying the old answer."""
    class Holder:
        names = {"a", "b"}

    def f(x):
        return x + 1 if "c" in Holder.names else x - 1

    cf = capture.compile(f)
    x = _rand(eager, 3)
    _same(f(x), cf(x))
    Holder.names.add("c")
    _same(f(x), cf(x))
    assert len(cf.__wick_compiled__.entries) == 2


def cosine_schedule(torch):
    """A warmup + cosine factor computed from a Python step that changes every call."""
    import math

    model = torch.nn.Linear(3, 3)

    def scaled(x, step, total=20, warmup=2):
        if step < warmup:
            factor = (step + 1) / warmup
        else:
            progress = (step - warmup) / max(1, total - warmup)
            factor = 0.5 * (1.0 + math.cos(math.pi * progress))
        return model(x) * factor

    return scaled


def test_dynamic_step_branches_and_math():
    """A step argument seen with a second value becomes dynamic; `step < warmup` is guarded as
    a comparison and `math.cos` of it is computed in the graph: 3 entries over steps 0..6
    (torch.compile: 3 graphs), not one per step (was 7)."""
    eager.manual_seed(0)
    f = cosine_schedule(eager)
    cf = capture.compile(f)
    x = _rand(eager, 2, 3)
    for step in range(7):
        _same(f(x, step), cf(x, step))
    assert len(cf.__wick_compiled__.entries) == 3


def test_dynamic_step_counts_like_torch():
    torch = pytest.importorskip("torch")
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()
    f = torch.compile(cosine_schedule(torch), backend="eager")
    x = torch.ones(2, 3)
    for step in range(7):
        f(x, step)
    assert counters["stats"]["unique_graphs"] == 3


def test_dynamic_number_compare_guards():
    """The comparison guard holds for later values: crossing the threshold recompiles, a
    value on the same side reuses the entry; `x < inf` is not guarded by a bad literal."""
    def f(x, n):
        y = x * 2 if n < 3 else x - 1
        return y * n if n < float("inf") else y

    cf = capture.compile(f)
    x = _rand(eager, 2)
    for n in (0, 1, 2, 5, 7, 1):
        _same(f(x, n), cf(x, n))


def test_comprehension_resumed_after_a_break():
    """A 3.11 dict comprehension (a function whose parameter is `.0`) compiled as its own
    frame after a break in its caller (a defaultdict): its guard was generated as
    `def guard(.0)`, a SyntaxError that crashed the call."""
    import collections

    def per_class(loss, y):
        per = collections.defaultdict(list)
        for c in range(3):
            m = (y == c).float()
            per[f"c{c}"].append((loss * m).sum() / m.sum().clamp(min=1))
        return {k: eager.stack(v) for k, v in per.items()}

    loss = _rand(eager, 7)
    y = eager.tensor(np.array([0, 1, 2, 0, 1, 1, 0]))
    cf = capture.compile(per_class)
    for _ in range(2):
        _same(per_class(loss, y), cf(loss, y))


def test_defaultdict_made_by_the_code():
    """`collections.defaultdict(list)` / `(int)` made by the code: misses call the factory,
    the dict leaves the graph (returned, or live across a break) as a defaultdict with its
    factory; was a break at the constructor, every subscript and `.items()`."""
    import collections

    def f(loss, y):
        per, counts = collections.defaultdict(list), collections.defaultdict(int)
        for c in range(3):
            m = (y == c).float()
            per[f"c{c}"].append((loss * m).sum())
            counts["seen"] += 1
        return {k: eager.stack(v) for k, v in per.items()}, counts, per

    def g(x):
        d = collections.defaultdict(list)
        d["a"].append(x * 2)
        print("", end="")  # a break with `d` live
        d["b"].append(x + 1)
        return d

    loss = _rand(eager, 7)
    y = eager.tensor(np.array([0, 1, 2, 0, 1, 1, 0]))
    capture.reset()
    ex = capture.explain(f)(loss, y)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0) and not ex.unique_break_reasons
    cf, cg = capture.compile(f), capture.compile(g)
    for _ in range(2):
        want, got = f(loss, y), cf(loss, y)
        _same(want, got)
        assert type(got[1]) is collections.defaultdict and got[1].default_factory is int
        assert got[2].default_factory is list and got[2]["new"] == []
        dg = cg(loss)
        assert type(dg) is collections.defaultdict and dg.default_factory is list
        _same(dict(g(loss)), dict(dg))
