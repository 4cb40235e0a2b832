"""Recording ops during capture: `record(tx, op, inputs, attrs)` is capture's `apply` of the
`OpNamespace` protocol.

The same steps as `eager.dispatch.apply` (operand check, attrs canonicalised, composites
decomposed so the graph holds primitives, `op.meta` raising eager's own errors), but it adds a
graph node instead of running a kernel. `call_op` binds a call of an eager registry function,
method or dunder to its op; `inplace` captures `t.add_(y)` / `t += y` by rebinding the target's
tracker. Re-exported by `calls`.
"""

from __future__ import annotations

from eager import Tensor
from ir import REGISTRY, OpNamespace
from ir.autodiff import mark_composite
from ir.opdef import is_number

from . import autocast, dynamic, eager_rules, symints
from .variables import (
    ConstantVariable,
    OpFunctionVariable,
    SequenceVariable,
    TensorVariable,
    TupleVariable,
    VariableTracker,
)



def record(tx, op, inputs: tuple, attrs: dict, top: bool = True) -> TensorVariable:
    """Add `op(*inputs, **attrs)` to the graph; inputs are TensorVariables or Python numbers.

    `top` marks a user-level call (not a step of a decomposition): it goes on the op tape that
    dynamic-shape entries replay per concrete shape (`dynamic.py`).
    """
    if getattr(tx.out, "autocast", None) is not None:  # an autocast region: casts as nodes
        hit = autocast.record(tx, op, inputs, attrs, top)
        if hit is not None:
            return hit
    if op.dynamic_shape:
        raise tx.unsupported(f"{op.name}() has a data-dependent output shape")
    if getattr(tx.out, "mutated", None):
        from .writeback import check_stale

        check_stale(tx, inputs)
        if tx.out.grad_enabled and tx.out.alias_writes:
            from .writeback import check_alias_grad

            check_alias_grad(tx, inputs)
    vals = []
    names = list(op.input_names)
    names += [names[0] if names else "input"] * (len(inputs) - len(names))  # variadic ops
    for name, x in zip(names, inputs):
        if isinstance(x, ConstantVariable):
            x = x.value
        if isinstance(x, TensorVariable) or (is_number(x) and op.scalar_ok):
            vals.append(x)
            continue
        if isinstance(x, VariableTracker) and not isinstance(x, (TensorVariable,)):
            raise tx.unsupported(f"{op.name}() called with an operand capture does not model "
                                 f"({x.describe()})")
        want = "Tensor or number" if op.scalar_ok else "Tensor"
        raise TypeError(f"{op.name}(): argument '{name}' must be {want}, not "
                        f"{type(x).__name__}")
    metas = tuple(x.meta if isinstance(x, TensorVariable) else x for x in vals)
    user_attrs = attrs  # (on the tape: dynamic ints as `symints.SymInt`)
    attrs = op.canonical_attrs(metas, symints.resolve_attrs(tx, attrs))
    if op.decomp is not None:
        result = op.decomp(OpNamespace(lambda o, i, a: record(tx, o, i, a, False)), *vals,
                           **attrs)
        if isinstance(result, TensorVariable):  # (differentiated by eager's rule where it has one)
            mark_composite(result.node, op, tuple(
                x.node if isinstance(x, TensorVariable) else x for x in vals), attrs)
        if top:
            dynamic.note_op(tx, op, vals, user_attrs, result)
        return result
    meta = op.meta(metas, attrs)
    args = tuple(x.node if isinstance(x, TensorVariable) else x for x in vals)
    node = tx.out.graph.call_function(op, args, attrs, val=meta, source=tx.location())
    node.meta["grad_enabled"] = tx.out.grad_enabled
    requires_grad = (op.backward is not None and tx.out.grad_enabled
                     and meta.dtype.is_floating_point
                     and any(isinstance(x, TensorVariable) and x.requires_grad for x in vals))
    result = TensorVariable(node, meta, requires_grad)
    if top:
        dynamic.note_op(tx, op, vals, user_attrs, result)
    return result


def _plain(v):
    """A prebind argument as the Python value an op's prebind expects: strings as str, lists
    and tuples of trackers as lists/tuples (their items stay trackers)."""
    if isinstance(v, ConstantVariable) and isinstance(v.value, str):
        return v.value
    if isinstance(v, SequenceVariable):
        return v.kind(v.items)
    return v


def _is_none(v) -> bool:
    return isinstance(v, ConstantVariable) and not isinstance(
        v, (dynamic.SymNumberVariable, symints.SymSizeVariable)) and v.value is None


