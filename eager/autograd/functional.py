"""Higher-level autograd functions (PyTorch's `torch.autograd.functional`).

`vjp`, `jvp`, `jacobian`, `hessian`, `hvp`, `vhp` of a user function `func(*inputs)` whose
inputs and outputs are tensors or tuples of tensors. Results keep the structure PyTorch gives
(a tensor for a tensor input, tuples for tuples; `jacobian` of tuple outputs and inputs is a
tuple of tuples with `J[i][j].shape == outputs[i].shape + inputs[j].shape`). `jvp` uses the
double-vjp trick (as PyTorch's does). Outputs are detached unless `create_graph=True`.
`strict=True` raises RuntimeError when an output does not depend on an input.
"""

from __future__ import annotations

import numpy as np

from .. import grad_mode
from ..tensor import Tensor
from .engine import grad as _grad
from .function import Alias, Function


def _tuple(x, arg: str, fn: str):
    is_tuple = isinstance(x, (tuple, list))
    xs = tuple(x) if is_tuple else (x,)
    for i, t in enumerate(xs):
        if not isinstance(t, Tensor):
            raise TypeError(f"The {arg} given to {fn} must be either a Tensor or a tuple of "
                            f"Tensors but the value at index {i} has type {type(t).__name__}.")
    return is_tuple, xs


def _prepare(inputs, create_graph: bool):
    """Fresh views of the inputs that require grad (the user's tensors are not touched)."""
    out = []
    for x in inputs:
        if create_graph and x.requires_grad:
            out.append(Alias.apply(x))
        else:
            out.append(x.detach().requires_grad_(x.dtype.category >= 2))
    return tuple(out)


def _zeros_like(x: Tensor) -> Tensor:
    return Tensor._make(np.zeros(tuple(x.shape), x.dtype.np))


def _live_grad(outputs, inputs, grad_outputs, create_graph, retain_graph=None):
    """`engine.grad` of the outputs that require grad (allowing unused inputs: None for them);
    None for every input when no output requires grad."""
    live = [(o, g) for o, g in zip(outputs, grad_outputs) if o.requires_grad]
    if not live:
        return (None,) * len(inputs)
    return _grad([o for o, _ in live], inputs, [g for _, g in live], retain_graph=retain_graph,
                 create_graph=create_graph, allow_unused=True)


def _fill_unused(got, like, strict: bool, what: str, suffix: str = "") -> list:
    """`got` with zeros shaped like `like[i]` for each None entry; under `strict` a None entry
    raises RuntimeError ("The {what} of the user-provided function is independent of input
    i. This is not allowed in strict mode{suffix}.")."""
    res = []
    for i, (x, g) in enumerate(zip(like, got)):
        if g is None:
            if strict:
                raise RuntimeError(f"The {what} of the user-provided function is independent "
                                   f"of input {i}. This is not allowed in strict mode{suffix}.")
            g = _zeros_like(x)
        res.append(g)
    return res


def _grads(outputs, inputs, grad_outputs, create_graph, strict, fn, what="output"):
    """Gradients of outputs w.r.t. inputs (zeros for unused inputs unless strict)."""
    got = _live_grad(outputs, inputs, grad_outputs, create_graph, retain_graph=True)
    return tuple(_fill_unused(got, inputs, strict, what))


def _input_v(v, xs, fn: str, check_shapes: bool):
    """The vectors `v` of `jvp`/`hvp`/`vhp`, one per input: ones for a single one-element input
    when `v` is None; RuntimeError for another count (or, with `check_shapes`, shape)."""
    if v is None:
        if len(xs) != 1 or xs[0].numel() != 1:
            raise RuntimeError("The vector v can only be None if the input to the user-provided "
                               "function is a single Tensor with a single element.")
        return (Tensor._make(np.ones(tuple(xs[0].shape), xs[0].dtype.np)),)
    _, vs = _tuple(v, "v", fn)
    if len(vs) != len(xs):
        raise RuntimeError(f"v has invalid size: should be {len(xs)} but got {len(vs)}.")
    if check_shapes:
        for i, (a, b) in enumerate(zip(vs, xs)):
            if tuple(a.shape) != tuple(b.shape):
                raise RuntimeError(f"Entry {i} in v has invalid size: should be "
                                   f"{list(b.shape)} but got {list(a.shape)}.")
    return vs


def _finish(xs, create_graph: bool, is_tuple: bool):
    xs = tuple(x if create_graph or x is None else x.detach() for x in xs)
    return xs if is_tuple else xs[0]


def _check_v(v, outputs, fn: str):
    if v is None:
        if len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(f"The vector v can only be None if the user-provided function "
                               f"returns a single Tensor with a single element. ({fn})")
        return (Tensor._make(np.ones(tuple(outputs[0].shape), outputs[0].dtype.np)),)
    _, vs = _tuple(v, "v", fn)
    if len(vs) != len(outputs):
        raise RuntimeError(f"v has invalid size: should be {len(outputs)} but got {len(vs)}.")
    for i, (a, b) in enumerate(zip(vs, outputs)):
        if tuple(a.shape) != tuple(b.shape):
            raise RuntimeError(f"Entry {i} in v has invalid size: should be {list(b.shape)} "
                               f"but got {list(a.shape)}.")
    return vs


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T J): the vector-Jacobian product at `inputs` (shapes of inputs)."""
    in_tuple, xs = _tuple(inputs, "inputs", "vjp")
    with grad_mode.enable_grad():
        xs = _prepare(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "vjp")
        vs = _check_v(v, outs, "vjp")
        res = _grads(outs, xs, vs, create_graph, strict, "vjp")
    return _finish(outs, create_graph, out_tuple), _finish(res, create_graph, in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J v): the Jacobian-vector product, by the double-vjp trick: the vjp
    u -> J^T u is linear in u, and d/du <J^T u, v> = J v."""
    _, xs = _tuple(inputs, "inputs", "jvp")
    vs = _input_v(v, xs, "jvp", check_shapes=False)
    with grad_mode.enable_grad():
        xs = _prepare(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "jvp")
        us = tuple(Tensor._make(np.zeros(tuple(o.shape), o.dtype.np), requires_grad=True)
                   for o in outs)
        g = _grads(outs, xs, us, True, strict, "jvp")
        got = _live_grad(g, us, vs, create_graph)
        res = _fill_unused(got, outs, strict, "output")
    return _finish(outs, create_graph, out_tuple), _finish(tuple(res), create_graph, out_tuple)


