"""eager.utils.data's ChainDataset, StackDataset and WeightedRandomSampler against torch's
(issue 16's API sweep): items, lengths, batching through DataLoader, error types; the
sampler's draws (other random streams than torch's) checked by their distribution."""

import numpy as np
import pytest

import eager
from eager.utils import data as wd

torch = pytest.importorskip("torch")
from torch.utils import data as td


def _vals(x):
    if isinstance(x, (tuple, list)):
        return [_vals(v) for v in x]
    if isinstance(x, dict):
        return {k: _vals(v) for k, v in x.items()}
    return np.asarray(x.tolist() if hasattr(x, "tolist") else x)


def _eq(a, b):
    a, b = _vals(a), _vals(b)
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _eq(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _eq(x, y)
    else:
        np.testing.assert_array_equal(a, b)


def _pair(lib, mod):
    x = lib.arange(12.0).reshape(6, 2)
    y = lib.arange(6)
    return mod.TensorDataset(x), y


@pytest.mark.parametrize("kind", ["tuple", "dict"])
def test_stack_dataset_items_and_batches(kind):
    out = []
    for lib, mod in ((eager, wd), (torch, td)):
        a, b = _pair(lib, mod)
        s = mod.StackDataset(a, b) if kind == "tuple" else mod.StackDataset(x=a, y=b)
        batches = list(mod.DataLoader(s, batch_size=4))
        out.append((len(s), s[3], s.__getitems__([0, 5, 2]), batches))
    assert out[0][0] == out[1][0]
    for i in (1, 2, 3):
        _eq(out[0][i], out[1][i])


@pytest.mark.parametrize("args,kwargs", [((), {}), ((1,), {"a": 1}), (("mismatch",), {})])
def test_stack_dataset_errors(args, kwargs):
    def build(lib, mod):
        if args == ("mismatch",):
            return mod.StackDataset(lib.arange(3), lib.arange(4))
        return mod.StackDataset(*[lib.arange(3)] * len(args),
                                **{k: lib.arange(3) for k in kwargs})

    with pytest.raises(ValueError) as ref:
        build(torch, td)
    with pytest.raises(ValueError) as ours:
        build(eager, wd)
    assert str(ours.value) == str(ref.value)


def _iterable(mod, lo, hi):
    class Span(mod.IterableDataset):
        def __iter__(self):
            return iter(range(lo, hi))

        def __len__(self):
            return hi - lo

    return Span()


def test_chain_dataset():
    for mod in (wd, td):
        c = mod.ChainDataset([_iterable(mod, 0, 3), _iterable(mod, 10, 12)])
        assert list(c) == [0, 1, 2, 10, 11] and len(c) == 5
        added = _iterable(mod, 0, 2) + _iterable(mod, 5, 6)
        assert type(added).__name__ == "ChainDataset" and list(added) == [0, 1, 5]
        bad = mod.ChainDataset([_iterable(mod, 0, 1), [1, 2]])
        with pytest.raises(AssertionError):
            list(bad)
        with pytest.raises(AssertionError):
            len(bad)
    batches = list(wd.DataLoader(wd.ChainDataset([_iterable(wd, 0, 3), _iterable(wd, 3, 5)]),
                                 batch_size=2))
    assert [b.tolist() for b in batches] == [[0, 1], [2, 3], [4]]


def test_weighted_random_sampler_distribution():
    w = [0.1, 0.0, 0.6, 0.3]
    s = wd.WeightedRandomSampler(w, 20000, generator=eager.Generator().manual_seed(3))
    draws = np.array(list(s))
    assert len(s) == 20000 and len(draws) == 20000
    freq = np.bincount(draws, minlength=4) / len(draws)
    np.testing.assert_allclose(freq, w, atol=0.015)
    ref = np.array(list(td.WeightedRandomSampler(w, 20000)))
    np.testing.assert_allclose(freq, np.bincount(ref, minlength=4) / len(ref), atol=0.02)


def test_weighted_random_sampler_without_replacement_and_errors():
    s = wd.WeightedRandomSampler(eager.tensor([1.0, 5.0, 2.0, 0.5]), 4, replacement=False)
    assert sorted(s) == [0, 1, 2, 3]
    for bad in ({"weights": [1.0], "num_samples": 0}, {"weights": [1.0], "num_samples": True},
                {"weights": [1.0], "num_samples": 1, "replacement": 1},
                {"weights": [[1.0, 2.0]], "num_samples": 1}):
        with pytest.raises(ValueError) as ref:
            td.WeightedRandomSampler(**bad)
        with pytest.raises(ValueError) as ours:
            wd.WeightedRandomSampler(**bad)
        assert str(ours.value).split(" but")[0] == str(ref.value).split(" but")[0]
    loader = wd.DataLoader(wd.TensorDataset(eager.arange(4)), batch_size=2,
                           sampler=wd.WeightedRandomSampler([0, 0, 1, 0], 4))
    assert [b[0].tolist() for b in loader] == [[2, 2], [2, 2]]
