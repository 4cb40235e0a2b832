"""Capture rules for eager internals that user-level code reaches through eager's own Python:
`inplace=True` functionals (`Tensor._check_inplace`, `_inplace_update`), `F.one_hot`, functions
decorated with `@no_grad()`/`@enable_grad()`/`@set_grad_enabled(b)`, tensors made by the
code's constant factories mutated in place, and constant folding of the helpers of eager's
compositions (numpy index and weight matrices computed from sizes). Used by `calls.py`.
Touches `eager`, numpy and `capture`.
"""

from __future__ import annotations

import types

import numpy as np

from eager import Tensor, grad_mode
from ir import OpNamespace
from ir.dtypes import to_dtype

from . import calls, legacy, vocabulary
from .variables import ConstantVariable, FunctionVariable, TensorVariable, VariableTracker


def _constant_data(v):
    """(True, value) for a tracker of constant data (constants, built tuples/lists of them,
    numpy's scalar types and dtypes: `np.ones((), dtype=np.int64)` in `_avg_pool`)."""
    from .pycalls import _const_data, _is_const_data

    if isinstance(v, VariableTracker):
        value = getattr(v, "value", None)
        if isinstance(value, np.dtype) or isinstance(value, type) and \
                issubclass(value, np.generic):
            return True, value
        return (True, _const_data(v)) if _is_const_data(v) else (False, None)
    return True, v


def fold_constant_helper(tx, value, args, kwargs):
    """Inside an inlined `eager` composition, a call that computes constants from constants
    (`interpolate`'s numpy index and weight matrices from the sizes, `np.arange(n)`,
    `np.dtype(t.dtype.np)`) runs at capture time: its result is a constant of the graph, as
    the shapes it came from are (guarded). Only private `eager.nn` helpers and numpy (never
    numpy.random) fold; a helper returning a tensor is inlined instead. In user code, a numpy
    ufunc of plain numbers (`np.log(2.0 * np.pi)` in diffusers' `nll`) folds too. None: not
    folded."""
    if not vocabulary.is_internal_frame(tx):
        return _fold_scalar_ufunc(value, args, kwargs)
    module = vocabulary._module_of(value)
    helper = isinstance(value, types.FunctionType) and module.startswith("eager.nn") and \
        value.__name__.startswith("_") and rule_for(value) is None
    if not module and isinstance(value, types.BuiltinMethodType):  # `np.multiply.outer`
        module = type(value.__self__).__module__
    numpy = (module == "numpy" or module.startswith("numpy.")) and \
        not module.startswith("numpy.random")
    if not (helper or numpy or isinstance(value, type) and
            getattr(value, "__module__", "") == "numpy"):
        return None
    plain = [_constant_data(a) for a in args]
    named = {k: _constant_data(v) for k, v in kwargs.items()}
    if not all(ok for ok, _ in plain + list(named.values())):
        return None
    result = value(*[v for _, v in plain], **{k: v for k, (_, v) in named.items()})
    if isinstance(result, Tensor) or (isinstance(result, (tuple, list)) and
                                      any(isinstance(r, Tensor) for r in result)):
        return None
    return ConstantVariable(result)


def _fold_scalar_ufunc(value, args, kwargs):
    """`np.log(c)`, `np.sqrt(c)`, `np.clip(c, lo, hi)`, `np.floor(c)` of constant numbers
    (not bools) in user code (a ufunc, or any function of numpy but numpy.random): the numpy
    number it computes, a constant of the graph (as Dynamo folds numpy on constants); None for
    anything else (an array result too)."""
    module = vocabulary._module_of(value)
    numpy_fn = isinstance(value, np.ufunc) or (
        callable(value) and module.split(".")[0] == "numpy" and
        not module.startswith("numpy.random"))
    if not numpy_fn or not args or not all(
            a.is_constant() and isinstance(a.value, (int, float, np.number)) and
            not isinstance(a.value, (bool, np.bool_))
            for a in list(args) + list(kwargs.values())):
        return None
    if isinstance(value, np.ufunc) and kwargs:
        return None
    result = value(*[a.value for a in args], **{k: a.value for k, a in kwargs.items()})
    if not isinstance(result, (int, float, np.number)) or isinstance(result, np.bool_):
        return None
    return ConstantVariable(result)


_GRAD_WRAPPER = []


