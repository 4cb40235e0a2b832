"""What Python builtins and containers mean during capture: `len`, `isinstance`, `range`,
`enumerate`, `zip`, `reversed`, `sum`/`any`/`all`/`min`/`max`, `tuple`/`list`/`dict`, `getattr`;
list/dict methods; unpacking, subscripts and item assignment; generators run to completion.

Builtins fold on constants and act on trackers (a `zip` of two lists of tensors is a tuple of
tuples of trackers); a builtin capture does not model is a graph break, so that the call runs
eagerly. Containers built by the code may be mutated (`xs.append(y)`); containers read from
the caller's frame may not (a graph break). Tensor subscripts are `subscripts.py`'s.
Touches `capture`.
"""

from __future__ import annotations

import builtins
import inspect
import math
import types

from eager import Tensor

from . import calls, dynamic, eager_rules, pyfunctional, subscripts, vocabulary
from .guards import NUMPY_SCALARS
from .variables import (
    ConstantVariable,
    DictVariable,
    GeneratorVariable,
    IteratorVariable,
    ListVariable,
    ObjectVariable,
    SequenceVariable,
    SetVariable,
    TensorVariable,
    TupleVariable,
    UnknownVariable,
    UserObjectVariable,
    VariableTracker,
)

PURE_BUILTINS = {
    abs, all, any, bool, chr, complex, divmod, float, int, isinstance, issubclass, len, max,
    min, ord, pow, range, repr, round, str, sum, tuple, list, type, hash, sorted, enumerate,
    zip, reversed, dict, set, frozenset, slice, callable, format, map,
}
FOLDABLE_MODULES = ("math", "operator", "_operator", "cmath")


def builtin_class(fn) -> bool:
    """A builtin class read as a value (`type(tree)` of a tuple: `type(tree)(items)`), called
    as the builtin it is."""
    return isinstance(fn, ConstantVariable) and type(fn.value) is type and \
        fn.value in PURE_BUILTINS
CONTAINER_METHODS = {"append", "extend", "insert", "pop", "get", "items", "keys", "values",
                     "copy", "index", "count", "update", "setdefault", "clear", "remove"}
MUTATING = ("append", "extend", "insert", "pop", "update", "setdefault", "clear", "remove")


def _const(vs) -> bool:
    return all(isinstance(v, VariableTracker) and v.is_constant() for v in vs)


def _is_const_data(v) -> bool:
    if isinstance(v, (SequenceVariable, DictVariable)) and v.source is None:
        items = v.items.values() if isinstance(v, DictVariable) else v.items
        return all(_is_const_data(x) for x in items)
    return v.is_constant()


def _const_data(v):
    if isinstance(v, DictVariable):
        return {k: _const_data(x) for k, x in v.items.items()}
    if isinstance(v, SequenceVariable):
        return v.kind(_const_data(x) for x in v.items)
    return v.value


def run_generator(tx, gen: GeneratorVariable) -> list:
    """The items a generator yields (it is run to completion, once)."""
    if getattr(gen, "done", None) is not None:
        return gen.done
    child = gen.fn
    child.yields = []
    child.run()
    gen.done = child.yields
    return gen.done


