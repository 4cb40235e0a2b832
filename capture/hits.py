"""The hit functions of cache entries: one generated frame per entry, and the dispatch loop.

`make_dispatch(cf)` is a compiled function's call: each entry's hit function in order, then a
miss. `build_hit(cf, entry)` generates an entry's hit function: its guard terms, then, on the
fast path (a whole-call graph without dynamic shapes whose result template and side effects
are plain Python, run by its compiled graph or by the AOT autograd bridge), fetching the
inputs, calling the graph, wrapping its outputs, writing mutated inputs back (without grad;
no copy where the graph stored the new value into the input's array: `codegen.inplace`),
replaying Python side effects (`sideeffects.apply`'s order) and building the result, all in
one flat frame; otherwise a signal (`GENERAL`: run the entry with `CompiledFunction.run`;
`MISS`: the guards failed; `EAGER`: the graph failed at run time). `benchmarks/bench_hits.py`
measures what a hit adds over its kernels. Split from `compiler.py`. Touches `eager`, numpy.
"""

from __future__ import annotations

import keyword
import sys
import types

import numpy as np

from eager import grad_mode
from eager.autograd import engine, forward_ad
from eager.tensor import MUTATIONS, wrap_array

from .guards import read_through


class _Signal:
    """What an entry's hit function returns instead of the call's result."""

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


MISS = _Signal("guards failed")  # try the next entry
GENERAL = _Signal("general path")  # the guards hold: run the entry with `CompiledFunction.run`
EAGER = _Signal("run eagerly")  # the graph failed at run time (logged): run the frame eagerly


def make_dispatch(cf):
    """The call of one compiled function: each entry's hit function in order (a binding error
    of the arguments is a miss, as it was for the guard closure), then a miss (capture)."""
    hits, fn, run, miss = cf.hits, cf.fn, cf.run, cf.miss

    def dispatch(*args, **kwargs):
        for hit in hits:
            try:
                r = hit(*args, **kwargs)
            except Exception as e:
                if e.__traceback__.tb_next is not None or type(e) is not TypeError:
                    raise  # raised by the entry itself after its guards held
                continue  # the arguments do not bind to the function's parameters
            if r is MISS:
                continue
            if r is GENERAL:
                return run(hit.entry, args, kwargs)
            if r is EAGER:
                return fn(*args, **kwargs)
            return r
        return miss(args, kwargs)

    return dispatch


def _guarded_general(guard):
    """A hit function without generated code: GENERAL when `guard` holds, else MISS."""

    def hit(*args, **kwargs):
        try:
            return GENERAL if guard(*args, **kwargs) else MISS
        except Exception:  # noqa: BLE001
            return MISS

    return hit


def _template_expr(t: tuple, ns: dict) -> str | None:
    """A Python expression rebuilding template `t` inside a hit function (None: the template
    needs `transform.rebuild`)."""
    kind = t[0]
    if kind == "graph":
        return f"___o{t[1]}"
    if kind == "input":
        return f"___i{t[1]}"
    if kind == "source":
        return f"___s{t[1]}"
    if kind == "const":
        name = f"___k{len(ns)}"
        ns[name] = t[1]
        return name
    if kind == "num":  # a dynamic number computed in the graph: `int`/`float` of its 0-d array
        inner = _template_expr(t[2], ns)
        if inner is None:
            return None
        name = f"___k{len(ns)}"
        ns[name] = t[1]
        return f"{name}({inner}._data)"
    if len(t) > 2 and kind in ("list", "dict"):  # one object however often referenced
        seen = ns.setdefault("___seen", set())
        if t[2] in seen:
            return None
        seen.add(t[2])
    if kind in ("tuple", "list"):
        items = [_template_expr(x, ns) for x in t[1]]
        if None in items:
            return None
        inner = "".join(i + ", " for i in items)
        return f"({inner})" if kind == "tuple" else f"[{inner}]"
    if kind == "dict":
        parts = []
        for k, x in t[1].items():
            v = _template_expr(x, ns)
            if v is None:
                return None
            name = f"___k{len(ns)}"
            ns[name] = k
            parts.append(f"{name}: {v}")
        return "{" + ", ".join(parts) + "}"
    return None


def _fast_call(compiled):
    """The cheapest way to call a compiled graph: a plain function, or the bound `__call__`
    of a Python class (skips the type slot's lookup on every call), or the backend's
    `run_unchecked` entry when it has one (the guards already checked the inputs)."""
    fast = getattr(compiled, "run_unchecked", None)
    if fast is not None:
        return fast
    if isinstance(compiled, types.FunctionType):
        return compiled
    call = getattr(type(compiled), "__call__", None)  # noqa: B004 - the class's own method
    if isinstance(call, types.FunctionType):
        return compiled.__call__
    return compiled


