"""`torch.tensor(n)` of an automatic-dynamic int argument in the graph (the data tutorial's
one-hot target transform `zeros(10).scatter_(0, torch.tensor(y), value=1)`, called with each
label): a fresh 0-d tensor made from the number's 0-d int64 graph input (`dynamic.py`), cast
to a constant `dtype=`, so one cache entry serves every label after the second, as
torch.compile's automatic dynamic ints. Anything else (a float without `dtype=`, which takes
the default dtype; other keywords) takes the constant path, which specialises the number.
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
