"""`DistributedSampler`, as torch.utils.data.distributed's: each of `num_replicas` processes
reads a disjoint share of the dataset's indices.

The indices (shuffled with a generator seeded `seed + epoch` when `shuffle`) are padded by
repeating from the start until their count divides by `num_replicas` (or cut to a multiple
when `drop_last`), then rank r takes every `num_replicas`-th index from position r. Call
`set_epoch(e)` at each epoch for a new order. The shuffle order differs from torch's (wick's
generator is not torch's), the partition rules are the same.
"""

from __future__ import annotations

import math

from ... import distributed as dist
from ...random import Generator, randperm
from .sampler import Sampler

__all__ = ["DistributedSampler"]


class DistributedSampler(Sampler):
    """Indices of `dataset` for one rank. `num_replicas`/`rank` default to the default process
    group's world size and rank; ValueError for a rank outside [0, num_replicas)."""

    def __init__(self, dataset, num_replicas=None, rank=None, shuffle=True, seed=0,
                 drop_last=False) -> None:
        if num_replicas is None or rank is None:
            if not dist.is_initialized():
                raise RuntimeError("Requires distributed package to be available")
            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval "
                             f"[0, {num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        n = len(dataset)
        if drop_last and n % num_replicas != 0:
            self.num_samples = math.ceil((n - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(n / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self):
        n = len(self.dataset)
        if self.shuffle:
            g = Generator()
            g.manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if not self.drop_last:
            pad = self.total_size - len(indices)
            if pad <= len(indices):
                indices += indices[:pad]
            else:
                indices += (indices * math.ceil(pad / len(indices)))[:pad]
        else:
            indices = indices[:self.total_size]
        assert len(indices) == self.total_size
        indices = indices[self.rank:self.total_size:self.num_replicas]
        assert len(indices) == self.num_samples
        return iter(indices)

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        """The epoch whose shuffle the next iteration uses (seed + epoch)."""
        self.epoch = epoch