def grad_mode_decorated(value):
    """(mode, fn) for a function decorated by `@no_grad()`, `@enable_grad()` or
    `@set_grad_enabled(b)` (eager.grad_mode's wrapper), else None (inference_mode too)."""
    if not _GRAD_WRAPPER:
        _GRAD_WRAPPER.append(grad_mode.no_grad()(lambda: None).__code__)
    if getattr(value, "__code__", None) is not _GRAD_WRAPPER[0] or value.__closure__ is None:
        return None
    cells = dict(zip(value.__code__.co_freevars, (c.cell_contents for c in value.__closure__)))
    ctx, fn = cells.get("self"), cells.get("fn")
    if type(ctx) is grad_mode.no_grad:
        return False, fn
    if type(ctx) is grad_mode.enable_grad:
        return True, fn
    if isinstance(getattr(ctx, "mode", None), bool) and \
            type(ctx) in (grad_mode.set_grad_enabled, grad_mode._ModeBlock):
        return ctx.mode, fn
    return None


def call_in_grad_mode(tx, mode: bool, fn, args, kwargs):
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = mode
    try:
        return calls.call_function(tx, FunctionVariable(fn, None), args, kwargs)
    finally:
        tx.out.grad_enabled = prev


def made_by_the_code(tx, t: TensorVariable) -> bool:
    """A graph input that a constant factory of the code makes fresh on every call
    (`vocabulary._constant_factory`: its source is the call, no caller's tensor is behind it),
    unless it requires grad (eager's leaf check)."""
    out = tx.out
    return (not t.requires_grad and t.source is not None and t.source in out.input_sources
            and t.source not in out.values and out.by_source.get(t.source) is t)


def _check_inplace_rule(tx, fn, args, kwargs):
    """`Tensor._check_inplace` (the first step of `F.relu(x, inplace=True)` and kin): eager's
    check, on what capture knows; a graph input that requires grad under grad mode breaks (it
    may be a leaf: eager raises there or writes through autograd)."""
    (t,) = args
    if not isinstance(t, TensorVariable):
        raise tx.unsupported(f"in-place check of {t.describe()}")
    if t.requires_grad and tx.out.grad_enabled and t.node.op == "placeholder":
        raise tx.unsupported("in-place op on a graph input that requires grad")
    return ConstantVariable(None)


def _inplace_update_rule(tx, fn, args, kwargs):
    """`Tensor._inplace_update(result)` (an `inplace=True` functional's last step): `self`
    rebound to `result` as `inplace` does for `t.add_(y)`."""
    target, result = args[0], args[1] if len(args) > 1 else kwargs.get("result")
    if not isinstance(result, TensorVariable):
        raise tx.unsupported(f"in-place update from {result.describe()}")
    return calls.inplace(tx, target, lambda: result)


def _one_hot_rule(tx, fn, args, kwargs):
    """`F.one_hot(t, num_classes)` with a constant class count: `t[..., None] == arange(n)`
    as int64 (torch's decomposition). As under torch.compile, class values are not checked
    in the graph (eager raises RuntimeError for a class outside [0, n)); num_classes=-1 reads
    the values (a break, as Dynamo's data-dependent shape)."""
    import inspect as _inspect

    bound = _inspect.signature(fn).bind(*args, **kwargs)
    bound.apply_defaults()
    t, n = bound.arguments["tensor"], bound.arguments["num_classes"]
    n = n.value if isinstance(n, ConstantVariable) else n
    if not isinstance(t, TensorVariable) or not isinstance(n, int) or n < 0 or \
            t.meta.dtype is not to_dtype("int64"):
        raise vocabulary.no_graph_form(tx, fn, "num_classes=-1 (or not an int) reads the "
                                       "class values")
    from eager import arange

    classes = vocabulary._constant_factory(tx, arange, [ConstantVariable(n)], {})
    F = OpNamespace(lambda op, inputs, attrs: calls.record(tx, op, inputs, attrs))
    return F.cast(F.eq(F.unsqueeze(t, -1), classes), to_dtype("int64"))


