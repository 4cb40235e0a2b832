"""Backward programs: a whole backward pass run as one generated function.

A training loop builds the same graph at every step: the same ops on the same shapes, wired the
same way. The engine's loop (`engine._run_plain`) then repeats the same bookkeeping for every
node of every step: counting dependencies, finding the node's plan, routing gradients through
dicts, releasing saved tensors. Here the pass is walked once per call to read its structure
(each node's plan key, as `plans.run_arrays` builds it, and its edges, numbered in discovery
order); the second time a structure is seen it becomes straight-line Python source: each
node's plan written in place in the engine's own order, fan-in sums, leaf accumulation and
releases. Later steps with the same structure walk the graph and call that function. (A
structure seen once, such as one with a Python number that changes every step, stays with
the loop.)

Only plain passes qualify (the engine checks create_graph, anomaly mode and captures first):
`BackwardNode`s with traceable plans and no hooks, leaves without hooks, one root, CPU arrays.
Anything else returns False before touching anything, and the engine's loop runs instead.
The gradients are the loop's, bit for bit: the same plans, the same order of sums.

`program_source(root)` returns the source of the program a graph would get (for reading).
"""

from __future__ import annotations

import builtins
import dis
import re
from sys import getrefcount

import numpy as np

from ir.array_code import B, fix

from ..caches import remember
from ..tensor import MUTATIONS, Tensor, wrap_array
from . import plans
from .lazy import added_arrays
from .nodes import AccumulateGrad, BackwardNode, _camel

_ND = np.ndarray
PROGRAMS: dict = {}
SEEN: dict = {}  # structures seen once
BY_ID: dict = {}  # a root's structure id (`record`) -> its program behind guards (`_guarded`)
MAX_PROGRAMS = 512
plans.DERIVED += (PROGRAMS, SEEN, BY_ID)  # (emptied with the plans they were built from)
MAX_NODES = 256  # larger graphs: the engine's loop (a program's source grows with the graph)


def _walk(root):
    """(signature, nodes) of the graph under `root`, or None when some node does not qualify.
    Nodes are numbered in breadth-first discovery order. The signature is one flat tuple: the
    default dtype, then per BackwardNode its op name, attributes, output shape and dtype,
    operand count, each operand's shape and dtype (("n", type, value) for a Python number)
    and its edge targets (-1: none); None for a leaf. `_entries` reads it back."""
    nodes = [root]
    index = {root: 0}
    sig = [plans._DEFAULT[0]]
    s = sig.append
    nodes_add = nodes.append
    for n in nodes:  # (the list grows as nodes are discovered: breadth first)
        tn = type(n)
        if tn is AccumulateGrad:
            m = n.variable._backward_hooks
            if n._hk is not None or m is not None and (m.hooks or m.post_acc):
                return None
            s(None)
            continue
        if tn.__base__ is not BackwardNode or n._hk is not None:
            return None
        saved = n.saved
        if saved is None or n.out_vc[0] != n.out_version:
            return None
        oa = n.out_data
        if type(oa) is not _ND:
            return None
        attrs = n.attrs
        sig += (n.op.name, tuple(attrs.items()) if attrs else None, oa.shape, oa.dtype,
                len(saved))
        for x, v in zip(saved, n.versions):
            if v is None:  # a Python number operand
                s(("n", type(x), x))
            else:
                if x._vc[0] != v:
                    return None
                xa = x._data
                if type(xa) is not _ND:
                    return None
                sig += (xa.shape, xa.dtype)
        for nxt, _ in n.next_functions:
            if nxt is None:
                s(-1)
            else:
                j = index.get(nxt)
                if j is None:
                    j = index[nxt] = len(nodes)
                    if j >= MAX_NODES:
                        return None
                    nodes_add(nxt)
                s(j)
    return tuple(sig), nodes


def _entries(sig: tuple, n: int) -> list:
    """The signature of `n` nodes read back: per node "leaf" or (plan key, edge targets), the
    plan key as `plans.run_arrays` builds it (the output's shape and dtype as the gradient's)."""
    out = []
    default = sig[0]
    k = 1
    for _ in range(n):
        if sig[k] is None:
            out.append("leaf")
            k += 1
            continue
        op, attrs, shape, dtype, count = sig[k:k + 5]
        k += 5
        key = [op, default, shape, dtype, shape, dtype, attrs]
        for _ in range(count):
            e = sig[k]
            if type(e) is tuple and e[:1] == ("n",):
                key.append(e)
                k += 1
            else:
                key += [e, sig[k + 1]]
                k += 2
        edges = sig[k:k + count]
        k += count
        key += [j >= 0 for j in edges]
        out.append((tuple(key), tuple(edges)))
    return out


