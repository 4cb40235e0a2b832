"""Ordinary model code that broke capture (issue 14's bar, measured on programs outside the
project): each case is a realistic model or step written as PyTorch code, run eagerly and
compiled (twice: capture, then the cache hit) from the same seed, comparing outputs (values and
dtypes) and the state the case names (parameters, buffers, Python attributes); and its graph and
break counts from `capture.explain` (torch.compile gives 1 graph / 0 breaks on each, except the
GAN step: `backward()` breaks in both).
"""

from __future__ import annotations

import math
import typing

import numpy as np
import pytest

import capture
import eager as torch
from eager import nn
from eager.nn import functional as F


def _rand(*shape, seed=1):
    return torch.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def _ints(hi, *shape, seed=2):
    return torch.tensor(np.random.default_rng(seed).integers(0, hi, shape))


def _flat(v):
    if isinstance(v, dict):
        return [x for k in sorted(v) for x in _flat(v[k])]
    if isinstance(v, (list, tuple)):
        return [x for item in v for x in _flat(item)]
    if isinstance(v, torch.Tensor):
        return [v.detach()]
    return [v]


def _same(a, b):
    fa, fb = _flat(a), _flat(b)
    assert len(fa) == len(fb)
    for x, y in zip(fa, fb):
        if isinstance(x, torch.Tensor):
            assert isinstance(y, torch.Tensor) and x.dtype is y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-5, atol=1e-6)
        else:
            assert x == y


# ---------------------------------------------------------------- cases


def llama_ffn():
    """RMSNorm + SwiGLU with bias-free Linears (F.linear(x, w, None))."""
    class RMSNorm(nn.Module):
        def __init__(self, d, eps=1e-6):
            super().__init__()
            self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight

    class FFN(nn.Module):
        def __init__(self, d=16, h=32):
            super().__init__()
            self.norm = RMSNorm(d)
            self.w1, self.w2 = nn.Linear(d, h, bias=False), nn.Linear(h, d, bias=False)
            self.w3 = nn.Linear(d, h, bias=False)

        def forward(self, x):
            h = self.norm(x)
            return x + self.w2(F.silu(self.w1(h)) * self.w3(h))

    m = FFN()
    return m, (_rand(2, 5, 16),), list