def _checkpoint_rule(tx, fn, args, kwargs):
    """`torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)`: `block(x)` inlined
    into the graph (the same values and gradients; recomputing activations in backward only
    trades memory), as Dynamo keeps a checkpointed block in the graph. A `context_fn` is a
    break; eager's warning (use_reentrant not given) and argument errors are kept."""
    import warnings

    from eager.utils import checkpoint as ckpt

    if not args:
        raise TypeError("checkpoint() missing 1 required positional argument: 'function'")
    kw = dict(kwargs)
    opts = {k: kw.pop(k) for k in ("use_reentrant", "context_fn", "determinism_check",
                                   "debug", "preserve_rng_state") if k in kw}
    reentrant = opts.get("use_reentrant", ConstantVariable(None))
    context = opts.get("context_fn", ConstantVariable(None))
    if not reentrant.is_constant() or not (context.is_constant() and context.value is None):
        raise vocabulary.no_graph_form(tx, fn, "a context_fn or a use_reentrant that is not "
                                       "a constant")
    if reentrant.value is None:
        warnings.warn(ckpt._WARN_REENTRANT, stacklevel=2)
    if reentrant.value is not False and kw:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kw))
    return calls.call_function(tx, args[0], list(args[1:]), kw)


def _constant_query(tx, fn, args, kwargs):
    """`torch.cuda.is_available()`, `device_count()`, `torch.backends.mps.is_available()`: a
    fact of the machine, folded to a constant at capture (as Dynamo folds them); so are
    `torch.jit.is_scripting()` / `is_tracing()`, `torch.onnx.is_in_onnx_export()` (always
    False in wick)."""
    if args or kwargs:
        raise vocabulary.no_graph_form(tx, fn, "arguments")
    return ConstantVariable(fn())


def _compiling_query(tx, fn, args, kwargs):
    """`torch.compiler.is_compiling()` / `is_dynamo_compiling()`: True in captured code (the
    eager function says False), folded to a constant as Dynamo folds it."""
    if args or kwargs:
        raise TypeError(f"{fn.__name__}() takes no arguments")
    return ConstantVariable(True)


def _bind(fn, args, kwargs) -> dict:
    """`fn`'s parameters bound to the call's trackers (a TypeError here is the user's)."""
    import inspect

    return inspect.signature(fn).bind(*args, **kwargs).arguments


def _is_tensor_rule(tx, fn, args, kwargs):
    """`torch.is_tensor(obj)`: whether the tracker is a tensor (its type is known at capture;
    a Python value is never one)."""
    if len(args) != 1 or kwargs:
        raise TypeError("is_tensor() takes exactly one argument")
    v = args[0]
    return ConstantVariable(isinstance(v, TensorVariable) or
                            isinstance(getattr(v, "value", None), Tensor))


def _assert_rule(tx, fn, args, kwargs):
    """`torch._assert(cond, msg)` on a condition known at capture (sizes, constants, all
    guarded where they were read): checked now, as Dynamo; a tensor's is a named break."""
    bound = _bind(fn, args, kwargs)
    cond, msg = bound["condition"], bound["message"]
    if not cond.is_constant():
        raise tx.unsupported("torch._assert on a value known only when the graph runs")
    if not cond.value:
        raise AssertionError(msg.value if msg.is_constant() else "torch._assert failed")
    return ConstantVariable(None)


def _inference_query(tx, fn, args, kwargs):
    """`torch.is_inference_mode_enabled()`: the mode the call runs in, guarded."""
    if args or kwargs:
        raise TypeError("is_inference_mode_enabled() takes no arguments")
    value, g = fn(), tx.out.guards
    g.add(f"{g.name_for(fn, 'is_inference_mode_enabled')}() is {value}")
    return ConstantVariable(value)


def _inert_context(tx, fn, args, kwargs):
    """`with torch.nn.attention.sdpa_kernel(SDPBackend.MATH):` (a choice among attention
    kernels; wick's one kernel serves them all): eager's own checks run now on the constant
    arguments, and the block is a `contextlib.nullcontext` (no graph effect, no break)."""
    import contextlib

    cm = fn(*[_enum_const(tx, fn, a) for a in args],
            **{k: _enum_const(tx, fn, v) for k, v in kwargs.items()})
    with cm:  # (its TypeError for a wrong backend is the user's, at capture as eagerly)
        pass
    return ConstantVariable(contextlib.nullcontext())


def _enum_const(tx, fn, v):
    """A constant argument, an enum member read from a source (`SDPBackend.MATH`: guarded by
    identity) or a list/tuple of them."""
    import enum

    from .variables import SequenceVariable

    if isinstance(v, SequenceVariable):
        return v.kind(_enum_const(tx, fn, x) for x in v.items)
    if type(v).__name__ == "UserObjectVariable" and isinstance(v.value, enum.Enum) and \
            v.source is not None:
        tx.out.guards.identity(v.source, v.value, type(v.value).__name__)
        return v.value
    return vocabulary._const(tx, fn, v)