def run(root, g, retain_graph: bool) -> bool:
    """Run the backward pass from node `root` with output gradient array `g` as a program;
    False (nothing done) when the graph does not qualify."""
    w = _walk(root)
    if w is None:
        return False
    sig, nodes = w
    out = root.out_data
    if type(g) is not _ND or g.shape != out.shape or g.dtype != out.dtype:
        return False
    try:
        prog = PROGRAMS.get(sig)
    except TypeError:  # an unhashable attribute
        return False
    if prog is None:
        if sig in PROGRAMS:
            return False
        if SEEN.pop(sig, None) is None:  # first sight: the loop runs; a program the second time
            remember(SEEN, sig, True, MAX_PROGRAMS)  # (a Python number changing every
            return False                                   # step: a new structure each time)
        prog = remember(PROGRAMS, sig, _build(sig, nodes), MAX_PROGRAMS)
        if prog is None:
            return False
    sid = root.struct_id
    if sid is not None and sid not in BY_ID and root._clock == MUTATIONS[0]:
        remember(BY_ID, sid, _guarded(sig, nodes, prog), MAX_PROGRAMS)
    prog(nodes, g, retain_graph)  # (numpy's warnings: filtered, see eager.dispatch)
    return True


def run_known(root, g, retain_graph: bool) -> bool:
    """`run` without the walk, for a root with a structure id (`record`) whose program is
    known, when nothing changed since its graph was recorded (`tensor.MUTATIONS`) and the
    program's guards (which nodes are shared) pass; False (nothing done) otherwise."""
    if root._clock != MUTATIONS[0]:
        return False
    entry = BY_ID.get(root.struct_id)
    return entry is not None and entry(root, g, retain_graph)


def _guarded(sig, nodes, prog):
    """`prog` behind guards, as `entry(root, g0, retain) -> bool`: it fetches the nodes along
    the edges by which the walk found them, checks that the other edges reach the same nodes
    and that nodes with the same structure id (or leaves) are distinct, then runs `prog`.
    A graph whose root has the structure id of `nodes[0]` then has the walk's signature `sig`
    (`record` explains why)."""
    entries = _entries(sig, len(nodes))
    lines = ["def entry(n0, g0, retain):", "    if DEFAULT[0] is not DTYPE:",
             "        return False"]
    have = {0}
    for i, e in enumerate(entries):
        if e == "leaf":
            continue
        lines.append(f"    f = n{i}.next_functions")
        for k, j in enumerate(e[1]):
            if j < 0:
                continue
            if j in have:
                lines.append(f"    if f[{k}][0] is not n{j}:")
                lines.append("        return False")
            else:
                have.add(j)
                lines.append(f"    n{j} = f[{k}][0]")
    groups: dict = {}
    for i, n in enumerate(nodes):
        groups.setdefault("leaf" if entries[i] == "leaf" else n.struct_id, []).append(f"n{i}")
    for names in groups.values():
        if len(names) == 2:
            lines.append(f"    if {names[0]} is {names[1]}:")
            lines.append("        return False")
        elif len(names) > 2:
            lines.append(f"    if len({{{', '.join(names)}}}) != {len(names)}:")
            lines.append("        return False")
    lines.append(f"    program([{', '.join(f'n{i}' for i in range(len(nodes)))}], g0, retain)")
    lines.append("    return True")
    env = {"program": prog, "DEFAULT": plans._DEFAULT, "DTYPE": sig[0], "__name__": __name__}
    src = "\n".join(lines)
    exec(compile(src, "<backward program guards>", "exec"), env)  # noqa: S102  (generated)
    entry = env["entry"]
    entry.source = src
    return entry


def _plan_of(key, node, out):
    fn = plans.PLANS.get(key)
    if fn is None and key not in plans.PLANS:
        fn = remember(plans.PLANS, key,
                            plans.build(node, wrap_array(np.empty(out.shape, out.dtype))),
                            plans.MAX_PLANS)
    return fn


def _operand_items(key: tuple) -> list:
    """Per operand of a plan key: (shape, dtype), or None for a Python number."""
    out, k = [], 7
    while k < len(key) and type(key[k]) is not bool:
        if type(key[k]) is tuple and key[k][:1] == ("n",):
            out.append(None)
            k += 1
        else:
            out.append((key[k], key[k + 1]))
            k += 2
    return out