def unpack(tx, v: VariableTracker) -> list:
    """The items of a tuple/list/dict/constant sequence/generator (UNPACK_SEQUENCE, GET_ITER)."""
    if getattr(v, "mapping", None) is not None:  # a ModelOutput made in the frame: its keys
        from .dict_objects import iterate

        items = iterate(v)
        if items is not None:
            return items
    if isinstance(v, SequenceVariable):
        return list(v.items)
    if isinstance(v, IteratorVariable):
        items = v.items[v.index:]
        v.index = len(v.items)
        return items
    if isinstance(v, DictVariable):
        return [ConstantVariable(k) for k in v.items]
    if isinstance(v, GeneratorVariable):
        start, v.consumed = getattr(v, "consumed", 0), len(run_generator(tx, v))
        return list(run_generator(tx, v)[start:])
    if v.is_constant() and isinstance(v.value, (tuple, list, range, str, dict, set,
                                                frozenset, bytes, type({}.items()))):
        return [ConstantVariable(x) for x in v.value]
    entries = vocabulary.container_entries(tx, v)  # ModuleList/ModuleDict...: keys guarded
    if entries is not None:
        if hasattr(type(v.value), "keys"):  # a dict container iterates its keys
            return [ConstantVariable(k) for k, _ in entries]
        return [x for _, x in entries]
    if isinstance(v, TensorVariable):  # `src, dst = edge_index`: one select per row, as
        if not v.meta.shape:              # torch's unpacking (the first size specialised)
            raise TypeError("iteration over a 0-d tensor")
        from . import dynamic

        dynamic.check_read(tx, v, (0,))
        return [subscripts.getitem(tx, v, ConstantVariable(i)) for i in range(v.meta.shape[0])]
    raise tx.unsupported(f"iterating over {v.describe()}")


def call_builtin(tx, f, args: list, kwargs: dict) -> VariableTracker:
    """A call of builtin `f`: an answer about its arguments (`len`, `isinstance`, `type`,
    `getattr`...), a container built from trackers (`tuple`, `zip`, `enumerate`, `sum`...), a
    fold on constants, else a graph break naming it."""
    result = pyfunctional.call(tx, f, args, kwargs)  # operator.add(a, b), functools.reduce
    if result is None:
        result = dynamic.number_math(tx, f, args, kwargs)  # math.cos of a dynamic number
    if result is None:
        result = _introspect(tx, f, args, kwargs)
    if result is None:
        result = _build(tx, f, args, kwargs)
    if result is not None:
        return result
    return _fold(tx, f, args, kwargs)


def _python_dunder(x, name: str) -> bool:
    """True when `x` is an object of a user class (read from a source or made by the code)
    whose `name` is a plain Python function (inlined as Dynamo does)."""
    from .objects import NewObjectVariable

    if isinstance(x, NewObjectVariable):
        cls = x.cls
    elif type(x) is UserObjectVariable and x.source is not None and \
            not isinstance(x.value, type):
        cls = type(x.value)
    else:
        return False
    return isinstance(inspect.getattr_static(cls, name, None), types.FunctionType)


