"""Random ops in the graph: the generator's state is a graph input and output.

A call of `eager.rand`, `randn`, `randint`, `randperm`, `normal` (number mean and std),
`bernoulli`, `multinomial` or a `*_like` sampler (and so `F.dropout`, `nn.Dropout` in training,
which draw with `eager.rand`), and the in-place `t.uniform_/normal_/exponential_/bernoulli_/
random_/cauchy_/geometric_/log_normal_` (a draw written into `t`, functionalized as other
in-place ops: `F.gumbel_softmax`, a mask buffer redrawn by `bernoulli_`), becomes registry
ops of `ir/ops/random.py`:

    state0 = placeholder            # the generator's state, read on every call
    packed = _rng_sample(state0, kind=..., size=..., dtype=..., args=...)
    values = _rng_values(packed, ...)   state1 = _rng_state(packed)
    _rng_commit_(state1, stream=...)    # writes the state back into the generator

The state placeholder's source is `<generator>._state_tensor()` (the generator's identity is
guarded when it is an argument); further draws on the same generator read the previous
draw's state, and only the last state of each generator is committed (its commit node is
replaced by the next draw's), when the graph runs. The samplers' kernel is
`ir.ops.random.draw`, eager's own, on a numpy Generator rebuilt from the state: **compiled
draws equal eager's bit for bit** (`cauchy_`/`geometric_`/`log_normal_` apply eager's inverse
CDF to the draw in registry ops: equal to eager's up to the compiled kernels' float64
rounding, which the cast to float32 hides) and leave the generator exactly where eager
leaves it, so the next eager draw after a compiled call equals the next draw after the plain
call, on every backend, across graph breaks (each graph reads the state when it runs).
Dropout's mask is an ordinary value of the graph: its backward multiplies by the saved mask,
as eager's.

Named breaks: `out=`, `requires_grad=True`, a device other than the CPU, `normal` with tensor
mean/std, a generator that is not an argument or global, and graphs with dynamic shapes
(automatic-dynamic numbers elsewhere in the graph are fine: a draw's size must be static).
Touches `eager.random` (calls the sampler once at capture for its errors and meta), `ir` and
`capture`.
"""

from __future__ import annotations

import inspect

from eager import random as ER

from .variables import ConstantVariable, ObjectVariable, TensorVariable

SAMPLERS = ("rand", "randn", "randint", "randperm", "normal", "rand_like", "randn_like",
            "randint_like", "bernoulli", "multinomial")
INPLACE_SAMPLERS = ("uniform_", "normal_", "exponential_", "bernoulli_", "random_", "cauchy_",
                    "geometric_", "log_normal_")


def _state(tx, fn, gen) -> tuple:
    """(rng dict of the graph, the generator's current state tracker)."""
    from ir import TensorMeta
    from ir import dtypes as D

    out = tx.out
    rng = out.__dict__.setdefault("rng_states", {})
    got = rng.get(id(gen))
    if got is not None:
        return rng, got[0]
    name = out.guards.name_for(gen, "___generator")
    source = f"({name}._state_tensor(), {len(out.input_sources)})[0]"
    meta = TensorMeta((6,), D.int64)
    node = out.graph.placeholder(f"rng_state_{len(out.input_sources)}", meta)
    out.input_sources.append(source)
    out.tensor_shapes[source] = (6,)
    var = TensorVariable(node, meta, False, source)
    out.by_source[source] = var
    rng[id(gen)] = (var, None)
    return rng, var


def _generator(tx, fn, v):
    from .vocabulary import no_graph_form

    if v is None or isinstance(v, ConstantVariable) and v.value is None:
        return ER.default_generator
    from .local_generators import template  # lazy: local_generators imports vocabulary

    local = template(tx, fn, v)  # `g = torch.Generator().manual_seed(s)` made by the code
    if local is not None:
        return local
    if isinstance(v, ObjectVariable) and isinstance(v.value, ER.Generator) and v.source:
        tx.out.guards.identity(v.source, v.value, "___generator")
        return v.value
    raise no_graph_form(tx, fn, f"generator={v.describe()} is not a generator read from the "
                                "frame")


