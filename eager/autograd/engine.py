"""The reverse-mode engine: `backward`, `grad` (PyTorch's autograd engine, small).

Every differentiable op run under grad mode records a node (`nodes.py`: `BackwardNode`, named
like `MulBackward0`, with (node, output_nr) edges to its operands' nodes, a leaf's being its
`AccumulateGrad`). `backward()` walks only the part of the graph that reaches the
roots, in dependency order (counted in-degrees, iterative: no recursion limit), calling each
op's registry backward rule, written in registry ops: with `create_graph=True` the rule runs
through `eager.dispatch.F` and is recorded (higher-order gradients); otherwise as a traced
plan (`plans.py`) or through `lazy.LF`, which run the same rule unrecorded and compute only the
gradients that some node needs. Saved tensors are freed after the pass unless `retain_graph`.

Semantics: PyTorch's autograd notes and the autograd paper (Paszke et al. 2017). This module may
touch Tensor's autograd slots (`grad`, `requires_grad`, through the nodes); views and in-place
rebasing live in `views.py`, hooks in `hooks.py`.
"""

from __future__ import annotations

import warnings
from sys import getrefcount

import numpy as np

from .. import grad_mode
from .. import tensor as _tensor_module
from ..tensor import Tensor, wrap_array
from . import anomaly, plans, programs
from .lazy import LF
from .lazy import added_arrays as _added
from .lazy import plain_grad as _plain
from .nodes import (  # noqa: F401  (re-exported: the engine's vocabulary)
    _CHECKS,
    FREED,
    NO_EDGE,
    AccumulateGrad,
    BackwardNode,
    Node,
    _run_tensor_hooks,
    _Stale,
    _Unavailable,
    cast_grad,
    edge_of,
    finish_grads,
    grad_accumulator,
)

# ---------------------------------------------------------------- the pass

_ND = np.ndarray


def _dependencies(roots) -> dict:
    """Number of edges into every node reachable from `roots` (iterative DFS)."""
    deps: dict = {}
    seen = set()
    stack = [r for r in roots if r is not None]
    for r in stack:
        seen.add(r)
    while stack:
        node = stack.pop()
        for nxt, _ in node.next_functions:
            if nxt is not None:
                if nxt in deps:
                    deps[nxt] += 1
                else:
                    deps[nxt] = 1
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
    return deps


def _needed(roots, deps: dict, targets: set) -> set:
    """Nodes from which some target is reachable (the only ones `grad` must run)."""
    left = dict(deps)
    order = []
    stack = [r for r in dict.fromkeys(roots) if left.get(r, 0) == 0]
    while stack:
        n = stack.pop()
        order.append(n)
        for nxt, _ in n.next_functions:
            if nxt is not None:
                left[nxt] -= 1
                if left[nxt] == 0:
                    stack.append(nxt)
    needed = set(targets)
    for n in reversed(order):
        if n not in needed and any(nxt in needed for nxt, _ in n.next_functions):
            needed.add(n)
    return needed


def _add(buffers: dict, node, nr: int, g, multi: bool):
    if not multi:
        old = buffers.get(node)
        buffers[node] = g if old is None else _sum(old, g)
        return
    slots = buffers.get(node)
    if slots is None:
        slots = buffers[node] = [None] * node.num_outputs
    slots[nr] = g if slots[nr] is None else _sum(slots[nr], g)


def _sum(a: Tensor, b: Tensor) -> Tensor:
    if not grad_mode.is_grad_enabled() and a._data.shape == b._data.shape and \
            a._data.dtype == b._data.dtype:
        return Tensor._make(_added(a._data, b._data))
    return a + b


def _pass_over(node, deps: dict, ready: list) -> None:
    """A node that gets no gradient: its edges are counted down as if it had run."""
    for nxt, _ in node.next_functions:
        if nxt is not None:
            deps[nxt] -= 1
            if deps[nxt] == 0:
                ready.append(nxt)


# The namespaces rules run through: [lazy.LF, the recording namespace (`eager.dispatch.F`,
# registered by dispatch when it is imported: dispatch imports this package)].
NAMESPACES: list = [LF, None]


