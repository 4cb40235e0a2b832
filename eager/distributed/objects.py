"""Python objects across ranks, as `torch.distributed`'s `*_object*` functions: pickled to bytes
on the sender, moved as uint8 buffers with their lengths (nonblocking MPI, so the group's
timeout applies), unpickled on the receiver. Only for objects you trust (pickle)."""

from __future__ import annotations

import pickle

import numpy as np

from . import backend as _be
from .collectives import _deadline
from .process_group import resolve

__all__ = ["all_gather_object", "broadcast_object_list", "gather_object",
           "scatter_object_list"]


def _bytes(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def _bcast(pg, buf, root, what):
    _be.wait(pg.comm.Ibcast(buf, root=root), _deadline(pg), what)


def broadcast_object_list(object_list, src=0, group=None, device=None) -> None:
    """Replace `object_list`'s items on every rank by those of global rank `src` (in place;
    every rank passes a list of the same length)."""
    pg = resolve(group)
    root = pg.group_rank(src)
    me = pg.rank() == root
    payload = _bytes(list(object_list)) if me else None
    n = np.array([payload.size if me else 0], np.int64)
    _bcast(pg, n, root, "broadcast_object_list")
    buf = payload.copy() if me else np.empty(int(n[0]), np.uint8)
    _bcast(pg, buf, root, "broadcast_object_list")
    if not me:
        got = pickle.loads(buf.tobytes())
        if len(got) != len(object_list):
            raise RuntimeError(f"broadcast_object_list: rank {src} sent {len(got)} objects, "
                               f"this rank's list has {len(object_list)}")
        object_list[:] = got


def _allgather_bytes(pg, payload, what) -> list:
    n = np.array([payload.size], np.int64)
    sizes = np.empty(pg.size(), np.int64)
    _be.wait(pg.comm.Iallgather(n, sizes), _deadline(pg), what)
    recv = np.empty(int(sizes.sum()), np.uint8)
    displs = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    req = pg.comm.Iallgatherv(payload, [recv, (sizes, displs)])
    _be.wait(req, _deadline(pg), what)
    return [pickle.loads(recv[d:d + s].tobytes()) for d, s in zip(displs, sizes)]


def all_gather_object(object_list, obj, group=None) -> None:
    """`object_list[r]` becomes rank r's `obj` on every rank (`object_list` has group-size
    items)."""
    pg = resolve(group)
    if len(object_list) != pg.size():
        raise ValueError(f"all_gather_object: object_list has {len(object_list)} items, the "
                         f"group has {pg.size()} ranks")
    object_list[:] = _allgather_bytes(pg, _bytes(obj), "all_gather_object")


def gather_object(obj, object_gather_list=None, dst=0, group=None) -> None:
    """Rank `dst`'s `object_gather_list[r]` becomes rank r's `obj`."""
    pg = resolve(group)
    got = _allgather_bytes(pg, _bytes(obj), "gather_object")
    if pg.rank() == pg.group_rank(dst):
        if object_gather_list is None or len(object_gather_list) != pg.size():
            raise ValueError("gather_object: the destination needs a list of one slot per rank")
        object_gather_list[:] = got


def scatter_object_list(scatter_object_output_list, scatter_object_input_list=None, src=0,
                        group=None) -> None:
    """`scatter_object_output_list[0]` becomes item r of rank `src`'s input list on rank r."""
    pg = resolve(group)
    root = pg.group_rank(src)
    box = [list(scatter_object_input_list) if pg.rank() == root else None]
    broadcast_object_list(box, src, group)
    if len(box[0]) != pg.size():
        raise ValueError("scatter_object_list: the input list needs one object per rank")
    scatter_object_output_list[0] = box[0][pg.rank()]
