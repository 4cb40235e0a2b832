"""Dynamic shapes: one cache entry that serves every size of the dimensions marked dynamic.

A graph's nodes hold canonical attributes computed from concrete shapes (reshape's -1
resolved, a mean's divisor, a softmax's reduced dim...), so a graph captured at one size is
not valid at another. Instead of symbolic sizes in the IR, a dynamic entry keeps the *op tape*
of the capture: every user-level op call with its user-level attributes, in order. For a new
concrete shape the tape is replayed through `calls.record` into a fresh graph (attributes
re-canonicalised, decompositions and metas re-derived), compiled by the backend on the shape's
second call (`config.dynamic_compile_after`; the first runs the tape on eager tensors) and
cached per input shapes inside the entry (`Specializations`, at most
`config.dynamic_shape_limit` shapes: past it, new shapes run the tape eagerly).

A size of a dynamic dimension read in Python (`B, T, C = x.size()`, `x.size(0)`, `len(x)`)
is a `symints.SymSizeVariable`: used as an op's size (`view(B, T, nh, C // nh)`,
`new_zeros(n, d)`, `reshape(B * T, C)`, after `+ - * //` with ints and other sizes) it is a
`SymInt` ("size", node, dim) on the tape, evaluated for each replay's shapes; returned, it is
rebuilt from the call's own tensor. What the tape cannot replay is any other Python read of a
size as a value (`if x.size(1) > 3`, `range(n)`, `int(n)`): such a read *specialises* the
dimension (its guard becomes exact). To know
whether a size read depends on a dynamic dimension, every tensor tracker carries a *shadow*:
the same value computed with each dynamic size perturbed (+1); a read whose shadow differs
raises `Specialize`, and the capture restarts with those dimensions static. Sizes 0 and 1 are
never dynamic (broadcasting and empty tensors change meaning). PyTorch's automatic dynamic
shapes do the same with SymInts (`torch._dynamo.config.automatic_dynamic_shapes`).

Dynamic Python numbers (`SymNumberVariable`): an int/float parameter whose value guard failed
is wrapped with its type guarded but not its value; arithmetic with tensors and `+ - * /` with
constants make it a 0-d graph input, `math.cos/sin/exp/log/sqrt/...` of it a graph op
(`number_math`), a comparison of the argument with a constant a bool guarded on that comparison
(`number_compare`: `if step < warmup`, one entry per side as Dynamo's SymInt guards); an int
used as a slice bound, `narrow` length or `arange` argument (a KV-cache position:
`cache[:, :, pos:pos + T] = k`, `cache[:, :, :pos + T]`) is a `symints.SymInt` on the tape and
its value joins the input shapes in the `Specializations` key (one entry, a graph per value);
any other read of its value raises `Specialize` for it (the compiled function then keeps it
static). Touches `ir.Graph`, `capture`.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass

import numpy as np

from eager import Tensor
from ir import Graph, TensorMeta
from ir.graph import Node

from . import config, logs
from .variables import ConstantVariable, TensorVariable


def symints():
    from . import symints as mod  # lazy: symints imports this module

    return mod


class Specialize(Exception):
    """Python read a dynamic size as a value: recapture with `dims` ({(source, dim)}, or None
    for every dynamic dimension) static."""

    def __init__(self, dims):
        super().__init__(f"specialise {sorted(dims) if dims else 'all dynamic dimensions'}")
        self.dims = dims


class _ShadowOut:
    def __init__(self, out):
        self._out = out
        self.graph = Graph("shadow")

    @property
    def grad_enabled(self):
        return self._out.grad_enabled


class ShadowTx:
    """The `tx` that `calls.record` sees while computing shadows (or replaying a tape)."""

    def __init__(self, out, graph: Graph | None = None, env: dict | None = None):
        self.out = _ShadowOut(out) if graph is None else _ReplayOut(graph)
        self._env = env

    @property
    def sym_env(self) -> dict:
        """The dynamic ints' values for `symints.SymInt` attributes: a replay's, or for a
        shadow every one less than at capture (`symints`)."""
        if self._env is not None:
            return self._env
        out = getattr(self.out, "_out", None)
        env = {r: p.number - 1 for r, p in getattr(out, "sym_params", {}).items()}
        env.update(getattr(out, "sym_shadow", {}))  # ({node: shadow shape}: sizes' SymInts)
        return env

    def location(self) -> str:
        return ""

    def unsupported(self, reason: str, *args, **kwargs):
        return Specialize(None)


class _ReplayOut:
    def __init__(self, graph):
        self.graph = graph
        self.grad_enabled = True


@dataclass
class TapeEntry:
    op: object
    inputs: tuple  # graph Nodes (tensors) or Python numbers
    attrs: dict  # user-level attributes (before canonicalisation)
    result: Node
    grad_enabled: bool


def perturbed(meta: TensorMeta, dims) -> TensorMeta:
    shape = tuple(s + 1 if d in dims else s for d, s in enumerate(meta.shape))
    return TensorMeta(shape, meta.dtype, meta.device)


def note_op(tx, op, vals, attrs: dict, result) -> None:
    """Called by `calls.record` for a user-level op: append to the tape, compute the shadow."""
    out = tx.out
    tape = getattr(out, "tape", None)
    if tape is None:
        return
    multi = isinstance(result, tuple)
    if multi and not all(isinstance(r, TensorVariable) for r in result):
        return
    node = tuple(r.node for r in result) if multi else result.node
    tape.append(TapeEntry(op, tuple(x.node if isinstance(x, TensorVariable) else x
                                    for x in vals), attrs, node, out.grad_enabled))
    if not any(isinstance(x, TensorVariable) and x.shadow is not None for x in vals) and \
            not ((getattr(out, "sym_keys", None) or getattr(out, "sym_shadow", None)) and
                 symints().has_sym(attrs)):
        return
    from . import calls

    shadows = tuple(x.shadow if isinstance(x, TensorVariable) and x.shadow is not None else x
                    for x in vals)
    try:
        shadow = calls.record(out.shadow_tx, op, shadows, dict(attrs), False)
    except Specialize:
        raise
    except Exception:  # the op does not accept the perturbed sizes: specialise them  # noqa: BLE001
        syms = [v for v in attrs.values() if type(v) is symints().SymInt]
        roots = {(r, "num") for v in syms for r in v.roots}
        roots.update(k for v in syms for k in (v.dims or ()))
        raise Specialize(roots or _inner_dims(out, vals) or None) from None
    if not multi:
        result.shadow = None if shadow.meta.shape == result.meta.shape else shadow
        return
    # (split/chunk/max with indices: one shadow per output; a count that differs specialises)
    if not isinstance(shadow, tuple) or len(shadow) != len(result) or \
            not all(isinstance(x, TensorVariable) for x in shadow):
        raise Specialize(_inner_dims(out, vals) or None)
    for r, x in zip(result, shadow):
        r.shadow = None if x.meta.shape == r.meta.shape else x


def _inner_dims(out, vals) -> set:
    """The dynamic input dims whose sizes an op's inputs have at a dim other than the first,
    where the shadow differs (a feature size that the op's weights fix, a split size): what
    to specialise first when the perturbed sizes fail, keeping a batch dim dynamic (else
    every dynamic dim but the first of each input: `cat([x[:, i], h]) @ w.t()`)."""
    ts = [(x.meta.shape, (x.shadow or x).meta.shape) for x in vals
          if isinstance(x, TensorVariable)]
    sizes = {a[-k] for a, sa in ts for b, sb in ts for k in range(1, min(len(a), len(b)) + 1)
             if a[-k] == b[-k] != 1 and sa[-k] != sb[-k]}  # (broadcast dims that disagree)
    sizes = sizes or {s[d] for s, sh in ts for d in range(1, len(s)) if sh[d] != s[d]}
    dyn = getattr(out, "dynamic_inputs", None) or {}
    return {k for k, v in dyn.items() if v in sizes} or {k for k in dyn if k[1] != 0}


def check_read(tx, t: TensorVariable, dims=None) -> None:
    """Python reads `t`'s sizes at `dims` (all when None): specialise what they depend on."""
    sh = t.shadow
    if sh is None or getattr(tx.out, "dynamic_inputs", None) is None:
        return
    dims = range(len(t.meta.shape)) if dims is None else dims
    differing = {t.meta.shape[d] for d in dims if sh.meta.shape[d] != t.meta.shape[d]}
    if not differing:
        return
    found = {key for key, size in tx.out.dynamic_inputs.items() if size in differing}
    if not found and getattr(tx.out, "sym_keys", None):  # a size that a dynamic int sets
        found = {(r, "num") for r in tx.out.sym_keys}
    raise Specialize(found or None)


class SizeVariable(ConstantVariable):
    """`t.shape` of a tensor whose sizes may be dynamic: reading one size (`shape[0]`)
    specialises only what that size depends on; reading `.value` (the whole Size) all."""

    def __init__(self, tx, t: TensorVariable):
        self.tx, self.t, self.source = tx, t, None

    @property
    def value(self):
        check_read(self.tx, self.t)
        from eager.tensor import Size

        return Size(self.t.meta.shape)

    def item(self, i) -> ConstantVariable:
        """`shape[i]` (an int) or `shape[a:b]`."""
        n = len(self.t.meta.shape)
        dims = range(n)[i] if isinstance(i, slice) else (range(n)[i],)
        if not isinstance(i, slice):  # a dynamic size: compared with another, checked
            size = symints().size_item(self.tx, self.t, dims[0])  # per specialisation
            if size is not None:
                return size
        check_read(self.tx, self.t, dims)
        from eager.tensor import Size

        shape = self.t.meta.shape
        return ConstantVariable(Size(shape[i]) if isinstance(i, slice) else shape[i])

    def describe(self) -> str:
        return f"shape of {self.t.describe()}"


def replay(tape: list, placeholders: list, outputs: tuple, metas: list, name: str,
           numbers: dict | None = None) -> Graph:
    """The graph of `tape` for new placeholder metas and dynamic int values `numbers`
    ({source: int}, `symints`) (raises the op's own error on a mismatch, as eager would)."""
    from . import calls

    g = Graph(name)
    env = {}
    sizes = dict(numbers or {})  # (and {node: shape} as the replay goes: sizes' SymInts)
    for ph, meta in zip(placeholders, metas):
        node = g.placeholder(ph.name, meta)
        env[ph] = TensorVariable(node, meta, False)
        sizes[ph] = meta.shape
    tx = ShadowTx(None, g, sizes)
    for e in tape:
        if type(e) is not TapeEntry:  # `symints.SizeCheck`: raises where Python would
            e.check(env)  # have decided otherwise (the call then runs eagerly)
            continue
        ins = tuple(env[x] if isinstance(x, Node) else x for x in e.inputs)
        if any(isinstance(x, Node) and x not in env for x in e.inputs):
            continue  # an op on a value the graph never saw (dead code of a break)
        tx.out.grad_enabled = e.grad_enabled
        r = calls.record(tx, e.op, ins, dict(e.attrs), False)
        if isinstance(e.result, tuple):
            env.update(zip(e.result, r))
            sizes.update((n, v.meta.shape) for n, v in zip(e.result, r))
        else:
            env[e.result] = r
            sizes[e.result] = r.meta.shape
    g.output(tuple(env[n].node for n in outputs))
    g.eliminate_dead_code()
    return g


class Specializations:
    """The per-shape graphs of one dynamic entry: input shapes -> (graph, compiled).

    Tiered, as a JIT: a key (shapes, dynamic ints) is compiled on its
    `config.dynamic_compile_after`-th call; before that `get` answers None and the call runs
    the op tape on eager tensors (`run_tape`: eager's kernels, no replay, no compile), so a
    KV-cache decode that meets each position once runs at eager speed instead of compiling a
    graph per token, and positions met again (the next generation) run compiled. At most
    `config.dynamic_shape_limit` shapes are compiled (first come; without a bound, memory
    grows with every size ever seen): past it, new shapes run the tape (warned once per
    entry). Thread-safe: a shape is replayed and
    compiled once, under the entry's lock."""

    def __init__(self, tape, graph: Graph, compile_fn, name: str = "", numbers=()):
        self.numbers = tuple(numbers)  # (source, input index) of dynamic ints in the key
        self.tape = tape
        self.graph = graph
        self.placeholders = graph.placeholders
        self.outputs = tuple(graph.output_node.args[0])
        self.compile_fn = compile_fn
        self.name = name or graph.name
        self.by_shape: dict[tuple, tuple] = {}
        self.seen: dict[tuple, int] = {}  # calls of keys not compiled yet (bounded)
        self.lock = threading.Lock()
        self.warned = False

    def add(self, shapes: tuple, graph: Graph, compiled) -> None:
        self.by_shape[shapes] = (graph, compiled)

    def key(self, inputs) -> tuple:
        """The key of input tensors: their shapes, and the dynamic ints' values."""
        shapes = tuple(t._data.shape for t in inputs)
        if not self.numbers:
            return shapes
        return shapes, tuple(int(inputs[i]._data) for _, i in self.numbers)

    def get(self, key: tuple) -> tuple | None:
        """The (graph, compiled) of a `key`; None while the key has had fewer than
        `config.dynamic_compile_after` calls (the caller runs `run_tape`)."""
        hit = self.by_shape.get(key)
        if hit is not None:
            return hit
        with self.lock:
            hit = self.by_shape.get(key)
            if hit is not None:
                return hit
            calls = self.seen.get(key, 0) + 1
            if calls < config.dynamic_compile_after:
                if len(self.seen) >= _SEEN_LIMIT:
                    self.seen.clear()
                self.seen[key] = calls
                return None
            if len(self.by_shape) >= config.dynamic_shape_limit:
                if not self.warned:  # (past the bound, every new key runs the tape)
                    self.warned = True
                    msg = (f"capture: the dynamic entry of {self.name} reached "
                           f"config.dynamic_shape_limit ({config.dynamic_shape_limit} "
                           "shapes); new shapes run eagerly")
                    logs.log("recompiles", msg)
                    warnings.warn(msg, stacklevel=3)
                return None
            self.seen.pop(key, None)
            shapes, numbers = self._split(key)
            metas = [TensorMeta(s, ph.val.dtype, ph.val.device)
                     for s, ph in zip(shapes, self.placeholders)]
            g = replay(self.tape, self.placeholders, self.outputs, metas, self.graph.name,
                       numbers)
            hit = self.by_shape[key] = (g, self.compile_fn(g))
        return hit

    def _split(self, key: tuple) -> tuple:
        """(input shapes, {source: int} of the dynamic ints) of a key."""
        if not self.numbers:
            return key, {}
        shapes, values = key
        return shapes, {src: v for (src, _), v in zip(self.numbers, values)}

    def run_tape(self, key: tuple, inputs) -> tuple:
        """The entry's outputs for eager `inputs` (of `key`) by running the op tape through
        `eager.dispatch.apply`, each op under its captured grad mode, its dynamic ints
        evaluated for the key (`replay`'s semantics without building a graph: values are
        eager's, autograd records as for `backends.run_with_autograd`). A size comparison
        the capture took that does not hold here raises, and the call runs the frame
        eagerly."""
        from eager import dispatch, grad_mode  # lazy: eager's op path, as backends'

        from . import symints as sym  # lazy: symints imports this module

        numbers = dict(self._split(key)[1])  # (and {node: shape}: sizes' SymInts)
        env = dict(zip(self.placeholders, inputs))
        numbers.update((n, t.shape) for n, t in env.items())
        for e in self.tape:
            if type(e) is not TapeEntry:  # `symints.SizeCheck` on the tensors' shapes
                e.check(env, lambda t: t.shape)
                continue
            if any(isinstance(x, Node) and x not in env for x in e.inputs):
                continue  # an op on a value the graph never saw (dead code of a break)
            args = tuple(env[x] if isinstance(x, Node) else x for x in e.inputs)
            attrs = {k: sym.resolve(v, numbers) for k, v in e.attrs.items()}
            with grad_mode.set_grad_enabled(e.grad_enabled):
                r = dispatch.apply(e.op, args, attrs)
            if isinstance(e.result, tuple):
                env.update(zip(e.result, r))
                numbers.update((n, t.shape) for n, t in zip(e.result, r))
            else:
                env[e.result] = r
                numbers[e.result] = r.shape
        return tuple(env[n] for n in self.outputs)


_SEEN_LIMIT = 4096  # keys counted before compiling (cleared when full: counts restart)


def make_specializations(out, graph: Graph, compiled, compile_fn, name: str):
    """The `Specializations` of a dynamic entry (dynamic dims, or dynamic ints in op
    attributes: `symints`), holding the captured graph under its key."""
    keys = getattr(out, "sym_keys", {})
    numbers = [(src, out.input_sources.index(expr)) for src, expr in keys.items()]
    specs = Specializations(out.tape, graph, compile_fn, name, numbers)
    key = tuple(out.tensor_shapes[s] for s in out.input_sources)
    if numbers:
        key = key, tuple(out.sym_params[src].number for src, _ in numbers)
    specs.add(key, graph, compiled)
    return specs


# ---------------------------------------------------------------- dynamic Python numbers

_NUMBER_OPS = {"add", "sub", "mul", "truediv", "lt", "le", "gt", "ge", "eq", "ne"}


def _to_tensor_int(v):
    return Tensor._make(np.asarray(v, dtype=np.int64))


def _to_tensor_float(v):
    return Tensor._make(np.asarray(v, dtype=np.float64))


class SymNumberVariable(ConstantVariable):
    """An int or float argument marked dynamic (its value guard failed once): its type is
    known, its value is not. Used as an operand of `+ - * /` or a comparison with a tensor of
    a dtype it does not promote (float tensors; int tensors for an int), it becomes a 0-d graph
    input (int64/float64, fetched from the argument on every call) cast to that tensor's dtype:
    eager's own arithmetic with a Python scalar. Any other use reads `.value` (a shape, an
    index, a branch, Python arithmetic, an op attribute) and raises `Specialize`: the capture
    restarts with the number static and guarded by value (correctness first, torch's
    automatic-dynamic ints without SymInt shapes)."""

    unfolded = True  # (BUILD_TUPLE keeps it an item: `cache[:, pos]`, `(y, pos)`)

    def __init__(self, out, number, source: str | None, roots=None, input=None, expr=None):
        self.out, self.number, self.source = out, number, source
        self.roots = roots or {source}  # the parameters it is computed from
        self.input = input  # its 0-d TensorVariable (a placeholder made on first use)
        # its value from the parameters' (`symints.evaluate`): ("arg", source) for one
        self.expr = expr if expr is not None or source is None else ("arg", source)
        if source is not None and roots is None and out is not None:
            out.__dict__.setdefault("sym_params", {})[source] = self

    @property
    def value(self):
        raise Specialize({(r, "num") for r in self.roots})

    def python_type(self) -> type:
        return type(self.number)

    def describe(self) -> str:
        return f"dynamic {type(self.number).__name__} {self.source}"

    def placeholder(self) -> TensorVariable:
        if self.input is None:
            out, is_int = self.out, type(self.number) is int
            value = (_to_tensor_int if is_int else _to_tensor_float)(self.number)
            conv = out.guards.name_for(_to_tensor_int if is_int else _to_tensor_float,
                                       "___num_int" if is_int else "___num_float")
            expr = f"{conv}({self.source})"
            meta = value.meta
            name = "".join(c if c.isalnum() else "_" for c in self.source).strip("_")
            node = out.graph.placeholder((name or "num") + "_value", meta)
            out.input_sources.append(expr)
            out.tensor_shapes[expr] = ()
            var = TensorVariable(node, meta, False, expr)
            out.by_source[expr] = var
            self.input = var
        return self.input


def number_operands(tx, fwd: str, a, b):
    """`a`, `b` of a binary operator `fwd` (`__add__`, `__rmul__`...), a dynamic number among
    them replaced by its 0-d input cast to the tensor's dtype; `Specialize` where that would
    not be eager's arithmetic."""
    num, other = (a, b) if isinstance(a, SymNumberVariable) else (b, a)
    if not isinstance(num, SymNumberVariable):
        return a, b
    if not isinstance(other, TensorVariable):
        return a, b  # Python arithmetic or a container: reading `.value` specialises
    name = fwd.strip("_")
    name = name[1:] if name not in _NUMBER_OPS and name[:1] in "ri" else name
    dt = other.meta.dtype
    ok = dt.name in ("float16", "float32", "float64") or (
        type(num.number) is int and dt.name.startswith(("int", "uint")))
    if name not in _NUMBER_OPS or not ok:
        raise Specialize({(r, "num") for r in num.roots})
    from . import calls

    t = calls._cast(tx, num.placeholder(), dt)
    return (t, b) if num is a else (a, t)


_PY_ARITH = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
             "truediv": lambda a, b: a / b}


