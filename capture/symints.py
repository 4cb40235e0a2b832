"""Dynamic ints inside op attributes: a KV-cache position as a slice bound, a narrow length, a
factory argument, without one cache entry per value; and dynamic *sizes* read in Python
(`SymSizeVariable`: `B, T, C = x.size()` then `q.view(B, T, nh, C // nh)`, `x.view(x.size(0),
-1)`, `x.new_zeros(len(x), d)`, `return out, out.shape[0]`) as `SymInt`s over the tape's
tensors' shapes (("size", node, dim)), evaluated per concrete shape (one dynamic entry for
every batch size, as torch.compile's SymInt sizes).

An automatic-dynamic int argument (`dynamic.SymNumberVariable`: `pos` in `model(tok, pos)`
after its second value) used where an op takes a Python int -- `cache[:, :, pos:pos + T] = k`,
`cache[:, :, :pos + T]`, `freqs[pos:pos + T]`, `torch.narrow(cache, 2, 0, pos + T)`,
`torch.arange(pos, pos + T)` -- becomes a `SymInt`: the concrete value at capture plus the
expression that computes it from the int arguments (`("add", ("arg", "L['pos']"), ("const",
1))`). The op is recorded with the concrete value (canonical attributes, metas and the graph
as for a constant), and the op tape of `dynamic.py` keeps the `SymInt`, so a dynamic entry
replays the tape for other values: each argument a `SymInt` depends on is a 0-d graph input
whose value joins the input shapes in the key of the entry's `Specializations` (one graph per
value, compiled on first use, as per shape: the backend's kernels take no symbolic sizes). A
factory (`arange(pos, pos + T)`) is a graph input made on every call from the arguments'
expression, its shape part of the key. One cache entry serves every position, as
torch.compile's SymInt does with two entries (static first, dynamic from the second value).

Soundness: a `SymInt` refuses every other use (arithmetic, comparison, `int()`, `__index__`,
hashing) by raising `Specialize` for the arguments it depends on, and a `SymSliceVariable`'s
`.value` does too, so Python that reads the value recaptures with the argument static and
guarded by value (the old behaviour). Shapes that depend on a position carry a shadow computed
with every dynamic int one less (`ShadowTx.sym_env`); a Python read of such a size
specialises (`dynamic.check_read`). Python's slice semantics (empty, clamped, negative bounds)
are the op's own, on the concrete value, at capture and at every replay. Touches `capture`.
"""

from __future__ import annotations

import operator

from .dynamic import Specialize, SymNumberVariable
from .variables import ConstantVariable

ATTR_OPS = ("narrow",)  # ops whose int attributes may be `SymInt`s (no prebind reads them)
_ARITH = {"add": (operator.add, "+"), "sub": (operator.sub, "-"), "mul": (operator.mul, "*"),
          "floordiv": (operator.floordiv, "//")}


def evaluate(expr, env: dict):
    """The int of `expr` for the argument values `env` ({source: int}; for a size
    ("size", node, d), {node: shape} of the tensors of the capture's graph)."""
    kind = expr[0]
    if kind == "arg":
        return env[expr[1]]
    if kind == "const":
        return expr[1]
    if kind == "size":
        return int(env[expr[1]][expr[2]])
    return _ARITH[kind][0](evaluate(expr[1], env), evaluate(expr[2], env))


def source_of(expr) -> str:
    """`expr` as a Python expression over the arguments' sources (for a fetched input)."""
    kind = expr[0]
    if kind == "arg":
        return expr[1]
    if kind == "const":
        return repr(expr[1])
    if kind == "size":  # (a graph input's: its source; else no source: `has_source`)
        return expr[3] if len(expr) > 3 else f"{expr[1].name}.size({expr[2]})"
    return f"({source_of(expr[1])} {_ARITH[kind][1]} {source_of(expr[2])})"


def binary_expr(name: str, a, b):
    """The expression of `a <name> b` (trackers: dynamic numbers or int constants); None when
    it is not int arithmetic an expression models."""
    if name not in _ARITH:
        return None

    def one(v):
        if isinstance(v, SymNumberVariable):
            return v.expr if type(v.number) is int else None
        if type(v) is ConstantVariable and type(v.value) is int:
            return ("const", v.value)
        return None

    ea, eb = one(a), one(b)
    return None if ea is None or eb is None else (name, ea, eb)


