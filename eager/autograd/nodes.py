"""Autograd graph nodes: `Node`, `AccumulateGrad`, `BackwardNode` (PyTorch's `grad_fn`s).

A `BackwardNode` is the record of one registry op call under grad mode, an instance of the
op's subclass named as PyTorch's (`MulBackward0`, made once per op by `node_class`): the
op, its operands (checked against their version counters when backward reads them), its
attributes, and its output's array and version cell (not the output tensor: no reference
cycle). `next_functions` are (node, output_nr) edges to the operands' nodes, a leaf's being
its `AccumulateGrad`. `finish_grads` makes a rule's results one gradient per edge (reduced to
the operand's shape, cast to its dtype). Saved tensors modified in place (`_Stale`) or freed by
a backward without retain_graph (`_freed`) keep their metadata and raise PyTorch's errors only
when a rule reads their data.

Touches Tensor's autograd slots (`grad_fn`, `requires_grad`, `grad`, `_backward_hooks`).
"""

from __future__ import annotations

import sys
import weakref
from types import SimpleNamespace

import numpy as np

from ir import dtypes as D
from ir.autodiff import finish_grad
from ir.opdef import OpDef, TensorMeta

from ..tensor import MUTATIONS, Tensor, bump_version
from .hooks import NodeHooks, TensorAutogradMeta
from .lazy import MetaTensor, dtype_of, shape_of

NO_EDGE = (None, 0)
FREED = ("Trying to backward through the graph a second time (or directly access saved tensors "
         "after they have already been freed). Saved intermediate values of the graph are freed "
         "when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to "
         "backward through the graph a second time or if you need to access saved tensors after "
         "calling backward.")


def _camel(name: str) -> str:
    return "".join(p.capitalize() for p in name.split("_"))


# ---------------------------------------------------------------- nodes


