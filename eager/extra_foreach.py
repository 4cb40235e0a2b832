"""PyTorch's `torch._foreach_*` functions: one op applied to each tensor of a list (EMA updates,
hand-written optimizers: `torch._foreach_mul_(ema, d); torch._foreach_add_(ema, p, alpha=1-d)`).

Each is a loop over Tensor methods (the registry ops), so autograd, capture (which inlines this
module as a composition) and every dtype behave as the per-tensor calls. As PyTorch's:

- unary `_foreach_exp(tensors)` returns a tuple of results; `_foreach_exp_(tensors)` works in
  place and returns the list;
- binary (`add sub mul div pow maximum minimum clamp_min clamp_max`) take as `other` a number,
  a Tensor, a list of numbers or a list of tensors (the same length as `self`); `add`/`sub`
  take `alpha`; `_foreach_pow(number, tensors)` raises a number to each tensor;
- `addcmul`/`addcdiv(self, tensor1, tensor2, value=1)` (value: a number, a list of numbers or a
  1-d Tensor), `lerp(self, tensors1, weight)`, `norm(self, ord=2, dtype=None)`, `max`,
  `clone`, `zero_`, `copy_(self, src)`.

Lists of different lengths raise RuntimeError("Tensor lists must have the same number of
tensors, got 2 and 3"). Semantics: PyTorch's native_functions.yaml `_foreach_*` entries.
"""

from __future__ import annotations

from .linalg import vector_norm
from .tensor import Tensor

UNARY = ("abs", "acos", "asin", "atan", "ceil", "cos", "cosh", "erf", "erfc", "exp", "expm1",
         "floor", "frac", "lgamma", "log", "log10", "log1p", "log2", "neg", "reciprocal",
         "round", "rsqrt", "sigmoid", "sign", "sin", "sinh", "sqrt", "tan", "tanh", "trunc")
BINARY = ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "clamp_min", "clamp_max")
# the method a binary op takes with a number and with a tensor (and the in-place form, when
# Tensor has one)
_WITH_TENSOR = {"clamp_min": "maximum", "clamp_max": "minimum"}
_WITH_NUMBER = {"maximum": "clamp_min", "minimum": "clamp_max"}


def _pairs(self, other, what="tensors"):
    """(tensor, its operand) for each tensor of `self`: `other` a list (of equal length) or one
    value for all."""
    self = list(self)
    if isinstance(other, (list, tuple)):
        if len(other) != len(self):
            raise RuntimeError(f"Tensor lists must have the same number of {what}, got "
                               f"{len(self)} and {len(other)}")
        return list(zip(self, other))
    if isinstance(other, Tensor) and other.dim() == 1 and what == "scalars":
        return _pairs(self, [other[i] for i in range(other.shape[0])], what)
    return [(t, other) for t in self]


def _method(name, operand):
    if isinstance(operand, Tensor):
        return _WITH_TENSOR.get(name, name)
    return _WITH_NUMBER.get(name, name)


def _unary(name):
    def out_of_place(self):
        return tuple(getattr(t, name)() for t in self)

    def in_place(self):
        for t in self:
            getattr(t, name + "_")()
        return self

    return out_of_place, in_place


def _binary(name):
    def out_of_place(self, other, **kwargs):
        if not isinstance(self, (list, tuple)):  # `_foreach_pow(2.0, tensors)`
            return tuple(self ** e for e in other)
        return tuple(getattr(t, _method(name, o))(o, **kwargs) for t, o in _pairs(self, other))

    def in_place(self, other, **kwargs):
        for t, o in _pairs(self, other):
            method = _method(name, o)
            if hasattr(Tensor, method + "_"):
                getattr(t, method + "_")(o, **kwargs)
            else:  # `maximum` of two tensors has no in-place method
                t.copy_(getattr(t, method)(o, **kwargs))
        return self

    return out_of_place, in_place


def _pointwise(name):
    def out_of_place(self, tensor1, tensor2, value=1):
        ones = _pairs(self, tensor1)
        return tuple(getattr(t, name)(a, b, value=v) for (t, a), (_, b), (_, v) in
                     zip(ones, _pairs(self, tensor2), _pairs(self, value, "scalars")))

    def in_place(self, tensor1, tensor2, value=1):
        ones = _pairs(self, tensor1)
        for (t, a), (_, b), (_, v) in zip(ones, _pairs(self, tensor2),
                                          _pairs(self, value, "scalars")):
            getattr(t, name + "_")(a, b, value=v)
        return self

    return out_of_place, in_place


def _foreach_lerp(self, tensors1, weight):
    return tuple(t.lerp(e, w) for (t, e), (_, w) in zip(_pairs(self, tensors1),
                                                        _pairs(self, weight)))


def _foreach_lerp_(self, tensors1, weight):
    for (t, e), (_, w) in zip(_pairs(self, tensors1), _pairs(self, weight)):
        t.lerp_(e, w)
    return self


def _foreach_norm(self, ord=2, dtype=None):
    return tuple(vector_norm(t, ord, dtype=dtype) for t in self)


def _foreach_max(self):
    return tuple(t.max() for t in self)


def _foreach_clone(self):
    return tuple(t.clone() for t in self)


def _foreach_zero_(self):
    for t in self:
        t.zero_()
    return self


def _foreach_copy_(self, src, non_blocking=False):
    for t, s in _pairs(self, src):
        t.copy_(s, non_blocking)
    return self


def _named(fn, name):
    fn.__name__ = fn.__qualname__ = name
    return fn


def install(namespace: dict) -> None:
    """Put every `_foreach_*` function into `namespace` (eager's top level)."""
    for names, make in ((UNARY, _unary), (BINARY, _binary), (("addcmul", "addcdiv"), _pointwise)):
        for name in names:
            out_of_place, in_place = make(name)
            namespace[f"_foreach_{name}"] = _named(out_of_place, f"_foreach_{name}")
            namespace[f"_foreach_{name}_"] = _named(in_place, f"_foreach_{name}_")
    for fn in (_foreach_lerp, _foreach_lerp_, _foreach_norm, _foreach_max, _foreach_clone,
               _foreach_zero_, _foreach_copy_):
        namespace[fn.__name__] = fn