class SymInt:
    """A dynamic int in an op attribute: `number` at capture, `expr` over the arguments
    `roots`. Any use as a Python int raises `Specialize` (see the module docstring)."""

    __slots__ = ("number", "expr", "roots", "dims")

    def __init__(self, number: int, expr, roots, dims=None):
        self.number, self.expr, self.roots = number, expr, frozenset(roots)
        self.dims = dims  # a size's: the dynamic dims (`Specialize` keys) it depends on

    def __repr__(self) -> str:
        return f"SymInt({self.number}: {source_of(self.expr)})"

    def _refuse(self, *args):
        if self.dims is not None:
            raise Specialize(set(self.dims) | {(r, "num") for r in self.roots} or None)
        raise Specialize({(r, "num") for r in self.roots})

    __index__ = __int__ = __float__ = __bool__ = __hash__ = __format__ = _refuse
    __eq__ = __ne__ = __lt__ = __le__ = __gt__ = __ge__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _refuse
    __floordiv__ = __rfloordiv__ = __truediv__ = __rtruediv__ = __mod__ = __rmod__ = _refuse
    __neg__ = __pos__ = __abs__ = __pow__ = __rpow__ = __round__ = __trunc__ = _refuse
    __and__ = __rand__ = __or__ = __ror__ = __xor__ = __rxor__ = __invert__ = _refuse
    __lshift__ = __rlshift__ = __rshift__ = __rrshift__ = __divmod__ = _refuse


def to_symint(tx, v, key: bool = True) -> SymInt | None:
    """The `SymInt` of a dynamic int tracker (`key`: its arguments become 0-d graph inputs
    keying the entry's specialisations); None for anything else."""
    if not isinstance(v, SymNumberVariable) or type(v.number) is not int or v.expr is None:
        return None
    params = getattr(tx.out, "sym_params", {})
    if not all(r in params for r in v.roots):
        return None
    s = SymInt(v.number, v.expr, v.roots)
    if key:
        keyed(tx, s)
    return s


def keyed(tx, s: SymInt) -> None:
    """Make the arguments of `s` part of the entry's specialisation key."""
    out = tx.out
    keys = out.__dict__.setdefault("sym_keys", {})
    for r in s.roots:
        keys[r] = out.sym_params[r].placeholder().source


def _has(x) -> bool:
    t = type(x)
    if t is SymInt:
        return True
    if t is slice:
        return type(x.start) is SymInt or type(x.stop) is SymInt or type(x.step) is SymInt
    if t in (tuple, list):
        return any(_has(i) for i in x)
    return False


def has_sym(attrs: dict) -> bool:
    return any(_has(v) for v in attrs.values())


def _resolve(x, env):
    t = type(x)
    if t is SymInt:
        return x.number if env is None else evaluate(x.expr, env)
    if t is slice and _has(x):
        return slice(_resolve(x.start, env), _resolve(x.stop, env), _resolve(x.step, env))
    if t in (tuple, list) and _has(x):
        return t(_resolve(i, env) for i in x)
    return x


def resolve_attrs(tx, attrs: dict) -> dict:
    """`attrs` with every `SymInt` replaced by its int for `tx` (the capture's value, a
    shadow's perturbed one, a replay's)."""
    if not has_sym(attrs):
        return attrs
    env = getattr(tx, "sym_env", None)
    return {k: _resolve(v, env) for k, v in attrs.items()}


def resolve(x, env):
    return _resolve(x, env)


class SymSliceVariable(ConstantVariable):
    """`pos:pos + T` with a dynamic int bound: a slice of `SymInt`s (`sym`) that tensor
    subscripts take as it is; any other use reads `.value` and specialises."""

    symbolic = True
    unfolded = True  # (BUILD_TUPLE keeps it an item: `cache[:, :, pos:pos + T]`)

    def __init__(self, sym: slice):
        self.sym, self.source = sym, None

    @property
    def value(self):
        raise Specialize({(r, "num") for b in (self.sym.start, self.sym.stop, self.sym.step)
                          if type(b) is SymInt for r in b.roots})

    def python_type(self) -> type:
        return slice

    def describe(self) -> str:
        return f"slice {self.sym!r}"


