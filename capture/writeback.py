"""Write-back of in-place ops on graph inputs (buffers, arguments, parameters under no_grad).

`x.add_(1)`, `running_mean.mul_(m).add_(v)`, `cache[:, a:b] = v` on a tensor the graph reads
as an input are recorded as their functional op; the input's tracker is rebound to the result
(`inplace_input`), and the final value is a graph output that the entry writes into the input's
own array after the graph ran (`apply`: numpy `copyto`, so every eager view of it sees the
change), bumping its version counter, before any eager code after the graph (a break's
continuation, the caller) runs. Later templates of the tracker are the input itself, so the
function returns the caller's tensor, as eager.

Sound only when exact; otherwise a graph break, as before:
- the input (or the result) requires grad while grad mode is on (eager would record history);
- a graph node views the input, or a view of a mutated value would be returned or rebuilt;
- the input shares memory with another tensor input (guarded: `disjoint`; seen at capture
  time, the frame runs eagerly);
- the graph reads the input's old value after the mutation through another tracker;
- the result's shape or dtype differs from the input's (eager casts or raises: run eagerly).
Touches `eager` (Tensor version counters), numpy, `capture`.
"""

from __future__ import annotations

import numpy as np

from eager.tensor import bump_version


def _is_view(n) -> bool:
    return n.op == "call_function" and n.target.kind == "view"


def inplace_input(tx, target, compute):
    """The in-place op `compute()` on graph input `target` (a placeholder's tracker)."""
    out = tx.out
    src = target.source
    if src is None or src not in out.input_sources or out.by_source.get(src) is not target:
        raise tx.unsupported("in-place op on a tensor that may alias a graph input or a view")
    if target.requires_grad and out.grad_enabled:
        raise tx.unsupported("in-place op on a graph input that requires grad")
    if any(_is_view(u) for u in target.node.users):
        raise tx.unsupported("in-place op on a graph input that a graph view aliases")
    value = out.values.get(src)
    if value is None or shares_memory(out, src):
        raise tx.unsupported("in-place op on a graph input that shares memory with another")
    result = compute()
    if result.meta.shape != target.meta.shape or result.meta.dtype is not target.meta.dtype:
        raise tx.unsupported("in-place op whose result changes its target's shape or dtype")
    if result.requires_grad and out.grad_enabled:
        raise tx.unsupported("in-place op on a graph input with a result that requires grad")
    out.mutated.setdefault(target.node, target)
    out.writebacks[src] = target
    target.node, target.meta, target.shadow = result.node, result.meta, result.shadow
    return target


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


def disjoint(a, others) -> bool:
    """Guard term: tensor `a`'s array shares no memory with any of `others`'."""
    d = a._data
    return not any(np.may_share_memory(d, o._data) for o in others)


def finish(out, templater) -> list:
    """At the end of a capture: the (input index, graph output index) pairs to write back, and
    the guards that keep the mutated inputs apart from the other tensor inputs. Raises
    `ValueError` when a mutated input shares memory with another input now."""
    pairs = []
    for src, var in out.writebacks.items():
        if shares_memory(out, src):
            raise ValueError(f"mutated input {src} shares memory with another input")
        others = [s for s in out.input_sources if s != src]
        if others:
            name = out.guards.name_for(disjoint, "___disjoint")
            out.guards.add(f"{name}({src}, ({''.join(s + ', ' for s in others)}))")
        if var.node.op == "placeholder":
            continue
        if var.node not in templater.outputs:
            templater.outputs.append(var.node)
        pairs.append((out.input_sources.index(src), templater.outputs.index(var.node)))
    out.values.clear()  # (keeps no argument alive)
    return pairs


def final_template(templater, v):
    """("input", k) when tracker `v` is a mutated input (its value is written back), None
    when `v` is unrelated; a view of a mutated input's new value cannot be rebuilt exactly."""
    out = templater.out
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


def apply(pairs, inputs, outs) -> None:
    """Write each mutated input's final value into its own array, bumping its version."""
    for i, k in pairs:
        dst, new = inputs[i], outs[k]
        if isinstance(dst._data, np.ndarray) and isinstance(new._data, np.ndarray):
            np.copyto(dst._data, new._data)
        else:
            dst._data[...] = new._data
        bump_version(dst)