def build_hit(cf, entry) -> types.FunctionType:
    """The entry's hit function: the user's parameters in, the call's result (or a signal)
    out. One flat generated frame: guard terms, then, on the fast path (a whole-call graph
    without autograd, dynamic shapes or a template that needs `rebuild`), fetching inputs,
    calling the compiled graph, wrapping its outputs as Tensors and building the result."""
    guards = entry.guards
    condition, shared = guards.shared_condition()
    head = (f"    try:\n        if not {condition}:\n            return ___MISS\n"
            "    except Exception:\n        return ___MISS\n")
    ns = {"___MISS": MISS, "___GENERAL": GENERAL}
    body = _fast_body(cf, entry, ns, shared)
    if body is None:
        return guards.function(head + "    return ___GENERAL\n", "hit", ns)
    return guards.function(head + body, "hit", ns)


def _fast_body(cf, entry, ns: dict, shared: dict) -> str | None:
    runner = entry.runner
    if (entry.mode != "graph" or runner is None or runner.specs is not None
            or entry.template is None):
        return None
    aot = runner.aot is not None and not runner.empty
    if entry.writebacks_grad and (aot or runner.autograd):
        return None  # (a write-back with grad `protect`s its inputs: the general path; a
        # plain compiled graph has no autograd node whose saved values `protect` keeps)
    if not runner.empty and not aot and (runner.autograd or runner.compiled is None):
        return None
    expr = _template_expr(entry.template, ns)
    effects = _effects_lines(entry.effects, ns)
    if expr is None or effects is None:
        return None
    # inference mode marks the tensors made inside (eager's Tensor._init, swapped): the
    # general path builds outputs through it, this one does not
    lines = ["    if ___modes.inference:", "        return ___GENERAL"]
    ns["___modes"] = grad_mode._state
    # (sources read through the locals the guard condition left: `guards.share_reads`)
    lines += [f"    ___i{k} = {read_through(entry.guards.source(src), shared)}"
              for k, src in enumerate(entry.input_sources)]
    if aot:  # the AOT bridge (its own autograd node); disabled or failing: the general path
        n = len(runner.graph.output_node.args[0])
        args = ", ".join(f"___i{k}" for k in range(len(entry.input_sources)))
        outs = "".join(f"___o{k}, " for k in range(n)) + "= " if n else ""
        lines += ["    if ___runner.aot is None:",
                  "        return ___GENERAL", "    try:",  # (the node builder itself when
                  "        if ___found and not (___engine._CHECKS or ___fad._LEVEL):",
                  f"            {outs}___found[0]({args})",  # no check asks for more)
                  "        else:", f"            {outs}___aot({args})",
                  "    except Exception:", "        return ___GENERAL"]
        ns["___runner"] = runner
        ns["___aot"] = call = runner.aot.fixed_call()  # (guards fix requires_grad, shapes)
        ns.update(___found=call.found, ___engine=engine, ___fad=forward_ad)
    elif not runner.empty:
        n = len(runner.graph.output_node.args[0])
        outs = "".join(f"___o{k}, " for k in range(n))
        args = ", ".join(f"___i{k}._data" for k in range(len(entry.input_sources)))
        lines += ["    try:", f"        {outs + '= ' if n else ''}___graph({args})"]
        lines += [f"        ___o{k} = ___wrap(___o{k} if ___type(___o{k}) is ___ndarray else "
                  f"___asarray(___o{k}))" for k in range(n)]
        lines += ["    except Exception as ___e:", "        return ___failed(___e)"]
        ns.update(___graph=_fast_call(runner.compiled), ___wrap=wrap_array, ___type=type,
                  ___ndarray=np.ndarray, ___asarray=_asarray, ___failed=cf.graph_failed)
    ns["___cf"] = cf
    lines.append("    ___cf.graph_runs += 1")
    if entry.writebacks:  # mutated inputs first (`CompiledFunction.run`'s order)
        ns["___mutations"] = MUTATIONS  # (`writeback.write_one` in line: copy, bump versions)
        inplace = () if runner.empty else _inplace_pairs(entry, runner.aot if aot else
                                                         runner.compiled)
        for i, k, grad in entry.writebacks:
            copy = f"___i{i}._data[...] = ___o{k}._data"
            if (i, k) in inplace:  # (the graph may store it into the input's own array)
                copy = f"if ___o{k}._data is not ___i{i}._data:\n        {copy}"
            bump = [] if grad is None else [f"    ___i{i}._vc[0] += 1"]  # (None: `.data`)
            lines += [f"    {copy}", *bump, "    ___mutations[0] += 1"]
    lines += [f"    ___s{k} = {read_through(entry.guards.source(src), shared)}"
              for k, src in enumerate(entry.obj_sources)]
    lines += effects
    if entry.final_grad is not None:
        ns["___set_grad"] = grad_mode._set
        lines.append(f"    ___set_grad({entry.final_grad!r})")
    lines.append(f"    return {expr}")
    return "\n".join(lines) + "\n"