def run_backward(roots: list, retain_graph: bool, create_graph: bool, capture=None,
                 accumulate: bool = True, program: bool = True) -> dict:
    """Propagate gradients from `roots` [((node, nr), grad)] through the graph: the engine's
    one loop.

    `capture` maps (node, nr) edges to result slots: `grad()` gets their gradients there, and
    only nodes leading to them run. With `accumulate`, leaves' `.grad` receive their sums.
    Without create_graph or anomaly mode, a gradient between plan-backed nodes stays an ndarray
    (`plans.run_arrays`; a Tensor is made only where it leaves for a leaf, a hook, a capture or
    a rule run the generic way), and a one-root pass is first offered to `programs.run`
    (`program=False`: the caller already did)."""
    checking = anomaly.is_anomaly_enabled()
    plain = not create_graph and not checking
    if plain and program and capture is None and _as_program(roots, retain_graph):
        return {}
    F = NAMESPACES[create_graph]
    deps, buffers, ready, targets, needed = _start(roots, capture)
    captured: dict = {}
    run_arrays = plans.run_arrays if plain else None
    state = grad_mode._state
    was = state.enabled
    state.enabled = create_graph
    try:
        with np.errstate(all="ignore"):
            while ready:
                node = ready.pop()
                g = buffers.pop(node, None)
                if g is None or (needed is not None and node not in needed):
                    _pass_over(node, deps, ready)
                    continue
                tn = type(node)
                grads = None
                if run_arrays is not None and tn.__base__ is BackwardNode and \
                        node._hk is None and (targets is None or node not in targets):
                    ga = g if type(g) is _ND else g._data if type(g) is Tensor else None
                    if type(ga) is _ND:
                        grads = run_arrays(node, ga)
                    ga = None
                if grads is None:
                    if tn is AccumulateGrad and targets is None and accumulate and \
                            type(g) is _ND and _steal(node.variable, g):
                        g = None
                        continue
                    if type(g) is _ND:
                        g = wrap_array(g)
                    hk = node._hk
                    if hk is not None:
                        g = hk.before(node, g)
                    if targets is not None and node in targets:
                        _capture(captured, targets[node], g, node.num_outputs)
                    if tn is AccumulateGrad:
                        if accumulate:
                            node.accumulate(g, create_graph)  # (g: its only reference: kept)
                        continue
                    if checking:
                        grads = anomaly.checked_apply(node, g, F, create_graph)
                    else:
                        grads = node.apply(g, F, create_graph)
                    if hk is not None and hk.post:
                        grads = hk.after(grads, g)
                g = None
                _route(node, grads, buffers, deps, ready)
                grads = None  # a leaf may then take its gradient's array without a copy
                if not retain_graph:
                    node.release()
    finally:
        state.enabled = was
    return captured


def _route(node, grads, buffers: dict, deps: dict, ready: list) -> None:
    """`node`'s gradients, one per edge, added into the buffers of the nodes they go to; a
    node whose last edge is counted becomes ready."""
    for (nxt, nr), gx in zip(node.next_functions, grads):
        if nxt is None:
            continue
        if gx is not None:
            tg = type(gx)
            if tg is not _ND and tg is not Tensor:
                gx = _plain(gx)
            if nxt.num_outputs == 1:
                old = buffers.get(nxt)
                buffers[nxt] = gx if old is None else _sum_any(old, gx)
            else:
                _add(buffers, nxt, nr, _tensor(gx), True)
        d = deps[nxt] - 1
        deps[nxt] = d
        if d == 0:
            ready.append(nxt)


def _as_program(roots: list, retain_graph: bool) -> bool:
    """Whether a one-root pass ran as a whole-pass program (`programs.run`)."""
    if len(roots) != 1:
        return False
    (node, nr), g = roots[0]
    ga = g if type(g) is _ND else g._data if type(g) is Tensor else None
    return (nr == 0 and type(node).__base__ is BackwardNode and type(ga) is _ND
            and programs.run(node, ga, retain_graph))


def _start(roots: list, capture):
    """The pass's starting state: (dependency counts, gradient buffers holding the roots',
    the ready stack, {node: [(output nr, slot)]} of captured edges and the nodes leading to
    them (both None without `capture`))."""
    root_nodes = [e[0] for e, _ in roots]
    deps = _dependencies(root_nodes)
    buffers: dict = {}
    for (node, nr), g in roots:
        _add(buffers, node, nr, g, node.num_outputs > 1)
    targets = needed = None
    if capture is not None:
        targets = {}
        for (node, nr), slot in capture.items():
            targets.setdefault(node, []).append((nr, slot))
        needed = _needed(root_nodes, deps, set(targets))
    ready = [n for n in dict.fromkeys(root_nodes) if deps.get(n, 0) == 0]
    return deps, buffers, ready, targets, needed


