"""Hooks and per-tensor autograd state: tensor hooks, node hooks, `retain_grad`, handles.

PyTorch's semantics ("Backward Hooks execution" in the autograd notes): a tensor hook
`fn(grad) -> grad or None` registered on a non-leaf runs when the gradient of that tensor is
computed, before its grad_fn runs (it may replace the gradient); on a leaf it runs before the
gradient is accumulated into `.grad`. `retain_grad()` hooks run after the tensor hooks. Node
pre-hooks `fn(grad_outputs)` and post-hooks `fn(grad_inputs, grad_outputs)` wrap a node's
`apply`. Every `register_*` returns a `RemovableHandle`. Hooks registered on a tensor before an
in-place op keep seeing the gradient of the old value; `retain_grad` follows the tensor.

Touches only the `_backward_hooks` slot of Tensor (which holds a `TensorAutogradMeta`) and the
`_hk` slot of nodes. The Tensor methods that register hooks on a tensor's node
(`register_hook`, `retain_grad`) are in `tensor_methods.py`, above the engine.
"""

from __future__ import annotations

import itertools
import weakref

from ..grad_mode import is_grad_enabled
from ..tensor import MUTATIONS
from .lazy import plain_grad

_ids = itertools.count()


class RemovableHandle:
    """Returned by every `register_*hook`: `.remove()` unregisters (idempotent); also a context
    manager removing the hook on exit (PyTorch's `torch.utils.hooks.RemovableHandle`)."""

    __slots__ = ("_dict", "id")

    def __init__(self, hooks: dict, key: int):
        self._dict = weakref.ref(hooks) if hasattr(hooks, "__weakref__") else (lambda: hooks)
        self.id = key

    def remove(self) -> None:
        d = self._dict()
        if d is not None:
            d.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


class _HookDict(dict):
    """A dict that handles can refer to weakly."""

    __slots__ = ("__weakref__",)


def add_hook(hooks: dict, value) -> RemovableHandle:
    MUTATIONS[0] += 1  # graphs recorded before now may run hooks: no structure-id programs
    key = next(_ids)
    hooks[key] = value
    return RemovableHandle(hooks, key)


class TensorAutogradMeta:
    """What autograd keeps on a tensor (in its `_backward_hooks` slot): leaf hooks,
    post-accumulate hooks, the weakly held AccumulateGrad, and the output number within its
    grad_fn (outputs of multi-output custom Functions)."""

    __slots__ = ("acc", "hooks", "inference", "output_nr", "post_acc")

    def __init__(self):
        self.hooks = None
        self.post_acc = None
        self.acc = None
        self.output_nr = 0
        self.inference = False


def meta_of(t) -> TensorAutogradMeta:
    m = t._backward_hooks
    if m is None:
        m = t._backward_hooks = TensorAutogradMeta()
    return m


class NodeHooks:
    """Hooks and annotations of one node (its `_hk` slot): tensor pre-hooks per output, the
    tensors retaining their gradient, node pre/post hooks, user metadata, anomaly trace."""

    __slots__ = ("metadata", "post", "pre", "retain", "tensor_pre", "trace")

    def __init__(self):
        self.tensor_pre = None
        self.retain = None
        self.pre = None
        self.post = None
        self.metadata = None
        self.trace = None

    def add(self, kind: str, fn) -> RemovableHandle:
        d = getattr(self, kind)
        if d is None:
            d = _HookDict()
            setattr(self, kind, d)
        return add_hook(d, fn)

    def before(self, node, g):
        """Tensor hooks, then retain_grad, then node pre-hooks, on the incoming gradient(s)."""
        multi = node.num_outputs > 1
        if self.tensor_pre:
            for nr, fn in list(self.tensor_pre.values()):
                gi = g[nr] if multi else g
                if gi is None:
                    continue
                r = fn(gi)
                if r is not None:
                    if multi:
                        g = list(g)
                        g[nr] = r
                    else:
                        g = r
        if self.retain:
            for nr, ref in list(self.retain.items()):
                t = ref()
                gi = g[nr] if multi else g
                if t is None or gi is None:
                    continue
                if t.grad is None:
                    t.grad = gi if is_grad_enabled() else gi.detach().clone()
                else:
                    t.grad = t.grad + gi
        if self.pre:
            for fn in list(self.pre.values()):
                r = fn(tuple(g) if multi else (g,))
                if r is not None:
                    g = list(r) if multi else r[0]
        return g

    def after(self, grads: list, g) -> list:
        """Node post-hooks `fn(grad_inputs, grad_outputs)`; a non-None result replaces."""
        grads = [plain_grad(x) for x in grads]
        outs = tuple(g) if isinstance(g, list) else (g,)
        for fn in list(self.post.values()):
            r = fn(tuple(grads), outs)
            if r is not None:
                grads = list(r)
        return grads


# ---------------------------------------------------------------- retain_grad after in-place ops


def move_retain_grad(t, old_fn, new_fn) -> None:
    """After an in-place op gave `t` the grad_fn `new_fn`: `retain_grad` follows `t`."""
    if not t._retains_grad:
        return
    if old_fn is not None and old_fn._hk is not None and old_fn._hk.retain:
        for nr, ref in list(old_fn._hk.retain.items()):
            if ref() is t:
                del old_fn._hk.retain[nr]
    hk = new_fn.hooks()
    if hk.retain is None:
        hk.retain = {}
    hk.retain[0] = weakref.ref(t)