def _draw(tx, fn, gen, kind, size, dtype, args=(), operand=None) -> TensorVariable:
    """Record one draw from `gen`'s state; returns the samples' tracker."""
    from .calls import record
    from ir import REGISTRY

    rng, state = _state(tx, fn, gen)
    attrs = {"kind": kind, "size": tuple(size), "dtype": dtype, "args": tuple(args)}
    prev = tx.out.grad_enabled
    tx.out.grad_enabled = False  # (samples never require grad)
    try:
        if operand is None:
            packed = record(tx, REGISTRY["_rng_sample"], (state,), attrs, False)
        else:
            packed = record(tx, REGISTRY["_rng_sample_from"], (state, operand), attrs, False)
        values = record(tx, REGISTRY["_rng_values"], (packed,),
                        {"size": tuple(size), "dtype": dtype}, False)
        new_state = record(tx, REGISTRY["_rng_state"], (packed,), {}, False)
        old_commit = rng[id(gen)][1]
        if old_commit is not None:  # only the last state is written back
            tx.out.graph.erase_node(old_commit)
        commit = None if getattr(gen, "_wick_local", False) else record(  # (a local one: none)
            tx, REGISTRY["_rng_commit_"], (new_state,), {"stream": gen._stream}, False)
    finally:
        tx.out.grad_enabled = prev
    rng[id(gen)] = (new_state, commit and commit.node)
    values.requires_grad = False
    return values


def _static(shape) -> bool:
    """Every size a plain int: automatic-dynamic numbers (`self.steps += 1`) elsewhere in the
    graph leave the draw alone; a size that follows one (a SymInt) does not."""
    return all(type(d) is int for d in shape)


def sampler_rule(tx, fn, args, kwargs):
    """The capture rule of eager's samplers (see the module docstring)."""
    from .vocabulary import _const, no_graph_form

    name = fn.__name__
    if tx.out.dynamic_inputs:
        raise no_graph_form(tx, fn, "random ops in a graph with dynamic shapes")
    try:
        ba = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{name}() {e}") from None
    a = dict(ba.arguments)
    gen = _generator(tx, fn, a.pop("generator", None))
    tensor = None
    first = "input" if "input" in a else None
    if first is not None:
        tensor = a.pop(first)
        if not isinstance(tensor, TensorVariable):
            raise no_graph_form(tx, fn, "the input is not a traced tensor")
        if not _static(tensor.meta.shape):  # (a size from an automatic-dynamic number)
            raise no_graph_form(tx, fn, "random ops in a graph with dynamic shapes")
    for k in ("mean", "std"):
        if isinstance(a.get(k), TensorVariable):
            raise no_graph_form(tx, fn, "tensor mean or std")
    c = {k: tuple(_const(tx, fn, x) for x in v) if type(v) is tuple else _const(tx, fn, v)
         for k, v in a.items()}
    if c.get("out") is not None:
        raise no_graph_form(tx, fn, "out= writes into a tensor")
    if c.get("requires_grad"):
        raise no_graph_form(tx, fn, "requires_grad=True makes a new leaf")
    dev = c.get("device")
    if dev is not None and str(dev) != "cpu" or tensor is not None and \
            tensor.meta.device != "cpu":
        raise no_graph_form(tx, fn, f"device={dev!r}")
    # eager's own call on a scratch generator: its errors at capture, its result's meta
    scratch = ER.Generator().manual_seed(0)
    varargs = next((p.name for p in inspect.signature(fn).parameters.values()
                    if p.kind is p.VAR_POSITIONAL), None)
    kw = {k: v for k, v in c.items() if k != varargs}
    if tensor is not None:
        from eager import zeros

        probe = zeros(tuple(tensor.meta.shape), dtype=tensor.meta.dtype)
        if name in ("bernoulli", "multinomial"):  # valid probabilities / weights
            probe = probe + (0.5 if name == "bernoulli" else 1)
        ref = fn(probe, **kw, generator=scratch)
    else:
        ref = fn(*c.get(varargs, ()), **kw, generator=scratch)
    meta = ref.meta
    size, dt = tuple(meta.shape), meta.dtype
    if name in ("rand", "rand_like"):
        return _draw(tx, fn, gen, "uniform", size, dt)
    if name in ("randn", "randn_like"):
        return _draw(tx, fn, gen, "normal", size, dt)
    if name == "normal":
        return _draw(tx, fn, gen, "normal_ms", size, dt, (c["mean"], c["std"]))
    if name == "randperm":
        return _draw(tx, fn, gen, "permutation", size, dt, (int(c["n"]),))
    if name == "randint":
        pos = list(c["args"])
        if c.get("size") is None:
            pos.pop()
        low, high = (0, pos[0]) if len(pos) == 1 else pos
        return _draw(tx, fn, gen, "integers", size, dt, (int(low), int(high)))
    if name == "randint_like":
        low, high = (0, c["low"]) if c.get("high") is None else (c["low"], c["high"])
        return _draw(tx, fn, gen, "integers", size, dt, (int(low), int(high)))
    if name == "bernoulli":
        p = c.get("p")
        return _draw(tx, fn, gen, "bernoulli", size, dt, (p,), None if p is not None else tensor)
    if name == "multinomial":
        return _draw(tx, fn, gen, "multinomial", size, dt,
                     (int(c["num_samples"]), bool(c.get("replacement", False))), tensor)
    raise no_graph_form(tx, fn)



