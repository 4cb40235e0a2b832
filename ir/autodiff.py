"""AOT autograd on graphs: record ops into a new `Graph`, and build a forward graph's backward.

`Recorder` records registry ops (through an `OpNamespace`) into a Graph; its values are
`Value`s that show the `shape`/`dtype`/`ndim` the registry's decompositions and backward rules
read, and composites are recorded as their decomposition. `build_backward(fwd, wrt)` walks a
forward graph in reverse and calls each node's registry `backward` rule on the recorder, giving
a backward graph whose placeholders are the forward values it needs (saved) and one gradient
per forward output, and whose outputs are the gradients of the placeholders `wrt`; the caller
(`capture/aot.py`) compiles it like any graph, so backward passes are fused too
(AOT-autograd style; PyTorch's `torch._functorch.aot_autograd`). Gradients follow eager's
engine: broadcast gradients are summed back to each operand's shape and cast to its dtype.

Composites stay decomposed in forward graphs (primitives fuse), but the node a composite's
decomposition returns is marked (`mark_composite`: `meta["composite"]`, the op with its
operands and attributes). Where eager records the composite as one node (`op.eager_applies`),
`build_backward` differentiates the marked node by the op's `eager_backward`, straight to the
composite's operands, as eager's engine does: the same rule, not a second derivation through
the primitives (whose NaN/inf placement differs: softmax's). Imports only `ir`.
"""

from __future__ import annotations

from .graph import Graph, Node, map_arg, op_meta
from .opdef import MetaView, OpNamespace, TensorMeta, is_number, sum_to_shape
from .passes.views import drop_noop_views


class Value(MetaView):
    """A recorded graph value, with the tensor metadata rules read (`x.shape`, `x.dtype`)."""

    __slots__ = ("node",)

    def __init__(self, node: Node):
        self.node = node

    @property
    def meta(self) -> TensorMeta:
        return self.node.meta["val"]

    def __repr__(self) -> str:
        return f"Value(%{self.node.name}: {self.meta})"


class Recorder:
    """Records registry ops into `graph`: `self.F`. Composites are recorded as their
    decompositions, or as one node where `whole(op, metas, attrs)` says so (eager's backward
    plans keep what eager runs whole, `eager_impl`, as one step)."""

    def __init__(self, graph: Graph, whole=None):
        self.graph = graph
        self.whole = whole
        self.F = OpNamespace(self.apply)

    def apply(self, op, inputs, attrs):
        if op.decomp is not None and self.whole is None:
            return op.decomp(self.F, *inputs, **attrs)
        nodes = _node_of(tuple(inputs))
        metas = tuple(a.meta["val"] if isinstance(a, Node) else a for a in nodes)
        if op.decomp is not None:
            attrs = op.canonical_attrs(metas, attrs)
            meta = op_meta(op, metas, attrs) if self.whole(op, metas, attrs) else None
            if not isinstance(meta, TensorMeta):  # (several outputs: their steps)
                return op.decomp(self.F, *inputs, **attrs)
            return Value(self.graph.call_function(op, nodes, attrs, val=meta))
        attrs = op.canonical_attrs(metas, _node_of(dict(attrs)))
        return Value(self.graph.call_function(op, nodes, attrs, val=op.meta(metas, attrs)))


def mark_composite(node, op, operands: tuple, attrs: dict) -> None:
    """Mark `node`, the value the decomposition of the composite `op(*operands, **attrs)`
    returned (operands: Nodes of the same graph, or numbers), so that `build_backward` can
    differentiate it by `op.eager_backward`. Nothing for ops without one, results that are
    not call_function nodes or are operands (an identity decomposition)."""
    if (op.eager_backward is not None and isinstance(node, Node) and node.op == "call_function"
            and not any(node is x for x in operands)):
        # a composite whose decomposition ends in another's result marks the same node again:
        # marks go innermost first
        node.meta["composite"] = node.meta.get("composite", ()) + (
            (op, tuple(operands), dict(attrs)),)


def composites(node) -> list:
    """The composites (op, operands, attrs) marked on `node` by `mark_composite` whose operand
    Nodes are of `node`'s graph, outermost first."""
    return [m for m in reversed(node.meta.get("composite", ()))
            if all(not isinstance(x, Node) or x.graph is node.graph for x in m[1])]


