"""`torch.nn`'s containers: `ModuleList`, `Sequential`, `ModuleDict`, `ParameterList`,
`ParameterDict`.

They are `Module`s whose entries are registered submodules or parameters (named "0", "1", ...
for the lists, by key for the dicts), so `state_dict`, `parameters()`, `to()` and deepcopy see
them. Semantics follow the PyTorch documentation of each class. Touches `eager.nn.module` only.
"""

from __future__ import annotations

import operator
from collections import OrderedDict
from collections.abc import Mapping

from ..tensor import Tensor
from .module import Module, Parameter


def _index(i, n: int) -> int:
    i = operator.index(i)
    if not -n <= i < n:
        raise IndexError(f"index {i} is out of range")
    return i + n if i < 0 else i


class ModuleList(Module):
    """A list of submodules, registered as "0", "1", ... (`torch.nn.ModuleList`)."""

    __wick_sequence__ = True  # capture unrolls `for m in self.layers`

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def append(self, module: Module):
        self.add_module(str(len(self._modules)), module)
        return self

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._reset(items)

    def _reset(self, items) -> None:
        for name in list(self._modules):
            self._forget(name)
        for m in items:
            self.append(m)

    def __len__(self) -> int:
        return len(self._modules)

    def __getitem__(self, i):
        items = list(self._modules.values())
        if isinstance(i, slice):
            return type(self)(items[i])
        return items[_index(i, len(items))]

    def __setitem__(self, i, module) -> None:
        # the i-th registered name (a Sequential built from an OrderedDict keeps its own names)
        setattr(self, list(self._modules)[_index(i, len(self))], module)

    def __delitem__(self, i) -> None:
        items = list(self._modules.values())
        del items[i if isinstance(i, slice) else _index(i, len(items))]
        self._reset(items)

    def __iter__(self):
        return iter(list(self._modules.values()))

    def __repr__(self) -> str:
        """PyTorch's ModuleList repr: runs of equal children compressed to
        "(i-j): n x child"."""
        reprs = [repr(m) for m in self]
        if not reprs:
            return self._get_name() + "()"
        runs = []  # [start, end, repr]
        for i, r in enumerate(reprs):
            if runs and runs[-1][2] == r:
                runs[-1][1] = i
            else:
                runs.append([i, i, r])
        lines = [(f"({a}): {r}" if a == b else f"({a}-{b}): {b - a + 1} x {r}")
                 .replace("\n", "\n  ") for a, b, r in runs]
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"

    def __add__(self, other) -> ModuleList:
        return ModuleList(list(self) + list(other))


class Sequential(ModuleList):
    """Modules applied in order (`torch.nn.Sequential`): `Sequential(m1, m2, ...)` names them
    "0", "1", ...; `Sequential(OrderedDict(name=module, ...))` keeps the names."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, m)
        else:
            self.extend(modules)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Sequential(OrderedDict(list(self._modules.items())[i]))
        return super().__getitem__(i)

    __repr__ = Module.__repr__  # (children by name, uncompressed, as PyTorch's Sequential)

    def forward(self, input):
        for m in self:
            input = m(input)
        return input


class ModuleDict(Module):
    """An ordered dict of submodules (`torch.nn.ModuleDict`): `d[key]`, `d[key] = m`,
    `del d[key]`, `len`, `iter` (keys), `in`, `keys`, `values`, `items`, `update`, `pop`,
    `clear`."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]
        self.__dict__.pop(key, None)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(list(self._modules))

    def __contains__(self, key) -> bool:
        return key in self._modules

    def keys(self):
        return self._modules.keys()

    def values(self):
        return self._modules.values()

    def items(self):
        return self._modules.items()

    def clear(self) -> None:
        for key in list(self._modules):
            del self[key]

    def pop(self, key: str) -> Module:
        v = self[key]
        del self[key]
        return v

    def update(self, modules) -> None:
        """Add (key, module) pairs from a mapping or an iterable of pairs."""
        pairs = modules.items() if isinstance(modules, Mapping) else modules
        for j, pair in enumerate(pairs):
            if isinstance(pair, (str, Module)) or len(pair) != 2:
                raise ValueError(f"ModuleDict update sequence element #{j} has length "
                                 f"{len(pair) if hasattr(pair, '__len__') else 1}; 2 is "
                                 "required")
            self[pair[0]] = pair[1]


def _as_parameter(value):
    """Containers store tensors as Parameters (as PyTorch's ParameterList/Dict)."""
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value)
    return value


class ParameterList(Module):
    """A list of parameters, registered as "0", "1", ... (`torch.nn.ParameterList`); plain
    tensors given to it become Parameters."""

    def __init__(self, values=None):
        super().__init__()
        self._size = 0
        if values is not None:
            self.extend(values)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ParameterList([self[j] for j in range(len(self))[i]])
        return getattr(self, str(_index(i, len(self))))

    def __setitem__(self, i, value) -> None:
        setattr(self, str(_index(i, len(self))), _as_parameter(value))

    def __iter__(self):
        return iter([self[i] for i in range(len(self))])

    def append(self, value):
        self._size += 1
        self[self._size - 1] = value
        return self

    def extend(self, values):
        for v in values:
            self.append(v)
        return self

    def extra_repr(self) -> str:
        return ", ".join(f"({i}): Parameter of shape {tuple(p.shape)}"
                         for i, p in enumerate(self))


class ParameterDict(Module):
    """An ordered dict of parameters (`torch.nn.ParameterDict`); plain tensors given to it
    become Parameters. `d[key]`, `d[key] = p`, `del d[key]`, `len`, `iter` (keys), `in`,
    `keys`, `values`, `items`, `get`, `pop`, `update`, `clear`."""

    def __init__(self, parameters=None):
        super().__init__()
        self._keys: dict = {}
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        if key not in self._keys:
            raise KeyError(key)
        return getattr(self, key)

    def __setitem__(self, key: str, value) -> None:
        self._keys[key] = None
        setattr(self, key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._keys[key]
        delattr(self, key)

    def __len__(self) -> int:
        return len(self._keys)

    def __iter__(self):
        return iter(list(self._keys))

    def __contains__(self, key) -> bool:
        return key in self._keys

    def keys(self):
        return list(self._keys)

    def values(self):
        return [self[k] for k in self._keys]

    def items(self):
        return [(k, self[k]) for k in self._keys]

    def get(self, key: str, default=None):
        return self[key] if key in self._keys else default

    def pop(self, key: str):
        v = self[key]
        del self[key]
        return v

    def clear(self) -> None:
        for k in list(self._keys):
            del self[k]

    def update(self, parameters) -> None:
        pairs = parameters.items() if isinstance(parameters, Mapping) else parameters
        for k, v in pairs:
            self[k] = v

    def extra_repr(self) -> str:
        return ", ".join(f"({k}): Parameter of shape {tuple(p.shape)}" for k, p in self.items())