def _local_rules() -> dict:
    from eager.nn import Module, functional
    from eager.utils import checkpoint as ckpt

    rules = {Tensor._check_inplace: _check_inplace_rule,
             Tensor._inplace_update: _inplace_update_rule,
             functional.one_hot: _one_hot_rule}
    for name in _MEMBERS:
        rules[getattr(Module, name)] = _members_rule
    rules[Module.train] = rules[Module.eval] = _train_rule
    rules[ckpt.checkpoint] = _checkpoint_rule
    from eager.nn import attention

    rules[attention.sdpa_kernel] = _inert_context
    rules[grad_mode.is_inference_mode_enabled] = _inference_query
    import eager

    rules[eager.is_tensor] = _is_tensor_rule
    rules[eager._assert] = _assert_rule
    rules[Tensor.new] = legacy.new_rule
    from . import subscripts

    rules[Tensor.index_put_] = rules[Tensor.index_put] = subscripts.index_put_rule
    rules[Tensor.zero_] = lambda tx, fn, args, kwargs: _fill_rule(  # `buf.zero_()`: fill_(0)
        tx, fn, [*args, ConstantVariable(0)], kwargs)
    rules[eager.jit.annotate] = lambda tx, fn, args, kwargs: \
        types.SimpleNamespace(**_bind(fn, args, kwargs)).the_value  # the value itself
    import eager.backends.mps
    import eager.compiler
    import eager.cpu
    import eager.cuda
    import eager.jit
    import eager.onnx

    for query in (eager.cuda.is_available, eager.cuda.device_count, eager.cpu.is_available,
                  eager.backends.mps.is_available, eager.jit.is_scripting,
                  eager.jit.is_tracing, eager.onnx.is_in_onnx_export):
        rules[query] = _constant_query
    rules[eager.compiler.is_compiling] = _compiling_query
    rules[Tensor.copy_], rules[Tensor.fill_] = _copy_rule, _fill_rule
    rules[grad_mode._GradModeContext.clone] = _grad_clone_rule
    for name in ("new_ones", "new_full", "new_empty"):
        rules[getattr(Tensor, name)] = _new_filled_rule
    rules[grad_mode.is_grad_enabled] = lambda tx, fn, args, kwargs: ConstantVariable(
        tx.out.grad_enabled)  # (the symbolic mode: entries are guarded on the call's)
    return rules


_RULES: dict = {}


def rule_for(value):
    """The rule of this module for eager callable `value` (rule(tx, fn, args, kwargs)), or
    None."""
    if not _RULES:
        _RULES.update(_local_rules())
    from .optim_user import hooked_step, hooked_step_rule

    if hooked_step(value):  # a user Optimizer subclass's `step` (eager's hook wrapper)
        return hooked_step_rule
    try:
        return _RULES.get(value)
    except TypeError:  # an unhashable callable
        return None


# ---------------------------------------------------------------- module members

_MEMBERS = {"parameters": "_parameters", "named_parameters": "_parameters",
            "buffers": "_buffers", "named_buffers": "_buffers", "children": None,
            "named_children": None, "modules": None, "named_modules": None}


def _walk(tx, mod, src: str, recurse: bool, remove_duplicate: bool = True):
    """(dotted path, module, source) of `mod` and (recurse) its submodules, in eager's order
    (`Module.named_modules`), each child list guarded on its keys."""
    out, memo, todo = [], set(), [("", mod, src)]
    while todo:
        path, m, s = todo.pop(0)
        if remove_duplicate and id(m) in memo:
            continue
        memo.add(id(m))
        out.append((path, m, s))
        if not recurse:
            break
        keys = list(m._modules)
        tx.out.guards.add(f"list({s}._modules) == {keys!r}")
        kids = [(f"{path}.{k}" if path else k, c, f"{s}._modules[{k!r}]")
                for k, c in m._modules.items() if c is not None]
        todo = kids + todo  # depth first, as named_modules' recursion
    return out