def _steal(var: Tensor, g) -> bool:
    """A fresh gradient array nobody else holds becomes the leaf's `.grad` without a copy,
    when the leaf has no grad and no hooks (PyTorch steals an unshared gradient)."""
    if var.grad is None and var._backward_hooks is None and g.base is None and \
            g.flags.writeable and getrefcount(g) <= 3:  # the loop's, the argument, getrefcount's
        var.grad = wrap_array(g)
        return True
    return False


def _capture(captured: dict, slots: list, g, num_outputs: int) -> None:
    """`grad()`'s results: the gradient reaching a captured edge, summed over its arrivals."""
    for nr, slot in slots:
        gi = g if num_outputs == 1 else g[nr]
        if gi is not None:
            captured[slot] = gi if slot not in captured else _sum(captured[slot], gi)


def _tensor(g) -> Tensor:
    return wrap_array(g) if type(g) is _ND else g


def _sum_any(a, b):
    """The sum of two gradients of one output (ndarrays or Tensors)."""
    if type(a) is _ND and type(b) is _ND and a.shape == b.shape and a.dtype == b.dtype:
        return _added(a, b)
    return _sum(_tensor(a), _tensor(b))


# ---------------------------------------------------------------- user entry points


def _as_list(x) -> list:
    return [x] if isinstance(x, Tensor) else list(x)


def _root_grads(tensors: list, grads, what: str = "backward") -> list:
    if grads is None:
        grads = [None] * len(tensors)
    elif isinstance(grads, Tensor):
        grads = [grads]
    else:
        grads = list(grads)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad_tensors should have the same length as tensors: got "
                           f"{len(grads)} gradients and {len(tensors)} tensors")
    out = []
    for i, (t, g) in enumerate(zip(tensors, grads)):
        if not isinstance(t, Tensor):
            raise TypeError(f"{what}: element {i} of tensors is a {type(t).__name__}, "
                            "expected a Tensor")
        if g is None:
            if not t.requires_grad:
                out.append(None)
                continue
            arr = t._data
            if arr.size != 1:
                raise RuntimeError("grad can be implicitly created only for scalar outputs")
            if arr.dtype.kind != "f" and not t.dtype.is_floating_point:
                raise RuntimeError("grad can be implicitly created only for real scalar outputs "
                                   f"but got eager.{t.dtype.name}")
            g = Tensor._make(np.ones(arr.shape, arr.dtype) if type(arr) is np.ndarray
                             else arr * 0 + 1)
            out.append(g)  # t's own shape and dtype: nothing more to check
            continue
        elif not isinstance(g, Tensor):
            g = Tensor(g, dtype=t.dtype)
        if tuple(g.shape) != tuple(t.shape):
            raise RuntimeError(f"Mismatch in shape: grad_output[{i}] has a shape of "
                               f"eager.Size({list(g.shape)}) and output[{i}] has a shape of "
                               f"eager.Size({list(t.shape)}).")
        if g.dtype.is_complex != t.dtype.is_complex:
            raise RuntimeError(f"For complex Tensors, both grad_output and output are required "
                               f"to have the same dtype. Mismatch in dtype: grad_output[{i}] has "
                               f"a dtype of eager.{g.dtype.name} and output[{i}] has a dtype of "
                               f"eager.{t.dtype.name}.")
        out.append(g)
    return out


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """`eager.autograd.backward` (= `Tensor.backward`): accumulate the gradients of `tensors`
    w.r.t. the graph's leaves into their `.grad` (PyTorch's `torch.autograd.backward`).

    `grad_tensors`: one per tensor (None allowed for one-element tensors: ones); shapes must
    match (RuntimeError "Mismatch in shape"). `retain_graph` defaults to `create_graph`;
    without it the graph's saved tensors are freed, and a second pass raises RuntimeError.
    `create_graph=True` records the backward pass (higher-order gradients). `inputs`: only these
    tensors (leaves or not) get `.grad`. RuntimeError when no tensor requires grad."""
    if grad_tensors is None and inputs is None and not create_graph and type(tensors) is Tensor:
        fn = tensors.grad_fn  # the common call, `loss.backward()`: the same checks, shorter
        arr = tensors._data
        if fn is not None and tensors._base is None and tensors._backward_hooks is None and \
                fn.num_outputs == 1 and type(arr) is np.ndarray and arr.size == 1 and \
                arr.dtype.kind == "f" and not anomaly.is_anomaly_enabled():
            g = np.ones(arr.shape, arr.dtype)
            retain = bool(retain_graph)
            if type(fn).__base__ is not BackwardNode or not (programs.run_known(fn, g, retain) or
                                                    programs.run(fn, g, retain)):
                run_backward([((fn, 0), g)], retain, False, program=False)
            return
    tensors = _as_list(tensors)
    grads = _root_grads(tensors, grad_tensors)
    if retain_graph is None:
        retain_graph = create_graph
    for t in tensors:
        if not t.requires_grad:
            raise RuntimeError("element 0 of tensors does not require grad and does not have a "
                               "grad_fn")
    if create_graph and _leaves_warn_needed():
        warnings.warn("Using backward() with create_graph=True will create a reference cycle "
                      "between the parameter and its gradient which can cause a memory leak. "
                      "We recommend using autograd.grad when creating the graph to avoid this.",
                      UserWarning, stacklevel=3)
    roots = [(edge_of(t), g) for t, g in zip(tensors, grads)]
    if inputs is not None:
        inputs = _as_list(inputs)
        if not inputs:
            raise RuntimeError("'inputs' argument to backward() cannot be empty.")
        capture = {}
        for i, x in enumerate(inputs):
            if not x.requires_grad:
                raise RuntimeError("One of the differentiated Tensors does not require grad")
            capture[edge_of(x)] = i
        got = run_backward(roots, retain_graph, create_graph, capture, accumulate=False)
        for i, x in enumerate(inputs):
            gx = got.get(i)
            if gx is None:
                continue
            if x.grad_fn is None:
                grad_accumulator(x).accumulate(gx, create_graph)
            else:
                gx = gx if create_graph else Tensor._make(gx._data.copy())
                x.grad = gx if x.grad is None else x.grad + gx
        return
    run_backward(roots, retain_graph, create_graph)


