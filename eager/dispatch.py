"""Eager execution of registry ops, and the functions/methods/dunders generated from them.

`apply(op, inputs, attrs)` is eager's one entry point: check the operands (types, devices,
shapes, dtypes through the registry's meta rules), run the kernel on the operands' array
namespace (numpy or cupy), make views share their base's version counter, and record an
autograd node when grad mode is on and an operand requires grad. `F` is the same as an
`OpNamespace`, used by backward rules and decompositions. `install()` derives `eager.<op>`
functions (with PyTorch's `out=`), `Tensor.<op>` methods, dunders and in-place `<op>_` methods
from the registry.

Per-op overhead: elementwise calls on CPU tensors of equal shapes (or a tensor and a Python
number) take a fast path that skips binding and meta objects but keeps every check: both
operands on the CPU, shapes that broadcast (numpy's rule is PyTorch's; a clash goes the general
way, which raises), the dtype rule of the op (evaluated once per dtype pair and cached), grad
mode. A formula that is one scalar primitive (add, exp...) runs as numpy's C function. See
benchmarks/bench_eager.py.
"""

from __future__ import annotations

import warnings

import numpy as np

from ir import REGISTRY, OpDef, OpNamespace
from ir import dtypes as D
from ir.execute import namespace_of, run_kernel
from ir.meta_array import META_XP, MetaArray, run_meta
from ir.opdef import TensorMeta, is_number

from . import grad_mode
from .autograd import BackwardNode, engine, forward_ad  # (imported by eager before this)
from .autograd.record import ONE, new_table, record, record_many
from .caches import remember
from .device import resolve, to_device
from .out_arg import write_out
from .tensor import FUNCTIONS, Tensor, bump_version

VIEW_KINDS = ("view",)

# Called as hook(op, inputs, attrs, out) after every primitive op that ran eagerly (forward-mode
# AD and anomaly detection register here); empty by default, so it costs one truth test.
POST_HOOKS: list = []
_HALF_TYPES = tuple(d.np.type for d in D.HALF)  # (numpy kind "V": floating nonetheless)

# Set by eager.amp while an autocast region is on: hook(op, inputs, attrs) returns op's result
# computed under the region's cast policy, or None (no policy for op: apply goes on as usual).
# (The fast paths stay off meanwhile: eager.amp registers a no-op POST_HOOKS entry.)
autocast_hook = None

# ops without PyTorch's `out=` keyword (besides views): nn.functional activations, casts...
NO_OUT = frozenset({
    "cast", "clone", "conj", "relu", "relu6", "gelu", "silu", "mish", "elu", "selu", "celu",
    "leaky_relu", "hardtanh", "hardsigmoid", "hardswish", "softplus", "softsign", "logsigmoid",
    "tanhshrink", "threshold", "softmax", "log_softmax", "dropout", "contiguous", "as_strided",
    "real", "imag", "view_as_real", "view_as_complex",
})
_ND = np.ndarray
_grad_enabled = grad_mode.is_grad_enabled
_SCALARS = (bool, int, float, complex)
# The fast paths (fastpaths.py), backward plans and programs and the optimizers' array path
# call numpy's kernels from these modules: IEEE results (1/0 = inf) without numpy's
# RuntimeWarnings, as PyTorch and ir.execute (which runs every other kernel) do; a filter, not
# the far slower `np.errstate` around each call.
warnings.filterwarnings("ignore", r"(divide by zero|invalid value|overflow|underflow) encountered",
                        RuntimeWarning,
                        r"eager\.(dispatch|fastpaths|autograd\.(plans|programs)|optim\.arrays)$")
_CACHES: list = []  # every cache of checks' outcomes: dtype rules read the default dtype


def _clear_caches() -> None:
    for c in _CACHES:
        c.clear()


D.DEFAULT_DTYPE_LISTENERS.append(_clear_caches)


