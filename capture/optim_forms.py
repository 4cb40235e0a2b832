"""Graph forms of `opt.step()` for eager's SGD, Adam/AdamW, RMSprop, Adagrad, Adadelta, Adamax,
NAdam and RAdam (Dynamo traces torch.optim's `_single_tensor_*`; wick records the same
algorithm as graph nodes).

The algorithms are not written here: each optimizer's update rule is written once, in
`eager/optim/update_rules.py` (`sgd_update`, and the `FORMS` table of state-carrying
optimizers), on an `ops` namespace; eager's `step` runs it on Tensors or numpy arrays, and
`GraphOps` here records it as registry ops (its in-place ops functional: their results are
written back after the graph). So compiled steps equal eager's bit for bit.

`step_rule` is the vocabulary rule of `SGD.step` and of each form's `step`: for each
parameter group and parameter with a gradient it reads the parameter, its `.grad` and its
state tensors as graph inputs (sources `opt.param_groups[g]['params'][i]`, `....grad`,
`opt.state[p]['exp_avg']`), records the update under no_grad, and writes the new parameter
and state values back in place after the graph (`writeback.py`, as `p.add_(...)` under
`no_grad`). Guards: the hyperparameters of every group by value (`momentum`, `betas`, ...),
the number of groups and parameters, which parameters have a grad, whether each parameter's
state exists, no step hooks. The learning rate is a 0-d float64 graph input read from
`param_groups[g]['lr']` on every call, so a scheduler's change takes effect without a
recompile. Adam's `step` counter is a state tensor advanced in the graph; its bias
corrections are computed in float64 from it as eager computes them from `step.item()`.

The first step of a form makes its state (Adam's moments and counter: zeros) at capture,
before the graph, as Dynamo runs `_init_group` while tracing (`_init_state`): the graph reads it
as inputs and the next step hits the same entry. SGD's momentum buffer (a copy of the first
gradient) is made in the first step's graph instead: a graph output stored into `opt.state[p]`
after the graph by a recorded side effect (`_StateWriter`), in eager's order and key order.

A 0-d floating Tensor lr is a graph input too (cast to float64 as eager's `lr.item()`).

Named breaks remain for: a closure, step hooks, a Tensor beta or a Tensor lr of another kind, parameters
other than float32/float64 (complex; half types, whose fused kernels would round otherwise),
a grad of another shape or dtype, state missing some key, the optimizers without a form
(ASGD, Rprop, Adafactor, LBFGS, SparseAdam, Muon), and the optimizer's groups or state
changed earlier in the same frame. Each graph writes a parameter back once (one version bump,
as torch.compile's functionalized copy_; eager bumps once per in-place op of its step). The
step's nodes are marked `optimizer_step` (explain's counts under Dynamo's rules). Touches
`eager.optim`, `ir.REGISTRY` and `capture`.
"""
from __future__ import annotations

import numpy as np

from eager import Tensor
from eager.optim.update_rules import FORMS, sgd_update
from ir import dtypes as D

from .variables import (
    ConstantVariable,
    DictVariable,
    OpFunctionVariable,
    TensorVariable,
    TupleVariable,
    UserObjectVariable,
)

__all__ = ["GraphOps", "register", "step_rule"]


# ---------------------------------------------------------------- the graph namespace


def _number(x) -> bool:
    return type(x) in (int, float)


