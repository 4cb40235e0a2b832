"""PyTorch-style printing of tensors: `tensor([[ 0.1234, -1.0000]], dtype=eager.float64)`.

A port of `torch/_tensor_str.py` (the `_Formatter` choosing integer / fixed / scientific mode
from the non-zero finite values, summarisation with `...` beyond `threshold` elements, line
wrapping at `linewidth`, complex numbers as two formatters, the `dtype=`/`device=`/`grad_fn=`/
`requires_grad=` suffixes), working on numpy arrays. `set_printoptions` is
`torch.set_printoptions`. Imports only `ir.dtypes` and numpy.
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from ir import dtypes as D
from ir.meta_array import MetaArray

_DEFAULTS = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80,
             "sci_mode": None}
_PROFILES = {"default": {}, "short": {"precision": 2, "edgeitems": 2},
             "full": {"threshold": math.inf}}
_options = dict(_DEFAULTS)


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None,
                     profile=None, sci_mode=None):
    """`torch.set_printoptions`: digits after the point, the element count beyond which a
    tensor is summarised, items shown at each edge, characters per line, and scientific
    notation (True/False; None lets the formatter choose). `profile` is "default", "short"
    or "full". As in PyTorch, `sci_mode` is reset to None unless given."""
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"unknown print profile {profile!r}")
        _options.update(_DEFAULTS, **_PROFILES[profile])
    given = {"precision": precision, "threshold": threshold, "edgeitems": edgeitems,
             "linewidth": linewidth}
    for k, v in given.items():
        if v is not None:
            _options[k] = v
    _options["sci_mode"] = sci_mode


def get_printoptions() -> dict:
    return dict(_options)


@contextlib.contextmanager
def printoptions(**kwargs):
    """Temporarily changed print options (`torch._tensor_str.printoptions`)."""
    old = get_printoptions()
    set_printoptions(**kwargs)
    try:
        yield
    finally:
        set_printoptions(**old)


class _Formatter:
    """Chooses one width and notation for every element of a real array (PyTorch's rules)."""

    def __init__(self, a: np.ndarray):
        self.floating = a.dtype.kind == "f"
        self.int_mode = True
        self.sci_mode = False
        self.max_width = 1
        p = _options["precision"]
        flat = a.reshape(-1)
        if not self.floating:
            for v in flat.tolist():
                self.max_width = max(self.max_width, len(f"{v}"))
            return
        vals = flat[np.isfinite(flat) & (flat != 0)].astype(np.float64)
        if vals.size == 0:
            return
        absv = np.abs(vals)
        lo, hi = absv.min(), absv.max()
        self.int_mode = bool(np.all(vals == np.ceil(vals)))
        sci = _options["sci_mode"]
        self.sci_mode = (hi / lo > 1000.0 or hi > 1.0e8 or lo < 1.0e-4) if sci is None else sci
        vl = vals.tolist()
        if self.sci_mode:
            w = max(len(f"{v:.{p}e}") for v in vl)
        elif self.int_mode:
            w = max(len(f"{v:.0f}") for v in vl) + 1
        else:
            w = max(len(f"{v:.{p}f}") for v in vl)
        self.max_width = max(self.max_width, w)

    def width(self) -> int:
        return self.max_width

    def format(self, value) -> str:
        p = _options["precision"]
        if self.floating:
            if self.sci_mode:
                ret = f"{value:{self.max_width}.{p}e}"
            elif self.int_mode:
                ret = f"{value:.0f}"
                if not (math.isinf(value) or math.isnan(value)):
                    ret += "."
            else:
                ret = f"{value:.{p}f}"
        else:
            ret = f"{value}"
        return (self.max_width - len(ret)) * " " + ret


def _val_str(val, f1: _Formatter, f2: _Formatter | None) -> str:
    if f2 is None:
        return f1.format(val)
    real = f1.format(val.real)
    imag = (f2.format(val.imag) + "j").lstrip()
    return real + imag if imag[0] in "+-" else real + "+" + imag


def _vector_str(a, indent, summarize, f1, f2) -> str:
    element_length = f1.width() + 2 + (f2.width() + 1 if f2 is not None else 0)
    per_line = max(1, math.floor((_options["linewidth"] - indent) / element_length))
    e = _options["edgeitems"]
    if summarize and not e:
        data = ["..."]
    elif summarize and a.shape[0] > 2 * e:
        data = ([_val_str(v, f1, f2) for v in a[:e].tolist()] + [" ..."]
                + [_val_str(v, f1, f2) for v in a[-e:].tolist()])
    else:
        data = [_val_str(v, f1, f2) for v in a.tolist()]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + ("," + "\n" + " " * (indent + 1)).join(lines) + "]"


def _str_with(a, indent, summarize, f1, f2=None) -> str:
    if a.ndim == 0:
        return _val_str(a.item(), f1, f2)
    if a.ndim == 1:
        return _vector_str(a, indent, summarize, f1, f2)
    e = _options["edgeitems"]
    n = a.shape[0]
    if summarize and n > 2 * e:
        rows = ([_str_with(a[i], indent + 1, summarize, f1, f2) for i in range(e)] + ["..."]
                + [_str_with(a[i], indent + 1, summarize, f1, f2) for i in range(n - e, n)])
    else:
        rows = [_str_with(a[i], indent + 1, summarize, f1, f2) for i in range(n)]
    return "[" + ("," + "\n" * (a.ndim - 1) + " " * (indent + 1)).join(rows) + "]"


def _summarized(a: np.ndarray) -> np.ndarray:
    """Only the elements a summarised print shows (they alone set the formatter's width)."""
    e = _options["edgeitems"]
    if a.ndim == 0:
        return a
    if a.ndim == 1:
        return np.concatenate([a[:e], a[-e:]]) if a.shape[0] > 2 * e else a
    if not e:
        return a[(slice(0, 0),) * a.ndim]
    rows = list(range(e)) + list(range(a.shape[0] - e, a.shape[0])) \
        if a.shape[0] > 2 * e else range(a.shape[0])
    return np.stack([_summarized(a[i]) for i in rows])


def array_str(a: np.ndarray, indent: int) -> str:
    """The bracketed body of a tensor's repr (PyTorch's `_tensor_str`)."""
    if a.size == 0:
        return "[]"
    if a.dtype in (D.float16.np, D.bfloat16.np):
        a = a.astype(np.float32)
    summarize = a.size > _options["threshold"]
    if a.dtype.kind == "c":
        re, im = np.ascontiguousarray(a.real), np.ascontiguousarray(a.imag)
        f1 = _Formatter(_summarized(re) if summarize else re)
        f2 = _Formatter(_summarized(im) if summarize else im)
        return _str_with(a, indent, summarize, f1, f2)
    return _str_with(a, indent, summarize, _Formatter(_summarized(a) if summarize else a))


def _add_suffixes(body: str, suffixes: list, indent: int) -> str:
    parts = [body]
    last_line_len = len(body) - body.rfind("\n") + 1
    for s in suffixes:
        if last_line_len + len(s) + 2 > _options["linewidth"]:
            parts.append(",\n" + " " * indent + s)
            last_line_len = indent + len(s)
        else:
            parts.append(", " + s)
            last_line_len += len(s) + 2
    parts.append(")")
    return "".join(parts)


def tensor_repr(t) -> str:
    """`repr(tensor)` as PyTorch prints it, with `eager.` in place of `torch.`."""
    prefix = "tensor("
    indent = len(prefix)
    a = t._data
    suffixes = []
    if type(a) is MetaArray:  # no data: PyTorch prints "..." and the size
        suffixes += ["device='meta'", f"size={tuple(a.shape)}"]
        if t.dtype is not D.get_default_dtype():
            suffixes.append(f"dtype={t.dtype!r}")
        return _add_suffixes(prefix + "...", suffixes + _grad_suffixes(t), indent)
    if not isinstance(a, np.ndarray):
        suffixes.append(f"device='{t.device}'")
        a = a.get()
    dt = t.dtype
    has_default = dt in (D.get_default_dtype(), D.default_complex_dtype(), D.int64, D.bool_)
    if a.size == 0:
        if a.ndim != 1:
            suffixes.append(f"size={tuple(a.shape)}")
        if dt is not D.get_default_dtype():
            suffixes.append(f"dtype={dt!r}")
        body = "[]"
    else:
        if not _options["edgeitems"]:
            suffixes.append(f"size={tuple(a.shape)}")
        if not has_default:
            suffixes.append(f"dtype={dt!r}")
        body = array_str(a, indent)
    return _add_suffixes(prefix + body, suffixes + _grad_suffixes(t), indent)


def _grad_suffixes(t) -> list:
    node = t.grad_fn
    if node is not None:
        name = node.name() if callable(getattr(node, "name", None)) else type(node).__name__
        return [f"grad_fn=<{name}>"]
    return ["requires_grad=True"] if t.requires_grad else []