def _operand(op: OpDef, name: str, x):
    if isinstance(x, Tensor):
        return x
    if is_number(x) and op.scalar_ok:
        return x
    if isinstance(x, np.generic) and op.scalar_ok:
        return x.item()
    want = "Tensor or number" if op.scalar_ok else "Tensor"
    raise TypeError(f"{op.name}(): argument '{name}' must be {want}, not {type(x).__name__}")


def _meta(d) -> TensorMeta:
    if type(d) is _ND:
        return TensorMeta(d.shape, D.from_numpy(d.dtype), "cpu")
    if type(d) is MetaArray:
        return TensorMeta(d.shape, D.from_numpy(d.dtype), "meta")
    return TensorMeta(d.shape, D.from_numpy(d.dtype), f"cuda:{d.device.id}")


def _same_device(inputs: tuple, metas: tuple):
    """PyTorch's device rule: all tensors on one device, except zero-dim CPU tensors, which join
    a CUDA computation as scalars. Returns (inputs, metas), with such scalars moved."""
    first = None
    for m in metas:
        if isinstance(m, TensorMeta):
            if first is None:
                first = m.device
            elif m.device != first:
                break
    else:
        return inputs, metas
    devs = [m.device for m in metas if isinstance(m, TensorMeta)]
    cuda = [d for d in devs if d != "cpu"]
    if len(set(cuda)) == 1 and all(m.ndim == 0 for m in metas
                                   if isinstance(m, TensorMeta) and m.device == "cpu"):
        dev = resolve(cuda[0])
        inputs = tuple(Tensor._make(to_device(x._data, dev)) if isinstance(x, Tensor)
                       and isinstance(x._data, _ND) else x for x in inputs)
        return inputs, tuple(_meta(x._data) if isinstance(x, Tensor) else x for x in inputs)
    other = next(d for d in devs if d != first)
    raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                       f"devices, {first} and {other}!")


# op._checked: {call key: (canonical attrs, (compute dtype, result dtype) or None)}
_MAX_CHECKED = 512  # keys per op (Python-number operands are part of the key)


def _call_key(inputs: tuple, attrs: dict):
    """What the checks of a call on CPU tensors and numbers depend on (shapes, dtypes, number
    types and values, attributes), or None (other operands, other devices)."""
    key = [tuple(attrs.items())] if attrs else []
    for x in inputs:
        if isinstance(x, Tensor):
            a = x._data
            if type(a) is not _ND:
                return None
            key.append(a.shape)
            key.append(a.dtype)
        elif type(x) in _SCALARS:
            key.append(type(x))
            key.append(x)
        else:
            return None
    return tuple(key)


def _check(op: OpDef, inputs: tuple, attrs: dict):
    """The checks of `apply`: (inputs, canonical attrs, (compute, result) dtypes or None for
    a composite); raises for bad operands, devices, shapes and dtypes."""
    inputs = tuple(_operand(op, op.operand_name(i), x) for i, x in enumerate(inputs))
    metas = tuple(_meta(x._data) if isinstance(x, Tensor) else x for x in inputs)
    inputs, metas = _same_device(inputs, metas)
    attrs = op.canonical_attrs(metas, attrs)
    if op.decomp is not None:
        return inputs, attrs, None
    if not op.dynamic_shape:  # shape known only after running: the data gives it
        op.meta(metas, attrs)  # raises on bad shapes / dtypes, before any work
    return inputs, attrs, op.dtypes(metas, attrs)


