"""Cheaper guard terms on module state: attribute reads from the instance dict, parameter arrays
and their disjointness remembered by identity. Each pass maps `GuardSet`'s terms (strings) to
equivalent ones before `guards.share_reads`; `first_failure` and the dynamic-shape analyses
keep reading the original terms.

`ModuleReads`: an attribute read on an `eager.nn.Module` instance (`m.weight`, `m.training`)
cannot use CPython's specialised attribute load: `Module.__getattr__` exists (it only raises),
so every read takes the generic slot path (~40 ns). A transformer's guard checks a few hundred
such reads per call. They become `m.__dict__['weight']` (one shared `__dict__` local per
module, then a dict subscript: ~10 ns) where that is the same value:

- an earlier term fixes the object's type, `type(S) is C`, C an eager `Module` subclass whose
  `__getattribute__` is `object`'s and whose `__getattr__` is `Module`'s (which raises), and
- no class of C's MRO has an attribute of that name (no descriptor, method or class default):
  then normal lookup can only find it in the instance dict, and when it is not there the
  original read raises AttributeError and the rewritten one KeyError (both fail the guard).

`S._wick_has_hooks is False` (the hook flag: a class default that eager sets to True in an
instance dict, and pops, never storing False) becomes `'_wick_has_hooks' not in S.__dict__`
plus one term per class `C._wick_has_hooks is False` (global hooks set it on the base class).
Assumed, as for every class-level read: nobody adds an attribute of such a name to a module
class after capture (Dynamo's guards assume the same of class dicts). Other code generated
from the same guard (`hits.py`'s input fetches) reads its sources through `ModuleReads.source`.

`cached_arrays`: a parameter's or buffer's array checks (type, shape, dtype) become an identity
test against the array that last passed them. `cached_disjoint`: `writeback.disjoint` (mutated
inputs apart from the other inputs) remembers the parameters' and buffers' arrays likewise.
"""

from __future__ import annotations

import ast
import operator
import re
import sys

import numpy as np

_TYPE_IS = re.compile(r"type\((.+)\) is (\w+)")
_HOOKS = re.compile(r"(.+)\._wick_has_hooks is False")


def _module_class(cls) -> bool:
    """`cls` is an eager Module subclass whose attribute lookup is the default one."""
    mod = sys.modules.get("eager.nn.module")
    base = getattr(mod, "Module", None)
    return (isinstance(cls, type) and base is not None and issubclass(cls, base)
            and cls.__getattribute__ is object.__getattribute__
            and getattr(cls, "__getattr__", None) is base.__getattr__)


def _in_classes(cls, name: str) -> bool:
    return any(name in vars(k) for k in cls.__mro__)


def _class_flag(cls) -> bool:
    """`cls._wick_has_hooks` is a plain bool found in a class dict (no descriptor)."""
    for k in cls.__mro__:
        if "_wick_has_hooks" in vars(k):
            return type(vars(k)["_wick_has_hooks"]) is bool
    return False


def _text(node) -> str | None:
    """The canonical text of a source chain (`guards._link_texts`), None for other nodes."""
    from .guards import _chain, _link_texts

    if isinstance(node, ast.Name):
        return node.id
    links = _chain(node)
    return _link_texts(links)[-1] if links is not None else None


class _Rewrite(ast.NodeTransformer):
    """`S.name` -> `S.__dict__['name']` for the module sources S in `classes`."""

    def __init__(self, classes: dict):
        self.classes = classes

    def visit_Attribute(self, node):
        key = _text(node.value)  # (the source as the type terms name it, before rewriting)
        node.value = self.visit(node.value)
        if not isinstance(node.ctx, ast.Load) or node.attr.startswith("__"):
            return node
        cls = self.classes.get(key, (None,))[0]
        if cls is None or _in_classes(cls, node.attr):
            return node
        d = ast.Attribute(node.value, "__dict__", ast.Load())
        return ast.Subscript(d, ast.Constant(node.attr), ast.Load())


class ModuleReads:
    """The rewrite for one guard's terms: `apply(terms)` once, then `source(src)` for any
    other expression over the same sources."""

    def __init__(self, ns: dict):
        self.ns = ns
        self.classes: dict = {}  # canonical source text -> (its class, the class's name)

    def _note_type(self, term: str) -> None:
        m = _TYPE_IS.fullmatch(term)
        if m is None or m.group(1) in self.classes:
            return
        cls = self.ns.get(m.group(2))
        if not _module_class(cls):
            return
        try:
            text = _text(ast.parse(m.group(1), mode="eval").body)
        except SyntaxError:
            return
        if text is not None:
            self.classes.setdefault(text, (cls, m.group(2)))

    def apply(self, terms: list) -> list:
        out: list = []
        seen: set = set()
        for term in terms:
            self._note_type(term)
            m = _HOOKS.fullmatch(term)
            cls = name = None
            if m is not None:
                try:
                    key = _text(ast.parse(m.group(1), mode="eval").body)
                except SyntaxError:
                    key = None
                cls, name = self.classes.get(key, (None, None))
            if cls is not None and _class_flag(cls):
                for t in (f"{name}._wick_has_hooks is False",
                          f"'_wick_has_hooks' not in {self.source(m.group(1))}.__dict__"):
                    if t not in seen:
                        seen.add(t)
                        out.append(t)
                continue
            term = self.source(term)
            if term not in seen:
                seen.add(term)
                out.append(term)
        return out

    def source(self, expr: str) -> str:
        """`expr` with its module attribute reads rewritten (unchanged when there are none)."""
        if not self.classes or "." not in expr:
            return expr
        tree = ast.parse(expr, mode="eval").body
        return ast.unparse(_Rewrite(self.classes).visit(tree))