def _members_rule(tx, fn, args, kwargs):
    """`m.parameters()`, `named_parameters()`, `buffers()`, `named_buffers()`, `children()`,
    `named_children()`, `modules()`, `named_modules()` of a module read from the frame: an
    iterator of the members' trackers, each read from its own dict entry (guarded on the key
    lists, as Dynamo guards a module's structure), not eager's generators (which capture does
    not step into)."""
    mod = args[0] if args else None
    src = getattr(mod, "source", None)
    if src is None or not hasattr(getattr(mod, "value", None), "_modules"):
        raise vocabulary.no_graph_form(tx, fn, "a module the code made")
    import inspect as _inspect

    bound = _inspect.signature(fn).bind(mod.value, *args[1:], **kwargs)
    bound.apply_defaults()
    opts = {k: v.value if isinstance(v, ConstantVariable) else v
            for k, v in bound.arguments.items() if k != "self"}
    if any(isinstance(v, VariableTracker) for v in opts.values()) or opts.get("memo"):
        raise vocabulary.no_graph_form(tx, fn, "arguments that are not constants")
    name = fn.__name__
    table = _MEMBERS[name]
    prefix = opts.get("prefix", "")
    named = name.startswith("named_")
    dedupe = opts.get("remove_duplicate", True)
    wrap = tx.out.wrap
    items = []
    if table is None:
        if name in ("children", "named_children"):
            mods = _walk(tx, mod.value, src, True)[1:]
            mods = [(p, m, s) for p, m, s in mods if "." not in p]
        else:
            mods = _walk(tx, mod.value, src, True, dedupe)
        seen = set()
        for p, m, s in mods:
            if name.endswith("children") and id(m) in seen:
                continue
            seen.add(id(m))
            full = f"{prefix}.{p}" if prefix and p else (prefix or p)
            items.append((full, wrap(m, s)))
    else:
        seen = set()
        for p, m, s in _walk(tx, mod.value, src, opts.get("recurse", True), dedupe):
            entries = getattr(m, table)
            tx.out.guards.add(f"[k for k, v in {s}.{table}.items() if v is not None] == "
                              f"{[k for k, v in entries.items() if v is not None]!r}")
            for k, v in entries.items():
                if v is None or (dedupe and id(v) in seen):
                    continue
                seen.add(id(v))
                local = f"{p}.{k}" if p else k
                full = f"{prefix}.{local}" if prefix else local
                items.append((full, wrap(v, f"{s}.{table}[{k!r}]")))
    from .variables import IteratorVariable, TupleVariable

    return IteratorVariable([TupleVariable([ConstantVariable(k), v]) if named else v
                             for k, v in items])


def _train_rule(tx, fn, args, kwargs):
    """`model.train()` / `model.train(mode)` / `model.eval()` of a module read from the frame:
    each module's flag is an attribute store of `mode` (`sideeffects`: later reads see it, it
    is set after the graph), as Dynamo inlines `Module.train`'s `self.training = mode`; only a
    flag this frame already set to `mode` is not stored again. The current flags are not
    read (nor guarded): a script that calls `model.eval()` in its compiled eval step keeps one
    cache entry, whatever mode the model was in before."""
    mod = args[0] if args else None
    src = getattr(mod, "source", None)
    if src is None or not hasattr(getattr(mod, "value", None), "_modules"):
        raise vocabulary.no_graph_form(tx, fn, "a module the code made")
    rest = list(args[1:]) + list(kwargs.values())
    if fn.__name__ == "eval":
        if rest:
            raise TypeError("eval() takes no arguments")
        mode = False
    else:
        mode = rest[0].value if rest and isinstance(rest[0], ConstantVariable) else \
            (True if not rest else None)
        if not isinstance(mode, bool):
            raise vocabulary.no_graph_form(tx, fn, "a mode that is not a constant bool")
    from .sideeffects import store_attr

    effects = tx.out.side_effects
    for _, m, s in _walk(tx, mod.value, src, True):
        stored = effects.load_attr(tx, m, "training")
        if stored is not None and not isinstance(stored, ConstantVariable):
            raise vocabulary.no_graph_form(tx, fn, "a training flag the code set to "
                                           f"{stored.describe()}")
        if stored is None or stored.value is not mode:
            store_attr(tx, tx.out.wrap(m, s), "training", ConstantVariable(mode))
    return mod


def _ns(tx) -> OpNamespace:
    return OpNamespace(lambda op, inputs, attrs: calls.record(tx, op, inputs, attrs))


