"""Tensor subscripts during capture: `x[key]` and `x[key] = v` become registry-op graph nodes.

The key is split by eager's own `parse_key` and turned into ops by eager's own `index_ops` /
`put_ops` (`eager/indexing.py`), run against a namespace that records graph nodes instead of
running kernels, so eager and compiled subscripts are one definition: ints, slices (any step,
negative bounds), None and Ellipsis make the `getitem` view; int tensors and lists of ints
(a list becomes an `_index_const` node) make the `index` gather (backward: an accumulating
`_index_put`). A bool mask (tensor, list or 0-d) has a data-dependent output shape: one named
graph break, as TorchDynamo without `capture_dynamic_output_shape_ops`.

`x[key] = v` on a tensor the graph computed (nothing aliases it) is the functional
`_index_put` with the tracker rebound to its result (`calls.inplace`), also when it has views
in the graph that nothing can reach any more (`y[1:] = y[:-1]`: the value view is consumed by
the store). On a graph input, a view, or a tensor with views still referenced (or any views,
inside an inlined call, whose callers capture cannot see) it is a graph break: the store runs
eagerly, with eager's aliasing and version counters (a graph input is `calls.inplace`'s
rule: a store written back into the caller's tensor after the graph, `writeback.py`).
Touches `eager.indexing`, `capture`.
"""

from __future__ import annotations

import inspect

import numpy as np

from eager.indexing import index_ops, parse_key, put_ops
from ir import OpNamespace
from ir import dtypes as D
from ir.opdef import is_number

from . import calls, symints
from .variables import (
    ConstantVariable,
    ListVariable,
    SequenceVariable,
    TensorVariable,
    TupleVariable,
    VariableTracker,
)

MASK = "boolean mask indexing has a data-dependent output shape"
_OPERANDS = {"STORE_SUBSCR": 3, "STORE_SLICE": 4}  # stack slots the store is consuming


def _namespace(tx) -> OpNamespace:
    return OpNamespace(lambda op, inputs, attrs: calls.record(tx, op, inputs, attrs))


def _entry(tx, v, marks=None):
    """One key entry as parse_key takes it: a Python constant, a tracker, or a list of ints
    (`marks`: collects `symints.int_mark`s for dynamic int indices)."""
    if isinstance(v, TensorVariable):
        return v
    mark = symints.int_mark(tx, v) if marks is not None else None
    if mark is not None:
        marks.append(mark)
        return mark
    if getattr(v, "symbolic", False):  # `pos:pos + T` of a dynamic int (`symints`)
        return v.sym
    if isinstance(v, ConstantVariable):
        return v.value
    if isinstance(v, SequenceVariable) and all(
            isinstance(x, ConstantVariable) or (isinstance(x, SequenceVariable))
            for x in v.items):
        return calls.as_constant(tx, v) if isinstance(v, ListVariable) else \
            list(calls.as_constant(tx, v))
    raise tx.unsupported(f"tensor index of {v.describe()}")


def _key(tx, index: VariableTracker, marks=None):
    """The Python key of `x[index]`: a tuple's entries one by one, any other key as one entry."""
    if isinstance(index, TupleVariable):
        return tuple(_entry(tx, v, marks) for v in index.items)
    if getattr(index, "symbolic", False):
        return index.sym
    if isinstance(index, ConstantVariable) and not getattr(index, "unfolded", False) and \
            type(index.value) is tuple:
        return index.value
    return _entry(tx, index, marks)


def _as_index(tx, obj):
    """parse_key's `as_index`: int tensors as they are, lists of ints as `_index_const`."""
    def as_index(k):
        if isinstance(k, TensorVariable):
            if k.dtype in (D.bool_, D.uint8):
                raise tx.unsupported(MASK)
            if k.dtype.category > D.INTEGER:
                raise IndexError("tensors used as indices must be long, int, byte or bool "
                                 "tensors")
            return k
        if any(isinstance(e, (TensorVariable, VariableTracker)) for e in np.ravel(
                np.asarray(k, dtype=object))):
            raise tx.unsupported("tensor index: a list holding tensors")
        a = np.asarray(k)
        if a.dtype == np.bool_:
            raise tx.unsupported(MASK)
        if a.dtype.kind not in "iu" and a.size:
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return calls.record(tx, _op("_index_const"), (obj,), {"values": a.tolist()})
    return as_index


def _op(name):
    from ir import REGISTRY

    return REGISTRY[name]


def _split(tx, obj: TensorVariable, index: VariableTracker, squeeze=None):
    """parse_key's split of `index`; `squeeze` (a list): dynamic int indices `x[pos]` are
    taken as `pos:pos + 1` slices, their output dims appended to it (`symints`)."""
    marks = [] if squeeze is not None else None
    key = _key(tx, index, marks)
    if isinstance(key, TensorVariable) and key.dtype is D.bool_:
        raise tx.unsupported(MASK)
    split = parse_key(obj, key, _namespace(tx), _as_index(tx, obj), TensorVariable)
    if marks:
        if split[1]:  # (with advanced indices the dims move: read as a value)
            raise symints.Specialize({(r, "num") for m in marks for r in m.start.roots})
        basic, dims = symints.int_indices(tx, obj, split[0], marks)
        squeeze.extend(dims)
        split = (basic,) + tuple(split[1:])
    symints.guard_basic(tx, obj, split[0])  # `pos:pos + T` of a dynamic int: its regime
    return split