class GraphOps:
    """The update rules recorded into capture `tx`: registry ops on trackers; numbers fold. A
    0-d float64 tracker (lr, bias corrections) is cast to the parameter's dtype by `like`
    before it meets a tensor: the rounding eager's weak Python scalars get. An in-place op
    (`add_`, `lerp_`, ...) records its functional form and returns the new value."""

    def __init__(self, tx):
        self.tx = tx
        self.memo: dict = {}  # ops on 0-d values (the lr's negation and cast), made once

    def _op(self, name, *inputs, **attrs):
        from eager.dispatch import FUNCTIONS

        from .recording import call_op

        scalar = all(not isinstance(x, TensorVariable) or x.meta.shape == () for x in inputs)
        key = (name, tuple(x.node if isinstance(x, TensorVariable) else (type(x), x)
                           for x in inputs), tuple(attrs.items())) if scalar else None
        if key is not None and key in self.memo:
            return self.memo[key]
        args = [x if isinstance(x, TensorVariable) else ConstantVariable(x) for x in inputs]
        out = call_op(self.tx, OpFunctionVariable(FUNCTIONS[name]), args,
                      {k: ConstantVariable(v) for k, v in attrs.items()})
        if key is not None:
            self.memo[key] = out
        return out

    def _bin(self, name, a, b, py):
        return py(a, b) if _number(a) and _number(b) else self._op(name, a, b)

    def neg(self, x):
        return -x if _number(x) else self._op("neg", x)

    def add(self, a, b):
        return self._bin("add", a, b, lambda x, y: x + y)

    def sub(self, a, b):
        return self._bin("sub", a, b, lambda x, y: x - y)

    def mul(self, a, b):
        return self._bin("mul", a, b, lambda x, y: x * y)

    def div(self, a, b):
        return self._bin("div", a, b, lambda x, y: x / y)

    def pow(self, a, b):
        return self._bin("pow", a, b, lambda x, y: x ** y)

    def sqrt(self, x):
        return self._op("sqrt", x)

    sqrt_ = sqrt

    def maximum(self, a, b):
        if _number(b) and isinstance(a, TensorVariable):
            return self._op("clamp", a, min=b)  # (max with a number: clamp's min)
        return self._op("maximum", a, b)

    def abs(self, x):
        return self._op("abs", x)

    def gt(self, a, b):
        return self._op("gt", a, b)

    def addcmul(self, x, t1, t2, value):
        return self._op("addcmul", x, t1, t2, value=value)

    def select(self, cond, a, b):
        """`a() if cond else b()` on a 0-d bool tracker: both recorded, `where` picks."""
        return self._op("where", cond, a(), b())

    def clone(self, x):
        return self._op("clone", x)

    def item(self, t):
        return self.cast(t, D.float64)

    def copy_(self, x, y):
        return y

    def lerp_(self, x, end, w):
        """`TensorOps.lerp_`: its two-operand form for |w| < 0.5, else the registry's lerp."""
        if abs(w) >= 0.5:
            return self._op("lerp", x, end, w)
        return self.add(x, self.mul(self.sub(end, x), w))

    def _scaled(self, t, value, like):
        """`t.mul_(value)` unless value is the number 1 (TensorOps.addcmul_/addcdiv_)."""
        return t if _number(value) and value == 1 else self.mul(t, self.like(value, like))

    def addcmul_(self, x, t1, t2, value=1):
        return self.add(x, self._scaled(self.mul(t1, t2), value, x))

    def addcdiv_(self, x, t1, t2, value=1):
        return self.add(x, self._scaled(self.div(t1, t2), value, x))

    add_, mul_, div_ = add, mul, div

    def cast(self, t, dtype):
        return t if t.meta.dtype is dtype else self._op("cast", t, dtype=dtype)

    def like(self, x, p):
        return x if _number(x) else self.cast(x, p.meta.dtype)

    def zeros(self, like, shape, dtype):
        return self._op("new_zeros", like, size=tuple(shape), dtype=dtype)


# ---------------------------------------------------------------- the capture rule

_SGD_HYPER = ("momentum", "dampening", "weight_decay", "nesterov", "maximize")
_KINDS: dict = {}  # id(step function) -> "sgd" or its `update_rules.Form`