def _order(sig) -> list:
    """The engine's order (`engine._run_plain`): a LIFO of nodes whose edges have all been
    counted down, from the root; edges counted per occurrence."""
    deps = [0] * len(sig)
    for e in sig:
        if e != "leaf":
            for j in e[1]:
                if j >= 0:
                    deps[j] += 1
    order, ready = [], [0]
    while ready:
        i = ready.pop()
        order.append(i)
        if sig[i] != "leaf":
            for j in sig[i][1]:
                if j >= 0:
                    deps[j] -= 1
                    if deps[j] == 0:
                        ready.append(j)
    return order


def _source(sig, fns=None, env=None) -> list:
    """The source lines of the program for `sig` (as `_entries` gives it):
    `program(N, g0, retain)` with N the nodes (each plan reads its node's saved arrays) and
    g0 the root's gradient array. Node i's plan is the constant P{i}; on release its key K{i}
    becomes its metadata and V{i} its versions. Gradients are dropped as soon as they are
    used; saved tensors are released at the end (nothing runs in between). With `fns` (node
    index -> plan function) each plan's lines are written in place (`_inlined`), their
    constants added to `env`; else each plan is called."""
    lines = ["def program(N, g0, retain):"]
    if len(sig) > 1:
        lines.append("    " + " = ".join(f"g{i}" for i in range(1, len(sig))) + " = None")
    assigned = {0}
    ran = []
    for i in _order(sig):
        e = sig[i]
        g = f"g{i}"
        if e == "leaf":
            lines.append(f"    if {g} is not None:  # AccumulateGrad")
            lines.append(f"        leaf(N[{i}], {g})")
            lines.append(f"        {g} = None")
            continue
        if i not in assigned:  # no parent ever gave it a gradient: nothing to do (as the loop)
            continue
        ran.append(i)
        key, edges = e
        numbers = {k for k, item in enumerate(_operand_items(key)) if item is None}
        results = [f"r{k}" if j >= 0 else "_" for k, j in enumerate(edges)]
        unpack = ", ".join(results) + ("," if len(results) == 1 else "")
        operands = []
        for k in range(len(edges)):
            operands.append(f"s[{k}]" if k in numbers else f"s[{k}]._data")
        lines.append(f"    if {g} is not None:  # {_camel(key[0])}Backward0")
        inl = _inlined(i, fns[i], env, g, operands, edges) if fns is not None else None
        if inl is not None:  # the plan's own lines, its names made this node's
            body, rs, temps = inl
            lines += body
        else:
            lines.append(f"        n = N[{i}]; s = n.saved")
            lines.append(f"        {unpack} = P{i}({g}, n.out_data, {', '.join(operands)})")
            rs, temps = [f"r{k}" for k in range(len(edges))], [r for r in results if r != "_"]
        for k, j in enumerate(edges):
            if j < 0:
                continue
            gj, r = f"g{j}", rs[k]
            if r == "None":
                continue
            if j not in assigned:
                assigned.add(j)
                lines.append(f"        {gj} = {r}")
            else:
                lines.append(f"        if {r} is not None:")
                lines.append(f"            {gj} = {r} if {gj} is None else added({gj}, {r})")
        lines.append(f"        {' = '.join([g] + temps)} = None")
    lines.append("    if not retain:")
    lines.append("        MUTATIONS[0] += 1")
    for i in ran:
        lines.append(f"        n = N[{i}]")
        lines.append(f"        n.saved = n.out_data = None; n._freed = K{i}; n.versions = V{i}")
    return lines


_NAME = re.compile(r"(?<![.\w])(g|out|a\d+|t\d+|c\d+)\b")


def _keyword(m) -> bool:
    """Whether the name matched is a keyword argument's (`out=` in a call), not a value."""
    after = m.string[m.end():].lstrip()
    before = m.string[:m.start()].rstrip()
    return after[:1] == "=" and after[:2] != "==" and before[-1:] in ("(", ",")


