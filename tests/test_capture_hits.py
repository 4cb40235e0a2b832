"""Cache hits on the fast path (`capture.hits`): entries with Python side effects and in-place
write-backs replay them in the hit's generated frame, with eager's results, state and
version counters over several calls."""

from __future__ import annotations

import numpy as np

import capture
import eager

nn, F = eager.nn, eager.nn.functional


def _fast(compiled) -> list:
    """Per cache entry: whether its hit function has the fast path (it runs the graph itself
    instead of signalling the general path)."""
    return ["___cf" in e.hit.__code__.co_names for e in compiled.__wick_compiled__.entries]


def _close(a, b):
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-5)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.num_updates = 0
        self.last = None

    def forward(self, x):
        self.num_updates += 1
        y = self.lin(x)
        self.last = y
        return y


def test_attribute_stores_and_dynamic_number_on_the_fast_path():
    capture.reset()
    m, ref = Counter(), Counter()
    ref.load_state_dict(m.state_dict())
    c = capture.compile(m)
    x = eager.randn(2, 4)
    for _ in range(5):
        _close(c(x), ref(x))
        assert m.num_updates == ref.num_updates and type(m.num_updates) is int
        assert m.last is not None
        _close(m.last, ref.last)
    assert all(_fast(c)) and len(_fast(c)) == 2  # (static value, then a dynamic number)


def test_list_and_dict_mutation_and_globals_on_the_fast_path():
    capture.reset()
    global CALLS
    CALLS = 0

    def f(x, acts, cache):
        global CALLS
        h = x * 2
        acts.append(h)
        cache["h"] = h + 1
        CALLS += 1
        return h.sum()

    c = capture.compile(f)
    x = eager.randn(3)
    acts, cache = [], {"old": 1}
    for k in range(3):
        _close(c(x, acts, cache), (x * 2).sum())
        assert len(acts) == k + 1 and list(cache) == ["old", "h"]
        _close(acts[-1], x * 2)
        _close(cache["h"], x * 2 + 1)
    assert CALLS == 3
    assert _fast(c)[-1]


def test_buffer_write_back_on_the_fast_path():
    capture.reset()
    bn, ref = nn.BatchNorm1d(4), nn.BatchNorm1d(4)
    bn.train()
    ref.train()
    c = capture.compile(bn)
    x = eager.randn(8, 4)
    alias = bn.running_mean[1:]  # a view of a buffer sees the write-back
    for _ in range(3):
        v0 = bn.running_mean._version
        _close(c(x), ref(x))
        assert bn.running_mean._version > v0
    _close(bn.running_mean, ref.running_mean)
    _close(bn.running_var, ref.running_var)
    assert int(bn.num_batches_tracked.item()) == int(ref.num_batches_tracked.item()) == 3
    _close(alias, ref.running_mean[1:])
    assert all(_fast(c))


def test_bn_training_with_grad_matches_eager_gradients():
    capture.reset()
    eager.manual_seed(0)  # (the data fixed: a BatchNorm gradient over 6 rows is a difference of
    # near-equal float32 sums, its rounding is data-dependent)
    model = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU())
    ref = nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.ReLU())
    ref.load_state_dict(model.state_dict())
    c = capture.compile(model)
    x, w = eager.randn(6, 4), eager.randn(6, 4)
    for _ in range(3):
        (c(x) * w).sum().backward()
        (ref(x) * w).sum().backward()
    for p, q in zip(model.parameters(), ref.parameters()):  # float32 rounding of the scale
        a, b = p.grad.numpy(), q.grad.numpy()
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(b).max()))
    _close(model[1].running_var, ref[1].running_var)
    assert all(_fast(c))


class _Routes(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 3)})

    def forward(self, x):
        return self.heads["a"](self.layers[-1](self.layers[0](x)))


def test_container_reads_in_guards_see_replaced_and_removed_items():
    """Guards read ModuleList/Sequential items from one list of `_modules` and ModuleDict
    items from `_modules`: replacing, appending or removing an item still misses."""
    capture.reset()
    m = _Routes()
    seq = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    cm, cs = capture.compile(m), capture.compile(seq)
    x = eager.randn(3, 4)
    changes = [(m, cm, lambda: m.layers.__setitem__(1, nn.Linear(4, 4))),
               (m, cm, lambda: m.layers.append(nn.Tanh())),
               (m, cm, lambda: m.heads.__setitem__("a", nn.Linear(4, 5))),
               (seq, cs, lambda: seq.__setitem__(1, nn.Tanh())),
               (seq, cs, lambda: seq.__delitem__(1))]
    for mod, c, change in changes:
        _close(c(x), mod(x))
        _close(c(x), mod(x))
        change()
        _close(c(x), mod(x))
    # (a same-typed Linear swapped in is read through the same entry: its parameters are
    # graph inputs fetched by source)
    assert len(cm.__wick_compiled__.entries) == 3
    assert len(cs.__wick_compiled__.entries) == 3
