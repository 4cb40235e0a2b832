"""A KV-cache position as an automatic-dynamic int (issue 14 item 8, `capture/symints.py`).

GPT-style decoding as users write it: `model(tok, pos)` with `pos` a Python int that changes
every call, used as slice bounds of cache writes and reads, of a causal mask and of rotary
tables, as `narrow`'s length, and as `arange(pos, pos + T)` for `index_copy_` / index stores
(gpt-fast's form), and SDPA over the sliced caches. torch.compile marks `pos` dynamic at its second value and keeps 2 cache
entries over a decode loop; wick must keep <= 2 entries, run every step compiled, and match
wick eager at each step in the logits and in the caches (the write-back). Edge cases: empty
slices, bounds past the end of the cache, negative positions (Python's slice semantics), and
Python code that reads a position-dependent size (it must be specialised, never stale).
"""

from __future__ import annotations

import numpy as np
import pytest
from capture_cases import check_torch_counts

import capture
import eager

B, H, D, MAX, V = 1, 2, 8, 64, 32
C = H * D
VARIANTS = ("slice", "index_copy", "index_set", "rope", "mask", "narrow", "sdpa")


def gpt(lib, variant: str):
    """A 2-layer attention stack with per-layer KV-cache buffers; `variant` picks how the
    position is used (see the module docstring)."""
    nn, F = lib.nn, lib.nn.functional

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(C, 3 * C)
            self.register_buffer("k_cache", lib.zeros(B, H, MAX, D))
            self.register_buffer("v_cache", lib.zeros(B, H, MAX, D))
            self.register_buffer("mask", lib.tril(lib.ones(MAX, MAX)).view(1, 1, MAX, MAX))
            self.register_buffer("freqs", lib.arange(MAX * D).float().view(MAX, D) * 0.01)

        def forward(self, x, pos):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).split(C, dim=-1)
            q = q.view(b, t, H, D).transpose(1, 2)
            k = k.view(b, t, H, D).transpose(1, 2)
            v = v.view(b, t, H, D).transpose(1, 2)
            if variant == "rope":
                f = lib.cos(self.freqs[pos:pos + t])
                q, k = q * f, k * f
            if variant in ("index_copy", "index_set"):
                input_pos = lib.arange(pos, pos + t)
                if variant == "index_copy":
                    self.k_cache.index_copy_(2, input_pos, k)
                    self.v_cache.index_copy_(2, input_pos, v)
                else:
                    self.k_cache[:, :, input_pos] = k
                    self.v_cache[:, :, input_pos] = v
            else:
                self.k_cache[:, :, pos:pos + t] = k
                self.v_cache[:, :, pos:pos + t] = v
            if variant == "narrow":
                keys = lib.narrow(self.k_cache, 2, 0, pos + t)
                vals = self.v_cache.narrow(2, 0, pos + t)
            else:
                keys = self.k_cache[:, :, :pos + t]
                vals = self.v_cache[:, :, :pos + t]
            if variant == "sdpa":  # (its shape checks compare the cache's sizes)
                y = F.scaled_dot_product_attention(
                    q, keys, vals, attn_mask=self.mask[:, :, pos:pos + t, :pos + t] > 0)
                return y.transpose(1, 2).reshape(b, t, C)
            att = (q @ keys.transpose(-2, -1)) * (1.0 / D ** 0.5)
            if variant == "mask":
                att = att.masked_fill(self.mask[:, :, pos:pos + t, :pos + t] == 0,
                                      float("-inf"))
            att = F.softmax(att, dim=-1)
            return (att @ vals).transpose(1, 2).reshape(b, t, C)

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(V, C)
            self.layers = nn.ModuleList([Attn() for _ in range(2)])
            self.head = nn.Linear(C, V)

        def forward(self, tok, pos):
            h = self.emb(tok)
            for layer in self.layers:
                h = h + layer(h, pos)
            return self.head(h)

    return Model()


def steps(lib, n: int = 20):
    """(tokens, pos) of a decode loop: a 3-token prompt at 0, then one token a step."""
    yield lib.tensor([[3, 5, 7]]), 0
    for i in range(1, n):
        yield lib.tensor([[i % V]]), 2 + i


def close(a, b) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
def test_decode_loop_is_one_dynamic_entry(variant):
    eager.manual_seed(0)
    ref = gpt(eager, variant)
    model = gpt(eager, variant)
    model.load_state_dict(ref.state_dict())
    capture.reset()
    compiled = capture.compile(model)
    with eager.no_grad():  # two decodes: a position's first call runs the op tape, its
        for _ in range(2):  # second a graph compiled for it (`config.dynamic_compile_after`)
            for tok, pos in steps(eager):
                close(compiled(tok, pos).numpy(), ref(tok, pos).numpy())
                for (name, want), (_, got) in zip(ref.named_buffers(), model.named_buffers()):
                    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4,
                                               atol=1e-5, err_msg=f"{name} at pos {pos}")
    cf = compiled.__wick_compiled__
    assert len(cf.entries) <= 2, cf.recompile_reasons
    assert all(e.mode == "graph" for e in cf.entries)
    assert (cf.graph_runs, cf.eager_runs) == (40, 0)
    assert cf.dynamic_numbers == {"pos"}
    specs = cf.entries[-1].runner.specs  # every position of the dynamic entry compiled once
    assert len(specs.by_shape) == len({pos for _, pos in steps(eager)} - {0})