def _leaves_warn_needed() -> bool:
    return False  # PyTorch warns only when a leaf gets a grad with history; kept quiet here


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """`eager.autograd.grad`: the gradients of `outputs` w.r.t. `inputs`, as a tuple (PyTorch's
    `torch.autograd.grad`); leaves' `.grad` are left untouched and only the part of the graph
    leading to `inputs` runs.

    Raises RuntimeError when an input does not require grad, when an input is not reached
    (unless `allow_unused`: None is returned for it, or zeros with `materialize_grads`), when an
    output does not require grad, and when a grad_output's shape differs from its output's."""
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported: loop over the batch "
                                  "of grad_outputs with retain_graph=True instead")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads"
                         "=True, but got: allow_unused=False.")
    outputs = _as_list(outputs)
    inputs = _as_list(inputs)
    if not inputs:
        raise RuntimeError("grad requires non-empty inputs.")
    grads = _root_grads(outputs, grad_outputs, "grad")
    if retain_graph is None:
        retain_graph = create_graph
    capture = {}
    for i, x in enumerate(inputs):
        if not isinstance(x, Tensor):
            raise TypeError(f"grad(): inputs must be Tensors, got {type(x).__name__}")
        if not x.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
        capture.setdefault(edge_of(x), i)
    roots = []
    for i, (t, g) in enumerate(zip(outputs, grads)):
        if not t.requires_grad:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have "
                               "a grad_fn")
        roots.append((edge_of(t), g))
    slots = {}
    for i, x in enumerate(inputs):  # the same tensor twice gets the gradient twice
        slots[i] = capture[edge_of(x)]
    captured = run_backward(roots, retain_graph, create_graph, capture, accumulate=False)
    result = []
    for i, x in enumerate(inputs):
        g = captured.get(slots[i])
        if g is None:
            if not allow_unused:
                raise RuntimeError(f"The differentiated Tensor at index {i} appears to not have "
                                   "been used in the graph. Set allow_unused=True if this is "
                                   "the desired behavior.")
            if materialize_grads:
                g = Tensor._make(np.zeros(tuple(x.shape), x.dtype.np))
        elif not create_graph and g.requires_grad:
            g = g.detach()
        result.append(g)
    return tuple(result)


_tensor_module.AUTOGRAD_BACKWARD[0] = backward  # Tensor.backward's target
