"""Guards on the library itself: eager's own code is checked once per call, not term by term.

Policy (as TorchDynamo assumes of `torch.*`): what capture reads from eager's and ir's own
modules while it steps through their code (a module global such as `FUNCTIONS['linear']`, a
builtin that a library file does not shadow, `D.int64`, `F.layer_norm` as `nn.LayerNorm.forward`
sees it) is part of the library, not of the user's program. Such a guard term - one whose every
source is a library module or a library module's globals, reading no parameter, cell, user
global or builtin - is not checked on every call. Instead each library module that such terms
read gets `_Watched` as its class (and so does a library module a term reaches through
another, as `F` in `G_activation['F'].gelu`), whose `__setattr__`/`__delattr__` bump one counter
(`VERSION`): monkeypatching (`F.gelu = my_gelu`, `setattr(eager.nn.losses, ...)`,
`unittest.mock.patch`) and importing a new submodule (which sets an attribute on its package) go
through them. A cache entry's guard checks `VERSION` against the value it last saw (one
compare); when it moved, the entry evaluates all of its library terms once more and either
takes the new value (nothing it depends on changed) or fails (recompile, with the term named by
`first_failure`). The first check of every entry evaluates them too, so a patch between capture
and the entry's guard build is seen.

Not detected (assumed, as Dynamo assumes torch is not patched behind its back): writes into a
library module's dict without `setattr` (`vars(F)['gelu'] = g`), mutation of library-private
containers (`eager.nn.module.FUNCTIONS[...] = ...`) and attribute writes on library classes and
functions. Terms on what user code reads (`F.cross_entropy` through a user's global or cell,
module instances, their classes' `__call__`/`forward`, builtins) stay per call.

`group_defaults` is the second rule (for any function, the user's too): the terms on the
immutable default values of a function's `__defaults__` tuple become one identity term on the
tuple (assigning `__defaults__` makes a new tuple). Imports `eager` and `ir` only through
`sys.modules`.
"""

from __future__ import annotations

import ast
import re
import sys
import types

PACKAGES = ("eager", "ir")
VERSION = [0]  # bumped by every attribute write or delete on a watched library module


class _Watched(types.ModuleType):
    """A library module's class once a guard relies on it: attribute writes count."""

    __slots__ = ()

    def __setattr__(self, name, value):
        VERSION[0] += 1
        super().__setattr__(name, value)

    def __delattr__(self, name):
        VERSION[0] += 1
        super().__delattr__(name)


def _in_library(name) -> bool:
    return isinstance(name, str) and any(name == p or name.startswith(p + ".")
                                         for p in PACKAGES)


def library_module(obj) -> types.ModuleType | None:
    """The watched library module that `obj` is (or whose globals dict `obj` is); None when
    `obj` is not one or its module cannot be watched (a module with a class of its own)."""
    if isinstance(obj, types.ModuleType):
        module = obj
    elif type(obj) is dict and _in_library(obj.get("__name__")):
        module = sys.modules.get(obj["__name__"])
        if module is None or vars(module) is not obj:
            return None
    else:
        return None
    if not _in_library(module.__name__):
        return None
    if type(module) is types.ModuleType:
        try:
            module.__class__ = _Watched
        except TypeError:
            return None
    return module if type(module) is _Watched else None


_BUILTINS = {"type", "len"}  # (the builtins terms call; the guard's namespace is `builtins`)


def _is_library_term(node, ns: dict, params: set) -> bool:
    """Every name of the term is a library root (a watched module or its globals) or, outside
    a source chain, a namespace constant; at least one is a library root."""
    roots = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Attribute, ast.Subscript)) and isinstance(n.value, ast.Name):
            roots.add(n.value.id)
        elif isinstance(n, ast.Compare):
            roots.update(c.id for op, c in zip(n.ops, n.comparators)
                         if isinstance(op, (ast.In, ast.NotIn)) and isinstance(c, ast.Name))
        elif isinstance(n, (ast.NamedExpr, ast.Lambda, ast.comprehension)):
            return False
    names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - _BUILTINS
    if not roots or names & params or not names <= ns.keys():
        return False
    if not all(library_module(ns[r]) is not None for r in roots):
        return False
    return all(_owner_watched(n.value, ns) for n in ast.walk(node)
               if isinstance(n, ast.Attribute) and not isinstance(n.value, ast.Name))


def _owner_watched(owner, ns: dict) -> bool:
    """An attribute read off a value the term reaches (`G_act['F'].gelu`): when that value is
    a module, writes to it must count too (it is watched), else the term stays per call."""
    try:
        value = eval(compile(ast.Expression(owner), "<library term>", "eval"), ns)  # noqa: S307
    except Exception:  # noqa: BLE001 (not evaluable here: checked on every call instead)
        return False
    return not isinstance(value, types.ModuleType) or library_module(value) is not None