def apply(op: OpDef, inputs: tuple, attrs: dict):
    """Run `op` eagerly on Tensors / Python numbers with canonical-able `attrs`.

    Raises TypeError for operands that are not tensors (or numbers where the op takes them),
    RuntimeError for tensors on different devices, shapes that do not fit (the op's shape
    rule) and dtypes the op does not support (its dtype rule); nothing runs before the checks.
    The checks' outcome on CPU operands is remembered per shapes, dtypes, numbers and
    attributes (they depend on nothing else; errors are raised every time).
    """
    if autocast_hook is not None:
        r = autocast_hook(op, inputs, attrs)
        if r is not None:
            return r
    cache = op.__dict__.get("_checked")
    if cache is None:
        cache = op._checked = {}
        _CACHES.append(cache)
    key = _call_key(inputs, attrs)
    e = None
    if key is not None:
        try:
            e = cache.get(key)
        except TypeError:  # an unhashable attribute: check every time
            key = None
    ids = None  # the structure ids of nodes recorded for this call key (autograd.record)
    if e is None:
        inputs, attrs, dts = _check(op, inputs, attrs)
        if key is not None:
            ids = new_table()
            remember(cache, key, (attrs, dts, ids), _MAX_CHECKED)
    else:
        attrs, dts, ids = e
        attrs = dict(attrs)
    if dts is None:
        fast = op.eager_impl
        if fast is not None and (not POST_HOOKS or _whole_under_hooks()):
            rec, arrays, plain = False, [], True  # (one pass over the operands)
            for x in inputs:
                if isinstance(x, Tensor):
                    a = x._data
                    rec = rec or x.requires_grad
                else:
                    a = x
                plain = plain and type(a) is _ND
                arrays.append(a)
            rec = rec and _grad_enabled()
            if plain and (not rec or op.eager_backward is not None):
                r = fast(np, *arrays, **attrs)
                if r is not None and not (rec and r.dtype.kind not in "fc"
                                          and r.dtype.type not in _HALF_TYPES):
                    out = Tensor._make(r)
                    if rec:
                        out.requires_grad = True
                        out.grad_fn = _node(_whole(op), inputs, attrs, out, ids)
                    return out
        return op.decomp(F, *inputs, **attrs)
    compute, out_dtype = dts
    arrays = tuple([x._data if isinstance(x, Tensor) else x for x in inputs])
    if key is None:  # other devices (a call key means numpy arrays and numbers only)
        xp = _namespace(arrays)
        kernel = run_meta if xp is META_XP else run_kernel  # (meta: no data, no kernel)
        out = Tensor._make(kernel(xp, op, arrays, attrs, compute, out_dtype))
    else:
        xp = np
        out = Tensor._make(run_kernel(np, op, arrays, attrs, compute, out_dtype))
    if op.kind in VIEW_KINDS:
        base = inputs[0]
        if xp.may_share_memory(out._data, base._data):
            out._vc = base._vc
            out._base = base._base if base._base is not None else base
    if (op.backward is not None and out_dtype.category >= D.FLOATING
            and _grad_enabled()
            and any(isinstance(x, Tensor) and x.requires_grad for x in inputs)):
        out.requires_grad = True
        out.grad_fn = _node(op, inputs, attrs, out, ids)
    if POST_HOOKS:
        for hook in POST_HOOKS:
            hook(op, inputs, attrs, out)
    return out


def _namespace(arrays: tuple):
    """The array namespace of operands that have no call key: numpy, cupy or the meta
    device's."""
    for a in arrays:
        if not is_number(a) and type(a) is not _ND:
            return namespace_of(a)
    return np


F = OpNamespace(apply)
engine.NAMESPACES[1] = F  # backward rules recorded under create_graph run through F
forward_ad.DISPATCH.F, forward_ad.DISPATCH.apply = F, apply  # (tangents of each op)
forward_ad.DISPATCH.POST_HOOKS = POST_HOOKS


def _whole_under_hooks() -> bool:
    """Whether every post hook lets composites run whole (`eager_impl`): one marked
    `whole_composites` only keeps the fast paths off (autocast's), unlike forward AD, anomaly
    mode or inference mode, which must see the decomposition's ops or mark new tensors."""
    for hook in POST_HOOKS:
        if not getattr(hook, "whole_composites", False):
            return False
    return True


def _node(op, inputs: tuple, attrs: dict, out: Tensor, ids):
    """The grad_fn of `apply`'s result: recorded with a structure id when the call has a key
    (`ids`, its table)."""
    if ids is None:
        return BackwardNode(op, inputs, attrs, out)
    if len(inputs) <= 2:
        return record(op, inputs[0], inputs[1] if len(inputs) == 2 else ONE, attrs, out, ids)
    return record_many(op, inputs, attrs, out, ids)