def as_constant(tx, v):
    """The Python value of an attribute argument (constants, tuples/lists of constants)."""
    if isinstance(v, (tuple, list)):  # *varargs attributes (`x.reshape(2, 3)`)
        return type(v)(as_constant(tx, x) for x in v)
    if not isinstance(v, VariableTracker):  # a default filled in by bind
        return v
    if isinstance(v, ConstantVariable):
        return v.value
    if isinstance(v, SequenceVariable):
        return v.kind(as_constant(tx, x) for x in v.items)
    made = getattr(v, "constant_value", None)  # `torch.tensor([0.25, 0.75])` of the code's
    if made is not None and v.node.op == "placeholder":  # constants, not written since:
        return made  # its value, as eagerly (`quantile(x, q_tensor)`)
    raise tx.unsupported(f"{v.describe()} passed where a Python constant is expected")


def call_op(tx, fn: OpFunctionVariable, args: list, kwargs: dict) -> VariableTracker:
    """A call of an eager registry function, method or dunder: record its op."""
    if fn.self_var is not None:
        args = [fn.self_var] + args
    if fn.reflected and len(args) == 2:
        args = [args[1], args[0]]
    op = fn.op
    if fn.inplace:
        return inplace(tx, args[0], lambda: call_op(tx, OpFunctionVariable(
            getattr(Tensor, op.name) if op.method else _function_of(op)), args, kwargs))
    if getattr(op, "prebind", None) is not None:  # einsum("ij,jk", a, b): prebind reads the
        args = [_plain(a) for a in args]          # Python values (str equation, operand list)
    if getattr(op, "variadic", False):  # cat([a, b], dim): the tensors' tracker is a list
        args = [list(a.items) if i == 0 and isinstance(a, SequenceVariable) else a
                for i, a in enumerate(args)]
        kwargs = {k: list(v.items) if isinstance(v, SequenceVariable) and
                  k == op.input_names[0] else v for k, v in kwargs.items()}
    if op.name == "where" and len(args) + len(kwargs) == 1 and (args or "condition" in kwargs):
        # torch.where(condition): the overload nonzero(condition, as_tuple=True) (a
        # data-dependent shape: its named break, the code around it compiled)
        return call_op(tx, OpFunctionVariable(_function_of(REGISTRY["nonzero"])),
                       [args[0] if args else kwargs["condition"]],
                       {"as_tuple": ConstantVariable(True)})
    kwargs = {k: v if k in op.input_names else as_constant(tx, v) for k, v in kwargs.items()}
    # an optional operand given as None (`F.linear(x, w, None)`, Linear(bias=False)): eager's
    # bind drops it, so it must reach bind as None, not as its tracker
    args = [None if _is_none(a) else a for a in args]
    kwargs = {k: None if _is_none(v) else v for k, v in kwargs.items()}
    if op.name in _METHOD_NUMBER_OPS and len(args) == 2 and not kwargs and \
            isinstance(args[1], dynamic.SymNumberVariable):  # `x.mul_(1. - lam)` as `x * n`
        args = list(dynamic.number_operands(tx, _METHOD_NUMBER_OPS[op.name], *args))
    inputs, attrs = op.bind(tuple(args), kwargs)
    if op.name in _BINARY_FORMS and isinstance(attrs.get("dim"), TensorVariable):
        # torch.max(a, b): the elementwise form (the op's decomposition takes it as `dim`)
        return record(tx, REGISTRY[_BINARY_FORMS[op.name]], (inputs[0], attrs["dim"]), {})
    if op.name in symints.ATTR_OPS or getattr(op, "prebind", None) is None:
        # narrow(cache, 2, 0, pos + T): a dynamic length; view(B, T, -1): dynamic sizes
        attrs = {k: symints.attr(tx, v, as_constant) for k, v in attrs.items()}
    else:
        attrs = {k: as_constant(tx, v) for k, v in attrs.items()}
    if op.name == "repeat_interleave":
        static = _repeat_interleave_count(tx, inputs, attrs)
        if static is not None:
            return static
    result = record(tx, op, inputs, attrs)
    if isinstance(result, tuple):  # a multi-output composite (max with indices, sort...)
        var = TupleVariable(list(result))
        if type(result) is not tuple:
            var.namedtuple = type(result)  # torch.return_types-like
        return var
    return result


