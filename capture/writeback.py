"""Write-back of in-place ops on graph inputs (buffers, arguments, parameters under no_grad).

`x.add_(1)`, `running_mean.mul_(m).add_(v)`, `cache[:, a:b] = v` on a tensor the graph reads
as an input are recorded as their functional op; the input's tracker is rebound to the result
(`inplace_input`), and the final value is a graph output that the entry writes into the input's
own array after the graph ran (`apply`: a copy into the array, so every eager view of it sees the
change), bumping its version counter, before any eager code after the graph (a break's
continuation, the caller) runs. Later templates of the tracker are the input itself, so the
function returns the caller's tensor, as eager. Where exact, the compiled graph stores the
final value into the input's array itself (`codegen/inplace.py`, set up by `hits._fast_body`
and `aot.AOTGraph._alias`: an optimizer step or a BatchNorm statistic costs no copy): the
output is then the input's array, the copy is skipped (`out is input`) and the version and
mutation count still go up once.

With grad mode on, the result may require grad (`k_cache[:, :, pos] = k` with `k` from a
Linear, the cache a buffer that does not): after the write-back the input ends as eager leaves
it, `requires_grad` and a `grad_fn` that is the graph's autograd node (its output for the final
value), so a later backward through the input reaches the graph (`apply`). An input that itself
requires grad is mutated as eager mutates a non-leaf: its old history is the graph node's edge
(guarded: `grad_fn is not None`). The graph's saved values must not see the write: a mutated
input is fed to the graph as a copy of its old value with its history (`protect`), as eager's
in-place ops keep an operand they overwrite.

In-place ops on a `.data` or `detach()` alias of an input (`p.data.mul_(0.9)`, a soft target
update `tp.detach().mul_(1 - tau)`, `p.data = p.data.clamp(...)`) write the input outside
autograd (`inplace_alias`): it stays a leaf that requires grad; through `.data` only, its
version counter stays as eager's `.data` leaves it (the pair's grad item is None). A returned
alias is rebuilt as eager's `.data`/`detach()` of the input. A read of such a leaf with grad
later in the same graph reads the written value through a straight-through node whose
derivative reaches the leaf (`check_alias_grad`).

Sound only when exact; otherwise a graph break:
- a leaf that requires grad, mutated while grad mode is on (eager raises);
- with grad, an input that is itself a view (guarded: `_base is None`; eager rebases its base);
- a graph node views the input, or a view of a mutated value would be returned or rebuilt;
- the input shares memory with another tensor input (guarded: `disjoint`; seen at capture
  time, the frame runs eagerly);
- the graph reads the input's old value after the mutation through another tracker;
- the result's shape or dtype differs from the input's (eager casts or raises: run eagerly).
Touches `eager` (Tensor version counters), numpy, `capture`.
"""

from __future__ import annotations

import numpy as np

from eager.autograd.hooks import meta_of, move_retain_grad
from eager.tensor import MUTATIONS, Tensor, bump_version


def _is_view(n) -> bool:
    return n.op == "call_function" and n.target.kind == "view"


def inplace_input(tx, target, compute, views_ok: bool = False):
    """The in-place op `compute()` on graph input `target` (a placeholder's tracker).
    `views_ok`: the caller rebinds the input's live views (`viewwrites.inplace_view`)."""
    out = tx.out
    src = target.source
    if src is None or src not in out.input_sources or out.by_source.get(src) is not target:
        raise tx.unsupported("in-place op on a tensor that may alias a graph input or a view")
    if target.requires_grad and out.grad_enabled and _leaf(out.values.get(src)):
        raise tx.unsupported("in-place op on a leaf graph input that requires grad")
    if not views_ok and any(_is_view(u) for u in target.node.users) and \
            _live_views(tx, target.node):
        raise tx.unsupported("in-place op on a graph input that a graph view aliases")
    value = out.values.get(src)
    if value is None or shares_memory(out, src):
        raise tx.unsupported("in-place op on a graph input that shares memory with another")
    result = compute()
    if result.meta.shape != target.meta.shape or result.meta.dtype is not target.meta.dtype:
        raise tx.unsupported("in-place op whose result changes its target's shape or dtype")
    grad = out.grad_enabled and (result.requires_grad or target.requires_grad)
    if grad:
        if value._base is not None:
            raise tx.unsupported("in-place op with grad on a graph input that is a view")
        out.guards.add(f"{src}._base is None")
        if target.requires_grad:
            out.guards.add(f"{src}.grad_fn is not None")
    out.side_effects.rebind(target, result, target.requires_grad or grad, src)
    return target


