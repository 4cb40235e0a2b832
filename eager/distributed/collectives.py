"""Collectives and point-to-point ops on eager tensors, as `torch.distributed`'s: `all_reduce`,
`broadcast`, `reduce`, `all_gather`, `all_gather_into_tensor`, `reduce_scatter(_tensor)`,
`gather`, `scatter`, `all_to_all(_single)`, `barrier`, `send`/`recv`, `isend`/`irecv`.

Tensors travel as their buffers (no pickling): a contiguous tensor is handed to MPI in place;
others (and dtypes MPI cannot reduce: bfloat16/float16 reduce in float32, bool as int32) go
through one contiguous staging copy that is written back when the op completes. In-place
results bump the tensor's version counter, as any in-place write. `async_op=True` returns a
`Work` whose `wait()` completes the op (and the write-back); otherwise the call waits.

Before each collective, the ranks compare the tensor's shape and dtype (one small allgather,
switched off by `WICK_DIST_CHECKS=0`): a mismatch raises on every rank, naming both shapes,
instead of MPI truncating or hanging. Ranks (`src`, `dst`) are global ranks, as torch's.
CUDA tensors are refused with the reason (NCCL through cupy is not wired in this build).
"""

from __future__ import annotations

import os
import time

import numpy as np

from ..dispatch import FUNCTIONS
from ..tensor import Tensor, bump_version
from . import backend as _be
from .backend import ReduceOp
from .process_group import resolve

__all__ = [
    "Work", "all_gather", "all_gather_into_tensor", "all_reduce", "all_to_all",
    "all_to_all_single", "barrier", "broadcast", "gather", "irecv", "isend", "recv", "reduce",
    "reduce_scatter", "reduce_scatter_tensor", "scatter", "send",
]


class Work:
    """The handle of an asynchronous op (`torch.distributed.Work`): `wait()` completes it,
    raising RuntimeError after the group's timeout; `is_completed()` polls without blocking;
    `result()` the output tensors."""

    def __init__(self, requests, finish, deadline: float, what: str, outputs=(), statuses=None):
        self._reqs = requests if isinstance(requests, list) else [requests]
        self._statuses = statuses
        self._finish = finish
        self._deadline = deadline
        self._what = what
        self._outputs = list(outputs)
        self._done = False
        self.source_rank = None

    def _complete(self):
        if not self._done:
            self._done = True
            if self._finish is not None:
                r = self._finish()
                if r is not None:
                    self.source_rank = r

    def wait(self, timeout=None) -> bool:
        deadline = self._deadline if timeout is None else time.monotonic() + (
            timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout))
        if not self._done:
            _be.wait(self._reqs, deadline, self._what, self._statuses)
            self._complete()
        return True

    def is_completed(self) -> bool:
        if not self._done and _be.mpi().Request.Testall(self._reqs, self._statuses):
            self._complete()
        return self._done

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def result(self) -> list:
        return self._outputs

    def _source_rank(self) -> int:
        self.wait()
        return self.source_rank


def _tensor(t, what: str) -> Tensor:
    if not isinstance(t, Tensor):
        raise TypeError(f"{what}: expected an eager Tensor, got {type(t).__name__}")
    if not isinstance(t._data, np.ndarray):
        raise RuntimeError(
            f"{what}: CUDA tensors need NCCL, which this build of eager.distributed does not "
            "wire in; move the tensor to the CPU (`t.cpu()`) or use a CUDA-aware MPI build")
    return t


class _Staged:
    """A tensor's data as a contiguous buffer MPI can use, and how to write it back."""

    def __init__(self, t: Tensor, reducing: bool, load: bool = True):
        self.t = t
        arr = t._data
        self.wire = _be.wire_dtype(arr.dtype, reducing)
        if reducing and arr.dtype.kind == "b":
            self.wire = np.dtype(np.int32)
        if self.wire == arr.dtype and arr.flags.c_contiguous:
            self.buf, self.direct = arr, True
        elif not load:
            self.buf, self.direct = np.empty(arr.shape, self.wire), False
        elif self.wire.itemsize == arr.dtype.itemsize and self.wire.kind == "u" and \
                arr.dtype.kind != "u":
            self.buf, self.direct = np.ascontiguousarray(arr).view(self.wire), False
        else:
            self.buf, self.direct = np.ascontiguousarray(arr.astype(self.wire)), False

    def store(self, scale=None) -> None:
        """Write the buffer back into the tensor (dividing by `scale` first for AVG)."""
        buf = self.buf
        if scale is not None:
            np.divide(buf, scale, out=buf, casting="unsafe")
        if not self.direct:
            arr = self.t._data
            if buf.dtype == arr.dtype:
                arr[...] = buf
            elif buf.dtype.kind == "u" and buf.dtype.itemsize == arr.dtype.itemsize and \
                    arr.dtype.kind != "u":
                arr[...] = buf.view(arr.dtype)
            else:
                arr[...] = buf.astype(arr.dtype) if arr.dtype.kind != "b" else buf != 0
        bump_version(self.t)