def _inlined(i: int, fn, env: dict, g: str, operands: list, edges):
    """Plan `fn` written for node i inside the program: (lines, one result expression per
    operand, its temporaries). Its parameters become the node's gradient `g`, output and
    operands (read only when used), its steps' and constants' names get the node's number.
    None when the source does not have the plan shape (then the plan is called)."""
    src = getattr(fn, "source", None)
    if src is None:
        return None
    head, *body = src.split("\n")
    params = head[head.index("(") + 1:head.rindex(")")].split(", ")
    if not body or not body[-1].startswith("    return [") or params[:2] != ["g", "out"] \
            or len(params) != 2 + len(operands):
        return None
    names = {"g": g, "out": f"o{i}"}
    names.update({p: f"a{i}_{k}" for k, p in enumerate(params[2:])})
    temps, used = [], set()

    def rename(m):
        name = m.group(1)
        if _keyword(m):
            return name
        if name in names:
            used.add(name)
            return names[name]
        if name[0] == "t":
            new = f"t{i}_{name[1:]}"
            if new not in temps:
                temps.append(new)
            return new
        if name not in fn.__globals__:
            raise KeyError(name)
        env[f"C{i}_{name[1:]}"] = fn.__globals__[name]
        return f"C{i}_{name[1:]}"

    try:
        steps = ["    " + _NAME.sub(rename, line) for line in body[:-1]]
        results = [_NAME.sub(rename, r) for r in body[-1].strip()[len("return ["):-1].split(", ")]
    except KeyError:
        return None
    if len(results) != len(edges):
        return None
    loads = []
    if "out" in used:
        loads.append(f"        o{i} = n.out_data")
    loads += [f"        a{i}_{k} = {op}" for k, (p, op) in enumerate(zip(params[2:], operands))
              if p in used]
    if loads:
        loads.insert(0, f"        n = N[{i}]" if "out" in used and len(loads) == 1 else
                     f"        n = N[{i}]; s = n.saved")
    return loads + steps, results, temps


def _build(sig, nodes):
    """The program function for `sig` (its plans built from this graph's nodes), or None when
    some node's rule cannot be traced."""
    sig = _entries(sig, len(nodes))
    env = {"leaf": _leaf, "added": added_arrays, "np": np, "asarray": np.asarray, "ndarray": _ND,
           "MUTATIONS": MUTATIONS, "__name__": __name__,  # (warnings: see eager.dispatch)
           "fix": fix, "B": B}  # (the names plans' lines use: ir.array_code's)
    for i, e in enumerate(sig):
        if e == "leaf":
            continue
        key, _ = e
        fn = _plan_of(key, nodes[i], nodes[i].out_data)
        if fn is None:
            return None
        env[f"P{i}"] = fn
        env[f"K{i}"] = key
        env[f"V{i}"] = (None,) * len(nodes[i].saved)
    src = "\n".join(_source(sig, {i: env[f"P{i}"] for i, e in enumerate(sig) if e != "leaf"},
                             env))
    code = compile(src, "<backward program>", "exec")
    exec(code, env)  # noqa: S102  (generated straight-line source, like the plans)
    prog = env["program"]
    missing = {ins.argval for ins in dis.get_instructions(prog) if ins.opname == "LOAD_GLOBAL"
               and ins.argval not in env and not hasattr(builtins, ins.argval)}
    if missing:  # a plan line naming something the program lacks: call the loop instead
        return None
    prog.source = src
    return prog


def _leaf(node, g) -> None:
    """Accumulate gradient array `g` into a leaf: kept as `.grad` when nobody else holds it
    (the program's local, this argument and getrefcount's), else added or copied."""
    var = node.variable
    if var.grad is None and g.base is None and g.flags.writeable and getrefcount(g) <= 3:
        var.grad = wrap_array(g)
        return
    t = wrap_array(g)
    g = None
    node.accumulate(t, False)


def program_source(t: Tensor) -> str | None:
    """The source of the backward program `t.backward()` runs (None when the graph under `t`
    does not qualify and the engine's loop would run). Its constants (C{node}_{k}: numpy
    functions and values of the plans) are in the program function's globals."""
    fn = t.grad_fn
    w = _walk(fn) if fn is not None else None
    if w is None:
        return None
    sig, nodes = w
    prog = PROGRAMS.get(sig)
    if prog is None:
        prog = _build(sig, nodes)
        if prog is None:
            return None
    return prog.source


def guards_source(t: Tensor) -> str | None:
    """The source of the guards through which `t.backward()` finds its program by the root's
    structure id (`record`), without walking the graph; None when that program is not known
    yet (it is registered when the program runs for a graph of that structure)."""
    fn = t.grad_fn
    entry = BY_ID.get(fn.struct_id) if fn is not None else None
    return None if entry is None else entry.source
