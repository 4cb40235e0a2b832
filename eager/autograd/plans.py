"""Backward plans: a node's backward rule traced once, then run as straight-line numpy code.

Without `create_graph`, a `BackwardNode` runs the same rule for the same op, attributes,
operand shapes/dtypes (and Python-number operand values) again and again (every training
step). The first time, the rule (and the engine's reduction/cast of its results, see
`engine.finish_grads`) is run symbolically through `TF`, a namespace that checks each registry
op with its meta rules and records it; the steps that the needed gradients depend on become a
generated Python function calling each op's kernel on arrays, cached under that key. Later
calls only build the key and call the function: the rule's dispatch overhead disappears, and
gradients nobody needs are never computed. A rule that looks at data (not only at shapes) or
uses a data-dependent op cannot be traced: its op goes the lazy way (`lazy.LF`) from then on.
Each step calls the op's own kernel: its ufunc (`OpDef.ufunc_kernel`), formula or `impl`.

The same idea as capture's graphs and codegen's kernels, at the scale of one node. Imports `ir`
and eager's Tensor; used by `engine.BackwardNode.apply`.
"""

from __future__ import annotations

from keyword import iskeyword

import numpy as np

from ir import REGISTRY
from ir import dtypes as D
from ir.execute import opmath
from ir.opdef import OpDef, TensorMeta
from ir.scalar import ArrayBuilder

from ..caches import remember
from ..tensor import Tensor, wrap_array
from . import nodes
from .lazy import MetaTensor
from .nodes import finish_grads

_B = ArrayBuilder(np)
_UNTRACEABLE: set = set()  # op names whose rules read data
PLANS: dict = {}
MAX_PLANS = 4096
_NUMBERS = (bool, int, float, complex)
_SAME_WHEN_SHAPE_KEPT = frozenset({"reshape", "view", "expand", "broadcast_to"})


class Untraceable(Exception):
    """The rule needs data (or a data-dependent op): it cannot become a plan."""


class Sym(MetaTensor):
    """A symbolic value during tracing: metadata only; reading data raises `Untraceable`."""

    __slots__ = ("ref",)

    def __init__(self, meta: TensorMeta, ref: str):
        super().__init__(meta)
        self.ref = ref

    @property
    def _data(self):
        raise Untraceable

    def __bool__(self):
        raise Untraceable

    def item(self):
        raise Untraceable


def _sure_array(op, meta, cd, out_dtype, inputs) -> bool:
    """Whether numpy's ufunc/reduction/matmul on `inputs` (arrays of `cd` after their casts,
    Python numbers) surely gives an ndarray of `out_dtype`: a result with dims (not a numpy
    scalar) of a float/complex compute dtype kept as the out dtype (numbers are weak, NEP 50),
    or a comparison's bool. Then a plan step needs no `fix`."""
    if not meta.shape:
        return False
    for i, x in enumerate(inputs):
        if isinstance(x, Sym):
            if i < op.promote_from and x.dtype.np != cd.np:  # (not cast to cd)
                return False
        elif type(x) not in (bool, int, float):
            return False
    onp = out_dtype.np
    return onp == np.bool_ or (onp == cd.np and cd.np.kind in "fc")


def _fix(t, dtype):
    """A plan step's result as an ndarray of `dtype` (numpy may return a scalar, or promote)."""
    if type(t) is not np.ndarray:
        t = np.asarray(t)
    if t.dtype != dtype:
        t = t.astype(dtype)
    return t