def _deadline(pg) -> float:
    return time.monotonic() + pg.timeout.total_seconds()


def _checks_on() -> bool:
    return os.environ.get("WICK_DIST_CHECKS", "1") != "0"


def _signature(shape, dtype) -> np.ndarray:
    sig = np.full(18, -1, np.int64)
    sig[0] = len(shape)
    sig[1] = sum(ord(c) << (8 * i) for i, c in enumerate(str(dtype)[:7]))
    sig[2:2 + min(len(shape), 16)] = shape[:16]
    return sig


def _check_same(pg, shape, dtype, what: str) -> None:
    """Every rank of `pg` passes the same shape and dtype to `what`; RuntimeError on all ranks
    otherwise."""
    if not _checks_on() or pg.size() == 1:
        return
    mine = _signature(tuple(shape), dtype)
    every = np.empty((pg.size(), mine.size), np.int64)
    _be.wait(pg.comm.Iallgather(mine, every), _deadline(pg), what)
    bad = [r for r in range(pg.size()) if not np.array_equal(every[r], mine)]
    if bad:
        r = bad[0]
        theirs = tuple(int(s) for s in every[r][2:2 + int(every[r][0])])
        raise RuntimeError(
            f"{what}: ranks passed tensors of different shapes or dtypes: this rank "
            f"({pg.ranks[pg.rank()]}) has shape {list(shape)} dtype {dtype}, rank "
            f"{pg.ranks[r]} has shape {list(theirs)}" + (
                "" if theirs != tuple(shape) else " and another dtype"))


def _run(req, finish, pg, what: str, async_op: bool, outputs=()):
    work = Work(req, finish, _deadline(pg), what, outputs)
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `tensor` across the group with `op`; every rank ends with the result, in place."""
    pg = resolve(group)
    t = _tensor(tensor, "all_reduce")
    _check_same(pg, t.shape, t.dtype, "all_reduce")
    st = _Staged(t, reducing=True)
    mop = _be.mpi_op(op, st.buf.dtype)
    req = pg.comm.Iallreduce(_be.mpi().IN_PLACE, st.buf, mop)
    scale = pg.size() if op is ReduceOp.AVG else None
    return _run(req, lambda: st.store(scale), pg, "all_reduce", async_op, [t])


def broadcast(tensor, src, group=None, async_op=False):
    """Copy `tensor` of global rank `src` into `tensor` on every rank of the group."""
    pg = resolve(group)
    t = _tensor(tensor, "broadcast")
    root = pg.group_rank(src)
    _check_same(pg, t.shape, t.dtype, "broadcast")
    st = _Staged(t, reducing=False, load=pg.rank() == root)
    req = pg.comm.Ibcast(st.buf, root=root)
    return _run(req, st.store, pg, "broadcast", async_op, [t])


def reduce(tensor, dst, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce into `tensor` of global rank `dst`; other ranks' tensors are unchanged."""
    pg = resolve(group)
    t = _tensor(tensor, "reduce")
    root = pg.group_rank(dst)
    _check_same(pg, t.shape, t.dtype, "reduce")
    st = _Staged(t, reducing=True)
    mop = _be.mpi_op(op, st.buf.dtype)
    MPI = _be.mpi()
    if pg.rank() == root:
        req = pg.comm.Ireduce(MPI.IN_PLACE, st.buf, mop, root=root)
        scale = pg.size() if op is ReduceOp.AVG else None
        finish = lambda: st.store(scale)  # noqa: E731
    else:
        req = pg.comm.Ireduce(st.buf, None, mop, root=root)
        finish = None
    return _run(req, finish, pg, "reduce", async_op, [t])


def _gathered(pg, t: Tensor, what: str):
    """A staging buffer of shape (group size, *t.shape) and the staged input."""
    st = _Staged(t, reducing=False)
    return st, np.empty((pg.size(),) + tuple(t.shape), st.buf.dtype)