@pytest.mark.parametrize("variant", VARIANTS)
def test_torch_counts(variant):
    """torch.compile: one graph, no break for a step, and 2 compiles over the loop."""
    torch = pytest.importorskip("torch")
    check_torch_counts(lambda lib: (gpt(lib, variant), (lib.tensor([[1]]), 4)), 1, 0)
    torch.manual_seed(0)
    model = gpt(torch, variant)
    compiles = []

    def backend(gm, example_inputs):
        compiles.append(gm)
        return gm.forward

    torch._dynamo.reset()
    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for tok, pos in steps(torch):
            compiled(tok, pos)
    assert len(compiles) == 2


def test_wick_counts_for_one_step():
    eager.manual_seed(0)
    capture.reset()
    ex = capture.explain(gpt(eager, "slice"))(eager.tensor([[1]]), 4)
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)


def test_full_cache_attention_with_index_stores_is_one_graph():
    """gpt-fast's form: `input_pos = arange(pos, pos + T)`, index stores into the caches, SDPA
    over the whole cache with the mask rows of `input_pos`: no shape depends on `pos`, so one
    graph (no per-position specialisation) serves every step."""
    nn, F = eager.nn, eager.nn.functional

    class Attn(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(C, 3 * C)
            self.register_buffer("k_cache", eager.zeros(B, H, MAX, D))
            self.register_buffer("v_cache", eager.zeros(B, H, MAX, D))
            self.register_buffer("mask", eager.tril(eager.ones(MAX, MAX, dtype=eager.bool)))

        def forward(self, x, pos):
            b, t, _ = x.shape
            q, k, v = (y.view(b, t, H, D).transpose(1, 2)
                       for y in self.qkv(x).split(C, dim=-1))
            input_pos = eager.arange(pos, pos + t)
            self.k_cache[:, :, input_pos] = k
            self.v_cache.index_copy_(2, input_pos, v)
            m = self.mask[None, None, input_pos]
            y = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=m)
            return y.transpose(1, 2).reshape(b, t, C)

    eager.manual_seed(0)
    ref, model = Attn(), Attn()
    model.load_state_dict(ref.state_dict())
    compiled = capture.compile(model)
    with eager.no_grad():
        for i in range(12):
            x = eager.randn(1, 3 if i == 0 else 1, C)
            pos = 0 if i == 0 else 2 + i
            close(compiled(x, pos).numpy(), ref(x, pos).numpy())
            close(model.k_cache.numpy(), ref.k_cache.numpy())
            close(model.v_cache.numpy(), ref.v_cache.numpy())
    cf = compiled.__wick_compiled__
    assert len(cf.entries) == 2 and (cf.graph_runs, cf.eager_runs) == (12, 0)
    assert all(e.runner.specs is None for e in cf.entries)  # one compiled graph each


# ---------------------------------------------------------------- Python slice semantics

def write_read(cache, x, pos):
    cache[pos:pos + 2] = x  # x (1, 4) broadcasts to the 0, 1 or 2 rows the slice has
    return cache[:pos + 2] * 2, cache[pos:].sum(0), cache[-pos - 1:-1] + 0


@pytest.mark.parametrize("positions,entries", [
    ((0, 3, 5, 9, 40, 61), 2),  # in range
    ((0, 3, 62, 63, 64, 70, 3), 6),  # ends at the cache end, past it, empty writes
    ((0, 3, -3, -1, -2, -64, -70, -66, 5), 8),  # negative bounds, below -n
])
def test_slice_bounds_follow_python_semantics(positions, entries):
    """Values and shapes are eager's for every position; a bound that crosses into another
    regime of Python's slice semantics (negative, past the end, empty) recompiles once."""
    want_cache = eager.zeros(64, 4)
    got_cache = eager.zeros(64, 4)
    compiled = capture.compile(write_read)
    for i, pos in enumerate(positions):
        x = eager.full((1, 4), float(i + 1))
        want = write_read(want_cache, x, pos)
        got = compiled(got_cache, x, pos)
        for a, b in zip(want, got):
            assert tuple(a.shape) == tuple(b.shape), pos
            close(b.numpy(), a.numpy())
        close(got_cache.numpy(), want_cache.numpy())
    cf = compiled.__wick_compiled__
    assert cf.eager_runs == 0 and len(cf.entries) <= entries