def note_alias(tx, t, alias, kind: str):
    """`alias` (the graph value of `t.detach()` or `t.data`, `kind` "detach"/"data") made an
    alias of graph input `t` (or of another alias of it): in-place ops on it write the input
    (`inplace_alias`). Returns `alias`."""
    out = tx.out
    src = getattr(t, "alias_of", None)
    if src is None and t.source is not None and t.source in out.input_sources and \
            out.by_source.get(t.source) is t:
        src = t.source
    if src is not None:
        alias.alias_of, alias.alias_kind = src, kind
        out.aliases.setdefault(src, []).append(alias)
    return alias


def inplace_alias(tx, alias, compute):
    """An in-place op on `alias`, a `.data` or `detach()` of graph input `p` (a soft target
    update `tp.detach().mul_(1 - tau)`, `p.data.clamp_(-c, c)`): recorded outside autograd
    as its functional op, `p` and every alias of it rebound to the result, and `p` written
    back after the graph without grad (it stays a leaf that requires grad, as eagerly). Through
    `.data` only, the write-back leaves `p`'s version counter as eager's `.data` does (its own
    counter); through `detach()` it bumps it (a shared counter). A later read of `p` with
    grad in the same graph: `check_alias_grad`."""
    _write_alias(tx, alias.alias_of, alias.alias_kind, compute)
    return alias


def store_data(tx, t, value) -> None:
    """`p.data = v` on graph input `p` (`p.data = p.data.clamp(-c, c)`): `v`'s value written
    into `p` as through `.data` (no version bump) and `v` made an alias of `p` (eagerly they
    share memory from then on). A break unless `v` is a value the graph computed (not an
    input or a view) of `p`'s shape and dtype (eager swaps the memory for any)."""
    from .variables import TensorVariable

    out = tx.out
    src = t.source
    if src is None or src not in out.input_sources or out.by_source.get(src) is not t:
        raise tx.unsupported("setting Tensor attribute 'data' of a tensor that is not an input")
    if getattr(value, "alias_of", None) == src and value.node is t.node:
        return  # `p.data -= u`: the in-place op on the alias wrote p; p.data = p.data
    node = getattr(value, "node", None)
    if not isinstance(value, TensorVariable) or value.meta.shape != t.meta.shape or \
            value.meta.dtype is not t.meta.dtype or node.op != "call_function" or \
            node.target.kind == "view" or value.source is not None or \
            getattr(value, "alias_of", None) is not None:
        raise tx.unsupported("t.data = a tensor of another shape or dtype, or one that aliases "
                             "another")
    _write_alias(tx, src, "data", lambda: value)
    note_alias(tx, t, value, "data")


def _write_alias(tx, src: str, kind: str, compute) -> None:
    """`inplace_alias`'s write of `compute()` into input `src` (see there)."""
    out = tx.out
    base = out.by_source.get(src)
    if base is None or src not in out.input_sources or \
            (base.node.op != "placeholder" and src not in out.alias_writes):
        raise tx.unsupported("in-place op on a detached alias of a tensor mutated with grad")
    value = out.values.get(src)
    if value is None or shares_memory(out, src):
        raise tx.unsupported("in-place op on a graph input that shares memory with another")
    from .subscripts import _reachable_nodes, _views_of

    mine = {a.node for a in out.aliases.get(src, ())}
    if (_views_of(base.node) - mine) & _reachable_nodes(tx, 0):
        raise tx.unsupported("in-place op on a graph input that a graph view aliases")
    prev = out.grad_enabled
    out.grad_enabled = False
    try:
        result = compute()
    finally:
        out.grad_enabled = prev
    if result.meta.shape != base.meta.shape or result.meta.dtype is not base.meta.dtype:
        raise tx.unsupported("in-place op whose result changes its target's shape or dtype")
    if base.node.op == "placeholder":  # the leaf's own value, for `check_alias_grad`
        from .variables import TensorVariable

        out.alias_leaf[src] = TensorVariable(base.node, base.meta, base.requires_grad)
    se = out.side_effects
    se.rebind(base, result, base.requires_grad, src)
    for a in out.aliases.get(src, ()):
        se.rebind(a, result, False)
    if out.alias_writes.get(src) != "detach":
        out.alias_writes[src] = kind


