"""Scientific, graph, RL, probabilistic, recommender, detection and audio code that capture (or
eager under it) got wrong or broke on (issue 14's bar, held-out set P: programs written as users
write them, /work/notes/capture_bar/programs_p*.py). Each case is built by `case(lib)` for `lib`
= wick's `eager` or the real torch; it runs eagerly and compiled (twice: capture, then the cache
hit) from the same seed, comparing outputs (values and dtypes) and the state it names; its graph
and break counts from `capture.explain` are checked, and when torch is installed
torch._dynamo.explain's counts on the same code are too.
"""

from __future__ import annotations

import numpy as np
import pytest
from capture_cases import case_tests, same
from capture_cases import rand as _rand

import capture
import eager


def _ints(lib, hi, *shape, seed=2):
    return lib.tensor(np.random.default_rng(seed).integers(0, hi, shape).astype(np.int64))


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in [k] + _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [type(v).__qualname__] + [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def _same(a, b):
    same(a, b, _flat)


def fcos_range_index(torch):
    """FCOS regression targets: `reg[range(len(points)), gt_idx]` picks each point's box (a
    `range` is a valid index sequence in torch; wick eager raised IndexError)."""
    def targets(points, boxes):
        xs, ys = points[:, 0], points[:, 1]
        reg = torch.stack([xs[:, None] - boxes[:, 0][None], ys[:, None] - boxes[:, 1][None],
                           boxes[:, 2][None] - xs[:, None], boxes[:, 3][None] - ys[:, None]], 2)
        areas = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        areas = areas[None].repeat(len(points), 1)
        areas[reg.min(dim=2).values <= 0] = float("inf")
        _, gt_idx = areas.min(dim=1)
        return reg[range(len(points)), gt_idx], reg[:, range(1, 3)]

    g = np.random.default_rng(4)
    points = torch.tensor(g.uniform(0, 60, (6, 2)).astype(np.float32))
    xy = g.uniform(0, 40, (3, 2))
    boxes = torch.tensor(np.concatenate([xy, xy + 25], 1).astype(np.float32))
    return targets, (points, boxes), lambda: []


def fft_lowpass_rfftfreq(torch):
    """A low-pass filter masking `rfft` by `torch.fft.rfftfreq(n)` (and a band of
    `fftfreq(n, d)`): constant factories of eager.fft (each was a named break)."""
    def lowpass(signal, cutoff=0.25):
        n = signal.shape[-1]
        spec = torch.fft.rfft(signal, dim=-1)
        mask = (torch.fft.rfftfreq(n) <= cutoff * 0.5).to(spec.dtype)
        band = torch.fft.fftfreq(n, d=0.5).abs().max()
        return torch.fft.irfft(spec * mask, n=n, dim=-1), band

    return lowpass, (_rand(torch, 3, 20),), lambda: []


def stft_spectral_loss(torch):
    """A multi-resolution STFT loss (`torch.stft(..., return_complex=True)`, and the method
    form with no window): eager's stft is written in registry ops and is inlined (it was a
    named break: 1 graph plus an eager call per resolution)."""
    F = torch.nn.functional

    def loss(pred, target, sizes=((16, 4), (32, 8))):
        total = 0.0
        for n_fft, hop in sizes:
            w = torch.hann_window(n_fft)
            P = torch.stft(pred, n_fft, hop, window=w, return_complex=True).abs()
            T = target.stft(n_fft, hop, return_complex=True).abs()
            total = total + F.l1_loss(torch.log(P + 1e-5), torch.log(T + 1e-5))
        return total, torch.stft(pred, 16, 8, window=torch.hann_window(16), center=False,
                                 return_complex=True).angle()

    return loss, (_rand(torch, 2, 64), _rand(torch, 2, 64, seed=3)), lambda: []


def flow_base_distribution(torch):
    """A RealNVP-style flow keeps its base `Normal` made in `__init__` and calls
    `self.base.log_prob(z)` in forward: as under torch.compile (whose TorchPatcher sets
    `Distribution.set_default_validate_args(False)`), compiling turns off the default sample
    validation (its `bool(valid.all())` was a break: 2 graphs)."""
    nn = torch.nn

    class Flow(nn.Module):
        def __init__(self):
            super().__init__()
            self.scale = nn.Linear(3, 3)
            self.base = torch.distributions.Normal(torch.zeros(3), torch.ones(3))

        def forward(self, x):
            s = self.scale(x).tanh()
            z = x * s.exp()
            return self.base.log_prob(z).sum(-1) + s.sum(-1)

    return Flow(), (_rand(torch, 4, 3),), lambda: []


def monte_carlo_manual_seed(torch):
    """A Monte Carlo estimate that seeds itself (`torch.manual_seed(0)` inside the function),
    draws, reseeds and draws again: the seeded state is a graph input and the generator (and
    `initial_seed()`) end where eager leaves them (it was a named break at manual_seed)."""
    def price(s0, strike, n_paths=64):
        warm = torch.rand(3)
        torch.manual_seed(0)
        z = torch.randn(n_paths, s0.shape[-1])
        s = s0 * torch.exp(-0.02 + 0.2 * z)
        payoff = torch.clamp(s - strike, min=0.0).mean(0)
        torch.manual_seed(7)
        return payoff, warm, torch.rand(2)

    def state():
        return [torch.initial_seed(), torch.rand(2)]

    return price, (_rand(torch, 1, 3) + 10.0, torch.tensor([9.0, 10.0, 11.0])), state


def vmap_per_sample(torch):
    """`torch.vmap(f, in_dims=(0, None, None))` and `torch.func.vmap(g, out_dims=1)` of
    per-sample functions (a tuple result, a library function mapped): eager's vmap is a loop
    over the mapped dim, inlined and unrolled (it was 0 graphs: the whole call eager)."""
    def rbf_row(x, X, ls):
        d = ((x - X) ** 2).sum(-1)
        return torch.exp(-d / (2 * ls ** 2)), d.argmin()

    def scaled(x, w):
        return x * w

    def kernel(X, Z, W):
        K, nearest = torch.vmap(rbf_row, in_dims=(0, None, None))(X, Z, 1.5)
        norms = torch.vmap(torch.linalg.norm)(X)
        cols = torch.func.vmap(scaled, in_dims=(1, 0), out_dims=1)(X, W)
        return K, nearest, norms, cols

    return kernel, (_rand(torch, 5, 3), _rand(torch, 4, 3, seed=2),
                    _rand(torch, 3, seed=3)), lambda: []


def transformed_distributions(torch):
    """LogNormal, a TransformedDistribution of Normal by Affine then Exp transforms (log_prob,
    cdf, icdf, rsample-free), and a callable object the code makes (`Scale(2.0)(x)`): a
    transform's class-level constraint (`t.codomain.event_dim`) and the `_InverseTransform`
    call `t.inv(y)` were breaks (torch.compile: 1/0)."""
    D = torch.distributions

    class Scale:
        def __init__(self, k):
            self.k = k

        def __call__(self, x):
            return x * self.k

    def f(mu, y, p):
        ln = D.LogNormal(mu, 0.5)
        td = D.TransformedDistribution(D.Normal(mu, 1.0),
                                       [D.AffineTransform(0.5, 2.0), D.ExpTransform()])
        return (ln.log_prob(y), td.log_prob(y), td.cdf(y), td.icdf(p), ln.mean,
                Scale(2.0)(y))

    return f, (_rand(torch, 5), _rand(torch, 5, seed=2).abs() + 0.1,
               torch.tensor([0.1, 0.3, 0.5, 0.7, 0.9])), lambda: []


CASES = [
    (fcos_range_index, 1, 0, 1, 0),
    (fft_lowpass_rfftfreq, 1, 0, 1, 0),
    (stft_spectral_loss, 1, 0, 1, 0),
    (flow_base_distribution, 1, 0, 1, 0),
    (monte_carlo_manual_seed, 1, 0, 3, 2),
    (vmap_per_sample, 1, 0, 1, 0),
    (transformed_distributions, 1, 0, 1, 0),  # (torch: manual_seed is a skipped function)
]

test_compiled_like_eager, test_torch_compile_counts = case_tests(CASES, _same)


def test_range_index_in_eager_as_torch():
    """`x[range(...)]` and `x[range(...), t]` index as the list of the range's items."""
    x = eager.arange(12.0).reshape(4, 3)
    np.testing.assert_array_equal(x[range(1, 4, 2)].numpy(), x.numpy()[[1, 3]])
    idx = eager.tensor([2, 0, 1, 1])
    np.testing.assert_array_equal(x[range(4), idx].numpy(), x.numpy()[range(4), [2, 0, 1, 1]])


@pytest.mark.parametrize("lib", ["eager", "torch"])
def test_compile_turns_off_default_distribution_validation(lib):
    """After `compile(f)`, a distribution validates only with `validate_args=True` (torch's
    TorchPatcher does this on torch.compile)."""
    mod = eager if lib == "eager" else pytest.importorskip("torch")
    comp = capture.compile if lib == "eager" else mod.compile
    comp(lambda x: x + 1)
    D = mod.distributions
    assert D.Normal(mod.tensor([0.0]), mod.tensor([-1.0])).scale.item() == -1.0
    with pytest.raises(ValueError):
        D.Normal(mod.tensor([0.0]), mod.tensor([-1.0]), validate_args=True)


def test_vmap_break_inside_and_size_error_as_eager():
    """A break inside the mapped function runs the vmap call eagerly (named at the user's
    call); mismatched mapped sizes raise eager's ValueError from the compiled function."""
    def f(x, y):
        return eager.vmap(lambda a, b: a * float(b.sum()))(x, y) + 1

    x, y = _rand(eager, 3, 2), _rand(eager, 3, 4, seed=2)
    capture.reset()
    np.testing.assert_allclose(capture.compile(f)(x, y).numpy(), f(x, y).numpy(), rtol=1e-6)
    ex = capture.explain(f)(x, y)
    assert [b.reason for b in ex.unique_break_reasons] == ["call to builtin float"], str(ex)
    with pytest.raises(ValueError, match="same size"):
        capture.compile(f)(x, _rand(eager, 2, 4))


def test_random_draw_beside_an_automatic_dynamic_number():
    """A Metropolis sampler counts `self.accepted += 1` (an automatic-dynamic number from the
    second call on) and draws with randn_like/rand: the draws stay in the graph (they were a
    break, "random ops in a graph with dynamic shapes", from the second capture on); results,
    the counter and the generator follow eager call after call."""
    nn = eager.nn

    class Sampler(nn.Module):
        def __init__(self):
            super().__init__()
            self.accepted = 0

        def forward(self, x):
            prop = x + 0.5 * eager.randn_like(x)
            accept = eager.rand(x.shape[0]) < 0.5
            self.accepted += 1
            return eager.where(accept.unsqueeze(-1), prop, x)

    runs = []
    for compiled in (False, True):
        capture.reset()
        m = Sampler()
        fn = capture.compile(m) if compiled else m
        out = []
        for i in range(4):
            eager.manual_seed(i)
            out.append((fn(_rand(eager, 3, 2)).numpy(), m.accepted, eager.rand(1).item()))
        runs.append(out)
        if compiled:
            entries = [e for cf in capture.registry.COMPILED for e in cf.entries]
            assert len(entries) == 2 and all(e.break_reason is None for e in entries)
    for (a, n1, r1), (b, n2, r2) in zip(*runs):
        np.testing.assert_array_equal(a, b)
        assert (n1, r1) == (n2, r2)
