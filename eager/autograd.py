"""Define-by-run reverse-mode autograd (PyTorch's engine, in miniature).

Every differentiable op run under grad mode records a `BackwardNode` holding the registry op,
its operands and output; `backward()` walks only the part of this graph that reaches the roots,
in dependency order (counted in-degrees, iterative, no recursion), calling each op's registry
backward rule (written in registry ops, so `create_graph=True` differentiates it again) and
accumulating into leaves' `.grad`. Saved tensors are checked against their version counters
and freed after the pass unless `retain_graph`. Semantics: PyTorch's autograd notes.
"""

from __future__ import annotations

import numpy as np

from ir.opdef import OpDef, sum_to_shape

from . import grad_mode
from .tensor import Tensor


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


class AccumulateGrad:
    """The sink of a leaf tensor: adds the incoming gradient into `variable.grad`."""

    __slots__ = ("variable",)
    next_functions = ()

    def __init__(self, variable: Tensor):
        self.variable = variable

    def name(self) -> str:
        return "AccumulateGrad"

    def __repr__(self) -> str:
        return "<AccumulateGrad>"


class BackwardNode:
    """The autograd record of one op call (`grad_fn`); prints as `<MulBackward0>`."""

    __slots__ = ("op", "attrs", "saved", "versions", "out", "out_version", "next_functions",
                 "_name", "freed", "__weakref__")

    def __init__(self, op: OpDef, inputs: tuple, attrs: dict, out: Tensor):
        self.op = op
        self.attrs = attrs
        self.saved = inputs
        self.versions = tuple(x._version if isinstance(x, Tensor) else None for x in inputs)
        self.out = out
        self.out_version = out._version
        self.next_functions = tuple(
            ((x.grad_fn or AccumulateGrad(x)), 0) if isinstance(x, Tensor) and x.requires_grad
            else (None, 0)
            for x in inputs
        )
        self._name = f"{_camel(op.name)}Backward0"
        self.freed = False

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name}>"

    def keep_old_operand(self, target: Tensor) -> None:
        """Before an in-place op overwrites `target`: operands that are `target` itself are
        saved as a copy of its current value (with its history)."""
        if any(x is target for x in self.saved):
            old = _old_value(target)
            self.saved = tuple(old if x is target else x for x in self.saved)
            self.versions = tuple(x._version if isinstance(x, Tensor) else None
                                  for x in self.saved)

    def rebind_output(self, target: Tensor) -> None:
        """After an in-place op wrote this node's output into `target`, `target` is the output."""
        self.out = target
        self.out_version = target._version

    def apply(self, g: Tensor, F):
        if self.freed:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time.")
        saved = tuple(
            _Stale(x, f"operand {i} of {self._name}", v)
            if isinstance(x, Tensor) and x._version != v else x
            for i, (x, v) in enumerate(zip(self.saved, self.versions))
        )
        out = self.out
        if out._version != self.out_version:
            out = _Stale(out, f"the output of {self._name}", self.out_version)
        grads = self.op.backward(F, g, out, *saved, **self.attrs)
        out = []
        for x, gx, (nxt, _) in zip(self.saved, grads, self.next_functions):
            if nxt is None or gx is None:
                out.append(None)
                continue
            if not isinstance(gx, Tensor):  # a rule returned a number (e.g. zero)
                gx = F.mul(F.expand(F.cast(g, x.dtype), tuple(x.shape)), 0.0)
            gx = sum_to_shape(F, gx, tuple(x.shape))
            if gx.dtype is not x.dtype:
                gx = F.cast(gx, x.dtype)
            out.append(gx)
        return out

    def release(self) -> None:
        self.saved = ()
        self.out = None
        self.freed = True


class _Stale(Tensor):
    """A saved tensor modified in place since it was saved. Its metadata stays readable (rules
    look at shapes); reading its data raises PyTorch's error, so only a backward rule that truly
    needs the old value fails, as in PyTorch, where only what a rule uses is saved."""

    __slots__ = ("_meta", "_what", "_now", "_expected")

    def __init__(self, t: Tensor, what: str, expected: int):
        self._meta, self._what, self._now, self._expected = t.meta, what, t._version, expected
        self.requires_grad, self.grad_fn, self.grad = t.requires_grad, t.grad_fn, None

    @property
    def _data(self):
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an "
            f"inplace operation: {self._what} is at version {self._now}; expected version "
            f"{self._expected} instead.")

    @property
    def meta(self):
        return self._meta

    @property
    def shape(self):
        from .tensor import Size

        return Size(self._meta.shape)

    @property
    def dtype(self):
        return self._meta.dtype

    @property
    def ndim(self):
        return len(self._meta.shape)

    def dim(self):
        return len(self._meta.shape)


def _old_value(t: Tensor) -> Tensor:
    old = Tensor._make(t._data.copy())
    old.grad_fn, old.requires_grad = t.grad_fn, t.requires_grad
    return old


