"""In-place ops on views: rebasing the history of the base (the autograd paper's section 4.3).

A view (`t._base` is not None: made by a registry op of kind "view", sharing memory and the
version counter with its base) that is modified in place changes its base too. As in PyTorch,
the base's grad_fn becomes a `CopySlices` node: the gradient of the new base is the old base's
gradient outside the view's region and, inside it, what the in-place op's node returns for its
view operand; the view's grad_fn becomes `AsStridedBackward0`, the selection of its region
from the base's new history. A view whose base was modified in place since its grad_fn was
recorded (its version moved on) gets a fresh `AsStridedBackward0` when autograd next uses it
(`refresh_view`): the paper's `y = x[:2]; x.add_(3); y.backward()`.

The region of a view inside its base is found from the arrays' memory layout (strides and
offsets, whatever chain of view ops made it): an index array into the flattened base, so one
mechanism serves transpose, reshape, expand, slicing and any future view op. The selection and
its adjoint (scatter-add) are custom Functions, so `create_graph=True` differentiates them.
"""

from __future__ import annotations

import numpy as np

from ir.execute import namespace_of

from .. import grad_mode
from ..tensor import Tensor
from .engine import NO_EDGE, Node, edge_of
from .function import Function
from .hooks import move_retain_grad
from .nodes import VIEWS

# ---------------------------------------------------------------- geometry


def _ptr(a) -> int:
    if isinstance(a, np.ndarray):
        return a.__array_interface__["data"][0]
    return a.data.ptr


