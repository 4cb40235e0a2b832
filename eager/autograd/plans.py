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
The rules' plumbing (reshape, expand, transpose, sum, matmul, where with a zero) is written as
numpy's own calls, with the folds numpy code by hand would make (`_FAST`): the same bits.

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

from ..tensor import Tensor
from .lazy import MetaTensor

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
        self.env: dict = {"np": np, "asarray": np.asarray, "ndarray": np.ndarray, "fix": _fix}
        self.n = 0
        self.defs: dict = {}  # target -> (op name, its operand's expression, refs, its shape)

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
        target = f"t{self.n}"
        fast = _FAST.get(op.name)
        fast = fast(self, target, args, used, inputs, meta, attrs, cd) if fast else None
        if fast is not None:  # numpy's own call, as the kernel makes it (see `_FAST`)
            call, used, checked = fast
            self.n += 1
            checked = (checked and bool(meta.shape)  # (0-d: numpy may give a scalar)
                       or _sure_array(op, meta, cd, out_dtype, inputs))
            onp = None if checked else self.const(out_dtype.np)
            self.lines.append((target, call, onp, used))
            return Sym(meta, target)
        direct = _direct(op, cd, attrs) if op.kind == "elementwise" else None
        if direct is not None:  # one ufunc (np.multiply, np.exp): no Python frame
            call = f"{self.const(direct)}({', '.join(args)})"
            uf = direct
            if meta.numel == 1 and isinstance(uf, np.ufunc) and cd.np.kind in "fc" and \
                    out_dtype.np == cd.np:  # a number that an expand may make an array of
                self.defs[f"t{self.n}"] = ("one", uf, args, used, None)
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


# ---------------------------------------------------------------- numpy's own calls
#
# The ops of backward rules' plumbing (reshape, expand, transpose, sum, matmul, where with a
# zero) written as the numpy call their kernel makes, without the kernel's Python frame, and
# two patterns folded as numpy code by hand would: a keepdim sum reshaped to drop the kept dims
# is one sum without keepdim (sum_to_shape's, bias gradients), and a reshape that only adds
# leading ones before an expand is left to broadcast_to (mean's and sum's gradients). Each
# builder gets (tracer, target, operand expressions, refs used, operands, out meta, attrs,
# compute dtype) and returns (expression, refs used, whether the result is surely an ndarray
# of the out dtype) or None (the kernel's generic call). The bits are the kernels' bits.


def _fast_reshape(tr, target, args, used, inputs, meta, attrs, cd):
    src = inputs[0]
    if not isinstance(src, Sym):
        return None
    d = tr.defs.get(src.ref)
    if d is not None and d[0] == "sum" and meta.shape == d[3]:  # sum(keepdim) + reshape
        return d[1], d[2], False
    tr.defs[target] = ("reshape", args[0], used, src.meta.shape)
    return f"{args[0]}.reshape({tr.const(meta.shape)})", used, True


def _fast_expand(tr, target, args, used, inputs, meta, attrs, cd):
    src = inputs[0]
    if not isinstance(src, Sym):
        return None
    expr, shape, ref = args[0], src.meta.shape, src.ref
    d = tr.defs.get(ref)
    if d is not None and d[0] == "reshape" and \
            (1,) * (len(shape) - len(d[3])) + d[3] == shape:  # reshape(1, .., 1, *s) + expand
        expr, used, ref = d[1], d[2], d[2][0]
        d = tr.defs.get(ref)
    if meta.numel > _FILL_MAX:
        return f"{tr.const(np.broadcast_to)}({expr}, {tr.const(meta.shape)})", used, True
    # a small expand is filled in: one C call instead of broadcast_to's Python frames, and a
    # contiguous gradient, cheaper for the ops that read it
    new = f"{tr.const(np.empty)}({tr.const(meta.shape)}, {tr.const(meta.dtype.np)})"
    if d is not None and d[0] == "one":  # a number computed straight into it (mean's g / n)
        return f"{tr.const(d[1])}({', '.join(d[2])}, out={new})", d[3], True
    return f"{tr.const(np.copyto)}({target} := {new}, {expr}) or {target}", used, True