def whole_rule(node):
    """(op, operands, attrs) of the outermost composite marked on `node` (`mark_composite`)
    that eager runs as one node (`eager_applies`, every operand a tensor), or None: `node` is
    differentiated by its own op's rule."""
    for op, operands, attrs in composites(node):
        if op.eager_applies is None or not all(isinstance(x, Node) for x in operands):
            continue
        try:
            if op.eager_applies(tuple(x.meta["val"] for x in operands), attrs):
                return op, operands, attrs
        except Exception:  # noqa: BLE001 (an unexpected meta: eager's condition is not met)
            continue
    return None


def copy_graph(graph: Graph, node_fn=None, name=None, extra_outputs=()):
    """A copy of `graph`; `node_fn(rec, node, args, kwargs)` may return the value of a
    call_function node (a Value, a tuple or a number) instead of a plain copy; the copies of
    the nodes `extra_outputs` are returned after the graph's outputs. Returns (graph, env)."""
    out = Graph(name or graph.name)
    rec = Recorder(out)
    env: dict = {}

    def get(n):
        return env[n]

    for n in graph.nodes:
        if n.op == "placeholder":
            p = out.placeholder(n.name, n.meta.get("val"))
            p.meta.update(n.meta)
            env[n] = Value(p)
        elif n.op == "output":
            out.output(_node_of(map_arg(tuple(n.args[0]) + tuple(extra_outputs), get)))
        else:
            args = map_arg(n.args, get)
            kwargs = map_arg(n.kwargs, get)
            r = node_fn(rec, n, args, kwargs) if node_fn else None
            if r is None:
                node = out.call_function(n.target, _node_of(args), _node_of(kwargs),
                                         val=n.meta.get("val"), source=n.meta.get("source"))
                node.meta.update({k: v for k, v in n.meta.items()
                                  if k not in ("val", "composite")})
                r = Value(node)
            for op, operands, attrs in n.meta.get("composite", ()):
                if all(not isinstance(x, Node) or x in env for x in operands):
                    mark_composite(_node_of(r), op, _node_of(map_arg(operands, get)), attrs)
            env[n] = r
    return out, env


def _node_of(v):
    """Values (inside tuples, lists and dicts too) back to their Nodes."""
    if isinstance(v, Value):
        return v.node
    if isinstance(v, (tuple, list)):
        return type(v)(_node_of(x) for x in v)
    if isinstance(v, dict):
        return {k: _node_of(x) for k, x in v.items()}
    return v


def grad_paths(fwd: Graph, wrt) -> set:
    """The placeholders `wrt` (one bool per placeholder) and every node on a path from them
    through differentiable ops: the values eager autograd records (`requires_grad` results)."""
    needs = {p for p, w in zip(fwd.placeholders, wrt) if w}
    for n in fwd.nodes:  # (a node recorded under no_grad, meta grad_enabled False, ends a path)
        if (n.op == "call_function" and n.target.differentiable
                and n.meta.get("grad_enabled", True)
                and any(a in needs for a in n.all_input_nodes) and _float_result(n)):
            needs.add(n)
    return needs


def _float_result(n: Node) -> bool:
    """Whether `n` has a float or complex result (an integer or bool one ends a gradient path,
    as eager's outputs of such dtypes never require grad)."""
    v = n.meta.get("val")
    vals = v if isinstance(v, (tuple, list)) else (v,)
    return any(getattr(x, "dtype", None) is None or x.dtype.category >= 2 for x in vals)