_BINARY_FORMS = {"max": "maximum", "min": "minimum"}
_METHOD_NUMBER_OPS = {"add": "__add__", "sub": "__sub__", "mul": "__mul__",
                      "div": "__truediv__"}


def _repeat_interleave_count(tx, inputs, attrs) -> TensorVariable | None:
    """`k.repeat_interleave(2, dim=1)` (grouped-query attention): an int count gives a static
    shape, recorded as unsqueeze, expand and flatten (torch's decomposition of
    `repeat_interleave.self_int`; sizes stay -1 so dynamic dimensions replay). None: tensor
    repeats (a data-dependent shape), a negative count or an `output_size` that does not match
    (the op breaks; eager raises)."""
    x, r = inputs[0], inputs[1]
    r = r.value if isinstance(r, ConstantVariable) else r
    if not isinstance(x, TensorVariable) or type(r) is not int or r < 0:
        return None
    dim, ndim = attrs.get("dim"), len(x.meta.shape)
    if dim is not None and not -max(ndim, 1) <= dim < max(ndim, 1):
        return None  # eager's IndexError
    F = OpNamespace(lambda o, i, a: record(tx, o, i, a))
    if dim is None or ndim == 0:
        x, dim = F.flatten(x), 0
    dim %= len(x.meta.shape)
    n = x.meta.shape[dim]
    size = attrs.get("output_size")
    if size is not None and (not isinstance(n, int) or size != n * r):
        return None
    out = F.unsqueeze(x, dim + 1)
    out = F.expand(out, (-1,) * (dim + 1) + (r,) + (-1,) * (len(x.meta.shape) - dim - 1))
    return F.flatten(out, dim, dim + 1)


def _function_of(op):
    from eager.dispatch import FUNCTIONS

    return FUNCTIONS[op.name]


def inplace(tx, target, compute) -> VariableTracker:
    """`t.add_(y)` / `t += y`: captured when `t` is a fresh intermediate that nothing aliases
    (not a graph input, not a view, not viewed), by rebinding its tracker to the new value."""
    if not isinstance(target, TensorVariable):
        raise tx.unsupported("in-place op on a value that is not a tensor")
    node = target.node
    if getattr(target, "alias_of", None) is not None:  # `p.data.mul_(a)`, `p.detach().add_(b)`
        from .writeback import inplace_alias

        return inplace_alias(tx, target, compute)
    if node.op == "placeholder" and eager_rules.made_by_the_code(tx, target):
        pass  # `pe = zeros(n, d); pe[:, 0::2] = ...`: made fresh each call, nothing aliases it
    elif node.op == "placeholder" or any(
            w is target for w in getattr(tx.out, "writebacks", {}).values()):
        from .writeback import inplace_input

        return inplace_input(tx, target, compute)  # a graph input: written back after
    if (node.op == "call_function" and node.target.kind == "view" or
            any(u.target.kind == "view" for u in node.users if u.op == "call_function")) and \
            not _private_view(tx, node):
        from .viewwrites import inplace_view  # lazy: viewwrites imports this module

        if inplace_view(tx, target, compute) is None:
            raise tx.unsupported("in-place op on a tensor that may alias a graph input or a "
                                 "view")
        return target
    if node.op not in ("call_function", "placeholder"):
        raise tx.unsupported("in-place op on a tensor that may alias a graph input or a view")
    result = compute()
    if result.meta.shape != target.meta.shape or result.meta.dtype is not target.meta.dtype:
        raise tx.unsupported("in-place op whose result changes its target's shape or dtype")
    if target.requires_grad and not tx.out.grad_enabled:  # under no_grad: the tensor keeps
        from .writeback import _straight_through  # its history (the value written, gradient 1)

        result = _straight_through(tx, result, target)
    tx.out.side_effects.rebind(target, result, result.requires_grad or target.requires_grad)
    return target


def _private_view(tx, node) -> bool:
    """Whether `node` (a view, or viewed) belongs to a family of views of an intermediate that
    no tracker other than the one written can still reach (timm's `act(inplace=True)` on
    `flatten(pool(x))`): nothing can observe the base, so rebinding the written tracker is
    eager's result. False for a family rooted at a graph input or with another live member."""
    from .subscripts import _reachable_nodes, _views_of

    root = node
    while root.op == "call_function" and root.target.kind == "view":
        base = root.args[0] if root.args else None
        if not hasattr(base, "users"):
            return False
        root = base
    if root.op != "call_function":
        return False
    family = ({root} | _views_of(root)) - {node}
    return not (family & _reachable_nodes(tx, 0))