def register(table: dict, keep: list) -> None:
    """Add the rules of the supported optimizers' `step` to vocabulary's table: SGD, and each
    optimizer of `update_rules.FORMS` (Adam/AdamW, RMSprop, Adagrad, Adadelta, Adamax,
    NAdam, RAdam)."""
    import importlib

    from eager.optim.sgd import SGD

    classes = [(SGD, "sgd")]
    for where, form in FORMS.items():
        module, name = where.rsplit(".", 1)
        classes.append((getattr(importlib.import_module(f"eager.optim.{module}"), name), form))
    for cls, kind in classes:
        fn = cls.__dict__["step"]
        inner = getattr(fn, "__wrapped__", None)  # (reached by `compile(opt.step)`, which
        for f in (fn, inner) if inner is not None else (fn,):  # traces the hooks' wrapper)
            keep.append(f)
            _KINDS[id(f)] = kind
            table[id(f)] = (f"eager.optim.{cls.__name__}.step", step_rule)


class _StateWriter:
    """The target of the recorded side effect that stores a first step's new state: setting
    any attribute to a list of (optimizer, parameter, {key: tensor}) runs
    `opt.state[p].update(d)` for each, in order (eager's insertion and key order)."""

    def __setattr__(self, name, value):
        for opt, p, d in value:
            opt.state[p].update(d)


_WRITER = _StateWriter()


def _break(tx, fn, why):
    from . import vocabulary

    return vocabulary.no_graph_form(tx, fn, why)


def _check_call(tx, fn, args, kwargs):
    """The optimizer's tracker, or the break naming why this call has no graph form."""
    opt_var, rest = args[0], list(args[1:]) + list(kwargs.values())
    if any(not (isinstance(a, ConstantVariable) and a.value is None) for a in rest) or \
            set(kwargs) - {"closure"} or len(args) > 2:
        raise _break(tx, fn, "a closure re-evaluates the model inside the step")
    if not isinstance(opt_var, UserObjectVariable) or opt_var.source is None:
        raise _break(tx, fn, "an optimizer made inside the compiled function")
    d = opt_var.value.__dict__
    if d.get("_optimizer_step_pre_hooks") or d.get("_optimizer_step_post_hooks"):
        raise _break(tx, fn, "step hooks run Python code around the step")
    if d.get("_in_step"):
        raise _break(tx, fn, "a step called from inside another step")
    _check_unmodified(tx, fn, opt_var)
    if any(rec[4] is _WRITER and any(t.items[0].value is opt_var.value for t in rec[3].items)
           for rec in tx.out.side_effects.stores.values()):
        raise _break(tx, fn, "a second step in a graph whose first step creates the state")
    return opt_var


def _check_unmodified(tx, fn, opt_var) -> None:
    """Break when this frame changed the optimizer's groups or state before the step (the
    rule reads the real objects)."""
    opt, out = opt_var.value, tx.out
    se = out.side_effects
    mine = {id(opt.param_groups), id(opt.state), id(opt)}
    for group in opt.param_groups:
        mine.update((id(group), id(group["params"])))
    mine.update(id(s) for s in opt.state.values())
    real = {id(var): val for val, var in out.containers_by_id.values()}
    groups = {id(group) for group in opt.param_groups}
    if any(id(real.get(id(c))) in mine and not (
            id(real.get(id(c))) in groups and _only_lr_set(c, real[id(c)]))
            for c in se.containers.values()) or \
            any(rec[0] == "attr" and id(rec[4]) in mine and
                rec[2] not in ("_in_step", "_opt_called") for rec in se.stores.values()):
        raise _break(tx, fn, "the optimizer's param_groups or state were changed earlier in "
                     "the compiled function")


def _only_lr_set(var, group: dict) -> bool:
    """Group dict tracker `var` differs from the real `group` at most by a number stored
    under 'lr' (an lr finder's `for g in opt.param_groups: g['lr'] = lr` before the step)."""
    items = var.items
    if not isinstance(items, dict) or list(items) != list(group):
        return False
    lr = items.get("lr")
    if not isinstance(lr, ConstantVariable) or lr.python_type() not in (int, float) or \
            lr.source is None:
        return False
    return all(k == "lr" or getattr(v, "source", None) is not None and
               v.source.endswith(f"[{k!r}]") for k, v in items.items())