def make_slice(tx, parts: list):
    """The tracker of `slice(*parts)` when a bound is a dynamic int or a dynamic size of graph
    inputs (`x[:, :T - 1]`) and the others are ints or None; None otherwise (the caller's path
    reads the values)."""
    if not any(isinstance(v, SymNumberVariable) or type(v) is SymSizeVariable
               for v in parts[:2]):
        return None
    if len(parts) == 3 and not (type(parts[2]) is ConstantVariable and
                                parts[2].value in (None, 1)):
        return None  # (a step: lengths are ceil divisions; kept static)
    for v in parts:
        if isinstance(v, SymNumberVariable):
            if type(v.number) is not int or v.expr is None:
                return None
        elif type(v) is SymSizeVariable:
            if v.expr is None or not has_source(v.expr):
                return None
        elif not (type(v) is ConstantVariable and (v.value is None or type(v.value) is int)):
            return None
    syms = [to_symint(tx, v) if isinstance(v, SymNumberVariable) else v.symint()
            if type(v) is SymSizeVariable else v.value for v in parts]
    if any(s is None for s, v in zip(syms, parts) if isinstance(v, SymNumberVariable)):
        return None
    return SymSliceVariable(slice(*syms))


def attr(tx, v, as_constant):
    """An op attribute argument: a `SymInt` for a dynamic int or a dynamic size (also inside
    a tuple or list: `view(B, T, nh, C // nh)`), else `as_constant(tx, v)`."""
    if type(v) is SymSizeVariable:
        return v.symint()
    s = to_symint(tx, v) if isinstance(v, SymNumberVariable) else None
    if s is not None:
        return s
    items = v if type(v) in (tuple, list) else getattr(v, "items", None) \
        if type(v).__name__ in ("TupleVariable", "ListVariable") else None
    if items is not None and any(type(i) is SymSizeVariable for i in items):
        kind = list if type(v) is list or type(v).__name__ == "ListVariable" else tuple
        return kind(attr(tx, i, as_constant) for i in items)
    return as_constant(tx, v)


def has_source(expr) -> bool:
    """Whether `source_of(expr)` is Python over the frame's inputs (sizes of graph inputs)."""
    if expr[0] == "size":
        return len(expr) > 3
    return expr[0] in ("arg", "const") or has_source(expr[1]) and has_source(expr[2])


_SIZE_FACTORIES = ("zeros", "ones", "empty", "arange")


def _size_factory(tx, fn, args: list, kwargs: dict, const):
    """`zeros(n, d)`, `ones((B, T))`, `empty(n)`, `arange(n)` with dynamic sizes of graph
    inputs (`n = x.size(0)`): the arguments as `SymInt`s over the inputs' shapes (the factory
    input is made from them on every call); None when this does not apply."""
    if len(args) == 1 and type(args[0]).__name__ in ("TupleVariable", "ListVariable") and \
            fn.__name__ != "arange":
        args = list(args[0].items)
    if fn.__name__ not in _SIZE_FACTORIES or not args or \
            not any(type(v) is SymSizeVariable for v in args) or \
            fn.__name__ == "arange" and len(args) != 1:
        return None
    cargs = [v.symint() if type(v) is SymSizeVariable else const(v) for v in args]
    if any(type(a) is SymInt and not has_source(a.expr) or
           type(a) not in (SymInt, int) for a in cargs):
        return None
    return cargs, {k: const(v) for k, v in kwargs.items()}


def factory_args(tx, fn, args: list, kwargs: dict, const):
    """The arguments of `arange(start, end)` (step 1) with dynamic ints as `SymInt`s and the
    rest through `const`, guarded on whether the range is empty; None when this does not
    apply (other factories, a step, float arguments: the value is read and specialises).
    Dynamic sizes of inputs in `zeros/ones/empty/arange`: `_size_factory`."""
    if not any(isinstance(v, SymNumberVariable) for v in (*args, *kwargs.values())):
        return _size_factory(tx, fn, args, kwargs, const)
    if fn.__name__ != "arange" or not 1 <= len(args) <= 2 or \
            set(kwargs) - {"dtype", "device", "requires_grad", "layout", "pin_memory"}:
        return None
    if not all(isinstance(v, SymNumberVariable) and type(v.number) is int or
               type(v) is ConstantVariable and type(v.value) is int for v in args):
        return None

    def one(v):
        s = to_symint(tx, v, key=False) if isinstance(v, SymNumberVariable) else None
        return s if s is not None else const(v)

    cargs, ckw = [one(a) for a in args], {k: one(v) for k, v in kwargs.items()}
    if any(type(a) is not SymInt and type(a) is not int for a in cargs):
        return None
    start, end = (0, cargs[0]) if len(cargs) == 1 else cargs
    src = [source_of(e.expr) if type(e) is SymInt else repr(e) for e in (start, end)]
    term = f"({src[1]} <= {src[0]})"
    empty = resolve(end, None) <= resolve(start, None)
    tx.out.guards.add(term if empty else f"not {term}")
    return cargs, ckw


