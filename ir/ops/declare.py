"""How an elementwise op is declared: the dtype categories, `Promo` (an `OpDef.promotion` rule:
PyTorch's type promotion plus the dtypes an op has no kernel for), `unary`/`binary` (register a
one- or two-operand primitive), `prim` (a scalar formula that is one builder primitive),
`float_ref` (a numpy reference computed in PyTorch's precision), `_attr_samples`
(dtype-dependent `sample_inputs`) and the small backward helpers every family uses (`_grad`,
`_conj`, `_zero_grad`). The op families (`elementwise.py`, `unary.py`, `activations.py`,
`reductions.py`...) import these through `elementwise`. Imports only `ir` and numpy.
"""

from __future__ import annotations

import math

import numpy as np

from .. import dtypes as D
from ..opdef import OpDef, is_number, register
from ..promotion import Rule
from ..scalar import ArrayBuilder

BOOL, INTEGER, FLOATING, COMPLEX = D.BOOL, D.INTEGER, D.FLOATING, D.COMPLEX
FLOATS = (D.float32, D.float64)
LN2, LN10 = math.log(2.0), math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


class Promo(Rule):
    """An `OpDef.promotion` rule: PyTorch's type promotion of the operands, then a check that the
    op has a kernel for the common dtype (else PyTorch's NotImplementedError `"abs" not
    implemented for 'Bool'`, or the op's own error).

    - `kind`: "default" (result_type), "int_to_float" (integer/bool results become the default
      float dtype), "always_bool", "int64" (compute in the input dtype, return int64: argmax),
      or a callable `(common dtype, attrs) -> (compute, result)`.
    - `reject`: categories (`BOOL`, `INTEGER`, `COMPLEX`, ...) or dtypes the op refuses.
    - `error`: `(exception type, message)` used instead of NotImplementedError.
    - `tensors_only`: check the tensors' common dtype, not the one Python numbers raise it to
      (lerp(int, int, 0.5) has no integer kernel).
    """

    __slots__ = ("error", "kind", "name", "reject", "tensors_only")

    def __init__(self, name, kind="default", reject=(), error=None, tensors_only=False):
        self.name, self.kind, self.reject, self.error = name, kind, tuple(reject), error
        self.tensors_only = tensors_only

    def supports(self, dtype) -> bool:
        return dtype.category not in self.reject and dtype not in self.reject

    def __call__(self, ops, attrs):
        base = D.result_type(*ops)
        checked = D.result_type(*[o for o in ops if isinstance(o, tuple)]) \
            if self.tensors_only else base
        if not self.supports(checked):
            exc, msg = self.error or (NotImplementedError,
                                      f'"{self.name}" not implemented for \'{_title(checked)}\'')
            raise exc(msg)
        kind = self.kind
        if kind == "default":
            return base, base
        if kind == "int_to_float":
            f = base if base.category >= FLOATING else D.get_default_dtype()
            return f, f
        if kind == "always_bool":
            return base, D.bool_
        if kind == "int64":
            return base, D.int64
        return kind(base, attrs)

    def __repr__(self) -> str:
        kind = self.kind if isinstance(self.kind, str) else "own rule"
        return f"{kind} (no {', '.join(_reject_name(r) for r in self.reject)})" \
            if self.reject else kind


def _to_real(dt):
    """complex64 -> float32, complex128 -> float64 (abs of a complex tensor is real)."""
    return dt.to_real() if hasattr(dt, "to_real") else dt


def _title(dt) -> str:
    return getattr(dt, "title", dt.name)


def _reject_name(r) -> str:
    return r.name if isinstance(r, D.DType) else ("bool", "int", "float", "complex")[r]


def dtype_of(x):
    """The wick dtype of a Tensor, capture tracker, numpy array or Python number."""
    if is_number(x):
        return D.default_for_category(D.scalar_category(x))
    return D.to_dtype(x.dtype)


def prim(name):
    """The scalar formula that is one builder primitive: `prim("add")(b, x, y)`."""
    def scalar(b, *xs):
        return getattr(b, name)(*xs)
    scalar.__name__ = name
    return scalar


