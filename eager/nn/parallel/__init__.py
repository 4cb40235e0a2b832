"""eager.nn.parallel: `DistributedDataParallel` (multi-process data parallelism over
`eager.distributed`). torch's single-process `DataParallel` is out of scope: wick has at most one
device per process."""

from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
