"""`==` / `!=` between sequences in captured code (a shape check against a configured size, a
tuple built from a shape): folded as Python compares them, with the shape's guards, instead of
a break ("operator == on tuple of 2 and (4, 4)"). Compiled against eager on several shapes
(static, then automatic dynamic), and the counts against `torch._dynamo.explain` when torch is
installed."""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def _make(lib):
    class Resize(lib.nn.Module):
        def __init__(self, size):
            super().__init__()
            self.size = size
            self.proj = lib.nn.Conv2d(3, 4, 1)

        def forward(self, x):
            if tuple(x.shape[-2:]) == self.size:          # built tuple == attribute tuple
                h = self.proj(x)
            else:
                h = self.proj(x[..., ::2, ::2])
            doubled = tuple(2 * d for d in h.shape[2:])
            if list(doubled) != [8, 8]:                   # built list != constant list
                h = h * 0.5
            return h.sum(dim=(2, 3))

    return Resize((4, 4))


SHAPES = [(2, 3, 4, 4), (2, 3, 8, 8), (2, 3, 6, 6), (2, 3, 4, 4), (3, 3, 8, 8)]


def test_sequence_comparisons_compile_without_break_and_match_eager():
    eager.manual_seed(0)
    model = _make(eager)
    compiled = capture.compile(model)
    rng = np.random.default_rng(0)
    for s in SHAPES:
        x = eager.tensor(rng.standard_normal(s).astype(np.float32))
        np.testing.assert_allclose(compiled(x).detach().numpy(), model(x).detach().numpy(),
                                   rtol=1e-6, atol=1e-6)
    capture.reset()
    ex = capture.explain(model)(eager.tensor(rng.standard_normal(SHAPES[0]).astype(np.float32)))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)


@pytest.mark.parametrize("a, b", [((4, 4), (4, 4)), ((4, 4), (4, 5)), ((4,), (4, 4)),
                                  ([4, 4], (4, 4)), ((), ())])
def test_built_sequence_equality_is_pythons(a, b):
    def f(x):
        built = tuple(d for d in x.shape[:len(a)]) if isinstance(a, tuple) else \
            [d for d in x.shape[:len(a)]]
        return (x + 1 if built == b else x - 1), (x * 2 if built != b else x * 3)

    x = eager.ones(*(a or (2,)))
    capture.reset()
    got, want = capture.compile(f)(x), f(x)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g.numpy(), w.numpy())
    ex = capture.explain(f)(x)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)


def test_torch_counts_agree():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    model = _make(torch)
    torch._dynamo.reset()
    ex = torch._dynamo.explain(model)(torch.randn(*SHAPES[0]))
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)