def _inplace_pairs(entry, compiled) -> list:
    """The write-backs `(input, output)` that compiled graph `compiled` (or AOT graph) may
    store into the input's own array (`codegen.inplace`: exact kernels only), skipping
    outputs the result or a side effect also returns (they must stay apart from the input)."""
    alias = getattr(compiled, "alias_inputs", None)
    if alias is None and not hasattr(compiled, "inplace"):
        return []
    refs: set = set()
    _graph_refs((entry.template, entry.effects), refs)
    pairs = [(i, k) for i, k, _ in entry.writebacks if k not in refs]
    if alias is None:  # an AOT graph: its forwards, compiled per grad pattern, store them
        compiled.inplace = pairs  # where exact (`AOTGraph._alias`); the hit checks
        return pairs
    try:
        return alias(pairs)
    except Exception as e:  # noqa: BLE001 - a bug there must not cost the entry: copy
        from . import logs

        logs.log("graph", f"in-place write-back not set up ({type(e).__name__}: {e})")
        return []


def _graph_refs(t, refs: set) -> None:
    """Add to `refs` the graph output indices that template (or effect) `t` names."""
    if isinstance(t, tuple) and len(t) >= 2 and t[0] == "graph" and isinstance(t[1], int):
        refs.add(t[1])
    if isinstance(t, (tuple, list)):
        for x in t:
            _graph_refs(x, refs)
    elif isinstance(t, dict):
        for x in t.values():
            _graph_refs(x, refs)


def _effects_lines(effects, ns: dict) -> list | None:
    """Source lines replaying Python side effects as `sideeffects.apply` does (every target
    and value first, then the containers and stores in order), or None when a template needs
    `transform.rebuild`."""
    first, then = [], []
    for j, e in enumerate(effects):
        kind = e[0]
        if kind == "global":
            target = f"___k{len(ns)}"
            ns[target] = e[1]
            value = _template_expr(e[3], ns)
        else:
            target = _template_expr(e[1], ns)
            if kind == "list":
                items = [_template_expr(x, ns) for x in e[2]]
                value = None if None in items else "[" + "".join(i + ", " for i in items) + "]"
            elif kind == "dict":
                value = _template_expr(("dict", e[2]), ns)
            else:
                value = _template_expr(e[3], ns)
        if target is None or value is None:
            return None
        first += [f"    ___et{j} = {target}", f"    ___ev{j} = {value}"]
        if kind == "list":
            then.append(f"    ___et{j}[:] = ___ev{j}")
        elif kind == "dict":
            then += [f"    ___et{j}.clear()", f"    ___et{j}.update(___ev{j})"]
        elif kind == "global" or not (e[2].isidentifier() and not keyword.iskeyword(e[2])):
            name = f"___k{len(ns)}"
            ns[name] = e[2]
            then.append(f"    ___et{j}[{name}] = ___ev{j}" if kind == "global" else
                        f"    ___setattr(___et{j}, {name}, ___ev{j})")
            ns["___setattr"] = setattr
        else:
            then.append(f"    ___et{j}.{e[2]} = ___ev{j}")
    return first + then


def _asarray(a):
    """A backend's output that is not a numpy array: as it is when it is a device (cupy)
    array, else a numpy array (a numpy scalar becomes 0-d)."""
    return a if isinstance(a, _array_types()) else np.asarray(a)


def _array_types() -> tuple:
    """Array classes a backend may return as they are: numpy's, and cupy's once cupy is in use
    (a GPU graph's outputs stay on the device; anything else, e.g. a numpy scalar, becomes a
    0-d numpy array)."""
    cupy = sys.modules.get("cupy")
    return (np.ndarray, cupy.ndarray) if cupy is not None else (np.ndarray,)