def check_alias_grad(tx, inputs) -> None:
    """A graph read, with grad, of a leaf input after an in-place update through its
    `.data`/`detach()` (WGAN's `p.data.clamp_(-c, c)` before the critic's forward): the leaf's
    tracker becomes `where(isfinite(p), r - (p.detach() - p), r)` for the written value `r`:
    `r` exactly (`x - 0.0` is `x`, -0.0 included; non-finite `p` keep `r`), with the
    derivative 1 to the leaf, as eager's later ops differentiate the leaf holding `r`."""
    out = tx.out
    for src in out.alias_writes:
        var = out.writebacks.get(src)
        if var is None or var.node in out.alias_grad_nodes or not any(
                getattr(x, "requires_grad", False) and getattr(x, "node", None) is var.node
                for x in inputs):
            continue
        leaf = out.alias_leaf.get(src)
        if leaf is None or not leaf.requires_grad:
            raise tx.unsupported("a tensor read with grad after an in-place update through its "
                                 ".data or detach() in the same graph")
        st = _straight_through(tx, var, leaf)
        out.side_effects.rebind(var, st, True, src)
        out.alias_grad_nodes.add(st.node)


def _straight_through(tx, var, leaf):
    from ir import OpNamespace

    from .recording import record
    from .variables import TensorVariable

    out = tx.out
    ops = OpNamespace(lambda o, i, a: record(tx, o, i, a, False))
    r = TensorVariable(var.node, var.meta, False)
    held = out.mutated.pop(leaf.node, None)  # (reading the old value here is the point)
    prev, out.grad_enabled = out.grad_enabled, False
    try:
        d = ops.reshape(leaf, shape=tuple(leaf.meta.shape))  # (p.detach(): a no-grad node)
        d.requires_grad = False
        out.grad_enabled = True
        st = ops.where(ops.isfinite(d), ops.sub(r, ops.sub(d, leaf)), r)
    finally:
        out.grad_enabled = prev
        if held is not None:
            out.mutated[leaf.node] = held
    return st


def _live_views(tx, node) -> bool:
    """Whether a graph view of `node` is still held by a tracker of any frame of the capture
    (the top frame, the frames inlining it, the capture state): such a view must see the
    mutation, so the op breaks. Views that are dead (`F.linear`'s `weight.t()` in an earlier
    forward, before an EMA update of the weight) were read before the write, as eagerly."""
    from .subscripts import _reachable_nodes, _views_of

    out = tx.out  # (the `.data`/`detach()` aliases capture keeps are not the code's: SwAV's
    saved = out.aliases, out.alias_leaf  # `w = p.data.clone(); ...; p.copy_(w)`)
    out.aliases, out.alias_leaf = {}, {}
    try:
        return bool(_views_of(node) & _reachable_nodes(tx, 0))
    finally:
        out.aliases, out.alias_leaf = saved


def _leaf(t) -> bool:
    return t is None or t.grad_fn is None


def shares_memory(out, src: str) -> bool:
    """Whether input `src`'s array may share memory with any other tensor input's."""
    a = out.values[src]._data
    return any(s != src and np.may_share_memory(a, out.values[s]._data)
               for s in out.input_sources if s in out.values)


def check_stale(tx, inputs) -> None:
    """A graph read of an input's value from before its in-place mutation: a break."""
    mutated = tx.out.mutated
    if mutated and any(getattr(x, "node", None) in mutated for x in inputs):
        raise tx.unsupported("a graph input read after its in-place mutation through "
                             "another reference")


def disjoint(mutated: tuple, inputs: tuple) -> bool:
    """Guard term: no array of the tensors `inputs[i]`, i in `mutated`, shares memory with
    another of `inputs` (every tensor input). One pass over the inputs: arrays
    whose memory owners (`base`, or the array itself; numpy collapses a view of a view to the
    owner) are all distinct are apart; only when two share an owner (a view passed beside its
    base, one tensor passed twice) or an owner is not an array are they compared pairwise
    (`np.may_share_memory`). The guard of an entry with mutated buffers costs ~1 us, not one
    memory test per pair of inputs."""
    owners = set()
    for t in inputs:
        a = t._data
        b = a.base
        if b is None:
            owners.add(id(a))
        elif type(b) is np.ndarray:
            owners.add(id(b))
        else:
            break
    else:
        if len(owners) == len(inputs):
            return True
    return not any(i != j and np.may_share_memory(inputs[i]._data, o._data)
                   for i in mutated for j, o in enumerate(inputs))