def _introspect(tx, f, args: list, kwargs: dict) -> VariableTracker | None:
    """`len`, `bool`, `isinstance`, `type`, `abs`, `getattr` on trackers (None: not one)."""
    if f is len and len(args) == 1 and not kwargs:
        (x,) = args
        if isinstance(x, TensorVariable):
            if not x.meta.shape:
                raise TypeError("len() of a 0-d tensor")
            from . import dynamic

            return dynamic.SizeVariable(tx, x).item(0)  # (a dynamic size: symbolic)
        if isinstance(x, (SequenceVariable, DictVariable)):
            return ConstantVariable(len(x.items))
        from .dynamic import SizeVariable

        if isinstance(x, SizeVariable):
            return ConstantVariable(len(x.t.meta.shape))
        entries = vocabulary.container_entries(tx, x)
        if entries is not None:
            return ConstantVariable(len(entries))
        if _python_dunder(x, "__len__"):  # `len(image_list)`: the class's __len__ inlined
            return calls.call_function(tx, calls.get_attr(tx, x, "__len__"), [], {})
    if f is bool and len(args) == 1 and not kwargs and \
            isinstance(args[0], (SequenceVariable, DictVariable)):
        return ConstantVariable(len(args[0].items) > 0)  # (a read dict guards its length)
    if f is isinstance and len(args) == 2:
        obj, cls = args
        classes = [c.value for c in unpack(tx, cls)] if isinstance(cls, SequenceVariable) \
            else cls.value if cls.is_constant() or isinstance(cls, ObjectVariable) else None
        if classes is not None:
            if isinstance(classes, list):
                classes = tuple(classes)
            typ = obj.python_type() if not isinstance(obj, ObjectVariable) else \
                type(obj.value)
            return ConstantVariable(issubclass(typ, classes))
    if f is type and len(args) == 1 and not kwargs:  # `type(self).__name__`, `type(x) is T`
        known = _exact_type(tx, args[0])
        if known is not None:
            return ConstantVariable(known)
    if f is abs and len(args) == 1 and isinstance(args[0], TensorVariable):
        return calls.unary_op(tx, "__abs__", abs, args[0])
    if f is hasattr and len(args) == 2 and args[1].is_constant() and not kwargs and \
            isinstance(args[1].value, str) and isinstance(args[0], TensorVariable) and \
            hasattr(Tensor, args[1].value):  # `hasattr(v, "detach")`: Tensor's own methods
        return ConstantVariable(True)
    if f is hasattr and len(args) == 2 and args[1].is_constant() and not kwargs and \
            isinstance(args[1].value, str) and not isinstance(args[0], TensorVariable):
        try:  # (a tensor's attributes: eager's own hasattr, a break)
            calls.get_attr(tx, args[0], args[1].value)
        except AttributeError:
            src = getattr(args[0], "source", None)
            if src is not None:  # (an attribute added later fails the guard)
                tx.out.guards.add(f"not hasattr({src}, {args[1].value!r})")
            return ConstantVariable(False)
        return ConstantVariable(True)
    if f is setattr and len(args) == 3 and not kwargs and args[1].is_constant() and \
            isinstance(args[1].value, str):  # as STORE_ATTR (the pruning pre-hook's setattr)
        from .sideeffects import store_attr

        store_attr(tx, args[0], args[1].value, args[2])
        return ConstantVariable(None)
    if f is getattr and len(args) in (2, 3) and args[1].is_constant():
        try:
            return calls.get_attr(tx, args[0], args[1].value)
        except AttributeError:
            if len(args) == 3:
                src = getattr(args[0], "source", None)
                if src is not None:  # `getattr(self, "n", 0)`: absent now, maybe not later
                    tx.out.guards.add(f"not hasattr({src}, {args[1].value!r})")
                return args[2]
            raise
    return None