def factory_input(tx, fn, cargs: list, ckw: dict, var) -> None:
    """`var` is the input that `fn(*cargs, **ckw)` makes on every call, with dynamic ints in
    its arguments: its values are no constants of the code, and a shape that depends on them
    makes the entry dynamic, keyed by that shape (the argument too), with a shadow."""
    syms = [a for a in (*cargs, *ckw.values()) if type(a) is SymInt]
    if not syms:
        return
    var.constant_value = None
    env = {r: tx.out.sym_params[r].number - 1 for s in syms for r in s.roots}
    env.update(getattr(tx.out, "sym_shadow", {}))  # (sizes: the shadows' shapes)
    try:
        shifted = fn(*resolve(cargs, env), **{k: resolve(v, env) for k, v in ckw.items()})
    except Exception:  # noqa: BLE001 - the perturbed call fails: keep the number static
        raise Specialize({(r, "num") for s in syms for r in s.roots}) from None
    if tuple(shifted.shape) == tuple(var.meta.shape):
        return
    for s in syms:
        keyed(tx, s)
    from .variables import TensorVariable

    meta = shifted.meta
    var.shadow = TensorVariable(tx.out.shadow_tx.out.graph.placeholder(var.node.name, meta),
                                meta, False)


def _bound(e, n: int, default: str, ns: str | None = None):
    """(guard term, expression of the clamped index) of a slice bound `e` on a dim of size
    `n` (`ns`: its source, when the size is dynamic): the regime that Python's slice
    semantics pick for its value (below -n, negative, in range, past the end), so that within
    it the index is affine in the arguments."""
    nn = str(n) if ns is None else ns
    if e is None:
        return None, default
    if type(e) is not SymInt:  # (on a dynamic dim: 0 <= e <= 2 <= n, `guard_basic`)
        return None, str(e if ns is not None else slice(e, e).indices(n)[0])
    src, v = source_of(e.expr), e.number
    if v < -n:
        return f"({src} < -{nn})", "0"
    if v < 0:
        return f"(-{nn} <= {src} < 0)", f"({src} + {nn})"
    if v <= n:
        return f"(0 <= {src} <= {nn})", src
    return f"({src} > {nn})", nn


def guard_basic(tx, x, basic) -> None:
    """Guards for the `SymInt` slices of a subscript of `x` (`parse_key`'s basic entries):
    each bound stays in the regime it has now and the slice stays empty or not, so that the
    shapes the capture saw change only as the shadow (one less) shows. A dim whose size is
    itself dynamic specialises the ints."""
    if not any(_has(b) for b in basic):
        return
    g, d = tx.out.guards, 0
    for b in basic:
        if b is None:
            continue
        if type(b) is slice and _has(b):
            roots = {r for e in (b.start, b.stop) if type(e) is SymInt for r in e.roots}
            sh, n, ns = x.shadow, x.meta.shape[d], None
            if sh is not None and sh.meta.shape[d] != n:  # (a dynamic dim: its source)
                ns = f"{x.source}.shape[{d}]" if x.node.op == "placeholder" and \
                    x.source in tx.out.input_sources else None
                if roots or ns is None or any(type(e) is int and not 0 <= e <= 2
                                              for e in (b.start, b.stop)):
                    raise Specialize({(r, "num") for r in roots} | {
                        k for e in (b.start, b.stop) if type(e) is SymInt
                        for k in (e.dims or ())} or None)
            ta, a = _bound(b.start, n, "0", ns)
            tb, z = _bound(b.stop, n, str(n) if ns is None else ns, ns)
            for t in (ta, tb):
                if t is not None:
                    g.add(t)
            lo, hi = slice(resolve(b.start, None), resolve(b.stop, None)).indices(n)[:2]
            empty = f"({z} <= {a})"
            g.add(empty if hi <= lo else f"not {empty}")
        d += 1


def int_mark(tx, v):
    """`x[pos]` of a dynamic int: a marker slice `slice(SymInt, None)` that `int_indices`
    turns into `pos:pos + 1` and a squeeze; None for anything else."""
    s = to_symint(tx, v, key=False) if isinstance(v, SymNumberVariable) else None
    return None if s is None else slice(s, None)


