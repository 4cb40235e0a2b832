"""`eager.utils.benchmark` (`torch.utils.benchmark`): `Timer(stmt, setup, globals, label,
sub_label, description, num_threads)` with `timeit(number)`, `blocked_autorange(min_run_time)`
and `adaptive_autorange()`, returning a `Measurement` (`times` per run, `mean`, `median`,
`iqr`, PyTorch's printed summary), and `Compare` printing measurements as a table. Timing is
`time.perf_counter` around compiled `stmt` code (wick's CPU work is synchronous, so no device
synchronization is needed). Semantics: the torch.utils.benchmark documentation.
"""

from __future__ import annotations

import statistics
import time

__all__ = ["Compare", "Measurement", "Timer"]


class Measurement:
    """The times of `number_per_run` executions of a statement, per block of runs."""

    def __init__(self, number_per_run, raw_times, task_spec=None, metadata=None):
        self.number_per_run = number_per_run
        self.raw_times = list(raw_times)
        self.task_spec = task_spec or {}
        self.metadata = metadata

    @property
    def times(self) -> list:
        """Seconds per execution, one entry per measured block."""
        return [t / self.number_per_run for t in self.raw_times]

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def iqr(self) -> float:
        ts = sorted(self.times)
        if len(ts) < 2:
            return 0.0
        q = statistics.quantiles(ts, n=4, method="inclusive")
        return q[2] - q[0]

    @property
    def title(self) -> str:
        return self.task_spec.get("label") or self.task_spec.get("stmt", "")

    @property
    def has_warnings(self) -> bool:
        return False

    def meets_confidence(self, threshold=0.1) -> bool:
        return self.iqr / self.median < threshold if self.median else True

    def __repr__(self) -> str:
        spec = self.task_spec
        head = []
        if spec.get("label"):
            head.append(spec["label"] + (f": {spec['sub_label']}" if spec.get("sub_label")
                                         else ""))
        head.append(spec.get("description") or spec.get("stmt", ""))
        med = self.median
        unit, scale = ("s", 1.0) if med >= 1 else ("ms", 1e3) if med >= 1e-3 else \
            ("us", 1e6) if med >= 1e-6 else ("ns", 1e9)
        runs = self.number_per_run * len(self.raw_times)
        n = len(self.raw_times)
        return "\n".join([f"<eager.utils.benchmark.Measurement object at {hex(id(self))}>"]
                         + head + [f"  {med * scale:.2f} {unit}",
                                   f"  {n} measurement{'s' if n > 1 else ''}, {runs} runs , "
                                   f"{spec.get('num_threads', 1)} thread"])


class Timer:
    """Times `stmt` after running `setup` once, both in a namespace of `globals`."""

    def __init__(self, stmt="pass", setup="pass", global_setup="", timer=time.perf_counter,
                 globals=None, label=None, sub_label=None, description=None, env=None,
                 num_threads=1, language="python"):
        if language != "python":
            raise ValueError("eager.utils.benchmark.Timer times Python statements only")
        self._stmt, self._timer = stmt, timer
        self._ns = dict(globals or {})
        exec(compile(setup, "<setup>", "exec"), self._ns)
        self._code = compile(stmt, "<stmt>", "exec")
        self._spec = {"stmt": stmt, "setup": setup, "label": label, "sub_label": sub_label,
                      "description": description, "env": env, "num_threads": num_threads}

    def _block(self, number: int) -> float:
        code, ns, timer = self._code, self._ns, self._timer
        start = timer()
        for _ in range(number):
            exec(code, ns)
        return timer() - start

    def timeit(self, number: int = 1000000) -> Measurement:
        """One block of `number` executions."""
        self._block(1)  # warm up
        return Measurement(number, [self._block(number)], self._spec)

    def _per_run(self, min_block: float) -> int:
        number = 1
        while True:
            t = self._block(number)
            if t >= min_block or number >= 10 ** 9:
                return number
            number *= 10

    def blocked_autorange(self, callback=None, min_run_time: float = 0.2) -> Measurement:
        """Blocks of a run count taking >= 0.1 ms each, repeated for `min_run_time`
        seconds."""
        number = self._per_run(1e-4)
        times, total = [], 0.0
        while total < min_run_time or not times:
            t = self._block(number)
            if callback is not None:
                callback(number, t)
            times.append(t)
            total += t
        return Measurement(number, times, self._spec)

    def adaptive_autorange(self, threshold: float = 0.1, *, min_run_time: float = 0.01,
                           max_run_time: float = 10.0, callback=None) -> Measurement:
        """Blocks until the spread (IQR / median) is under `threshold` or `max_run_time`."""
        number = self._per_run(1e-4)
        times, total = [], 0.0
        while True:
            t = self._block(number)
            times.append(t)
            total += t
            m = Measurement(number, times, self._spec)
            if total >= max_run_time or (total >= min_run_time and len(times) > 3
                                         and m.meets_confidence(threshold)):
                return m


class Compare:
    """Prints measurements as a table grouped by label, rows by sub_label, columns by
    description (median times)."""

    def __init__(self, results):
        self._results = list(results)

    def __str__(self) -> str:
        cols = sorted({m.task_spec.get("description") or "" for m in self._results})
        rows = sorted({m.task_spec.get("sub_label") or m.task_spec.get("stmt", "")
                       for m in self._results})
        cell = {((m.task_spec.get("sub_label") or m.task_spec.get("stmt", "")),
                 m.task_spec.get("description") or ""): m.median * 1e6 for m in self._results}
        w = max([len(r) for r in rows] + [4])
        lines = [f"[ {self._results[0].title if self._results else ''} ]",
                 " " * w + " | " + " | ".join(f"{c:>12}" for c in cols)]
        for r in rows:
            lines.append(f"{r:<{w}} | " + " | ".join(
                f"{cell[(r, c)]:>12.1f}" if (r, c) in cell else " " * 12 for c in cols))
        lines.append("Times are in microseconds (us).")
        return "\n".join(lines)

    def print(self) -> None:
        print(str(self))

    def trim_significant_figures(self) -> None:
        pass

    def colorize(self, rowwise=False) -> None:
        pass