class _Tracer:
    """Records registry op calls made on `Sym` values as code lines."""

    def __init__(self):
        self.lines: list = []  # (target, expression, [refs used])
        self.env: dict = {"np": np, "asarray": np.asarray, "ndarray": np.ndarray, "fix": _fix,
                          "__name__": __name__}  # (numpy's warnings: see eager.dispatch)
        self.n = 0

    def const(self, value) -> str:
        name = f"c{self.n}"
        self.n += 1
        self.env[name] = value
        return name

    def apply(self, op: OpDef, inputs: tuple, attrs: dict):
        metas = tuple(x.meta if isinstance(x, Tensor) else x for x in inputs)
        if any(isinstance(x, Tensor) and not isinstance(x, Sym) for x in inputs):
            raise Untraceable  # a tensor made outside the rule's ops (data of some kind)
        attrs = op.canonical_attrs(metas, attrs)
        if op.decomp is not None:
            if op.eager_applies is not None and not op.eager_impl_rounding and \
                    op.eager_applies(metas, attrs):
                return self._whole(op, inputs, attrs)
            return op.decomp(self.ns, *inputs, **attrs)
        if op.dynamic_shape:
            raise Untraceable
        meta = op.meta(metas, attrs)
        if op.name in _SAME_WHEN_SHAPE_KEPT and isinstance(inputs[0], Sym) and \
                meta.shape == inputs[0].meta.shape and meta.dtype == inputs[0].meta.dtype:
            return inputs[0]  # reshape to its own shape: the array itself (no view to copy)
        compute, out_dtype = op.dtypes(metas, attrs)
        cd = opmath(op, compute)
        args, used = [], []
        for i, x in enumerate(inputs):
            if isinstance(x, Sym):
                ref = x.ref
                used.append(ref)
                if i >= op.promote_from and x.dtype.np != cd.np:
                    ref = f"{ref}.astype({self.const(cd.np)})"
                args.append(ref)
            elif isinstance(x, _NUMBERS):
                if cd.category == 1 and cd.name != "int64" and type(x) is int:
                    raise Untraceable  # narrow-int wrapping: leave it to run_kernel
                args.append(self.const(x))
            else:
                raise Untraceable
        direct = _direct(op, cd, attrs) if op.kind == "elementwise" else None
        if direct is not None:  # one ufunc (np.multiply, np.exp): no Python frame
            call = f"{self.const(direct)}({', '.join(args)})"
        elif op.kind == "elementwise" and op.impl_is_scalar():
            fn = self.const(op.scalar)
            call = f"{fn}(B, {', '.join(args)}{self._kw(attrs)})"
        else:
            fn = self.const(op.impl)
            call = f"{fn}(np, {', '.join(args)}{self._kw(attrs)})"
        target = f"t{self.n}"
        self.n += 1
        sure = direct is not None and _sure_array(op, meta, cd, out_dtype, inputs)
        onp = None if sure else self.const(out_dtype.np)
        self.lines.append((target, call, onp, used))
        return Sym(meta, target)

    def _whole(self, op: OpDef, inputs: tuple, attrs: dict):
        """A composite eager runs whole (`eager_impl`, the decomposition's exact results) as
        one step calling that kernel; the decomposition, traced and dropped, gives its meta."""
        n0 = len(self.lines)
        r = op.decomp(self.ns, *inputs, **attrs)
        if not isinstance(r, Sym):  # (several outputs, or an operand itself: keep its steps)
            return r
        del self.lines[n0:]
        args = [x.ref if isinstance(x, Sym) else self.const(x) for x in inputs]
        target = f"t{self.n}"
        self.n += 1
        call = f"{self.const(op.eager_impl)}(np, {', '.join(args)}{self._kw(attrs)})"
        self.lines.append((target, call, self.const(r.dtype.np),
                           [x.ref for x in inputs if isinstance(x, Sym)]))
        return Sym(r.meta, target)

    def _kw(self, attrs: dict) -> str:
        """Attributes as keyword arguments (each a constant: no dict built per call)."""
        if not attrs:
            return ""
        if all(k.isidentifier() and not iskeyword(k) for k in attrs):
            return "".join(f", {k}={self.const(v)}" for k, v in attrs.items())
        return ", **" + self.const(dict(attrs))


_DEFAULTS: dict = {}  # op name -> its attributes' defaults


def _direct(op: OpDef, compute, attrs: dict):
    """eager's ufunc kernel of `op` on `compute` dtype (`OpDef.ufunc_kernel`) when `attrs`
    are the defaults, or None."""
    fn = op.ufunc_kernel(np, compute)
    if fn is None:
        return None
    defaults = _DEFAULTS.get(op.name)
    if defaults is None:
        defaults = _DEFAULTS[op.name] = {n: p.default for n, p in
                                         list(op.signature.parameters.items())[op.nin:]}
    if attrs.keys() != defaults.keys() or any(
            type(v) is not type(defaults[k]) or v != defaults[k] for k, v in attrs.items()):
        return None
    return fn


class _TraceNamespace:
    def __init__(self, tracer: _Tracer):
        self._tracer = tracer
        tracer.ns = self

    def __getattr__(self, name: str):
        op = REGISTRY.get(name)
        if op is None:
            raise AttributeError(f"no op named {name!r} in the registry")
        tracer = self._tracer

        def call(*args, **kwargs):
            inputs, attrs = op.bind(args, kwargs)
            return tracer.apply(op, inputs, attrs)

        return call


_ND = np.ndarray
_DEFAULT = D._default_float  # [the default dtype]: read by get_default_dtype()


