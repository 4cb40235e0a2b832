"""Python's functional helpers over trackers, as Dynamo inlines them: `operator.add(a, b)`
(and the other binary operators) on tensors, `functools.reduce(f, items[, initial])`,
`itertools.accumulate(items[, f][, initial=])`, `min`/`max` with `key=`, and the
`collections.OrderedDict(...)` the code makes. Each calls back into capture for the element
function, so a lambda or a tensor op inside is traced; anything else returns None (the caller
then breaks as before).
"""

from __future__ import annotations

import collections
import functools
import itertools
import operator

from .operators import BINARY, COMPARE
from .variables import (
    BuiltinVariable,
    ConstantVariable,
    DictVariable,
    IteratorVariable,
    VariableTracker,
)

_BINARY_BY_FUNCTION = {getattr(operator, name if name not in ("and", "or") else name + "_"):
                       symbol for symbol, name in BINARY.items()}
_COMPARE_BY_FUNCTION = {getattr(operator, names[0]): symbol
                        for symbol, names in COMPARE.items()}


def call(tx, f, args: list, kwargs: dict) -> VariableTracker | None:
    """`f(*args, **kwargs)` for the builtins above, else None."""
    from . import calls

    if f in _BINARY_BY_FUNCTION and len(args) == 2 and not kwargs:
        return calls.binary_op(tx, _BINARY_BY_FUNCTION[f], *args)
    if f in _COMPARE_BY_FUNCTION and len(args) == 2 and not kwargs:
        return calls.compare_op(tx, _COMPARE_BY_FUNCTION[f], *args)
    if f is functools.reduce and len(args) in (2, 3) and not kwargs:
        items = calls.unpack(tx, args[1])
        if len(args) == 3:
            items = [args[2]] + items
        if not items:
            raise TypeError("reduce() of empty iterable with no initial value")
        acc = items[0]
        for v in items[1:]:
            acc = calls.call_function(tx, args[0], [acc, v], {})
        return acc
    return None


def make(tx, cls, args: list, kwargs: dict) -> VariableTracker | None:
    """`OrderedDict(...)`, `defaultdict(factory[, items])`, `itertools.accumulate(...)` and
    the legacy constructors
    (`capture.legacy`) built by the code, else None."""
    from . import calls, legacy

    made = legacy.make(tx, cls, args, kwargs)  # Variable(x), torch.FloatTensor(2, 3)
    if made is not None:
        return made
    if cls is collections.OrderedDict and len(args) <= 1:
        return _ordered_dict(tx, args, kwargs)
    if cls is collections.defaultdict and 1 <= len(args) <= 2:  # `defaultdict(list)`
        var = _ordered_dict(tx, args[1:], kwargs)
        var.ordered = False
        var.default_factory = args[0]  # (called on a missing key: `pycalls.subscript`)
        return var
    if cls is itertools.accumulate and 1 <= len(args) <= 2 and not kwargs.keys() - {"initial"}:
        fn = args[1] if len(args) == 2 else BuiltinVariable(operator.add)
        items = calls.unpack(tx, args[0])
        initial = kwargs.get("initial", ConstantVariable(None))
        out = [] if initial.is_constant() and initial.value is None else [initial]
        for v in items:
            out.append(calls.call_function(tx, fn, [out[-1], v], {}) if out else v)
        return IteratorVariable(out)
    return None


def _ordered_dict(tx, args: list, kwargs: dict) -> DictVariable:
    """`OrderedDict()`, `OrderedDict(d)`, `OrderedDict([(k, v), ...])`, `OrderedDict(a=x)`:
    a dict the code made, rebuilt as an OrderedDict when it leaves the graph."""
    from . import calls

    items = {}
    if args and isinstance(args[0], DictVariable):
        items.update(args[0].items)
    elif args:
        for pair in calls.unpack(tx, args[0]):
            k, v = calls.unpack(tx, pair)
            if not k.is_constant():
                raise tx.unsupported("OrderedDict with a key that is not a constant")
            items[k.value] = v
    items.update(kwargs)
    return DictVariable(items, ordered=True)


def keyed_extreme(tx, f, items: list, key) -> VariableTracker:
    """`max(items, key=fn)` / `min(...)`: the first item whose key (a constant) is largest
    (smallest), as Python picks it."""
    from . import calls

    keys = [calls.call_function(tx, key, [v], {}) for v in items]
    if not items:
        raise ValueError(f"{f.__name__}() iterable argument is empty")
    if not all(k.is_constant() for k in keys):
        raise tx.unsupported(f"{f.__name__}(key=...) whose keys are not constants")
    best = f(range(len(items)), key=lambda i: keys[i].value)
    return items[best]