def einsum_attention():
    """einsum with the equation first (spread and list forms), map over q/k/v, a padding
    mask filled with -inf."""
    class MHA(nn.Module):
        def __init__(self, d=12, h=3):
            super().__init__()
            self.h = h
            self.to_q, self.to_kv = nn.Linear(d, d), nn.Linear(d, 2 * d)

        def forward(self, x, pad):
            q = self.to_q(x)
            k, v = self.to_kv(x).chunk(2, dim=-1)
            q, k, v = map(lambda t: t.view(t.shape[0], -1, self.h, t.shape[-1] // self.h),  # noqa: C417
                          (q, k, v))
            sim = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(q.shape[-1])
            sim = sim.masked_fill(pad[:, None, None, :], float("-inf"))
            out = torch.einsum("bhij,bjhd->bihd", [sim.softmax(-1), v])
            return out.reshape(x.shape[0], x.shape[1], -1)

    pad = torch.tensor(np.array([[False] * 5 + [True], [False] * 6]))
    return MHA(), (_rand(2, 6, 12), pad), list


def gated_tcn():
    """Conv1d layers (kernel/stride/dilation tuples built by `(k,) * n`), causal F.pad, a
    subclass of Conv1d calling super().forward, split gates."""
    class CausalConv1d(nn.Conv1d):
        def __init__(self, cin, cout, k, dilation=1):
            super().__init__(cin, cout, k, dilation=dilation)
            self.left = (k - 1) * dilation

        def forward(self, x):
            return super().forward(F.pad(x, (self.left, 0)))

    class Net(nn.Module):
        def __init__(self, c=4):
            super().__init__()
            self.inp = nn.Conv1d(1, c, 1)
            self.convs = nn.ModuleList([CausalConv1d(c, 2 * c, 2, 2 ** i) for i in range(3)])

        def forward(self, x):
            x = self.inp(x)
            for conv in self.convs:
                filt, gate = conv(x).split(x.size(1), dim=1)
                x = x + torch.tanh(filt) * torch.sigmoid(gate)
            return x

    return Net(), (_rand(2, 1, 16),), list


def gru_decoder():
    """A GRUCell decoder unrolled over the target with dot attention (type(self).__name__ in
    the cell's checks), returning a tuple of stacked steps."""
    class Dec(nn.Module):
        def __init__(self, vocab=11, d=8):
            super().__init__()
            self.emb, self.cell = nn.Embedding(vocab, d), nn.GRUCell(2 * d, d)
            self.out = nn.Linear(2 * d, vocab)

        def forward(self, tgt, h, enc):
            logits = []
            for t in range(tgt.size(1)):
                alpha = F.softmax(torch.bmm(enc, h.unsqueeze(2)).squeeze(2), dim=1)
                ctx = (alpha.unsqueeze(2) * enc).sum(1)
                h = self.cell(torch.cat([self.emb(tgt[:, t]), ctx], -1), h)
                logits.append(self.out(torch.cat([h, ctx], -1)))
            return torch.stack(logits, 1), h

    return Dec(), (_ints(11, 2, 3), _rand(2, 8), _rand(2, 5, 8, seed=3)), list


def kv_presents():
    """A GPT-2 style cache: past (k, v) concatenated, presents built as `() + (p,)`."""
    class Attn(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.qkv = nn.Linear(d, 3 * d)

        def forward(self, x, past):
            q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
            k, v = torch.cat((past[0], k), dim=1), torch.cat((past[1], v), dim=1)
            w = F.softmax(q @ k.transpose(-1, -2) / float(v.size(-1)) ** 0.5, dim=-1)
            return w @ v, (k, v)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.h = nn.ModuleList(Attn() for _ in range(2))

        def forward(self, x, pasts):
            presents = ()
            for block, past in zip(self.h, pasts):
                out, present = block(x, past)
                x = x + out
                presents = presents + (present,)
            return x, presents

    pasts = tuple((_rand(1, 3, 8, seed=10 + i), _rand(1, 3, 8, seed=20 + i)) for i in range(2))
    return Model(), (_rand(1, 1, 8), pasts), list


def inplace_cnn():
    """ReLU(inplace=True), ReLU6(inplace=True), Hardswish, F.relu(..., inplace=True), BatchNorm
    in eval and a squeeze-excite gate."""
    class SE(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.fc1, self.fc2 = nn.Conv2d(c, c // 2, 1), nn.Conv2d(c // 2, c, 1)

        def forward(self, x):
            s = F.relu(self.fc1(F.adaptive_avg_pool2d(x, 1)), inplace=True)
            return x * F.hardsigmoid(self.fc2(s))

    m = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                      nn.Conv2d(8, 8, 3, groups=8, padding=1), nn.Hardswish(), SE(8),
                      nn.ReLU6(inplace=True), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                      nn.Linear(8, 4)).eval()
    return m, (_rand(2, 3, 8, 8),), list


def unet_interpolate():
    """Encoder/decoder with skips: F.interpolate nearest by scale and bilinear to a size."""
    class UNet(nn.Module):
        def __init__(self, c=4):
            super().__init__()
            self.enc1, self.enc2 = nn.Conv2d(1, c, 3, padding=1), nn.Conv2d(c, 2 * c, 3, padding=1)
            self.dec = nn.Conv2d(3 * c, c, 3, padding=1)

        def forward(self, x):
            x1 = F.relu(self.enc1(x))
            x2 = F.relu(self.enc2(F.max_pool2d(x1, 2)))
            u = F.interpolate(x2, scale_factor=2, mode="nearest")
            y = self.dec(torch.cat([u, x1], dim=1))
            return F.interpolate(y, size=(10, 12), mode="bilinear", align_corners=False)

    return UNet(), (_rand(2, 1, 8, 8),), list


def gnn_message_passing():
    """`src, dst = edge_index` (a tensor unpacked), messages summed with index_add_ into
    zeros_like / zeros made by the code, degree-normalised."""
    class Layer(nn.Module):
        def __init__(self, d=6):
            super().__init__()
            self.msg = nn.Linear(2 * d, d)

        def forward(self, x, edge_index):
            src, dst = edge_index
            m = torch.relu(self.msg(torch.cat([x[src], x[dst]], dim=-1)))
            agg = torch.zeros_like(x).index_add_(0, dst, m)
            deg = torch.zeros(x.size(0)).index_add_(0, dst, torch.ones(dst.size(0)))
            return x + agg / deg.clamp(min=1).unsqueeze(-1)

    ei = torch.stack([_ints(7, 12, seed=5), _ints(7, 12, seed=6)])
    return Layer(), (_rand(7, 6), ei), list


def positional_encoding():
    """A sinusoidal table built in forward: `pe[:, 0::2] = sin(...)` on torch.zeros."""
    class PE(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.d = d

        def forward(self, x):
            n = x.size(1)
            pos = torch.arange(n, dtype=torch.float32).unsqueeze(1)
            div = torch.exp(torch.arange(0, self.d, 2).float() * (-math.log(10000.0) / self.d))
            pe = torch.zeros(n, self.d)
            pe[:, 0::2] = torch.sin(pos * div)
            pe[:, 1::2] = torch.cos(pos * div)
            return x * math.sqrt(self.d) + pe.unsqueeze(0)

    return PE(), (_rand(2, 5, 8),), list


def focal_loss():
    """Sigmoid focal loss with F.one_hot(targets, num_classes)."""
    def loss_fn(logits, targets, gamma: float = 2.0):
        onehot = F.one_hot(targets, logits.shape[-1]).to(logits.dtype)
        p = torch.sigmoid(logits)
        ce = F.binary_cross_entropy_with_logits(logits, onehot, reduction="none")
        p_t = p * onehot + (1 - p) * (1 - onehot)
        return (ce * (1 - p_t) ** gamma).sum(-1).mean(), F.one_hot(targets, 6)

    return loss_fn, (_rand(9, 5), _ints(5, 9)), list


def ema_teacher():
    """A BYOL/DINO-style step: the teacher updated under a @torch.no_grad() helper iterating
    zip(teacher.parameters(), student.parameters()); named_parameters, modules, children."""
    def make():
        return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 6))

    student, teacher = make(), make()
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad_(False)

    @torch.no_grad()
    def update(momentum=0.9):
        for p_t, p_s in zip(teacher.parameters(), student.parameters()):
            p_t.mul_(momentum).add_(p_s.detach(), alpha=1 - momentum)

    def step(x1, x2):
        s = F.normalize(student(x1), dim=-1)
        with torch.no_grad():
            t = F.normalize(teacher(x2), dim=-1)
        loss = 2 - 2 * (s * t).sum(dim=-1).mean()
        decay = sum(p.pow(2).sum() for n, p in student.named_parameters() if "bias" not in n)
        update()
        return loss, decay, len(list(student.modules())), len(list(student.children()))

    def state():
        return list(teacher.parameters()) + list(teacher.buffers()) + list(student.buffers())

    return step, (_rand(4, 6), _rand(4, 6, seed=5)), state


def gan_step():
    """A GAN step: D on real and on G(z).detach(), backward, Adam step; then G through the
    same fake. backward() breaks (as under torch.compile); the second backward reaches the
    first graph after the discriminator's update (torch.compile raises there)."""
    G = nn.Sequential(nn.Linear(4, 8), nn.LeakyReLU(0.2), nn.Linear(8, 6), nn.Tanh())
    D = nn.Sequential(nn.Linear(6, 8), nn.LeakyReLU(0.2), nn.Linear(8, 1))
    opt_g = torch.optim.Adam(G.parameters(), lr=1e-2)
    opt_d = torch.optim.Adam(D.parameters(), lr=1e-2)

    def step(real, z):
        ones, zeros = torch.ones(real.size(0), 1), torch.zeros(real.size(0), 1)
        fake = G(z)
        d_loss = (F.binary_cross_entropy_with_logits(D(real), ones)
                  + F.binary_cross_entropy_with_logits(D(fake.detach()), zeros))
        opt_d.zero_grad()
        d_loss.backward()
        opt_d.step()
        g_loss = F.binary_cross_entropy_with_logits(D(fake), ones)
        opt_g.zero_grad()
        g_loss.backward()
        opt_g.step()
        return d_loss.detach(), g_loss.detach()

    return step, (_rand(5, 6), _rand(5, 4, seed=4)), \
        lambda: list(G.parameters()) + list(D.parameters())


def clipped_adamw_step():
    """A training step calling model.train() each time (flags unchanged: nothing to do),
    clip_grad_norm_ over model.parameters() after backward, then AdamW. backward() breaks (as
    under torch.compile); the clipping and the AdamW step are the second graph."""
    model = nn.Sequential(nn.Linear(6, 12), nn.LayerNorm(12), nn.ReLU(), nn.Linear(12, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.01)

    def step(x, y):
        model.train()
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.5)
        opt.step()
        return loss.detach(), norm

    return step, (_rand(8, 6), _ints(3, 8)), lambda: list(model.parameters())


def eval_switch():
    """model.eval() inside the compiled function on a model in training mode: the flags are
    set after the graph (attribute stores, as torch.compile: 1 graph, 0 breaks), and what
    follows sees eval mode."""
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Dropout(0.5))

    def predict(x):
        model.eval()
        return model(x), model.training

    return predict, (_rand(5, 4),), lambda: list(model.buffers())


def giou():
    """DETR's generalized box IoU: torch.max/torch.min of two tensors (the elementwise form)."""
    def box_iou_loss(pred, target):
        lt = torch.max(pred[:, None, :2], target[:, :2])
        rb = torch.min(pred[:, None, 2:], target[:, 2:])
        wh = (rb - lt).clamp(min=0)
        inter = wh[..., 0] * wh[..., 1]
        area = lambda b: (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
        union = area(pred)[:, None] + area(target) - inter
        hull = (torch.max(pred[:, None, 2:], target[:, 2:])
                - torch.min(pred[:, None, :2], target[:, :2])).clamp(min=0)
        enclose = hull[..., 0] * hull[..., 1]
        g = inter / union - (enclose - union) / enclose
        return (1 - torch.diag(g)).mean(), g

    lo = _rand(4, 2).abs()
    pred = torch.cat([lo, lo + _rand(4, 2, seed=3).abs() + 0.1], 1)
    lo2 = _rand(4, 2, seed=4).abs()
    target = torch.cat([lo2, lo2 + _rand(4, 2, seed=5).abs() + 0.1], 1)
    return box_iou_loss, (pred, target), list


def running_normalizer():
    """Observation normalisation with running statistics in buffers, updated under no_grad
    with +=, copy_ and fill_ (of a 0-d tensor)."""
    class RunningNorm(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.register_buffer("mean", torch.zeros(d))
            self.register_buffer("var", torch.ones(d))
            self.register_buffer("count", torch.tensor(1e-4))

        def forward(self, x):
            if self.training:
                with torch.no_grad():
                    bm, bv, n = x.mean(0), x.var(0, unbiased=False), x.shape[0]
                    delta, tot = bm - self.mean, self.count + n
                    self.mean += delta * n / tot
                    self.var.copy_((self.var * self.count + bv * n
                                    + delta ** 2 * self.count * n / tot) / tot)
                    self.count.fill_(tot)
            return (x - self.mean) / torch.sqrt(self.var + 1e-8)

    m = RunningNorm(5)
    return m, (_rand(6, 5),), lambda: [m.mean, m.var, m.count]


def topk_sampling():
    """nanoGPT's sampling loop: the compiled function is itself @torch.no_grad()-decorated;
    top-k filtering by a bool-mask store (`logits[logits < v[:, [-1]]] = -inf`), multinomial
    draws (equal to eager's under the same seed)."""
    emb, head = nn.Embedding(12, 6), nn.Linear(6, 12)

    @torch.no_grad()
    def generate(idx, steps: int = 3, temperature: float = 0.8, top_k: int = 4):
        for _ in range(steps):
            logits = head(torch.tanh(emb(idx)))[:, -1, :] / temperature
            v, _ = torch.topk(logits, top_k)
            logits[logits < v[:, [-1]]] = -float("Inf")
            nxt = torch.multinomial(F.softmax(logits, dim=-1), num_samples=1)
            idx = torch.cat((idx, nxt), dim=1)
        return idx, torch.is_grad_enabled()

    return generate, (_ints(12, 2, 3),), list


class LMOutput(typing.NamedTuple):
    logits: object
    loss: object = None
    aux: object = None


def named_output():
    """A model returning a typing.NamedTuple built in forward (fields by keyword, defaults),
    with type() checks on its weight and on the result."""
    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb, self.proj = nn.Embedding(10, 6), nn.Linear(6, 10)

        def forward(self, idx, targets=None):
            if type(self.proj.weight) is not nn.Parameter:  # (no assert: pytest rewrites it)
                raise TypeError("weight is not a Parameter")
            logits = self.proj(self.emb(idx))
            out = LMOutput(logits=logits)
            if targets is not None:
                out = LMOutput(logits, F.cross_entropy(logits.view(-1, 10), targets.view(-1)))
            return out, type(out).__name__, out.loss is None

    return LM(), (_ints(10, 2, 4), _ints(10, 2, 4, seed=3)), list


def attention_pooling():
    """Masked attention pooling by lengths: `scores.new_full((), -inf)` in torch.where,
    x.new_zeros / new_ones / new_full([n], v, dtype=...) factories of a tensor."""
    class AttnPool(nn.Module):
        def __init__(self, d=6):
            super().__init__()
            self.query = nn.Parameter(torch.randn(d) * 0.1)
            self.proj = nn.Linear(d, d)

        def forward(self, x, lengths):
            B, T, _ = x.shape
            mask = torch.arange(T)[None, :] < lengths[:, None]
            scores = self.proj(x) @ self.query
            scores = torch.where(mask, scores, scores.new_full((), float("-inf")))
            pooled = (scores.softmax(-1).unsqueeze(-1) * x).sum(1)
            counts = x.new_zeros(B).index_add_(0, torch.arange(B), lengths.to(x.dtype))
            flags = x.new_full([B], 3, dtype=torch.int32) + x.new_ones(B, dtype=torch.int32)
            return pooled, counts, flags

    return AttnPool(), (_rand(3, 5, 6), torch.tensor(np.array([5, 2, 1]))), list


# (case, graphs, breaks, break sites): 1/0/0 = one graph, no break reason at all
CASES = [
    (llama_ffn, 1, 0, 0), (einsum_attention, 1, 0, 0), (gated_tcn, 1, 0, 0),
    (gru_decoder, 1, 0, 0), (kv_presents, 1, 0, 0), (inplace_cnn, 1, 0, 0),
    (unet_interpolate, 1, 0, 0), (gnn_message_passing, 1, 0, 0), (positional_encoding, 1, 0, 0),
    (focal_loss, 1, 0, 0), (ema_teacher, 1, 0, 0), (gan_step, 3, 2, 2),
    (clipped_adamw_step, 2, 1, 1), (eval_switch, 1, 0, 0), (giou, 1, 0, 0),
    (running_normalizer, 1, 0, 0), (topk_sampling, 1, 0, 0), (named_output, 1, 0, 0),
    (attention_pooling, 1, 0, 0),
]


@pytest.mark.parametrize("case,graphs,breaks,sites", CASES, ids=[c[0].__name__ for c in CASES])
def test_ordinary_model(case, graphs, breaks, sites):
    torch.manual_seed(0)
    fn, args, _ = case()
    capture.reset()
    ex = capture.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), str(ex)
    assert len(ex.unique_break_reasons) == sites, str(ex)
    torch.manual_seed(0)
    fe, ae, se = case()
    torch.manual_seed(0)
    fc, ac, sc = case()
    capture.reset()
    compiled = capture.compile(fc)
    for i in range(3):  # the capture, then cache hits (and the state they update)
        torch.manual_seed(100 + i)
        want = fe(*ae)
        torch.manual_seed(100 + i)
        _same(want, compiled(*ac))
        _same(se(), sc())


def test_dead_view_of_a_weight_does_not_stop_its_update():
    """`F.linear` reads `weight.t()` (a view) in forward; an in-place update of the weight
    afterwards is captured (the view is dead), while a live view still breaks."""
    lin = nn.Linear(3, 3)
    lin.weight.requires_grad_(False)

    def live(x):
        wt = lin.weight.t()
        lin.weight.mul_(0.5)
        return x @ wt

    torch.manual_seed(0)
    x = _rand(2, 3)
    ex = capture.explain(live)(x)
    assert ex.break_reasons and "view" in ex.break_reasons[0].reason


def test_breaks_after_asserts_rewritten_by_pytest():
    """pytest rewrites the asserts of this module into locals named `@py_assert1`...: the
    resume functions of a break after them (and of a break in a loop) must still compile."""
    lin = nn.Linear(3, 3)

    def step(x):
        assert x.shape[-1] == 3, "features"
        h = lin(x)
        print("logged")  # a break: the rest resumes with the assert's locals live
        for i in range(2):
            assert h.dim() == 2
            h = h + i
            print("in loop")
        return h.relu()

    x = _rand(2, 3)
    compiled = capture.compile(step)
    for _ in range(2):
        _same(step(x), compiled(x))
