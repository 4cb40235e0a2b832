"""The compiled-function wrapper: guarded cache entries, capture on a miss, graph breaks that
resume, automatic dynamic shapes, the recompile limit.

`CompiledFunction` holds the cache of one user function. A call checks each entry's guard
closure in order; a hit runs the entry, a miss captures the function for these arguments
(`symbolic.InstructionTranslator`), compiles the graph with the backend and caches it.

Entry modes: "graph" (the whole call is one graph), "resume" (a graph up to a graph break,
then the continuation of `transform.py`: the breaking instruction runs eagerly and a generated
resume function, compiled on its own first call, continues), "eager" (the frame cannot be
captured at all: an argument capture does not model, an error of the user's own code during
capture, a backend failure). Results and errors are eager's in every mode. A capture that
raises (the arguments do not bind, an op rejects their shapes or dtypes, a bug anywhere after
the graph) caches its eager entry only once the plain call succeeded: bad arguments raise
eager's error and leave no entry, use no cache slot and mark no dimension dynamic.

Threads: calls run concurrently; captures of one function are serialised by its lock, and a
thread that waited for it first retries the entries added meanwhile (no duplicate entries, the
recompile limit holds). Counters (`graph_runs`, `eager_runs`) are statistics, not exact
under threads.

Automatic dynamic shapes: when a size guard of an entry fails, the dimensions that changed are
marked dynamic and the next capture makes them symbolic (`dynamic.py`); `dynamic=True` marks
every dimension from the start, `dynamic=False` none (PyTorch's `torch.compile(dynamic=)`).
Likewise an int/float parameter whose value guard fails is recaptured as a graph input
(`dynamic.SymNumberVariable`) unless a capture had to specialise it (`static_numbers`).
Touches `eager`, `ir`, `capture`.
"""

from __future__ import annotations

import inspect
import linecache
import threading
import time
import warnings

import numpy as np

from eager import Tensor, grad_mode

from . import backends, config, dynamic, effects, logs, registry, sideeffects, writeback
from .guards import GuardSet
from .hits import (EAGER, GENERAL, MISS, _array_types, _guarded_general,  # noqa: F401
                   build_hit, make_dispatch)
from .output_graph import OutputGraph
from .resume import CannotResume
from .symbolic import BreakReason, GraphBreak, InstructionTranslator, Unsupported
from .transform import Templater, build_continuation, rebuild


class GraphRunner:
    """Runs one entry's graph on fetched input tensors: the compiled graph, or eager autograd
    when inputs require grad; per-shape specialisations for dynamic entries."""

    def __init__(self, graph, compiled, autograd: bool, specs=None, aot=None):
        self.graph, self.compiled, self.autograd, self.specs = graph, compiled, autograd, specs
        self.aot = aot  # compiled forward + backward (capture/aot.py) for inputs requiring grad
        self.empty = not graph.output_node.args[0] and not any(  # (a write-back still runs)
            n.op == "call_function" and n.is_impure() for n in graph.nodes)

    def __call__(self, inputs) -> list:
        if self.empty:
            return []
        graph, compiled = self.graph, self.compiled
        if self.specs is not None:
            key = self.specs.key(inputs)
            hit = self.specs.get(key)
            if hit is None:  # a key's first call: the tape runs eagerly (compiled later)
                return list(self.specs.run_tape(key, inputs))
            graph, compiled = hit
        if self.aot is not None and self.specs is None:
            try:
                return list(self.aot(*inputs))
            except Exception as e:  # noqa: BLE001  (the eager path below re-raises user errors)
                logs.log("graph", f"compiled backward unavailable ({type(e).__name__}: {e}); "
                                  "running the graph through eager autograd")
                self.aot = None
        if self.autograd or compiled is None:
            return list(backends.run_with_autograd(graph, inputs))
        arrays = compiled(*[t._data for t in inputs])
        types = _array_types()
        return [Tensor._make(a if isinstance(a, types) else np.asarray(a))
                for a in arrays]


class CacheEntry:
    """One captured variant: its guard closure and how to run it."""

    def __init__(self, guards, mode: str, graph=None, runner=None, fetch=None, fetch_objs=None,
                 template=None, continuation=None, break_reason=None, recompile_reason=None,
                 times=None, dynamic_dims=None, input_sources=(), obj_sources=(),
                 final_grad=None, writebacks=()):
        self.guards = guards
        t0 = time.perf_counter()
        self.guard = guards.build()
        self.times = dict(times or {})
        self.times["guards_ms"] = (time.perf_counter() - t0) * 1e3
        self.mode = mode
        self.graph = graph
        self.runner = runner
        self.fetch = fetch
        self.fetch_objs = fetch_objs
        self.template = template
        self.continuation = continuation
        self.break_reason = break_reason
        self.recompile_reason = recompile_reason
        self.dynamic_dims = dynamic_dims or {}
        self.input_sources = list(input_sources)
        self.obj_sources = list(obj_sources)
        self.final_grad = final_grad
        self.writebacks = list(writebacks)  # (input, output, grad): `writeback.apply`
        self.writebacks_grad = any(g for _, _, g in self.writebacks)
        self.effects: list = []  # Python side effects replayed after the graph
        self.dynamic_numbers: set = set()  # int/float parameters that are graph inputs
        self.hit = None  # built by `CompiledFunction.add` (`build_hit`)
        self.pending = None  # a failed capture's entry, not cached yet (`CompiledFunction.miss`)

    @property
    def compiled(self):
        return self.runner.compiled if self.runner is not None else None

    @property
    def autograd(self) -> bool:
        return self.runner is not None and self.runner.autograd

    @property
    def compile_ms(self) -> float:
        return sum(self.times.values())

    @property
    def guards_text(self) -> str:
        return self.guards.text


class CompiledFunction:
    """The cache and capture logic behind one `capture.compile(fn)` wrapper."""

    def __init__(self, fn, backend="auto", fullgraph=False, dynamic=None, register=True,
                 parent=None):
        self.fn = fn
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", "fn"))
        self.code = fn.__code__
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.register = register
        self.parent = parent
        self.entries: list[CacheEntry] = []
        self.hits: list = []  # entries[i].hit, the list `dispatch` walks
        self.recompile_reasons: list[str] = []
        self.break_reasons: list[BreakReason] = []
        self.children: list[CompiledFunction] = []
        self.callees: dict = {}
        self.dynamic_dims: dict[str, set] = {"*": set(range(64))} if dynamic else {}
        self.dynamic_numbers: set[str] = set()  # int/float parameters fed as graph inputs
        self.static_numbers: set[str] = set()  # ... that a capture had to specialise
        self.warned_limit = False
        self.graph_runs = 0
        self.eager_runs = 0
        # Serialises captures (and every change of the lists above): threads that miss at
        # once capture one after the other, and a waiting thread first retries the entries
        # added meanwhile. Reentrant: capture may call back into this function.
        self.lock = threading.RLock()
        self.dispatch = make_dispatch(self)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.hits.clear()
            self.recompile_reasons.clear()
            self.break_reasons.clear()
            self.children.clear()
            self.callees.clear()
            self.warned_limit = False

    def child(self, fn):
        """A CompiledFunction for a generated resume function (captured on first call)."""
        cf = CompiledFunction(fn, self.backend, False, self.dynamic, self.register, self)
        self.children.append(cf)
        return cf

    def callee(self, fn):
        """The compiled wrapper of a user function that broke while inlined."""
        hit = self.callees.get(fn)
        if hit is None:
            with self.lock:  # (called at run time: two threads must share one child)
                hit = self.callees.get(fn)
                if hit is None:
                    key = fn
                    if getattr(fn, "__wick_compiled__", None) is not None:
                        fn = fn.__wrapped__
                    hit = self.callees[key] = self.child(fn)
        return hit

    def all_functions(self):
        yield self
        for c in self.children:
            yield from c.all_functions()

    # ---- the call

    def __call__(self, *args, **kwargs):
        return self.dispatch(*args, **kwargs)

    def add(self, entry: CacheEntry) -> None:
        t0 = time.perf_counter()
        try:
            entry.hit = build_hit(self, entry)
        except Exception as e:  # noqa: BLE001 - a bug of the generated code: run eagerly
            logs.log("guards", f"hit function of {self.name} failed to build "
                               f"({type(e).__name__}: {e}); the entry runs eagerly")
            entry.mode, entry.hit = "eager", _guarded_general(entry.guard)
        entry.times["guards_ms"] += (time.perf_counter() - t0) * 1e3
        entry.hit.entry = entry  # (what `dispatch` runs on GENERAL, whatever the lists hold)
        self.entries.append(entry)
        self.hits.append(entry.hit)

    def graph_failed(self, e: Exception):
        """A hit's compiled graph raised: log it; the frame runs eagerly (`EAGER`)."""
        logs.log("graph", f"graph of {self.name} failed at run time "
                          f"({type(e).__name__}: {e}); running the frame eagerly")
        self.eager_runs += 1
        return EAGER

    def run(self, entry: CacheEntry, args, kwargs):
        if entry.mode == "eager":
            self.eager_runs += 1
            return self.fn(*args, **kwargs)
        inputs = originals = entry.fetch(*args, **kwargs)
        if entry.writebacks_grad:  # (mutated inputs whose history the graph extends)
            inputs = writeback.protect(entry.writebacks, inputs)
        try:
            outs = entry.runner(inputs)
        except Exception as e:  # noqa: BLE001 - a backend/replay failure must not cost the call
            logs.log("graph", f"graph of {self.name} failed at run time "
                              f"({type(e).__name__}: {e}); running the frame eagerly")
            self.eager_runs += 1
            return self.fn(*args, **kwargs)
        self.graph_runs += 1
        if entry.writebacks:
            writeback.apply(entry.writebacks, inputs, outs, originals)
        objs = entry.fetch_objs(*args, **kwargs) if entry.fetch_objs is not None else ()
        cells: dict = {}  # one object per list/dict the code built, however referenced
        if entry.effects:
            sideeffects.apply(entry.effects,
                              lambda t: rebuild(t, outs, originals, objs, cells))
        if entry.mode == "graph":
            result = rebuild(entry.template, outs, originals, objs, cells)
            if entry.final_grad is not None:
                grad_mode._set(entry.final_grad)
            return result
        return entry.continuation.run(outs, originals, objs, cells)

    def miss(self, args, kwargs):
        """No entry's guards hold: capture these arguments (under the lock), cache the entry
        and run it; past the recompile limit, run eagerly. A capture that fails with an
        error (the arguments do not bind, an op rejects their shapes or dtypes) caches
        nothing: the plain call raises eager's error, and bad calls use no cache slot."""
        if self.register and self.parent is None:
            registry.note(self)
        with self.lock:
            entry = self._recheck(args, kwargs)
            if entry is None:
                entry = self._new_entry(args, kwargs)
        if entry is None:  # past the recompile limit
            self.eager_runs += 1
            return self.fn(*args, **kwargs)
        if entry.pending is not None:
            self.eager_runs += 1
            result = self.fn(*args, **kwargs)  # raises eager's error for bad arguments
            with self.lock:  # the call succeeded: keep the eager entry (a capture limit)
                if self._recheck(args, kwargs) is None and \
                        len(self.entries) < config.cache_size_limit:
                    self._commit(entry)
            return result
        return self.run(entry, args, kwargs)

    def _recheck(self, args, kwargs):
        """An entry (added by another thread while this one waited) whose guards hold."""
        for e in self.entries:
            try:
                if e.guard(*args, **kwargs):
                    return e
            except Exception:  # noqa: BLE001, S112 - arguments that do not bind: a miss
                continue
        return None

    def _new_entry(self, args, kwargs):
        """Capture an entry for these arguments (lock held); None past the limit."""
        limit = len(self.entries) >= config.cache_size_limit
        if limit and self.warned_limit:
            return None
        reason = None
        if self.entries:
            reason = "; ".join(f"entry {i}: {_pretty(e.guards.first_failure(args, kwargs))}"
                               for i, e in enumerate(self.entries))
        if limit:
            self.warned_limit = True
            msg = (f"capture: {self.name} reached the recompile limit "
                   f"({config.cache_size_limit} entries); new variants run eagerly. "
                   f"Failing guard: {reason}")
            logs.log("recompiles", msg)
            warnings.warn(msg, stacklevel=4)
            return None
        dims = {k: set(v) for k, v in self.dynamic_dims.items()}
        numbers = set(self.dynamic_numbers)
        if reason is not None and self.dynamic is not False:
            for e in self.entries:
                for src, d in e.guards.size_failures(args, kwargs):
                    dims.setdefault(src, set()).add(d)
                numbers.update(e.guards.number_failures(args, kwargs))
            numbers -= self.static_numbers
        entry = self.capture(args, kwargs, reason, dims, numbers)
        entry.pending = (reason, dims, entry.break_reason) if entry.pending else None
        if entry.pending is None:
            self._commit(entry, reason, dims)
            self.dynamic_numbers.update(entry.dynamic_numbers)
        return entry

    def _commit(self, entry, reason=None, dims=None):
        """Cache `entry` (lock held) and record its recompile reason and dynamic dims."""
        if entry.pending is not None:
            reason, dims, brk = entry.pending
            entry.pending = None
            self._note_break(brk)
        if reason is not None:
            self.recompile_reasons.append(reason)
            logs.log("recompiles", f"recompiling {self.name}: {reason}")
        if dims is not None:
            for src, ds in dims.items():
                self.dynamic_dims.setdefault(src, set()).update(ds)
        self.add(entry)
        logs.log("guards", f"guards of {self.name} entry {len(self.entries) - 1}:\n"
                           f"{entry.guards_text}")

    # ---- capture

    def capture(self, args, kwargs, recompile_reason, dims=None, numbers=()) -> CacheEntry:
        """Capture an entry; `dims`: {source: dynamic dimensions}, `numbers`: int/float
        parameters to take as graph inputs. A `Specialize` makes what it names static."""
        if dims is None:
            dims = self.dynamic_dims
        dims = {k: set(v) for k, v in dims.items()}
        numbers = set(numbers)
        for _ in range(8):
            out = OutputGraph(self.fn, dims)
            out.dynamic_numbers = set(numbers)
            try:
                entry = self._capture(out, args, kwargs, recompile_reason)
                entry.dynamic_numbers = numbers
                return entry
            except dynamic.Specialize as s:
                if s.dims is None:
                    dims = {}
                    self.static_numbers |= numbers
                    numbers = set()
                    continue
                for src, d in s.dims:
                    if d == "num":
                        numbers.discard(src)
                        self.static_numbers.add(src)
                        continue
                    dims.get(src, set()).discard(d)
                    if "*" in dims:
                        dims.setdefault(src, set(range(64))).discard(d)
            except Unsupported:
                raise
            except Exception as e:  # noqa: BLE001 - after the graph: backend, guards, resume
                return self._failed_entry(out, e, args, kwargs, recompile_reason)
        out = OutputGraph(self.fn, {})
        try:
            return self._capture(out, args, kwargs, recompile_reason)
        except Unsupported:
            raise
        except Exception as e:  # noqa: BLE001
            return self._failed_entry(out, e, args, kwargs, recompile_reason)

    def _capture(self, out, args, kwargs, recompile_reason) -> CacheEntry:
        start = time.perf_counter()
        cont = None
        try:
            templater, template = self._translate(out, args, kwargs)
        except dynamic.Specialize:
            raise
        except GraphBreak as gb:
            self._note_break(gb.reason)
            if self.fullgraph:
                raise Unsupported(f"graph break in {self.name} (fullgraph=True): "
                                  f"{gb.reason}") from None
            try:
                cell = effects.shared_written_cell(gb)
                if cell is not None:
                    raise CannotResume(f"closure cell {cell!r} is shared with a nested "
                                       "function and written")
                cont, templater = build_continuation(self, out, gb)
                template = None
            except CannotResume as e:
                logs.log("breaks", f"{self.name}: cannot resume after the break ({e}); the "
                                   "frame runs eagerly")
                return self._eager_entry(out, gb.reason, recompile_reason, noted=True)
        except Exception as e:  # the user's own error (or a capture bug): eager decides
            return self._failed_entry(out, e, args, kwargs, recompile_reason)
        try:
            py_effects = out.side_effects.finish(templater)
        except CannotResume as e:  # a stored value capture cannot rebuild: eager decides
            return self._eager_entry(out, BreakReason(
                f"mutation of Python state ({e})", "-", self.code.co_filename,
                self.code.co_firstlineno, ""), recompile_reason)
        out.containers_by_id.clear()  # (keeps no argument alive)
        try:
            pairs = writeback.finish(out, templater)
        except ValueError as e:  # a mutated input aliases another input: eager decides
            return self._eager_entry(out, BreakReason(
                f"in-place op on a graph input ({e})", "-", self.code.co_filename,
                self.code.co_firstlineno, ""), recompile_reason)
        graph = out.graph
        graph.output(tuple(templater.outputs))
        graph.eliminate_dead_code()
        capture_ms = (time.perf_counter() - start) * 1e3
        t0 = time.perf_counter()
        device = next((p.val.device for p in graph.placeholders), "cpu")
        # eager autograd (or AOT) when an op was recorded in grad mode on an input requiring
        # grad: the mode at the end of the graph may differ (a break inside `no_grad`)
        autograd = any(n.meta.get("grad_enabled", out.grad_enabled) for n in graph.nodes
                       if n.op == "call_function") and any(
            out.by_source[s].requires_grad for s in out.input_sources)
        compiled = None
        has_ops = any(n.op == "call_function" for n in graph.nodes)
        if not autograd and has_ops:
            try:
                compiled = backends.compile_graph(graph, self.backend, device)
            except Exception as e:  # noqa: BLE001
                logs.log("graph", f"backend {self.backend!r} failed to compile {self.name} "
                                  f"({type(e).__name__}: {e}); running it eagerly")
                return self._eager_entry(out, BreakReason(
                    f"backend {self.backend!r} failed: {type(e).__name__}: {e}", "-",
                    self.code.co_filename, self.code.co_firstlineno, ""), recompile_reason)
        dyn = {}
        for (src, d) in out.dynamic_inputs:
            dyn.setdefault(src, set()).add(d)
        specs = None
        if dyn or getattr(out, "sym_keys", None):
            specs = dynamic.make_specializations(out, graph, compiled, lambda g: None if
                                                 autograd else backends.compile_graph(
                                                     g, self.backend, device), self.name)
        backend_ms = (time.perf_counter() - t0) * 1e3
        aot = None
        if autograd and has_ops and not dyn and self.backend not in ("eager",):
            from .aot import aot_function

            aot = aot_function(graph, lambda g: backends.compile_graph(g, self.backend, device))
        runner = GraphRunner(graph, compiled, autograd or not has_ops, specs, aot)
        fetch_objs = out.guards.build_fetch(templater.sources) if templater.sources else None
        mode = "graph" if cont is None else "resume"
        final_grad = getattr(out, "final_grad", None) if cont is None else None
        entry = CacheEntry(out.guards, mode, graph, runner,
                           out.guards.build_fetch(out.input_sources), fetch_objs, template,
                           cont, cont and self.break_reasons[-1], recompile_reason,
                           {"capture_ms": capture_ms, "backend_ms": backend_ms}, dyn,
                           out.input_sources, templater.sources, final_grad, pairs)
        entry.effects = py_effects  # Python side effects: `sideeffects.apply`
        if has_ops and logs.enabled("graph"):
            logs.log("graph", f"graph of {self.name} ({len(graph)} nodes"
                              f"{', dynamic ' + str(dyn) if dyn else ''}):\n{graph}")
        if cont is not None and logs.enabled("code"):
            logs.log("code", code_text(self, entry, len(self.entries)))
        return entry

    def _failed_entry(self, out, e: Exception, args, kwargs, recompile_reason) -> CacheEntry:
        """Capture raised `e` (the arguments do not bind, an op rejects them, or a bug of
        capture or of a backend): an eager entry, cached by `miss` only once the plain call
        succeeded (bad arguments then raise eager's error and leave no entry)."""
        reason = BreakReason(f"{type(e).__name__} during capture: {e}", "-",
                             self.code.co_filename, self.code.co_firstlineno, "")
        logs.log("breaks", f"capture of {self.name} failed: {reason.reason}")
        if self.fullgraph:
            self.fn(*args, **kwargs)  # raises the user's error as eager does
            raise Unsupported(f"capture of {self.name} failed: {reason.reason}") from e
        try:
            entry = CacheEntry(out.guards, "eager", break_reason=reason,
                               recompile_reason=recompile_reason)
        except Exception as e2:  # noqa: BLE001 - the guards themselves do not build
            logs.log("guards", f"guards of {self.name} failed to build ({e2}); the eager "
                               "entry guards grad mode and the default dtype only")
            entry = CacheEntry(GuardSet(self.fn), "eager", break_reason=reason,
                               recompile_reason=recompile_reason)
        entry.pending = True
        return entry

    def _note_break(self, reason: BreakReason) -> None:
        self.break_reasons.append(reason)
        logs.log("breaks", f"graph break in {self.name}: {reason}")

    def _eager_entry(self, out, reason: BreakReason, recompile_reason,
                     noted: bool = False) -> CacheEntry:
        if not noted:
            self._note_break(reason)
        if self.fullgraph:
            raise Unsupported(f"graph break in {self.name} (fullgraph=True): {reason}")
        return CacheEntry(out.guards, "eager", break_reason=reason,
                          recompile_reason=recompile_reason)

    def _translate(self, out: OutputGraph, args, kwargs):
        """Bind the arguments as trackers, interpret the bytecode; (templater, template)."""
        fn = self.fn
        sig = inspect.signature(fn, follow_wrapped=False)  # (a functools.wraps wrapper's own)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        f_locals = {name: out.wrap(bound.arguments[name], name) for name in sig.parameters}
        if ".0" in fn.__code__.co_varnames and "implicit0" in f_locals:
            f_locals[".0"] = f_locals.pop("implicit0")  # a 3.11 comprehension's iterator
        tx = InstructionTranslator(out, fn, f_locals)
        result = tx.run()
        out.final_grad = out.grad_enabled if out.grad_enabled != out.initial_grad_enabled \
            else None  # a resume function that leaves a `with no_grad()` block
        templater = Templater(out)
        try:
            template = templater.t(result)
        except CannotResume:
            raise tx.unsupported(f"returning {result.describe()} from a compiled function")
        return templater, template