def build(node, g):
    """Trace `node`'s rule on symbols; returns the plan function or None (untraceable)."""
    op = node.op
    tracer = _Tracer()
    ns = _TraceNamespace(tracer)
    tracer.env["B"] = _B
    params = ["g", "out"]
    sym_g = Sym(g.meta, "g")
    out_meta = TensorMeta(node.out_data.shape, _dtype(node.out_data), "cpu")
    sym_out = Sym(out_meta, "out")
    args = []
    for i, x in enumerate(node.saved):
        if isinstance(x, Tensor):
            args.append(Sym(x.meta, f"a{i}"))
            params.append(f"a{i}")
        else:
            args.append(x)
            params.append(f"a{i}")
    try:
        grads = op.backward(ns, sym_g, sym_out, *args, **node.attrs)
        grads = finish_grads(ns, args, grads, node.next_functions, sym_g)
    except Untraceable:
        _UNTRACEABLE.add(op.name)
        return None
    except Exception:  # noqa: BLE001  (the generic path raises it with its own message)
        return None
    results = []
    for gx in grads:
        if gx is None:
            results.append("None")
        elif isinstance(gx, Sym):
            results.append(gx.ref)
        else:
            _UNTRACEABLE.add(op.name)
            return None
    needed = {r for r in results if r != "None"}
    body = []
    for target, call, onp, used in reversed(tracer.lines):  # keep what results depend on
        if target in needed:
            needed.update(used)
            body.append((target, call, onp))
    body.reverse()
    src = [f"def plan({', '.join(params)}):"]
    for target, call, onp in body:
        src.append(f"    {target} = {call}")
        if onp is not None:  # (None: the call gives an ndarray of the right dtype)
            src.append(f"    if type({target}) is not ndarray or {target}.dtype is not {onp}: "
                       f"{target} = fix({target}, {onp})")
    src.append(f"    return [{', '.join(results)}]")
    code = compile("\n".join(src), f"<backward plan of {op.name}>", "exec")
    exec(code, tracer.env)  # noqa: S102  (the traced plan as source, like torch.fx's codegen)
    fn = tracer.env["plan"]
    fn.source = "\n".join(src)
    return fn


# Caches built from plans (programs.py registers its own): emptied with PLANS.
DERIVED: list = []


def clear() -> None:
    """Forget every traced plan, and the backward programs (`programs.py`) built from them."""
    PLANS.clear()
    for cache in DERIVED:
        cache.clear()


def _dtype(a):
    return D.from_numpy(a.dtype)


def run_arrays(node, ga) -> list | None:
    """The node's gradients through its plan, as ndarrays (None where no gradient), for the
    gradient array `ga` of its output; or None to go the generic way (no plan possible, or
    stale/freed saved tensors: the generic path raises for those). The plan key: the op, the
    default dtype, the gradient's and the output's shape and dtype, the attributes, each
    operand's shape and dtype (("n", type, value) for a Python number), which edges exist."""
    saved = node.saved
    if saved is None or node.out_vc[0] != node.out_version:
        return None
    op = node.op
    name = op.name
    if name in _UNTRACEABLE:
        return None
    oa = node.out_data
    attrs = node.attrs
    key = [name, _DEFAULT[0], ga.shape, ga.dtype, oa.shape, oa.dtype,
           tuple(attrs.items()) if attrs else None]
    args = [ga, oa]
    kadd = key.append
    aadd = args.append
    for x, v in zip(saved, node.versions):
        if v is None:  # a Python number operand
            kadd(("n", type(x), x))
            aadd(x)
        else:
            if x._vc[0] != v:
                return None
            a = x._data
            if type(a) is not _ND:
                return None
            kadd(a.shape)
            kadd(a.dtype)
            aadd(a)
    for nxt, _ in node.next_functions:
        kadd(nxt is not None)
    key = tuple(key)
    node._pkey = key  # (release keeps it as the operands' metadata)
    try:
        fn = PLANS.get(key)
    except TypeError:  # an unhashable attribute
        return None
    if fn is None:
        if key in PLANS:
            return None
        fn = remember(PLANS, key, build(node, wrap_array(ga)), MAX_PLANS)
        if fn is None:
            return None
    return fn(*args)


def run(node, g) -> list | None:
    """`run_arrays` for a Tensor gradient `g`, with the results as plain Tensors."""
    ga = g._data
    if type(ga) is not _ND:
        return None
    res = run_arrays(node, ga)
    if res is None:
        return None
    for i, r in enumerate(res):
        if r is not None:
            res[i] = wrap_array(r)
    r = None
    return res


nodes.PLAN_RUN[0] = run
