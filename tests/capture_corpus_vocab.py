"""Capture corpus of eager's API as graph vocabulary (issue 14 items 1 and 5).

Each case is (function of a module `T` - `eager` or `torch`, argument maker of `T`, wick's
expected graph/break counts, torch's counts from `torch._dynamo.explain` on the same code with
`T = torch`). Before this corpus capture stepped into eager's own code (`zeros_like` 1/8,
`arange` 1/7, `F.cross_entropy` 1/16, SDPA 4/9, `x.max(dim=-1).values` 1/1...).
"""

from __future__ import annotations


def build(T):
    """The cases for module `T` (`eager` or `torch`): name -> (fn, make_args)."""
    F = T.nn.functional
    emb = T.nn.Embedding(10, 4)

    def x34():
        return (T.randn(3, 4),)

    def detach(x):
        return x.detach() * 2

    def zeros_like(x):
        return T.zeros_like(x) + x

    def ones_full_like(x):
        return T.ones_like(x) * T.full_like(x, 2.5) + T.zeros_like(x, dtype=T.int64)

    def arange(x):
        return x + T.arange(x.shape[-1])

    def embedding(x):
        return emb(x.long().abs() % 10)

    def cross_entropy(x):
        return F.cross_entropy(x, T.tensor([1, 0, 3]))

    def sdpa(x):
        q = x.reshape(1, 3, 4)
        return F.scaled_dot_product_attention(q, q, q, is_causal=True)

    def to64(x):
        return x.to(T.float64) + 1

    def type_as(x):
        return x.type_as(x.double()) * 2

    def full(x):
        return T.full((3, 4), 2.0) * x

    def linspace(x):
        return x + T.linspace(0, 1, 4)

    def eye(x):
        return x @ T.eye(4)

    def max_values(x):
        return x.max(dim=-1).values

    def methods(x):
        y = x.contiguous().view_as(x).reshape_as(x)
        return y.type(T.float64) + x.t().contiguous().sum()

    def lm_step(x):  # embedding + linear + cross-entropy, causal mask by arange
        idx = (x.abs() * 3).long() % 10
        h = emb(idx)  # (3, 4, 4)
        mask = T.ones(4, 4).tril()
        att = (h @ h.transpose(-2, -1)).masked_fill(mask == 0, float("-inf")).softmax(-1)
        logits = (att @ h).reshape(12, 4)
        return F.cross_entropy(logits, idx.reshape(12) % 4)

    def max_after_break(x):  # the named tuple keeps its type across a break
        best = x.max(dim=-1)
        print(end="")
        return best.values + 1, best.indices, best

    def fstring(x):  # formatting a 0-d tensor reads its value: one break, eager's text
        loss = (x * x).mean()
        return f"{loss:.4f}", loss

    def rand_named(x):  # random ops in the graph, drawing as eager (issue 14 item 6)
        return x + T.rand(3, 4)

    cases = {
        "detach": (detach, x34, (1, 0), (1, 0)),
        "zeros_like": (zeros_like, x34, (1, 0), (1, 0)),
        "ones_full_like": (ones_full_like, x34, (1, 0), (1, 0)),
        "arange": (arange, x34, (1, 0), (1, 0)),
        "embedding": (embedding, x34, (1, 0), (1, 0)),
        "cross_entropy": (cross_entropy, x34, (1, 0), (1, 0)),
        "sdpa": (sdpa, x34, (1, 0), (1, 0)),
        "to64": (to64, x34, (1, 0), (1, 0)),
        "type_as": (type_as, x34, (1, 0), (1, 0)),
        "full": (full, x34, (1, 0), (1, 0)),
        "linspace": (linspace, x34, (1, 0), (1, 0)),
        "eye": (eye, x34, (1, 0), (1, 0)),
        "max_values": (max_values, x34, (1, 0), (1, 0)),
        "methods": (methods, x34, (1, 0), (1, 0)),
        "lm_step": (lm_step, x34, (1, 0), (1, 0)),
        "max_after_break": (max_after_break, x34, (2, 1), (1, 0)),
        "fstring": (fstring, x34, (1, 0), (1, 0)),  # torch: 0-d format in graph
        "rand_named": (rand_named, x34, (1, 0), (1, 0)),  # item 6
    }
    return cases
