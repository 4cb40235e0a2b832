"""Capture corpus of whole modules and decode steps (issue 14 items 4, 7 and 8).

`build(T)` (T = `eager` or `torch`) returns name -> (model, calls, wick's graph/break counts,
torch's graph/break counts from `torch._dynamo.explain` on the same code with T = torch). `calls`
is a list of argument tuples: the model is compiled as a module (`compile(model)`, an
OptimizedModule) and called with each in turn; the test compares every result with the plain
model's and counts cache entries (the decode steps pass a new int position on every call: it
becomes a graph input after the second value, as torch marks it dynamic).
"""

from __future__ import annotations


def build(T):
    nn = T.nn
    F = nn.functional

    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 4)
            self.norm = nn.LayerNorm(32)

        def forward(self, x):
            return self.fc2(F.gelu(self.norm(self.fc1(x))))

    class Residual(MLP):
        """`super().forward(x)` in a subclass's forward, as model code often does."""

        def forward(self, x):
            return super().forward(x) + x.sum(-1, keepdim=True)

    class RoPEDecode(nn.Module):
        """One decode step of attention with rotary embeddings at position `pos` (an int that
        changes every call) over a fixed window of cached keys and values."""

        def __init__(self, d=8):
            super().__init__()
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.register_buffer("inv_freq", 1.0 / (10000.0 ** (T.arange(0, d, 2).float() / d)))
            self.d = d

        def rope(self, x, pos):
            ang = self.inv_freq * pos
            c, s = ang.cos(), ang.sin()
            x1, x2 = x.chunk(2, dim=-1)
            return T.cat([x1 * c - x2 * s, x1 * s + x2 * c], -1)

        def forward(self, x, keys, values, pos):
            q = self.rope(self.q(x), pos)
            k = self.rope(self.k(x), pos)
            scores = T.cat([keys @ q.transpose(0, 1), (k * q).sum(-1, keepdim=True)], 0)
            w = F.softmax(scores / self.d ** 0.5, dim=0)
            return (T.cat([values, self.v(x)], 0) * w).sum(0) + pos * 0.01

    class ScaledResidual(nn.Module):
        """A float hyper-parameter argument (a residual scale or a temperature schedule)."""

        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x, alpha, temperature):
            return F.softmax(self.fc(x) * alpha / temperature, dim=-1) + x * (1 - alpha)

    def mlp_calls():
        return [(T.randn(5, 16),) for _ in range(3)]

    def decode_calls():
        keys, values = T.randn(6, 8), T.randn(6, 8)
        return [(T.randn(1, 8), keys, values, pos) for pos in range(6, 14)]

    def scaled_calls():
        x = T.randn(3, 8)
        return [(x, 0.1 * k, 1.0 + k) for k in range(6)]

    return {
        "mlp": (MLP, mlp_calls, (1, 0), (1, 0)),
        "super_forward": (Residual, mlp_calls, (1, 0), (1, 0)),
        "rope_decode_position": (RoPEDecode, decode_calls, (1, 0), (1, 0)),
        "float_hyperparameters": (ScaledResidual, scaled_calls, (1, 0), (1, 0)),
    }


def train_steps(T, model, compiled, steps=3):
    """A few SGD steps of `compiled` (wrapping `model`) on a regression loss; the losses."""
    opt = T.optim.SGD(compiled.parameters(), lr=0.05)
    x, y = T.randn(8, 16), T.randn(8, 4)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = ((compiled(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses
