"""The compiled-function wrapper: guarded cache entries, capture on a miss, eager fallbacks.

`CompiledFunction` holds the cache of one user function. A call checks each entry's guard
closure in order; a hit runs the entry, a miss captures the function for these arguments
(`symbolic.InstructionTranslator`), compiles the graph with the backend and caches it. A graph
break, an argument capture does not model, an exception raised by the user's own code during
capture, or a backend failure all make an entry that runs the function eagerly under the same
guards, so the user gets exactly eager's results and errors. Every entry keeps its artifacts
(guards text, graph, compiled graph, break and recompile reasons) for `wick dump` through
`capture.registry`. Touches `eager`, `ir`, `capture`.
"""

from __future__ import annotations

import inspect
import linecache
import logging
import time
import warnings

import numpy as np

from eager import Tensor

from . import backends, config, registry
from .output_graph import OutputGraph
from .symbolic import BreakReason, GraphBreak, InstructionTranslator, Unsupported
from .variables import ConstantVariable, SequenceVariable, TensorVariable

log = logging.getLogger("wick")


class CacheEntry:
    """One captured variant: its guard closure and how to run it ("graph" or "eager" mode)."""

    def __init__(self, guards, mode: str, graph=None, compiled=None, fetch=None,
                 template=None, autograd=False, break_reason=None, recompile_reason=None,
                 compile_ms=0.0):
        self.guards = guards
        self.guard = guards.build()
        self.mode = mode
        self.graph = graph
        self.compiled = compiled
        self.fetch = fetch
        self.template = template
        self.autograd = autograd
        self.break_reason = break_reason
        self.recompile_reason = recompile_reason
        self.compile_ms = compile_ms

    @property
    def guards_text(self) -> str:
        return self.guards.text


def _rebuild(template, graph_outs: list, inputs: tuple):
    kind, payload = template
    if kind == "graph":
        return graph_outs[payload]
    if kind == "input":
        return inputs[payload]
    if kind == "const":
        return payload
    items = [_rebuild(t, graph_outs, inputs) for t in payload]
    return tuple(items) if kind == "tuple" else items