def inplace_sampler_rule(tx, fn, args, kwargs):
    """The in-place samplers `t.uniform_(a, b)`, `normal_(mean, std)`, `exponential_(lambd)`
    (F.gumbel_softmax's `empty_like(logits).exponential_()`), `bernoulli_(p)` (a number or a
    tensor), `random_(low, high)`, `cauchy_`, `geometric_`, `log_normal_`: one draw of `t`'s
    shape (eager's kernel, `ir.ops.random.draw`: the same numbers), for the last three followed
    by eager's own inverse CDF in registry ops (`eager.extra_tensor.INVERSE_CDF`), written into
    `t` as an in-place op (a tensor the code made is rebound; a graph input is written back)."""
    from eager.extra_tensor import INVERSE_CDF

    from .recording import inplace
    from .vocabulary import no_graph_form

    if tx.out.dynamic_inputs:
        raise no_graph_form(tx, fn, "random ops in a graph with dynamic shapes")
    name = fn.__name__
    formula = INVERSE_CDF.get(name)
    try:
        if formula is None:
            ba = inspect.signature(fn).bind(*args, **kwargs)
        else:  # method(self, *args, generator=None, **kwargs): bind to the formula's parameters
            kwargs = dict(kwargs)
            gen_v = kwargs.pop("generator", None)
            ba = inspect.signature(formula).bind(None, *args, **kwargs)
            ba.arguments["generator"] = gen_v
    except TypeError as e:
        raise TypeError(f"{name}() {e}") from None
    ba.apply_defaults()
    a = dict(ba.arguments)
    t = a.pop("self") if formula is None else a.pop("u")
    a.pop("ops", None)
    gen = _generator(tx, fn, a.pop("generator", None))
    if not isinstance(t, TensorVariable):
        raise no_graph_form(tx, fn, "self is not a traced tensor")
    if not _static(t.meta.shape):
        raise no_graph_form(tx, fn, "random ops in a graph with dynamic shapes")
    dt = t.meta.dtype
    if t.meta.device != "cpu" or dt.is_complex or not dt.is_floating_point and \
            name not in ("bernoulli_", "random_"):
        raise no_graph_form(tx, fn, f"a {dt} tensor on {t.meta.device}")
    if t.requires_grad and tx.out.grad_enabled:
        raise no_graph_form(tx, fn, "a tensor that requires grad (eager's leaf check)")
    return inplace(tx, t, _inplace_draw(tx, fn, gen, name, t, a, formula))


