"""Recording a node from the eager fast paths, with the graph's structure id.

`eager/dispatch.py`'s fast paths (elementwise functions and dunders on CPU tensors, no-argument
reductions) call `record` instead of `BackwardNode(...)`: the same node, built without the
general constructor's loop, plus a structure id.

A structure id names what the graph under a node looks like, unfolded as a tree: each node's
op and attributes (one table per fast path and dtype key holds both), its operands' shapes
(dtypes are the table's) or Python numbers, and per operand whether the edge goes to a leaf
(`LEAF`), to no node (-1) or to a node with an id (that id). Equal ids mean equal trees, so a
training loop's step gets the id of the previous step, and `programs` finds the backward
program by the root's id without walking the graph; the program's guards check what a tree
does not say (which positions are the same node). Operands with hooks, views whose base was
written since, leaf views and nodes without an id give no id (the walk handles those graphs).

Each node also keeps `_clock`: the lowest `tensor.MUTATIONS` count at which a node of its
graph was recorded. The graph is as recorded (versions, hooks, saved tensors) while that is
the current count.

Touches the slots of the nodes it builds, and reads operands' autograd slots.
"""

from __future__ import annotations

import itertools
import weakref

from ..caches import remember
from ..tensor import MUTATIONS, Tensor
from .nodes import (
    _CHECKS,
    _CLASSES,
    NO_EDGE,
    BackwardNode,
    edge_of,
    grad_accumulator,
    node_class,
)

LEAF = 0
MAX_IDS = 1024  # keys per table; a full table drops its oldest (a Python number changing every
_ids = itertools.count(1)  # call makes new keys; the ids it gave stay valid, never reused)
_new = object.__new__


class IdTable(dict):
    """One table of structure ids (operand key -> id), for one op, attributes and dtypes."""

    __slots__ = ("__weakref__",)
    __eq__ = object.__eq__  # (a table is itself, not its contents: TABLES holds each one)
    __hash__ = object.__hash__


TABLES: weakref.WeakSet = weakref.WeakSet()  # every live table (for tests and inspection)


def new_table() -> IdTable:
    t = IdTable()
    TABLES.add(t)
    return t


def _link(x: Tensor):
    """(edge, structure part, clock) of tensor operand `x` (see the module docstring; the
    clock is the child node's, or None)."""
    if not x.requires_grad:
        return NO_EDGE, -1, None
    fn = x.grad_fn
    if fn is not None:  # (a view whose base was written since has its history regenerated)
        if x._backward_hooks is None and (x._base is None or fn.out_version == x._vc[0]):
            return (fn, 0), fn.struct_id, fn._clock
    elif x._base is None:
        acc = grad_accumulator(x)
        m = x._backward_hooks
        if acc._hk is None and not m.hooks and not m.post_acc:
            return (acc, 0), LEAF, None
        return (acc, 0), None, None
    return edge_of(x), None, None


def record(op, x, y, attrs: dict, out: Tensor, table: dict) -> BackwardNode:
    """`BackwardNode(op, (x, y), attrs, out)` for one or two operands (`y` is `record.ONE` for
    an op of one operand), each a CPU tensor or a Python number, `out` a new tensor. `attrs`
    is kept as is (nodes never change theirs). `table` maps operand keys to structure ids for
    this op, attributes, operand dtypes and Python number types (the caller keeps one table
    per such combination). (`_link` and `_close` written out: one call per op, not four.)"""
    n = _new(BackwardNode)
    n.op = op
    n.attrs = attrs
    clock = MUTATIONS[0]
    if isinstance(x, Tensor):
        vx = x._vc[0]
        kx = x._data.shape
        if x.requires_grad:
            fn = x.grad_fn  # (_link's common case in line: a node's output, no hooks)
            if fn is not None and x._backward_hooks is None and x._base is None:
                ex, px, cx = (fn, 0), fn.struct_id, fn._clock
            else:
                ex, px, cx = _link(x)
            if cx is not None and cx < clock:
                clock = cx
        else:
            ex, px = NO_EDGE, -1
    else:
        vx, ex, px, kx = None, NO_EDGE, -1, x
    if y is ONE:
        n.saved = (x,)
        n.versions = [vx]
        n.next_functions = (ex,)
        key = (kx, px) if px is not None else None
    else:
        n.saved = (x, y)
        if isinstance(y, Tensor):
            vy = y._vc[0]
            ky = y._data.shape
            if y.requires_grad:
                fn = y.grad_fn
                if fn is not None and y._backward_hooks is None and y._base is None:
                    ey, py, cy = (fn, 0), fn.struct_id, fn._clock
                else:
                    ey, py, cy = _link(y)
                if cy is not None and cy < clock:
                    clock = cy
            else:
                ey, py = NO_EDGE, -1
        else:
            vy, ey, py, ky = None, NO_EDGE, -1, y
        n.versions = [vx, vy]
        n.next_functions = (ex, ey)
        key = (kx, px, ky, py) if px is not None and py is not None else None
    n.out_data = out._data  # (as _close)
    n.out_vc = vc = out._vc
    n.out_version = vc[0]
    n._hk = n._old = n._freed = n._pkey = None
    sid = None
    if key is not None:
        sid = table.get(key)
        if sid is None:
            sid = remember(table, key, next(_ids), MAX_IDS)
    n.struct_id = sid
    n._clock = clock
    n.__class__ = _CLASSES.get(op.name) or node_class(op)  # (set last: see _close)
    if _CHECKS:
        for fn in _CHECKS:
            fn(n, n.saved)
    return n


def record_many(op, inputs: tuple, attrs: dict, out: Tensor, table: dict) -> BackwardNode:
    """`record` for any number of operands (`where(cond, x, y)`, `addcmul`, ...)."""
    n = _new(BackwardNode)
    n.op = op
    n.attrs = attrs
    n.saved = inputs
    clock = MUTATIONS[0]
    versions, edges, key = [], [], []
    keyed = True
    for x in inputs:
        if isinstance(x, Tensor):
            versions.append(x._vc[0])
            if not x.requires_grad:
                e, p = NO_EDGE, -1
            else:
                fn = x.grad_fn  # (_link's common case in line, as in `record`)
                if fn is not None and x._backward_hooks is None and x._base is None:
                    e, p, c = (fn, 0), fn.struct_id, fn._clock
                else:
                    e, p, c = _link(x)
                if c is not None and c < clock:
                    clock = c
                if p is None:
                    keyed = False
            key.append(x._data.shape)
            key.append(p)
        else:
            versions.append(None)
            e = NO_EDGE
            key.append(x)
            key.append(-1)
        edges.append(e)
    n.versions = versions
    n.next_functions = tuple(edges)
    return _close(n, out, tuple(key) if keyed else None, clock, table)


def _close(n: BackwardNode, out: Tensor, key, clock: int, table: dict) -> BackwardNode:
    """The rest of a node (`record`): its output, its structure id (None without a `key`)."""
    n.out_data = out._data
    n.out_vc = vc = out._vc
    n.out_version = vc[0]
    n._hk = n._old = n._freed = n._pkey = None
    sid = None
    if key is not None:
        sid = table.get(key)
        if sid is None:
            sid = remember(table, key, next(_ids), MAX_IDS)
    n.struct_id = sid
    n._clock = clock
    n.__class__ = node_class(n.op)  # (set last: the stores above see one class, stay fast)
    if _CHECKS:
        for fn in _CHECKS:
            fn(n, n.saved)
    return n


ONE = object()  # `record`'s y for an op of one operand