def number_binary(tx, name: str, a, b):
    """`a <name> b` (add, sub, mul, truediv) where one is a dynamic number and the other a
    dynamic number or an int/float constant: a new dynamic number computed in the graph
    (int64 for ints, float64 for floats: Python's arithmetic for ints within the guarded
    range). None when this does not apply (the caller's path then reads `.value`). A division
    only by a nonzero constant (Python raises ZeroDivisionError where the graph gives inf)."""
    sa, sb = isinstance(a, SymNumberVariable), isinstance(b, SymNumberVariable)
    if not (sa or sb) or name not in _PY_ARITH:
        return None

    def known(v):
        return isinstance(v, SymNumberVariable) or (
            type(v) is ConstantVariable and type(v.value) in (int, float))

    if not (known(a) and known(b)):
        return None
    na = a.number if sa else a.value
    nb = b.number if sb else b.value
    if name == "truediv" and (sb or nb == 0):
        return None
    number = _PY_ARITH[name](na, nb)
    from ir import dtypes as D

    from . import calls

    want = D.float64 if type(number) is float else D.int64

    def operand(v, n):
        if isinstance(v, SymNumberVariable):
            return calls._cast(tx, v.placeholder(), want)
        return ConstantVariable(float(n) if want is D.float64 else n)

    ta, tb = operand(a, na), operand(b, nb)
    if not isinstance(ta, TensorVariable):  # constant first: the reflected operator
        r = calls._dunder(tx, f"__r{name}__", f"__{name}__", tb, ta, name)
    else:
        r = calls._dunder(tx, f"__{name}__", f"__r{name}__", ta, tb, name)
    if r.meta.dtype is not want or r.meta.shape != ():
        raise Specialize({(x, "num") for v in (a, b) if isinstance(v, SymNumberVariable)
                          for x in v.roots})
    roots = set().union(*(v.roots for v in (a, b) if isinstance(v, SymNumberVariable)))
    expr = symints().binary_expr(name, a, b) if type(number) is int else None
    return SymNumberVariable(tx.out, number, None, roots, r, expr)