def _pretty(term) -> str:
    """A guard term as users write it (`x.shape == (2, 3)` rather than `x._data.shape`)."""
    import re

    return re.sub(r"\._data\.(shape|dtype|ndim)", r".\1", str(term))


def code_text(cf, entry, i: int) -> str:
    """The transformed function of a resume entry as readable pseudo-source, then the
    generated functions' bytecode."""
    import dis

    cont = entry.continuation
    from .guards import signature_text

    lines = [f"def {cf.fn.__name__}({signature_text(cf.code)}):  # transformed, entry {i}"]
    ops = [n.target.name for n in entry.graph.nodes if n.op == "call_function"]
    lines.append(f"    ___outs = graph_{i}(*inputs)  # {len(ops)} ops: {', '.join(ops)}")
    r = entry.break_reason
    if r is not None:
        lines.append(f"    # graph break [{r.id}] {r.location}: {r.reason}")
    names = [name for name, _ in cont.generated]
    if cont.kind == "inst":
        lines.append(f"    ___pushed = {names[0]}(*___stack[-{cont.pops}:])  # eagerly")
        lines.append(f"    return {names[1]}(*___stack[:-{cont.pops}], *___pushed, "
                     f"{', '.join(cont.local_names)})")
    elif cont.kind == "branch":
        lines.append(f"    if bool(___outs[cond]):  # jump when {cont.jump_when}")
        lines.append(f"        return {names[0]}(*___stack, {', '.join(cont.local_names)})")
        lines.append(f"    return {names[1]}(*___stack, {', '.join(cont.local_names)})")
    elif cont.kind == "eager":
        lines.append(f"    return {names[0]}(*___stack, {', '.join(cont.local_names)})"
                     "  # plain bytecode from the break on (inside a try)")
    else:
        lines.append(f"    ___exit, ___locals = {names[0]}(*___stack, "
                     f"{', '.join(cont.local_names)})  # the loop, eagerly")
        lines.append("    return __resume_in_...(*___stack, **___locals)")
    for name, code in cont.generated:
        lines.append(f"# ---- {name}")
        lines.append(dis.Bytecode(code).dis().rstrip())
    return "\n".join(lines)


def source_line(code) -> str:
    return linecache.getline(code.co_filename, code.co_firstlineno).strip()