class _Whole:
    """A composite recorded as one autograd node: the op itself, with its `eager_backward` as
    the node's rule (`MeanBackward0` runs the decomposition's gradient in one step)."""

    def __init__(self, op: OpDef):
        self._op = op
        self.name = op.name
        self.backward = op.eager_backward
        self.decomp = None

    def __getattr__(self, name):
        return getattr(self._op, name)

    def __repr__(self) -> str:
        return repr(self._op)


def _whole(op: OpDef) -> _Whole:
    w = op.__dict__.get("_whole")
    if w is None:
        w = op._whole = _Whole(op)
    return w


# ---------------------------------------------------------------- fast-path hooks
#
# The fast paths (`eager/fastpaths.py`) are derived from each op's declaration and registered
# here when eager is imported: `FAST_PATH[0](op, fallback, exact, reflected)` wraps a generated
# function or dunder (None: no fast path for this op), and `_INPLACE` holds their in-place
# routes by op name. Every op call that leaves a fast path comes back to `apply`.

FAST_PATH: list = [lambda op, fallback, exact=False, reflected=False: None]


def _default_attrs(op: OpDef) -> dict:
    return {n: p.default for n, p in list(op.signature.parameters.items())[op.nin:]}

# Tensor subclasses that behave as Tensor in every op (`nn.Parameter`: registered by eager.nn):
# the fast paths take them, and their results are plain Tensors.
PLAIN_SUBCLASSES: set = set()

_INPLACE: dict = {}  # in-place routes of the fast paths (`_make_inplace`), by op name


def _on_inference(mode: bool) -> None:
    """Inference mode marks every new tensor (eager.autograd swaps Tensor._init): a no-op post
    hook keeps the fast path, which builds tensors directly, off while it is on."""
    if mode and _inference_hook not in POST_HOOKS:
        POST_HOOKS.append(_inference_hook)
    elif not mode and _inference_hook in POST_HOOKS:
        POST_HOOKS.remove(_inference_hook)


def _inference_hook(op, inputs, attrs, out) -> None:
    pass


if _on_inference not in getattr(grad_mode, "INFERENCE_LISTENERS", [_on_inference]):
    grad_mode.INFERENCE_LISTENERS.append(_on_inference)


# ---------------------------------------------------------------- out=


def has_out(op: OpDef) -> bool:
    """Whether PyTorch's function of this op takes `out=` (not views, not nn.functional)."""
    return op.kind not in ("view",) and op.name not in NO_OUT


def _check_out_grad(op: OpDef, inputs, out):
    if not grad_mode.is_grad_enabled():
        return
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if any(isinstance(x, Tensor) and x.requires_grad for x in tuple(inputs) + tuple(outs)):
        raise RuntimeError(f"{op.name}(): functions with out=... arguments don't support "
                           "automatic differentiation, but one of the arguments requires grad.")


# ---------------------------------------------------------------- generated functions


def _doc(op: OpDef) -> str:
    kind = {"elementwise": "Elementwise, broadcasting", "reduction": "Reduction",
            "view": "View (shares memory with its input when it can)",
            "matmul": "Matrix product (numpy.matmul semantics)",
            "composite": "Composite, defined by its decomposition into registry ops",
            }.get(op.kind, f"{op.kind.capitalize()} op")
    promo = op.promotion.doc
    out = " Takes `out=` (PyTorch's resize and cast rules)." if has_out(op) else ""
    return (f"{op.name}({op.sig}) -> Tensor\n\n{kind}; type promotion: {promo}.{out}\n"
            f"Semantics: torch.{op.name}. Raises RuntimeError for shapes that do not fit and "
            f"TypeError for operands that are not tensors{' or numbers' if op.scalar_ok else ''}.")