def _collect(roots):
    """Dependency counts of every node reachable from `roots` (iterative DFS)."""
    deps: dict = {}
    seen = set()
    stack = [r for r in roots if r is not None]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        for nxt, _ in node.next_functions:
            if nxt is not None:
                deps[nxt] = deps.get(nxt, 0) + 1
                if id(nxt) not in seen:
                    stack.append(nxt)
    return deps


def _run(roots: list, retain_graph: bool, create_graph: bool, capture=None):
    """Propagate (node, grad) pairs through the graph. `capture` maps nodes or leaf tensors
    (by id) to slots: their gradients are returned there instead of accumulated."""
    from .dispatch import F

    deps = _collect([n for n, _ in roots])
    buffers: dict = {}
    for node, g in roots:
        buffers[node] = buffers[node] + g if node in buffers else g
    ready = [n for n, _ in roots if deps.get(n, 0) == 0]
    ready = list(dict.fromkeys(ready))
    captured = {}
    with grad_mode.set_grad_enabled(create_graph):
        while ready:
            node = ready.pop()
            g = buffers.pop(node)
            if capture is not None and id(node) in capture:
                captured[capture[id(node)]] = g
            if isinstance(node, AccumulateGrad):
                var = node.variable
                if capture is not None:
                    if id(var) in capture:
                        slot = capture[id(var)]
                        captured[slot] = captured[slot] + g if slot in captured else g
                    continue
                g = g if create_graph else g.detach()
                var.grad = g if var.grad is None else var.grad + g
                continue
            grads = node.apply(g, F)
            for (nxt, _), gx in zip(node.next_functions, grads):
                if nxt is None:
                    continue
                if gx is not None:
                    buffers[nxt] = buffers[nxt] + gx if nxt in buffers else gx
                deps[nxt] -= 1
                if deps[nxt] == 0:
                    if nxt in buffers:
                        ready.append(nxt)
                    else:
                        _skip(nxt, deps, buffers, ready)
            if not retain_graph:
                node.release()
    return captured


def _skip(node, deps, buffers, ready):
    """A node that received no gradient at all: release its successors' dependency counts."""
    stack = [node]
    while stack:
        n = stack.pop()
        for nxt, _ in n.next_functions:
            if nxt is None:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                (ready.append(nxt) if nxt in buffers else stack.append(nxt))


def _root_grad(t: Tensor, gradient, what="grad"):
    if not t.requires_grad:
        raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                           "grad_fn")
    if gradient is None:
        if t.numel() != 1:
            raise RuntimeError("grad can be implicitly created only for scalar outputs")
        return Tensor._make(np.ones_like(t._data))
    if not isinstance(gradient, Tensor):
        gradient = Tensor(gradient, dtype=t.dtype)
    if tuple(gradient.shape) != tuple(t.shape):
        raise RuntimeError(f"Mismatch in shape: grad_output[0] has a shape of "
                           f"{list(gradient.shape)} and output[0] has a shape of {list(t.shape)}.")
    return gradient


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """`eager.autograd.backward`: accumulate gradients of `tensors` into the leaves' `.grad`."""
    tensors = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    if grad_tensors is None or isinstance(grad_tensors, Tensor):
        grad_tensors = [grad_tensors] * len(tensors) if grad_tensors is None else [grad_tensors]
    retain_graph = create_graph if retain_graph is None else retain_graph
    roots = []
    for t, g in zip(tensors, grad_tensors):
        g = _root_grad(t, g)
        roots.append((t.grad_fn or AccumulateGrad(t), g))
    if inputs is not None:
        inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
        got = grad(tensors, inputs, grad_tensors, retain_graph=retain_graph,
                   create_graph=create_graph, allow_unused=True)
        for x, gx in zip(inputs, got):
            if gx is not None:
                x.grad = gx if x.grad is None else x.grad + gx
        return
    _run(roots, retain_graph, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """`eager.autograd.grad`: the gradients of `outputs` w.r.t. `inputs`, as a tuple."""
    outputs = [outputs] if isinstance(outputs, Tensor) else list(outputs)
    single = isinstance(inputs, Tensor)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is None or isinstance(grad_outputs, Tensor):
        grad_outputs = [grad_outputs] * len(outputs) if grad_outputs is None else [grad_outputs]
    retain_graph = create_graph if retain_graph is None else retain_graph
    for x in inputs:
        if not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    capture = {}
    for i, x in enumerate(inputs):
        capture[id(x.grad_fn) if x.grad_fn is not None else id(x)] = i
    roots = [(t.grad_fn or AccumulateGrad(t), _root_grad(t, g))
             for t, g in zip(outputs, grad_outputs)]
    captured = _run(roots, retain_graph, create_graph, capture)
    result = []
    for i, x in enumerate(inputs):
        g = captured.get(i)
        if g is None and not allow_unused:
            raise RuntimeError("One of the differentiated Tensors appears to not have been used "
                               "in the graph. Set allow_unused=True if this is the desired "
                               "behavior.")
        result.append(g)
    return tuple(result)
