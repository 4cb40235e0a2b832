"""A fuzzer of random Python functions run plainly and under `capture.compile`.

`generate(seed, constructs)` (tests/fuzz_pygen.py) writes the source of one function `f` that
mixes tensor ops with ordinary Python: if/elif on Python and tensor values, for/while with
break/continue, try/except/finally, `with eager.no_grad()`, comprehensions, closures and `nonlocal`,
`*args/**kwargs`, f-strings, walrus, `match`, `assert`, globals, helper calls, `print`, `.item()`,
numpy calls, generators, lambdas, early returns, appends to a list `log`, attribute updates on an
object `obj` and item stores into a dict `d` passed in. Every construct can be switched off.

`check(src, seed)` runs `f` plainly and compiled (three calls: same shapes twice, then another
shape and other inputs, so cache hits and recompiles happen) and compares everything observable:
the returned structure and values (tensors: shape, dtype, values, requires_grad), the exception
type and message, the contents of `log`, `obj`'s attributes, `d`, the globals the function
touches, and what it printed. It returns None or (category, detail).

`fuzz(seed, n)` runs cases in a worker subprocess (a SIGSEGV or abort is reported as a "crash"
of the case that was running, and the worker restarts after it), shrinks each failure by
dropping top-level statements, and returns a `Report` (counts per category, minimal repros).

As a script: `python tests/fuzz_pyfuncs.py --seed S --n N [--backend B] [--exclude try,...]`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import linecache
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fuzz_pygen import (  # noqa: E402
    ALL_CONSTRUCTS,
    Gen,
    assemble,
    generate,
)

__all__ = ["ALL_CONSTRUCTS", "Gen", "assemble", "check", "fuzz", "generate", "shrink"]



# ---------------------------------------------------------------- the world `f` lives in


class Obj:
    """The object passed in as `obj` (its attributes are compared after each call)."""

    def __init__(self, count=0, total=0.0, name="o"):
        self.count, self.total, self.name, self.items = count, total, name, []
        self.tags = set()

    @property
    def prop(self):  # a getter with a side effect: must run once per read
        self.reads = getattr(self, "reads", 0) + 1
        return self.count

    def bump(self, k):
        self.count += k
        return self.count


def helper(t, log):
    """A module-level function with a side effect on its argument."""
    log.append("helper")
    return t * 2.0


def pure_helper(t, k):
    return t + k


def fresh_globals() -> dict:
    import numpy as np

    import eager

    return {"eager": eager, "np": np, "helper": helper, "pure_helper": pure_helper,
            "Obj": Obj, "GCOUNT": 0, "GLIST": [], "GSCALE": 2.0, "__name__": "fuzzmod"}


GLOBAL_NAMES = ("GCOUNT", "GLIST")


# ---------------------------------------------------------------- running and comparing


def _inputs(seed: int, call: int, requires_grad: bool):
    import numpy as np

    import eager

    rng = np.random.default_rng(seed * 7 + call)
    k = 5 if call == 2 else 3
    x = eager.tensor(rng.standard_normal((k, 4)).astype(np.float32),
                     requires_grad=requires_grad)
    y = eager.tensor(rng.standard_normal((k, 4)).astype(np.float32))
    log = ["pre"] if call == 2 else []
    obj = Obj(count=5 if call == 2 else 0)
    d = {"z": 1} if call == 2 else {}
    return x, y, log, obj, d


def _norm(v, depth=0):
    """A comparable snapshot of a value (tensors as arrays with their metadata)."""
    import numpy as np

    from eager import Tensor

    if depth > 6:
        return ("deep",)
    if isinstance(v, Tensor):
        return ("T", tuple(v.shape), str(v.dtype), bool(v.requires_grad),
                np.array(v.detach().numpy(), copy=True))
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [_norm(x, depth + 1) for x in v])
    if isinstance(v, dict):
        return ("dict", [(k, _norm(x, depth + 1)) for k, x in v.items()])
    if isinstance(v, Obj):
        return ("Obj", _norm(vars(v), depth + 1))
    if isinstance(v, set):
        return ("set", sorted(map(repr, v)))
    if isinstance(v, (int, float, str, bool, type(None), complex)):
        return v
    if isinstance(v, np.generic):
        return ("np", type(v).__name__, v.item())
    return ("obj", type(v).__name__)


def _diff(a, b, path="") -> str | None:
    """Where two snapshots differ (None: equal; floats with a small tolerance)."""
    import numpy as np

    if isinstance(a, tuple) and a and a[0] == "T" and isinstance(b, tuple) and b and \
            b[0] == "T":
        if a[1:3] != b[1:3]:
            return f"{path}: tensor {a[1]} {a[2]} vs {b[1]} {b[2]}"
        if a[3] != b[3]:
            return f"{path}: requires_grad {a[3]} vs {b[3]}"
        if not np.allclose(a[4], b[4], rtol=1e-4, atol=1e-5, equal_nan=True):
            return f"{path}: values {a[4].ravel()[:4]} vs {b[4].ravel()[:4]}"
        return None
    if isinstance(a, float) and isinstance(b, float):
        if math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5) or (a != a and b != b):
            return None
        return f"{path}: {a!r} vs {b!r}"
    if type(a) is not type(b):
        return f"{path}: {_short(a)} vs {_short(b)}"
    if isinstance(a, (tuple, list)):
        if len(a) != len(b):
            return f"{path}: {_short(a)} vs {_short(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            r = _diff(x, y, f"{path}[{i}]")
            if r:
                return r
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def _short(v) -> str:
    s = repr(v)
    return s if len(s) < 160 else s[:160] + "..."


def _observe(fn, inputs, varargs: bool, ns) -> dict:
    args, kwargs = _call_args(inputs, varargs)
    out = io.StringIO()
    exc = None
    result = None
    with contextlib.redirect_stdout(out):
        try:
            result = fn(*args, **kwargs)
            # the thread's current exception after a normal return (None: generated code
            # that leaves a handler's exception installed corrupts later code)
            leftover = repr(sys.exc_info()[1])
        except Exception as e:  # noqa: BLE001 - compared with the plain run's
            exc = (type(e).__name__, str(e))
            leftover = None
    from eager import is_grad_enabled

    x, y, log, obj, d = inputs
    if exc is None:  # which of the inputs the result returns as they are
        parts = result if isinstance(result, (tuple, list)) else [result]
        ids = [next((n for n, o in zip("xyLOD", inputs) if o is p), None) for p in parts]
    grad = is_grad_enabled()
    if not grad:
        from eager import grad_mode

        grad_mode._set(True)  # the next call starts as usual
    return {"exception": exc, "result": _norm(result) if exc is None else None,
            "identity": ids if exc is None else None, "inputs": _norm([x, y]),
            "grad_mode": grad, "exc_info": leftover,
            "log": _norm(log), "obj": _norm(obj), "d": _norm(d),
            "globals": [_norm(ns[g]) for g in GLOBAL_NAMES], "stdout": out.getvalue()}


def _call_args(inputs, varargs: bool):
    x, y, log, obj, d = inputs
    if varargs:
        return (x, y), {"log": log, "obj": obj, "d": d, "scale": 2}
    return (x, y, log, obj, d), {}


ORDER = ("exception", "result", "identity", "log", "obj", "d", "globals", "inputs",
         "grad_mode", "exc_info", "stdout")


def _category(key: str, plain, comp, detail: str) -> str:
    if key == "exception":
        if plain is None:
            return "exception_compiled_only"
        if comp is None:
            return "exception_missing"
        return "exception_type" if plain[0] != comp[0] else "exception_message"
    if key == "result":
        if "requires_grad" in detail:
            return "requires_grad"
        if "values" in detail or (": " in detail and "vs" in detail and "(" not in detail):
            return "wrong_value"
        return "structure"
    if key == "stdout":
        return "print"
    if key in ("identity", "grad_mode", "exc_info"):
        return key
    if key == "inputs":
        return "side_effect_tensor_inputs"
    return "side_effect_" + key


def check(src: str, seed: int, varargs: bool, backend: str = "eager"):
    """Run `f` plainly and compiled; None when they agree, else (category, detail)."""
    import capture

    name = f"<fuzz-{seed}>"
    linecache.cache[name] = (len(src), None, src.splitlines(True), name)
    code = compile(src, name, "exec")
    plain_ns, comp_ns = fresh_globals(), fresh_globals()
    exec(code, plain_ns)
    exec(code, comp_ns)
    plain, comp = plain_ns["f"], capture.compile(comp_ns["f"], backend=backend)
    rg = (seed % 3 == 0)
    for call in range(3):
        p = _observe(plain, _inputs(seed, call, rg), varargs, plain_ns)
        c = _observe(comp, _inputs(seed, call, rg), varargs, comp_ns)
        for key in ORDER:
            detail = _diff(p[key], c[key])
            if detail is not None:
                return (_category(key, p[key], c[key], detail),
                        f"call {call}: {key}{detail}")
    return None


def _block_end(lines, i) -> int:
    """The index after the statement starting at line i (a header takes its indented body)."""
    ind = len(lines[i]) - len(lines[i].lstrip())
    j = i + 1
    if lines[i].rstrip().endswith(":"):
        while j < len(lines) and len(lines[j]) - len(lines[j].lstrip()) > ind:
            j += 1
    return j


def _still_fails(src, seed, varargs, backend, category) -> bool:
    try:
        compile(src, "<shrink>", "exec")
        r = check(src, seed, varargs, backend)
    except Exception:  # noqa: BLE001
        return False
    return r is not None and r[0] == category


def shrink(seed: int, constructs, backend: str, category: str,
           src: str | None = None) -> str:
    """A smaller source failing the same way: statements (a compound one with its body, or
    only its header with the body dedented) are dropped one at a time, last first."""
    src, varargs = (src, None) if src is not None else generate(seed, constructs)
    varargs = "*args" in src.split("\n")[0]
    lines = src.rstrip("\n").split("\n")
    changed = True
    while changed:
        changed = False
        i = len(lines) - 2  # keep the `def` line and the final return
        while i >= 1:
            if i >= len(lines) - 1:
                i -= 1
                continue
            end = _block_end(lines, i)
            trials = [lines[:i] + lines[end:]]
            if end > i + 1:  # unwrap a compound statement: keep its first body lines
                ind = len(lines[i + 1]) - len(lines[i + 1].lstrip())
                base = len(lines[i]) - len(lines[i].lstrip())
                body = [ln[ind - base:] if len(ln) - len(ln.lstrip()) >= ind else ln
                        for ln in lines[i + 1:end]]
                trials.append(lines[:i] + body + lines[end:])
            for trial in trials:
                text = "\n".join(trial) + "\n"
                if _still_fails(text, seed, varargs, backend, category):
                    lines, changed = trial, True
                    break
            i -= 1
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the worker and the driver


def case_seed(seed: int, i: int) -> int:
    return seed * 100003 + i


def worker(seed: int, start: int, n: int, constructs, backend: str,
           do_shrink: bool) -> None:
    """Runs cases start..n-1, one JSON line before and after each (read by `fuzz`)."""
    import capture

    def alarm(*_):
        raise TimeoutError("case timed out")

    signal.signal(signal.SIGALRM, alarm)
    for i in range(start, n):
        cs = case_seed(seed, i)
        print(json.dumps({"start": i}), flush=True)
        src, varargs = generate(cs, constructs)
        signal.alarm(60)
        try:
            r = check(src, cs, varargs, backend)
            if r is not None and do_shrink:
                src = shrink(cs, constructs, backend, r[0], src)
        except TimeoutError as e:
            r = ("timeout", str(e))
        except Exception as e:  # noqa: BLE001 - a harness error is a failure too
            r = ("harness", f"{type(e).__name__}: {e}")
        finally:
            signal.alarm(0)
        capture.reset()
        print(json.dumps({"done": i, "failure": r, "src": src if r else None}), flush=True)


@dataclass
class Report:
    seed: int
    n: int
    passed: int = 0
    failures: list = field(default_factory=list)  # (case, category, detail, source)

    def counts(self) -> dict:
        out: dict = {}
        for _, cat, _, _ in self.failures:
            out[cat] = out.get(cat, 0) + 1
        return dict(sorted(out.items(), key=lambda kv: -kv[1]))

    def text(self, repros: int = 5) -> str:
        lines = [f"seed {self.seed}: {self.passed}/{self.n} passed; failures: {self.counts()}"]
        for case, cat, detail, src in self.failures[:repros]:
            lines += [f"--- case {case} [{cat}] {detail}", src.rstrip()]
        return "\n".join(lines)


def fuzz(seed: int, n: int, constructs=ALL_CONSTRUCTS, backend: str = "eager",
         do_shrink: bool = True, python: str | None = None) -> Report:
    """Run n cases in a worker subprocess; a crash fails the running case and the worker
    restarts after it."""
    report = Report(seed, n)
    start = 0
    here = os.path.abspath(__file__)
    root = os.path.dirname(os.path.dirname(here))
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    while start < n:
        boot = (f"import sys; sys.path.insert(0, {os.path.dirname(here)!r}); "
                "import fuzz_pyfuncs; sys.exit(fuzz_pyfuncs.main(sys.argv[1:]))")
        cmd = [python or sys.executable, "-c", boot, "--worker", "--seed", str(seed), "--start",
               str(start), "--n", str(n), "--backend", backend,
               "--constructs", ",".join(constructs)] + ([] if do_shrink else ["--no-shrink"])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, cwd=root)
        running = None
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            msg = json.loads(line)
            if "start" in msg:
                running = msg["start"]
            else:
                running = None
                if msg["failure"] is None:
                    report.passed += 1
                else:
                    cat, detail = msg["failure"]
                    report.failures.append((msg["done"], cat, detail, msg["src"]))
        err = proc.stderr.read()
        rc = proc.wait()
        if running is None:
            if rc != 0:
                raise RuntimeError(f"fuzz worker failed (rc {rc}): {err[-2000:]}")
            break
        src, _ = generate(case_seed(seed, running), constructs)
        why = f"signal {-rc}" if rc < 0 else f"exit {rc}"
        report.failures.append((running, "crash", f"{why}: {err.strip()[-300:]}", src))
        start = running + 1
    return report


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--backend", default="eager")
    p.add_argument("--exclude", default="")
    p.add_argument("--constructs", default=None)
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--repros", type=int, default=10)
    p.add_argument("--worker", action="store_true")
    a = p.parse_args(argv)
    seed = a.seed if a.seed is not None else int(time.time()) % 100000
    constructs = a.constructs.split(",") if a.constructs else list(ALL_CONSTRUCTS)
    constructs = [c for c in constructs if c not in a.exclude.split(",")]
    if a.worker:
        worker(seed, a.start, a.n, constructs, a.backend, not a.no_shrink)
        return 0
    report = fuzz(seed, a.n, constructs, a.backend, not a.no_shrink)
    print(report.text(a.repros))
    return 0 if not report.failures else 1


if __name__ == "__main__":
    sys.exit(main())
