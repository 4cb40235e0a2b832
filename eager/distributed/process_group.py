"""Process groups, as `torch.distributed`'s: `init_process_group`, `new_group`, ranks, the
default (WORLD) group and its teardown.

A `ProcessGroup` wraps one MPI communicator. The default group is `MPI.COMM_WORLD` of the
processes `mpiexec` (or `wick run`) started; `init_process_group` checks that the ranks and world
size it is given (arguments, or `RANK`/`WORLD_SIZE` as `env://` reads them) agree with MPI's, and
explains how to launch when they cannot. Ranks passed to collectives (`src`, `dst`) are global
ranks, as torch's; a group translates them.

Failure: after `init_process_group`, an exception that escapes the script on any rank calls
`MPI_Abort`, so `mpiexec` stops every rank at once (torchrun's behaviour); a collective whose
peers never arrive raises after the group's `timeout` (default 30 minutes, as torch's).
"""

from __future__ import annotations

import datetime
import os
import sys

from . import backend as _be

__all__ = [
    "Backend", "GroupMember", "ProcessGroup", "destroy_process_group", "get_backend",
    "get_global_rank", "get_group_rank", "get_process_group_ranks", "get_rank",
    "get_world_size", "group", "init_process_group", "is_initialized", "is_mpi_available",
    "new_group",
]

DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class Backend(str):
    """Backend names: "mpi" is the transport; "gloo" (CPU) is accepted as an alias of it so
    that torch programs run unchanged; "nccl" needs CUDA tensors and cupy's NCCL."""

    MPI = "mpi"
    GLOO = "gloo"
    NCCL = "nccl"

    def __new__(cls, name: str):
        name = str(name).lower()
        if name not in ("mpi", "gloo", "nccl", "cpu:gloo,cuda:nccl"):
            raise ValueError(f"Invalid backend: '{name}' (wick supports 'mpi', and 'gloo' as "
                             "an alias of it on the CPU)")
        return super().__new__(cls, name)


class ProcessGroup:
    """A set of ranks and the MPI communicator they talk over. `rank()`/`size()` are the
    caller's rank in the group and the group's size; `ranks` the members' global ranks."""

    def __init__(self, comm, ranks: list, timeout: datetime.timedelta, backend_name: str):
        self.comm = comm
        self.ranks = list(ranks)
        self.timeout = timeout
        self.backend_name = backend_name

    def rank(self) -> int:
        return self.comm.Get_rank()

    def size(self) -> int:
        return self.comm.Get_size()

    def group_rank(self, global_rank: int) -> int:
        """The group rank of a global rank; ValueError when it is not a member."""
        try:
            return self.ranks.index(global_rank)
        except ValueError:
            raise ValueError(f"Global rank {global_rank} is not part of group {self}") from None

    def __repr__(self) -> str:
        return f"ProcessGroup(ranks={self.ranks}, backend={self.backend_name!r})"


class GroupMember:
    """`GroupMember.WORLD` is the default group once initialized; `NON_GROUP_MEMBER` what
    `new_group` returns on ranks outside the new group."""

    WORLD = None
    NON_GROUP_MEMBER = object()


class _World:
    default: ProcessGroup | None = None
    excepthook = None


group = GroupMember  # `dist.group.WORLD`


def is_mpi_available() -> bool:
    return _be.is_available()


def is_initialized() -> bool:
    return _World.default is not None


def _env_int(name: str):
    v = os.environ.get(name)
    return int(v) if v not in (None, "") else None


def abort_world(code: int, report: str = "") -> None:
    """Write `report` to stderr in one write, give `mpiexec` time to forward it, then stop
    every rank (MPI_Abort). Hydra kills the ranks' output forwarding on abort, so text still in a
    pipe (a traceback printed line by line) would be lost without the pause."""
    import time

    try:
        sys.stderr.flush()
        if report:
            os.write(2, report.encode("utf-8", "replace"))
        time.sleep(0.5)
    finally:
        _be.mpi().COMM_WORLD.Abort(code)


def _abort_on_uncaught(exc_type, exc, tb) -> None:
    """Print the traceback, then stop every rank (MPI_Abort): the others never hang."""
    prev = _World.excepthook
    if _World.default is None or exc_type is KeyboardInterrupt or prev not in (None, sys.__excepthook__):
        (prev or sys.__excepthook__)(exc_type, exc, tb)
        if _World.default is not None and exc_type is not KeyboardInterrupt:
            abort_world(1)
        return
    import traceback

    abort_world(1, "".join(traceback.format_exception(exc_type, exc, tb)))


