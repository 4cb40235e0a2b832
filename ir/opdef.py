"""The op registry: one `OpDef` per op, from which every layer derives what it needs.

An op is declared once (see `ir/ops.py`) with its signature, kind, type-promotion kind, shape
rule, per-element `scalar` formula (elementwise ops), eager `impl` over an array namespace,
`backward` written in registry ops, `decomp` for composites, and a numpy `ref` for the tests.
`eager` turns each OpDef into a function, a Tensor method and dunders; `capture` records OpDefs
as graph nodes; `codegen` renders their scalar formulas. In the spirit of PyTorch's
native_functions.yaml + derivatives.yaml + OpInfo, and JAX's primitives. Imports nothing of
wick's outside `ir`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

from . import dtypes as D
from .dtypes import DType
from .promotion import DEFAULT, Rule, as_rule
from .scalar import UFUNCS, ArrayBuilder, ufunc_of

NUMBER = (bool, int, float, complex)


def is_number(x) -> bool:
    return isinstance(x, NUMBER)


@dataclass(frozen=True)
class TensorMeta:
    """Static description of a tensor: shape (tuple of ints), dtype, device ("cpu"/"cuda")."""

    shape: tuple
    dtype: DType
    device: str = "cpu"

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def dim(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __str__(self) -> str:
        short = {"float32": "f32", "float64": "f64", "int64": "i64", "bool": "b8"}
        return f"{short.get(self.dtype.name, self.dtype.name)}[{', '.join(map(str, self.shape))}]"


class MetaView:
    """Tensor-style metadata read off `self.meta` (a `TensorMeta`): `shape`, `dtype`, `device`,
    `ndim`, `dim()`, `size(dim)`, `numel()`, as eager's Tensor shows them, so registry
    decompositions and backward rules (which read `x.shape`) run on every layer's values: the
    autodiff recorder's `Value`, the tracer's `Proxy`, capture's `TensorVariable`. A subclass
    provides `meta` (an attribute or a property that raises when the metadata is unknown)."""

    __slots__ = ()

    @property
    def shape(self) -> tuple:
        return self.meta.shape

    @property
    def dtype(self) -> DType:
        return self.meta.dtype

    @property
    def device(self) -> str:
        return self.meta.device

    @property
    def ndim(self) -> int:
        return len(self.meta.shape)

    def dim(self) -> int:
        return len(self.meta.shape)

    def size(self, dim: int | None = None):
        shape = self.meta.shape
        return shape if dim is None else shape[dim]

    def numel(self) -> int:
        return self.meta.numel


# ---------------------------------------------------------------- shape helpers


def broadcast_shapes(*shapes) -> tuple:
    """NumPy/PyTorch broadcasting; raises RuntimeError naming both shapes when they clash."""
    ndim = max((len(s) for s in shapes), default=0)
    out = [1] * ndim
    for s in shapes:
        for i, n in enumerate(s):
            j = ndim - len(s) + i
            if out[j] == 1:
                out[j] = n
            elif n != 1 and n != out[j]:
                shown = " and ".join(str(tuple(x)) for x in shapes)
                raise RuntimeError(
                    f"shapes {shown} cannot be broadcast: size {n} does not match size "
                    f"{out[j]} at dimension {j - ndim} (counting from the last)"
                )
    return tuple(out)


def normalize_dim(dim: int, ndim: int) -> int:
    """Wrap a possibly negative dim; raises IndexError with PyTorch's wording."""
    lo, hi = (-ndim, ndim - 1) if ndim > 0 else (-1, 0)
    if not isinstance(dim, int) or isinstance(dim, bool):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if not lo <= dim <= hi:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{lo}, {hi}], but got {dim})"
        )
    return dim % ndim if ndim > 0 else 0


