"""PyTorch's `torch.return_types`: the named tuples ops with several results return (`max`,
`sort`, `topk`, `linalg_svd`, ...). `return_type(name, fields)` is a namedtuple class that
prints as PyTorch's structseq does - `eager.return_types.max(\\nvalues=...,\\nindices=...)` -
so `print(x.max(1))` lays out its numbers as torch's. Imports nothing."""

from __future__ import annotations

from collections import namedtuple

__all__ = ["return_type"]


def return_type(name: str, fields) -> type:
    """A namedtuple class `name` with `fields` and PyTorch's multi-line repr."""
    base = namedtuple(name, fields)

    def __repr__(self) -> str:
        body = ",\n".join(f"{f}={v!r}" for f, v in zip(self._fields, self))
        return f"eager.return_types.{name}(\n{body})"

    return type(name, (base,), {"__slots__": (), "__repr__": __repr__,
                                "__doc__": f"`torch.return_types.{name}`: {base.__doc__}"})