def _shift(s: SymInt, k: int) -> SymInt:
    return SymInt(s.number + k, ("add", s.expr, ("const", k)), s.roots)


def int_indices(tx, x, basic: list, marks: list) -> tuple[list, list]:
    """`parse_key`'s basic entries with each `int_mark` replaced by the one-element slice it
    stands for (guarded in range: `0 <= pos < n` or `-n <= pos < 0`; out of range, the value
    specialises and eager's IndexError follows), and the output dims to squeeze."""
    out, squeeze, d, od = [], [], 0, 0
    for b in basic:
        if b is None:
            out.append(b)
            od += 1
            continue
        if any(b is m for m in marks):
            s, n = b.start, x.meta.shape[d]
            sh = x.shadow
            if sh is not None and sh.meta.shape[d] != n or not -n <= s.number < n:
                raise Specialize({(r, "num") for r in s.roots})
            src = source_of(s.expr)
            tx.out.guards.add(f"(0 <= {src} < {n})" if s.number >= 0 else
                              f"({-n} <= {src} < 0)")
            lo = s if s.number >= 0 else _shift(s, n)
            keyed(tx, lo)
            b = slice(lo, _shift(lo, 1))
            squeeze.append(od)
        out.append(b)
        od += type(b) is slice
        d += 1
    return out, squeeze


def unsqueezed(F, val, basic: list, squeeze: list):
    """`val` stored into `x[..., pos, ...]` taken as `pos:pos + 1`: left-padded to the view's
    rank without the int dims, then unsqueezed at them (eager broadcasts it to that view)."""
    rank = sum(1 for b in basic if b is None or type(b) is slice) - len(squeeze)
    ndim = len(val.meta.shape)
    if ndim > rank:
        raise Specialize({r for b in basic if type(b) is slice and type(b.start) is SymInt
                          for r in ((x, "num") for x in b.start.roots)})
    for _ in range(rank - ndim):
        val = F.unsqueeze(val, 0)
    for d in squeeze:
        val = F.unsqueeze(val, d)
    return val


class SymSizeVariable(ConstantVariable):
    """A size that depends on a dynamic int or dim (its shadow differs): `t.shape[d]` (`t`,
    `d`; `expr` ("size", node, d) when `t`'s node is replayed by the tape) or int arithmetic
    of such sizes and int constants (`size_binary`: `B * T`, `C // nh`; `t` None). An op
    attribute (`view(B, T, -1)`, `new_zeros(n, d)`) takes it as a `SymInt` evaluated per
    concrete shape (`attr`); compared for equality with another size it is checked again at
    every specialisation (`SizeCheck`); any other use reads `.value` and specialises."""

    unfolded = True

    def __init__(self, tx, t, d: int, expr=None, number=0, shadow=0, dims=()):
        self.tx, self.t, self.d, self.source = tx, t, d, None
        self.expr, self.number, self.shadow, self.dims = expr, number, shadow, frozenset(dims)
        if t is not None:
            self.number, self.shadow = t.meta.shape[d], t.shadow.meta.shape[d]
            if _on_tape(tx, t.node):
                self.expr = ("size", t.node, d)
                if t.node.op == "placeholder" and t.source in tx.out.input_sources:
                    self.expr += (f"{t.source}.shape[{d}]",)  # (`source_of`: factories)
                tx.out.__dict__.setdefault("sym_shadow", {})[t.node] = t.shadow.meta.shape
            out = tx.out
            self.dims = frozenset(k for k, v in getattr(out, "dynamic_inputs", {}).items()
                                  if v == self.number)

    @property
    def value(self):
        from .dynamic import check_read

        if self.t is not None:
            check_read(self.tx, self.t, (self.d,))
            return self.number  # (not reached: the size differs in the shadow)
        raise Specialize(set(self.dims) or None)

    def symint(self) -> SymInt:
        """The `SymInt` of this size in an op attribute (`.value` where the tape cannot
        replay it: specialises)."""
        if self.expr is None:
            return self.value
        return SymInt(self.number, self.expr, (), self.dims)

    def python_type(self) -> type:
        return int

    def describe(self) -> str:
        if self.t is None:
            return f"size {source_of(self.expr)}"
        return f"size {self.d} of {self.t.describe()}"


def _on_tape(tx, node) -> bool:
    """Whether a replay of the tape knows `node`'s shape (a placeholder or a tape result)."""
    if node.op == "placeholder":
        return True
    for e in reversed(tx.out.tape):
        r = getattr(e, "result", None)
        if r is node or type(r) is tuple and any(x is node for x in r):
            return True
    return False


