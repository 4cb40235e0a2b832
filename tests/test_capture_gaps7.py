"""Ordinary model code that capture broke on (issue 14's bar, held-out set L): each case is a
model written as PyTorch code and built by `build(lib)` for `lib` = wick's `eager` or the real
torch. It runs eagerly and compiled (twice: capture, then the cache hit) from the same seed,
comparing outputs (values and dtypes) and the state it names; its graph and break counts from
`capture.explain` are checked, and when torch is installed torch._dynamo.explain's counts on the
same code are too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from capture_cases import check_like_eager, check_torch_counts, same
from capture_cases import rand as _rand

import eager


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    if hasattr(v, "__dict__") and not isinstance(v, type):  # an object the case made
        return [type(v).__qualname__] + _flat(vars(v))
    return [v]


def _same(a, b):
    same(a, b, _flat)


def yolo_grid_decode(torch):
    """A YOLO-style head decoding box centres on a cell grid made by `torch.meshgrid(...,
    indexing="ij")` and `torch.stack` (meshgrid, written in eager's ops, was one break)."""
    nn = torch.nn

    class Head(nn.Module):
        def __init__(self, cin=8, na=2, nc=3, stride=8):
            super().__init__()
            self.na, self.no, self.stride = na, nc + 5, stride
            self.conv = nn.Conv2d(cin, na * (nc + 5), 1)
            self.register_buffer("anchors", torch.tensor([[10.0, 13.0], [16.0, 30.0]]))

        def forward(self, x):
            bs, _, ny, nx = x.shape
            p = self.conv(x).view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2)
            yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
            grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
            y = p.sigmoid()
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * self.stride
            wh = (y[..., 2:4] * 2) ** 2 * self.anchors.view(1, self.na, 1, 1, 2)
            return torch.cat((xy, wh, y[..., 4:]), -1).view(bs, -1, self.no)

    m = Head()
    return m, (_rand(torch, 2, 8, 3, 4),), lambda: list(m.buffers())


