"""eager.nn.parallel: `DistributedDataParallel` (multi-process data parallelism over
`eager.distributed`) and `DataParallel` for one device per process (the module called on
the one GPU or the CPU; several GPUs in one process are out of scope)."""

from .data_parallel import DataParallel, data_parallel
from .distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel", "data_parallel"]
