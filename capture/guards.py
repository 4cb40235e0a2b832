"""Guards: the conditions under which a captured graph may be reused, as one generated closure.

While the symbolic interpreter runs, every Python value it depends on (a tensor argument's type,
dtype, shape, device and requires_grad; a scalar's type and value; the identity of a module or
function read from the globals; global grad mode) adds one *term* here, written as a Python
expression over the function's own parameter names and a few namespace names (`G` the function's
globals, `B` the builtins, `Tensor`, dtypes, `___cN` for other objects). `GuardSet.build()` joins
the terms into one flat function with the same signature as the user's function, so that checking
a cache entry is a single call (TorchDynamo's guard closures). Off the hot path,
`first_failure()` names the term that failed, for recompile reasons. Imports only `eager`, `ir`.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import math
import re

from eager import Tensor
from eager.amp.policy import state_key as autocast_key
from eager.grad_mode import is_grad_enabled
from ir import dtypes as D

from . import library
from .moduleguards import ModuleReads, cached_arrays, cached_disjoint

_SIMPLE = (bool, int, float, str, type(None), complex)
# numpy's scalar number types (`np.float64(0.05)` read from a schedule array): guarded constants
NUMPY_SCALARS = frozenset(("float16", "float32", "float64", "int8", "int16", "int32", "int64",
                           "uint8", "uint16", "uint32", "uint64", "bool", "bool_"))


def is_literal(value) -> bool:
    """True for values whose repr evaluates back to an equal value (guards print them inline)."""
    if isinstance(value, (tuple, list)) and type(value) in (tuple, list):
        return all(is_literal(v) for v in value)
    if isinstance(value, float) and not math.isfinite(value):
        return False
    if isinstance(value, complex) and not (math.isfinite(value.real) and
                                           math.isfinite(value.imag)):
        return False
    return type(value) in _SIMPLE


def signature_text(code) -> str:
    """The parameter list of a code object, without defaults: `x, y, /, *args, k, **kw` (a
    3.11 comprehension's `.0` as `implicit0`, inspect's name for it)."""
    names = tuple("implicit0" if v == ".0" else v for v in code.co_varnames)
    n, k = code.co_argcount, code.co_kwonlyargcount
    parts = list(names[:n])
    if code.co_posonlyargcount:
        parts.insert(code.co_posonlyargcount, "/")
    i = n + k
    if code.co_flags & inspect.CO_VARARGS:
        parts.append("*" + names[i])
        i += 1
    elif k:
        parts.append("*")
    parts += names[n:n + k]
    if code.co_flags & inspect.CO_VARKEYWORDS:
        parts.append("**" + names[i])
    return ", ".join(parts)


def parameter_names(code) -> set:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return set(code.co_varnames[:n])


def _chain(node) -> list | None:
    """The links of a source expression (`G['m'][0].weight`: Name, then each Attribute or
    Subscript with a constant key), innermost first; None for anything else."""
    links = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Subscript) and not isinstance(node.slice, ast.Constant):
            return None
        links.append(node)
        node = node.value
    if not isinstance(node, ast.Name) or not links:
        return None
    return [node, *reversed(links)]


def _link_texts(links: list) -> list:
    """The source text of each link after the first of a `_chain` (`G['m']`, `G['m'][0]`,
    ...), each built from the one before (`ast.unparse` of every link was quadratic in the
    chain's length: ~70 ms of an LM's first call)."""
    text = links[0].id
    out = []
    for link in links[1:]:
        if isinstance(link, ast.Attribute):
            text = f"{text}.{link.attr}"
        else:
            text = f"{text}[{link.slice.value!r}]"
        out.append(text)
    return out


class _Shared(ast.NodeTransformer):
    """Rewrites expressions evaluated in sequence so that each source prefix read more than
    once (`G['mlp'][0]` behind every guard on one submodule) is computed once: its first
    unconditional read becomes `(___gN := ...)`, later reads `___gN` (Dynamo's guard code
    caches such sub-expressions in the same way). Reads under `and`/`or` operands after the
    first, conditional branches and nested scopes are left alone."""

    def __init__(self, counts: dict):
        self.counts = counts
        self.names: dict[str, str] = {}
        self.conditional = 0

    def visit_BoolOp(self, node):
        node.values[0] = self.visit(node.values[0])
        self.conditional += 1
        node.values[1:] = [self.visit(v) for v in node.values[1:]]
        self.conditional -= 1
        return node

    def visit_IfExp(self, node):
        node.test = self.visit(node.test)
        self.conditional += 1
        node.body, node.orelse = self.visit(node.body), self.visit(node.orelse)
        self.conditional -= 1
        return node

    def _opaque(self, node):
        return node

    visit_Lambda = visit_ListComp = visit_SetComp = visit_DictComp = _opaque
    visit_GeneratorExp = visit_NamedExpr = _opaque

    def _visit_chain(self, node):
        links = _chain(node)
        if links is None:
            return self.generic_visit(node)
        base = links[0]
        for link, text in zip(links[1:], _link_texts(links)):
            link.value = base
            known = self.names.get(text)
            if known is not None:
                base = ast.Name(known, ast.Load())
            elif not self.conditional and self.counts.get(text, 0) > 1:
                name = self.names[text] = f"___g{len(self.names)}"
                base = ast.NamedExpr(ast.Name(name, ast.Store()), link)
            else:
                base = link
        return base

    visit_Attribute = visit_Subscript = _visit_chain


def share_reads(exprs: list) -> tuple[list, dict]:
    """`exprs` (evaluated in order, each only after the previous ones) rewritten to compute
    every source prefix read more than once only once; also the map from a prefix's text to
    the local name holding it (valid after all of `exprs` ran, in the same frame)."""
    trees = [ast.parse(e, mode="eval").body for e in exprs]
    counts: dict = {}
    for t in trees:
        inner: set = set()
        for node in ast.walk(t):  # (outer nodes first: each maximal chain counted once)
            links = None if id(node) in inner else _chain(node)
            if links is not None:
                inner.update(id(link) for link in links)
                for key in _link_texts(links):
                    counts[key] = counts.get(key, 0) + 1
    tx = _Shared(counts)
    return [ast.unparse(tx.visit(t)) for t in trees], tx.names


def read_through(expr: str, names: dict) -> str:
    """`expr` with its longest prefix that `names` holds replaced by that local name."""
    node = ast.parse(expr, mode="eval").body
    links = _chain(node)
    if links is None:
        return expr
    for link, text in reversed([*zip(links[1:], _link_texts(links))]):
        name = names.get(text)
        if name is not None:
            if link is node:
                return name
            parent = next(p for p in links[1:] if p.value is link)
            parent.value = ast.Name(name, ast.Load())
            return ast.unparse(node)
    return expr


def _container_kinds() -> dict:
    """{eager container method: how a guard reads through it}: `ModuleList`/`Sequential`
    items by position (a list of `_modules`' values, built once per check), `ModuleDict`
    items by key (`_modules[key]`); `len` of any of them is `len(_modules)`. Taken when this
    module is imported (a method patched later is not eager's)."""
    from eager.nn.containers import ModuleDict, ModuleList, Sequential

    return {ModuleList.__getitem__: "list", Sequential.__getitem__: "list",
            ModuleDict.__getitem__: "dict", "__len__": (ModuleList.__len__,
                                                        ModuleDict.__len__)}


_CONTAINERS = _container_kinds()


class _ContainerReads(ast.NodeTransformer):
    """Rewrites `g[k]` (constant `k`) and `len(g)` for the shared locals `g` of eager module
    containers (see `_container_reads`)."""

    def __init__(self, lists: dict, dicts: set):
        self.lists, self.dicts = lists, dicts

    def visit_Subscript(self, node):
        node = self.generic_visit(node)
        v = node.value
        if isinstance(v, ast.Name) and isinstance(node.slice, ast.Constant):
            if v.id in self.lists and type(node.slice.value) is int:
                node.value = ast.Name(self.lists[v.id], ast.Load())
            elif v.id in self.dicts:
                node.value = ast.Attribute(v, "_modules", ast.Load())
        return node

    def visit_Call(self, node):
        node = self.generic_visit(node)
        if (isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1
                and isinstance(node.args[0], ast.Name) and not node.keywords):
            name = node.args[0].id
            if name in self.lists:
                node.args[0] = ast.Name(self.lists[name], ast.Load())
            elif name in self.dicts:
                node.args[0] = ast.Attribute(node.args[0], "_modules", ast.Load())
        return node


def _container_reads(terms: list, ns: dict) -> list:
    """`terms` (after `share_reads`) with reads of eager's module containers made cheap:
    after a term `type(g) is C` for a shared local `g` (C a ModuleList, Sequential or
    ModuleDict class whose `__getitem__`/`__len__` are eager's), one term checks that C still
    has those methods and, for a list, binds `g`'s items once (`___lN`); later `g[k]`
    read `___lN[k]` (or `g._modules[k]`) and `len(g)` `len(___lN)` - what the methods
    return, without a Python call each (a Sequential's `m[i]` builds the list every time)."""
    kinds = _CONTAINERS
    lists: dict = {}
    dicts: set = set()
    out = []
    for term in terms:
        if lists or dicts:
            node = _ContainerReads(lists, dicts).visit(ast.parse(term, mode="eval").body)
            term = ast.unparse(node)
        out.append(term)
        m = re.fullmatch(r"type\(\(?(___g\d+)(?: := .*)?\)?\) is (\w+)", term)
        cls = ns.get(m.group(2)) if m else None
        if not isinstance(cls, type):
            continue
        get, length = getattr(cls, "__getitem__", None), getattr(cls, "__len__", None)
        kind = kinds.get(get)
        if kind is None or length not in kinds["__len__"]:
            continue
        g, c = m.group(1), m.group(2)
        fns = f"{c}.__getitem__ is ___cget{c} and {c}.__len__ is ___clen{c}"
        ns[f"___cget{c}"], ns[f"___clen{c}"] = get, length
        if kind == "list":
            lists[g] = f"___l{g[4:]}"
            out.append(f"{fns} and type(({lists[g]} := [*{g}._modules.values()])) is list")
        else:
            dicts.add(g)
            out.append(fns)
    return out


def _number_source(expr: str, roots: set) -> bool:
    """`expr` is a parameter, or an attribute/constant-key chain from a parameter or a name
    of the guard namespace (`G`, a closure cell)."""
    if "._data" in expr:  # a tensor's sizes: automatic dynamic shapes, not numbers
        return False
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return False
    if isinstance(node, ast.Name):
        return node.id in roots
    links = _chain(node)
    return links is not None and links[0].id in roots


class GuardSet:
    """Collects guard terms for one cache entry and builds the guard closure.

    `fn` is the user's function: the closure takes exactly its parameters (defaults copied), so
    a guard is called as `guard(*args, **kwargs)`.
    """

    def __init__(self, fn):
        self.fn = fn
        self.params = signature_text(fn.__code__)
        self._taken = parameter_names(fn.__code__)
        self.ns: dict = {"__builtins__": builtins}
        self._ids: dict[int, str] = {}
        self.terms: dict[str, None] = {}
        self._shared = None  # (number of terms, shared_condition's result)
        self.modules = None  # the `ModuleReads` of the last `shared_condition`
        self.G = self.name_for(fn.__globals__, "G")
        self.B = self.name_for(builtins.__dict__, "B")
        self.Tensor = self.name_for(Tensor, "Tensor")
        for attr in ("__defaults__", "__kwdefaults__"):  # (the closures copy them: see function)
            if getattr(fn, attr, None) is not None:
                self.add(f"{self.name_for(fn, '___fn')}.{attr} is "
                         f"{self.name_for(getattr(fn, attr), '___fn' + attr)}")
        self.add(f"{self.name_for(is_grad_enabled, 'grad_enabled')}() is {is_grad_enabled()}")
        key = autocast_key()  # (the autocast state: capture/autocast.py)
        self.add(f"{self.name_for(autocast_key, 'autocast_key')}() "
                 f"{'is None' if key is None else '== ' + repr(key)}")
        dt = D.get_default_dtype()
        self.add(f"{self.name_for(D.get_default_dtype, 'get_default_dtype')}() is "
                 f"{self.name_for(dt, dt.name)}")

    # ---- namespace

    def name_for(self, obj, preferred: str) -> str:
        """A namespace name bound to `obj` (the same name for the same object)."""
        got = self._ids.get(id(obj))
        if got is not None:
            return got
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in preferred) or "___c"
        name, i = base, 0
        while name in self._taken or name in self.ns or name in ("type", "len", "not"):
            i += 1
            name = f"{base}_{i}"
        self.ns[name] = obj
        self._ids[id(obj)] = name
        return name

    def literal(self, value) -> str:
        """An expression for a constant: its repr when that round-trips, else a namespace name."""
        return repr(value) if is_literal(value) else self.name_for(value, "___c")

    # ---- terms

    def add(self, term: str) -> None:
        self.terms[term] = None

    def tensor(self, src: str, t: Tensor, dynamic_dims=()) -> None:
        """Type, array type (= device), dtype, sizes (dims in `dynamic_dims`: only `>= 2`),
        requires_grad. Reads the array directly: a guard check costs ~0.3 us a tensor."""
        cls, arr = type(t), t._data
        self.add(f"type({src}) is {self.name_for(cls, cls.__name__)}")
        self.add(f"type({src}._data) is {self.name_for(type(arr), type(arr).__name__)}")
        shape = tuple(arr.shape)
        if not dynamic_dims:
            self.add(f"{src}._data.shape == {shape!r}")
        else:
            self.add(f"{src}._data.ndim == {len(shape)}")
            for d, n in enumerate(shape):
                self.add(f"{src}._data.shape[{d}] " + (">= 2" if d in dynamic_dims else
                                                       f"== {n}"))
        self.add(f"{src}._data.dtype is {self.name_for(arr.dtype, 'np_' + str(arr.dtype))}")
        self.add(f"{src}.requires_grad is {bool(t.requires_grad)}")

    def constant(self, src: str, value) -> None:
        if value is None or isinstance(value, bool):
            self.add(f"{src} is {value!r}")
            return
        self.add(f"type({src}) is {self.name_for(type(value), type(value).__name__)}")
        if isinstance(value, float) and math.isnan(value):
            self.add(f"{src} != {src}")
        else:
            self.add(f"{src} == {self.literal(value)}")

    def identity(self, src: str, value, name: str = "___c") -> None:
        self.add(f"{src} is {self.name_for(value, name)}")

    def type_is(self, src: str, value) -> None:
        cls = type(value)
        self.add(f"type({src}) is {self.name_for(cls, cls.__name__)}")

    def length(self, src: str, value) -> None:
        self.type_is(src, value)
        self.add(f"len({src}) == {len(value)}")

    # ---- building

    def _function(self, body: str, name: str):
        return self.function(f"    return {body}\n", name)

    def function(self, body: str, name: str, extra: dict | None = None):
        """A generated function of the user's parameters (defaults copied): `body` is its
        indented source, run with the guard namespace plus `extra`."""
        text = f"def {name}({self.params}):\n{body}"
        ns = dict(self.ns)
        if extra:
            ns.update(extra)
        exec(compile(text, f"<{name} of {self.fn.__qualname__}>", "exec"), ns)  # noqa: S102
        f = ns[name]
        f.__defaults__ = self.fn.__defaults__
        f.__kwdefaults__ = self.fn.__kwdefaults__
        return f

    @property
    def text(self) -> str:
        """The guard closure's source, one term a line."""
        body = "\n        and ".join(self.terms) or "True"
        return f"def guard({self.params}):\n    return ({body})"

    @property
    def condition(self) -> str:
        """The guard closure's expression: every term joined by `and`, each source prefix
        read by several terms computed once (`share_reads`; `shared` names the locals)."""
        return self.shared_condition()[0]

    def shared_condition(self) -> tuple[str, dict]:
        """(`condition`, the map from a source prefix to the local holding it once the
        condition held: `read_through` fetches sources through it, after `source`). Computed
        once for a set of terms (the guard and the hit function of an entry both need it)."""
        if self._shared is not None and self._shared[0] == len(self.terms):
            return self._shared[1]
        terms = library.class_reads(library.group_defaults(list(self.terms), self.ns),
                                    self.ns)
        lib, terms = library.split(terms, self.ns, self._taken)
        self.modules = ModuleReads(self.ns)  # (module attributes from the instance dict)
        terms = cached_disjoint(cached_arrays(self.modules.apply(terms), self.ns), self.ns)
        terms, names = share_reads(terms or ["True"])
        terms = _container_reads(terms, self.ns)
        if lib:  # (eager's own code: one version check, `capture/library.py`)
            terms.insert(0, library.check(lib, self.ns))
        got = "(" + " and ".join(f"({t})" for t in terms) + ")", names
        self._shared = (len(self.terms), got)  # (terms are only ever added)
        return got

    def source(self, src: str) -> str:
        """`src` as the condition reads it (module attributes from the instance dict:
        `moduleguards.py`), for `read_through` after `shared_condition`."""
        return self.modules.source(src) if self.modules is not None else src

    def build(self):
        return self._function(self.condition, "guard")

    def build_fetch(self, sources: list):
        """A function of the user's parameters returning the values at `sources` as a tuple."""
        shared, _ = share_reads(list(sources))
        return self._function("(" + "".join(s + ", " for s in shared) + ")", "fetch")

    def size_failures(self, args: tuple, kwargs: dict) -> list:
        """(source, dim) of every size term that fails for these arguments (automatic
        dynamic shapes recompile with those dimensions symbolic)."""
        import re

        out = []
        for term in self.terms:
            m = re.fullmatch(r"(.+)\._data\.shape == (\(.*\))", term)
            m2 = re.fullmatch(r"(.+)\._data\.shape\[(\d+)\] == (\d+)", term)
            if not (m or m2):
                continue
            src = (m or m2).group(1)
            try:
                shape = tuple(self._function(f"{src}._data.shape", "size")(*args, **kwargs))
            except Exception:  # noqa: S112, BLE001
                continue
            if m:
                want = eval(m.group(2))
                if len(want) == len(shape):
                    out += [(src, d) for d, (a, b) in enumerate(zip(want, shape))
                            if a != b and a > 1 and b > 1]
            else:
                d, want = int(m2.group(2)), int(m2.group(3))
                if d < len(shape) and shape[d] != want and want > 1 and shape[d] > 1:
                    out.append((src, d))
        return out

    def number_failures(self, args: tuple, kwargs: dict) -> list:
        """Sources whose value guard (`k == 3`, `self.steps == 3`, `G['n'] == 3`) fails while
        their type (int or float, not bool) still holds: automatic dynamic numbers recompile
        with them as graph inputs (parameters, and attributes or globals a frame updates)."""
        import re

        out = []
        for term in self.terms:
            m = re.fullmatch(r"([A-Za-z_][\w.\[\]'\"]*) == (.+)", term)
            if not m or not _number_source(m.group(1), self._taken | set(self.ns)):
                continue
            try:
                v = self._function(m.group(1), "value")(*args, **kwargs)
                lit = eval(m.group(2), dict(self.ns))  # (our own literal)
            except Exception:  # noqa: S112, BLE001
                continue
            if type(v) is type(lit) and type(lit) in (int, float) and v != lit:
                out.append(m.group(1))
        return out

    def first_failure(self, args: tuple, kwargs: dict) -> str | None:
        """The first term that is false (or raises) for these arguments; None if all hold.
        When they all hold but a term as the condition checks it fails (a module attribute
        read from the instance dict that now lives on the class: `moduleguards.py`), that
        term."""
        for term in self.terms:
            try:
                ok = self._function(term, "check")(*args, **kwargs)
            except Exception:  # noqa: BLE001
                ok = False
            if not ok:
                return term
        if self.modules is not None:
            for term in self.terms:
                checked = self.modules.source(term)
                if checked == term:
                    continue
                try:
                    ok = self._function(checked, "check")(*args, **kwargs)
                except Exception:  # noqa: BLE001
                    ok = False
                if not ok:
                    return checked
        return None
