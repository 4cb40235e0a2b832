"""`torch.tensor(n)` of an automatic-dynamic int argument in the graph (the data tutorial's
one-hot target transform `zeros(10).scatter_(0, torch.tensor(y), value=1)`, called with each
label): a fresh 0-d tensor made from the number's 0-d int64 graph input (`dynamic.py`), cast
to a constant `dtype=`, so one cache entry serves every label after the second, as
torch.compile's automatic dynamic ints. Anything else (a float without `dtype=`, which takes
the default dtype; other keywords) takes the constant path, which specialises the number.
`torch.as_tensor(t, dtype=...)` / `torch.asarray(t)` of a traced tensor (RL libraries'
`as_tensor(clipped, dtype=torch.float32).mean()`) is the tensor itself or a cast.
Touches `capture` only.
"""

from __future__ import annotations

from ir import dtypes as D


def tensor_of_number(tx, args, kwargs, record, const):
    """The tracker of `tensor(n)` / `as_tensor(n)` for a dynamic int `n`, or None.
    `record(tx, op_name, inputs, attrs)` records an op; `const(v)` reads a constant."""
    num = args[0] if len(args) == 1 else None
    if type(num).__name__ != "SymNumberVariable" or set(kwargs) - {"dtype"} or \
            type(num.number) is not int and "dtype" not in kwargs:
        return None
    src = num.input if num.input is not None else \
        (num.placeholder() if num.source is not None else None)
    if src is None:
        return None
    dtype = D.to_dtype(const(kwargs["dtype"])) if "dtype" in kwargs else D.int64
    if dtype is src.meta.dtype:
        return record(tx, "clone", [src], {})
    return record(tx, "cast", [src], {"dtype": dtype})


def of_tensor(tx, fn, args, kwargs, cast, const, no_graph_form):
    """`as_tensor(mask, dtype=torch.float32)` / `asarray(t)` of a traced tensor: the tensor
    itself when the dtype is its own (as eagerly: the same object), else a cast
    (differentiable, as eager's); a copy, another device or a positional dtype is one named
    break; None for anything else (`tensor(t)`, not a tensor). `cast(tx, t, dtype)` records a
    cast; `const(tx, fn, v)` reads a constant."""
    if fn.__name__ not in ("as_tensor", "asarray") or not args or \
            type(args[0]).__name__ != "TensorVariable":
        return None
    if len(args) > 1:
        raise no_graph_form(tx, fn, "a positional dtype/device")
    kw = {k: const(tx, fn, v) for k, v in kwargs.items()}
    dtype, dev = kw.pop("dtype", None), kw.pop("device", None)
    if dev is not None and str(dev) != "cpu":
        raise no_graph_form(tx, fn, f"device={dev!r}")
    if kw.get("copy") is False and dtype is not None and dtype is not args[0].meta.dtype:
        raise ValueError("asarray(copy=False) cannot convert the dtype without a copy")
    if kw.pop("copy", None) or kw:
        raise no_graph_form(tx, fn, f"{', '.join(kwargs)} of a tensor")
    return cast(tx, args[0], D.to_dtype(dtype) if dtype is not None else args[0].meta.dtype)