class CompiledFunction:
    """The cache and capture logic behind one `capture.compile(fn)` wrapper."""

    def __init__(self, fn, backend="auto", fullgraph=False, dynamic=None, register=True):
        self.fn = fn
        self.name = getattr(fn, "__qualname__", getattr(fn, "__name__", "fn"))
        self.code = fn.__code__
        self.backend = backend
        self.fullgraph = fullgraph
        self.dynamic = dynamic
        self.register = register
        self.entries: list[CacheEntry] = []
        self.recompile_reasons: list[str] = []
        self.break_reasons: list[BreakReason] = []
        self.warned_limit = False
        self.graph_runs = 0
        self.eager_runs = 0

    def clear(self) -> None:
        self.entries.clear()
        self.recompile_reasons.clear()
        self.break_reasons.clear()
        self.warned_limit = False

    # ---- the call

    def __call__(self, *args, **kwargs):
        for entry in self.entries:
            try:
                hit = entry.guard(*args, **kwargs)
            except Exception:
                hit = False
            if hit:
                return self.run(entry, args, kwargs)
        return self.miss(args, kwargs)

    def run(self, entry: CacheEntry, args, kwargs):
        if entry.mode == "eager":
            self.eager_runs += 1
            return self.fn(*args, **kwargs)
        inputs = entry.fetch(*args, **kwargs)
        if entry.autograd:
            outs = list(backends.run_with_autograd(entry.graph, inputs))
        else:
            try:
                arrays = entry.compiled(*[t._data for t in inputs])
            except Exception as e:  # a backend bug must not cost the user the call
                log.warning("capture: compiled graph of %s failed at run time (%s: %s); "
                            "running eagerly from now on", self.name, type(e).__name__, e)
                entry.mode = "eager"
                return self.run(entry, args, kwargs)
            outs = [Tensor._make(a if isinstance(a, np.ndarray) else np.asarray(a))
                    for a in arrays]
        self.graph_runs += 1
        return _rebuild(entry.template, outs, inputs)

    def miss(self, args, kwargs):
        if self.register:
            registry.note(self)
        if self.entries:
            reason = "; ".join(f"entry {i}: {e.guards.first_failure(args, kwargs)}"
                               for i, e in enumerate(self.entries))
        else:
            reason = None
        if len(self.entries) >= config.cache_size_limit:
            if not self.warned_limit:
                self.warned_limit = True
                warnings.warn(f"capture: {self.name} reached the recompile limit "
                              f"({config.cache_size_limit} entries); new variants run eagerly. "
                              f"Last failing guard: {reason}", stacklevel=3)
            self.eager_runs += 1
            return self.fn(*args, **kwargs)
        if reason is not None:
            self.recompile_reasons.append(reason)
        entry = self.capture(args, kwargs, reason)
        self.entries.append(entry)
        return self.run(entry, args, kwargs)

    # ---- capture

    def capture(self, args, kwargs, recompile_reason) -> CacheEntry:
        start = time.perf_counter()
        out = OutputGraph(self.fn)
        try:
            template = self._translate(out, args, kwargs)
        except GraphBreak as gb:
            return self._eager_entry(out, gb.reason, recompile_reason)
        except Exception as e:  # the user's own error (or a capture bug): eager decides
            reason = BreakReason(f"{type(e).__name__} during capture: {e}", "-",
                                 self.code.co_filename, self.code.co_firstlineno, "")
            log.debug("capture of %s failed", self.name, exc_info=True)
            if self.fullgraph:
                self.fn(*args, **kwargs)  # raises the user's error as eager does
                raise Unsupported(f"capture of {self.name} failed: {reason.reason}") from e
            return self._eager_entry(out, reason, recompile_reason)
        graph = out.graph
        graph.eliminate_dead_code()
        device = next((p.val.device for p in graph.placeholders), "cpu")
        autograd = out.grad_enabled and any(
            out.by_source[s].requires_grad for s in out.input_sources)
        compiled = None
        if not autograd:
            try:
                compiled = backends.compile_graph(graph, self.backend, device)
            except Exception as e:
                log.warning("capture: backend %r failed to compile %s (%s: %s); running it "
                            "eagerly", self.backend, self.name, type(e).__name__, e)
                return self._eager_entry(out, BreakReason(
                    f"backend {self.backend!r} failed: {type(e).__name__}: {e}", "-",
                    self.code.co_filename, self.code.co_firstlineno, ""), recompile_reason)
        ms = (time.perf_counter() - start) * 1e3
        return CacheEntry(out.guards, "graph", graph, compiled,
                          out.guards.build_fetch(out.input_sources), template, autograd,
                          None, recompile_reason, ms)

    def _eager_entry(self, out, reason: BreakReason, recompile_reason) -> CacheEntry:
        self.break_reasons.append(reason)
        log.info("capture: graph break in %s: %s", self.name, reason)
        if self.fullgraph:
            raise Unsupported(f"graph break in {self.name} (fullgraph=True): {reason}")
        return CacheEntry(out.guards, "eager", break_reason=reason,
                          recompile_reason=recompile_reason)

    def _translate(self, out: OutputGraph, args, kwargs):
        """Bind the arguments as trackers, interpret the bytecode, return the output template."""
        fn = self.fn
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        f_locals = {}
        for name, param in sig.parameters.items():
            value = bound.arguments[name]
            if param.kind == param.VAR_KEYWORD:
                out.guards.add(f"not {name}")
                if value:
                    raise _break(fn, f"keyword arguments **{name} are not supported")
                continue
            f_locals[name] = out.wrap(value, name)
        tx = InstructionTranslator(out, fn, f_locals)
        result = tx.run()
        if out.grad_enabled != out.initial_grad_enabled:
            raise tx.unsupported("grad mode changed and not restored before return")
        outputs: list = []
        template = self._template(tx, out, result, outputs)
        out.graph.output(tuple(outputs))
        return template

    def _template(self, tx, out, var, outputs: list):
        if isinstance(var, TensorVariable):
            if var.node.op == "placeholder":
                return ("input", out.input_sources.index(var.source))
            if var.node not in outputs:
                outputs.append(var.node)
            return ("graph", outputs.index(var.node))
        if isinstance(var, ConstantVariable):
            return ("const", var.value)
        if isinstance(var, SequenceVariable):
            return (var.kind.__name__, [self._template(tx, out, v, outputs) for v in var.items])
        raise tx.unsupported(f"returning {var.describe()} from a compiled function")


def _break(fn, reason: str) -> GraphBreak:
    code = fn.__code__
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    return GraphBreak(BreakReason(reason, "-", code.co_filename, code.co_firstlineno, line))