def _lr_set_in_frame(tx, group: dict):
    """The tracker this frame stored into `group['lr']` (`_only_lr_set`), or None."""
    seen = tx.out.containers_by_id.get(id(group))
    if seen is None or seen[0] is not group or \
            id(seen[1]) not in tx.out.side_effects.containers:
        return None
    lr = seen[1].items.get("lr")
    src = getattr(lr, "source", None)
    return None if src is not None and src.endswith("['lr']") else lr


def _hyper(tx, fn, keys: tuple, group: dict, gsrc: str) -> dict:
    """The group's hyperparameters (guarded by value) and its lr (a 0-d float64 input)."""
    g = tx.out.guards
    hp = {}
    for key in keys:
        if key not in group:
            raise _break(tx, fn, f"param group without {key!r}")
        value = group[key]
        flat = value if isinstance(value, tuple) else (value,)
        if not all(type(x) in (int, float, bool) for x in flat):
            raise _break(tx, fn, f"{key}={value!r} is not a Python number")
        g.constant(f"{gsrc}[{key!r}]", value)
        hp[key] = value
    if group.get("differentiable"):
        raise _break(tx, fn, "differentiable=True")
    g.add(f"not {gsrc}.get('differentiable')")
    stored = _lr_set_in_frame(tx, group)
    if stored is not None:  # the number the frame set (an argument: read on every call)
        number = getattr(stored, "number", None)
        hp["lr"] = _lr_input(tx, stored.source, stored.value if number is None else number)
        return hp
    lr = group.get("lr")
    if isinstance(lr, Tensor):  # (torch's compiled-optimizer tutorial: lr=torch.tensor(0.01))
        hp["lr"] = _tensor_lr(tx, fn, f"{gsrc}['lr']", lr)
        return hp
    if type(lr) not in (int, float):
        raise _break(tx, fn, f"lr={lr!r} is not a Python number")
    hp["lr"] = _lr_input(tx, f"{gsrc}['lr']", lr)
    return hp


def _tensor_lr(tx, fn, src: str, lr) -> TensorVariable:
    """A 0-d floating CPU Tensor lr as a graph input, read on every call (a scheduler's
    `fill_` takes effect without a recompile), in float64 as eager's step takes it
    (`lr.item()`)."""
    var = tx.out.wrap(lr, src)
    if not isinstance(var, TensorVariable) or var.meta.shape != () or \
            not var.meta.dtype.is_floating_point or lr.requires_grad:
        raise _break(tx, fn, f"lr={lr!r} is not a 0-d floating tensor without grad")
    return GraphOps(tx).cast(var, D.float64)


def _lr_input(tx, src: str, lr) -> TensorVariable:
    from .dynamic import _to_tensor_float

    out = tx.out
    out.guards.type_is(src, lr)
    conv = out.guards.name_for(_to_tensor_float, "___num_float")
    expr = f"{conv}({src})"
    known = out.by_source.get(expr)
    if known is not None:
        return known
    meta = _to_tensor_float(lr).meta
    node = out.graph.placeholder(f"lr_{len(out.input_sources)}", meta)
    out.input_sources.append(expr)
    out.tensor_shapes[expr] = ()
    var = TensorVariable(node, meta, False, expr)
    out.by_source[expr] = var
    return var


def _grad_of(tx, fn, pv):
    """The parameter's gradient tracker (a ConstantVariable None when it has none)."""
    from .sideeffects import load_grad

    grad = load_grad(tx, pv)
    if grad is None:
        raise _break(tx, fn, "a parameter that is not a graph input")
    if isinstance(grad, ConstantVariable) and grad.value is None:
        return grad
    if not isinstance(grad, TensorVariable) or grad.meta.shape != pv.meta.shape or \
            grad.meta.dtype is not pv.meta.dtype:
        raise _break(tx, fn, "a grad of another shape or dtype than its parameter")
    return grad