def finish(out, templater) -> list:
    """At the end of a capture: the (input index, graph output index, with grad) triples to
    write back, and the guards that keep the mutated inputs apart from the other tensor
    inputs. Raises `ValueError` when a mutated input shares memory with another input now."""
    pairs = []
    if out.writebacks and len(out.input_sources) > 1:
        name = out.guards.name_for(disjoint, "___disjoint")
        mutated = "".join(f"{out.input_sources.index(s)}, " for s in out.writebacks)
        out.guards.add(f"{name}(({mutated}), ({''.join(s + ', ' for s in out.input_sources)}))")
    for src, var in out.writebacks.items():
        if shares_memory(out, src):
            raise ValueError(f"mutated input {src} shares memory with another input")
        if var.node.op == "placeholder":
            continue
        if var.node not in templater.outputs:
            templater.outputs.append(var.node)
        kind = out.alias_writes.get(src)
        grad = bool(var.requires_grad and out.grad_enabled) if kind is None else \
            (None if kind == "data" else False)
        pairs.append((out.input_sources.index(src), templater.outputs.index(var.node), grad))
    out.values.clear()  # (keeps no argument alive)
    return pairs


def final_template(templater, v):
    """("input", k) when tracker `v` is a mutated input (its value is written back), None
    when `v` is unrelated; a view of a mutated input's new value cannot be rebuilt exactly."""
    out = templater.out
    alias = _alias_template(out, v)
    if alias is not None:
        return alias
    wb = getattr(out, "writebacks", None)
    if not wb:
        return None
    if v.source in wb and wb[v.source] is v:
        return ("input", out.input_sources.index(v.source))
    finals = {w.node for w in wb.values()}
    n = v.node
    while _is_view(n) and n.args:
        n = n.args[0]
        if n in finals:
            from .resume import CannotResume

            raise CannotResume("a view of a tensor mutated in place")
    return None


def _alias_template(out, v):
    """A `.data` / `detach()` alias of a graph input holding the input's final value: rebuilt
    as eager's `.data` / `detach()` of the input after the write-back, else None."""
    src = getattr(v, "alias_of", None)
    base = out.by_source.get(src) if src is not None else None
    if base is None or src not in out.input_sources:
        return None
    n = v.node
    if n is not base.node and not (n.op == "call_function" and n.meta.get("detached") and
                                   n.args and n.args[0] is base.node):
        return None
    from .aliases import BASE, DATA, DETACH

    return ("view", ("input", out.input_sources.index(src)),
            DATA if v.alias_kind == "data" else DETACH, (BASE,), {}, False)


def protect(pairs, inputs: list) -> list:
    """The graph's inputs with each input mutated with grad replaced by a copy of its value
    that carries its history (grad_fn, output_nr, requires_grad): what the graph's autograd
    node saves and links to must survive the write-back (eager's `keep_old_operand`)."""
    inputs = list(inputs)
    for i, _, grad in pairs:
        if grad:
            t = inputs[i]
            old = Tensor._make(t._data.copy())
            old.requires_grad, old.grad_fn = t.requires_grad, t.grad_fn
            m = t._backward_hooks
            if m is not None and m.output_nr:
                meta_of(old).output_nr = m.output_nr
            inputs[i] = old
    return inputs


def write_one(dst, new, bump=True) -> None:
    """Write tensor `new`'s value into input `dst`'s own array and bump `dst`'s version (a
    cache hit's write-back without grad, and the first step of `apply`; `bump` False: a write
    through `.data`, which counts as a mutation but leaves the version). Capture checked
    that both have one shape and dtype, so `a[...] = b` is numpy's `copyto` (4x cheaper on
    small buffers than `np.copyto`'s dispatch) and also serves device arrays."""
    dst._data[...] = new._data
    if bump:
        bump_version(dst)
    else:
        MUTATIONS[0] += 1


def apply(pairs, inputs, outs, originals=None) -> None:
    """Write each mutated input's final value into its own array, bumping its version (not
    for a pair whose grad item is None: written through `.data`); an
    input whose final value requires grad takes that value's history (`grad_fn`, output
    number, `requires_grad`), as eager's in-place op rebinds its target's history.
    `originals`: the caller's tensors when `inputs` are `protect`ed copies."""
    for i, k, grad in pairs:
        dst, new = (originals or inputs)[i], outs[k]
        write_one(dst, new, grad is not None)
        if grad and new.requires_grad:
            old_fn = dst.grad_fn
            dst.requires_grad, dst.grad_fn = True, new.grad_fn
            m = new._backward_hooks
            nr = m.output_nr if m is not None else 0
            if nr or dst._backward_hooks is not None:
                meta_of(dst).output_nr = nr
            if new.grad_fn is not None:
                move_retain_grad(dst, old_fn, new.grad_fn)
