"""`eager.profiler` (`torch.profiler`, also `torch.autograd.profiler.profile`): a CPU
profiler of wick's eager execution. Inside `with profile(...) as prof:` every registry op that
runs eagerly is one event named `aten::<op>` (PyTorch's naming), timed as the wall time since
the previous event ended (wick calls numpy kernels back to back: that span is the op's kernel
plus its dispatch), and every `record_function(name)` block is one event spanning its body.
`prof.key_averages()` groups events by name (`table()`, sorted and truncated as PyTorch's);
`export_chrome_trace(path)` writes the Chrome trace format; `schedule(...)` and
`tensorboard_trace_handler(dir)` drive `prof.step()` as in PyTorch. Recording turns eager's
fast paths off (it sees every primitive op), so profiled code runs slower. CUDA activity,
memory, stacks and FLOPs are not recorded. Semantics: the torch.profiler documentation.
"""

from __future__ import annotations

import enum
import functools
import json
import os
import time

from . import dispatch

__all__ = ["ProfilerAction", "ProfilerActivity", "profile", "record_function", "schedule",
           "tensorboard_trace_handler"]

_ACTIVE: list = []  # the profiles recording now (innermost last)


class ProfilerActivity(enum.Enum):
    CPU = 0
    CUDA = 1
    XPU = 2
    MTIA = 3
    PrivateUse1 = 4


class ProfilerAction(enum.Enum):
    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


class FunctionEvent:
    """One recorded span: name, start and end (microseconds), `cpu_time_total`."""

    def __init__(self, name, start_us, end_us):
        self.name, self.key = name, name
        self.time_range_start, self.time_range_end = start_us, end_us

    @property
    def cpu_time_total(self) -> float:
        return self.time_range_end - self.time_range_start

    def __repr__(self) -> str:
        return f"<FunctionEvent name={self.name} cpu_time_total={self.cpu_time_total:.3f}us>"


class FunctionEventAvg:
    """The events of one name: `count`, `cpu_time_total`, `self_cpu_time_total` (us) and the
    average `cpu_time`."""

    def __init__(self, key):
        self.key, self.count = key, 0
        self.cpu_time_total = self.self_cpu_time_total = 0.0
        self.cuda_time_total = self.self_cuda_time_total = 0.0
        self.device_time_total = self.self_device_time_total = 0.0
        self.cpu_memory_usage = self.self_cpu_memory_usage = 0

    def add(self, ev: FunctionEvent) -> None:
        self.count += 1
        self.cpu_time_total += ev.cpu_time_total
        if ev.name.startswith("aten::"):
            self.self_cpu_time_total += ev.cpu_time_total

    @property
    def cpu_time(self) -> float:
        return self.cpu_time_total / max(self.count, 1)

    def __repr__(self) -> str:
        return (f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}"
                f"us cpu_time={self.cpu_time:.3f}us count={self.count}>")


