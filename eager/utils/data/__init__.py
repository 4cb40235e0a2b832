"""eager.utils.data: PyTorch's data-loading classes (Dataset, TensorDataset, Subset,
ConcatDataset, ChainDataset, StackDataset, random_split, samplers, default_collate, DataLoader)
for eager tensors.

Why: simple training code does `from torch.utils.data import DataLoader, TensorDataset`; with
`import eager as torch` the same names live at `eager.utils.data`. Semantics follow
torch/utils/data (dataset.py, sampler.py, _utils/collate.py, dataloader.py) of PyTorch 2.x.
Randomness comes from `eager.Generator` / eager's default generator, so shuffles are
reproducible under `eager.manual_seed` (the streams differ from PyTorch's: same seed, other
order). Loading is always in-process: `num_workers > 0` is accepted and runs in the main process.
Touches only eager's public pieces (creation, random, Tensor, the generated `stack`).
"""

from __future__ import annotations

import bisect
import collections.abc
import copy
import itertools
import math
import re
import warnings

import numpy as np

from ir.dtypes import float64, int64

from ...creation import as_tensor, tensor
from ...dispatch import FUNCTIONS
from ...random import Generator, multinomial, randint, randperm
from ...tensor import Tensor
from .distributed import DistributedSampler
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackDataset",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "WeightedRandomSampler",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "random_split",
]


# ---------------------------------------------------------------------------------- datasets

class Dataset:
    """A map-style dataset: subclasses define `__getitem__(index)` (and usually `__len__`).
    `a + b` is `ConcatDataset([a, b])` (torch.utils.data.Dataset)."""

    def __getitem__(self, index):
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset) -> ConcatDataset:
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """An iterable-style dataset: subclasses define `__iter__` (torch.utils.data.IterableDataset).
    A DataLoader batches the items in iteration order; samplers and shuffle are refused."""

    def __iter__(self):
        raise NotImplementedError("Subclasses of IterableDataset should implement __iter__.")

    def __add__(self, other):
        return ChainDataset([self, other])


class _SizeMismatch(ValueError, AssertionError):
    """PyTorch 2.x raises AssertionError (older releases: a bare `assert`); catching ValueError
    works too."""


