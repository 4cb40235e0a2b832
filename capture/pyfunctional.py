"""Python's functional helpers over trackers, as Dynamo inlines them: `operator.add(a, b)`
(and the other binary operators) on tensors, `functools.reduce(f, items[, initial])`,
`itertools.accumulate(items[, f][, initial=])`, the combinatoric and chaining itertools
(`product`, `combinations`, `permutations`, `chain`, `zip_longest`, `islice`, `pairwise`:
their items are the argument trackers, arranged by itertools itself), `min`/`max` with `key=`,
and the
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
    TupleVariable,
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
    if isinstance(cls, type) and cls in _ITERTOOLS:  # (`cls` may be any callable object)
        return _arrange(tx, cls, args, kwargs)
    return None


# itertools arranging their arguments' items (how many leading arguments are iterables)
_ITERTOOLS = {itertools.product: None, itertools.chain: None, itertools.zip_longest: None,
              itertools.pairwise: 1, itertools.combinations: 1, itertools.permutations: 1,
              itertools.combinations_with_replacement: 1, itertools.islice: 1}


def _arrange(tx, cls, args: list, kwargs: dict) -> VariableTracker:
    """`itertools.product(range(3), range(3))`, `combinations(xs, 2)`, `chain(a, b)`...: the
    iterables unpacked to their trackers, arranged by the real itertools function (the other
    arguments are constants, `fillvalue=` any tracker); each tuple it yields is a tuple of
    those trackers."""
    from . import calls

    n = len(args) if _ITERTOOLS[cls] is None else _ITERTOOLS[cls]
    fill = kwargs.pop("fillvalue", ConstantVariable(None))
    if not all(v.is_constant() for v in args[n:] + list(kwargs.values())):
        raise tx.unsupported(f"itertools.{cls.__name__} with non-constant arguments")
    named = {k: v.value for k, v in kwargs.items()}
    if cls is itertools.zip_longest:
        named["fillvalue"] = fill
    made = cls(*[calls.unpack(tx, a) for a in args[:n]], *[v.value for v in args[n:]], **named)
    return IteratorVariable(TupleVariable(x) if isinstance(x, tuple) else x for x in made)


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