class Node:
    """A node of the backward graph (`tensor.grad_fn`), PyTorch's `torch.autograd.graph.Node`.

    `next_functions`: one (node or None, output_nr) edge per differentiable input;
    `apply(grad, F)` maps the gradient(s) of its output(s) to one gradient per edge.
    `out_version` is the version of the output when this node became its grad_fn (views use it
    to notice that their base was modified in place since)."""

    __slots__ = ("__weakref__", "_hk", "next_functions", "out_version")
    num_outputs = 1
    struct_id = None  # (BackwardNode: see `record`; other nodes have none)
    _clock = 0

    def name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        return f"<{self.name()} object at {id(self):#x}>"

    def release(self) -> None:
        """Free what was saved for backward (after a pass without `retain_graph`)."""

    def hooks(self) -> NodeHooks:
        hk = self._hk
        if hk is None:
            hk = self._hk = NodeHooks()
            MUTATIONS[0] += 1  # (the node may now run hooks: see tensor.MUTATIONS)
        return hk

    @property
    def metadata(self) -> dict:
        """A dict for the user's annotations (PyTorch's `Node.metadata`)."""
        hk = self.hooks()
        if hk.metadata is None:
            hk.metadata = {}
        return hk.metadata

    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs)` after the node ran; may return new grad_inputs.
        Returns a handle with `.remove()` (PyTorch's `Node.register_hook`)."""
        return self.hooks().add("post", fn)

    def register_prehook(self, fn):
        """`fn(grad_outputs)` before the node runs; may return new grad_outputs."""
        return self.hooks().add("pre", fn)


class AccumulateGrad(Node):
    """The sink of a leaf tensor: adds the incoming gradient into `variable.grad`. One per leaf
    while a graph uses it (the leaf holds it weakly, as PyTorch's grad accumulator)."""

    __slots__ = ("variable",)

    def __init__(self, variable: Tensor):
        self.variable = variable
        self.next_functions = ()
        self._hk = None
        self.out_version = None

    def name(self) -> str:
        return "AccumulateGrad"

    def accumulate(self, g: Tensor, create_graph: bool) -> None:
        var = self.variable
        m = var._backward_hooks
        if m is not None and m.hooks:
            g = _run_tensor_hooks(m.hooks.values(), g)
        old = var.grad
        if old is None:
            if create_graph:
                var.grad = g
            else:
                var.grad = g if _exclusive(g) else Tensor._make(g._data.copy())
        elif create_graph or old.requires_grad:
            var.grad = old + g
        else:
            if old._data.shape != g._data.shape or not old._data.flags.writeable:
                var.grad = Tensor._make(old._data + g._data)
            else:
                old._data += g._data  # PyTorch accumulates in place outside create_graph
                bump_version(old)
        if m is not None and m.post_acc:
            for fn in list(m.post_acc.values()):
                fn(var)


def _exclusive(g: Tensor) -> bool:
    """Whether `g`'s array may become a `.grad` without a copy: owned by `g` alone (fresh from
    a kernel), writable, not a view of anything (PyTorch steals a gradient only when unshared)."""
    a = g._data
    return (type(a) is np.ndarray and a.base is None and a.flags.writeable
            and sys.getrefcount(a) <= 2 + 1 and sys.getrefcount(g) <= _REFS_FREE)


_REFS_FREE = 4  # engine local + accumulate() argument + getrefcount's argument + caller's frame


class BackwardNode(Node):
    """The record of one registry op call (`grad_fn`); prints as `<MulBackward0 ...>`.

    Built by `eager.dispatch.apply` as `BackwardNode(op, inputs, attrs, out)` after `out`'s
    view links (`_base`, `_vc`) are set. Holds the operands (for the rule), their versions, and
    the output's array and version cell, not the output tensor (no reference cycle)."""

    __slots__ = ("_clock", "_freed", "_old", "_pkey", "attrs", "op", "out_data", "out_vc",
                 "saved", "struct_id", "versions")

    def __new__(cls, op: OpDef, *args):
        return object.__new__(node_class(op) if cls is BackwardNode else cls)

    def __init__(self, op: OpDef, inputs: tuple, attrs: dict, out: Tensor):
        self.op = op
        self.attrs = attrs
        self.saved = inputs
        versions = []
        edges = []
        for x in inputs:
            if isinstance(x, Tensor):
                versions.append(x._vc[0])
                if not x.requires_grad:
                    edges.append(NO_EDGE)
                elif x._base is None and x._backward_hooks is None and x.grad_fn is not None:
                    edges.append((x.grad_fn, 0))  # edge_of's answer for a plain non-leaf
                else:
                    edges.append(edge_of(x))
            else:
                versions.append(None)
                edges.append(NO_EDGE)
        self.versions = versions
        self.next_functions = tuple(edges)
        self.out_data = out._data
        self.out_vc = out._vc
        self.out_version = out._vc[0]
        self._hk = None
        self._old = None
        self._freed = self._pkey = self.struct_id = None
        self._clock = 0
        if _CHECKS:
            for fn in _CHECKS:
                fn(self, inputs)

    def name(self) -> str:
        return type(self).__name__

    # ---- in-place protocol (called by Tensor._inplace_update)

    def keep_old_operand(self, target: Tensor) -> None:
        """Before an in-place op writes this node's output into `target`: check that autograd
        allows it, and keep operands that are `target` itself as a copy of its current value
        (with its history), since the write destroys it."""
        VIEWS.check_inplace_view(target)
        pos = tuple(i for i, x in enumerate(self.saved) if x is target)
        self._old = (target.grad_fn, target.requires_grad, pos)
        if pos:
            old = Tensor._make(target._data.copy())
            old.grad_fn, old.requires_grad = target.grad_fn, target.requires_grad
            saved = list(self.saved)
            for i in pos:
                saved[i] = old
                self.versions[i] = 0
            self.saved = tuple(saved)

    def rebind_output(self, target: Tensor) -> None:
        """After an in-place op wrote this node's output into `target`: `target` is the output,
        and when it is a view its base's history is rebased (views.rebase_history)."""
        self.out_data = target._data
        self.out_vc = target._vc
        self.out_version = target._vc[0]
        old_fn, _, pos = self._old if self._old is not None else (None, False, ())
        self._old = None
        VIEWS.rebase_history(target, self, pos, old_fn)

    # ---- backward

    def freed_info(self) -> list:
        """[(shape, dtype) or ("n", value) per operand, then the output's], once released."""
        f = self._freed
        if type(f) is tuple:
            f = self._freed = _info_of_key(f)
        return f

    def saved_output(self, create_graph: bool) -> Tensor:
        if self.out_data is None:
            return _freed(self.freed_info()[-1])
        out = Tensor._make(self.out_data)
        out._vc = self.out_vc
        if create_graph:
            out.grad_fn, out.requires_grad = self, True
        if self.out_vc[0] != self.out_version:
            return _Stale(out, f"the output of {self.name()}", self.out_version)
        return out

    def apply(self, g: Tensor, F, create_graph: bool = False) -> list:
        saved = self.saved
        if saved is None:
            saved = tuple(_freed(i) for i in self.freed_info()[:-1])
        args = saved
        versions = self.versions
        for i, x in enumerate(saved):
            v = versions[i]
            if v is not None and x._vc[0] != v:
                if args is saved:
                    args = list(saved)
                args[i] = _Stale(x, f"operand {i} of {self.name()}", v)
        if not create_graph and args is saved and self.out_data is not None and \
                self.out_vc[0] == self.out_version:
            grads = PLAN_RUN[0](self, g)
            if grads is not None:
                return grads
        grads = self.op.backward(F, g, self.saved_output(create_graph), *args, **self.attrs)
        return finish_grads(F, saved, grads, self.next_functions, g)

    def release(self) -> None:
        saved = self.saved
        if saved is None:
            return
        MUTATIONS[0] += 1
        if self._pkey is not None:  # its plan's key has the metadata: decoded when needed
            self._freed = self._pkey
            self.saved = self.out_data = None
            self.versions = (None,) * len(saved)
            return
        info = []
        add = info.append
        for x in saved:
            if isinstance(x, Tensor):
                a = x._data
                add((a.shape, a.dtype))
            else:
                add(("n", x))
        a = self.out_data
        add((a.shape, a.dtype))
        self._freed = info
        self.saved = self.out_data = None
        self.versions = [None] * len(info)


def node_class(op: OpDef) -> type:
    """The `BackwardNode` subclass of `op`, named as PyTorch's (`MulBackward0`): made once per
    op name, so that `type(x.grad_fn).__name__` is PyTorch's. Exactly the classes made here
    have `BackwardNode` as their `__base__` (the engine's fast checks test that)."""
    cls = _CLASSES.get(op.name)
    if cls is None:
        name = getattr(op, "node_name", None) or f"{_camel(op.name)}Backward0"
        cls = _CLASSES[op.name] = type(BackwardNode)(
            name, (BackwardNode,), {"__slots__": (), "__module__": __name__,
                                    "__qualname__": name})
    return cls


_CLASSES: dict = {}  # op name -> its BackwardNode subclass


def _info_of_key(key: tuple) -> list:
    """`release`'s metadata list from a plan key (`plans.run_arrays`: name, default dtype, the
    gradient's and the output's shape and dtype, attributes, then per operand its shape and
    dtype, or ("n", type, value) for a Python number)."""
    info = []
    i = 7
    while i < len(key):
        e = key[i]
        if type(e) is tuple and e[:1] == ("n",):
            info.append(("n", e[2]))
            i += 1
        elif type(e) is tuple:
            info.append((e, key[i + 1]))
            i += 2
        else:
            break  # the edge flags
    info.append((key[4], key[5]))
    return info


def finish_grads(F, inputs, grads, edges, g) -> list:
    """Rule results made into one gradient per edge: None where no edge, the others finished
    by `ir.autodiff.finish_grad` (the same rule AOT backward graphs and the plans use: a
    number becomes zeros, a broadcast gradient is summed back, the operand's dtype) where they
    need it."""
    out = []
    for x, gx, (nxt, _) in zip(inputs, grads, edges):
        if nxt is None or gx is None:
            out.append(None)
            continue
        shape, dt = shape_of(x), dtype_of(x)
        if not isinstance(gx, Tensor) or shape_of(gx) != shape or dtype_of(gx) is not dt:
            gx = finish_grad(F, gx, tuple(shape), dt, g)
        out.append(gx)
    return out


def cast_grad(F, gx: Tensor, dtype) -> Tensor:
    """`gx` in `dtype` (`finish_grad`'s cast: a complex gradient of a real input keeps its
    real part, PyTorch's handle_r_to_c)."""
    return finish_grad(F, gx, tuple(gx.shape), dtype, gx)


class _Unavailable(MetaTensor):
    """A saved tensor whose value is gone. Its metadata stays readable (rules look at shapes);
    reading its data raises, so only a backward rule that truly needs the value fails, as in
    PyTorch, where only what a rule uses is saved."""

    __slots__ = ("_msg",)

    def __init__(self, meta, msg: str):
        super().__init__(meta)
        self._msg = msg

    @property
    def _data(self):
        raise RuntimeError(self._msg)


def _Stale(t: Tensor, what: str, expected: int) -> Tensor:
    """A saved tensor modified in place since it was saved (PyTorch's version-counter error
    when a rule reads it)."""
    u = _Unavailable(t.meta, (
        "one of the variables needed for gradient computation has been modified by an "
        f"inplace operation: {what} is at version {t._vc[0]}; expected version {expected} "
        "instead. Hint: enable anomaly detection with eager.autograd.set_detect_anomaly(True) "
        "to find the forward operation that failed to compute its gradient."))
    u.requires_grad, u.grad_fn = t.requires_grad, t.grad_fn
    return u


def _freed(info):
    """Placeholder of a saved tensor released by a backward without retain_graph."""
    if info[0] == "n":  # a Python number operand
        return info[1]
    shape, npdtype = info
    return _Unavailable(TensorMeta(shape, D.from_numpy(npdtype), "cpu"), FREED)


# `plans.run(node, g)`, registered by plans.py (which imports this module): a node's rule as its
# traced plan without create_graph, or None to run the rule the generic way.
PLAN_RUN: list = [lambda node, g: None]

# Called as fn(node, inputs) when a BackwardNode is built (anomaly tracing, inference-tensor
# checks); empty by default.
_CHECKS: list = []


def _run_tensor_hooks(hooks, g):
    for fn in list(hooks):
        r = fn(g)
        if r is not None:
            g = r
    return g


# ---------------------------------------------------------------- edges


def grad_accumulator(t: Tensor) -> AccumulateGrad:
    """The leaf's AccumulateGrad, shared by every graph that uses the leaf while one is alive."""
    m = t._backward_hooks
    if m is None:
        m = t._backward_hooks = TensorAutogradMeta()
    acc = m.acc() if m.acc is not None else None
    if acc is None:
        acc = AccumulateGrad(t)
        m.acc = weakref.ref(acc)
    return acc


def edge_of(t: Tensor):
    """(node, output_nr) through which gradients reach `t`: its grad_fn (regenerated for a view
    whose base was modified in place since), or its AccumulateGrad for a leaf."""
    fn = t.grad_fn
    if fn is None:
        return (grad_accumulator(t), 0) if t.requires_grad else NO_EDGE
    if t._base is not None and fn.out_version != t._vc[0]:
        fn = VIEWS.refresh_view(t)
    m = t._backward_hooks
    return (fn, m.output_nr if m is not None else 0)


# The rules of views under in-place ops (`views.py`: `check_inplace_view`, `rebase_history`,
# `refresh_view`), which nodes and custom Functions call; views.py builds on this module and
# registers them here when it is imported (eager.autograd imports it).
VIEWS = SimpleNamespace()
