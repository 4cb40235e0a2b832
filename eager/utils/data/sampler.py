"""`eager.utils.data.sampler` (torch.utils.data.sampler): the index samplers a DataLoader draws
from (`Sampler`, `SequentialSampler`, `RandomSampler`, `SubsetRandomSampler`,
`WeightedRandomSampler`, `BatchSampler`), with PyTorch 2.x semantics. Randomness comes from
`eager.Generator` / eager's default generator, so orders are reproducible under
`eager.manual_seed` (the streams differ from PyTorch's). Touches eager's random functions only.
"""

from __future__ import annotations

import itertools

from ir.dtypes import float64

from ...creation import as_tensor
from ...random import Generator, multinomial, randint, randperm

__all__ = ["BatchSampler", "RandomSampler", "Sampler", "SequentialSampler",
           "SubsetRandomSampler", "WeightedRandomSampler"]


# ---------------------------------------------------------------------------------- samplers

class Sampler:
    """Base of index samplers: subclasses define `__iter__` (and `__len__` when known)."""

    def __init__(self, data_source=None) -> None:
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """Indices 0, 1, ..., len(data_source) - 1 (torch SequentialSampler)."""

    def __init__(self, data_source) -> None:
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


def _fresh_generator() -> Generator:
    """A Generator seeded by one draw from eager's default generator, as PyTorch's
    RandomSampler does when given none (so `eager.manual_seed` fixes every epoch's order)."""
    seed = int(randint(0, 2**62, ()).item())
    return Generator().manual_seed(seed)


class RandomSampler(Sampler):
    """Random indices: a fresh permutation per pass without replacement (`num_samples` beyond
    len chains permutations), uniform draws with replacement. TypeError for a non-bool
    `replacement`, ValueError for `num_samples` not a positive int (torch RandomSampler)."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator: Generator | None = None) -> None:
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        g = self.generator if self.generator is not None else _fresh_generator()
        if self.replacement:
            yield from randint(0, n, (self.num_samples,), generator=g).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from randperm(n, generator=g).tolist()
        yield from randperm(n, generator=g).tolist()[: self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (torch SubsetRandomSampler)."""

    def __init__(self, indices, generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` indices in [0, len(weights)) drawn with probabilities proportional to
    `weights` (`multinomial`), with or without replacement (torch WeightedRandomSampler).
    ValueError for num_samples not a positive int, a non-bool replacement, or weights that
    are not 1-D."""

    def __init__(self, weights, num_samples: int, replacement: bool = True,
                 generator: Generator | None = None) -> None:
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or \
                num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "  # noqa: TRY004
                             f"replacement={replacement}")  # (torch's type)
        weights_tensor = as_tensor(weights, dtype=float64)
        if weights_tensor.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        rand = multinomial(self.weights, self.num_samples, self.replacement,
                           generator=self.generator)
        yield from iter(rand.tolist())

    def __len__(self) -> int:
        return self.num_samples


class BatchSampler(Sampler):
    """Groups a sampler's indices into lists of `batch_size` (the last shorter unless
    `drop_last`). ValueError for a non-positive or non-int batch_size, a non-bool drop_last
    (torch BatchSampler)."""

    def __init__(self, sampler, batch_size: int, drop_last: bool) -> None:
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(  # noqa: TRY004 (PyTorch's error type)
                f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        it = iter(self.sampler)
        while batch := list(itertools.islice(it, self.batch_size)):
            if len(batch) < self.batch_size and self.drop_last:
                return
            yield batch

    def __len__(self) -> int:
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