def test_a_write_that_does_not_fit_raises_eagers_error():
    cache = eager.zeros(8, 4)
    compiled = capture.compile(write_read)
    for pos in (0, 2, 3):
        compiled(cache, eager.ones(2, 4), pos)
    with pytest.raises(RuntimeError):
        write_read(eager.zeros(8, 4), eager.ones(2, 4), 7)  # one row left for two
    with pytest.raises(RuntimeError):
        compiled(cache, eager.ones(2, 4), 7)


@pytest.mark.parametrize("fn", [
    lambda cache, x, pos: x * cache[:pos + 1].shape[0],
    lambda cache, x, pos: x + 1 if cache[:pos + 1].size(0) > 4 else x - 1,
    lambda cache, x, pos: x * len(cache[pos:pos + 3]),
    lambda cache, x, pos: x.reshape(cache[:pos].shape[0] // 2 or 1, -1).sum(0),
])
def test_python_reads_of_position_dependent_sizes_are_never_stale(fn):
    cache = eager.randn(64, 4)
    x = eager.ones(16)
    compiled = capture.compile(fn)
    for pos in (0, 2, 3, 7, 100, 200, 9, 63, 1, 16, 2):
        try:
            want = fn(cache, x, pos)
        except RuntimeError:
            with pytest.raises(RuntimeError):
                compiled(cache, x, pos)
            continue
        close(compiled(cache, x, pos).numpy(), want.numpy())


def test_other_uses_of_the_position_still_specialise():
    """A Python list sliced by the position, a range over it: read as values (static)."""
    table = list(range(100))

    def f(x, pos):
        return x * sum(table[pos:pos + 3]) + sum(x * i for i in range(pos % 3))

    x = eager.ones(4)
    compiled = capture.compile(f)
    for pos in (1, 2, 5, 2, 9):
        close(compiled(x, pos).numpy(), f(x, pos).numpy())
    assert "pos" in compiled.__wick_compiled__.static_numbers


def test_narrow_past_the_end_raises_eagers_error():
    def f(cache, pos):
        return cache.narrow(0, 0, pos + 1) * 2

    cache = eager.randn(8, 2)
    compiled = capture.compile(f)
    for pos in (0, 1, 3, 7):
        close(compiled(cache, pos).numpy(), f(cache, pos).numpy())
    with pytest.raises(RuntimeError):
        compiled(cache, 8)


def test_arange_of_a_position_and_its_emptiness():
    def f(x, pos):
        idx = eager.arange(pos, 6)
        return x.index_select(0, idx) * 2, idx

    x = eager.randn(8, 3)
    compiled = capture.compile(f)
    for pos in (0, 1, 3, 6, 2, 5):
        want, got = f(x, pos), compiled(x, pos)
        for a, b in zip(want, got):
            assert tuple(a.shape) == tuple(b.shape) and a.dtype is b.dtype
            close(b.numpy(), a.numpy())
    cf = compiled.__wick_compiled__
    assert cf.dynamic_numbers == {"pos"} and cf.eager_runs == 0 and len(cf.entries) <= 3


def int_index(cache, k, pos):
    cache[:, pos] = k
    cache[pos, 0] = 7.0
    return cache[:, pos] * 2, cache[pos] + 1, cache[pos, pos + 1] + 0


@pytest.mark.parametrize("positions,entries", [
    ((0, 1, 2, 3, 4, 2), 2),
    ((0, 1, -1, -3, -5, 2, -2), 4),  # negative indices count from the end
])
def test_int_index_of_a_position(positions, entries):
    """`cache[:, pos] = k`, `cache[pos]`: one element slice and a squeeze, guarded in range."""
    want_cache, got_cache = eager.zeros(6, 6), eager.zeros(6, 6)
    compiled = capture.compile(int_index)
    for i, pos in enumerate(positions):
        k = eager.full((6,), float(i + 1))
        want, got = int_index(want_cache, k, pos), compiled(got_cache, k, pos)
        for a, b in zip(want, got):
            assert tuple(a.shape) == tuple(b.shape), pos
            close(b.numpy(), a.numpy())
        close(got_cache.numpy(), want_cache.numpy())
    cf = compiled.__wick_compiled__
    assert cf.dynamic_numbers == {"pos"} and cf.eager_runs == 0
    assert len(cf.entries) <= entries
    with pytest.raises(IndexError, match="out of bounds"):
        compiled(got_cache, eager.ones(6), 6)


def test_a_size_comparison_is_checked_at_every_position():
    """`x.shape[0] == y.shape[0]` of two position-dependent sizes: the capture's answer holds
    at pos 10 only; other positions find it false again and run eagerly (never the branch
    the capture took)."""
    def f(a, pos):
        x, y = a[:pos], a[:20 - pos]
        return x.sum() + 1 if x.shape[0] == y.shape[0] else x.sum() - 1

    a = eager.randn(64)
    compiled = capture.compile(f)
    for pos in (1, 10, 4, 10, 7, 10):
        close(compiled(a, pos).numpy(), f(a, pos).numpy())
    cf = compiled.__wick_compiled__
    assert cf.dynamic_numbers == {"pos"} and len(cf.entries) == 2 and cf.eager_runs == 2
