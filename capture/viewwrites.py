"""In-place ops on a view family of a tensor the graph computed (AOT functionalization's view
replay): `h = x.clone(); h[:, 0].mul_(2); return h + y`, `v = b.view(-1); v.add_(1); b.sum()`.

Eagerly the write goes through shared memory: the base and every other view of it see it. Here
the written view's new value is scattered back up its chain of views into the family's root
(a `getitem` view by the functional `_index_put`, a bijective view -- view, reshape, transpose,
permute, squeeze, unsqueeze -- by its adjoint, which is its inverse), and every tracker that
the frame can still reach whose value is the root or a view of it is rebound: the root to the
new root, a view to its own chain of views replayed on the new root. Values and gradients are
eager's (the scatter's backward routes the gradient to the written value and to the untouched
part of the root). The root must be an intermediate or a tensor the code makes fresh on each
call (a graph input is `writeback.py`'s rule); a `diagonal` view is scattered back by a
`where` over its adjoint; a chain through any other view (expand,
unfold, as_strided, real/imag: overlapping or complex memory) is left to the caller,
which breaks. Touches `capture` only.
"""

from __future__ import annotations

import numpy as np

from ir import OpNamespace

from . import eager_rules
from .variables import TensorVariable

_BIJECTIVE = frozenset({"view", "reshape", "transpose", "permute", "squeeze", "unsqueeze"})
_INJECTIVE = frozenset({"getitem", "diagonal"})  # distinct elements of the parent


def _is_view(n) -> bool:
    return n.op == "call_function" and n.target.kind == "view"


def _chain(node):
    """(root, [views from the root down to `node`]); a `reshape` that copies (eagerly: its
    input's strides allow no view, `x[:, 1:].flatten()`) is the root of what follows it."""
    chain = []
    while _is_view(node):
        base = node.args[0] if node.args else None
        if not hasattr(base, "users"):
            return None, []
        chain.append(node)
        node = base
    chain.reverse()
    cut = _copying_reshape(node, chain)
    if cut is not None:
        return chain[cut], chain[cut + 1:]
    return node, chain


def _copying_reshape(root, chain):
    """The index in `chain` of the last reshape that copies, replayed with numpy's strides on a
    C-contiguous array of the root's shape (eager's fresh results), or None."""
    from ir import REGISTRY

    if not any(v.target.name == "reshape" for v in chain):
        return None
    val = getattr(root, "meta", {}).get("val")
    shape = getattr(val, "shape", None)
    if shape is None:
        return None
    base = arr = np.empty(tuple(shape), np.int8)
    cut = None
    for i, v in enumerate(chain):
        try:
            arr = REGISTRY[v.target.name].impl(np, arr, **dict(v.kwargs))
        except Exception:  # noqa: BLE001  (a view this replay cannot make: no cut known)
            return cut
        if not np.shares_memory(arr, base):
            cut, base = i, arr
    return cut


def _family(root) -> set:
    found, todo = {root}, [root]
    while todo:
        for u in todo.pop().users:
            if _is_view(u) and u not in found:
                found.add(u)
                todo.append(u)
    return found


def _trackers(tx, nodes: set) -> list:
    """Every tensor tracker the frame `tx` (and its callers, through `parent`) can reach whose
    node is in `nodes`: stack, locals, cells, containers, trackers' attributes, capture state
    (the walk of `subscripts._reachable_nodes`)."""
    found, seen = [], set()

    def walk(v):
        if id(v) in seen:
            return
        seen.add(id(v))
        if isinstance(v, TensorVariable):
            if v.node in nodes:
                found.append(v)
        elif isinstance(v, (list, tuple, set, frozenset)):
            for x in v:
                walk(x)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif type(v).__module__.startswith("capture.") and hasattr(v, "__dict__"):
            for x in vars(v).values():
                walk(x)

    walk(tx.stack)
    walk(tx)
    return found


def _fresh_root(tx, root, trackers) -> bool:
    if root.op == "call_function":
        return True
    return root.op == "placeholder" and any(
        t.node is root and eager_rules.made_by_the_code(tx, t) for t in trackers)


def _input_root(tx, root, trackers):
    """The tracker of graph input `root` (a placeholder the graph reads for its source), or
    None."""
    out = tx.out
    for t in trackers:
        if t.node is root and t.source in out.input_sources and out.by_source.get(t.source) is t:
            return t
    return None


