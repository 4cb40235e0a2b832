"""Capture corpus: a break inside a callee breaks only the callee (issue 14 item 4).

`build(T)` (T = `eager` or `torch`) returns name -> (model maker, argument maker, wick's
graph/break counts, torch's graph/break counts from `torch._dynamo.explain` on the same code
with T = torch, the lines the model prints per call). Each model has one child (a submodule's
`forward`, a method of a plain object, a helper two or three calls deep, `super().forward`, one
layer of a ModuleList stack) that breaks: print, logging, `.item()`, `graph_break()`, a builtin
capture does not model. The caller's graph ends at the call, the child runs as its own compiled
frame (its own graphs and breaks), and the caller resumes: never 0 graphs. Counts are torch's
(graph_break_count = graph_count - 1), so they agree wherever the graphs agree; where torch gives
fewer graphs it skipped a frame (a break inside a loop over a ModuleList: torch runs the whole
stack eagerly, wick compiles around the broken layer) or traced a builtin wick does not.
"""

from __future__ import annotations

import logging

LOG = logging.getLogger("wick.tests.callees")


def build(T):
    nn = T.nn
    F = nn.functional
    if T.__name__ == "torch":
        import torch._dynamo as dyn

        graph_break = dyn.graph_break
    else:
        import capture

        graph_break = capture.graph_break

    class Attention(nn.Module):
        """Hand-written masked attention that logs its shapes with print (a debugging habit)."""

        def __init__(self, d=8, heads=2):
            super().__init__()
            self.qkv, self.proj, self.h = nn.Linear(d, 3 * d), nn.Linear(d, d), heads

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            q = q.reshape(b, t, self.h, d // self.h).transpose(1, 2)
            k = k.reshape(b, t, self.h, d // self.h).transpose(1, 2)
            v = v.reshape(b, t, self.h, d // self.h).transpose(1, 2)
            print("attn q", tuple(q.shape))
            w = F.softmax(q @ k.transpose(-2, -1) / (d // self.h) ** 0.5, dim=-1)
            return self.proj((w @ v).transpose(1, 2).reshape(b, t, d))

    class TransformerBlock(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.attn = Attention(d)
            self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.ln1(x))
            return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))

    class Scaled(nn.Module):
        """A layer that reads a tensor value into Python (`.item()`): a data-dependent scale."""

        def __init__(self, d=8):
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, x):
            h = self.fc(x)
            s = h.abs().max().item()
            return h / (1.0 + s)

    class Stack(nn.Module):
        """A GPT-style ModuleList stack where one layer (the middle one) breaks."""

        def __init__(self, d=8):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(d, d), Scaled(d), nn.Linear(d, d)])
            self.out = nn.Linear(d, 4)

        def forward(self, x):
            x = x * 2
            for layer in self.layers:
                x = F.relu(layer(x))
            return self.out(x)

    class Head(nn.Module):
        """A classifier head that calls a builtin capture does not model (`id`)."""

        def __init__(self, d=8):
            super().__init__()
            self.fc = nn.Linear(d, 3)

        def forward(self, x):
            h = self.fc(x)
            key = id(self.fc) % 7  # (a registry lookup keyed by identity)
            return F.log_softmax(h, dim=-1) * (1 + 0 * key)

    class Classifier(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.body, self.head = nn.Linear(d, d), Head(d)

        def forward(self, x):
            return self.head(F.gelu(self.body(x))) * 2

    def norm_helper(x):
        """Two calls deep: forward -> self.normed -> norm_helper -> graph_break()."""
        x = x - x.mean(-1, keepdim=True)
        graph_break()
        return x / (x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()

    class HelperDeep(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.fc = nn.Linear(d, d)

        def normed(self, x):
            return norm_helper(x * 3) + 1

        def forward(self, x):
            return self.fc(self.normed(self.fc(x))).tanh()

    class Tracer:
        """A plain object whose method logs with print (three calls deep)."""

        def __init__(self):
            self.scale = 0.5

        def mark(self, x, tag):
            print("mark", tag)
            return x * self.scale

    class Inner(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.fc, self.tracer = nn.Linear(d, d), Tracer()

        def forward(self, x):
            return self.tracer.mark(self.fc(x), "inner").sigmoid()

    class ThreeDeep(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.inner, self.fc = Inner(d), nn.Linear(d, d)

        def step(self, x):
            return self.inner(x + 1) * 2

        def forward(self, x):
            return self.fc(self.step(x.cos())).sum(-1)

    class Base(nn.Module):
        def __init__(self, d=8):
            super().__init__()
            self.fc = nn.Linear(d, d)

        def forward(self, x):
            h = self.fc(x)
            LOG.info("base forward %s", tuple(h.shape))
            return h.relu()

    class Derived(Base):
        """`super().forward(x)` whose parent logs with the logging module."""

        def forward(self, x):
            return super().forward(x * 0.5) + x

    class Loud(nn.Module):
        def __init__(self, d=8, i=0):
            super().__init__()
            self.fc, self.i = nn.Linear(d, d), i

        def forward(self, x):
            print("layer", self.i)
            return self.fc(x).tanh()

    class LoudStack(nn.Module):
        """Every layer of the stack prints: each one its own compiled frame, the loop after
        the second layer's break runs eagerly (no chain of resume frames per iteration)."""

        def __init__(self, d=8, n=4):
            super().__init__()
            self.layers = nn.ModuleList([Loud(d, i) for i in range(n)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x) + x
            return x.sum(-1)

    def x3():
        return (T.randn(2, 5, 8),)

    def x2():
        return (T.randn(4, 8),)

    return {  # name: (model, args, wick's (graphs, breaks), torch's, lines printed per call)
        "block_print_in_attention": (TransformerBlock, x3, (4, 3), (4, 3),
                                     ["attn q (2, 2, 5, 4)"]),
        "modulelist_item_layer": (Stack, x2, (4, 3), (2, 1), []),
        "head_unsupported_builtin": (Classifier, x2, (4, 3), (1, 0), []),
        "helper_two_deep_graph_break": (HelperDeep, x2, (6, 5), (6, 5), []),
        "object_method_three_deep": (ThreeDeep, x2, (7, 6), (7, 6), ["mark inner"]),
        "super_forward_logging": (Derived, x2, (4, 3), (4, 3), []),
        # (the layers the eagerly run loop calls are compiled as their own frames; each
        # layer's print reads `self.i`, guarded: an entry per layer)
        "modulelist_every_layer_prints": (LoudStack, x2, (5, 4), (2, 1),
                                          [f"layer {i}" for i in range(4)]),
    }
