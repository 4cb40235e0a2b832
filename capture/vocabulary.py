"""Eager's public API as graph vocabulary: calls capture turns into graph nodes, never traces.

Dynamo never steps into torch's own Python code (`TorchInGraphFunctionVariable`); neither does
wick. A call whose callee lives in `eager`, `ir` or numpy is looked up *by identity* in one
table built from eager's public namespaces (`eager`, `eager.nn.functional`, `Tensor`) and the
rules below:

- registry functions and methods (`__wick_op__`) are recorded by `calls.call_op` (not here);
- factories of constant arguments (`zeros`, `ones`, `empty`, `full`, `arange`, `linspace`,
  `logspace`, `eye`, `tensor`, `as_tensor`, `tril_indices`, `triu_indices`, the `*_window`
  functions; `tensor`/`as_tensor`/`from_numpy` of a numpy array read from a global or an
  attribute) become graph inputs made fresh on every call by
  eager's own factory (the placeholder's source is the call; its values are eager's, bit for
  bit, and no guard is needed: the arguments are constants of the code);
- `*_like` factories of a traced tensor are `new_zeros` (+ the fill value, cast back) nodes;
- Tensor methods with no registry op (`detach`, `contiguous`, `type`, `type_as`, `view_as`,
  `reshape_as`) have a rule recording registry ops;
- `eager.nn` compositions (`F.embedding`, `F.cross_entropy`, `F.layer_norm`, conv, pooling,
  attention) and `eager.extra`'s (`meshgrid`, `cartesian_prod`, `diff`, `cov`) are inlined as user code, but a break inside one is reported once, at the user's
  call, as "eager.nn.functional.X has no graph form: <why>", and the call then runs eagerly
  (it is not compiled as a frame of its own);
- `eager.nn` containers (`ModuleDict`/`ParameterDict`: items, keys, values, get, iteration,
  len, `in`, `d[k]`; `ModuleList`/`Sequential`/`ParameterList`: iteration, len, `l[i]`) are
  read directly by `container_entries`, guarded on the key list or length, as Dynamo does;
- anything else of `eager`/`ir`/numpy is one named break at the user's call site
  ("eager.foo has no graph form").

`value_check` functions (`check_class_indices`...) are not traced: the kernels of
`index_select`/`gather`/`nll_loss` check their indices themselves (numpy's IndexError).
Random samplers (`rand*`, `randn*`, `randint*`, `randperm`, `normal`, `bernoulli`,
`multinomial`; and so `F.dropout`) are registry ops drawing from the generator's state as a
graph input and output (`capture/randomness.py`: compiled draws equal eager's bit for bit), and
so are the in-place samplers `uniform_`, `normal_`, `exponential_`, `bernoulli_`, `random_`,
`cauchy_`, `geometric_`, `log_normal_` (alpha dropout and `rrelu` draw with `rand`). Touches `eager`
(reads its namespaces), `ir` and `capture`.
"""

from __future__ import annotations

import math
import types

import numpy as np

from ir import dtypes as D

from . import autocast, number_tensors, randomness, symints
from .variables import ConstantVariable, SequenceVariable, TensorVariable, VariableTracker

INTERNAL_ROOTS = ("eager", "ir", "numpy", "capture")
RANDOM = ("rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "randperm",
          "bernoulli", "multinomial", "normal", "dropout", "dropout1d", "dropout2d",
          "alpha_dropout", "feature_alpha_dropout")
FACTORIES = ("zeros", "ones", "empty", "full", "arange", "linspace", "logspace", "eye",
             "tensor", "as_tensor", "asarray", "tril_indices", "triu_indices",
             "hann_window", "hamming_window", "blackman_window", "bartlett_window",
             "kaiser_window")
LIKE = {"zeros_like": 0, "ones_like": 1, "empty_like": 0, "full_like": None}