class TensorDataset(Dataset):
    """Samples are `tuple(t[i] for t in tensors)`; all tensors share their first dimension.
    Raises (AssertionError and ValueError) "Size mismatch between tensors" otherwise
    (torch.utils.data.TensorDataset)."""

    def __init__(self, *tensors: Tensor) -> None:
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise _SizeMismatch("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


class Subset(Dataset):
    """The view `dataset[indices[i]]` of a dataset at the given indices (torch Subset)."""

    def __init__(self, dataset, indices) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx):
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]
        return self.dataset[self.indices[idx]]

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after the other; `cumulative_sizes[k]` is the length of the first k+1.
    AssertionError for no datasets or an IterableDataset; ValueError for an index below
    -len (torch ConcatDataset)."""

    @staticmethod
    def cumsum(sequence) -> list[int]:
        return list(itertools.accumulate(len(e) for e in sequence))

    def __init__(self, datasets) -> None:
        self.datasets = list(datasets)
        if len(self.datasets) == 0:
            raise AssertionError("datasets should not be an empty iterable")
        if any(isinstance(d, IterableDataset) for d in self.datasets):
            raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes = self.cumsum(self.datasets)

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx):
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx = len(self) + idx
        k = bisect.bisect_right(self.cumulative_sizes, idx)
        return self.datasets[k][idx - (self.cumulative_sizes[k - 1] if k else 0)]


class ChainDataset(IterableDataset):
    """Iterable datasets one after the other, chained lazily (torch ChainDataset); `len` sums
    their lengths. AssertionError when a member is not an IterableDataset (on iteration or
    len, as torch's)."""

    def __init__(self, datasets) -> None:
        self.datasets = datasets

    def __iter__(self):
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")  # noqa: TRY004
            yield from d

    def __len__(self) -> int:
        total = 0
        for d in self.datasets:
            if not isinstance(d, IterableDataset):
                raise AssertionError("ChainDataset only supports IterableDataset")  # noqa: TRY004
            total += len(d)
        return total


class StackDataset(Dataset):
    """Samples of several equally long datasets side by side (torch StackDataset):
    `StackDataset(a, b)[i] == (a[i], b[i])`, `StackDataset(x=a, y=b)[i] == {"x": a[i], "y":
    b[i]}`. ValueError for both or neither of args and kwargs, or differing lengths."""

    def __init__(self, *args, **kwargs) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        members = list(args) if args else list(kwargs.values())
        self._length = len(members[0])
        if any(self._length != len(d) for d in members):
            raise ValueError("Size mismatch between datasets")
        self.datasets = args if args else kwargs

    def __getitem__(self, index):
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def _column(self, dataset, indices: list) -> list:
        getitems = getattr(dataset, "__getitems__", None)
        if not callable(getitems):
            return [dataset[i] for i in indices]
        items = getitems(indices)
        if len(items) != len(indices):
            raise ValueError(f"Nested dataset's output size mismatch. Expected {len(indices)}, "
                             f"got {len(items)}")
        return items

    def __getitems__(self, indices: list) -> list:
        """A batch of samples, through each member's `__getitems__` where it has one."""
        if isinstance(self.datasets, dict):
            cols = {k: self._column(d, indices) for k, d in self.datasets.items()}
            return [{k: c[j] for k, c in cols.items()} for j in range(len(indices))]
        cols = [self._column(d, indices) for d in self.datasets]
        return [tuple(c[j] for c in cols) for j in range(len(indices))]

    def __len__(self) -> int:
        return self._length


def random_split(dataset, lengths, generator=None) -> list[Subset]:
    """Split `dataset` into non-overlapping random `Subset`s of the given lengths, or of
    fractions summing to 1 (floor(frac * n) each, the remainder given out one by one
    round-robin; a warning for an empty split). ValueError for a fraction outside [0, 1] or
    lengths not summing to len(dataset). The permutation is `eager.randperm(n, generator=...)`
    (eager's default generator when None). Source: torch.utils.data.random_split."""
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        sizes = []
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
            sizes.append(math.floor(len(dataset) * frac))
        for i in range(len(dataset) - sum(sizes)):
            sizes[i % len(sizes)] += 1
        lengths = sizes
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. "
                              f"This might result in an empty dataset.", stacklevel=2)
    if sum(lengths) != len(dataset):
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    indices = randperm(sum(lengths), generator=generator).tolist()
    return [Subset(dataset, indices[end - n:end])
            for end, n in zip(itertools.accumulate(lengths), lengths)]


# ---------------------------------------------------------------------------------- collation

_NP_STR_OBJ = re.compile(r"[SaUO]")
_COLLATE_ERR = ("default_collate: batch must contain tensors, numpy arrays, numbers, "
                "dicts or lists; found {}")


def _rebuild(elem, values: dict | list):
    """A container like `elem` holding `values` (PyTorch keeps the mapping/sequence type when
    it can, falls back to dict/list when the type's constructor refuses)."""
    try:
        if isinstance(elem, collections.abc.MutableMapping | collections.abc.MutableSequence):
            clone = copy.copy(elem)
            for k, v in (values.items() if isinstance(values, dict) else enumerate(values)):
                clone[k] = v
            return clone
        return type(elem)(values)
    except TypeError:
        return values