def size_binary(tx, name: str, a, b):
    """`a <name> b` (add, sub, mul, floordiv) of dynamic sizes and int constants: a new
    `SymSizeVariable`; None when this does not apply. A result whose shadow equals its value
    (`n - n`, `n // 100`) cannot be told dynamic downstream: it specialises."""
    if name not in _ARITH or not (type(a) is SymSizeVariable or type(b) is SymSizeVariable):
        return None

    def one(v):
        if type(v) is SymSizeVariable:
            return (v.expr, v.number, v.shadow, v.dims) if v.expr is not None else None
        if type(v) is ConstantVariable and type(v.value) is int:
            return ("const", v.value), v.value, v.value, frozenset()
        return None

    pa, pb = one(a), one(b)
    if pa is None or pb is None or name == "floordiv" and (pb[1] == 0 or pb[2] == 0):
        return None
    f = _ARITH[name][0]
    number, shadow, dims = f(pa[1], pb[1]), f(pa[2], pb[2]), pa[3] | pb[3]
    if number == shadow:
        raise Specialize(set(dims) or None)
    out = SymSizeVariable(tx, None, 0, (name, pa[0], pb[0]), number, shadow, dims)
    out.parts = (name, a, b)
    return out


def size_template(templater, v) -> tuple:
    """How a returned or stored dynamic size is rebuilt on every call: from the run's own
    tensors' shapes (`templates.rebuild`'s "sizeof"/"sizeop"), never the capture's value."""
    if type(v) is not SymSizeVariable:
        return templater.t(v)
    if v.t is not None:
        return ("sizeof", templater.t(v.t), v.d)
    name, a, b = v.parts
    return ("sizeop", name, size_template(templater, a), size_template(templater, b))


def rebuild_size(t: tuple, r) -> int:
    """The int of a `size_template` for one call (`r` rebuilds a sub-template)."""
    if t[0] == "sizeof":
        return r(t[1]).shape[t[2]]
    if t[0] == "sizeop":
        return _ARITH[t[1]][0](rebuild_size(t[2], r), rebuild_size(t[3], r))
    return r(t)


def own_shape(tx, t) -> tuple:
    """`t`'s shape as a `reshape` attribute, its dynamic sizes as `SymInt`s (replayed per
    concrete shape: `x.contiguous()`, `x.detach()` of a dynamic tensor)."""
    shape = tuple(t.meta.shape)
    if t.shadow is None:
        return shape
    syms = [size_item(tx, t, d) for d in range(len(shape))]
    return tuple(n if s is None else s.symint() for s, n in zip(syms, shape))


def size_item(tx, t, d: int):
    """The tracker of `t.shape[d]` when that size is dynamic, else None."""
    sh = t.shadow
    if sh is None or sh.meta.shape[d] == t.meta.shape[d] or \
            getattr(tx.out, "tape", None) is None:
        return None
    return SymSizeVariable(tx, t, d)


class SizeCheck:
    """A tape entry: sizes `a` and `b` ((node, dim)) were equal (`equal`) when Python
    compared them at capture; a replay where they are not raises, and the call runs eagerly
    (the branch Python took would be wrong there)."""

    def __init__(self, a, b, equal: bool):
        self.a, self.b, self.equal = a, b, equal

    def check(self, env: dict, shape=lambda v: v.meta.shape) -> None:
        """Raise unless the comparison holds for `env` ({node: value}; `shape(value)` its
        sizes: a tracker's meta, or an eager tensor's)."""
        def size(side):
            node, d = side
            if node not in env:
                raise RuntimeError("a compared size is not on the tape")
            return shape(env[node])[d]

        if (size(self.a) == size(self.b)) != self.equal:
            raise RuntimeError("a size comparison that the capture took differs here")


def size_compare(tx, symbol: str, a, b):
    """`a == b` / `a != b` of two dynamic sizes: the capture's answer, checked again at every
    specialisation (`SizeCheck`), as torch evaluates `s0 == s0` without a guard. None: not
    this form."""
    if symbol not in ("==", "!=") or type(a) is not SymSizeVariable or \
            type(b) is not SymSizeVariable or a.t is None or b.t is None:
        return None
    equal = a.number == b.number
    tx.out.tape.append(SizeCheck((a.t.node, a.d), (b.t.node, b.d), equal))
    return ConstantVariable(equal == (symbol == "=="))