def anchor_grid_xy(torch):
    """Anchor centres for a feature map: `meshgrid(..., indexing="xy")` of shifted aranges,
    and all (scale, ratio) pairs by `torch.cartesian_prod`."""
    nn = torch.nn

    class AnchorGen(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("scales", torch.tensor([32.0, 64.0]))
            self.register_buffer("ratios", torch.tensor([0.5, 1.0, 2.0]))

        def forward(self, feat, stride: int = 16):
            h, w = feat.shape[-2:]
            sx = (torch.arange(w, dtype=torch.float32) + 0.5) * stride
            sy = (torch.arange(h, dtype=torch.float32) + 0.5) * stride
            cx, cy = torch.meshgrid(sx, sy, indexing="xy")
            sr = torch.cartesian_prod(self.scales, self.ratios)
            ws, hs = sr[:, 0] * sr[:, 1].sqrt(), sr[:, 0] / sr[:, 1].sqrt()
            base = torch.stack([-ws, -hs, ws, hs], 1) / 2
            centres = torch.stack([cx, cy, cx, cy], -1).reshape(-1, 1, 4)
            return (centres + base).reshape(-1, 4) * feat.mean()

    m = AnchorGen()
    return m, (_rand(torch, 1, 4, 3, 5),), list


def dlrm_interaction(torch):
    """DLRM's pairwise feature interaction: the strictly lower triangle of Z Z^T picked with
    `torch.tril_indices(n, n, offset=-1)` (a factory of constants; it was one break)."""
    nn = torch.nn

    class DLRM(nn.Module):
        def __init__(self, d=4, n_sparse=3, vocab=10):
            super().__init__()
            self.bottom = nn.Sequential(nn.Linear(5, d), nn.ReLU())
            self.embs = nn.ModuleList(nn.Embedding(vocab, d) for _ in range(n_sparse))
            n = n_sparse + 1
            self.top = nn.Linear(d + n * (n - 1) // 2, 1)

        def forward(self, dense, sparse):
            x = self.bottom(dense)
            feats = [x] + [emb(sparse[:, i]) for i, emb in enumerate(self.embs)]
            T = torch.stack(feats, dim=1)
            Z = torch.bmm(T, T.transpose(1, 2))
            li, lj = torch.tril_indices(T.shape[1], T.shape[1], offset=-1)
            return torch.sigmoid(self.top(torch.cat([x, Z[:, li, lj]], dim=1)))

    m = DLRM()
    sparse = torch.tensor(np.random.default_rng(4).integers(0, 10, (3, 3)))
    return m, (_rand(torch, 3, 5), sparse), list


def series_diff_features(torch):
    """Time-series features: first differences with `torch.diff(..., prepend=)`, a
    `torch.trapezoid` area, and a covariance-whitened summary with `torch.cov`."""
    nn = torch.nn

    class Feats(nn.Module):
        def __init__(self, c=3):
            super().__init__()
            self.proj = nn.Linear(2 * c + 1, 4)

        def forward(self, x):
            d = torch.diff(x, dim=-1, prepend=x[..., :1])
            area = torch.trapezoid(x, dx=0.1, dim=-1)
            cov = torch.cov(x[0])
            white = torch.atleast_2d(cov.diagonal()).rsqrt()
            feats = torch.cat([d.abs().mean(-1) * white, area, cov.trace().expand(x.shape[0], 1)],
                              -1)
            return self.proj(feats)

    m = Feats()
    return m, (_rand(torch, 2, 3, 7),), list


def grouped_block_diag(torch):
    """A grouped linear layer as one matmul with a `torch.block_diag` of per-group weights
    (block_diag promotes the blocks' dtypes with `promote_types` of constant dtypes)."""
    nn = torch.nn

    class GroupedLinear(nn.Module):
        def __init__(self, groups=3, din=2, dout=3):
            super().__init__()
            self.w = nn.ParameterList(nn.Parameter(torch.randn(din, dout) * 0.5)
                                      for _ in range(groups))
            self.bias = nn.Parameter(torch.zeros(groups * dout))

        def forward(self, x):
            return x @ torch.block_diag(*self.w) + self.bias

    m = GroupedLinear()
    return m, (_rand(torch, 4, 6),), lambda: list(m.parameters())


def gaussian_policy(torch):
    """A policy-gradient actor: `torch.distributions.Normal(mu, log_std.exp())`, `log_prob` and
    `entropy` of the actions (the distribution was a break at its construction, its methods
    one each: eager's distributions are now inlined as user code, as Dynamo inlines
    torch.distributions)."""
    nn = torch.nn
    from importlib import import_module

    dist = import_module(torch.__name__ + ".distributions")

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.mu = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
            self.log_std = nn.Parameter(torch.zeros(2) - 0.5)

        def forward(self, obs, act):
            d = dist.Normal(self.mu(obs), self.log_std.exp())
            sample = d.rsample()
            return d.log_prob(act).sum(-1), d.entropy().sum(-1), sample.shape

    m = Policy()
    return m, (_rand(torch, 3, 4), _rand(torch, 3, 2, seed=5)), list


def dtype_dispatch_cast(torch):
    """A mixed-precision-safe layer norm that branches on `x.is_floating_point()` /
    `x.is_complex()` and reads `x.ndimension()` / `x.nelement()` (each was a break: Tensor
    methods with no registry op)."""
    nn = torch.nn

    class SafeNorm(nn.Module):
        def __init__(self, d=6):
            super().__init__()
            self.ln = nn.LayerNorm(d)

        def forward(self, x, ids):
            if not x.is_floating_point() or x.is_complex():
                x = x.float()
            h = self.ln(x)
            if ids.is_floating_point():
                ids = ids.long()
            scale = 1.0 / math.sqrt(h.nelement() / h.shape[0])
            return h.flatten(0, x.ndimension() - 2) * scale, ids * 2

    m = SafeNorm()
    return m, (_rand(torch, 2, 3, 6), torch.tensor(np.arange(4))), list


def ppo_categorical(torch):
    """A PPO actor-critic: `Categorical(logits=...)` (its `probs` a lazy property computed on
    first read), `sample`, `log_prob`, `entropy` (which clamps with the dtype's finfo), and a
    `Bernoulli(logits=...)` head (its `__init__` stores the parameter with `setattr`)."""
    nn = torch.nn
    from importlib import import_module

    dist = import_module(torch.__name__ + ".distributions")

    class ActorCritic(nn.Module):
        def __init__(self, obs=4, acts=3):
            super().__init__()
            self.body = nn.Sequential(nn.Linear(obs, 16), nn.Tanh())
            self.pi, self.v, self.stop = nn.Linear(16, acts), nn.Linear(16, 1), nn.Linear(16, 1)

        def forward(self, obs, actions, old_logp, adv, clip: float = 0.2):
            h = self.body(obs)
            d = dist.Categorical(logits=self.pi(h))
            logp = d.log_prob(actions)
            ratio = (logp - old_logp).exp()
            surr = torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv)
            stop = dist.Bernoulli(logits=self.stop(h).squeeze(-1))
            stop_lp = stop.log_prob((adv > 0).float())
            loss = -surr.mean() - 0.01 * d.entropy().mean() + self.v(h).pow(2).mean()
            return loss, d.probs, stop_lp, d.sample().shape

    m = ActorCritic()
    acts = torch.tensor(np.array([0, 2, 1, 1]))
    return m, (_rand(torch, 4, 4), acts, _rand(torch, 4, seed=3) - 1.0,
               _rand(torch, 4, seed=4)), list


def distillation_no_grad_block(torch):
    """A knowledge-distillation step: the teacher runs in `with torch.no_grad():`, then the
    student's loss, `backward()` (a break) and an SGD step. On 3.12+ the `with` block's
    exception path jumps backward to the code after it, which capture took for a loop around
    the rest of the function: the student ran eagerly (1 graph, the teacher's; 2 on 3.11)."""
    nn, F = torch.nn, torch.nn.functional
    teacher = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 4)).eval()
    student = nn.Linear(6, 4)
    opt = torch.optim.SGD(student.parameters(), lr=0.1)

    def step(x, y, T: float = 2.0, alpha: float = 0.5):
        with torch.no_grad():
            t_logits = teacher(x)
        s_logits = student(x)
        soft = F.kl_div(F.log_softmax(s_logits / T, dim=-1), F.softmax(t_logits / T, dim=-1),
                        reduction="batchmean") * T * T
        loss = alpha * soft + (1 - alpha) * F.cross_entropy(s_logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss.detach()

    y = torch.tensor(np.array([0, 3, 1, 2, 2]))
    return step, (_rand(torch, 5, 6), y), lambda: list(student.parameters())


def vae_kl_divergence(torch):
    """A VAE's ELBO with torch.distributions: `Normal(mu, std).rsample()` and
    `kl_divergence(q, Normal(0, 1))` (the closed form is looked up in a registry keyed by the
    classes: iterating over that dict was a break)."""
    nn, F = torch.nn, torch.nn.functional
    from importlib import import_module

    dist = import_module(torch.__name__ + ".distributions")

    class VAE(nn.Module):
        def __init__(self, d=6, z=2):
            super().__init__()
            self.enc = nn.Linear(d, 2 * z)
            self.dec = nn.Linear(z, d)

        def forward(self, x):
            mu, log_var = self.enc(x).chunk(2, dim=-1)
            q = dist.Normal(mu, torch.exp(0.5 * log_var))
            prior = dist.Normal(torch.zeros_like(mu), torch.ones_like(mu))
            recon = self.dec(q.rsample())
            kl = dist.kl_divergence(q, prior).sum(-1)
            return F.mse_loss(recon, x, reduction="none").sum(-1) + kl, kl

    m = VAE()
    return m, (_rand(torch, 3, 6),), list


def embedding_bag_sparse_features(torch):
    """DLRM-style sparse features: one `nn.EmbeddingBag` per feature over fixed-length bags
    (2-D input), sum / mean / max modes and per-sample weights (eager's embedding_bag read the
    indices on the host: one break per bag)."""
    nn = torch.nn

    class SparseArch(nn.Module):
        def __init__(self, vocab=10, d=4):
            super().__init__()
            self.bags = nn.ModuleList(nn.EmbeddingBag(vocab, d, mode=m)
                                      for m in ("sum", "mean", "max"))
            self.top = nn.Linear(3 * d, 1)

        def forward(self, sparse, weights):
            pooled = [bag(sparse[:, i]) for i, bag in enumerate(self.bags)]
            pooled[0] = pooled[0] + self.bags[0](sparse[:, 0], per_sample_weights=weights)
            return torch.sigmoid(self.top(torch.cat(pooled, dim=1)))

    m = SparseArch()
    sparse = torch.tensor(np.random.default_rng(4).integers(0, 10, (3, 3, 2)))
    return m, (sparse, _rand(torch, 3, 2, seed=6)), list


def lstm_repackage_hidden(torch):
    """Truncated BPTT: the classic recursive `repackage_hidden` (a nested function calling itself
    from a generator expression) detaches the LSTM state before the step. 3.13 builds the
    genexpr's closure with LOAD_FAST of the free variable: capture raised UnboundLocalError
    there (0 graphs on 3.13 only)."""
    nn, F = torch.nn, torch.nn.functional

    class RNNLM(nn.Module):
        def __init__(self, vocab=15, d=8):
            super().__init__()
            self.emb = nn.Embedding(vocab, d)
            self.lstm = nn.LSTM(d, d, num_layers=2, batch_first=True)
            self.out = nn.Linear(d, vocab)

        def forward(self, x, hidden):
            h, hidden = self.lstm(self.emb(x), hidden)
            return self.out(h), hidden

    def repackage_hidden(h):
        if isinstance(h, torch.Tensor):
            return h.detach()
        return tuple(repackage_hidden(v) for v in h)

    m = RNNLM()

    def step(x, y, h0, c0):
        hidden = repackage_hidden((h0, c0))
        logits, hidden = m(x, hidden)
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))
        return loss, hidden

    rng = np.random.default_rng(3)
    x, y = (torch.tensor(rng.integers(0, 15, (2, 5))) for _ in range(2))
    return step, (x, y, _rand(torch, 2, 2, 8), _rand(torch, 2, 2, 8, seed=5)), list


