"""A kernel's structural key: the text that determines its rendered LLVM IR, without rendering.

`codegen.jit` keys compiled kernels by a hash of their IR rendered under a neutral symbol;
rendering (building the function with llvmlite.ir and printing it) costs about 1 ms a kernel,
and most kernels of a training step are cache hits (a model's repeated layers lower to the same
kernels, forward and backward), so `jit.compile_batch` first looks a kernel up by this key and
renders only on a miss. `structural_key(kernel)` prints every dataclass field of the `Kernel`
that `render_kernel` can read (loops, buffers with their dtypes, shapes and strides, phases,
statements with their operands and attributes, SSA values by identity and name, accumulators,
stores, blocking), recursively, with every value typed (`1`, `1.0` and `True` differ); it
leaves out only what rendering never reads: the kernel's name (buffer names are kept), the
graph nodes, and the results of compiling. A value of a type it does not know makes the key
None (the kernel is rendered), so a key never stands for two different IR texts. Imports only
the standard library, `ir.dtypes` and `codegen.trace`.
"""

from __future__ import annotations

import dataclasses
import hashlib

from ir.dtypes import DType

from .trace import Var

# Kernel/Buffer fields rendering never reads (names from the graph, graph nodes, results)
_SKIP = frozenset({"name", "nodes", "node", "llvm_ir", "source_ir", "symbol", "cfunc",
                   "address", "group"})
_SCALARS = (bool, int, float, str, type(None))


class _Unknown(Exception):
    pass


def _put(x, out: list, ids: dict) -> None:
    t = type(x)
    if t in _SCALARS:
        out.append(f"{t.__name__}:{x!r}")
    elif isinstance(x, DType):
        out.append(f"D:{x.name}")
    elif t is Var:   # SSA values are objects: their identity, not just their name
        out.append(f"V{ids.setdefault(id(x), len(ids))}:{x.name}:{x.dtype.name}")
    elif t in (tuple, list):
        out.append(f"{t.__name__}{len(x)}(")
        for v in x:
            _put(v, out, ids)
        out.append(")")
    elif t is dict:
        out.append(f"dict{len(x)}(")
        for k, v in x.items():
            _put(k, out, ids)
            _put(v, out, ids)
        out.append(")")
    elif dataclasses.is_dataclass(x) and not isinstance(x, type):
        out.append(f"{t.__name__}(")
        for f in dataclasses.fields(x):
            if f.name not in _SKIP or (f.name == "name" and t.__name__ != "Kernel"):
                out.append(f.name + "=")
                _put(getattr(x, f.name), out, ids)
        out.append(")")
    elif hasattr(x, "dtype") and hasattr(x, "item") and getattr(x, "shape", None) == ():
        out.append(f"np.{x.dtype.str}:{x.item()!r}")   # a numpy scalar
    else:
        raise _Unknown(t.__name__)


def structural_key(kernel) -> str | None:
    """sha256 of the kernel's structure (see the module docstring), or None when it holds a
    value this cannot print faithfully."""
    out: list = []
    try:
        _put(kernel, out, {})
    except _Unknown:
        return None
    return hashlib.sha256("\x1f".join(out).encode()).hexdigest()
