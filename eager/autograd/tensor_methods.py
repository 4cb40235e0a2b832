"""The autograd methods of `eager.Tensor`, installed by `install_tensor_methods()`.

`eager/tensor.py` owns the Tensor class; autograd adds (with setattr, at import of
`eager.autograd`) what belongs to autograd's semantics: `retain_grad`, `retains_grad`,
`register_hook`, `register_post_accumulate_grad_hook`, `detach_` (refused on views),
`requires_grad_` (PyTorch's leaf rule), `is_inference`, `output_nr`, and wraps of the
in-place protocol (`_check_inplace`: inference tensors; `_inplace_update`: forward-mode
tangents). Inference tensors are marked by a Tensor construction hook installed only while
inference mode is on (no cost outside it). Semantics: `torch.Tensor`'s documentation.
"""

from __future__ import annotations

import weakref

from ir import dtypes as D

from .. import grad_mode
from ..tensor import Tensor
from . import engine, forward_ad
from .engine import edge_of
from .function import Function
from .hooks import _HookDict, add_hook, meta_of
from .views import check_inplace_view

_ORIGINAL: dict = {}


def register_hook(self, hook):
    """`Tensor.register_hook(hook)`: `hook(grad) -> Tensor or None` runs each time the gradient
    of this tensor is computed; a returned tensor replaces the gradient. Returns a handle with
    `.remove()`. RuntimeError on a tensor that does not require grad (PyTorch's message)."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is None:
        m = meta_of(self)
        if m.hooks is None:
            m.hooks = _HookDict()
        return add_hook(m.hooks, hook)
    fn, nr = edge_of(self)
    return fn.hooks().add("tensor_pre", (nr, hook))


def register_post_accumulate_grad_hook(self, hook):
    """`hook(tensor)` after the gradient was accumulated into this leaf's `.grad`."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    if self.grad_fn is not None:
        raise RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors")
    m = meta_of(self)
    if m.post_acc is None:
        m.post_acc = _HookDict()
    return add_hook(m.post_acc, hook)


def retain_grad(self) -> None:
    """`Tensor.retain_grad()`: make a non-leaf keep its `.grad` after backward (accumulating, as
    leaves do). A no-op on leaves; RuntimeError when the tensor does not require grad."""
    if not self.requires_grad:
        raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
    if self.grad_fn is None or self._retains_grad:
        return
    fn, nr = edge_of(self)
    hk = fn.hooks()
    if hk.retain is None:
        hk.retain = {}
    hk.retain[nr] = weakref.ref(self)
    self._retains_grad = True


def _retains_grad(self) -> bool:
    """True for a non-leaf tensor whose `.grad` is kept by `retain_grad()`."""
    return bool(self._retains_grad)


def detach_(self) -> Tensor:
    """Detach in place: the tensor becomes a leaf that does not require grad. RuntimeError on
    views (PyTorch's message), whose history is shared with their base."""
    if self._base is not None:
        raise RuntimeError("Can't detach views in-place. Use detach() instead. If you are using "
                           "DistributedDataParallel (DDP) for training, and "
                           "gradient_as_bucket_view is set as True, gradients are views of DDP "
                           "buckets, and hence detach_() cannot be called on these gradients. To "
                           "fix this error, please refer to the Optimizer.zero_grad() function "
                           "in torch/optim/optimizer.py as the solution.")
    self.grad_fn = None
    self.requires_grad = False
    m = self._backward_hooks
    if m is not None:
        m.output_nr = 0
    return self


def requires_grad_(self, requires_grad: bool = True) -> Tensor:
    """Set `requires_grad` of a leaf; a non-leaf already requires grad (True is a no-op, False
    raises). RuntimeError for integer/bool tensors (PyTorch's messages)."""
    if self.grad_fn is not None:
        if requires_grad:
            return self
        raise RuntimeError("you can only change requires_grad flags of leaf variables. If you "
                           "want to use a computed variable in a subgraph that doesn't require "
                           "differentiation use var_no_grad = var.detach().")
    if requires_grad and self.dtype.category < D.FLOATING:
        raise RuntimeError("only Tensors of floating point dtype can require gradients")
    self.requires_grad = bool(requires_grad)
    return self


def is_inference(self) -> bool:
    """True for a tensor created inside `inference_mode()`."""
    m = self._backward_hooks
    return m is not None and m.inference


def _output_nr(self) -> int:
    m = self._backward_hooks
    return m.output_nr if m is not None else 0