def _module_of(fn) -> str:  # (a @contextmanager's helper: its function's, kept by wraps)
    if isinstance(fn, types.FunctionType) and fn.__globals__.get("__name__") != "contextlib":
        return fn.__globals__.get("__name__", "") or ""
    return getattr(fn, "__module__", "") or ""


def is_internal(fn) -> bool:
    """True for a function defined inside wick's `eager`/`ir`/`capture` or numpy."""
    return _module_of(fn).split(".")[0] in INTERNAL_ROOTS


def is_internal_frame(tx) -> bool:
    """True when the translator `tx` runs code of `eager` (an inlined composition)."""
    return (tx.f_globals.get("__name__", "") or "").split(".")[0] in INTERNAL_ROOTS


COMPOSITIONS = ("eager.nn", "eager.extra_scatter", "eager.distributions", "eager.special",
                "eager.extra_spectral", "eager.func", "eager.extra_foreach",
                "eager.optim.swa_utils")  # (AveragedModel's forward: its module's)
COMPOSITION_MODULES = ("eager.extra",)  # exactly (`eager.extra_api` and the like are not)


def is_composition(fn) -> bool:
    """An `eager.nn`, `eager.extra_scatter` or `eager.extra` function written in registry ops
    (`meshgrid`, `block_diag`, `diff`, `atleast_2d`...), or an in-place composite method
    (`Tensor.index_reduce_`: `_inplace_update` of the composite): inlined, as user code would
    be."""
    module = _module_of(fn)
    return isinstance(fn, types.FunctionType) and not getattr(fn, "__wick_disable__", False) \
        and (module.startswith(COMPOSITIONS) or module in COMPOSITION_MODULES or
             fn.__qualname__ == "_composite_inplace.<locals>.method")


def public_name(fn) -> str:
    """`eager.nn.functional.embedding`, `eager.Tensor.detach`, `eager.zeros`: how the user
    reaches `fn` (its table name), else its module and qualified name."""
    table = _table()
    hit = table.get(id(fn))
    if hit is not None:
        return hit[0]
    return f"{_module_of(fn)}.{getattr(fn, '__qualname__', getattr(fn, '__name__', fn))}"


_TABLE: dict | None = None
_KEEP: list = []  # the table's objects (their ids stay valid)


def _table() -> dict:
    """id(obj) -> (public name, rule or None), built once from eager's namespaces."""
    global _TABLE
    if _TABLE is not None:
        return _TABLE
    import eager
    from eager import Tensor
    from eager.nn import functional as F

    table = {}
    for prefix, ns in (("eager.nn.functional", F), ("eager", eager)):
        for name in dir(ns):
            obj = getattr(ns, name, None)
            if not callable(obj) or name.startswith("_"):
                continue
            rule = _rule(prefix, name)
            if id(obj) not in table:
                _KEEP.append(obj)
                table[id(obj)] = (f"{prefix}.{name}", rule)
            elif rule is not None and table[id(obj)][1] is None:  # `as_tensor` that
                table[id(obj)] = (f"{prefix}.{name}", rule)  # F's module imported: eager's rule
    for name, obj in vars(Tensor).items():
        if callable(obj) and id(obj) not in table:
            _KEEP.append(obj)
            rule = randomness.inplace_sampler_rule if name in randomness.INPLACE_SAMPLERS \
                else METHOD_RULES.get(name)
            table[id(obj)] = (f"eager.Tensor.{name}", rule)
    for name in ("fftfreq", "rfftfreq"):  # constant factories of eager.fft
        obj = getattr(eager.fft, name)
        _KEEP.append(obj)
        table[id(obj)] = (f"eager.fft.{name}", _constant_factory)
    _container_table(table)
    from eager.optim.optimizer import Optimizer

    from .sideeffects import zero_grad_rule

    _KEEP.append(Optimizer.zero_grad)  # `p.grad = None` per parameter: Python side effects
    table[id(Optimizer.zero_grad)] = ("eager.optim.Optimizer.zero_grad", zero_grad_rule)
    from . import local_generators

    local_generators.register(table, _KEEP)  # `torch.Generator().manual_seed(s)` in the frame
    from eager.distributions import kl_divergence

    from .objects import kl_rule

    _KEEP.append(kl_divergence)  # its closed form picked by the classes, then inlined
    table[id(kl_divergence)] = ("eager.distributions.kl_divergence", kl_rule)
    from .optim_forms import register

    register(table, _KEEP)  # SGD/Adam/AdamW `step`: the update as graph nodes
    from . import functional_call

    functional_call.register(table, _KEEP)  # torch.func.functional_call: the call inlined
    _TABLE = table
    return table