def _fmt_us(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


class EventList(list):
    """A list of events or averages with PyTorch's `table()` and `total_average()`."""

    def table(self, sort_by=None, row_limit=100, max_src_column_width=75,
              max_name_column_width=55, max_shapes_column_width=80, header=None,
              top_level_events_only=False, **kwargs) -> str:
        rows = list(self)
        if sort_by is not None:
            key = sort_by.replace("self_cpu_time", "self_cpu_time_total") \
                if sort_by == "self_cpu_time" else sort_by
            if rows and not hasattr(rows[0], key):
                key = "cpu_time_total"
            rows.sort(key=lambda r: getattr(r, key), reverse=True)
        if row_limit is not None and row_limit > 0:
            rows = rows[:row_limit]
        total = sum(r.self_cpu_time_total for r in self) or 1.0
        w = min(max([len(r.key) for r in rows] + [4]), max_name_column_width)
        cols = ["Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg",
                "# of Calls"]
        line = "-" * w + "  " + "  ".join("-" * 12 for _ in cols)
        out = [header] if header else []
        out += [line, f"{'Name':<{w}}  " + "  ".join(f"{c:>12}" for c in cols), line]
        for r in rows:
            out.append(f"{r.key[:w]:<{w}}  " + "  ".join(f"{v:>12}" for v in (
                f"{100 * r.self_cpu_time_total / total:.2f}%", _fmt_us(r.self_cpu_time_total),
                f"{100 * r.cpu_time_total / total:.2f}%", _fmt_us(r.cpu_time_total),
                _fmt_us(r.cpu_time), str(r.count))))
        out += [line, f"Self CPU time total: {_fmt_us(total)}", ""]
        return "\n".join(out)

    def total_average(self) -> FunctionEventAvg:
        avg = FunctionEventAvg("Total")
        for r in self:
            avg.count += r.count if isinstance(r, FunctionEventAvg) else 1
            avg.cpu_time_total += r.cpu_time_total
            avg.self_cpu_time_total += getattr(r, "self_cpu_time_total", 0.0)
        return avg

    @property
    def self_cpu_time_total(self) -> float:
        return sum(getattr(r, "self_cpu_time_total", 0.0) for r in self)


def _now_us() -> float:
    return time.perf_counter_ns() / 1e3


def schedule(*, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0,
             skip_first_wait: int = 0):
    """The step -> ProfilerAction function of PyTorch's `schedule`: skip `skip_first` steps,
    then cycles of `wait` idle, `warmup` and `active` recording steps (the last one saves),
    `repeat` times (0: forever)."""
    if wait < 0 or warmup < 0 or active <= 0 or repeat < 0 or skip_first < 0:
        raise AssertionError("Invalid profiler schedule arguments")

    def fn(step: int) -> ProfilerAction:
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        cycle = wait + warmup + active
        if repeat > 0 and step / cycle >= repeat:
            return ProfilerAction.NONE
        mod = step % cycle
        if mod < wait:
            return ProfilerAction.NONE
        if mod < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if mod < cycle - 1 else ProfilerAction.RECORD_AND_SAVE
    return fn


def tensorboard_trace_handler(dir_name: str, worker_name=None, use_gzip: bool = False):
    """An `on_trace_ready` handler writing each trace as `<worker>.<ms>.pt.trace.json` into
    `dir_name`."""
    def handler(prof) -> None:
        os.makedirs(dir_name, exist_ok=True)
        worker = worker_name or f"{os.uname().nodename}_{os.getpid()}"
        prof.export_chrome_trace(os.path.join(
            dir_name, f"{worker}.{time.time_ns() // 1000000}.pt.trace.json"))
    return handler


class profile:
    """`torch.profiler.profile(activities=None, schedule=None, on_trace_ready=None, ...)`
    (and `torch.autograd.profiler.profile(enabled=True, ...)`): records wick's eager ops and
    `record_function` blocks while active (see the module docstring)."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None,
                 record_shapes=False, profile_memory=False, with_stack=False,
                 with_flops=False, with_modules=False, experimental_config=None,
                 execution_trace_observer=None, acc_events=False, use_cuda=None,
                 enabled=True, **kwargs):
        self.activities = activities
        self.schedule = schedule
        self.on_trace_ready = on_trace_ready
        self.enabled = enabled
        self.record_shapes = record_shapes
        self.step_num = 0
        self._events: list = []
        self._recording = False
        self._last = 0.0

    # ---- recording

    def _hook(self, op, inputs, attrs, out) -> None:
        now = _now_us()
        self._events.append(FunctionEvent(f"aten::{op.name}", self._last, now))
        self._last = now

    def _start(self) -> None:
        if not self._recording:
            self._recording = True
            self._last = _now_us()
            dispatch.POST_HOOKS.append(self._hook)
            _ACTIVE.append(self)

    def _stop(self) -> None:
        if self._recording:
            self._recording = False
            dispatch.POST_HOOKS.remove(self._hook)
            _ACTIVE.remove(self)

    def _action(self) -> ProfilerAction:
        return self.schedule(self.step_num) if self.schedule else ProfilerAction.RECORD

    def start(self) -> None:
        if self.enabled and self._action() in (ProfilerAction.RECORD,
                                               ProfilerAction.RECORD_AND_SAVE):
            self._start()

    def stop(self) -> None:
        self._stop()
        if self.on_trace_ready is not None and self.schedule is None and self.enabled:
            self.on_trace_ready(self)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def step(self) -> None:
        """Advance the schedule: start or stop recording, and hand a finished recording to
        `on_trace_ready`."""
        before = self._action()
        self.step_num += 1
        after = self._action()
        if before == ProfilerAction.RECORD_AND_SAVE:
            self._stop()
            if self.on_trace_ready is not None:
                self.on_trace_ready(self)
        if after in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
            if before not in (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE):
                self._events = []
            self._start()
        elif self._recording:
            self._stop()

    # ---- results

    def events(self) -> EventList:
        return EventList(self._events)

    def key_averages(self, group_by_input_shape=False, group_by_stack_n=0,
                     group_by_overload_name=False) -> EventList:
        groups: dict = {}
        for ev in self._events:
            groups.setdefault(ev.name, FunctionEventAvg(ev.name)).add(ev)
        return EventList(groups.values())

    def export_chrome_trace(self, path: str) -> None:
        trace = {"traceEvents": [
            {"name": ev.name, "ph": "X", "ts": ev.time_range_start, "dur": ev.cpu_time_total,
             "pid": os.getpid(), "tid": 0, "cat": "cpu_op" if ev.name.startswith("aten::")
             else "user_annotation"} for ev in self._events]}
        with open(path, "w") as f:
            json.dump(trace, f)

    def table(self, *args, **kwargs) -> str:
        return self.key_averages().table(*args, **kwargs)

    def __str__(self) -> str:
        return self.table()


class record_function:
    """`with record_function("name"):` (or as a decorator): one event spanning the block in
    every active profile."""

    def __init__(self, name: str, args=None):
        self.name = name
        self._start = 0.0

    def __enter__(self):
        self._start = _now_us()
        return self

    def __exit__(self, *exc):
        end = _now_us()
        for prof in _ACTIVE:
            prof._events.append(FunctionEvent(self.name, self._start, end))
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with record_function(self.name):
                return fn(*args, **kwargs)
        return wrapper
