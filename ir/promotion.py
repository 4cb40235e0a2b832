"""Dtype rules: the one vocabulary of `OpDef.promotion`.

A rule is an object called as `rule(operands, attrs) -> (compute dtype, result dtype)`, with
every operand of the op given as a `(dtype, ndim)` pair (a tensor) or a Python number, and the
op's canonical attributes. It may raise for dtypes the op has no kernel for (PyTorch's error
types and messages). The rules:

- `Kind(kind, start=0, name=None)`: PyTorch's standard type promotion (`torch.result_type`) of
  the operands from position `start`, then one of the kinds of PyTorch's
  `ELEMENTWISE_TYPE_PROMOTION_KIND` and reductions: "default", "int_to_float" (integer/bool
  results become the default float dtype), "always_bool", "keep", "sum" (integers and bool
  accumulate in int64; the `dtype` attribute wins), "float_only" (mean: floating or complex
  only; the `dtype` attribute wins; `name` names the op in the error), "attr" (the `dtype`
  attribute, operands ignored: `cast`). A `Kind` compares equal to its kind's name.
  `DEFAULT`, `INT_TO_FLOAT`, `ALWAYS_BOOL`, `KEEP`, `SUM`, `ATTR` are the shared instances.
- `Data(positions, every=False)`: the result type of the operands at `positions` (`every`:
  all operands, for variadic ops), computed in that dtype: gathers, scatters, joins whose
  index operands keep their own dtype.
- `Fixed(dtype)` / `Fixed(fn)`: a fixed dtype, or `fn(operands, attrs)` -> dtype (tensor
  operands shown as `Operand` pairs with `.dtype` and `.ndim`; `argsort` -> int64).
- `Own(fn, start=0)`: an op-specific rule `fn(operands from start, attrs) -> (compute, result)`
  (heaviside's same-dtype check, complex views' real/complex dtypes).
- `Promo` (`ir/ops/declare.py`) is a `Rule` too: `Kind`-style promotion plus the dtypes an op
  has no kernel for.

`as_rule` turns the older spellings (a kind's name, a bare callable) into rules. Imports only
`ir.dtypes`.
"""

from __future__ import annotations

from collections import namedtuple

from . import dtypes as D

Operand = namedtuple("Operand", "dtype ndim")

KINDS = ("default", "int_to_float", "always_bool", "keep", "sum", "float_only", "attr")


class Rule:
    """Base of the dtype rules: `rule(operands, attrs) -> (compute, result)`; `start`: the first
    operand position that takes part (`OpDef.promote_from` defaults to it); `doc`: how the
    generated docstrings name the rule."""

    start = 0
    doc = "op-specific"

    def __call__(self, ops, attrs):
        raise NotImplementedError


class Kind(Rule):
    """A standard promotion kind (see the module docstring)."""

    __slots__ = ("doc", "kind", "name", "start")

    def __init__(self, kind: str, start: int = 0, name: str | None = None):
        if kind not in KINDS:
            raise ValueError(f"unknown promotion kind {kind!r}")
        self.kind, self.start, self.name, self.doc = kind, start, name, kind

    def __eq__(self, other):
        if isinstance(other, str):
            return self.kind == other
        return isinstance(other, Kind) and (self.kind, self.start, self.name) == \
            (other.kind, other.start, other.name)

    def __hash__(self):
        return hash((self.kind, self.start, self.name))

    def __repr__(self) -> str:
        return f"Kind({self.kind!r}" + (f", start={self.start}" if self.start else "") + ")"

    def __call__(self, ops, attrs):
        p = self.kind
        if p == "attr":  # the result dtype is the `dtype` attribute (cast)
            return attrs["dtype"], attrs["dtype"]
        if self.start:
            ops = ops[self.start:]
        base = D.result_type(*ops)
        if p == "default" or p == "keep":
            return base, base
        if p == "int_to_float":
            f = base if base.category >= D.FLOATING else D.get_default_dtype()
            return f, f
        if p == "always_bool":
            return base, D.bool_
        if p == "sum":
            out = attrs.get("dtype") or (D.int64 if base.category <= D.INTEGER else base)
            return out, out
        out = attrs.get("dtype") or base  # float_only
        if out.category < D.FLOATING:
            raise RuntimeError(
                f"{self.name}(): could not infer output dtype. Input dtype must be either "
                f"a floating point or complex dtype. Got: {base.name}"
            )
        return out, out


DEFAULT, INT_TO_FLOAT, ALWAYS_BOOL = Kind("default"), Kind("int_to_float"), Kind("always_bool")
KEEP, SUM, ATTR = Kind("keep"), Kind("sum"), Kind("attr")


class Data(Rule):
    """The result type of the operands at `positions` (all with `every`); with none of them
    present, the first operand's dtype."""

    __slots__ = ("every", "positions")
    doc = "the data operands' dtype"

    def __init__(self, positions: tuple = (0,), every: bool = False):
        self.positions, self.every = tuple(positions), every

    def __repr__(self) -> str:
        return "Data(every)" if self.every else f"Data({self.positions})"

    def __call__(self, ops, attrs):
        pos = self.positions
        sel = [o for i, o in enumerate(ops) if self.every or i in pos]
        if not sel:
            first = ops[0]
            sel = [first[0] if isinstance(first, tuple) else first.dtype]  # a number: its error
        out = D.result_type(*sel)
        return out, out


class Fixed(Rule):
    """A fixed dtype, or `fn(operands, attrs) -> dtype` (tensors as `Operand` pairs)."""

    __slots__ = ("fixed",)
    doc = "a fixed dtype"

    def __init__(self, fixed):
        self.fixed = fixed

    def __repr__(self) -> str:
        return f"Fixed({getattr(self.fixed, 'name', 'op rule')})"

    def __call__(self, ops, attrs):
        fixed = self.fixed
        if callable(fixed):
            out = fixed([Operand(*o) if isinstance(o, tuple) else o for o in ops], attrs)
        else:
            out = fixed
        return out, out


class Own(Rule):
    """An op-specific rule `fn(operands from start, attrs) -> (compute, result)`."""

    __slots__ = ("fn", "start")

    def __init__(self, fn, start: int = 0):
        self.fn, self.start = fn, start

    def __repr__(self) -> str:
        return f"Own({getattr(self.fn, '__name__', 'rule')})"

    def __call__(self, ops, attrs):
        return self.fn(ops[self.start:] if self.start else ops, attrs)


def as_rule(p, start: int = 0, name: str | None = None) -> Rule:
    """A rule from a `Rule`, a kind's name or a bare `rule(operands, attrs)` callable (the
    operands from `start`; `name`: the op's, for "float_only"'s error)."""
    if isinstance(p, Rule):
        return p
    if isinstance(p, str):
        return Kind(p, start, name)
    if callable(p):
        return Own(p, start)
    raise TypeError(f"promotion must be a dtype rule (ir.promotion), got {p!r}")