def _build(tx, f, args: list, kwargs: dict) -> VariableTracker | None:
    """Containers and iteration over trackers: `tuple`/`list`/`set`/`dict`, `enumerate`,
    `zip`, `map`, `reversed`, `sum`/`any`/`all`/`min`/`max`, `iter`, `next` (None: not one)."""
    if f in (tuple, list, set, frozenset) and len(args) == 1 and not args[0].is_constant():
        items = unpack(tx, args[0])
        if f in (set, frozenset):
            if not _const(items):
                raise tx.unsupported("set of values that are not constants")
            return ConstantVariable(f(v.value for v in items))
        return TupleVariable(items) if f is tuple else ListVariable(items)
    if f is list and not kwargs and len(args) <= 1:  # `list()`, `list((1, 2))`: a new list
        return ListVariable(unpack(tx, args[0]) if args else [])  # each call (not a constant)
    if f is dict and not args:
        return DictVariable(kwargs)
    if f is dict and len(args) == 1 and isinstance(args[0], DictVariable):
        return DictVariable({**args[0].items, **kwargs})
    if f is dict and len(args) == 1 and not args[0].is_constant():  # `dict(zip(names, parts))`
        pairs = [unpack(tx, p) for p in unpack(tx, args[0])]
        if all(len(p) == 2 and p[0].is_constant() for p in pairs):
            return DictVariable({**{k.value: v for k, v in pairs}, **kwargs})
    if f is sorted and len(args) == 1 and not kwargs.keys() - {"key", "reverse"} and \
            not args[0].is_constant():  # `sorted(n.split(".")[0] for n, _ in named_params)`
        items = unpack(tx, args[0])
        key = kwargs.get("key")
        keys = items if key is None or key.is_constant() and key.value is None else \
            [calls.call_function(tx, key, [v], {}) for v in items]
        rev = kwargs.get("reverse", ConstantVariable(False))
        if _const(keys) and rev.is_constant():
            order = sorted(range(len(items)), key=lambda i: keys[i].value, reverse=rev.value)
            return ListVariable([items[i] for i in order])
    if f is enumerate and args and not kwargs.keys() - {"start"}:
        start = (args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))).value
        return ListVariable([TupleVariable([ConstantVariable(start + i), v])
                             for i, v in enumerate(unpack(tx, args[0]))])
    if f is zip and not kwargs and not _const(args):
        return ListVariable([TupleVariable(list(t))
                             for t in zip(*(unpack(tx, a) for a in args))])
    if f is map and len(args) >= 2 and not kwargs and not _const(args):
        rows = zip(*(unpack(tx, a) for a in args[1:]))  # (called eagerly, not lazily)
        return IteratorVariable([calls.call_function(tx, args[0], list(r), {}) for r in rows])
    if f is reversed and len(args) == 1 and not args[0].is_constant():
        return ListVariable(list(reversed(unpack(tx, args[0]))))
    if f in (sum, any, all, min, max, math.prod) and len(args) in (1, 2) and \
            (not _const(args) or "key" in kwargs) and \
            not (f is math.prod and all(_is_const_data(v) for v in args)):  # (sizes: folded)
        return _reduce(tx, f, args, kwargs)
    if f is iter and len(args) == 1:
        return IteratorVariable(unpack(tx, args[0]))
    if f is next and len(args) in (1, 2) and isinstance(args[0], IteratorVariable):
        it = args[0]
        if it.index >= len(it.items):
            if len(args) == 2:
                return args[1]
            raise tx.unsupported("next() on an exhausted iterator")
        it.index += 1
        return it.items[it.index - 1]
    if f is next and len(args) in (1, 2) and isinstance(args[0], GeneratorVariable):
        # `next(v for v in values if isinstance(v, Tensor))`: the generator is run to its end
        # (a generator expression's items; their side effects would run too early)
        gen, items = args[0], run_generator(tx, args[0])
        start = getattr(gen, "consumed", 0)
        if start >= len(items):
            if len(args) == 2:
                return args[1]
            raise tx.unsupported("next() on an exhausted generator")
        gen.consumed = start + 1
        return items[start]
    return None


def _fold(tx, f, args: list, kwargs: dict) -> VariableTracker:
    """A pure builtin (or math/operator function) on constant data runs now; else a break."""
    name = getattr(f, "__name__", repr(f))
    pure = f in PURE_BUILTINS or getattr(f, "__module__", None) in FOLDABLE_MODULES
    if pure and all(_is_const_data(v) for v in args + list(kwargs.values())):
        result = f(*[_const_data(v) for v in args],
                   **{k: _const_data(v) for k, v in kwargs.items()})
        if hasattr(result, "__next__"):  # reversed(), zip()...: a fresh iterator each call
            result = tuple(result)
        return ConstantVariable(result)
    folded = eager_rules.fold_constant_helper(tx, f, args, kwargs)  # np.arange(n) in eager
    if folded is not None:
        return folded
    if f is print:
        raise tx.unsupported("call to builtin print")
    if f is builtins.breakpoint:
        raise tx.unsupported("call to builtin breakpoint (runs eagerly)")
    raise tx.unsupported(f"call to builtin {name}"
                         + ("" if pure else " (a C function capture does not model)"))

def _exact_type(tx, v):
    """`type(v)` where capture knows it exactly (a graph input's own class: Parameter; a
    named tuple's class), else None (the call breaks)."""
    if isinstance(v, TensorVariable):
        real = tx.out.values.get(v.source) if v.source is not None else None
        from eager import Tensor

        return type(real) if real is not None else Tensor
    if isinstance(v, SequenceVariable):
        return getattr(v, "namedtuple", None) or v.kind
    if isinstance(v, (ConstantVariable, ObjectVariable)):
        return type(v.value)
    if type(v) is DictVariable or isinstance(v, IteratorVariable):
        return v.python_type()
    raw = getattr(getattr(v, "_items", None), "_value", None)
    if isinstance(v, DictVariable) and raw is not None:  # a dict read from the frame: its
        return type(raw)                                  # type is guarded (`type(batch)`)
    from .objects import NewObjectVariable

    if isinstance(v, NewObjectVariable):
        return v.cls
    return None