def step_rule(tx, fn, args, kwargs):
    """`opt.step()` of SGD or an optimizer of `update_rules.FORMS`: the update as graph
    nodes (see the module)."""
    from .sideeffects import store_attr

    kind = _KINDS[id(fn)]
    opt_var = _check_call(tx, fn, args, kwargs)
    opt, osrc = opt_var.value, opt_var.source
    out, g = tx.out, tx.out.guards
    g.add(f"not {osrc}.__dict__.get('_optimizer_step_pre_hooks')")
    g.add(f"not {osrc}.__dict__.get('_optimizer_step_post_hooks')")
    g.add(f"not {osrc}.__dict__.get('_in_step')")
    g.length(f"{osrc}.param_groups", opt.param_groups)
    new_state = []
    ops = GraphOps(tx)
    prev = out.grad_enabled
    out.grad_enabled = False
    before = {id(n) for n in out.graph.nodes}
    try:
        for gi, group in enumerate(opt.param_groups):
            gsrc = f"{osrc}.param_groups[{gi}]"
            g.type_is(gsrc, group)
            hp = _hyper(tx, fn, _SGD_HYPER if kind == "sgd" else kind.hyper, group, gsrc)
            g.length(f"{gsrc}['params']", group["params"])
            for i, p in enumerate(group["params"]):
                pv = out.wrap(p, f"{gsrc}['params'][{i}]")
                if not isinstance(pv, TensorVariable):
                    raise _break(tx, fn, "a parameter capture does not see as a tensor")
                grad = _grad_of(tx, fn, pv)
                if isinstance(grad, ConstantVariable):
                    continue  # (no grad: skipped, as eagerly)
                if pv.meta.dtype not in (D.float32, D.float64):  # (half types: fused
                    # kernels keep float32 intermediates, eager rounds after every op)
                    raise _break(tx, fn, f"a {pv.meta.dtype.name} parameter")
                if kind == "sgd":
                    created = _sgd_param(tx, fn, ops, opt, osrc, pv, grad, hp)
                else:
                    created = _form_param(tx, fn, kind, ops, opt, osrc, pv, grad, hp)
                if created is not None:
                    new_state.append(TupleVariable([opt_var, pv, DictVariable(created)]))
    finally:
        out.grad_enabled = prev
    step_id = len(getattr(out, "optimizer_steps", ()))
    out.optimizer_steps = [*getattr(out, "optimizer_steps", ()), step_id]
    for n in out.graph.nodes:  # (explain's Dynamo-rule counts: torch.optim's step is a graph)
        if id(n) not in before:
            n.meta["optimizer_step"] = step_id
    if new_state:
        se = out.side_effects
        writer = UserObjectVariable(_WRITER, None)
        name = f"state_{len(se.stores)}"
        se._record(("attr", id(_WRITER), name),
                   ("attr", writer, name, _list(new_state), _WRITER))
    store_attr(tx, opt_var, "_in_step", ConstantVariable(False))
    store_attr(tx, opt_var, "_opt_called", ConstantVariable(True))
    return ConstantVariable(None)


def _list(items):
    from .variables import ListVariable

    return ListVariable(items)


def _write(tx, target, value) -> None:
    from .recording import inplace

    inplace(tx, target, lambda: value)


def _sgd_param(tx, fn, ops, opt, osrc, pv, grad, hp):
    momentum = hp["momentum"]
    buf = None
    if momentum != 0:
        psrc, g = pv.source, tx.out.guards
        state = opt.state.get(_real(tx, pv))
        have = state is not None and state.get("momentum_buffer") is not None
        g.add(f"{osrc}.state.get({psrc}, {{}}).get('momentum_buffer') is "
              f"{'not ' if have else ''}None")
        if have:
            buf = tx.out.wrap(state["momentum_buffer"],
                              f"{osrc}.state[{psrc}]['momentum_buffer']")
            if not isinstance(buf, TensorVariable) or buf.meta.shape != pv.meta.shape or \
                    buf.meta.dtype is not pv.meta.dtype:
                raise _break(tx, fn, "a momentum buffer of another shape or dtype")
    new_p, new_buf = sgd_update(ops, pv, grad, buf, hp["lr"], momentum, hp["dampening"],
                                hp["weight_decay"], hp["nesterov"], hp["maximize"])
    created = None
    if momentum != 0:
        if buf is None:
            created = {"momentum_buffer": new_buf}
        else:
            _write(tx, buf, new_buf)
    _write(tx, pv, new_p)
    return created