def build_backward(fwd: Graph, wrt: list, seeded=None):
    """The backward graph of `fwd` with respect to its placeholders `wrt` (a list of bools, one
    per placeholder).

    Returns (bwd, saved) where `saved` lists the forward Nodes whose values the backward reads
    (in the order of bwd's first placeholders), followed in bwd by one placeholder per forward
    output ("grad_<name>", the incoming gradient; outputs that are not tensors get none). bwd
    returns one gradient per placeholder of `fwd` with wrt True (None where no gradient flows).
    `seeded` (one bool per output, default all) names the outputs whose incoming gradient is
    used: the others received none (eager's engine never reaches what only they depend on, so
    an input reached only through them gets None, and a non-finite saved value there cannot
    turn a zero gradient into NaN). Raises RuntimeError when a node on a gradient path has no
    backward rule.
    """
    bwd = Graph(fwd.name + "_backward")
    rec = Recorder(bwd)
    F = rec.F
    saved: dict = {}   # forward node -> Value in bwd

    def fv(n: Node):
        """The forward value `n` as seen from the backward graph (a saved placeholder)."""
        if n not in saved:
            p = bwd.placeholder(f"saved_{n.name}", n.meta["val"])
            saved[n] = Value(p)
        return saved[n]

    needs = grad_paths(fwd, wrt)
    grads, grad_ph = _seed_grads(fwd, bwd, needs, seeded)
    when: dict = {}  # node -> when its gradient exists (`_presence`); absent: always
    for n in reversed(fwd.nodes):
        if n.op != "call_function" or n not in grads or n not in needs:
            continue
        before = {a: len(grads.get(a, ())) for a in n.args if isinstance(a, Node)}
        backprop_node(F, n, sum_grads(F, grads.pop(n)), fv, needs, grads)
        _presence(n, when.pop(n, None), before, grads, when)
    result, presence = [], []
    for p, w in zip(fwd.placeholders, wrt):
        if not w:
            continue
        gs = grads.get(p)
        result.append(sum_grads(F, gs).node if gs else None)
        presence.append(when.get(p) if gs else None)
    final, kept = _final_backward(bwd, saved, grad_ph, result)
    final.grad_presence = presence if any(c is not None for c in presence) else None
    return final, kept


def _presence(n: Node, cond, before: dict, grads: dict, when: dict) -> None:
    """Record when the gradients `n` just gave its operands exist in eager: a user's
    `autograd.Function` backward (`_autograd_fn_`) may return None for an input, and eager's
    gradient of a value is None when every contribution is. A condition is None (always) or
    a frozenset of conjunctions, each a frozenset of atoms (key, i): "the Function `key`'s
    backward returned a gradient for its i-th input" (`custom_function.holds` evaluates it
    after the graph's backward ran). Contributions join by union; `cond` is `n`'s own."""
    token = getattr(n.target, "name", None) == "_autograd_fn_" and n.kwargs.get("key", 0)
    for a, had in before.items():
        if len(grads.get(a, ())) == had:
            continue
        c = cond
        if token:  # (the token's gradients go to its first n_wrt operands only)
            atoms = [frozenset({(token, i)}) for i, b in enumerate(n.args)
                     if b is a and i < n.kwargs.get("n_wrt", 0)]
            c = frozenset(atoms) if c is None else frozenset(k | t for k in c for t in atoms)
        if before.get(a, 0) == 0:
            when[a] = c
        elif c is None or when.get(a) is None:
            when[a] = None
        else:
            when[a] = when[a] | c


def sum_grads(F, gs: list):
    """The gradients reaching one value, added in the order they arrived."""
    g = gs[0]
    for extra in gs[1:]:
        g = F.add(g, extra)
    return g


def _seed_grads(fwd: Graph, bwd: Graph, needs: set, seeded):
    """One incoming-gradient placeholder per tensor output of `fwd` (grad_ph, in output order)
    and the gradients they seed ({forward node: [Value]}, for the `seeded` outputs on a path)."""
    outs = fwd.output_node.args[0]
    seeded = (True,) * len(outs) if seeded is None else tuple(seeded)
    grads: dict = {}
    grad_ph = []
    for i, o in enumerate(outs):
        if isinstance(o, Node):
            g = Value(bwd.placeholder(f"grad_{i}_{o.name}", o.meta["val"]))
            grad_ph.append(g)
            if o in needs and seeded[i]:
                grads[o] = grads[o] + [g] if o in grads else [g]
    return grads, grad_ph