_ARRAY_TYPE = re.compile(r"type\((.+)\._data\) is (\w+)")


def _attribute_read(src: str) -> bool:
    """`src` reads an object's attribute (`m.__dict__['w']`, `G['m'].w`), not only the
    function's arguments, globals and cells (`x`, `batch['x']`, `G['w']`)."""
    from .guards import _chain

    try:
        links = _chain(ast.parse(src, mode="eval").body)
    except SyntaxError:
        return False
    return links is not None and any(isinstance(k, ast.Attribute) and k.attr != "cell_contents"
                                     for k in links[1:])


def cached_arrays(terms: list, ns: dict) -> list:
    """`terms` with the array checks of each tensor read from an attribute (a parameter, a
    buffer) made an identity test: the three terms `type(S._data) is ndarray`,
    `S._data.shape == (..)`, `S._data.dtype is D` become `S._data is ___arrays[k] or
    ___array_meta(S._data, k, ...)`: the array that last passed them (type, shape and dtype
    of an ndarray object do not change: eager replaces `_data` to resize or convert a tensor,
    it never sets an array's `shape` or `dtype` in place), else the three checks, which
    remember the array when they hold. Arguments' tensors keep the plain terms (a new batch
    is a new array every call). `guards.GuardSet.size_failures` reads the original terms."""
    arrays: list = []
    out: list = []
    i = 0
    while i < len(terms):
        m = _ARRAY_TYPE.fullmatch(terms[i])
        src = m.group(1) if m else None
        if (src is not None and i + 2 < len(terms) and _attribute_read(src)
                and terms[i + 1].startswith(f"{src}._data.shape == (")
                and re.fullmatch(rf"{re.escape(src)}\._data\.dtype is \w+", terms[i + 2])):
            k = len(arrays)
            arrays.append(None)
            shape = terms[i + 1][len(f"{src}._data.shape == "):]
            dtype = terms[i + 2].rsplit(" ", 1)[1]
            out.append(f"({src}._data is ___arrays[{k}] or ___array_meta({src}._data, {k}, "
                       f"{m.group(2)}, {shape}, {dtype}))")
            i += 3
            continue
        out.append(terms[i])
        i += 1
    if arrays:
        ns["___arrays"] = arrays

        def meta(a, k, cls, shape, dtype):
            if type(a) is cls and a.shape == shape and a.dtype is dtype:
                arrays[k] = a
                return True
            return False

        ns["___array_meta"] = meta
    return out


def _disjoint_term(term: str, ns: dict):
    """(mutated indices, source texts) of a `writeback.disjoint` guard term, else None."""
    from .writeback import disjoint

    if "(" not in term or not term.startswith("___"):
        return None
    try:
        node = ast.parse(term, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and ns.get(node.func.id) is disjoint and len(node.args) == 2 and not node.keywords
            and all(isinstance(a, ast.Tuple) for a in node.args)
            and all(isinstance(c, ast.Constant) for c in node.args[0].elts)):
        return None
    return ([c.value for c in node.args[0].elts], [ast.unparse(e) for e in node.args[1].elts])


def _owner(a):
    """The id of the object owning array `a`'s memory, None when that is not an ndarray."""
    b = a.base
    return id(a) if b is None else id(b) if type(b) is np.ndarray else None


def memo_disjoint(mutated: list, stable: list):
    """`writeback.disjoint(mutated, tensors)` remembering the arrays of the tensors read from
    attributes (`stable`: parameters, buffers) when it held and every memory owner was
    distinct: while those are the same array objects (strong references: no id is reused)
    and every other tensor's array owner is another one, it holds again without the pass
    over all inputs. Called as `check(stable arrays, other tensors, all tensors)`."""
    from .writeback import disjoint

    memo: list = [None, None]  # (the stable arrays, the ids of their owners)
    fast = all(m in stable for m in mutated)

    def check(arrays: tuple, others: tuple, tensors: tuple) -> bool:
        last = memo[0]
        if last is not None and all(map(operator.is_, arrays, last)):
            owners = memo[1]
            seen = set()
            for t in others:
                o = _owner(t._data)
                if o is None or o in owners or o in seen:
                    break
                seen.add(o)
            else:
                return True
        if not disjoint(mutated, tensors):
            return False
        if fast:
            owners = {_owner(a) for a in arrays}
            if None not in owners and len(owners) == len(arrays):
                memo[0], memo[1] = arrays, owners
        return True

    return check


def cached_disjoint(terms: list, ns: dict) -> list:
    """`terms` with each `writeback.disjoint` term made a `memo_disjoint` check."""
    out = []
    for term in terms:
        got = _disjoint_term(term, ns)
        if got is None:
            out.append(term)
            continue
        mutated, srcs = got
        stable = [i for i, s in enumerate(srcs) if _attribute_read(s)]
        others = [s for i, s in enumerate(srcs) if i not in stable]
        name = f"___memo_disjoint{len([k for k in ns if k.startswith('___memo_disjoint')])}"
        ns[name] = memo_disjoint(mutated, stable)
        out.append(f"{name}(({''.join(srcs[i] + '._data, ' for i in stable)}), "
                   f"({''.join(s + ', ' for s in others)}), ({''.join(s + ', ' for s in srcs)}))")
    return out