def float_ref(ref, int_to_float=True):
    """A numpy reference computed as PyTorch computes: integer/bool arrays of an op with a
    floating result become float64 first (numpy would do int8 math in float16, and uint8
    negation wraps); float16/bfloat16 data is computed in float32 and rounded back once."""
    def wrapped(*xs, **attrs):
        half = next((x.dtype for x in xs if isinstance(x, np.ndarray) and x.dtype.kind == "f"
                     and x.dtype.itemsize == 2 or getattr(x, "dtype", None) is not None and
                     x.dtype.name == "bfloat16"), None)
        xs = [x.astype(np.float64) if int_to_float and isinstance(x, np.ndarray) and
              x.dtype.kind in "biu" else x.astype(np.float32) if half is not None and
              isinstance(x, np.ndarray) and x.dtype == half else x for x in xs]
        r = ref(*xs, **attrs)
        if half is not None and np.asarray(r).dtype.kind == "f":
            return np.asarray(r).astype(half)
        return r
    wrapped.__name__ = getattr(ref, "__name__", "ref")
    return wrapped


def _grad(x, g):
    """The gradient of a Python-number operand is None (it is not a tensor)."""
    return None if is_number(x) else g


def _conj(F, v):
    """`v`'s complex conjugate when `v` is complex, else `v` itself: backward rules follow
    PyTorch's conjugate Wirtinger convention (grad_input = grad * f'(z).conj(),
    derivatives.yaml), and branching on the dtype keeps real rules', plans' and graphs' ops
    unchanged. `v`: a Tensor, a traced value showing `.dtype`, or a Python number."""
    if is_number(v):
        return v.conjugate() if isinstance(v, complex) else v
    return F.conj(v) if v.dtype.is_complex else v


def _zero_grad(F, g, out, *xs, **_):
    """Piecewise-constant ops (floor, sign, ...): PyTorch's zero gradient for every operand."""
    return tuple(_grad(x, F.mul(g, 0.0)) for x in xs)


NO_BOOL = (BOOL,)
REAL_FLOAT = (BOOL, INTEGER, COMPLEX)
NO_COMPLEX = (COMPLEX,)


def unary(name, scalar, backward, ref, kind="int_to_float", reject=NO_COMPLEX, **kw):
    """Declare a one-operand elementwise primitive."""
    promo = kw.pop("promotion", None) or Promo(name, kind, reject)
    return register(OpDef(name, "elementwise", kw.pop("sig", "input"), 1, promo,
                          scalar=scalar, backward=backward,
                          ref=float_ref(ref, getattr(promo, "kind", None) == "int_to_float"),
                          **kw))


def binary(name, scalar, backward, ref, kind="default", reject=(), sig="input, other", **kw):
    """Declare a two-operand (broadcasting) elementwise primitive."""
    promo = kw.pop("promotion", None) or Promo(name, kind, reject)
    return register(OpDef(name, "elementwise", sig, 2, promo, scalar=scalar, backward=backward,
                          ref=float_ref(ref, getattr(promo, "kind", None) == "int_to_float"),
                          **kw))


def _int_checked(scalar):
    """An eager kernel that raises PyTorch's RuntimeError("ZeroDivisionError") for an integer
    division by zero, then runs `scalar` (floats give inf/nan as IEEE says)."""

    def impl(xp, x, y, **attrs):
        if xp.result_type(x, y).kind in "iub" and (y == 0 if is_number(y) else not xp.all(y)):
            raise RuntimeError("ZeroDivisionError")
        return scalar(ArrayBuilder(xp), x, y, **attrs)

    impl.float_is_scalar = True  # on floating dtypes it is the formula: eager may skip the check
    return impl


def _attr_samples(attrs_for, nin, lo=None):
    """`sample_inputs` for an op whose attribute choices depend on the dtype (rounding modes
    are for integers and floats only, `decimals` for floats only): `attrs_for(dtype)` on
    broadcasting operands (values >= `lo` when given)."""
    def arr(rng, shape, dtype):
        if dtype is D.bool_:
            return rng.random(shape) < 0.5
        if dtype.category == INTEGER:
            return rng.integers(0 if lo is None else max(1, int(lo)), 6, shape).astype(dtype.np)
        x = rng.uniform(-3.0 if lo is None else lo, 3.0, shape)
        return (x + 0.5j if dtype.category == COMPLEX else x).astype(dtype.np)

    def sample_inputs(rng, dtype):
        for attrs in attrs_for(dtype):
            for shapes in ([(3, 4), (4,)], [(3, 1), (1, 4)])[:2] if nin == 2 else \
                    ([(3, 4)], [(2, 1, 5)]):
                yield tuple(arr(rng, s, dtype) for s in shapes), attrs
    return sample_inputs
