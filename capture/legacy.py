"""Legacy tensor API in compiled code, as Dynamo traces it: `Variable(x)` (a detached alias,
`requires_grad=False`), `torch.FloatTensor(2, 3)` / `torch.LongTensor([1, 2])` (the legacy
classes' constructors: eager's `empty` / `tensor` factories of constant arguments),
`x.new(2, 3)` / `x.new([1.0])` (`new_empty` / `new_tensor`), and `x.type(torch.FloatTensor)`
(a cast). Other forms return None, so the caller breaks as before.
"""

from __future__ import annotations

from .variables import ConstantVariable, FunctionVariable, TensorVariable, VariableTracker


def _constants(args: list):
    """The Python values of constant trackers (lists and tuples of constants too), or None."""
    from .pycalls import _const_data, _is_const_data

    if not all(_is_const_data(v) for v in args):
        return None
    return [_const_data(v) for v in args]


def _legacy_class(value) -> bool:
    from eager.legacy_tensors import _LegacyTensorMeta

    return type(value) is _LegacyTensorMeta and value.device_type == "cpu"


def dtype_of(v):
    """The dtype a legacy class tracker stands for (`x.type(torch.FloatTensor)`), else None."""
    value = getattr(v, "value", None)
    return value.dtype if _legacy_class(value) else None


def make(tx, cls, args: list, kwargs: dict) -> VariableTracker | None:
    """`Variable(t)` and `torch.<Stem>Tensor(...)` built by the code, else None."""
    import eager
    from eager.autograd import Variable

    from .calls import call_function, get_attr

    if cls is Variable and len(args) == 1 and isinstance(args[0], TensorVariable) and \
            all(v.is_constant() and not v.value for v in kwargs.values()):
        return call_function(tx, get_attr(tx, args[0], "detach"), [], {})
    values = _constants(args) if _legacy_class(cls) and not kwargs else None
    if values is None:
        return None
    dtype = {"dtype": ConstantVariable(cls.dtype)}
    consts = [ConstantVariable(v) for v in values]
    if values and all(type(n) is int for n in values):  # sizes
        return call_function(tx, FunctionVariable(eager.empty), consts, dtype)
    if len(values) == 1 and isinstance(values[0], (list, tuple)):  # data
        return call_function(tx, FunctionVariable(eager.tensor), consts, dtype)
    return None


def new_rule(tx, fn, args: list, kwargs: dict) -> VariableTracker:
    """`x.new(*sizes)` -> `x.new_empty(sizes)`, `x.new(data)` -> `x.new_tensor(data)` (constant
    arguments); anything else is one named break at the call."""
    from . import vocabulary
    from .calls import call_function, get_attr

    t, rest = args[0], args[1:]
    values = _constants(rest) if isinstance(t, TensorVariable) and not kwargs else None
    if values:
        if all(type(n) is int for n in values):
            return call_function(tx, get_attr(tx, t, "new_empty"), [ConstantVariable(
                tuple(values))], {})
        if len(values) == 1 and isinstance(values[0], (list, tuple)):
            return call_function(tx, get_attr(tx, t, "new_tensor"),
                                 [ConstantVariable(values[0])], {})
    raise vocabulary.no_graph_form(tx, fn, "arguments other than constant sizes or data")