def _write(out: Tensor, buf: np.ndarray) -> None:
    arr = out._data
    if buf.dtype != arr.dtype:
        buf = buf.view(arr.dtype) if buf.dtype.itemsize == arr.dtype.itemsize and \
            arr.dtype.kind != "b" else buf.astype(arr.dtype)
    arr[...] = buf.reshape(arr.shape)
    bump_version(out)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """`tensor_list[r]` receives rank r's `tensor` (a list of group-size tensors of its shape
    and dtype)."""
    pg = resolve(group)
    t = _tensor(tensor, "all_gather")
    if len(tensor_list) != pg.size():
        raise ValueError(f"all_gather: tensor_list has {len(tensor_list)} tensors, the group "
                         f"has {pg.size()} ranks")
    for o in tensor_list:
        _tensor(o, "all_gather")
        if tuple(o.shape) != tuple(t.shape) or o.dtype is not t.dtype:
            raise RuntimeError("all_gather: every output tensor must have the input's shape "
                               f"{list(t.shape)} and dtype {t.dtype}")
    _check_same(pg, t.shape, t.dtype, "all_gather")
    st, recv = _gathered(pg, t, "all_gather")
    req = pg.comm.Iallgather(st.buf, recv)

    def finish():
        for r, o in enumerate(tensor_list):
            _write(o, recv[r])
    return _run(req, finish, pg, "all_gather", async_op, list(tensor_list))


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
    """Ranks' inputs concatenated along dim 0 (output of shape (size*n, ...)) or stacked
    (output of shape (size, n, ...)) into `output_tensor`."""
    pg = resolve(group)
    t = _tensor(input_tensor, "all_gather_into_tensor")
    out = _tensor(output_tensor, "all_gather_into_tensor")
    if out.numel() != t.numel() * pg.size() or out.dtype is not t.dtype:
        raise RuntimeError(
            f"all_gather_into_tensor: output of shape {list(out.shape)} ({out.dtype}) must hold "
            f"{pg.size()} inputs of shape {list(t.shape)} ({t.dtype})")
    _check_same(pg, t.shape, t.dtype, "all_gather_into_tensor")
    st, recv = _gathered(pg, t, "all_gather_into_tensor")
    req = pg.comm.Iallgather(st.buf, recv)
    return _run(req, lambda: _write(out, recv), pg, "all_gather_into_tensor", async_op, [out])


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op=False):
    """Reduce `input` (size*n rows, or (size, n, ...)) across ranks and give rank r block r."""
    pg = resolve(group)
    t = _tensor(input, "reduce_scatter_tensor")
    out = _tensor(output, "reduce_scatter_tensor")
    if t.numel() != out.numel() * pg.size() or out.dtype is not t.dtype:
        raise RuntimeError(
            f"reduce_scatter_tensor: input of shape {list(t.shape)} must hold {pg.size()} "
            f"blocks of the output's shape {list(out.shape)} and dtype {out.dtype}")
    _check_same(pg, t.shape, t.dtype, "reduce_scatter_tensor")
    st = _Staged(t, reducing=True)
    recv = np.empty(out.shape, st.buf.dtype)
    mop = _be.mpi_op(op, st.buf.dtype)
    req = pg.comm.Ireduce_scatter_block(st.buf, recv, mop)

    def finish():
        if op is ReduceOp.AVG:
            np.divide(recv, pg.size(), out=recv, casting="unsafe")
        _write(out, recv)
    return _run(req, finish, pg, "reduce_scatter_tensor", async_op, [out])


def reduce_scatter(output, input_list, op=ReduceOp.SUM, group=None, async_op=False):
    """Rank r receives the reduction over ranks of `input_list[r]`."""
    pg = resolve(group)
    if len(input_list) != pg.size():
        raise ValueError(f"reduce_scatter: input_list has {len(input_list)} tensors, the "
                         f"group has {pg.size()} ranks")
    flat = FUNCTIONS["stack"]([_tensor(x, "reduce_scatter").detach() for x in input_list])
    return reduce_scatter_tensor(output, flat, op, group, async_op)


def gather(tensor, gather_list=None, dst=0, group=None, async_op=False):
    """Rank `dst` receives every rank's `tensor` in `gather_list`; others pass None."""
    pg = resolve(group)
    t = _tensor(tensor, "gather")
    root = pg.group_rank(dst)
    is_root = pg.rank() == root
    if is_root and (gather_list is None or len(gather_list) != pg.size()):
        raise ValueError("gather: the destination rank needs a gather_list of one tensor per "
                         "rank")
    if not is_root and gather_list:
        raise ValueError("gather: gather_list must be None on non-destination ranks")
    _check_same(pg, t.shape, t.dtype, "gather")
    st = _Staged(t, reducing=False)
    recv = np.empty((pg.size(),) + tuple(t.shape), st.buf.dtype) if is_root else None
    req = pg.comm.Igather(st.buf, recv, root=root)

    def finish():
        if is_root:
            for r, o in enumerate(gather_list):
                _write(o, recv[r])
    return _run(req, finish, pg, "gather", async_op, list(gather_list or []))


