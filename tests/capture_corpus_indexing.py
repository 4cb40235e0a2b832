"""Capture corpus of tensor indexing in model code (issue 14 item 2).

Each case is (function of a module `T` - `eager` or `torch`, argument maker of `T`, wick's
expected (graphs, breaks), torch's counts from `torch._dynamo.explain` on the same code with
`T = torch`). Before item 2 every subscript was a graph break ("tensor indexing is not a
registry op"). The KV-cache writes into the caller's cache tensors are captured as in torch
(a functional store written back into the argument after the graph: capture/writeback.py).
"""

from __future__ import annotations


def build(T):
    """The cases for module `T` (`eager` or `torch`): name -> (fn, make_args, wick, torch)."""
    nn, F = T.nn, T.nn.functional

    class CausalSelfAttention(nn.Module):  # GPT-2 style: a causal mask buffer sliced per length
        def __init__(self, d=8, heads=2, block=6):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.register_buffer("bias", T.ones(block, block).tril().reshape(1, 1, block, block))

        def forward(self, x):
            B, L, C = x.shape
            qkv = self.qkv(x)
            q, k, v = qkv[..., :C], qkv[..., C:2 * C], qkv[..., 2 * C:]
            q = q.reshape(B, L, self.heads, C // self.heads).transpose(1, 2)
            k = k.reshape(B, L, self.heads, C // self.heads).transpose(1, 2)
            v = v.reshape(B, L, self.heads, C // self.heads).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / (C // self.heads) ** 0.5)
            att = att.masked_fill(self.bias[:, :, :L, :L] == 0, float("-inf")).softmax(-1)
            y = (att @ v).transpose(1, 2).reshape(B, L, C)
            return self.proj(y)

    T.manual_seed(0)
    attn = CausalSelfAttention()
    head = nn.Linear(8, 11)

    def rotate_half(x):
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2:]
        return T.cat((-x2, x1), dim=-1)

    def rotary(q, cos, sin):  # heads sliced in halves (LLaMA's apply_rotary_pos_emb)
        return q * cos[None, :, None, :] + rotate_half(q) * sin[None, :, None, :]

    def rotary_args():
        return T.randn(2, 5, 3, 8), T.randn(5, 8), T.randn(5, 8)

    def gpt_last_token(x):  # attention block, then logits of the last position only
        h = x + attn(x)
        logits = head(h)
        last = logits[:, -1, :]
        return last, last.argmax(-1), h[0, 1:, ::2]

    def x_args():
        return (T.randn(2, 5, 8),)

    def gather_rows(table, ids, pos):  # embedding rows by ids, one picked item per row
        e = table[ids]  # (B, L, D)
        picked = e[T.tensor([0, 1]), pos]  # advanced indexing with two index tensors
        return e.sum(1) + picked, e[:, [0, -1]]

    def gather_args():
        return T.randn(10, 4), T.tensor([[1, 2, 9], [0, 0, 3]]), T.tensor([2, 0])

    def kv_step(x, k_cache, v_cache, pos):  # one decode step writing into the caller's cache
        k = x * 2
        v = x + 1
        k_cache[:, pos:pos + 1] = k
        v_cache[:, pos:pos + 1] = v
        keys, values = k_cache[:, :pos + 1], v_cache[:, :pos + 1]
        att = (x @ keys.transpose(-2, -1)).softmax(-1)
        return att @ values

    def kv_args():
        return T.randn(2, 1, 4), T.zeros(2, 6, 4), T.zeros(2, 6, 4), 3

    def local_cache(x):  # a cache the function itself allocates and fills: in the graph
        cache = x.new_zeros(2, 6, 4)
        for t in range(3):
            cache[:, t:t + 1] = x * (t + 1)
        cache[:, -1] = cache[:, 0] + cache[:, 2]
        return cache

    def local_args():
        return (T.randn(2, 1, 4),)

    return {
        "rotary_halves": (rotary, rotary_args, (1, 0), (1, 0)),
        "gpt_last_token": (gpt_last_token, x_args, (1, 0), (1, 0)),
        "gather_rows": (gather_rows, gather_args, (1, 0), (1, 0)),
        "kv_step_into_argument_cache": (kv_step, kv_args, (1, 0), (1, 0)),
        "local_cache_fill": (local_cache, local_args, (1, 0), (1, 0)),
    }