def getitem(tx, obj: TensorVariable, index: VariableTracker) -> TensorVariable:
    """The tracker of `obj[index]` (graph nodes: a `getitem` view, then an `index` gather)."""
    squeeze: list = []
    out = index_ops(_namespace(tx), obj, *_split(tx, obj, index, squeeze))
    return _namespace(tx).squeeze(out, tuple(squeeze)) if squeeze else out


def index_put_rule(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """`x.index_put_(indices, values, accumulate=False)` (a store as `x[indices] = values`,
    summing repeated indices with `accumulate=True`) and the out-of-place `x.index_put(...)` /
    `torch.index_put(...)` (a new tensor): the same `put_ops` as eager's."""
    from eager.indexing import index_put_

    bound = inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    obj, indices, values = (bound.arguments[k] for k in ("self", "indices", "values"))
    acc = bound.arguments["accumulate"]
    acc = acc.value if isinstance(acc, VariableTracker) and acc.is_constant() else acc
    if not isinstance(obj, TensorVariable) or not isinstance(acc, bool) or \
            not isinstance(indices, (TupleVariable, ListVariable)):
        raise tx.unsupported(f"{fn.__name__} with arguments capture does not model")
    key = TupleVariable(list(indices.items))
    if fn is index_put_:
        setitem(tx, obj, key, values, accumulate=acc)
        return obj
    val = values.value if values.is_constant() else values
    F = _namespace(tx)
    if isinstance(val, TensorVariable) and val.dtype is not obj.dtype:
        val = F.cast(val, obj.dtype)
    return put_ops(F, obj, *_split(tx, obj, key), val, acc)


def setitem(tx, obj: TensorVariable, index: VariableTracker, value: VariableTracker,
            accumulate: bool = False) -> None:
    """`obj[index] = value` on a fresh graph tensor: the functional `_index_put`, rebinding
    (`accumulate`: `index_put_(..., accumulate=True)`)."""
    if isinstance(value, ConstantVariable) and is_number(value.value):
        v = value.value
    elif isinstance(value, TensorVariable):
        v = value
    else:
        raise tx.unsupported(f"tensor item assignment of {value.describe()}")

    node = obj.node
    views = _views_of(node)
    aliased = node.op == "call_function" and node.target.kind == "view" or views and (
        views & _reachable_nodes(tx, _OPERANDS.get(tx.inst.opname, 0)))
    mask = None if accumulate else _mask_key(obj, index, v)

    def compute():
        if mask is not None:  # x[mask] = scalar: masked_fill, as torch's index_put_ of a mask
            F = _namespace(tx)
            m = mask
            if m.ndim < obj.ndim:
                m = F.reshape(m, tuple(m.shape) + (1,) * (obj.ndim - m.ndim))
            out = F.masked_fill(obj, m, v)
            return out if out.dtype is obj.dtype else F.cast(out, obj.dtype)
        squeeze: list = []
        split = _split(tx, obj, index, squeeze)
        F = _namespace(tx)
        val = v
        if isinstance(val, TensorVariable) and val.dtype is not obj.dtype:
            val = F.cast(val, obj.dtype)
        if squeeze and isinstance(val, TensorVariable):  # `cache[:, pos] = k`: k's dims
            val = symints.unsqueezed(F, val, split[0], squeeze)
        return put_ops(F, obj, *split, val, accumulate)

    if aliased:  # the views see the store (`viewwrites`: functionalized, else a break)
        from .viewwrites import inplace_view  # lazy: viewwrites imports calls

        if inplace_view(tx, obj, compute) is None:
            raise tx.unsupported("item assignment to a view, or to a tensor whose views are "
                                 "still referenced (mutation the views must see)")
        return
    if not views or node.op != "call_function":
        calls.inplace(tx, obj, compute)  # graph inputs: its rule (a write-back)
        return
    result = compute()  # the views are dead: the functional store is eager's
    tx.out.side_effects.rebind(obj, result, obj.requires_grad or result.requires_grad)


def _mask_key(obj: TensorVariable, index, v):
    """The bool mask of `obj[mask] = v` when it is the whole key, covers obj's leading dims
    and `v` is a number or a 0-d tensor (a fill: no data-dependent shape), else None."""
    if not (isinstance(index, TensorVariable) and index.dtype is D.bool_):
        return None
    if isinstance(v, TensorVariable) and v.meta.shape:
        return None
    if tuple(index.shape) != tuple(obj.shape[:index.ndim]):
        return None
    return index


def _views_of(node) -> set:
    """The graph nodes that view `node`'s memory in eager (view users, transitively)."""
    found, todo = set(), [node]
    while todo:
        for u in todo.pop().users:
            if u.op == "call_function" and u.target.kind == "view" and u not in found:
                found.add(u)
                todo.append(u)
    return found


def _reachable_nodes(tx, operands: int) -> set:
    """The nodes of every tensor tracker the top frame `tx` can still reach: its stack (less
    the `operands` an instruction is consuming), locals, cells, loop snapshots and the capture
    state (graph inputs, side-effect logs), through containers and trackers' attributes.
    An inlined frame reaches its callers' frames through `parent` (set by `calls.inline`)."""
    nodes, seen = set(), {id(tx.stack)}

    def walk(v):
        if id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, TensorVariable):
            nodes.add(v.node)
        elif isinstance(v, (list, tuple, set, frozenset)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif type(v).__module__.startswith("capture.") and hasattr(v, "__dict__"):
            for x in vars(v).values():
                walk(x)

    walk(tx.stack[:len(tx.stack) - operands])
    walk(tx)
    return nodes