def _form_param(tx, fn, form, ops, opt, osrc, pv, grad, hp):
    """One parameter's step by `form` (`update_rules.Form`): its state read as graph inputs
    and written back in place, or, on the first step, made in the graph and returned as the
    {key: tensor} that `_StateWriter` stores."""
    psrc, g, out = pv.source, tx.out.guards, tx.out
    spec = form.state(hp)
    state = opt.state.get(_real(tx, pv))
    st, tensors = {}, None
    if not state:  # the first step: its state made now, as eager's first step makes it
        state = _init_state(tx, fn, spec, opt, _real(tx, pv))
    if not state:
        g.add(f"len({osrc}.state.get({psrc}, ())) == 0")
        dt = D.float64 if D.get_default_dtype() is D.float64 else D.float32  # _new_step
        for key, init in spec:
            if init is None:
                raise _break(tx, fn, f"optimizer state without {key!r}")
            if init == "zeros":
                st[key] = ops.zeros(pv, pv.meta.shape, pv.meta.dtype)
            else:  # "step" / "one": a 0-d counter
                z = ops.zeros(pv, (), dt)
                st[key] = z if init == "step" else ops.add(z, 1)
    else:
        g.add(f"len({osrc}.state.get({psrc}, ())) != 0")
        tensors = []
        for key, init in spec:
            if state.get(key) is None:
                raise _break(tx, fn, f"optimizer state without {key!r}")
            g.add(f"{key!r} in {osrc}.state[{psrc}]")
            t = out.wrap(state[key], f"{osrc}.state[{psrc}][{key!r}]")
            scalar = init in ("step", "one") or key == "step"
            if not isinstance(t, TensorVariable) or (scalar and (
                    t.meta.shape != () or not t.meta.dtype.is_floating_point)) or (
                    not scalar and (t.meta.shape != pv.meta.shape or
                                    t.meta.dtype is not pv.meta.dtype)):
                raise _break(tx, fn, f"state {key!r} of another shape or dtype")
            st[key] = t
            tensors.append(t)
    new_p, new = form.update(ops, pv, grad, st, hp)
    if tensors is None:
        _write(tx, pv, new_p)
        return {key: new[key] for key, _ in spec}
    for (key, _), target in zip(spec, tensors):
        _write(tx, target, new[key])
    _write(tx, pv, new_p)
    return None


def _init_state(tx, fn, spec, opt, p) -> dict:
    """`opt.state[p]` made at capture, before the graph, as Dynamo runs `_init_group` while
    tracing: zeros like `p`, 0-d counters at 0 (or 1) in eager's step dtype, in the form's key
    order, so the graph reads the state as inputs and the next step hits the same entry (a
    first-step graph that made it left a second entry). Eager's first step makes the same
    values, so a frame that then runs eagerly is unchanged. {} when a key has no initial
    value."""
    if any(init not in ("zeros", "step", "one") for _, init in spec):
        return {}
    dt = D.float64 if D.get_default_dtype() is D.float64 else D.float32  # eager's _new_step
    made = {}
    for key, init in spec:
        if init == "zeros":
            made[key] = Tensor(np.zeros(tuple(p.shape), p.dtype.np))
        else:
            made[key] = Tensor(np.asarray(0.0 if init == "step" else 1.0, dt.np))
    opt.state[p] = made
    return made


def _real(tx, pv):
    return tx.out.values.get(pv.source)