_COMPARE = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b,
            ">=": lambda a, b: a >= b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def number_compare(tx, symbol: str, a, b):
    """`step < warmup`, `pos == 0`: a dynamic number argument (read directly from its source)
    compared with an int/float constant or another such argument: a constant bool, guarded on
    the comparison (not the value), as Dynamo guards a SymInt branch. None: does not apply."""
    def side(v):
        if isinstance(v, SymNumberVariable):
            return (v.number, v.source) if v.source is not None else None
        if type(v) is ConstantVariable and type(v.value) in (int, float) and \
                abs(v.value) != float("inf") and v.value == v.value:
            return v.value, repr(v.value)
        return None

    same = symints().size_compare(tx, symbol, a, b)  # `k.shape[-2] != v.shape[-2]`
    if same is not None:
        return same
    if symbol not in _COMPARE or not any(isinstance(v, SymNumberVariable) for v in (a, b)):
        return None
    sa, sb = side(a), side(b)
    if sa is None or sb is None:
        return None
    result = _COMPARE[symbol](sa[0], sb[0])
    term = f"({sa[1]} {symbol} {sb[1]})"
    tx.out.guards.add(term if result else f"not {term}")
    return ConstantVariable(result)


MATH_OPS = {"cos": "cos", "sin": "sin", "tan": "tan", "exp": "exp", "log": "log",
            "sqrt": "sqrt", "tanh": "tanh", "log1p": "log1p", "expm1": "expm1"}


def number_math(tx, fn, args, kwargs):
    """`math.cos(math.pi * progress)` of a dynamic float/int: a new dynamic float computed in
    the graph (the registry op on its 0-d float64 input; the float64 rounding equals the math
    module's for these functions up to one ulp). None: does not apply (a domain error, say,
    leaves the call to Python by specialising)."""
    import math

    name = getattr(fn, "__name__", "")
    if kwargs or len(args) != 1 or not isinstance(args[0], SymNumberVariable) or \
            getattr(math, name, None) is not fn or name not in MATH_OPS:
        return None
    num = args[0]
    try:
        number = fn(num.number)
    except (ValueError, OverflowError):
        raise Specialize({(r, "num") for r in num.roots}) from None
    from ir import dtypes as D

    from . import calls, vocabulary

    t = calls._cast(tx, num.placeholder(), D.float64)
    r = vocabulary._record(tx, MATH_OPS[name], [t], {})
    return SymNumberVariable(tx.out, number, None, set(num.roots), r)
