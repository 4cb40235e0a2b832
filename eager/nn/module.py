"""A small `torch.nn.Module`: parameters, buffers, submodules, `__call__` -> `forward`.

Enough for models built from `Linear`, activations, `Sequential` and `ModuleList`, trained
with `eager.optim` and compiled whole with `capture.compile(model)`. Parameters, buffers and
submodules are registered in ordered dicts by `__setattr__` *and* kept as ordinary instance
attributes, so attribute reads are plain Python (cheap eagerly, and readable by capture's
guards as `self.fc.weight`). Semantics and names follow `torch.nn.Module` / `torch.nn.Linear`
(`weight` of shape (out_features, in_features), initialised U(-1/sqrt(in), 1/sqrt(in))).
Touches `eager` only.
"""

from __future__ import annotations

import math
from collections import OrderedDict

from ..dispatch import PLAIN_SUBCLASSES
from ..tensor import Tensor


class Parameter(Tensor):
    """A Tensor that is a module parameter: `requires_grad=True` by default
    (`torch.nn.Parameter`). `Parameter(t)` shares `t`'s array."""

    __slots__ = ()

    def __new__(cls, data=None, requires_grad=True):
        t = Tensor.__new__(cls)
        arr = data._data if isinstance(data, Tensor) else Tensor(data if data is not None
                                                                 else [])._data
        t._init(arr, requires_grad)
        return t

    def __init__(self, data=None, requires_grad=True):
        pass

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)


PLAIN_SUBCLASSES.add(Parameter)  # ops treat it as a Tensor (eager.dispatch's fast paths)


class Module:
    """Base class of models (`torch.nn.Module`): subclasses set attributes in `__init__` and
    define `forward`; calling the module calls `forward`."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign before Module.__init__() call")
        for table in (self._parameters, self._buffers, self._modules):
            table.pop(name, None)
        if isinstance(value, Parameter):
            self._parameters[name] = value
        elif isinstance(value, Module):
            self._modules[name] = value
        object.__setattr__(self, name, value)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True):
        """A tensor that is state but not a parameter (running statistics...)."""
        self.__setattr__(name, tensor)
        self._buffers[name] = tensor

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        self.__setattr__(name, param)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ---- traversal

    def named_modules(self, prefix: str = ""):
        yield prefix, self
        for name, m in self._modules.items():
            yield from m.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def children(self):
        yield from self._modules.values()

    def named_parameters(self, prefix: str = "", recurse: bool = True):
        seen = set()
        mods = self.named_modules(prefix) if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, p in m._parameters.items():
                if p is not None and id(p) not in seen:
                    seen.add(id(p))
                    yield (f"{mp}.{name}" if mp else name), p

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = ""):
        for mp, m in self.named_modules(prefix):
            for name, b in m._buffers.items():
                if b is not None:
                    yield (f"{mp}.{name}" if mp else name), b

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    def state_dict(self) -> OrderedDict:
        out = OrderedDict(self.named_parameters())
        out.update(self.named_buffers())
        return out

    # ---- modes and gradients

    def train(self, mode: bool = True):
        for m in self.modules():
            object.__setattr__(m, "training", bool(mode))
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            p.grad = None

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad = requires_grad
        return self

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__}({self.extra_repr()}"]
        for name, m in self._modules.items():
            lines.append(f"  ({name}): " + repr(m).replace("\n", "\n  "))
        return lines[0] + ")" if len(lines) == 1 else "\n".join(lines) + "\n)"


class Linear(Module):
    """y = x @ weight.T + bias (`torch.nn.Linear`): x (*, in_features) -> (*, out_features)."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, dtype=None):
        super().__init__()
        from ..random import rand

        self.in_features, self.out_features = in_features, out_features
        bound = 1.0 / math.sqrt(in_features) if in_features else 0.0
        w = rand(out_features, in_features, dtype=dtype) * (2 * bound) - bound
        self.weight = Parameter(w)
        self.bias = Parameter(rand(out_features, dtype=dtype) * (2 * bound) - bound) \
            if bias else None

    def forward(self, input):
        out = input @ self.weight.t()
        if self.bias is not None:
            out = out + self.bias
        return out

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self.bias is not None}"


class ReLU(Module):
    """max(x, 0) (`torch.nn.ReLU`)."""

    def forward(self, input):
        from .. import relu

        return relu(input)


class GELU(Module):
    """x * Phi(x) (`torch.nn.GELU`), exact or `approximate="tanh"`."""

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        from .functional import gelu

        return gelu(input, approximate=self.approximate)


class ModuleList(Module):
    """A list of submodules, registered as "0", "1", ... (`torch.nn.ModuleList`)."""

    __wick_sequence__ = True  # capture unrolls `for m in self.layers`

    def __init__(self, modules=()):
        super().__init__()
        for m in modules:
            self.append(m)

    def append(self, module: Module):
        self.__setattr__(str(len(self._modules)), module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def __getitem__(self, i):
        items = list(self._modules.values())
        if isinstance(i, slice):
            return type(self)(items[i])
        return items[i]

    def __iter__(self):
        return iter(list(self._modules.values()))


class Sequential(ModuleList):
    """Modules applied in order (`torch.nn.Sequential`)."""

    def __init__(self, *modules):
        super().__init__(modules)

    def forward(self, input):
        for m in self:
            input = m(input)
        return input