def target_net_soft_update(torch):
    """A DDPG-style soft target update through `detach()`: `tp.detach().mul_(1 - tau)` and
    `.add_(p.detach(), alpha=tau)` after the critic's forward. The detached views came back
    from the graph as no_grad views of the leaf, so the in-place op raised "a view of a leaf
    Variable that requires grad is being used in an in-place operation" (eager allows it)."""
    nn = torch.nn
    critic = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    target = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))

    def step(s, tau: float = 0.1):
        q = critic(s)
        with torch.no_grad():
            q_next = target(s)
        for tp, p in zip(target.parameters(), critic.parameters()):
            tp.detach().mul_(1 - tau).add_(p.detach(), alpha=tau)
        w = critic[0].weight.detach()
        w.mul_(0.99)
        return q.sum(), q_next.sum(), w.sum()

    return step, (_rand(torch, 3, 4),), lambda: list(target.parameters()) + \
        list(critic.parameters())


CASES = [
    (yolo_grid_decode, 1, 0, 1, 0),
    (anchor_grid_xy, 1, 0, 1, 0),
    (dlrm_interaction, 1, 0, 1, 0),
    (series_diff_features, 1, 0, 2, 1),  # torch: its cov decomposition calls aten.equal
    (grouped_block_diag, 1, 0, 1, 0),
    (gaussian_policy, 1, 0, 1, 0),
    (dtype_dispatch_cast, 1, 0, 1, 0),
    (ppo_categorical, 1, 0, 1, 0),
    (embedding_bag_sparse_features, 1, 0, 1, 0),
    (vae_kl_divergence, 1, 0, 2, 1),
    (lstm_repackage_hidden, 1, 0, 2, 1),
    (target_net_soft_update, 1, 0, 1, 0),
    (distillation_no_grad_block, 2, 1, 3, 2),  # torch: a second break in its SGD step
]

IDS = [c[0].__name__ for c in CASES]


@pytest.mark.parametrize("case,graphs,breaks,tg,tb", CASES, ids=IDS)
def test_compiled_like_eager(case, graphs, breaks, tg, tb):
    check_like_eager(case, graphs, breaks, _same)


def _clear_kl_memo(torch):
    import torch.distributions.kl as torch_kl

    getattr(torch_kl, "_KL_MEMOIZE", {}).clear()


@pytest.mark.parametrize("case,graphs,breaks,tg,tb", CASES, ids=IDS)
def test_torch_compile_counts(case, graphs, breaks, tg, tb):
    # torch's kl_divergence breaks on its first lookup of a pair of classes only: clear its
    # memo so that its counts do not depend on which tests ran before (test_distributions)
    check_torch_counts(case, tg, tb, before=_clear_kl_memo)