def _inplace_draw(tx, fn, gen, name, t, a, formula):
    """The `compute` of `inplace_sampler_rule`: a function recording the draw."""
    from eager.random import random_bounds
    from ir import OpNamespace
    from ir import dtypes as D

    from .recording import record
    from .vocabulary import _const, no_graph_form

    p = a.get("p") if name == "bernoulli_" else None
    if isinstance(p, TensorVariable):
        a.pop("p")
    c = {k: _const(tx, fn, v) for k, v in a.items()}
    if any(not isinstance(v, (int, float)) or isinstance(v, bool) for v in c.values()
           if v is not None):
        raise no_graph_form(tx, fn, "arguments that are not numbers")
    size, dt = tuple(t.meta.shape), t.meta.dtype
    ops = OpNamespace(lambda o, i, at: record(tx, o, i, at, False))
    if formula is not None:
        def compute():
            u = _draw(tx, fn, gen, "uniform", size, D.float64)
            return ops.cast(formula(ops, u, **c), dtype=dt)
        return compute
    if name == "bernoulli_" and isinstance(p, TensorVariable):
        return lambda: _draw(tx, fn, gen, "bernoulli", size, dt, (None,),
                             ops.broadcast_to(p, size=size))
    if name == "bernoulli_":
        kind, params = "bernoulli", (c["p"],)
    elif name == "random_":
        kind, params = "integers", random_bounds(dt, c["low"], c["high"])
    elif name == "uniform_":
        kind, params = "uniform_ab", (c["a"], c["b"])
    elif name == "normal_":
        kind, params = "normal_ms", (c["mean"], c["std"])
    else:
        kind, params = "exponential", (1.0 / c["lambd"],)
    return lambda: _draw(tx, fn, gen, kind, size, dt, params)


def seeded_state(seed: int):
    """The state words of a generator seeded with `seed` (eager's `Generator.manual_seed`)."""
    import numpy as np  # lazy: only compiled seeds need it
    from eager import Tensor
    from ir.ops import random as R

    return Tensor._make(R.state_words(np.random.PCG64(int(seed) & (2**64 - 1))))


def manual_seed_rule(tx, fn, args, kwargs):
    """`torch.manual_seed(s)` of a constant int in the frame: from there on the default
    generator's state in the graph is the seeded one (a graph input made by `seeded_state(s)`
    on every call), committed to the generator when the graph runs (later draws' commits
    replace it), and `initial_seed()` becomes `s` after the graph (a recorded store). Compiled
    draws after it equal eager's. Returns the generator, as eagerly."""
    from ir import REGISTRY

    from . import sideeffects
    from .calls import record
    from .variables import UserObjectVariable
    from .vocabulary import _const, no_graph_form

    if len(args) + len(kwargs) != 1:
        raise TypeError(f"manual_seed() takes 1 argument ({len(args) + len(kwargs)} given)")
    seed = _const(tx, fn, args[0] if args else kwargs.get("seed"))
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise no_graph_form(tx, fn, f"the seed {seed!r} is not an int")
    gen, out = ER.default_generator, tx.out
    rng = out.__dict__.setdefault("rng_states", {})
    name = out.guards.name_for(gen, "___generator")
    helper = out.guards.name_for(seeded_state, "___seeded_state")
    source = f"({helper}({seed}), {len(out.input_sources)})[0]"
    value = seeded_state(seed)
    node = out.graph.placeholder(f"seed_state_{len(out.input_sources)}", value.meta)
    out.input_sources.append(source)
    out.tensor_shapes[source] = tuple(value.meta.shape)
    state = TensorVariable(node, value.meta, False, source)
    out.by_source[source] = state
    old = rng.get(id(gen))
    if old is not None and old[1] is not None:  # the earlier draws' commit: reseeded
        out.graph.erase_node(old[1])
    prev, out.grad_enabled = out.grad_enabled, False
    try:
        commit = record(tx, REGISTRY["_rng_commit_"], (state,), {"stream": gen._stream}, False)
    finally:
        out.grad_enabled = prev
    rng[id(gen)] = (state, commit.node)
    obj = UserObjectVariable(gen, name)
    sideeffects.store_attr(tx, obj, "_initial", ConstantVariable(seed))
    return obj