def _reduce(tx, f, args, kwargs) -> VariableTracker:
    if f in (min, max) and kwargs.keys() == {"key"}:  # `max(range(n), key=lambda i: ...)`
        items = unpack(tx, args[0]) if len(args) == 1 else list(args)
        return pyfunctional.keyed_extreme(tx, f, items, kwargs["key"])
    if kwargs.keys() - ({"start"} if f in (sum, math.prod) else set()):
        raise tx.unsupported(f"{f.__name__}() with keyword arguments "
                             f"({', '.join(kwargs)})")
    if len(args) == 1:
        items = unpack(tx, args[0])
    else:
        items = list(args) if f in (min, max) else unpack(tx, args[0])
    if f in (sum, math.prod):  # (`math.prod(sizes[a] for a in group)`: a product)
        acc = args[1] if len(args) == 2 else kwargs.get("start", ConstantVariable(f([])))
        for v in items:
            acc = calls.binary_op(tx, "+" if f is sum else "*", acc, v)
        return acc
    if not _const(items):
        raise tx.unsupported(f"{f.__name__}() of values that are not constants")
    return ConstantVariable(f(v.value for v in items))


def call_container_method(tx, m, args: list, kwargs: dict) -> VariableTracker:
    obj, name = m.obj, m.name
    if kwargs and not (name == "update" and isinstance(obj, DictVariable)):
        raise tx.unsupported(f"{obj.describe()}.{name}() with keyword arguments")
    if name in MUTATING:  # the caller's list/dict: replayed on it after the graph
        tx.out.side_effects.mutate(tx, obj)
    if isinstance(obj, DictVariable):
        items = obj.items
        if name == "items":
            return ListVariable([TupleVariable([ConstantVariable(k), v])
                                 for k, v in items.items()])
        if name == "keys":
            return ListVariable([ConstantVariable(k) for k in items])
        if name == "values":
            return ListVariable(list(items.values()))
        if name == "copy":
            return DictVariable(items)
        if name in ("get", "pop", "setdefault") and args and args[0].is_constant():
            key = args[0].value
            default = args[1] if len(args) > 1 else ConstantVariable(None)
            if name == "get":
                return items.get(key, default)
            if name == "setdefault":
                return items.setdefault(key, default)
            if key in items or len(args) > 1:
                return items.pop(key, default)
        if name == "update" and len(args) <= 1 and \
                all(isinstance(a, DictVariable) for a in args):
            for a in args:
                items.update(a.items)
            items.update(kwargs)
            return ConstantVariable(None)
        if name == "clear" and not args:
            items.clear()
            return ConstantVariable(None)
    elif isinstance(obj, ListVariable):
        items = obj.items
        if name == "append" and len(args) == 1:
            items.append(args[0])
            return ConstantVariable(None)
        if name == "extend" and len(args) == 1:
            items.extend(unpack(tx, args[0]))
            return ConstantVariable(None)
        if name == "insert" and len(args) == 2 and args[0].is_constant():
            items.insert(args[0].value, args[1])
            return ConstantVariable(None)
        if name == "pop" and len(args) <= 1 and _const(args):
            return items.pop(*(a.value for a in args))
        if name == "clear" and not args:
            items.clear()
            return ConstantVariable(None)
        if name == "remove" and len(args) == 1 and _const(items + args):
            del items[[v.value for v in items].index(args[0].value)]  # a ValueError: the user's
            return ConstantVariable(None)
        if name == "copy" and not args:
            return ListVariable(items)
        if name in ("index", "count") and _const(items + args):
            return ConstantVariable(getattr([v.value for v in items], name)(
                *(a.value for a in args)))
    raise tx.unsupported(f"{obj.describe()}.{name}()")