def normalize_dims(dim, ndim: int) -> tuple:
    """None -> all dims; int or sequence -> sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if isinstance(dim, int):
        dim = (dim,)
    out = sorted({normalize_dim(d, ndim) for d in dim})
    if len(out) != len(tuple(dim)):
        raise RuntimeError(f"dim {tuple(dim)} appears multiple times in the list of dims")
    return tuple(out)


def sum_to_shape(F, g, shape: tuple):
    """Reduce a broadcast gradient `g` back to `shape` (the vjp of broadcasting), with ops `F`."""
    gshape = tuple(g.shape)
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    dims = tuple(range(lead)) + tuple(
        lead + i for i, n in enumerate(shape) if n == 1 and gshape[lead + i] != 1
    )
    if dims:
        g = F.sum(g, dims, keepdim=True)
    return F.reshape(g, tuple(shape))


# ---------------------------------------------------------------- the OpDef


# numpy's keyword names that PyTorch's argument parser accepts for its own (`x.sum(axis=1)`,
# `x.argmax(axis=1)`, `x.mean(0, keepdims=True)`: python_arg_parser's numpy_python_arg_aliases)
NUMPY_ALIASES = {"axis": "dim", "keepdims": "keepdim", "x": "input", "a": "input", "x1": "input",
                 "x2": "other"}


def _numpy_aliases(params, kwargs: dict) -> dict:
    """`kwargs` with numpy's names renamed to the op's parameters they alias, where the op has
    that parameter, not the alias, and the call does not give both."""
    out = kwargs
    for k in kwargs:
        to = NUMPY_ALIASES.get(k)
        if to is not None and k not in params and to in params and to not in kwargs:
            if out is kwargs:
                out = dict(kwargs)
            out[to] = out.pop(k)
    return out


@dataclass
class OpDef:
    """One op. See the module docstring and ARCHITECTURE.md for what each field feeds.

    - `sig`: the Python parameter list, PyTorch's order and defaults ("input, other, *, alpha=1");
      the first `nin` parameters are tensor operands (a Python number is accepted where
      `scalar_ok`), the rest are attributes.
    - `kind`: "elementwise", "reduction", "view", "matmul", "composite".
    - `promotion`: the dtype rule, an `ir.promotion.Rule`: `rule(operands, attrs) -> (compute
      dtype, result dtype)` (operands as (dtype, ndim) pairs or numbers; it may raise for dtypes
      the op does not support): `Kind("default")`, `Data(positions)`, `Fixed(dtype)`, `Promo`...
      (a kind's name or a bare callable is turned into a rule).
    - `promote_from`: tensor operands from this position on are cast to the compute dtype
      before `impl` (default: the rule's `start`, the first operand that takes part).
    - `shape_numbers`: the shape rule sees Python-number operands as they are (a `dim`
      operand), not as the shape `()`.
    - `shape(*shapes, **attrs)`: output shape from input shapes (elementwise: broadcasting).
    - `attrs_rule(metas, attrs)`: canonicalises attributes (dims wrapped, -1 sizes inferred).
    - `scalar(b, *xs, **attrs)`: the per-element formula over a scalar builder (`ir/scalar.py`).
    - `impl(xp, *arrays, **attrs)`: eager kernel; elementwise ops derive it from `scalar`, or
      give a faster one with the same results (the `scalar` stays for codegen); an impl with
      `float_is_scalar = True` is the formula on floating dtypes (eager then calls it directly).
    - `backward(F, g, out, *xs, **attrs)`: a tuple with one gradient (or None) per operand,
      written with the registry ops in namespace `F`; may return broadcast-shaped gradients.
    - `decomp(F, *xs, **attrs)`: composites are defined by other ops and need nothing else.
    - `eager_impl(xp, *arrays, **attrs)`: optional, composites only: eager's kernel when nothing
      is recorded (no operand requires grad under grad mode, no post hooks); it must give the
      decomposition's exact results, or None to run the decomposition (which capture, codegen
      and autograd always use); with `eager_impl_rounding = True` its results equal the
      decomposition's up to the rounding of its sums (row sums as BLAS products: a few ulps
      of the sum's terms), and the tests compare them within that bound.
    - `eager_backward(F, g, out, *xs, **attrs)`: optional, composites with `eager_impl` only: a
      rule for the composite as a whole (the `backward` contract; PyTorch's rule, equal to
      the decomposition's up to rounding where values are finite). Then eager runs
      `eager_impl` under grad mode too and records one node
      (`MeanBackward0`) instead of the decomposition's; without post hooks (forward AD,
      anomaly mode), which, like capture and codegen, see the decomposition.
    - `eager_applies(metas, attrs)`: with `eager_backward`: whether eager runs `eager_impl` and
      records one node for tensor operands of these metas (TensorMeta, device included) and
      canonical attrs; `eager_impl` returns None exactly where it is False. Compiled autograd
      (`ir.autodiff`) then differentiates the decomposition as a whole by `eager_backward`, so
      compiled gradients are eager's (NaN/inf placement included).
    - `node_name`: optional, composites recorded whole: the class name of their autograd node
      where PyTorch's differs from "<Name>Backward0" (`_cross_entropy` is
      "NllLossBackward0", as `print(loss)` shows it in PyTorch).
    - `jvp(F, tangents, out, *xs, **attrs)`: optional forward-mode rule (else derived from
      `backward`).
    - `ref(*np_arrays, **attrs)`: an independent numpy/scipy reference for the tests.
    - `dynamic_shape`: the output shape depends on the data (nonzero, masked_select, unique):
      the shape rule cannot be evaluated without data; capture breaks the graph on it.
    - `variadic`: the first parameter is a sequence of tensors (`cat(tensors, dim=0)`); `bind`
      spreads it into the operands, so every layer sees an ordinary operand tuple.
    - `aliases`: other PyTorch names of the same op (`clip` for `clamp`): same function object.
    - `inplace`: generate an in-place `<name>_` method (default: elementwise ops that do not
      return bool).
    - Every primitive op has exactly one output. Ops with several outputs (max with indices,
      sort, topk, var_mean, chunk...) are composites whose `decomp` returns a tuple.
    - `sample_inputs(rng, dtype)`: optional generator of (operands, attrs) for the test matrix
      (numpy arrays and Python numbers); without it, samples derive from `kind`/`samples`.
    - `ufunc`: kernel fact, elementwise ops: the name of the numpy/cupy ufunc (or
      scipy.special's) equal to the formula with default attributes (`"add"`, `"tanh"`); found
      at registration when the formula is one scalar primitive on the operands in order
      (`ir.scalar.UFUNCS`); `ufunc_kernel` gives the callable. Eager's fast paths and backward
      plans call it directly.
    - `reduce`: kernel fact, reductions codegen fuses: (combine primitive, identity), the
      identity a number or "min"/"max" (the dtype's lowest/highest value): sum is
      ("add", 0), amax ("maximum", "min").
    """

    name: str
    kind: str
    sig: str
    nin: int = 1
    promotion: Rule = DEFAULT
    shape: Callable | None = None
    attrs_rule: Callable | None = None
    scalar: Callable | None = None
    impl: Callable | None = None
    backward: Callable | None = None
    decomp: Callable | None = None
    eager_impl: Callable | None = None
    eager_impl_rounding: bool = False
    eager_backward: Callable | None = None
    eager_applies: Callable | None = None
    node_name: str | None = None
    jvp: Callable | None = None
    ref: Callable | None = None
    sample_inputs: Callable | None = None
    dynamic_shape: bool = False
    inplace: bool | None = None
    aliases: tuple = ()
    variadic: bool = False
    method: bool = True
    dunders: tuple = ()
    scalar_ok: bool = True
    domain: tuple = (None, None)
    samples: tuple = ({},)
    test_dtypes: tuple | None = None
    promote_from: int | None = None
    shape_numbers: bool = False
    ufunc: str | None = None
    reduce: tuple | None = None
    signature: inspect.Signature = field(init=False, repr=False)

    def __post_init__(self):
        if self.promotion is DEFAULT and self.promote_from:  # an older spelling
            self.promotion = "default"
        self.promotion = as_rule(self.promotion, self.promote_from or 0, self.name)
        if self.promote_from is None:
            self.promote_from = self.promotion.start
        self.signature = inspect.signature(eval(f"lambda {self.sig}: None"))
        self.params = list(self.signature.parameters)
        self.input_names = self.params[: self.nin]
        self._varargs = next((p.name for p in self.signature.parameters.values()
                              if p.kind is p.VAR_POSITIONAL), None)
        self._fast_bind = None if self.variadic or self._varargs is not None else _binder(self)

    def operand_name(self, i: int) -> str:
        """The parameter name of operand `i`, for error messages."""
        if self.variadic:
            return f"{self.input_names[0]}[{i}]"
        return self.input_names[i] if i < len(self.input_names) else f"operand {i}"

    def __repr__(self) -> str:
        return f"<op {self.name}>"

    def ufunc_kernel(self, xp, compute=None):
        """The ufunc of namespace `xp` (numpy or cupy) computing this op with default attributes
        for `compute` dtype (None: any), when eager's kernel is the formula (`_impl_is_scalar`)
        and the formula is one ufunc (`ufunc`); else None."""
        if self.ufunc is None or not self.impl_is_scalar(compute):
            return None
        return ufunc_of(self.ufunc, xp)

    def impl_is_scalar(self, compute=None) -> bool:
        """Whether the eager kernel is the scalar formula (for `compute` dtype when given): the
        formula-derived impl, or an `impl` marked `float_is_scalar` (an integer check in front
        of the formula) on floating and complex dtypes."""
        if getattr(self.impl, "from_scalar", False):
            return self.scalar is not None
        return (self.scalar is not None and compute is not None
                and compute.category >= D.FLOATING and getattr(self.impl, "float_is_scalar", False))

    @property
    def differentiable(self) -> bool:
        return self.backward is not None or self.decomp is not None

    # ---- binding

    def bind(self, args: tuple, kwargs: dict):
        """Bind a call's arguments: (operands tuple, attrs dict with every default filled)."""
        fast = self._fast_bind
        if fast is not None:
            npos, names, defaults = fast
            nin, n = self.nin, len(args)
            if nin <= n <= npos:  # operands positional, known attributes: no inspect.bind
                attrs = dict(defaults)
                for i in range(nin, n):
                    attrs[names[i]] = args[i]
                for k, v in kwargs.items():
                    if k not in attrs or names.index(k) < n:
                        break
                    attrs[k] = v
                else:
                    if _REQUIRED not in attrs.values():
                        return (args if n == nin and type(args) is tuple
                                else tuple(args[:nin])), attrs
        if kwargs and not kwargs.keys() <= self.signature.parameters.keys():
            kwargs = _numpy_aliases(self.signature.parameters, kwargs)
        var = self._varargs
        if var is not None and var in kwargs:  # `reshape(x, shape=(2, 3))` as in PyTorch
            kwargs = dict(kwargs)
            args = tuple(args) + (tuple(kwargs.pop(var)),)
        try:
            ba = self.signature.bind(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.name}(): {e}; expected ({self.sig})") from None
        ba.apply_defaults()
        vals = ba.arguments
        if self.variadic:
            seq = vals[self.input_names[0]]
            if not isinstance(seq, (tuple, list)):
                raise TypeError(f"{self.name}(): argument '{self.input_names[0]}' must be a "
                                f"tuple or list of Tensors, not {type(seq).__name__}")
            return tuple(seq), {n: vals[n] for n in self.params[1:]}
        inputs = tuple(vals[n] for n in self.input_names)
        attrs = {n: vals[n] for n in self.params[self.nin :]}
        return inputs, attrs

    # ---- meta: shapes and dtypes without data

    def dtypes(self, inputs: tuple, attrs: dict):
        """(compute dtype, result dtype) for operands given as TensorMeta or Python numbers."""
        return self.promotion([(m.dtype, m.ndim) if isinstance(m, TensorMeta) else m
                               for m in inputs], attrs)

    def canonical_attrs(self, inputs: tuple, attrs: dict) -> dict:
        return self.attrs_rule(inputs, dict(attrs)) if self.attrs_rule else attrs

    def meta(self, inputs: tuple, attrs: dict) -> TensorMeta:
        """Output TensorMeta from operand metas (TensorMeta or numbers) and canonical attrs.

        Raises RuntimeError for operands on different devices or shapes that do not fit.
        """
        tensors = [m for m in inputs if isinstance(m, TensorMeta)]
        if not tensors:
            raise TypeError(f"{self.name}(): expected at least one tensor operand")
        devices = {m.device for m in tensors}
        if len(devices) > 1:
            a, b = sorted(devices)
            raise RuntimeError(
                "Expected all tensors to be on the same device, but found at least two "
                f"devices, {a} and {b}!"
            )
        _, out_dtype = self.dtypes(inputs, attrs)
        shapes = [m.shape for m in tensors]
        if self.shape is not None or self.shape_numbers:
            keep = self.shape_numbers
            shape = self.shape(*[m.shape if isinstance(m, TensorMeta) else m if keep else ()
                                 for m in inputs], **attrs)
        else:
            shape = broadcast_shapes(*shapes)
        return TensorMeta(tuple(shape), out_dtype, tensors[0].device)


_REQUIRED = object()  # an attribute without a default (inspect.bind reports it missing)


def _binder(op: OpDef):
    """(number of positional parameters, parameter names, attribute defaults) for `bind`'s
    fast path; None when some parameter is positional-only (inspect.bind handles those)."""
    params = list(op.signature.parameters.values())
    if any(p.kind is p.POSITIONAL_ONLY or p.kind is p.VAR_KEYWORD for p in params):
        return None
    npos = sum(p.kind is p.POSITIONAL_OR_KEYWORD for p in params)
    defaults = {p.name: _REQUIRED if p.default is p.empty else p.default
                for p in params[op.nin:]}
    return npos, [p.name for p in params], defaults


REGISTRY: dict[str, OpDef] = {}


def register(op: OpDef) -> OpDef:
    """Add an op to the registry; its name must be new."""
    if op.name in REGISTRY:
        raise ValueError(f"op {op.name!r} registered twice")
    if op.kind == "elementwise" and op.impl is None:
        op.impl = _impl_from_scalar(op)
    if op.ufunc is None and op.kind == "elementwise" and op.scalar is not None:
        op.ufunc = _formula_ufunc(op)
    REGISTRY[op.name] = op
    return op


def _impl_from_scalar(op: OpDef):
    """The eager kernel of an elementwise op: its scalar formula evaluated on whole arrays."""
    def impl(xp, *arrays, **attrs):
        return op.scalar(ArrayBuilder(xp), *arrays, **attrs)

    impl.__name__ = f"{op.name}_impl"
    impl.from_scalar = True
    return impl


class _Probe:
    """A scalar builder that records the one primitive a formula applies."""

    def __getattr__(self, name):
        if name not in UFUNCS:
            raise AttributeError(name)
        return lambda *args: (_Probe, name, args)


def _formula_ufunc(op: OpDef) -> str | None:
    """The ufunc name of `op`'s formula when it is one primitive applied to the operands in
    order with default attributes (`b.add(x, y)`), else None."""
    marks = tuple(object() for _ in range(op.nin))
    attrs = {n: p.default for n, p in list(op.signature.parameters.items())[op.nin:]}
    if any(v is inspect.Parameter.empty for v in attrs.values()):
        return None
    try:
        r = op.scalar(_Probe(), *marks, **attrs)
    except Exception:  # noqa: BLE001  (a formula the probe cannot follow: no ufunc)
        return None
    if isinstance(r, tuple) and len(r) == 3 and r[0] is _Probe and r[2] == marks:
        return UFUNCS[r[1]]
    return None


class OpNamespace:
    """`F.add(x, y, alpha=2)`: calls every registry op through one `apply(op, inputs, attrs)`.

    eager applies ops immediately, capture records them into a graph; backward rules and
    decompositions are written against this namespace so that both can run them.
    """

    def __init__(self, apply: Callable[[OpDef, tuple, dict], Any]):
        self._apply = apply

    def __getattr__(self, name: str):
        op = REGISTRY.get(name)
        if op is None:
            raise AttributeError(f"no op named {name!r} in the registry")
        apply = self._apply

        def call(*args, **kwargs):
            inputs, attrs = op.bind(args, kwargs)
            return apply(op, inputs, attrs)

        call.__name__ = name
        return call
