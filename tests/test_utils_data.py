"""eager.utils.data: datasets, samplers, default_collate and DataLoader against
torch.utils.data on the same data (when PyTorch is importable) and against the documented
semantics (every index once per epoch, disjoint splits, PyTorch's dtypes and errors), plus a
small training loop that must lower its loss."""

import collections

import numpy as np
import pytest

import eager
from eager import nn, optim
from eager.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    Dataset,
    IterableDataset,
    RandomSampler,
    SequentialSampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    default_collate,
    default_convert,
    random_split,
)

try:
    import torch
    import torch.utils.data as tud
except ImportError:  # an optional reference
    torch = tud = None

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch (optional reference) missing")

Point = collections.namedtuple("Point", "x y")


def dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def flatten(batch):
    """Leaves of a collated batch as (numpy value, dtype name) or plain Python values."""
    if isinstance(batch, dict):
        return [leaf for k in sorted(batch) for leaf in flatten(batch[k])]
    if isinstance(batch, tuple | list) and not all(isinstance(b, str) for b in batch):
        return [leaf for b in batch for leaf in flatten(b)]
    if hasattr(batch, "dtype") and hasattr(batch, "shape"):
        return [(batch.numpy(), dtype_name(batch))]
    return [batch]


def assert_same_batches(ours, theirs):
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs, strict=True):
        assert type(a).__name__ == type(b).__name__
        la, lb = flatten(a), flatten(b)
        assert len(la) == len(lb)
        for x, y in zip(la, lb, strict=True):
            if isinstance(x, tuple):
                np.testing.assert_array_equal(x[0], y[0])
                assert x[1] == y[1] and x[0].shape == y[0].shape
            else:
                assert x == y


class MixedDataset:
    """Samples mixing numpy arrays, Python numbers, strings, dicts and namedtuples."""

    def __init__(self, n=7):
        rng = np.random.default_rng(0)
        self.x = rng.standard_normal((n, 3)).astype(np.float32)
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return {"x": self.x[i], "f": float(i) / 2, "i": i, "b": i % 2 == 0, "name": f"s{i}",
                "p": Point(np.int32(i), (i, 2.5 * i))}


# ---------------------------------------------------------------- against torch's DataLoader

@needs_torch
@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (3, False), (3, True), (7, True),
                                                  (10, False)])
def test_tensor_dataset_batches_match_torch(batch_size, drop_last):
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((7, 2, 3)).astype(np.float32), rng.integers(0, 5, 7)
    ours = list(DataLoader(TensorDataset(eager.tensor(x), eager.tensor(y)),
                           batch_size=batch_size, drop_last=drop_last))
    theirs = list(tud.DataLoader(tud.TensorDataset(torch.tensor(x), torch.tensor(y)),
                                 batch_size=batch_size, drop_last=drop_last))
    assert_same_batches(ours, theirs)
    assert len(DataLoader(TensorDataset(eager.tensor(x)), batch_size=batch_size,
                          drop_last=drop_last)) == len(theirs)


@needs_torch
@pytest.mark.parametrize("batch_size", [None, 1, 3])
def test_mixed_samples_match_torch(batch_size):
    ds = MixedDataset()
    assert_same_batches(list(DataLoader(ds, batch_size=batch_size)),
                        list(tud.DataLoader(ds, batch_size=batch_size)))


@needs_torch
def test_default_collate_matches_torch():
    batches = [[(1, 2.0, True), (3, 4.0, False)], [[np.float32(1), np.int16(2)]] * 2,
               [np.arange(4.0), np.ones(4)], [b"a", b"b"], [Point(1, [2, 3])] * 3]
    for batch in batches:
        assert_same_batches([default_collate(batch)], [tud.default_collate(batch)])
    assert_same_batches([default_convert((np.arange(3), 1))],
                        [tud.default_convert((np.arange(3), 1))])


# ---------------------------------------------------------------- collate semantics