def split(terms: list, ns: dict, params: set) -> tuple[list, list]:
    """(library terms, the other terms), each in the order given."""
    lib, rest = [], []
    for term in terms:
        try:
            node = ast.parse(term, mode="eval").body
        except SyntaxError:
            rest.append(term)
            continue
        (lib if _is_library_term(node, ns, params) else rest).append(term)
    return lib, rest


def check(lib_terms: list, ns: dict) -> str:
    """One guard term standing for `lib_terms`: the library version this entry last saw
    (none yet: the first check evaluates the terms), else the terms evaluated once again.
    Binds its helpers in `ns`."""
    seen = [-1]
    body = " and ".join(f"({t})" for t in lib_terms) or "True"
    text = (f"def ___revalidate():\n    v = ___libv[0]\n    try:\n        ok = {body}\n"
            "    except Exception:\n        return False\n    if ok:\n"
            "        ___libseen[0] = v\n    return bool(ok)\n")
    scope = dict(ns, ___libv=VERSION, ___libseen=seen)
    exec(compile(text, "<library guard>", "exec"), scope)  # noqa: S102 - our own terms
    ns.update(___libv=VERSION, ___libseen=seen, ___librevalidate=scope["___revalidate"])
    return "(___libv[0] == ___libseen[0] or ___librevalidate())"


def _default_read(node, ns: dict):
    """(function name, index) when `node` is `FN.__defaults__[i]` for a function `FN` of the
    namespace whose default `i` exists; else None."""
    if (isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant)
            and type(node.slice.value) is int and isinstance(node.value, ast.Attribute)
            and node.value.attr == "__defaults__" and isinstance(node.value.value, ast.Name)):
        fn = ns.get(node.value.value.id)
        d = getattr(fn, "__defaults__", None) if isinstance(fn, types.FunctionType) else None
        if d is not None and 0 <= node.slice.value < len(d):
            return node.value.value.id, node.slice.value
    return None


def _default_term(term: str, ns: dict):
    """The function name when `term` only checks the type or value of one default of a
    namespace function against a constant or a namespace name (reads nothing inside it)."""
    try:
        node = ast.parse(term, mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.Is, ast.Eq, ast.NotEq))):
        return None
    left, right = node.left, node.comparators[0]
    if (isinstance(left, ast.Call) and isinstance(left.func, ast.Name)
            and left.func.id == "type" and len(left.args) == 1 and not left.keywords):
        left = left.args[0]
    got = _default_read(left, ns)
    if got is None:
        return None
    if isinstance(right, ast.Name) or _default_read(right, ns) == got:
        return got[0]
    try:
        ast.literal_eval(right)
    except ValueError:
        return None
    return got[0]


def group_defaults(terms: list, ns: dict) -> list:
    """`terms` with the checks of one function's default values replaced by one identity
    term on its `__defaults__` tuple (at the place of the first), bound in `ns`."""
    out, done = [], set()
    for term in terms:
        fn = _default_term(term, ns)
        if fn is None:
            out.append(term)
        elif fn not in done:
            done.add(fn)
            name = f"___defaults_{fn}"
            ns[name] = ns[fn].__defaults__
            out.append(f"{fn}.__defaults__ is {name}")
    return out


def class_reads(terms: list, ns: dict) -> list:
    """`terms` with the reads of an eager module's class made once per class: after a term
    `type(S) is C` (C an `eager.nn.Module` subclass), `type(S).__call__ is X` becomes
    `C.__call__ is X` (one term per class) and `S.m.__func__ is X` (the method the code
    calls) becomes `C.m is X` (per class) and `'m' not in S.__dict__` (no bound method made;
    an instance attribute `m` falls back to the original term)."""
    module_cls = getattr(sys.modules.get("eager.nn.module"), "Module", None)
    cls_of: dict = {}
    out, seen = [], set()

    def emit(term):
        if term not in seen:
            seen.add(term)
            out.append(term)

    for term in terms:
        m = _TYPE_IS.fullmatch(term)
        if m and isinstance(ns.get(m.group(2)), type):
            cls_of.setdefault(m.group(1), m.group(2))
        m = _CALL_IS.fullmatch(term)
        if m and m.group(1) in cls_of:
            emit(f"{cls_of[m.group(1)]}.__call__ is {m.group(2)}")
            continue
        m = _FUNC_IS.fullmatch(term)
        c = cls_of.get(m.group(1)) if m else None
        if c is not None and module_cls is not None and issubclass(ns[c], module_cls) \
                and getattr(ns[c], m.group(2), None) is ns.get(m.group(3)):
            src, meth, fn = m.groups()
            emit(f"{c}.{meth} is {fn}")
            emit(f"({meth!r} not in {src}.__dict__ or {term})")
            continue
        emit(term)
    return out


_TYPE_IS = re.compile(r"type\((.+)\) is (\w+)")
_CALL_IS = re.compile(r"type\((.+)\)\.__call__ is (\w+)")
_FUNC_IS = re.compile(r"(.+)\.(\w+)\.__func__ is (\w+)")