def _dtype_info(tx, fn, args, kwargs):
    """`torch.finfo(scores.dtype).min`, `torch.iinfo(torch.int32).max`,
    `torch.promote_types(a.dtype, b.dtype)`: a function of constant dtypes, a constant (the
    default dtype's, `finfo()`, is not folded: it is global state)."""
    if not args and not kwargs:
        raise no_graph_form(tx, fn, "the default dtype (pass the dtype)")
    return ConstantVariable(fn(*[_const(tx, fn, a) for a in args],
                               **{k: _const(tx, fn, v) for k, v in kwargs.items()}))


def _constant_size(tx, fn, args, kwargs):
    """`torch.Size(shape)` of constant ints: a constant."""
    return ConstantVariable(fn(*[_const(tx, fn, a) for a in args]))


def _rule(prefix: str, name: str):
    if prefix == "eager" and name in ("finfo", "iinfo", "promote_types", "can_cast"):
        return _dtype_info
    if prefix == "eager" and name == "Size":
        return _constant_size
    if prefix == "eager" and (name in FACTORIES or name == "Tensor"):  # (`Tensor([1e10])`)
        return _constant_factory
    if prefix == "eager" and name == "from_numpy":
        return _from_numpy
    if prefix == "eager" and name in LIKE:
        return _like_rule(name)
    if prefix == "eager" and name in randomness.SAMPLERS:
        return randomness.sampler_rule
    if prefix == "eager" and name == "manual_seed":
        return randomness.manual_seed_rule
    if prefix == "eager" and name == "vmap":
        return _vmap
    if prefix == "eager" and name in autocast.QUERIES:
        return autocast.query_rule
    return None


def _vmap(tx, fn, args, kwargs):
    """`torch.vmap(f, in_dims)`: eager's `torch.func.vmap` (a loop over the mapped dim, its
    results stacked), inlined as a composition; `mapped(...)` then unrolls the loop."""
    from eager.func import vmap

    from .calls import call_eager
    from .variables import FunctionVariable

    return call_eager(tx, FunctionVariable(vmap), args, kwargs)


def rule_for(fn):
    """The capture rule of eager function/method `fn` (call as rule(tx, fn, args, kwargs)),
    or None."""
    hit = _table().get(id(fn))
    rule = hit[1] if hit is not None else None
    return rule if rule is not None else autocast.rule_for(fn)  # eager.amp's wrappers


def no_graph_form(tx, fn, why: str = ""):
    """The GraphBreak for a call of eager's `fn` that capture cannot express."""
    name = public_name(fn)
    base = name.rsplit(".", 1)[-1]
    if base in RANDOM:
        why = why or "random ops read and advance the generator, which is not a graph value"
    return tx.unsupported(f"{name} has no graph form" + (f": {why}" if why else ""))


# ---------------------------------------------------------------- factories


def _const(tx, fn, v):
    if isinstance(v, ConstantVariable):
        return v.value
    if isinstance(v, SequenceVariable):
        return v.kind(_const(tx, fn, x) for x in v.items)
    if isinstance(v, VariableTracker):
        raise no_graph_form(tx, fn, f"an argument is {v.describe()}, not a constant")
    return v