def test_collate_numbers_tuples_dicts():
    out = default_collate([(1, 0.5, "a"), (2, 1.5, "b")])
    assert isinstance(out, list) and len(out) == 3  # tuples collate to a list, like PyTorch
    assert out[0].dtype == eager.int64 and out[0].tolist() == [1, 2]
    assert out[1].dtype == eager.float64 and out[1].tolist() == [0.5, 1.5]
    assert out[2] == ("a", "b")  # string fields of tuple samples stay the tuple zip made
    d = default_collate([{"a": eager.ones(2), "b": [1, 2]}, {"a": eager.zeros(2), "b": [3, 4]}])
    assert d["a"].shape == (2, 2) and d["a"].tolist() == [[1, 1], [0, 0]]
    assert [t.tolist() for t in d["b"]] == [[1, 3], [2, 4]]
    p = default_collate([Point(1, True), Point(2, False)])
    assert isinstance(p, Point) and p.y.dtype == eager.bool and p.x.tolist() == [1, 2]
    arr = default_collate([np.zeros((2, 3), np.float32)] * 4)
    assert arr.shape == (4, 2, 3) and arr.dtype == eager.float32


def test_collate_errors():
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([object(), object()])
    with pytest.raises(TypeError, match="default_collate: batch must contain"):
        default_collate([np.array(["a"]), np.array(["b"])])


# ---------------------------------------------------------------- shuffling and samplers

def epoch_order(loader):
    return [i for (_, idx) in loader for i in idx.tolist()]


def test_shuffle_reproducible_with_manual_seed_and_generator():
    n = 23
    ds = TensorDataset(eager.zeros(n, 2), eager.arange(n))
    eager.manual_seed(0)
    a = epoch_order(DataLoader(ds, batch_size=4, shuffle=True))
    eager.manual_seed(0)
    loader = DataLoader(ds, batch_size=4, shuffle=True)
    b, b2 = epoch_order(loader), epoch_order(loader)
    assert a == b and sorted(a) == list(range(n)) and sorted(b2) == list(range(n))
    assert a != list(range(n)) and b2 != b  # shuffled, and a new order each epoch
    g1, g2 = eager.Generator().manual_seed(5), eager.Generator().manual_seed(5)
    c = epoch_order(DataLoader(ds, batch_size=5, shuffle=True, generator=g1))
    eager.manual_seed(123)  # the explicit generator ignores the global seed
    d = epoch_order(DataLoader(ds, batch_size=5, shuffle=True, generator=g2))
    assert c == d and sorted(c) == list(range(n))


def test_samplers():
    assert list(SequentialSampler(range(4))) == [0, 1, 2, 3]
    g = eager.Generator().manual_seed(1)
    s = RandomSampler(range(5), num_samples=12, generator=g)
    idx = list(s)
    assert len(s) == 12 == len(idx)
    assert sorted(idx[:5]) == sorted(idx[5:10]) == list(range(5)) and len(set(idx[10:])) == 2
    r = list(RandomSampler(range(3), replacement=True, num_samples=50, generator=g))
    assert len(r) == 50 and set(r) <= {0, 1, 2}
    assert sorted(SubsetRandomSampler([7, 8, 9], generator=g)) == [7, 8, 9]
    assert list(BatchSampler(range(10), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(range(10), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4 and len(BatchSampler(range(10), 3, True)) == 3
    batches = list(DataLoader(range(10), batch_sampler=BatchSampler(range(10), 4, False)))
    assert [b.tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 1)
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)


# ---------------------------------------------------------------- datasets and random_split

def test_random_split_lengths_fractions_disjoint():
    g = eager.Generator().manual_seed(0)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7] and all(isinstance(p, Subset) for p in parts)
    assert sorted(list(parts[0]) + list(parts[1])) == list(range(10))
    again = random_split(range(10), [3, 7], generator=eager.Generator().manual_seed(0))
    assert [list(p) for p in again] == [list(p) for p in parts]
    fr = random_split(range(30), [0.3, 0.3, 0.4], generator=g)
    assert [len(p) for p in fr] == [9, 9, 12]
    odd = random_split(range(11), [0.5, 0.5])
    assert [len(p) for p in odd] == [6, 5]  # the remainder goes round-robin from the first
    assert sorted(list(odd[0]) + list(odd[1])) == list(range(11))
    with pytest.warns(UserWarning, match="Length of split at index 1 is 0"):
        random_split(range(2), [1.0, 0.0])
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 6])
    with pytest.raises(ValueError, match="Fraction at index 0 is not between 0 and 1"):
        random_split(range(10), [-0.5, 1.5])


