"""`torch.jit` as ordinary model code meets it: wick has no TorchScript, so code always runs as
Python. `is_scripting()` / `is_tracing()` are False (the answer PyTorch gives outside
`torch.jit.script` / `torch.jit.trace`, and under torch.compile), and the decorators that only
steer the TorchScript compiler (`ignore`, `unused`, `export`) return the function unchanged, as
they leave it callable from Python in PyTorch. `script` returns its function or module
unchanged: research code decorates fused helpers with `@torch.jit.script` (Megatron's
bias_gelu) and calls them from Python, where the scripted function computes what the Python
one does (and torch.compile traces the Python original). `trace`, `save` and `load` are absent
(AttributeError): there is no TorchScript program to build. Semantics: torch/_jit_internal.py,
torch/jit/_script.py.
"""

from __future__ import annotations

from typing import Final  # `torch.jit.Final[int]` annotations on modules

__all__ = ["Final", "annotate", "export", "ignore", "is_scripting", "is_tracing", "script",
           "unused"]


def is_scripting() -> bool:
    """`torch.jit.is_scripting()`: False (no code runs under TorchScript in wick)."""
    return False


def is_tracing() -> bool:
    """`torch.jit.is_tracing()`: False (wick has no `torch.jit.trace`)."""
    return False


def ignore(drop=False, **kwargs):
    """`@torch.jit.ignore` / `@torch.jit.ignore(drop=True)`: the function, unchanged."""
    if callable(drop):
        return drop
    if not isinstance(drop, bool):
        msg = f"Argument to @torch.jit.ignore must be a bool or a function but got {drop}"
        raise RuntimeError(msg)  # noqa: TRY004  (PyTorch's error type)
    return lambda fn: fn


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """`torch.jit.script(fn_or_module)` / `@torch.jit.script`: the function or module itself,
    run as Python (wick has no TorchScript compiler; the values are the ones TorchScript
    computes for the same code). Raises TypeError, as PyTorch, for an object that is neither
    callable nor a class."""
    if not callable(obj):
        raise TypeError(f"torch.jit.script expected a function, a class or an nn.Module, got "
                        f"{type(obj).__name__}")
    return obj


def unused(fn):
    """`@torch.jit.unused`: the function (or property), unchanged."""
    return fn


def export(fn):
    """`@torch.jit.export`: the method, unchanged."""
    return fn


def annotate(the_type, the_value):
    """`torch.jit.annotate(List[int], [])`: the value (the type only informs TorchScript)."""
    return the_value
