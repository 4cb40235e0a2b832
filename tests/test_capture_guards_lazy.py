"""Lazy guards on dicts read from globals and attributes: only the keys the code reads are
guarded (`k in d and d[k] is v`), the key list only where the code iterates the dict, its length
only where it calls len(). A change to a read key recompiles (and computes the new result); a
change to an unread key does not; every result equals the plain Python call."""

import numpy as np

import capture
import eager
from eager import nn

TABLE = {f"k{i}": (lambda i: (lambda x: x * i))(i) for i in range(50)}
NUMS = {"a": 1.0, "b": 2.0, 3: 3.0}


def _read_one(x):
    return TABLE["k3"](x) + 1


def _check(c, fn, *args):
    got, want = c(*args), fn(*args)
    np.testing.assert_allclose(got.numpy(), want.numpy())


def _entries(c):
    return len(c.__wick_compiled__.entries)


def _terms(c):
    return [t for e in c.__wick_compiled__.entries for t in e.guards.terms]


def test_read_key_guarded_unread_key_not():
    capture.reset()
    c = capture.compile(_read_one)
    x = eager.randn(3)
    _check(c, _read_one, x)
    assert sum("TABLE" in t for t in _terms(c)) <= 3  # type, 'k3' in, identity of the value
    old7, old3 = TABLE["k7"], TABLE["k3"]
    try:
        TABLE["k7"] = lambda x: x * 100  # not read: no recompile
        TABLE["new"] = lambda x: x  # a new key: not read either
        _check(c, _read_one, x)
        assert _entries(c) == 1
        TABLE["k3"] = lambda x: x * -5  # read: recompile with the new function
        _check(c, _read_one, x)
        assert _entries(c) == 2
        del TABLE["k3"]  # the key gone: the guard fails and the call raises as Python does
        try:
            c(x)
        except KeyError:
            pass
        else:
            raise AssertionError("KeyError expected")
    finally:
        TABLE["k7"], TABLE["k3"] = old7, old3
        del TABLE["new"]


def _get_missing(x):
    f = TABLE.get("absent")
    return x + 1 if f is None else f(x)


def test_missing_key_guarded_absent():
    capture.reset()
    c = capture.compile(_get_missing)
    x = eager.randn(3)
    _check(c, _get_missing, x)
    TABLE["absent"] = lambda x: x * 7
    try:
        _check(c, _get_missing, x)
        assert _entries(c) == 2
    finally:
        del TABLE["absent"]
    _check(c, _get_missing, x)


def _contains(x):
    return x * 2 if "k1" in TABLE and 3 in NUMS else x


def test_contains_guarded_by_key_presence():
    capture.reset()
    c = capture.compile(_contains)
    x = eager.randn(3)
    _check(c, _contains, x)
    TABLE["zz"] = None  # other keys do not matter
    try:
        _check(c, _contains, x)
        assert _entries(c) == 1
    finally:
        del TABLE["zz"]
    v = NUMS.pop(3)
    try:
        _check(c, _contains, x)
        assert _entries(c) == 2
    finally:
        NUMS[3] = v


def _length(x):
    return x * len(NUMS)


def _iterate(x):
    for k in NUMS:
        x = x + NUMS[k]
    return x


def _values(x):
    return x + sum(NUMS.values())


def test_len_and_iteration_guard_the_keys():
    for fn in (_length, _iterate, _values):
        capture.reset()
        c = capture.compile(fn)
        x = eager.randn(3)
        _check(c, fn, x)
        NUMS["c"] = 10.0  # a new key: length and key list change
        try:
            _check(c, fn, x)
            assert _entries(c) == 2, fn.__name__
        finally:
            del NUMS["c"]
        _check(c, fn, x)


def _read_value(x):
    return x * NUMS["b"]


def test_read_constant_value_changes():
    capture.reset()
    c = capture.compile(_read_value)
    x = eager.randn(3)
    _check(c, _read_value, x)
    NUMS["a"] = 9.0  # unread
    try:
        _check(c, _read_value, x)
        assert _entries(c) == 1
        NUMS["b"] = -4.0  # read
        _check(c, _read_value, x)
        assert _entries(c) == 2
    finally:
        NUMS["a"], NUMS["b"] = 1.0, 2.0


class _Routed(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.scales = {"main": 2.0, "aux": 3.0}

    def forward(self, x):
        return self.lin(x) * self.scales["main"]


def test_attribute_dict_and_linear_guards_stay_small():
    capture.reset()
    m = _Routed()
    c = capture.compile(m)
    x = eager.randn(2, 4)
    np.testing.assert_allclose(c(x).detach().numpy(), m(x).detach().numpy())
    terms = _terms(c)
    assert len(terms) < 40, len(terms)  # eager's dispatch table is read at one key
    m.scales["aux"] = 5.0
    np.testing.assert_allclose(c(x).detach().numpy(), m(x).detach().numpy())
    m.scales["main"] = 0.5
    np.testing.assert_allclose(c(x).detach().numpy(), m(x).detach().numpy())


_SEQ = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))


def _seq(x):
    return _SEQ(x).sum(-1)


def test_shared_reads_computed_once_and_still_guarded(monkeypatch):
    """Guard terms on one submodule read `G['_SEQ'][0]` once per call (not once per term),
    and replacing the submodule or its parameter still recompiles."""
    capture.reset()
    with eager.no_grad():
        c = capture.compile(_seq)
        x = eager.randn(3, 4)
        _check(c, _seq, x)
        calls = []
        real = type(_SEQ).__getitem__
        monkeypatch.setattr(type(_SEQ), "__getitem__", lambda s, i: calls.append(i) or real(s, i))
        _check(c, _seq, x)  # (eager's own __getitem__ is guarded: a patched one recompiles)
        assert len(c.__wick_compiled__.entries) == 2
        calls.clear()
        _check(c, _seq, x)
        assert sorted(calls) == [0, 1, 2], calls  # each index read once by the hit
        monkeypatch.undo()
        capture.reset()
        _check(c, _seq, x)
        old = _SEQ[0].weight, _SEQ[2].bias
        try:
            _SEQ[0].weight = nn.Parameter(eager.randn(4, 4))  # a new parameter: new graph input
            _check(c, _seq, x)
            _SEQ[2].bias = None  # read by the same hit through the shared submodule read
            _check(c, _seq, x)
            assert len(c.__wick_compiled__.entries) == 2
        finally:
            _SEQ[0].weight, _SEQ[2].bias = old
        _check(c, _seq, x)