@needs_torch
def test_random_split_lengths_match_torch():
    for n, fr in [(10, [0.1, 0.2, 0.7]), (7, [0.25, 0.25, 0.25, 0.25]), (5, [0.5, 0.5])]:
        ours = [len(p) for p in random_split(range(n), fr)]
        assert ours == [len(p) for p in tud.random_split(range(n), fr)]


def test_tensor_subset_concat_datasets():
    x, y = eager.arange(12.0).reshape(6, 2), eager.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6 and ds[2][0].tolist() == [4.0, 5.0] and ds[2][1].item() == 2
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(x, eager.arange(5))
    with pytest.raises(AssertionError, match="Size mismatch between tensors"):  # PyTorch 2.x
        TensorDataset(x, eager.arange(5))
    sub = Subset(ds, [5, 0])
    assert len(sub) == 2 and sub[0][1].item() == 5
    cat = ds + sub
    assert isinstance(cat, ConcatDataset) and len(cat) == 8 and cat.cumulative_sizes == [6, 8]
    assert cat[6][1].item() == 5 and cat[-1][1].item() == 0 and cat[3][1].item() == 3
    with pytest.raises(ValueError, match="absolute value of index"):
        cat[-9]
    with pytest.raises(AssertionError, match="empty iterable"):
        ConcatDataset([])
    with pytest.raises(NotImplementedError):
        Dataset()[0]


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_iterable_dataset_and_options():
    assert [b.tolist() for b in DataLoader(Stream(7), batch_size=3)] == [[0, 1, 2], [3, 4, 5],
                                                                         [6]]
    assert len(DataLoader(Stream(7), batch_size=3)) == 3
    assert len(DataLoader(Stream(7), batch_size=3, drop_last=True)) == 2
    assert len(list(DataLoader(Stream(7), batch_size=3, drop_last=True))) == 2
    assert list(DataLoader(Stream(3), batch_size=None)) == [0, 1, 2]
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler"):
        DataLoader(Stream(3), sampler=[0])
    ds = TensorDataset(eager.arange(5))
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler option is mutually exclusive"):
        DataLoader(ds, batch_size=2, batch_sampler=[[0, 1]])
    with pytest.raises(ValueError, match="mutually exclusive with drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="num_workers option should be non-negative"):
        DataLoader(ds, num_workers=-1)
    # num_workers > 0 runs in-process: same batches, custom collate_fn applied
    two = [b[0].tolist() for b in DataLoader(ds, batch_size=2, num_workers=2)]
    assert two == [[0, 1], [2, 3], [4]]
    assert list(DataLoader(ds, batch_size=2, collate_fn=len)) == [2, 2, 1]


# ---------------------------------------------------------------- end to end

def test_training_loop_lowers_loss():
    eager.manual_seed(0)
    x = eager.randn(64, 3)
    y = x @ eager.tensor([[1.0], [-2.0], [0.5]]) + 0.3
    loader = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True)
    model = nn.Linear(3, 1)
    opt = optim.SGD(model.parameters(), lr=0.1)
    mse = nn.MSELoss()

    def full_loss():
        with eager.no_grad():
            return mse(model(x), y).item()

    before = full_loss()
    for _ in range(5):
        for xb, yb in loader:
            opt.zero_grad()
            loss = mse(model(xb), yb)
            loss.backward()
            opt.step()
    after = full_loss()
    assert after < 0.05 * before