def init_process_group(backend_name=None, init_method=None, timeout=None, world_size=-1,
                       rank=-1, store=None, group_name="", pg_options=None, device_id=None,
                       *, backend=None) -> None:
    """Join the default process group (`torch.distributed.init_process_group`).

    `backend` "mpi" (or "gloo", its alias here). `init_method` None, "env://" or "mpi://" (the
    processes must have been started by `wick run -n N` or `mpiexec -n N`; TCP/file rendezvous
    is MPI's job, not ours). `world_size`/`rank` (or `WORLD_SIZE`/`RANK` from the environment)
    are checked against MPI's; `timeout` (timedelta) bounds every collective's wait.
    RuntimeError when called twice or when the ranks disagree with MPI's."""
    name = backend if backend is not None else backend_name
    if _World.default is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    Backend(name if name is not None else "mpi")
    if init_method not in (None, "env://", "mpi://"):
        raise ValueError(f"init_method {init_method!r} is not supported: wick's processes meet "
                         "through MPI; launch with `wick run -n N script.py` or `mpiexec`")
    MPI = _be.mpi()
    comm = MPI.COMM_WORLD
    size, me = comm.Get_size(), comm.Get_rank()
    want_size = world_size if world_size not in (None, -1) else _env_int("WORLD_SIZE")
    want_rank = rank if rank not in (None, -1) else _env_int("RANK")
    if want_size is not None and want_size != size:
        hint = (" This process was not started by mpiexec: launch it with "
                f"`wick run -n {want_size} script.py` (or `mpiexec -n {want_size} python "
                "script.py`)." if size == 1 else "")
        raise RuntimeError(f"init_process_group: world_size is {want_size} but MPI started "
                           f"{size} process(es).{hint}")
    if want_rank is not None and want_rank != me:
        raise RuntimeError(f"init_process_group: rank is {want_rank} but this is MPI rank {me}")
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    _World.default = ProcessGroup(comm, list(range(size)), timeout, str(name or "mpi"))
    GroupMember.WORLD = _World.default
    if sys.excepthook is not _abort_on_uncaught:
        _World.excepthook = sys.excepthook
        sys.excepthook = _abort_on_uncaught


def _default() -> ProcessGroup:
    if _World.default is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _World.default


def resolve(group) -> ProcessGroup:
    """The group a collective runs on: `group`, or the default one."""
    if group is None or group is GroupMember.WORLD:
        return _default()
    if group is GroupMember.NON_GROUP_MEMBER:
        raise RuntimeError("this rank is not a member of the group")
    if not isinstance(group, ProcessGroup):
        raise TypeError(f"group must be a ProcessGroup, got {type(group).__name__}")
    return group


def destroy_process_group(group=None) -> None:
    """Leave `group` (default: every group; the default group is then uninitialized)."""
    if group is None or group is GroupMember.WORLD:
        _default()
        _World.default = None
        GroupMember.WORLD = None
        if sys.excepthook is _abort_on_uncaught:
            sys.excepthook = _World.excepthook or sys.__excepthook__
        return
    g = resolve(group)
    if g.comm is not _be.mpi().COMM_WORLD:
        g.comm.Free()


def new_group(ranks=None, timeout=None, backend=None, pg_options=None,
              use_local_synchronization=False, group_desc=None, device_id=None):
    """A group of the given global ranks (all ranks when None). Every rank of the default
    group must call it, as torch's; ranks outside get `GroupMember.NON_GROUP_MEMBER`."""
    world = _default()
    members = sorted(set(range(world.size()) if ranks is None else (int(r) for r in ranks)))
    for r in members:
        if not 0 <= r < world.size():
            raise ValueError(f"new_group: rank {r} is out of range for world size "
                             f"{world.size()}")
    MPI = _be.mpi()
    me = world.rank()
    color = 0 if me in members else MPI.UNDEFINED
    comm = world.comm.Split(color, key=me)
    if me not in members:
        return GroupMember.NON_GROUP_MEMBER
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        timeout = datetime.timedelta(seconds=float(timeout))
    return ProcessGroup(comm, members, timeout or world.timeout, world.backend_name)


def get_rank(group=None) -> int:
    """The caller's rank in `group` (global rank for the default group); -1 when not a
    member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group).rank()


def get_world_size(group=None) -> int:
    """The number of processes in `group`; -1 for a non-member."""
    if group is GroupMember.NON_GROUP_MEMBER:
        return -1
    return resolve(group).size()


def get_backend(group=None) -> str:
    return resolve(group).backend_name


def get_global_rank(group, group_rank: int) -> int:
    return resolve(group).ranks[group_rank]


def get_group_rank(group, global_rank: int) -> int:
    return resolve(group).group_rank(global_rank)


def get_process_group_ranks(group) -> list:
    return list(resolve(group).ranks)