def make_function(op: OpDef):
    """The eager function of `op`: PyTorch's signature (plus `out=` where PyTorch has it),
    with the elementwise fast path in front when the op allows it."""
    bind = op.bind
    takes_out = has_out(op)

    def fn(*args, **kwargs):
        if takes_out and "out" in kwargs:
            out = kwargs.pop("out")
            if out is not None:
                inputs, attrs = bind(args, kwargs)
                _check_out_grad(op, inputs, out)
                return write_out(op, apply(op, inputs, attrs), out)
        inputs, attrs = bind(args, kwargs)
        return apply(op, inputs, attrs)

    general = fn
    fn = FAST_PATH[0](op, general) or general
    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = _doc(op)
    fn.__signature__ = op.signature
    fn.__wick_op__ = op
    fn.__wick_general__ = general
    return fn


def _make_dunder(op: OpDef, dunder: str):
    fn = FUNCTIONS[op.name]
    general = getattr(fn, "__wick_general__", fn)
    reflected = dunder.startswith("__r") and dunder not in ("__rshift__",)
    if op.nin == 1:
        def unary(self):
            return general(self)

        method = FAST_PATH[0](op, unary, exact=True) or unary
        method.__name__ = dunder
        method.__wick_op__ = op
        method.__wick_reflected__ = False
        return method

    def slow(self, other):
        if not (isinstance(other, Tensor) or is_number(other)
                or isinstance(other, np.generic)):
            return NotImplemented
        return general(other, self) if reflected else general(self, other)

    method = FAST_PATH[0](op, slow, exact=True, reflected=reflected) or slow
    method.__name__ = dunder
    method.__wick_op__ = op
    method.__wick_reflected__ = reflected
    return method


def _all_defaults(kwargs: dict, defaults: dict) -> bool:
    """Whether keyword arguments only restate defaults (`add_(y, alpha=1)`, or 1.0)."""
    def same(v, d):
        kinds = (type(v), type(d))
        return (kinds[0] is kinds[1] or set(kinds) <= {int, float}) and v == d

    return all(k in defaults and same(v, defaults[k]) for k, v in kwargs.items())


def _make_inplace(op: OpDef):
    fn = FUNCTIONS[op.name]
    direct = _INPLACE.get(op.name)
    defaults = _default_attrs(op)

    def method(self, *args, **kwargs):
        self._check_inplace()
        if direct is not None and (not kwargs or _all_defaults(kwargs, defaults)) and \
                direct(self, args):
            bump_version(self)
            return self
        return self._inplace_update(fn(self, *args, **kwargs))

    method.__name__ = op.name + "_"
    method.__doc__ = (f"In-place version of `{op.name}`: computes in the promoted dtype, then "
                      "writes into `self` (RuntimeError, leaving `self` unchanged, when the "
                      "result's dtype or shape cannot be written there); bumps `_version`.")
    method.__wick_op__ = op
    method.__wick_inplace__ = True
    return method


def _make_inplace_dunder(op: OpDef):
    inplace = _make_inplace(op)

    def method(self, other):
        return inplace(self, other)

    method.__wick_op__ = op
    method.__wick_inplace__ = True
    return method




def install(namespace: dict) -> None:
    """Define every registry op as a function in `namespace` and as Tensor methods."""
    for op in REGISTRY.values():
        fn = make_function(op)
        for name in (op.name,) + tuple(op.aliases):
            FUNCTIONS[name] = fn
            namespace[name] = fn
            if op.method:
                setattr(Tensor, name, fn)
        for d in op.dunders:
            setattr(Tensor, d, _make_dunder(op, d))
            if not d.startswith("__r") and op.kind == "elementwise" and \
                    op.promotion != "always_bool":
                setattr(Tensor, "__i" + d[2:], _make_inplace_dunder(op))
        inplace = op.inplace if op.inplace is not None else (
            op.kind == "elementwise" and op.method and op.promotion != "always_bool")
        if inplace:
            for name in (op.name,) + tuple(op.aliases):
                setattr(Tensor, name + "_", _make_inplace(op))
