"""Graph outputs that are views: regenerated after the graph as eager views of their base.

A view op in a graph (`x[:, :2]`, `y.t()`) computes an array sharing memory with its input,
but the compiled graph hands it back as an unrelated Tensor: no `_base`, its own version
counter, an autograd history that an in-place op on the base cannot reach. Eager code after
the graph (the rest of a frame after a break, or the caller) that mutates the base would then
see the new values through the view but differentiate the old ones. As AOT autograd does for
output aliases, such an output is not returned by the graph: the graph returns its base (a
graph value or an input) and the view is re-applied eagerly on every call (`rebuild`), so it is
a real eager view (shared memory, `_base`, version counter, view autograd). This is done for
views of inputs always, and for views of graph values where eager code goes on after the graph
(a break's continuation, `Templater.alias_intermediates`); a function's returned view of a
value the graph computed stays a plain output (its base is not visible to the caller unless
also returned: then the two share memory but not autograd history; a known gap).

The view is replayed from the op tape (user-level attributes, re-canonicalised per call: valid
for every shape of a dynamic entry); a view that is no tape entry of its own (inside a
decomposition) is replayed from the node's attributes in static entries, and left a plain
graph output in dynamic ones. Touches `eager.dispatch`, `ir.Graph`, `capture`.
"""

from __future__ import annotations

from eager import grad_mode
from ir.graph import Node

from . import symints

BASE = "<base>"  # the slot of a view's inputs its base goes in
DETACH = "<detach>"  # a `detach()` (a view eager lets in-place ops modify), not a no_grad view
DATA = "<data>"  # a `.data` alias of an input (`writeback.note_alias`): its own version counter


def view_template(templater, node: Node):
    """("view", base template, op, inputs, attrs, grad_enabled) for graph value `node` when it
    is a view of another graph value or input, else None (a plain graph output)."""
    if node.op != "call_function" or node.target.kind != "view" or not node.args or \
            not isinstance(node.args[0], Node):
        return None
    base = node.args[0]
    out = templater.out
    if not templater.alias_intermediates and _root(base).op != "placeholder":
        return None
    entry = next((e for e in reversed(out.tape) if e.result is node), None)
    if entry is not None:
        tensors = [i for i in entry.inputs if isinstance(i, Node)]
        if tensors != [base]:
            return None
        op, inputs, attrs = entry.op, tuple(entry.inputs), dict(entry.attrs)
    elif out.dynamic_inputs:
        return None
    else:
        op, inputs, attrs = node.target, tuple(node.args), dict(node.kwargs)
    if any(isinstance(i, Node) and i is not base for i in inputs):
        return None
    base_t = node_template(templater, base)
    if base_t is None:
        return None
    if node.meta.get("detached"):  # `w = p.detach(); w.mul_(0.5)`: not a no_grad view
        return ("view", base_t, DETACH, (BASE,), {}, False)
    slots = tuple(BASE if i is base else i for i in inputs)
    t = ("view", base_t, op, slots, attrs, node.meta.get("grad_enabled", True))
    return t if not symints.has_sym(attrs) else _sym_view(templater, t)


def _sym_view(templater, t: tuple):
    """`t` whose attributes hold dynamic sizes (`view(B * T, C)`), with the templates of the
    tensors those sizes are read from: rebuilt from this call's shapes. None: an attribute
    reads a dynamic int argument (the view is then a graph output)."""
    nodes: dict = {}

    def walk(e):
        if e[0] == "size":
            nodes[e[1]] = None
        elif e[0] == "arg":
            raise LookupError
        elif e[0] != "const":
            walk(e[1])
            walk(e[2])

    def each(v):
        if type(v) is symints.SymInt:
            walk(v.expr)
        elif type(v) in (tuple, list, slice):
            for x in (v if type(v) is not slice else (v.start, v.stop, v.step)):
                each(x)

    try:
        for v in t[4].values():
            each(v)
    except LookupError:
        return None
    for n in list(nodes):
        got = nodes[n] = node_template(templater, n)
        if got is None:
            return None
    return (*t, nodes)


def _root(node: Node) -> Node:
    while node.op == "call_function" and node.target.kind == "view" and node.args and \
            isinstance(node.args[0], Node):
        node = node.args[0]
    return node


def node_template(templater, node: Node):
    """The template of graph value `node`: an input, a regenerated view, or a graph output."""
    out = templater.out
    if node.op == "placeholder":
        phs = out.graph.placeholders
        if len(phs) != len(out.input_sources) or node not in phs:
            return None
        return ("input", phs.index(node))
    view = view_template(templater, node)
    if view is not None:
        return view
    if node.op != "call_function":
        return None
    if node not in templater.outputs:
        templater.outputs.append(node)
    return ("graph", templater.outputs.index(node))


def rebuild_view(t: tuple, r):
    """The eager view of template `t` (its base rebuilt by `r`), under the grad mode its
    graph node was recorded in."""
    from eager.dispatch import apply

    _, base_t, op, slots, attrs, grad = t[:6]
    base = r(base_t)
    if len(t) > 6:  # (dynamic sizes: evaluated for this call's tensors)
        env = {n: r(s).shape for n, s in t[6].items()}
        attrs = {k: symints.resolve(v, env) for k, v in attrs.items()}
    if op == DETACH:
        return base.detach()
    if op == DATA:
        return base.data
    inputs = tuple(base if s is BASE else s for s in slots)
    prev = grad_mode.is_grad_enabled()
    if prev == grad:
        return apply(op, inputs, dict(attrs))
    grad_mode._set(grad)
    try:
        return apply(op, inputs, dict(attrs))
    finally:
        grad_mode._set(prev)