def default_collate(batch):
    """Merge a list of samples into a batch (torch.utils.data.default_collate):
    tensors -> `stack(batch, 0)` (shape (B, *s)); numpy arrays -> tensors, stacked; Python
    floats -> float64 tensor (B,); ints/bools -> int64/bool tensor (B,); numpy scalars ->
    `as_tensor(batch)`; str/bytes -> the list unchanged; mappings -> same keys, each collated;
    namedtuples -> same type, per field; tuples -> a *list* of collated fields; lists and other
    sequences -> same type when possible. RuntimeError when sequences differ in length,
    TypeError for anything else (and numpy string/object arrays)."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return FUNCTIONS["stack"](list(batch), 0)
    if type(elem).__module__ == "numpy" and not isinstance(elem, np.str_ | np.bytes_):
        if isinstance(elem, np.ndarray):
            if _NP_STR_OBJ.search(elem.dtype.str) is not None:
                raise TypeError(_COLLATE_ERR.format(elem.dtype))
            return default_collate([as_tensor(b) for b in batch])
        return as_tensor(np.asarray(batch))
    if isinstance(elem, float):
        return tensor(batch, dtype=float64)
    if isinstance(elem, int):
        return tensor(batch)
    if isinstance(elem, str | bytes):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        return _rebuild(elem, {key: default_collate([d[key] for d in batch]) for key in elem})
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(s) for s in zip(*batch)]
        return fields if isinstance(elem, tuple) else _rebuild(elem, fields)
    raise TypeError(_COLLATE_ERR.format(type(elem)))


def default_convert(data):
    """Convert one sample without batching (used when `batch_size=None`): numpy arrays and
    scalars -> tensors, containers converted per element, anything else unchanged
    (torch.utils.data.default_convert)."""
    if isinstance(data, Tensor):
        return data
    if type(data).__module__ == "numpy" and not isinstance(data, np.str_ | np.bytes_):
        if isinstance(data, np.ndarray) and _NP_STR_OBJ.search(data.dtype.str) is not None:
            return data
        return as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        return _rebuild(data, {key: default_convert(data[key]) for key in data})
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, str | bytes):
        return _rebuild(data, [default_convert(d) for d in data])
    return data


def get_worker_info():
    """Always None: eager loads data in the main process."""


# ---------------------------------------------------------------------------------- DataLoader

class DataLoader:
    """Iterate a dataset in batches (torch.utils.data.DataLoader).

    Map-style: indices come from `batch_sampler`, else from `BatchSampler(sampler or
    RandomSampler/SequentialSampler, batch_size, drop_last)`; each batch is
    `collate_fn([dataset[i] for i in indices])` (`default_collate` by default). With
    `batch_size=None` samples are returned one by one through `default_convert`. Iterable
    datasets are batched in iteration order. `len()` is the number of batches.
    `num_workers > 0` runs in the main process (same batches, no parallelism); `pin_memory`,
    `timeout`, `worker_init_fn`, `prefetch_factor`, `persistent_workers` are accepted and
    ignored. ValueError for the option clashes PyTorch refuses (sampler with shuffle;
    batch_sampler with batch_size/shuffle/sampler/drop_last; batch_size=None with drop_last;
    shuffle or a sampler with an IterableDataset; negative num_workers).
    """

    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, multiprocessing_context=None,
                 generator: Generator | None = None, *, prefetch_factor: int | None = None,
                 persistent_workers: bool = False, pin_memory_device: str = "",
                 in_order: bool = True) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; "
                             "use num_workers=0 to disable multiprocessing.")
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        self.dataset = dataset
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable:
            if shuffle not in {False, None}:
                raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle "
                                 f"option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified sampler "
                                 f"option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not self._iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))
        if batch_size is not None and batch_sampler is None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        auto_collation = batch_sampler is not None or (self._iterable and batch_size is not None)
        if collate_fn is None:
            collate_fn = default_collate if auto_collation else default_convert
        self.collate_fn = collate_fn

    def __iter__(self):
        if self._iterable:
            items = iter(self.dataset)
            if self.batch_size is None:
                yield from map(self.collate_fn, items)
                return
            while batch := list(itertools.islice(items, self.batch_size)):
                if len(batch) < self.batch_size and self.drop_last:
                    return
                yield self.collate_fn(batch)
        elif self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self._fetch(list(indices))
        else:
            for i in self.sampler:
                yield self.collate_fn(self.dataset[i])

    def _fetch(self, indices: list[int]):
        """One batch. A TensorDataset under default_collate is gathered with one index per
        tensor: `t[indices]` equals `stack([t[i] for i in indices])`, without a Python loop."""
        ds = self.dataset
        if type(ds) is TensorDataset and self.collate_fn is default_collate:
            index = tensor(indices, dtype=int64)
            return [t[index] for t in ds.tensors]
        getitems = getattr(ds, "__getitems__", None)
        return self.collate_fn(getitems(indices) if callable(getitems)
                               else [ds[i] for i in indices])

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)
