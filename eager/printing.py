"""PyTorch-style printing of tensors: `tensor([[ 0.1234, -1.0000]], dtype=eager.float64)`."""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

_options = {"precision": 4, "threshold": 1000, "edgeitems": 3, "linewidth": 80}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None):
    """`torch.set_printoptions`: digits after the point, summarisation threshold, edge items."""
    for k, v in dict(precision=precision, threshold=threshold, edgeitems=edgeitems,
                     linewidth=linewidth).items():
        if v is not None:
            _options[k] = v


def _format_data(a: np.ndarray) -> str:
    kw = dict(separator=", ", prefix="tensor(", threshold=_options["threshold"],
              edgeitems=_options["edgeitems"], max_line_width=_options["linewidth"])
    if a.dtype.kind == "f":
        finite = a[np.isfinite(a)]
        whole = finite.size == 0 or bool(np.all(finite == np.round(finite)))
        big = finite.size and (np.abs(finite).max() >= 1e8 or
                               (np.abs(finite[finite != 0]).min(initial=1) < 1e-4))
        if whole and not big:
            return np.array2string(a, floatmode="unique", **kw).replace(".,", ".,")
        return np.array2string(a, precision=_options["precision"], floatmode="fixed",
                               suppress_small=False, **kw) if not big else \
            np.array2string(a, precision=_options["precision"], floatmode="fixed", **kw)
    if a.dtype.kind == "b":
        width = 5 if not a.all() else 4
        return np.array2string(a, formatter={"bool": lambda v: str(bool(v)).rjust(width)}, **kw)
    return np.array2string(a, **kw)


def tensor_repr(t) -> str:
    a = t._data
    body = _format_data(a)
    extras = []
    if a.size == 0 and a.ndim != 1:
        extras.append(f"size={tuple(a.shape)}")
    dt = t.dtype
    default = {D.FLOATING: D.get_default_dtype(), D.INTEGER: D.int64, D.BOOL: D.bool_}
    if default.get(dt.category) is not dt:
        extras.append(f"dtype={dt!r}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return "tensor(" + body + "".join(", " + e for e in extras) + ")"
