"""eager.distributed: `torch.distributed` on MPI (mpi4py + MPICH from pip), with
`DistributedDataParallel` in `eager.nn.parallel` and `DistributedSampler` in
`eager.utils.data.distributed`.

Launch N processes with `wick run -n N script.py args` (over the `mpiexec` the MPICH wheel
installs; several machines through a host file: `wick run -n 8 --hostfile hosts script.py`),
then in the script, as with torch:

    import eager.distributed as dist
    dist.init_process_group("mpi")          # "gloo" is accepted as an alias on the CPU
    dist.all_reduce(t, op=dist.ReduceOp.SUM)

wick has no transport of its own: every collective is one MPI call on the tensor's buffer.
mpi4py is imported on first use, so `import eager.distributed` works without it
(`is_available()` says whether it can run).
"""

from .backend import ReduceOp, is_available
from .collectives import (
    Work, all_gather, all_gather_into_tensor, all_reduce, all_to_all, all_to_all_single,
    barrier, broadcast, gather, irecv, isend, recv, reduce, reduce_scatter,
    reduce_scatter_tensor, scatter, send,
)
from .objects import (
    all_gather_object, broadcast_object_list, gather_object, scatter_object_list,
)
from .process_group import (
    Backend, GroupMember, ProcessGroup, destroy_process_group, get_backend, get_global_rank,
    get_group_rank, get_process_group_ranks, get_rank, get_world_size, group,
    init_process_group, is_initialized, is_mpi_available, new_group,
)


def is_gloo_available() -> bool:
    """'gloo' runs as an alias of the MPI backend, so: whether MPI is available."""
    return is_available()


def is_nccl_available() -> bool:
    return False


def is_torchelastic_launched() -> bool:
    return False


reduce_op = ReduceOp
