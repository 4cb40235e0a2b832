"""Custom differentiable ops: `eager.autograd.Function` (PyTorch's `torch.autograd.Function`).

    class Exp(Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

`Exp.apply(x)` runs `forward` under no_grad and, when grad mode is on and a tensor argument
requires grad, makes the outputs' grad_fn an `ExpBackward` node, which is also the `ctx`
(as in PyTorch): `save_for_backward`/`saved_tensors` (version-checked, freed after backward),
`needs_input_grad`, `mark_dirty` (in-place outputs, history rebased like registry in-place
ops, views included), `mark_non_differentiable`, `set_materialize_grads`, `save_for_forward`.
`forward(*args)` + `setup_context(ctx, inputs, output)` (PyTorch 2 style) also works;
`jvp(ctx, *tangents)` serves forward-mode AD; `@once_differentiable` backward functions
refuse double backward. Semantics: "Extending torch.autograd" in PyTorch's docs.
"""

from __future__ import annotations

import functools

import numpy as np

from ir.opdef import sum_to_shape

from .. import grad_mode
from ..tensor import Tensor
from . import engine, forward_ad
from .engine import FREED, NO_EDGE, Node, edge_of
from .hooks import meta_of
from .nodes import VIEWS


class FunctionCtx:
    """The ctx API (mixed into the backward node of each `Function.apply` call)."""

    def save_for_backward(self, *tensors) -> None:
        """Tensors (or None) the backward needs; read back with `saved_tensors`."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self._to_save = tensors

    def save_for_forward(self, *tensors) -> None:
        """Tensors `jvp` needs (read back with `saved_tensors` inside `jvp`)."""
        self._to_save_fw = tensors

    def mark_dirty(self, *tensors) -> None:
        """Inputs modified in place by `forward` (they must be returned as outputs)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Outputs that get no gradient (indices, masks); their grad is always zeros."""
        self._non_diff = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, `backward` gets None (not zeros) for outputs that received no grad."""
        self.materialize_grads = bool(value)

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to `save_for_backward`; RuntimeError if one was modified in place
        since, or if the graph was freed by a backward without `retain_graph`."""
        saved = getattr(self, "_saved", None)
        if saved is None:
            fw = getattr(self, "_to_save_fw", None)
            if fw is not None and getattr(self, "_in_jvp", False):
                return tuple(fw)
            if getattr(self, "_released", False):
                raise RuntimeError(FREED)
            return tuple(getattr(self, "_to_save", ()))
        out = []
        for entry in saved:
            if entry is None:
                out.append(None)
                continue
            kind, t, version, nr = entry
            if kind == "o":
                data, vc, rg = t
                t = Tensor._make(data)
                t._vc = vc
                if rg:
                    t.requires_grad, t.grad_fn = True, self
                    if nr:
                        meta_of(t).output_nr = nr
            if t._vc[0] != version:
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: a tensor saved by {self.name()} is at version "
                    f"{t._vc[0]}; expected version {version} instead.")
            out.append(t)
        return tuple(out)

    saved_variables = saved_tensors


def _backward_class(cls) -> type:
    """The grad_fn class of Function `cls`'s outputs, named as PyTorch's ("MyExpBackward"):
    a subclass of `cls._node_class` made once per Function class."""
    made = cls.__dict__.get("_backward_node_cls")
    if made is None or made.__base__ is not cls._node_class:
        name = f"{cls.__name__}Backward"
        made = type(name, (cls._node_class,), {"__qualname__": name,
                                               "__module__": cls.__module__})
        cls._backward_node_cls = made
    return made


class FunctionNode(Node, FunctionCtx):
    """The grad_fn of the outputs of one `Function.apply` call, and its `ctx`."""

    def __init__(self, cls, num_inputs: int):
        self._cls = cls
        self._hk = None
        self.out_version = None
        self.next_functions = ()
        self.needs_input_grad = (False,) * num_inputs
        self.materialize_grads = True
        self._saved = None
        self._released = False
        self.num_outputs = 1
        self._outs = ()

    def name(self) -> str:
        return f"{self._cls.__name__}Backward"

    def apply(self, g, F, create_graph=False):
        grads = list(g) if self.num_outputs > 1 else [g]
        if self.materialize_grads:
            for i, gi in enumerate(grads):
                if gi is None and i < len(self._outs) and self._outs[i] is not None:
                    shape, dtype = self._outs[i]
                    grads[i] = Tensor._make(np.zeros(shape, dtype.np))
        res = self._cls.backward(self, *grads)
        if not isinstance(res, tuple):
            res = (res,)
        n = len(self.next_functions)
        if len(res) != n:
            if len(res) > n and all(r is None for r in res[n:]):
                res = res[:n]
            else:
                raise RuntimeError(f"function {self.name()} returned an incorrect number of "
                                   f"gradients (expected {n}, got {len(res)})")
        out = []
        for i, (gx, (nxt, _)) in enumerate(zip(res, self.next_functions)):
            if nxt is None or gx is None:
                out.append(None)
                continue
            if not isinstance(gx, Tensor):
                raise TypeError(f"function {self.name()} returned a gradient of type "
                                f"{type(gx).__name__} at index {i}, expected a Tensor or None")
            shape, dtype = self._in_meta[i]
            if tuple(gx.shape) != shape:
                try:
                    gx = sum_to_shape(F, gx, shape)
                except RuntimeError:
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - got "
                        f"{list(gx.shape)} but expected shape compatible with {list(shape)}"
                    ) from None
                if tuple(gx.shape) != shape:
                    raise RuntimeError(
                        f"Function {self.name()} returned an invalid gradient at index {i} - got "
                        f"{list(gx.shape)} but expected shape compatible with {list(shape)}")
            if gx.dtype is not dtype:
                gx = engine.cast_grad(F, gx, dtype)
            out.append(gx)
        return out

    def release(self) -> None:
        self._saved = None
        self._to_save = ()
        self._released = True


class _FunctionMeta(type):
    """Gives each Function subclass its `apply` classmethod semantics (as PyTorch's metaclass
    gives it a backward class)."""


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable ops; subclass with static `forward(ctx, *args)` and
    `backward(ctx, *grad_outputs)`, call `MyFn.apply(*args)`. See the module docstring."""

    _node_class = FunctionNode  # the ctx/grad_fn class of `apply` (a subclass may refine it)

    def __init__(self, *args, **kwargs):
        raise RuntimeError("Legacy autograd function with non-static forward method is not "
                           "supported. Please use new-style autograd function with static "
                           "forward method. (Example: class MyFn(Function): @staticmethod "
                           "def forward(ctx, x) ...; call MyFn.apply(x))")

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom "
                                  "autograd.Function.")

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not overridden")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for "
                                  "your custom autograd.Function to use it with backward "
                                  "mode AD.")

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError("You must implement the jvp function for custom "
                                  "autograd.Function to use it with forward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run `forward` and record one backward node for its outputs (see module doc)."""
        if cls.backward is Function.backward and cls.vjp is not Function.vjp:
            cls.backward = cls.vjp
        recording = grad_mode.is_grad_enabled() and any(
            isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx = _backward_class(cls)(cls, len(args))
        if recording:
            ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad
                                         for a in args)
            ctx.next_functions = tuple(edge_of(a) if isinstance(a, Tensor) and a.requires_grad
                                       else NO_EDGE for a in args)
            ctx._in_meta = [(tuple(a.shape), a.dtype) if isinstance(a, Tensor) else None
                            for a in args]
            for fn in engine._CHECKS:
                fn(ctx, args)
        old_fns = {id(a): (a.grad_fn, a) for a in args if isinstance(a, Tensor)}
        custom_setup = cls.setup_context is not Function.setup_context
        with grad_mode.no_grad():
            if custom_setup:
                output = cls.forward(*args, **kwargs)
                cls.setup_context(ctx, args, output)
            else:
                output = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(output, tuple)
        outs = (output,) if single else output
        outs = _wrap_outputs(ctx, cls, args, outs, recording, old_fns)
        _forward_ad(ctx, cls, args, outs)
        return outs[0] if single else tuple(outs)


def _wrap_outputs(ctx, cls, args, outs, recording, old_fns):
    dirty = {id(t) for t in getattr(ctx, "_dirty", ())}
    non_diff = {id(t) for t in getattr(ctx, "_non_diff", ())}
    input_ids = {id(a) for a in args if isinstance(a, Tensor)}
    for t in getattr(ctx, "_dirty", ()):
        if id(t) not in input_ids:
            raise RuntimeError("mark_dirty only accepts input tensors, but argument was not an "
                               "input")
    result = list(outs)
    tensor_outs = [i for i, o in enumerate(outs) if isinstance(o, Tensor)]
    ctx.num_outputs = len(outs)
    ctx._outs = [(tuple(o.shape), o.dtype) if isinstance(o, Tensor) else None for o in outs]
    for i in tensor_outs:
        o = outs[i]
        if id(o) in dirty:
            if recording and o.requires_grad and o.grad_fn is None:
                raise RuntimeError("a leaf Variable that requires grad has been used in an "
                                   "in-place operation.")
        elif id(o) in input_ids:  # an input returned as is: an alias (view) of it
            alias = Tensor._make(o._data)
            alias._vc, alias._base = o._vc, (o._base if o._base is not None else o)
            o = result[i] = alias
        differentiable = (recording and id(outs[i]) not in non_diff
                          and o.dtype.category >= 2)
        if id(outs[i]) in dirty:
            old_fn = old_fns[id(outs[i])][0]
            if differentiable:
                VIEWS.check_inplace_view(o)
                o.grad_fn, o.requires_grad = ctx, True
                m = o._backward_hooks
                if m is not None:
                    m.output_nr = i
                elif i:
                    meta_of(o).output_nr = i
                ctx.out_version = o._vc[0]
                VIEWS.rebase_history(o, ctx, (), old_fn)
            continue
        if differentiable:
            o.requires_grad, o.grad_fn = True, ctx
            if i:
                meta_of(o).output_nr = i
    if len(tensor_outs) and recording:
        ctx.out_version = result[tensor_outs[0]]._vc[0]
    if recording:
        _save(ctx, result)
    else:
        ctx._saved = None
    return result


def _save(ctx, outs) -> None:
    out_ids = {id(o): i for i, o in enumerate(outs) if isinstance(o, Tensor)}
    saved = []
    for t in getattr(ctx, "_to_save", ()):
        if t is None:
            saved.append(None)
        elif id(t) in out_ids and t.grad_fn is ctx:  # an output: no reference cycle
            saved.append(("o", (t._data, t._vc, True), t._vc[0], out_ids[id(t)]))
        else:
            saved.append(("t", t, t._vc[0], 0))
    ctx._saved = saved
    ctx._to_save = ()


def _forward_ad(ctx, cls, args, outs) -> None:
    if not forward_ad._LEVEL or not any(isinstance(a, Tensor) and a._fw_grad is not None
                                        for a in args):
        return
    tangents = [a._fw_grad if isinstance(a, Tensor) else None for a in args]
    ctx._in_jvp = True
    try:
        with grad_mode.no_grad():
            res = cls.jvp(ctx, *tangents)
    finally:
        ctx._in_jvp = False
    if not isinstance(res, tuple):
        res = (res,)
    for o, t in zip(outs, res):
        if isinstance(o, Tensor) and t is not None:
            forward_ad.set_tangent(o, t)


class Alias(Function):
    """The identity as a Function: a view of its input whose gradient and tangent pass
    through (forward AD's dual views, `autograd.functional`'s fresh inputs)."""

    @staticmethod
    def forward(ctx, x):
        return x

    @staticmethod
    def backward(ctx, g):
        return g

    @staticmethod
    def jvp(ctx, t):
        return t


forward_ad.ALIAS[0] = Alias  # (forward_ad is below this module)


def once_differentiable(fn):
    """Decorator of a Function's `backward`: it runs without recording, and differentiating
    its result again raises RuntimeError (PyTorch's `torch.autograd.function`)."""

    @functools.wraps(fn)
    def wrapper(ctx, *grads):
        with grad_mode.no_grad():
            res = fn(ctx, *grads)
        if not grad_mode.is_grad_enabled():
            return res
        needs = [g for g in grads if isinstance(g, Tensor) and g.requires_grad]
        if not needs:
            return res
        err = _DoubleBackwardError(tuple(edge_of(g) for g in needs))
        single = not isinstance(res, tuple)
        out = []
        for r in ((res,) if single else res):
            if isinstance(r, Tensor):
                r = Tensor._make(r._data)
                r.requires_grad, r.grad_fn = True, err
            out.append(r)
        return out[0] if single else tuple(out)

    return wrapper


class _DoubleBackwardError(Node):
    __slots__ = ()

    def __init__(self, edges):
        self.next_functions = edges
        self._hk = None
        self.out_version = None

    def name(self) -> str:
        return "DelayedError"

    def apply(self, g, F, create_graph=False):
        raise RuntimeError("trying to differentiate twice a function that was marked with "
                           "@once_differentiable")
