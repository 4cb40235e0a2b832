"""Eager execution of registry ops, and the functions/methods/dunders generated from them.

`apply(op, inputs, attrs)` is eager's one entry point: check the operands (types, devices,
shapes, dtypes through the registry's meta rules), run the kernel on the arrays, and record an
autograd node when grad mode is on and an operand requires grad. `F` is the same as an
`OpNamespace`, used by backward rules and decompositions. `install()` derives `eager.<op>`
functions, `Tensor.<op>` methods, dunders and in-place `<op>_` methods from the registry.
"""

from __future__ import annotations

import numpy as np

from ir import REGISTRY, OpDef, OpNamespace
from ir.execute import run_kernel
from ir.opdef import is_number

from . import grad_mode
from .tensor import Tensor

VIEW_KINDS = ("view",)

# Called as hook(op, inputs, attrs, out) after every primitive op that ran eagerly (forward-mode
# AD and anomaly detection register here); empty by default, so it costs one truth test.
POST_HOOKS: list = []


def _operand(op: OpDef, name: str, x):
    if isinstance(x, Tensor):
        return x
    if is_number(x) and op.scalar_ok:
        return x
    if isinstance(x, np.generic) and op.scalar_ok:
        return x.item()
    want = "Tensor or number" if op.scalar_ok else "Tensor"
    raise TypeError(f"{op.name}(): argument '{name}' must be {want}, not {type(x).__name__}")


def apply(op: OpDef, inputs: tuple, attrs: dict):
    """Run `op` eagerly on Tensors / Python numbers with canonical-able `attrs`."""
    inputs = tuple(_operand(op, op.operand_name(i), x) for i, x in enumerate(inputs))
    metas = tuple(x.meta if isinstance(x, Tensor) else x for x in inputs)
    attrs = op.canonical_attrs(metas, attrs)
    if op.decomp is not None:
        return op.decomp(F, *inputs, **attrs)
    op.meta(metas, attrs)  # raises on bad shapes / devices, before any work
    compute, out_dtype = op.dtypes(metas, attrs)
    arrays = tuple(x._data if isinstance(x, Tensor) else x for x in inputs)
    out = Tensor._make(run_kernel(np, op, arrays, attrs, compute, out_dtype))
    if op.kind in VIEW_KINDS:
        base = inputs[0]
        if np.may_share_memory(out._data, base._data):
            out._vc = base._vc
            out._base = base._base if base._base is not None else base
    if (op.backward is not None and grad_mode.is_grad_enabled()
            and out_dtype.is_floating_point
            and any(isinstance(x, Tensor) and x.requires_grad for x in inputs)):
        from .autograd import BackwardNode

        out.requires_grad = True
        out.grad_fn = BackwardNode(op, inputs, attrs, out)
    if POST_HOOKS:
        for hook in POST_HOOKS:
            hook(op, inputs, attrs, out)
    return out


F = OpNamespace(apply)


def _doc(op: OpDef) -> str:
    kind = {"elementwise": "Elementwise, broadcasting", "reduction": "Reduction",
            "view": "View (shares memory with its input when it can)",
            "matmul": "Matrix product (numpy.matmul semantics)",
            "composite": "Composite, defined by its decomposition into registry ops"}[op.kind]
    return (f"{op.name}({op.sig}) -> Tensor\n\n{kind}; type promotion: {op.promotion}.\n"
            f"Semantics: torch.{op.name}. Raises RuntimeError for shapes that do not fit and "
            f"TypeError for operands that are not tensors{' or numbers' if op.scalar_ok else ''}.")


def make_function(op: OpDef):
    def fn(*args, **kwargs):
        inputs, attrs = op.bind(args, kwargs)
        return apply(op, inputs, attrs)

    fn.__name__ = fn.__qualname__ = op.name
    fn.__doc__ = _doc(op)
    fn.__signature__ = op.signature
    fn.__wick_op__ = op
    return fn


def _make_dunder(op: OpDef, dunder: str):
    fn = FUNCTIONS[op.name]
    reflected = dunder.startswith("__r") and dunder not in ("__rshift__",)
    if op.nin == 1:
        def unary(self):
            return fn(self)

        unary.__name__ = dunder
        unary.__wick_op__ = op
        unary.__wick_reflected__ = False
        return unary

    def method(self, other):
        if not (isinstance(other, Tensor) or is_number(other) or isinstance(other, np.generic)):
            return NotImplemented
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = dunder
    method.__wick_op__ = op
    method.__wick_reflected__ = reflected
    return method


def _make_inplace(op: OpDef):
    fn = FUNCTIONS[op.name]

    def method(self, *args, **kwargs):
        self._check_inplace()
        return self._inplace_update(fn(self, *args, **kwargs))

    method.__name__ = op.name + "_"
    method.__doc__ = f"In-place version of `{op.name}`: writes the result into `self`."
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


FUNCTIONS: dict[str, object] = {}


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