def subscript(tx, obj: VariableTracker, index: VariableTracker) -> VariableTracker:
    from .dynamic import SizeVariable

    if isinstance(obj, SizeVariable) and index.is_constant() and \
            isinstance(index.value, (int, slice)):
        return obj.item(index.value)
    if obj.is_constant() and index.is_constant():
        return ConstantVariable(obj.value[index.value])
    if isinstance(obj, SequenceVariable) and index.is_constant():
        i = index.value
        if isinstance(i, slice):
            return type(obj)(obj.items[i])
        if isinstance(i, int):
            return obj.items[i]  # an IndexError here is the user's, as eagerly
    if isinstance(obj, DictVariable) and index.is_constant():
        factory = getattr(obj, "default_factory", None)
        if factory is not None and index.value not in obj.items:  # a defaultdict's miss
            tx.out.side_effects.mutate(tx, obj)
            obj.items[index.value] = calls.call_function(tx, factory, [], {})
        return obj.items[index.value]  # a KeyError here is the user's
    if isinstance(obj, UserObjectVariable) and index.is_constant():
        entries = vocabulary.container_entries(tx, obj)
        if entries is not None and isinstance(index.value, slice) and \
                type(obj.value).__name__ == "ModuleList":  # iterated: `self.layers[:2]`
            return ListVariable([x for _, x in entries][index.value])
        if entries is not None and not isinstance(index.value, slice):
            if hasattr(type(obj.value), "keys"):
                return dict(entries)[index.value]  # a KeyError here is the user's
            return entries[index.value][1]  # an IndexError here is the user's
    if isinstance(obj, TensorVariable):
        return subscripts.getitem(tx, obj, index)
    if isinstance(obj, UnknownVariable) and obj.source and index.is_constant():
        item = _array_item(tx, obj, index.value)
        if item is not None:
            return item
    raise tx.unsupported(f"subscript of {obj.describe()}")


def _array_item(tx, obj, i):
    """`schedule[epoch]`: one number of a numpy array read from an attribute or a global, at a
    constant index: a constant guarded on the array's dtype and that element's value (a new
    value recompiles), as eagerly a numpy scalar (None: not such a read)."""
    arr = obj.value
    if type(arr).__name__ != "ndarray" or type(arr).__module__ != "numpy" or \
            not (isinstance(i, int) or isinstance(i, tuple) and
                 all(isinstance(k, int) for k in i)) or isinstance(i, bool):
        return None
    value = arr[i]  # an IndexError here is the user's
    if type(value).__name__ not in NUMPY_SCALARS:
        return None
    g = tx.out.guards
    g.add(f"{obj.source}.dtype == {g.name_for(arr.dtype, '___dtype')}")
    g.add(f"{obj.source}.shape == {tuple(arr.shape)!r}")
    source = f"{obj.source}[{i!r}]"
    g.constant(source, value)
    return ConstantVariable(value, source)


def store_subscript(tx, obj, index, value) -> None:
    """`obj[index] = value`: on a list/dict built by the code, or on a fresh tensor."""
    if isinstance(obj, (ListVariable, DictVariable)) and index.is_constant() and (
            isinstance(obj, DictVariable) or isinstance(index.value, int)):
        tx.out.side_effects.mutate(tx, obj)  # (the caller's: replayed after the graph)
        obj.items[index.value] = value  # an IndexError here is the user's
        return
    if isinstance(obj, ListVariable) and index.is_constant() and \
            isinstance(index.value, slice) and (isinstance(value, SequenceVariable) or
                                               value.is_constant()):
        tx.out.side_effects.mutate(tx, obj)  # `shape[1:] = [1] * (n - 1)`
        obj.items[index.value] = unpack(tx, value)  # a ValueError here is the user's
        return
    if isinstance(obj, TensorVariable):
        subscripts.setitem(tx, obj, index, value)
        return
    raise tx.unsupported(f"mutation of Python state ({obj.describe()}[...] = ...)")


__all__ = [
    "PURE_BUILTINS",
    "SetVariable",
    "call_builtin",
    "call_container_method",
    "run_generator",
    "store_subscript",
    "subscript",
    "unpack",
]
