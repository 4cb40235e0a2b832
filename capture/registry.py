"""The record of every function compiled in this process, for `wick dump` and `explain`.

`COMPILED` lists each live `CompiledFunction` that captured at least once (in first-capture
order); its entries hold the artifacts: guards text, graph, compiled graph (fusion/kernels/llvm
dumps), break reasons, recompile reasons. It holds them weakly, so that a compiled function
that is no longer referenced (a closure compiled per call, a model dropped) is freed with its
graphs and kernels; `keep = True` (set by `wick dump`/`wick explain`, which print after the
script returned) holds them strongly. `reset()` in `capture/__init__.py` clears it.
Thread-safe. Touches nothing else.
"""

from __future__ import annotations

import threading
import weakref

keep = False  # hold compiled functions strongly (the CLI dumps them after the script ends)


class _Registry:
    """An insertion-ordered set of CompiledFunctions, held weakly unless `keep` is set."""

    def __init__(self):
        self._refs: dict[int, object] = {}  # id -> weakref (or the object when kept)
        self._lock = threading.Lock()

    def note(self, cf) -> None:
        key = id(cf)
        if key in self._refs:
            return
        with self._lock:
            if key in self._refs:
                return
            if keep:
                self._refs[key] = cf
                return

            def forget(_ref, key=key, refs=self._refs):
                refs.pop(key, None)

            self._refs[key] = weakref.ref(cf, forget)

    def _live(self) -> list:
        with self._lock:
            refs = list(self._refs.values())
        out = [r() if isinstance(r, weakref.ref) else r for r in refs]
        return [cf for cf in out if cf is not None]

    def __iter__(self):
        return iter(self._live())

    def __len__(self) -> int:
        return len(self._live())

    def __bool__(self) -> bool:
        return bool(self._live())

    def __eq__(self, other) -> bool:
        return isinstance(other, (list, _Registry)) and self._live() == list(other)

    __hash__ = None

    def __contains__(self, cf) -> bool:
        return any(x is cf for x in self._live())

    def clear(self) -> None:
        with self._lock:
            self._refs.clear()


COMPILED = _Registry()


def note(compiled_function) -> None:
    """Add a CompiledFunction to the registry (once)."""
    COMPILED.note(compiled_function)