class _Stack(Function):
    """Rows (each of shape `shape`) stacked into one tensor of shape (len(rows),) + shape."""

    @staticmethod
    def forward(ctx, *rows):
        ctx.n = len(rows)
        return Tensor._make(np.stack([r._data for r in rows]))

    @staticmethod
    def backward(ctx, g):
        return tuple(_Row.apply(g, i) for i in range(ctx.n))


class _Row(Function):
    @staticmethod
    def forward(ctx, g, i):
        ctx.i, ctx.shape = i, tuple(g.shape)
        return Tensor._make(g._data[i].copy())

    @staticmethod
    def backward(ctx, gg):
        rows = [gg if j == ctx.i else _zeros_like(gg) for j in range(ctx.shape[0])]
        return _Stack.apply(*rows), None


def _stack(rows, shape):
    if not rows:
        return Tensor._make(np.zeros((0,) + tuple(shape)))
    return _Stack.apply(*rows)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False,
             strategy="reverse-mode"):
    """The Jacobian of `func` at `inputs`: shape `output.shape + input.shape` (tuples of
    tuples for several outputs/inputs). One reverse pass per output element."""
    if strategy not in ("reverse-mode", "forward-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')
    in_tuple, xs = _tuple(inputs, "inputs", "jacobian")
    with grad_mode.enable_grad():
        xs = _prepare(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "jacobian")
        result = []
        for i, o in enumerate(outs):
            if strict:
                used = _grad([o], xs, [Tensor._make(np.ones(tuple(o.shape), o.dtype.np))],
                             retain_graph=True, allow_unused=True) if o.requires_grad \
                    else (None,) * len(xs)
                for j, u in enumerate(used):
                    if u is None:
                        raise RuntimeError(f"Output {i} of the user-provided function is "
                                           f"independent of input {j}. This is not allowed in "
                                           "strict mode.")
            n = o.numel()
            rows = [[] for _ in xs]
            for k in range(n):
                e = np.zeros(n, o.dtype.np)
                e[k] = 1
                ge = Tensor._make(e.reshape(tuple(o.shape)))
                gs = _grads([o], xs, [ge], create_graph, False, "jacobian")
                for j, gj in enumerate(gs):
                    rows[j].append(gj)
            per_input = []
            for j, x in enumerate(xs):
                J = _stack(rows[j], tuple(x.shape))
                J = J.reshape(tuple(o.shape) + tuple(x.shape))
                per_input.append(J if create_graph else J.detach())
            result.append(tuple(per_input) if in_tuple else per_input[0])
    return tuple(result) if out_tuple else result[0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False,
            outer_jacobian_strategy="reverse-mode"):
    """The Hessian of scalar `func` at `inputs`: shape `input.shape + input.shape` (a tuple of
    tuples for several inputs). RuntimeError when `func` does not return one element."""
    in_tuple, xs = _tuple(inputs, "inputs", "hessian")

    def gradient(*args):
        out = func(*args)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", "hessian")
        if out_tuple or outs[0].numel() != 1:
            raise RuntimeError("The function given to hessian should return a single Tensor "
                               "with a single element.")
        o = outs[0].reshape(())
        return _grads([o], args, [Tensor._make(np.ones((), o.dtype.np))], True, strict,
                      "hessian")

    res = jacobian(gradient, xs, create_graph=create_graph, strict=strict)
    if not in_tuple:
        return res[0][0]
    return res


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), v^T H): vector-Hessian product of scalar `func`."""
    return _hvp_impl(func, inputs, v, create_graph, strict, "vhp")


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H v): Hessian-vector product of scalar `func` (H is symmetric for twice
    differentiable functions; computed as vhp like PyTorch's documentation suggests)."""
    return _hvp_impl(func, inputs, v, create_graph, strict, "hvp")


def _hvp_impl(func, inputs, v, create_graph, strict, name):
    in_tuple, xs = _tuple(inputs, "inputs", name)
    vs = _input_v(v, xs, name, check_shapes=True)
    with grad_mode.enable_grad():
        xs = _prepare(xs, create_graph)
        out = func(*xs)
        out_tuple, outs = _tuple(out, "outputs of the user-provided function", name)
        if out_tuple or outs[0].numel() != 1:
            raise RuntimeError("The function given to hvp should return a single Tensor with a "
                               "single element.")
        o = outs[0]
        g = _grads([o], xs, [Tensor._make(np.ones(tuple(o.shape), o.dtype.np))], True, strict,
                   name)
        got = _live_grad(g, xs, vs, create_graph)
        res = _fill_unused(got, xs, strict, "jacobian", " for hessian")
    return _finish((o,), create_graph, False), _finish(tuple(res), create_graph, in_tuple)