def view_index(base: np.ndarray, view: np.ndarray) -> np.ndarray:
    """For each element of `view` (an array sharing `base`'s memory, same itemsize), the index
    of the element of `base.ravel()` at the same address. Shape: `view.shape`, dtype int64.
    Raises NotImplementedError for views that change the element size (`real` of a complex
    tensor) and ValueError when an element of the view lies outside the base."""
    item = base.itemsize
    if view.itemsize != item:
        raise NotImplementedError("in-place modification of a view that changes the element "
                                  "size (real/imag of a complex tensor) is not supported by "
                                  "wick's autograd")
    lo = sum(min(0, (n - 1) * s) for n, s in zip(base.shape, base.strides) if n > 0)
    hi = sum(max(0, (n - 1) * s) for n, s in zip(base.shape, base.strides) if n > 0)
    span = (hi - lo) // item + 1
    cells = np.full(span, -1, np.int64)
    labels = np.arange(base.size, dtype=np.int64).reshape(base.shape)
    start = -lo // item
    as_strided = np.lib.stride_tricks.as_strided
    slot_strides = tuple(s // item * 8 for s in base.strides)
    as_strided(cells[start:], base.shape, slot_strides)[...] = labels
    off = (_ptr(view) - _ptr(base)) // item + start
    vstrides = tuple(s // item * 8 for s in view.strides)
    reach = [off + sum(min(0, (n - 1) * s // 8) for n, s in zip(view.shape, vstrides) if n),
             off + sum(max(0, (n - 1) * s // 8) for n, s in zip(view.shape, vstrides) if n)]
    if view.size and (reach[0] < 0 or reach[1] >= span):
        raise ValueError("view lies outside its base")
    if view.size == 0:
        return np.zeros(view.shape, np.int64)
    idx = as_strided(cells[off:], view.shape, vstrides).copy()
    if (idx < 0).any():
        raise ValueError("view lies outside its base")
    return idx


def _device_index(idx: np.ndarray, like):
    if isinstance(like, np.ndarray):
        return idx
    return namespace_of(like).asarray(idx)


class _Gather(Function):
    """`g.ravel()[idx]`: the values of a view's region taken from a base-shaped tensor."""

    @staticmethod
    def forward(ctx, g, idx, base_shape):
        ctx.idx, ctx.base_shape = idx, base_shape
        flat = g._data.reshape(-1)
        return Tensor._make(flat[_device_index(idx, flat)])

    @staticmethod
    def backward(ctx, gg):
        return _ScatterAdd.apply(gg, ctx.idx, ctx.base_shape), None, None


class _ScatterAdd(Function):
    """The adjoint of `_Gather`: a base-shaped zero tensor with the view's values added at
    their addresses (elements a view repeats, as `expand` does, are summed)."""

    @staticmethod
    def forward(ctx, gv, idx, base_shape):
        ctx.idx, ctx.base_shape = idx, base_shape
        a = gv._data
        xp = np if isinstance(a, np.ndarray) else __import__("ir.execute").execute.namespace_of(a)
        n = int(np.prod(base_shape))
        out = xp.zeros(n, a.dtype)
        flat_idx = _device_index(idx, a).reshape(-1)
        xp.add.at(out, flat_idx, a.reshape(-1))
        return Tensor._make(out.reshape(base_shape))

    @staticmethod
    def backward(ctx, gg):
        return _Gather.apply(gg, ctx.idx, ctx.base_shape), None, None


# ---------------------------------------------------------------- nodes


class AsStridedBackward0(Node):
    """grad_fn of a view whose base's history was rebased: routes the view's gradient into its
    region of the base (a scatter-add into zeros of the base's shape)."""

    __slots__ = ("base_shape", "idx")

    def __init__(self, base_edge, idx: np.ndarray, base_shape: tuple, version: int):
        self.next_functions = (base_edge,)
        self.idx = idx
        self.base_shape = base_shape
        self.out_version = version
        self._hk = None

    def apply(self, g, F, create_graph=False):
        return [_ScatterAdd.apply(g, self.idx, self.base_shape)]


class CopySlices(Node):
    """The base's grad_fn after an in-place op on one of its views (PyTorch's CopySlices):
    edges = (old base history, the in-place node's other operands...)."""

    __slots__ = ("base_shape", "fn", "idx", "mask", "pos")

    def __init__(self, base_edge, idx, base_shape, fn: Node, pos: tuple, version: int):
        self.idx = idx
        self.base_shape = base_shape
        self.fn = fn
        self.pos = pos
        mask = np.zeros(int(np.prod(base_shape)), bool)
        mask[idx.reshape(-1)] = True
        self.mask = mask.reshape(base_shape)
        self.next_functions = (base_edge,) + tuple(
            NO_EDGE if i in pos else e for i, e in enumerate(fn.next_functions))
        self.out_version = version
        self._hk = None

    def apply(self, g, F, create_graph=False):
        gv = _Gather.apply(g, self.idx, self.base_shape)
        grads = self.fn.apply(gv, F, create_graph)
        rest = [None if i in self.pos else gx for i, gx in enumerate(grads)]
        if self.next_functions[0][0] is None:
            return [None] + rest
        through = [grads[i] for i in self.pos if grads[i] is not None]
        mask = Tensor._make(_device_index(self.mask, g._data))
        if through:
            gv_old = through[0]
            for t in through[1:]:
                gv_old = F.add(gv_old, t)
            inside = _ScatterAdd.apply(gv_old, self.idx, self.base_shape)
            gb = F.where(mask, inside, g)
        else:
            gb = F.where(mask, 0.0, g)
        return [gb] + rest

    def release(self) -> None:
        self.fn.release()


# ---------------------------------------------------------------- the protocol


def check_inplace_view(target: Tensor) -> None:
    """Raise PyTorch's errors for in-place ops autograd cannot follow (before the write)."""
    base = target._base
    if base is None or not grad_mode.is_grad_enabled():
        return
    if base.requires_grad and base.grad_fn is None:
        raise RuntimeError("a view of a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if base.requires_grad and not target.requires_grad:
        raise RuntimeError(
            "A view was created in no_grad mode and is being modified inplace with grad mode "
            "enabled. Given that this use case is ambiguous and error-prone, it is forbidden. "
            "You can clarify your code by moving both the view and the inplace either both "
            "inside the no_grad block (if you don't want the inplace to be tracked) or both "
            "outside (if you want the inplace to be tracked).")


def rebase_history(target: Tensor, node: Node, pos: tuple, old_fn) -> None:
    """`target` was just written in place by `node` (target.grad_fn is `node`). For a view,
    the base gets a CopySlices grad_fn and the view an AsStridedBackward0 from it."""
    base = target._base
    if base is None:
        move_retain_grad(target, old_fn, node)
        return
    base_edge = edge_of(base) if base.requires_grad else NO_EDGE
    idx = view_index(base._data, target._data)
    version = target._vc[0]
    cs = CopySlices(base_edge, idx, tuple(base.shape), node, pos, version)
    old_base_fn = base.grad_fn
    base.grad_fn = cs
    base.requires_grad = True
    move_retain_grad(base, old_base_fn, cs)
    view_fn = AsStridedBackward0((cs, 0), idx, tuple(base.shape), version)
    target.grad_fn = view_fn
    move_retain_grad(target, old_fn, view_fn)


def refresh_view(t: Tensor) -> Node:
    """The grad_fn of view `t` whose base was modified in place after `t`'s grad_fn was
    recorded: the selection of `t`'s region from the base's current history."""
    base = t._base
    old = t.grad_fn
    if not base.requires_grad:
        old.out_version = t._vc[0]
        return old
    try:
        idx = view_index(base._data, t._data)
    except (NotImplementedError, ValueError):
        old.out_version = t._vc[0]  # keep the recorded history
        return old
    fn = AsStridedBackward0(edge_of(base), idx, tuple(base.shape), t._vc[0])
    t.grad_fn = fn
    move_retain_grad(t, old, fn)
    return fn


VIEWS.check_inplace_view = check_inplace_view
VIEWS.rebase_history = rebase_history
VIEWS.refresh_view = refresh_view