def _check_inplace(self):
    m = self._backward_hooks
    if m is not None and m.inference and not grad_mode.is_inference_mode_enabled():
        raise RuntimeError("Inplace update to inference tensor outside InferenceMode is not "
                           "allowed.You can make a clone to get a normal tensor before doing "
                           "inplace update.See https://github.com/pytorch/rfcs/pull/17 for more "
                           "details.")
    if self._base is not None:
        check_inplace_view(self)
    return _ORIGINAL["_check_inplace"](self)


def _inplace_update(self, result, *args, **kwargs):
    out = _ORIGINAL["_inplace_update"](self, result, *args, **kwargs)
    if forward_ad._LEVEL and (result._fw_grad is not None or self._fw_grad is not None):
        forward_ad.inplace_tangent(self, result)
    return out


# ---------------------------------------------------------------- overwrites under autograd


def _overwrite_class(name: str):
    def forward(ctx, t, write):
        write()
        ctx.mark_dirty(t)
        return t

    def backward(ctx, g):
        return None, None  # the old value does not reach the result

    return type(name, (Function,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward)})


_OVERWRITES: dict = {}


def _tracked(t) -> bool:
    """Whether an overwrite of `t` must be recorded: grad mode on and `t` (or its base) has
    history; a leaf requiring grad makes Function.apply raise PyTorch's leaf error."""
    if not grad_mode.is_grad_enabled():
        return False
    return t.requires_grad or (t._base is not None and t._base.requires_grad)


def _wrap_overwrite(method: str, node_name: str):
    original = _ORIGINAL[method]

    def wrapper(self, *args, **kwargs):
        if method == "copy_" and args and isinstance(args[0], Tensor) and args[0].requires_grad \
                and grad_mode.is_grad_enabled():
            return original(self, *args, **kwargs)  # recorded by eager's own copy_
        if not _tracked(self):
            return original(self, *args, **kwargs)
        if self.requires_grad and self.grad_fn is None:
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")
        cls = _OVERWRITES.get(node_name)
        if cls is None:
            cls = _OVERWRITES[node_name] = _overwrite_class(node_name)
        return cls.apply(self, lambda: _no_grad_call(original, self, args, kwargs))

    wrapper.__name__ = method
    wrapper.__doc__ = original.__doc__
    return wrapper


def _no_grad_call(fn, self, args, kwargs):
    with grad_mode.no_grad():
        fn(self, *args, **kwargs)


# ---------------------------------------------------------------- inference tensors


def _marking_init(self, arr, requires_grad=False):
    _ORIGINAL["_init"](self, arr, requires_grad)
    meta_of(self).inference = True


def _no_inference_saved(node, inputs) -> None:
    for x in inputs:
        if isinstance(x, Tensor):
            m = x._backward_hooks
            if m is not None and m.inference:
                raise RuntimeError(
                    "Inference tensors cannot be saved for backward. Please do not use Tensors "
                    "created in inference mode in computation tracked by autograd. To work "
                    "around this, you can make a clone to get a normal tensor and use it in "
                    "autograd, or use `eager.no_grad()` instead of `eager.inference_mode()`.")


_no_inference_saved.inputs_only = True  # reads only the inputs: compiled hits run it in line


def _on_inference(mode: bool) -> None:
    Tensor._init = _marking_init if mode else _ORIGINAL["_init"]
    if mode and _no_inference_saved not in engine._CHECKS:
        engine._CHECKS.append(_no_inference_saved)


def install_tensor_methods() -> None:
    """Install autograd's Tensor methods (idempotent)."""
    if not _ORIGINAL:
        for name in ("_check_inplace", "_inplace_update", "_init", "zero_", "fill_", "copy_"):
            if hasattr(Tensor, name):
                _ORIGINAL[name] = getattr(Tensor, name)
    for method, node in (("zero_", "Zero"), ("fill_", "Fill"), ("copy_", "Copy")):
        if method in _ORIGINAL:
            setattr(Tensor, method, _wrap_overwrite(method, node))
    Tensor.retain_grad = retain_grad
    Tensor.retains_grad = property(_retains_grad)
    Tensor.register_hook = register_hook
    Tensor.register_post_accumulate_grad_hook = register_post_accumulate_grad_hook
    Tensor.detach_ = detach_
    Tensor.requires_grad_ = requires_grad_
    Tensor.is_inference = is_inference
    Tensor.output_nr = property(_output_nr)
    Tensor._check_inplace = _check_inplace
    Tensor._inplace_update = _inplace_update
    if _on_inference not in grad_mode.INFERENCE_LISTENERS:
        grad_mode.INFERENCE_LISTENERS.append(_on_inference)