def backprop_node(F, n: Node, g, fv, needs: set, grads: dict) -> None:
    """Apply `n`'s backward rule to its gradient `g`, adding each operand's gradient (summed to
    the operand's shape, cast to its dtype) to `grads`; `fv` gives saved forward values."""
    whole = whole_rule(n)
    if whole is not None:  # a composite eager records as one node: eager's rule
        op, operands, attrs = whole
        rule = op.eager_backward
    else:
        op, operands, attrs, rule = n.target, n.args, n.kwargs, n.target.backward
    if rule is None:
        raise RuntimeError(f"{op.name} has no backward rule: cannot differentiate %{n.name}")
    args = tuple(fv(a) if isinstance(a, Node) else a for a in operands)
    out_grads = rule(F, g, fv(n), *args, **attrs)
    for a, ga in zip(operands, out_grads):
        if not isinstance(a, Node) or a not in needs or ga is None:
            continue
        val = a.meta["val"]
        ga = finish_grad(F, ga, tuple(val.shape), val.dtype, g)
        grads[a] = grads[a] + [ga] if a in grads else [ga]


def finish_grad(F, ga, shape: tuple, dtype, g):
    """A rule's gradient `ga` for an operand of `shape` and `dtype`, as both autograds (AOT
    here, eager's engine) deliver it: a number (a rule's zero) becomes zeros of that shape
    (made from the incoming gradient `g`'s device: no NaN of `g` leaks in), a broadcast
    gradient is summed back to `shape` (`sum_to_shape`), and the dtype is the operand's; a
    complex gradient of a real operand keeps its real part (PyTorch's handle_r_to_c)."""
    if is_number(ga):
        return F.new_zeros(g, shape, dtype=dtype)
    if tuple(ga.shape) != shape:
        ga = sum_to_shape(F, ga, shape)
    if ga.dtype is not dtype:
        if ga.dtype.is_complex and not dtype.is_complex:
            ga = F.real(ga)
            if ga.dtype is dtype:
                return ga
        ga = F.cast(ga, dtype)
    return ga


def _final_backward(bwd: Graph, saved: dict, grad_ph: list, result: list):
    """The backward graph in its final form: saved values first, then incoming gradients, then
    the body (views to the same shape dropped, dead code and unread saved values pruned).
    Returns (graph, the forward nodes still saved, in placeholder order)."""
    saved_nodes = list(saved)
    final = Graph(bwd.name)
    m: dict = {}
    for n in saved_nodes:
        m[saved[n].node] = final.placeholder(saved[n].node.name, n.meta["val"])
    for g in grad_ph:
        m[g.node] = final.placeholder(g.node.name, g.meta)
    for n in bwd.nodes:
        if n.op == "call_function":
            m[n] = final.call_function(n.target, map_arg(n.args, m.__getitem__),
                                       map_arg(n.kwargs, m.__getitem__), val=n.meta["val"])
    final.output(tuple(m[r] if r is not None else None for r in result))
    drop_noop_views(final)  # a view to the same shape: no node, no library call
    final.eliminate_dead_code()
    # a saved value the pruned backward no longer reads is neither a placeholder nor saved
    keep = []
    for n in saved_nodes:
        p = m[saved[n].node]
        if p.users:
            keep.append(n)
        else:
            final.erase_node(p)
    return final, keep

def decompose(graph: Graph) -> Graph:
    """A copy of `graph` with single-output composite nodes replaced by their registry
    `decomp`, or `graph` itself when it has none (a decomposition that fails or returns
    several values leaves its node as it is)."""
    if not any(n.op == "call_function" and n.target.decomp is not None for n in graph.nodes):
        return graph

    def expand(rec, node, args, kwargs):
        if node.target.decomp is None:
            return None
        start = len(rec.graph.nodes)
        try:
            r = node.target.decomp(rec.F, *args, **kwargs)
        except Exception:  # noqa: BLE001 (keep the composite node: it runs as a library call)
            return None
        if not isinstance(r, Value):
            return None
        if node.meta.get("grad_enabled", True) is False:  # its steps ran under no_grad too
            for n in list(rec.graph.nodes)[start:]:
                n.meta["grad_enabled"] = False
        mark_composite(r.node, node.target, _node_of(args), kwargs)
        return r

    out, _ = copy_graph(graph, expand)
    out.eliminate_dead_code()
    return out
