"""Backward plans: a node's backward rule recorded once as a graph, then run as straight-line
numpy code.

Without `create_graph`, a `BackwardNode` runs the same rule for the same op, attributes,
operand shapes/dtypes (and Python-number operand values) again and again (every training
step). The first time, the rule is recorded on metadata by `ir.autodiff.Recorder` (the recorder
AOT backward graphs are built with) and its results finished by `ir.autodiff.finish_grad` (the
reduction/cast eager's engine applies, `nodes.finish_grads`); `ir.passes` drop no-op views and
the steps no needed gradient depends on, and `ir.array_code` prints the graph as a Python
function calling each op's kernel on arrays, cached under that key. Later calls only build the
key and call the function: the rule's dispatch overhead disappears, and gradients nobody needs
are never computed. A rule that looks at data (not only at shapes) or uses a data-dependent op
cannot be recorded: its op goes the lazy way (`lazy.LF`) from then on.

One mechanism with compiled autograd, at the scale of one node. Imports `ir` and eager's
Tensor; used by `engine.BackwardNode.apply` and `programs.py`.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D
from ir.array_code import Unprintable, array_function
from ir.autodiff import Recorder, Value, finish_grad
from ir.graph import Graph
from ir.opdef import TensorMeta
from ir.passes import drop_noop_views

from ..caches import remember
from ..tensor import Tensor, wrap_array
from . import nodes

_UNTRACEABLE: set = set()  # op names whose rules read data
PLANS: dict = {}
MAX_PLANS = 4096


class Untraceable(Exception):
    """The rule needs data (or a data-dependent op): it cannot become a plan."""


def _whole(op, metas: tuple, attrs: dict) -> bool:
    """Whether a composite a rule calls is one step (eager runs it whole, `eager_impl`, with
    the decomposition's exact results) rather than its decomposition's steps."""
    return op.eager_applies is not None and not op.eager_impl_rounding and \
        all(not isinstance(m, list) for m in metas) and op.eager_applies(metas, attrs)


class _PlanRecorder(Recorder):
    """`ir.autodiff.Recorder` refusing what a plan cannot hold: data-dependent ops, and
    tensors the rule made outside its ops (from data)."""

    def apply(self, op, inputs, attrs):
        if op.dynamic_shape or any(isinstance(x, Tensor) for x in inputs):
            raise Untraceable
        return super().apply(op, inputs, attrs)


def build(node, g):
    """The plan function of `node`'s rule for gradient `g` (a Tensor: its shape and dtype), or
    None (untraceable). The rule is recorded by `ir.autodiff`'s recorder, as AOT backward
    graphs are, and finished by its `finish_grad`; no-op views and dead steps go by ir passes;
    `ir.array_code` prints the graph as the function."""
    op = node.op
    graph = Graph(f"{op.name}_backward")
    rec = _PlanRecorder(graph, whole=_whole)
    names = {}

    def placeholder(name, meta):
        p = graph.placeholder(name, meta)
        names[p] = name
        return Value(p)

    g_val = placeholder("g", g.meta)
    out_val = placeholder("out", TensorMeta(node.out_data.shape, _dtype(node.out_data), "cpu"))
    args = [placeholder(f"a{i}", x.meta) if isinstance(x, Tensor) else x
            for i, x in enumerate(node.saved)]
    signature = ["g", "out"] + [f"a{i}" for i in range(len(args))]  # (numbers: unread)
    try:
        grads = op.backward(rec.F, g_val, out_val, *args, **node.attrs)
        results = []
        for x, gx, (nxt, _) in zip(args, grads, node.next_functions):
            if nxt is None or gx is None:
                results.append(None)
                continue
            gx = finish_grad(rec.F, gx, tuple(x.shape), x.dtype, g_val)
            if not isinstance(gx, Value):
                raise Untraceable
            results.append(gx.node)
        graph.output(tuple(results))
        drop_noop_views(graph)
        graph.eliminate_dead_code()
        return array_function(graph, names, signature, filename=f"<backward plan of {op.name}>")
    except (Untraceable, Unprintable):
        _UNTRACEABLE.add(op.name)
        return None
    except Exception:  # noqa: BLE001  (the generic path raises it with its own message)
        return None


_ND = np.ndarray
_DEFAULT = D._default_float  # [the default dtype]: read by get_default_dtype()


# Caches built from plans (programs.py registers its own): emptied with PLANS.
DERIVED: list = []


def clear() -> None:
    """Forget every traced plan, and the backward programs (`programs.py`) built from them."""
    PLANS.clear()
    for cache in DERIVED:
        cache.clear()


def _dtype(a):
    return D.from_numpy(a.dtype)


def run_arrays(node, ga) -> list | None:
    """The node's gradients through its plan, as ndarrays (None where no gradient), for the
    gradient array `ga` of its output; or None to go the generic way (no plan possible, or
    stale/freed saved tensors: the generic path raises for those). The plan key: the op, the
    default dtype, the gradient's and the output's shape and dtype, the attributes, each
    operand's shape and dtype (("n", type, value) for a Python number), which edges exist."""
    saved = node.saved
    if saved is None or node.out_vc[0] != node.out_version:
        return None
    op = node.op
    name = op.name
    if name in _UNTRACEABLE:
        return None
    oa = node.out_data
    attrs = node.attrs
    key = [name, _DEFAULT[0], ga.shape, ga.dtype, oa.shape, oa.dtype,
           tuple(attrs.items()) if attrs else None]
    args = [ga, oa]
    kadd = key.append
    aadd = args.append
    for x, v in zip(saved, node.versions):
        if v is None:  # a Python number operand
            kadd(("n", type(x), x))
            aadd(x)
        else:
            if x._vc[0] != v:
                return None
            a = x._data
            if type(a) is not _ND:
                return None
            kadd(a.shape)
            kadd(a.dtype)
            aadd(a)
    for nxt, _ in node.next_functions:
        kadd(nxt is not None)
    key = tuple(key)
    node._pkey = key  # (release keeps it as the operands' metadata)
    try:
        fn = PLANS.get(key)
    except TypeError:  # an unhashable attribute
        return None
    if fn is None:
        if key in PLANS:
            return None
        fn = remember(PLANS, key, build(node, wrap_array(ga)), MAX_PLANS)
        if fn is None:
            return None
    return fn(*args)


def run(node, g) -> list | None:
    """`run_arrays` for a Tensor gradient `g`, with the results as plain Tensors."""
    ga = g._data
    if type(ga) is not _ND:
        return None
    res = run_arrays(node, ga)
    if res is None:
        return None
    for i, r in enumerate(res):
        if r is not None:
            res[i] = wrap_array(r)
    r = None
    return res


nodes.PLAN_RUN[0] = run
