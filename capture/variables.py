"""Variable trackers: what the symbolic interpreter keeps on its stack and in its locals.

Each tracker stands for one Python value of the user's frame without running the code that made
it: a `ConstantVariable` holds a value known at capture time (folded arithmetic, shapes, dtypes),
a `TensorVariable` a graph `Node` with its static `TensorMeta`, and the others the objects the
code reads (modules, functions, builtins, user objects) or builds (tuples, lists). Every tracker
read from the frame's inputs carries a *source* (`x`, `G['w']`, `self.w`): an expression over
the function's parameters from which its guards were made and from which a graph input is
fetched on each call. Pure data; the behaviour lives in `symbolic.py` and `calls.py`.
Touches nothing outside `capture` except the types of `ir`.
"""

from __future__ import annotations

from ir import TensorMeta
from ir.opdef import MetaView
from ir.graph import Node


class VariableTracker:
    """Base tracker. `source` is an expression for where the value was read from, or None."""

    source: str | None = None

    def is_constant(self) -> bool:
        return False

    def python_type(self) -> type:
        raise NotImplementedError(type(self).__name__)

    def describe(self) -> str:
        return type(self).__name__.replace("Variable", "").lower()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


class NullVariable(VariableTracker):
    """The NULL that 3.11+ pushes below a callable (`PUSH_NULL`, `LOAD_GLOBAL` with bit 0)."""


NULL = NullVariable()


class ConstantVariable(VariableTracker):
    """A Python value known at capture time (numbers, str, None, dtypes, shapes, tuples...)."""

    def __init__(self, value, source: str | None = None):
        self.value = value
        self.source = source

    def is_constant(self) -> bool:
        return True

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return repr(self.value)


class TensorVariable(MetaView, VariableTracker):
    """A tensor value: the graph `node` that computes it, its static meta and requires_grad.

    `shape`, `dtype`, `ndim` mirror the Tensor's so that registry decompositions and backward
    rules (which read `x.shape`) run on trackers during capture.
    """

    def __init__(self, node: Node, meta: TensorMeta, requires_grad: bool,
                 source: str | None = None, shadow=None):
        self.node = node
        self.meta = meta
        self.requires_grad = requires_grad
        self.source = source
        self.shadow = shadow  # the same value under perturbed dynamic sizes (dynamic.py)

    def python_type(self) -> type:
        from eager import Tensor

        return Tensor

    def describe(self) -> str:
        return f"%{self.node.name}: {self.meta}"


class SequenceVariable(VariableTracker):
    """A tuple or list built by the code or read from an argument; `items` are trackers."""

    kind: type = tuple

    def __init__(self, items, source: str | None = None):
        self.items = list(items)
        self.source = source

    def python_type(self) -> type:
        return self.kind

    def describe(self) -> str:
        return f"{self.kind.__name__} of {len(self.items)}"


class TupleVariable(SequenceVariable):
    kind = tuple


class ListVariable(SequenceVariable):
    kind = list


class ObjectVariable(VariableTracker):
    """A tracker for a known Python object (its identity guarded where it came from)."""

    def __init__(self, value, source: str | None = None):
        self.value = value
        self.source = source

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return getattr(self.value, "__qualname__", None) or type(self.value).__name__


class ModuleVariable(ObjectVariable):
    """A Python module (`eager`, `math`, `eager.nn.functional`): attribute reads resolve."""

    def describe(self) -> str:
        return self.value.__name__


class FunctionVariable(ObjectVariable):
    """A Python function; calling it inlines its bytecode. `self_var` binds a method's self."""

    def __init__(self, value, source: str | None = None, self_var=None):
        super().__init__(value, source)
        self.self_var = self_var


class OpFunctionVariable(ObjectVariable):
    """An eager function generated from a registry op (`eager.add`, `Tensor.__radd__`...).

    `op` is its `OpDef`; `reflected` swaps the two operands (`__radd__`); `inplace` marks
    `add_`/`__iadd__`; `self_var` is the bound tensor for method calls (`x.sum(...)`).
    """

    def __init__(self, value, source: str | None = None, self_var=None):
        super().__init__(value, source)
        self.op = value.__wick_op__
        self.reflected = getattr(value, "__wick_reflected__", False)
        self.inplace = getattr(value, "__wick_inplace__", False)
        self.self_var = self_var

    def describe(self) -> str:
        return self.op.name


class BuiltinVariable(ObjectVariable):
    """A C function (`len`, `print`, `math.sqrt`): folded on constants, else a graph break."""

    def describe(self) -> str:
        return getattr(self.value, "__name__", repr(self.value))


class TensorMethodVariable(VariableTracker):
    """A Tensor method that is not a registry op (`x.size`, `x.t`, `x.float`, `x.item`)."""

    def __init__(self, tensor: TensorVariable, name: str):
        self.tensor = tensor
        self.name = name

    def describe(self) -> str:
        return f"Tensor.{self.name}"