def scatter(tensor, scatter_list=None, src=0, group=None, async_op=False):
    """Rank r receives `scatter_list[r]` of rank `src` into `tensor`."""
    pg = resolve(group)
    t = _tensor(tensor, "scatter")
    root = pg.group_rank(src)
    is_root = pg.rank() == root
    if is_root and (scatter_list is None or len(scatter_list) != pg.size()):
        raise ValueError("scatter: the source rank needs a scatter_list of one tensor per rank")
    _check_same(pg, t.shape, t.dtype, "scatter")
    st = _Staged(t, reducing=False, load=False)
    send = None
    if is_root:
        send = np.ascontiguousarray(np.stack([_Staged(x, reducing=False).buf
                                              for x in scatter_list]))
    req = pg.comm.Iscatter(send, st.buf, root=root)
    return _run(req, st.store, pg, "scatter", async_op, [t])


def all_to_all_single(output, input, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    """Split `input` along dim 0 (equal parts, or `input_split_sizes` rows), send part r to
    rank r, and concatenate what arrives (in rank order) into `output`."""
    pg = resolve(group)
    t, out = _tensor(input, "all_to_all_single"), _tensor(output, "all_to_all_single")
    n = pg.size()
    row = int(np.prod(t.shape[1:])) if t.dim() > 0 else 1
    isz = [t.shape[0] // n] * n if input_split_sizes is None else list(input_split_sizes)
    osz = [out.shape[0] // n] * n if output_split_sizes is None else list(output_split_sizes)
    if sum(isz) != t.shape[0] or sum(osz) != out.shape[0]:
        raise RuntimeError("all_to_all_single: split sizes must add up to the tensors' first "
                           "dimensions")
    st = _Staged(t, reducing=False)
    recv = np.empty(out.shape, st.buf.dtype)
    counts_s = [s * row for s in isz]
    counts_r = [s * row for s in osz]
    disp = lambda c: [sum(c[:i]) for i in range(len(c))]  # noqa: E731
    req = pg.comm.Ialltoallv([st.buf, (counts_s, disp(counts_s))],
                             [recv, (counts_r, disp(counts_r))])
    return _run(req, lambda: _write(out, recv), pg, "all_to_all_single", async_op, [out])


def all_to_all(output_tensor_list, input_tensor_list, group=None, async_op=False):
    """Rank r's `input_tensor_list[s]` arrives in rank s's `output_tensor_list[r]`."""
    pg = resolve(group)
    flat_in = FUNCTIONS["cat"]([x.detach().reshape(-1) for x in input_tensor_list])
    flat_out = FUNCTIONS["cat"]([x.detach().reshape(-1) for x in output_tensor_list]).clone()
    sizes_in = [x.numel() for x in input_tensor_list]
    sizes_out = [x.numel() for x in output_tensor_list]
    w = all_to_all_single(flat_out, flat_in, sizes_out, sizes_in, group, async_op=True)

    def finish():
        w.wait()
        off = 0
        for o, k in zip(output_tensor_list, sizes_out):
            _write(o, flat_out._data[off:off + k])
            off += k
    work = Work([], finish, _deadline(pg), "all_to_all", list(output_tensor_list))
    if async_op:
        return work
    work.wait()
    return None


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the group reached the barrier."""
    pg = resolve(group)
    return _run(pg.comm.Ibarrier(), None, pg, "barrier", async_op)


def isend(tensor, dst, group=None, tag=0):
    """Start sending `tensor` to global rank `dst`; returns a Work."""
    pg = resolve(group)
    st = _Staged(_tensor(tensor, "isend"), reducing=False)
    req = pg.comm.Isend(st.buf, dest=pg.group_rank(dst), tag=tag)
    return Work(req, None, _deadline(pg), "send")


def irecv(tensor, src=None, group=None, tag=0):
    """Start receiving into `tensor` from global rank `src` (any rank when None); returns a
    Work (`wait()`; the sender's rank is then known)."""
    pg = resolve(group)
    MPI = _be.mpi()
    st = _Staged(_tensor(tensor, "irecv"), reducing=False, load=False)
    statuses = [MPI.Status()]
    source = MPI.ANY_SOURCE if src is None else pg.group_rank(src)
    req = pg.comm.Irecv(st.buf, source=source, tag=tag)

    def finish():
        st.store()
        return pg.ranks[statuses[0].Get_source()]
    return Work(req, finish, _deadline(pg), "recv", [tensor], statuses)


def send(tensor, dst, group=None, tag=0) -> None:
    isend(tensor, dst, group, tag).wait()


def recv(tensor, src=None, group=None, tag=0) -> int:
    """Receive into `tensor`; returns the sender's global rank."""
    w = irecv(tensor, src, group, tag)
    w.wait()
    return w.source_rank