def _literal(tx, value) -> str:
    if type(value) is symints.SymInt:  # `arange(pos, pos + T)`: the arguments' expression
        return symints.source_of(value.expr)
    if isinstance(value, float) and not math.isfinite(value):
        return tx.out.guards.name_for(value, "___f")
    if isinstance(value, (tuple, list)):
        inner = ", ".join(_literal(tx, v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) \
            else f"[{inner}]"
    return tx.out.guards.literal(value)


def _array_factory(tx, fn, args, kwargs):
    """`eager.from_numpy(W)`, `eager.tensor(W)`, `as_tensor(W)` of a numpy array the code
    reads (a global, an attribute: a tracker with a source) and constant keywords: a graph
    input made by calling `fn` on that array on every call, guarded on its metadata as any
    tensor input (`from_numpy` shares the array's memory, as eagerly). None: not this form."""
    from .variables import UnknownVariable

    arr = args[0] if len(args) == 1 else None
    if not (isinstance(arr, UnknownVariable) and type(arr.value) is np.ndarray and
            arr.source is not None):
        return None
    ckw = {k: _const(tx, fn, v) for k, v in kwargs.items()}
    if str(ckw.get("device", "cpu")) != "cpu" or ckw.get("requires_grad"):
        return None
    value = fn(arr.value, **ckw)  # eager's own errors, raised at capture as eagerly
    out = tx.out
    fname = out.guards.name_for(fn, fn.__name__)
    kw = "".join(f", {k}={_literal(tx, v)}" for k, v in ckw.items())
    # (the index keeps two calls on one array two inputs: two tensors, as eagerly)
    return out.wrap(value, f"({fname}({arr.source}{kw}), {len(out.input_sources)})[0]")


def _from_numpy(tx, fn, args, kwargs):
    var = _array_factory(tx, fn, args, kwargs)
    if var is None:
        raise no_graph_form(tx, fn, "the array is not one the code reads from a global or "
                                    "an attribute")
    return var


def _constant_factory(tx, fn, args, kwargs):
    """`eager.zeros(3, 4)`, `eager.arange(n)`, `eager.tensor([1, 2])`: a graph input that the
    compiled code makes by calling `fn` with the same constants on every call."""
    if "out" in kwargs:
        raise no_graph_form(tx, fn, "out= writes into a tensor")
    if fn.__name__ in ("tensor", "as_tensor", "asarray"):
        var = _array_factory(tx, fn, args, kwargs) or number_tensors.tensor_of_number(
            tx, args, kwargs, _record, lambda v: _const(tx, fn, v)) or \
            number_tensors.of_tensor(tx, fn, args, kwargs, _cast, _const, no_graph_form)
        if var is not None:
            return var
    sym = symints.factory_args(tx, fn, args, kwargs, lambda v: _const(tx, fn, v))
    cargs, ckw = sym or ([_const(tx, fn, a) for a in args],
                         {k: _const(tx, fn, v) for k, v in kwargs.items()})
    dev = ckw.get("device")
    if dev is not None and str(dev) != "cpu":
        raise no_graph_form(tx, fn, f"device={dev!r}")
    if dev is None:  # the default device (`set_default_device`, `with device(...)`): guarded
        from eager.device import default_device

        d, g = default_device(), tx.out.guards
        if d is not None and d.type != "cpu":
            raise no_graph_form(tx, fn, f"the default device is {d}")
        g.add(f"{g.name_for(default_device, 'default_device')}() "
              f"{'is None' if d is None else '== ' + repr(str(d))}")
    value = fn(*symints.resolve(cargs, None),  # eager's own errors, at capture as eagerly
               **{k: symints.resolve(v, None) for k, v in ckw.items()})
    fname = tx.out.guards.name_for(fn, fn.__name__)
    parts = [_literal(tx, a) for a in cargs] + [f"{k}={_literal(tx, v)}" for k, v in ckw.items()]
    out = tx.out
    # (the index keeps two equal calls two inputs: two tensors, as eagerly)
    source = f"({fname}({', '.join(parts)}), {len(out.input_sources)})[0]"
    node = out.graph.placeholder(f"{fn.__name__}_{len(out.input_sources)}", value.meta)
    out.input_sources.append(source)
    out.tensor_shapes[source] = tuple(value.meta.shape)
    var = TensorVariable(node, value.meta, value.requires_grad, source)
    var.constant_value = value  # (its values are constants of the code: `recording`)
    out.by_source[source] = var
    if sym:  # `arange(pos, pos + T)`: values (and maybe the shape) follow the argument
        symints.factory_input(tx, fn, cargs, ckw, var)
    return var


def _op(name):
    from eager.dispatch import FUNCTIONS

    return FUNCTIONS[name]


def _record(tx, name, args, kwargs):
    from .calls import call_op
    from .variables import OpFunctionVariable

    return call_op(tx, OpFunctionVariable(_op(name)), list(args),
                   {k: ConstantVariable(v) for k, v in kwargs.items()})


def _fill(tx, fn, t: TensorVariable, shape, value, dtype):
    """A tensor of `shape` and `dtype` filled with `value`, recorded from `t` (dtype/device)."""
    dt = D.to_dtype(dtype) if dtype is not None else t.meta.dtype
    if dt.is_complex or (isinstance(value, complex)):
        raise no_graph_form(tx, fn, "complex fill values")
    if isinstance(value, float) and not math.isfinite(value) and not dt.is_floating_point:
        raise no_graph_form(tx, fn, "a non-finite value in an integer tensor")
    if isinstance(value, float) and not dt.is_floating_point and value != int(value):
        raise no_graph_form(tx, fn, "a fractional value in an integer tensor")
    z = _record(tx, "new_zeros", [t], {"size": tuple(shape), "dtype": dt})
    if value == 0:  # (0 + -0.0 is +0.0: a negative zero is -zeros)
        negative = isinstance(value, float) and math.copysign(1, value) < 0
        return _record(tx, "neg", [z], {}) if negative and dt.is_floating_point else z
    if dt is D.bool_:
        value = bool(value)
    elif not dt.is_floating_point:
        value = int(value)
    filled = _record(tx, "add", [z, ConstantVariable(value)], {})
    return _cast(tx, filled, dt)


def _cast(tx, t, dt):
    if t.meta.dtype is dt:
        return t
    return _record(tx, "cast", [t], {"dtype": dt})


def _like_rule(name):
    fill = LIKE[name]

    def rule(tx, fn, args, kwargs):
        kwargs = dict(kwargs)
        if not args or not isinstance(args[0], TensorVariable):
            raise no_graph_form(tx, fn, "the first argument is not a traced tensor")
        t, rest = args[0], list(args[1:])
        value = fill
        if value is None:
            if not rest and "fill_value" not in kwargs:
                raise TypeError("full_like() missing 1 required positional argument: "
                                "'fill_value'")
            value = _const(tx, fn, rest.pop(0) if rest else kwargs.pop("fill_value"))
        if rest:
            raise TypeError(f"{name}() takes {1 + (fill is None)} positional arguments")
        kw = {k: _const(tx, fn, v) for k, v in kwargs.items()}
        if kw.pop("requires_grad", False):
            raise no_graph_form(tx, fn, "requires_grad=True makes a new leaf")
        kw.pop("memory_format", None)
        dev = kw.pop("device", None)
        if dev is not None and str(dev) != "cpu":
            raise no_graph_form(tx, fn, f"device={dev!r}")
        dtype = kw.pop("dtype", None)
        if kw:
            raise TypeError(f"{name}() got an unexpected keyword argument '{next(iter(kw))}'")
        return _fill(tx, fn, t, t.meta.shape, value, dtype)

    return rule


# ---------------------------------------------------------------- Tensor methods


def _self_and(tx, fn, args, n_tensors=0):
    if not args or not isinstance(args[0], TensorVariable):
        raise no_graph_form(tx, fn, "self is not a traced tensor")
    rest = args[1:]
    for a in rest[:n_tensors]:
        if not isinstance(a, TensorVariable):
            raise no_graph_form(tx, fn, f"{a.describe()} is not a traced tensor")
    return args[0], rest


def _same_shape_view(tx, t, grad=True):
    """A `reshape` of `t` to its own shape: the same values, a view (in-place ops on it are
    graph breaks, as on any view); `grad=False` records it outside autograd (`detach`)."""
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = prev and grad
    try:
        out = _record(tx, "reshape", [t], {"shape": symints.own_shape(tx, t)})
    finally:
        tx.out.grad_enabled = prev
    if not grad:
        out.requires_grad = False
        out.node.meta["detached"] = True  # rebuilt as eager's detach() (`aliases`)
    return out


def _detach(tx, fn, args, kwargs):
    from .writeback import note_alias

    t, rest = _self_and(tx, fn, args)
    if rest or kwargs:
        raise TypeError("detach() takes no arguments")
    return note_alias(tx, t, _same_shape_view(tx, t, grad=False), "detach")


def _contiguous(tx, fn, args, kwargs):
    t, _ = _self_and(tx, fn, args)
    node = t.node
    if node.op == "call_function" and node.target.kind != "view":
        return t  # a fresh result is contiguous: eager returns self
    return _same_shape_view(tx, t)


def _type_as(tx, fn, args, kwargs):
    t, (other,) = _self_and(tx, fn, args, 1)
    return _cast(tx, t, other.meta.dtype)


def _type(tx, fn, args, kwargs):
    from .legacy import dtype_of

    t, rest = _self_and(tx, fn, args)
    dtype = dtype_of(rest[0]) if rest else None  # `x.type(torch.FloatTensor)`
    dtype = dtype or _const(tx, fn, rest[0] if rest else kwargs.get("dtype"))
    if dtype is None:
        return ConstantVariable(f"eager.{t.meta.dtype.name}")
    if not isinstance(dtype, D.DType):
        raise no_graph_form(tx, fn, f"type({dtype!r})")
    return _cast(tx, t, dtype)


def _view_as(op_name):
    def rule(tx, fn, args, kwargs):
        t, (other,) = _self_and(tx, fn, args, 1)
        return _record(tx, op_name, [t], {"shape": tuple(other.meta.shape)})

    return rule


def _new_tensor(tx, fn, args, kwargs):
    """`ent.new_tensor([1.0, 2.0])`: constant data, made as `eager.tensor(data, dtype=...)`
    (self's dtype unless given) on every call, as the constant factories; tensor data (a
    copy that warns) is one named break."""
    import eager

    t, rest = _self_and(tx, fn, args)
    kwargs = dict(kwargs)
    data = rest[0] if rest else kwargs.pop("data", None)
    if data is None or len(rest) > 1:
        raise TypeError("new_tensor() takes 1 positional argument (data)")
    if isinstance(data, TensorVariable) or not (
            data.is_constant() or isinstance(data, SequenceVariable)):
        raise no_graph_form(tx, fn, f"data that is {data.describe()}, not constants")
    if kwargs.get("dtype") is None or _const(tx, fn, kwargs["dtype"]) is None:
        kwargs["dtype"] = ConstantVariable(t.meta.dtype)
    return _constant_factory(tx, eager.tensor, [data], kwargs)


def _register_hook(tx, fn, args, kwargs):
    from .grad_hooks import register_hook  # lazy: grad_hooks imports recording

    return register_hook(tx, fn, args, kwargs)


METHOD_RULES = {
    "register_hook": _register_hook,
    "new_tensor": _new_tensor,
    "detach": _detach,
    "contiguous": _contiguous,
    "type_as": _type_as,
    "type": _type,
    "view_as": _view_as("view"),
    "reshape_as": _view_as("reshape"),
}


# ---------------------------------------------------------------- nn containers

CONTAINER_METHODS = ("items", "keys", "values", "get", "__iter__", "__len__", "__contains__",
                     "__getitem__")


def container_entries(tx, v) -> list | None:
    """The (key, tracker) pairs of an `eager.nn` container read from the frame (`ModuleDict`,
    `ParameterDict`: by key; `ModuleList`, `Sequential`, `ParameterList`: by index), guarded
    as Dynamo guards an `nn.Module` container: the dicts on their key list, the lists on their
    length (each entry then guarded as it is read). None for any other value, or a container
    the code made itself (no source to guard)."""
    from eager.nn.containers import ModuleDict, ModuleList, ParameterDict, ParameterList

    obj, src = getattr(v, "value", None), getattr(v, "source", None)
    if src is None or not isinstance(obj, (ModuleDict, ModuleList, ParameterDict,
                                           ParameterList)):
        return None
    out, g = tx.out, tx.out.guards
    if isinstance(obj, ModuleDict):
        keys = list(obj._modules)
        g.add(f"list({src}._modules) == {keys!r}")
        return [(k, out.wrap(obj._modules[k], f"{src}._modules[{k!r}]")) for k in keys]
    if isinstance(obj, ParameterDict):
        keys = list(obj._keys)
        g.add(f"list({src}._keys) == {keys!r}")
        return [(k, out.wrap(obj[k], f"{src}[{k!r}]")) for k in keys]
    n = len(obj)
    g.add(f"len({src}) == {n}")
    return [(i, out.wrap(obj[i], f"{src}[{i}]")) for i in range(n)]


def _container_rule(name):
    def rule(tx, fn, args, kwargs):
        entries = container_entries(tx, args[0]) if args else None
        if entries is None or kwargs:
            raise no_graph_form(tx, fn, "a container the code made, or keyword arguments")
        rest = args[1:]
        is_dict = hasattr(type(args[0].value), "keys")  # ModuleDict, ParameterDict
        if name in ("items", "keys", "values", "__iter__", "__len__") and rest:
            raise TypeError(f"{name}() takes no arguments")
        if name == "__len__":
            return ConstantVariable(len(entries))
        if name == "items":
            return _list([_tuple([ConstantVariable(k), v]) for k, v in entries])
        if name == "keys" or name == "__iter__" and is_dict:
            return _list([ConstantVariable(k) for k, _ in entries])
        if name in ("values", "__iter__"):
            return _list([v for _, v in entries])
        if not rest or not all(isinstance(a, ConstantVariable) for a in rest):
            raise no_graph_form(tx, fn, "a key that is not a constant")
        key = rest[0].value
        found = dict(entries) if is_dict else None
        if name == "__contains__":
            return ConstantVariable(key in found if is_dict else False)
        if name == "get":
            return found.get(key, rest[1] if len(rest) > 1 else ConstantVariable(None))
        if is_dict:
            return found[key]  # a KeyError here is the user's, as eagerly
        if isinstance(key, slice):
            raise no_graph_form(tx, fn, "a slice of a container (a new module)")
        return entries[key][1]  # an IndexError here is the user's

    return rule


def _list(items):
    from .variables import ListVariable

    return ListVariable(items)


def _tuple(items):
    from .variables import TupleVariable

    return TupleVariable(items)


def _container_table(table: dict) -> None:
    from eager.nn.containers import (
        ModuleDict,
        ModuleList,
        ParameterDict,
        ParameterList,
        Sequential,
    )

    for cls in (ModuleDict, ModuleList, Sequential, ParameterDict, ParameterList):
        for name in CONTAINER_METHODS:
            obj = getattr(cls, name, None)
            if isinstance(obj, types.FunctionType) and id(obj) not in table:
                _KEEP.append(obj)
                table[id(obj)] = (f"eager.nn.{cls.__name__}.{name}", _container_rule(name))