def _filled_like(tx, t: TensorVariable, value: TensorVariable):
    """`value` broadcast to `t`'s shape in `t`'s dtype, as a fresh (non-view) value."""
    F = _ns(tx)
    if value.meta.dtype is not t.meta.dtype:
        value = F.cast(value, t.meta.dtype)
    if tuple(value.meta.shape) == tuple(t.meta.shape):
        return F.clone(value)
    return F.cast(F.add(F.new_zeros(t, size=tuple(t.meta.shape)), value), t.meta.dtype)


def _copy_rule(tx, fn, args, kwargs):
    """`t.copy_(src)` (`self.var.copy_(m2 / n)`): src cast and broadcast to t, written as an
    in-place op (a fresh tensor rebound, a graph input written back)."""
    t, src = args[0], args[1] if len(args) > 1 else kwargs.get("src")
    if not isinstance(t, TensorVariable) or not isinstance(src, TensorVariable):
        raise vocabulary.no_graph_form(tx, fn, "a source that is not a tensor")
    return calls.inplace(tx, t, lambda: _filled_like(tx, t, src))


def _fill_rule(tx, fn, args, kwargs):
    """`t.fill_(value)` with a number or a 0-d tensor, as an in-place op."""
    t, value = args[0], args[1] if len(args) > 1 else kwargs.get("value")
    if not isinstance(t, TensorVariable):
        raise vocabulary.no_graph_form(tx, fn, "a target that is not a tensor")
    if isinstance(value, TensorVariable):
        if value.meta.shape:
            raise RuntimeError("fill_ only supports 0-dimension value tensor but got tensor "
                               f"with {len(value.meta.shape)} dimensions.")
        return calls.inplace(tx, t, lambda: _filled_like(tx, t, value))
    if not isinstance(value, ConstantVariable):
        raise vocabulary.no_graph_form(tx, fn, f"a fill value {value.describe()}")
    return calls.inplace(tx, t, lambda: vocabulary._fill(
        tx, fn, t, t.meta.shape, value.value, t.meta.dtype))


def _grad_clone_rule(tx, fn, args, kwargs):
    """`self.clone()` in eager.grad_mode's decorator wrapper (`with self.clone(): return
    fn(...)`), reached when the compiled function itself is `@no_grad()`-decorated: a fresh
    grad-mode block of the same mode."""
    from .variables import GradModeVariable

    ctx = getattr(args[0], "value", None) if args else None
    mode = {grad_mode.no_grad: False, grad_mode.enable_grad: True}.get(type(ctx))
    if mode is None and type(ctx) in (grad_mode.set_grad_enabled, grad_mode._ModeBlock):
        mode = ctx.mode
    if not isinstance(mode, bool):
        raise vocabulary.no_graph_form(tx, fn, "inference_mode or another context")
    return GradModeVariable(mode)


def _new_filled_rule(tx, fn, args, kwargs):
    """`x.new_full(size, value)`, `x.new_ones(*size)`, `x.new_empty(*size)` (zeros) with
    constant sizes and value: filled as `*_like` factories are (`vocabulary._fill`), in x's
    dtype unless `dtype=`; on x's device; requires_grad=True breaks."""
    import inspect as _inspect

    t = args[0] if args else None
    if not isinstance(t, TensorVariable):
        raise vocabulary.no_graph_form(tx, fn, "a receiver that is not a tensor")
    bound = _inspect.signature(fn).bind(*args, **kwargs)
    plain = {}
    for k, v in bound.arguments.items():
        if k == "self":
            continue
        if isinstance(v, tuple):  # *size
            v = tuple(_constant_data(x)[1] if _constant_data(x)[0] else x for x in v)
        elif _constant_data(v)[0]:
            v = _constant_data(v)[1]
        plain[k] = v
    size = plain.get("size", ())
    if len(size) == 1 and isinstance(size[0], (tuple, list)):
        size = tuple(size[0])
    size = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    value = {"new_ones": 1, "new_empty": 0}.get(fn.__name__, plain.get("fill_value"))
    if plain.get("requires_grad") or plain.get("device") not in (None, "cpu") or \
            not all(isinstance(n, int) for n in size) or isinstance(value, VariableTracker):
        raise vocabulary.no_graph_form(tx, fn, "sizes, value or options that are not constants")
    return vocabulary._fill(tx, fn, t, size, value, plain.get("dtype"))