class ConstantMethodVariable(VariableTracker):
    """A bound method of a constant (`shape.numel`, `"a".upper`): folds on constant args."""

    def __init__(self, bound):
        self.bound = bound

    def describe(self) -> str:
        return getattr(self.bound, "__qualname__", repr(self.bound))


class GradModeVariable(VariableTracker):
    """`eager.no_grad()` / `enable_grad()` / `set_grad_enabled(b)` used in a `with` block."""

    def __init__(self, mode: bool, prev: bool | None = None):
        self.mode = mode
        self.prev = prev  # set_grad_enabled(b) switches at the call; no_grad() at __enter__

    def describe(self) -> str:
        return f"grad mode {self.mode}"


class GradModeExitVariable(VariableTracker):
    """The bound `__exit__` that BEFORE_WITH pushes: calling it restores the previous mode."""

    def __init__(self, prev: bool):
        self.prev = prev


class DictVariable(VariableTracker):
    """A dict built by the code or read from an argument: constant keys, tracker values."""

    def __init__(self, items: dict, source: str | None = None, ordered: bool = False):
        self.items = dict(items)
        self.source = source
        self.ordered = ordered  # an `OrderedDict()` the code made (rebuilt as one)
        self.default_factory = None  # a `defaultdict(factory)` the code made (rebuilt as one)

    def python_type(self) -> type:
        from collections import OrderedDict, defaultdict

        if self.default_factory is not None:
            return defaultdict
        return OrderedDict if self.ordered else dict

    def describe(self) -> str:
        return f"dict of {len(self.items)}"


class SetVariable(SequenceVariable):
    """A set of constants built by the code (`{a, b}`): items kept in insertion order."""

    kind = set


class IteratorVariable(VariableTracker):
    """An iterator over known items (`for i in (1, 2)`, `for w in ws`): loops unroll."""

    def __init__(self, items, index: int = 0):
        self.items = list(items)
        self.index = index

    def python_type(self) -> type:
        return type(iter(()))  # (`isinstance(params, Tensor)` in clip_grad_norm_: False)

    def describe(self) -> str:
        return f"iterator at {self.index} of {len(self.items)}"


class CellVariable(VariableTracker):
    """A closure cell of a frame being captured (`MAKE_CELL`): holds a tracker, or nothing."""

    EMPTY = object()

    def __init__(self, value=EMPTY):
        self.value = value


class NestedFunctionVariable(VariableTracker):
    """A function created by the captured code (`MAKE_FUNCTION`: lambdas, nested defs,
    comprehensions on 3.11): its code, globals, default trackers and closure cells."""

    def __init__(self, code, f_globals, defaults=(), kwdefaults=None, closure=(),
                 qualname=None):
        self.code = code
        self.f_globals = f_globals
        self.defaults = tuple(defaults)
        self.kwdefaults = dict(kwdefaults or {})
        self.closure = tuple(closure)
        self.qualname = qualname or code.co_name

    def describe(self) -> str:
        return f"function {self.qualname}"


class PartialVariable(VariableTracker):
    """`functools.partial(fn, *args, **kwargs)` on a tracker `fn`."""

    def __init__(self, fn, args, kwargs, source=None):
        self.fn, self.args, self.kwargs, self.source = fn, list(args), dict(kwargs), source


class GeneratorVariable(VariableTracker):
    """A generator object made by calling a generator function (a genexpr): its items are
    produced by running the function to completion when a consumer (sum, tuple...) asks."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, list(args)


class ContainerMethodVariable(VariableTracker):
    """A bound method of a list/dict tracker (`xs.append`, `d.items`)."""

    def __init__(self, obj, name: str):
        self.obj, self.name = obj, name

    def describe(self) -> str:
        return f"{self.obj.describe()}.{self.name}"


class SymBoolVariable(VariableTracker):
    """`bool(t)` of a tensor `t` (3.13's TO_BOOL, COMPARE_OP with the bool bit): only a jump
    can consume it, as a graph break on the tensor's value. `negate`: `not bool(t)`."""

    def __init__(self, tensor, negate: bool = False):
        self.tensor = tensor
        self.negate = negate

    def describe(self) -> str:
        return f"bool({self.tensor.describe()})"


class UserObjectVariable(ObjectVariable):
    """Any other object (a model instance, a class): attribute reads are guarded and wrapped."""


class UnknownVariable(ObjectVariable):
    """A value of a type capture does not model (numpy array, dict...): any use breaks."""


class NumpyOfVariable(UnknownVariable):
    """`t.numpy()` of a graph tensor that does not require grad: rebuilt after the graph as
    eager's `t.numpy()` (the array shares the tensor's memory); any use in the code breaks."""

    def __init__(self, tensor):
        super().__init__(None, None)
        self.tensor = tensor

    def describe(self) -> str:
        return f"{self.tensor.describe()}.numpy()"