def _fast_transpose(tr, target, args, used, inputs, meta, attrs, cd):
    if not isinstance(inputs[0], Sym):
        return None
    d0, d1 = attrs["dim0"], attrs["dim1"]
    if inputs[0].meta.ndim == 2 and d0 != d1:
        return f"{args[0]}.T", used, True
    return f"{args[0]}.swapaxes({d0}, {d1})", used, True


def _fast_permute(tr, target, args, used, inputs, meta, attrs, cd):
    if not isinstance(inputs[0], Sym):
        return None
    return f"{args[0]}.transpose({tr.const(tuple(attrs['dims']))})", used, True


def _fast_sum(tr, target, args, used, inputs, meta, attrs, cd):
    # np.sum(x, axis, keepdims) on an ndarray is np.add.reduce(x, axis, keepdims=...)
    x = inputs[0]
    if not isinstance(x, Sym) or cd.np.kind not in "fc" or attrs["dim"] is None:
        return None
    dim = tuple(attrs["dim"])
    red = tr.const(np.add.reduce)
    if attrs["keepdim"] and cd.np == meta.dtype.np:  # (a half sum runs in float32: its
        # cast back to the out dtype stays with the reshape, which is not folded then)
        shape = tuple(n for i, n in enumerate(x.meta.shape) if i not in dim)
        tr.defs[target] = ("sum", f"{red}({args[0]}, {tr.const(dim)})", used, shape)
    return f"{red}({args[0]}, {tr.const(dim)}, keepdims={bool(attrs['keepdim'])})", used, False


def _fast_matmul(tr, target, args, used, inputs, meta, attrs, cd):
    if not all(isinstance(x, Sym) for x in inputs):
        return None
    return f"{tr.const(np.matmul)}({args[0]}, {args[1]})", used, False


_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def _fast_where(tr, target, args, used, inputs, meta, attrs, cd):
    # where(c, x, +0.0) on a float x: x's bits times c (elementwise._where_impl's own path:
    # exact, NaN and inf in x become 0 where c is False; relu's and masks' backward)
    c, x, y = inputs
    dt = cd.np
    if not (isinstance(c, Sym) and c.dtype.np == np.bool_ and isinstance(x, Sym) and
            x.dtype.np == dt and meta.dtype.np == dt and type(y) is float and y == 0.0 and
            str(y) == "0.0" and np.dtype(dt) in (np.float16, np.float32, np.float64)):
        return None
    u = tr.const(_UINT[np.dtype(dt).itemsize])
    mul = tr.const(np.multiply)
    return f"{mul}({args[1]}.view({u}), {args[0]}, dtype={u}).view({tr.const(dt)})", used, True


_FILL_MAX = 2048  # elements: larger expands stay broadcast views (O(1) to make)
_FAST = {"reshape": _fast_reshape, "expand": _fast_expand, "transpose": _fast_transpose,
         "permute": _fast_permute, "sum": _fast_sum, "matmul": _fast_matmul,
         "where": _fast_where}


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
    from .engine import finish_grads

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


def remember(cache: dict, key, value, limit: int):
    """`cache[key] = value`, emptying `cache` first when it holds `limit` entries; `value`."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value


def clear() -> None:
    """Forget every traced plan, and the backward programs (`programs.py`) built from them."""
    from . import programs

    PLANS.clear()
    programs.PROGRAMS.clear()
    programs.SEEN.clear()
    programs.BY_ID.clear()


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
        fn = remember(PLANS, key, build(node, _wrap(ga)), MAX_PLANS)
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
            res[i] = _wrap(r)
    r = None
    return res


_tnew = Tensor.__new__


def _wrap(arr) -> Tensor:
    t = _tnew(Tensor)
    t._data = arr
    t.requires_grad = t._retains_grad = False
    t.grad = t.grad_fn = t._base = t._backward_hooks = t._fw_grad = None
    t._vc = [0]
    return t