def inplace_view(tx, target: TensorVariable, compute):
    """`compute()` (the in-place op's functional result) written into `target`, a view of a
    fresh tensor or a fresh tensor with views: the family rebound as eagerly (module doc).
    Returns `target`, or None when the family is not one this models (the caller breaks)."""
    root, chain = _chain(target.node)
    if root is None or any(v.target.name not in _BIJECTIVE and v.target.name not in _INJECTIVE
                           for v in chain):
        return None
    trackers = _trackers(tx, _family(root))
    if target not in trackers:
        trackers.append(target)
    base = None if _fresh_root(tx, root, trackers) else _input_root(tx, root, trackers)
    if base is None and not _fresh_root(tx, root, trackers):
        return None
    root_var = _tracker_of(root, trackers, any(t.requires_grad for t in trackers))
    detached = any(v.meta.get("detached") for v in chain)
    if any(not v.meta.get("grad_enabled", True) and not v.meta.get("detached")
           for v in chain) and root_var.requires_grad:
        return None  # a no_grad view of a tensor that requires grad (torch raises)
    # eager's autograd sees the write only through a grad-mode chain, under grad mode
    tracked = tx.out.grad_enabled and not detached
    if base is not None and not tracked and root_var.requires_grad:
        return None
    if any(t.shadow is not None for t in trackers):  # dynamic sizes: the attributes below
        return None  # are for these sizes (a break, so the entry stays dynamic)
    result = compute()
    if result.meta.shape != target.meta.shape or result.meta.dtype is not target.meta.dtype:
        raise tx.unsupported("in-place op whose result changes its target's shape or dtype")
    new = _scatter_up(tx, chain, trackers, result, tracked, target.requires_grad)
    if not tracked and root_var.requires_grad:
        from .writeback import _straight_through  # the value written, identity gradient

        new = _straight_through(tx, new, root_var)
    if base is not None:  # a graph input: written back after the graph
        from .writeback import inplace_input

        inplace_input(tx, base, lambda: new, views_ok=True)
        trackers = [t for t in trackers if t is not base]
        new = base
    _rebind_family(tx, root, new, trackers)
    return target


def _scatter_up(tx, chain, trackers, result, tracked: bool, rg: bool):
    """The family root's new value: `result` scattered up `chain` (under no_grad when eager's
    autograd does not see the write)."""
    from .recording import record

    F = OpNamespace(lambda o, i, a: record(tx, o, i, a))
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = prev and tracked
    try:
        new = result
        for view in reversed(chain):
            new = _scatter(F, _tracker_of(view.args[0], trackers, rg), view, new)
    finally:
        tx.out.grad_enabled = prev
    return new


def _rebind_family(tx, root, new, trackers) -> None:
    """Every tracker of the family rebound: the root to `new`, a view to its chain of views
    replayed on `new` under the grad mode it was made in (a `detach()` stays detached)."""
    from .recording import record

    done = {root: new}
    out = tx.out

    def replay(node):
        if node not in done:
            parent = replay(node.args[0])
            detached = bool(node.meta.get("detached"))
            prev = out.grad_enabled
            out.grad_enabled = node.meta.get("grad_enabled", True) and not detached
            try:
                v = record(tx, node.target, (parent,) + tuple(node.args[1:]), dict(node.kwargs))
            finally:
                out.grad_enabled = prev
            if detached:
                v.requires_grad = False
                v.node.meta["detached"] = True
            done[node] = v
        return done[node]

    se = out.side_effects
    for t in {id(t): t for t in trackers}.values():
        value = replay(t.node)
        se.rebind(t, value, value.requires_grad)


def _tracker_of(node, trackers, rg: bool) -> TensorVariable:
    """A tracker of `node` (one of `trackers` if any holds it, else new with `rg`)."""
    for t in trackers:
        if t.node is node:
            return t
    return TensorVariable(node, node.meta["val"], rg)


def _scatter(F, parent: TensorVariable, view, new: TensorVariable) -> TensorVariable:
    """`parent` with the elements that `view` (a view node of it) selects replaced by `new`."""
    op, attrs = view.target, dict(view.kwargs)
    if op.name == "getitem":
        return F._index_put([parent, new], attrs["index"], (), accumulate=False)
    if op.name == "diagonal":  # (Barlow Twins: `torch.diagonal(c).add_(-1)`)
        size = tuple(parent.meta.shape)
        args = tuple(sorted(attrs.items()))
        ones = F.add(F.new_zeros(new, tuple(new.meta.shape)), 1)
        on_diagonal = F.ne(F._adjoint(ones, size, "diagonal", args), 0)
        return F.where(on_diagonal, F._adjoint(new, size, "diagonal", args), parent)
    if op.name in ("view", "reshape"):  # (reshape: the gradient may not be contiguous)
        return F.reshape(new, tuple(parent.meta.shape))
    return F._adjoint(new, tuple(parent.meta.shape), op.name, tuple(sorted(attrs.items())))


