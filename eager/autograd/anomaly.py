"""Anomaly detection: find the forward op behind a NaN or an error in the backward pass.

`detect_anomaly()` (context manager / decorator) and `set_detect_anomaly(mode)` (call or
context manager) follow PyTorch's `torch.autograd.detect_anomaly`: while enabled, every node
recorded keeps the stack of the forward call that made it (recorded only then: it costs);
during backward, a node whose gradients contain NaN raises RuntimeError naming the node, the
forward op and the user's file:line, and any error raised inside a node's backward is preceded
by a warning carrying that forward traceback.

Touches the `_hk` slot of nodes (through `Node.hooks()`) and the engine's `_CHECKS` list.
"""

from __future__ import annotations

import functools
import os
import threading
import traceback
import warnings

import numpy as np

from .lazy import plain_grad
from .nodes import _CHECKS


class _State(threading.local):
    """Per-thread anomaly mode; class attributes are the defaults (no AttributeError raised
    and caught on every backward pass, as `getattr(local, name, default)` does)."""

    enabled = False
    check_nan = True


_state = _State()
_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # .../eager
_IR = os.path.join(os.path.dirname(_HERE), "ir")
_GENERATED = ("<eager fast path", "<backward plan")  # code eager generates (dispatch, plans)


def is_anomaly_enabled() -> bool:
    return _state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    return _state.check_nan


def _set(enabled: bool, check_nan: bool) -> None:
    _state.enabled = bool(enabled)
    _state.check_nan = bool(check_nan)
    if enabled and _record not in _CHECKS:
        _CHECKS.append(_record)
    elif not enabled and _record in _CHECKS:
        _CHECKS.remove(_record)


class set_detect_anomaly:
    """`set_detect_anomaly(mode, check_nan=True)`: sets anomaly mode now, or for a `with`
    block (restoring the previous mode on exit)."""

    def __init__(self, mode: bool, check_nan: bool = True):
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _set(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False


class detect_anomaly:
    """Context manager / decorator enabling anomaly detection (warns that it is slow, as
    PyTorch does)."""

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan

    def __enter__(self):
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime "
                      "and should only be enabled for debugging.", UserWarning, stacklevel=2)
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        _set(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        _set(*self.prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with detect_anomaly(self.check_nan):
                return fn(*args, **kwargs)

        return wrapper


class ForwardTrace:
    """Where a node was recorded: the whole stack, and the user's innermost frame."""

    __slots__ = ("op", "stack", "user")

    def __init__(self, stack, op: str):
        self.stack = stack
        self.op = op
        self.user = next((f for f in reversed(stack) if not _internal(f.filename)), None)

    def where(self) -> str:
        f = self.user
        if f is None:
            return "an unknown location"
        line = f" `{f.line.strip()}`" if f.line else ""
        return f"{f.filename}:{f.lineno}{line}"

    def format(self) -> str:
        return "".join(traceback.format_list(self.stack))


def _internal(filename: str) -> bool:
    if filename.startswith(_GENERATED):
        return True
    path = os.path.abspath(filename)
    return path.startswith((_HERE + os.sep, _IR + os.sep)) or "contextlib" in path


def _record(node, inputs) -> None:
    stack = traceback.extract_stack()[:-1]
    op = getattr(getattr(node, "op", None), "name", None) or node.name()
    node.hooks().trace = ForwardTrace(stack, op)


def _trace_of(node):
    hk = node._hk
    if hk is not None and hk.trace is not None:
        return hk.trace
    inner = getattr(node, "fn", None)  # CopySlices: the in-place op's node
    return _trace_of(inner) if inner is not None else None


def _warn(node) -> None:
    trace = _trace_of(node)
    if trace is None:
        warnings.warn(f"Error detected in {node.name()}. No forward pass information available. "
                      "Enable detect anomaly during forward pass for more information.",
                      UserWarning, stacklevel=4)
        return
    warnings.warn(f"Error detected in {node.name()}. Traceback of forward call that caused the "
                  f"error:\n{trace.format()}", UserWarning, stacklevel=4)


def checked_apply(node, g, F, create_graph):
    """`node.apply` under anomaly mode: errors get the forward trace; NaN gradients raise."""
    try:
        grads = [plain_grad(x) for x in node.apply(g, F, create_graph)]  # lazy ones computed here
    except Exception:
        _warn(node)
        raise
    if not is_anomaly_check_nan_enabled():
        return grads
    for i, gx in enumerate(grads):
        if gx is None:
            continue
        a = gx._data
        if a.dtype.kind in "fc" and bool(np.isnan(a).any()):
            _warn(node)
            trace = _trace_of(node)
            where = ""
            if trace is not None:
                where = (f" The forward op '{trace.op}' that created it was called at "
                         f"{trace.where()}.")
            raise RuntimeError(f"Function '{node.name()}' returned nan values in its {i}th "
                               f"output.{where}")
    return grads
