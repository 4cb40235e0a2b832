"""A small `torch.nn.Module`: parameters, buffers, submodules, `__call__` -> `forward`.

Enough for models built from `Linear`, activations and the containers of `containers.py`,
trained with `eager.optim` and compiled whole with `capture.compile(model)`. Parameters, buffers
and submodules are registered in ordered dicts by `__setattr__` *and* kept as ordinary instance
attributes, so attribute reads are plain Python (cheap eagerly, and readable by capture's
guards as `self.fc.weight`). State dicts (`state_dict`, `load_state_dict`), conversions
(`to`, `float`, `cuda`...: parameters keep their identity, their data is replaced) and the
traversal methods follow `torch.nn.Module`; `Linear` follows `torch.nn.Linear` (`weight` of
shape (out_features, in_features), initialised U(-1/sqrt(in), 1/sqrt(in))).
Hooks (forward, forward-pre, full backward, state-dict) come from `module_hooks.py`.
Touches `eager` only.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping
from typing import NamedTuple

from ir import dtypes as D

from ..creation import empty_like
from ..dispatch import FUNCTIONS, PLAIN_SUBCLASSES
from ..grad_mode import no_grad
from ..random import rand
from ..tensor import Tensor
from .module_hooks import ModuleHooks


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

    def __deepcopy__(self, memo):
        """A new Parameter with copied data and the same `requires_grad`, without `.grad`
        (as `torch.nn.Parameter.__deepcopy__`)."""
        return self._deepcopy_tensor(memo, with_grad=False)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + Tensor.__repr__(self)


PLAIN_SUBCLASSES.add(Parameter)  # ops treat it as a Tensor (eager.dispatch's fast paths)


class _IncompatibleKeys(NamedTuple):
    """What `Module.load_state_dict` returns: the keys missing from and unexpected in the
    state dict (`torch.nn.modules.module._IncompatibleKeys`)."""

    missing_keys: list
    unexpected_keys: list

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return f"_IncompatibleKeys(missing_keys={self.missing_keys}, " \
               f"unexpected_keys={self.unexpected_keys})"

    __str__ = __repr__


def _typename(value) -> str:
    return value.type() if isinstance(value, Tensor) else type(value).__name__


def _check_name(kind: str, name) -> None:
    """`register_*`'s checks on a new attribute name (KeyError / TypeError as PyTorch)."""
    if not isinstance(name, str):
        raise TypeError(f"{kind} name should be a string. Got {type(name).__name__}")
    if "." in name:
        raise KeyError(f"{kind} name can't contain \".\", got: {name}")
    if name == "":
        raise KeyError(f"{kind} name can't be empty string \"\"")


def _parse_to(args, kwargs):
    """`Module.to`'s arguments -> (device, dtype): `to(device, dtype)`, `to(dtype)`,
    `to(tensor)`, keywords `device=`, `dtype=`, `non_blocking=`, `memory_format=`."""
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, D.DType) or (isinstance(a, type) and a is not str):
            dtype = a
        elif a is not None and not isinstance(a, bool):
            device = a
    if dtype is not None:
        dtype = D.to_dtype(dtype)
        if not (dtype.is_floating_point or dtype.is_complex):
            raise TypeError("nn.Module.to only accepts floating point or complex dtypes, but "
                            f"got desired dtype={dtype}")
    return device, dtype


class Module(ModuleHooks):
    """Base class of models (`torch.nn.Module`): subclasses set attributes in `__init__` and
    define `forward`; calling the module calls `forward` (through the hooks of
    `module_hooks.py` when there are any)."""

    def __init__(self):
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        self._init_hooks()

    # ---- attributes and registration

    def __setattr__(self, name, value):
        d = self.__dict__
        if "_parameters" not in d:  # plain values may come first (HF's `self.offset = 2`)
            kind = "parameters" if isinstance(value, Parameter) else "module" if \
                isinstance(value, Module) else "buffers" if getattr(value, "_is_buffer", False) \
                else None
            if kind is not None:
                raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        if isinstance(value, Parameter):
            self._forget(name, keep=self._parameters)  # a replaced one keeps its place
            self.register_parameter(name, value)
        elif getattr(value, "_is_buffer", False):  # nn.Buffer: registered as a buffer
            self._forget(name, keep=self._buffers)
            self.register_buffer(name, value, value.persistent)
        elif name in self._parameters:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as parameter '{name}' "
                                "(torch.nn.Parameter or None expected)")
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self._forget(name, keep=self._modules)  # a replaced child keeps its place
            self._modules[name] = value
            object.__setattr__(self, name, value)
        elif name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign '{_typename(value)}' as child module '{name}' "
                                "(torch.nn.Module or None expected)")
            self._modules[name] = value
            object.__setattr__(self, name, value)
        elif name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{_typename(value)}' as buffer '{name}' "
                                "(torch.Tensor or None expected)")
            self._buffers[name] = value
            object.__setattr__(self, name, value)
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, keep=None) -> None:
        for table in (self._parameters, self._buffers, self._modules):
            if table is not keep:
                table.pop(name, None)
        self._non_persistent_buffers_set.discard(name)
        self.__dict__.pop(name, None)

    def __getattr__(self, name):
        # only reached when normal lookup fails: registered state lives in __dict__ too
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        d = self.__dict__
        if name in d.get("_parameters", ()) or name in d.get("_buffers", ()) or \
                name in d.get("_modules", ()):
            self._forget(name)
        else:
            object.__delattr__(self, name)

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True):
        """Register `tensor` as state that is not a parameter (running statistics...);
        non-persistent buffers are left out of `state_dict` (`torch.nn.Module.register_buffer`).
        KeyError when `name` is taken by another attribute, TypeError for a non-tensor."""
        if "_buffers" not in self.__dict__:
            raise AttributeError("cannot assign buffer before Module.__init__() call")
        _check_name("buffer", name)
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{_typename(tensor)}' object to buffer '{name}' "
                            "(torch Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)
        object.__setattr__(self, name, tensor)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register `param` (a Parameter or None) under `name`
        (`torch.nn.Module.register_parameter`); KeyError / TypeError / ValueError as PyTorch."""
        if "_parameters" not in self.__dict__:
            raise AttributeError("cannot assign parameter before Module.__init__() call")
        _check_name("parameter", name)
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute '{name}' already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{_typename(param)}' object to parameter '{name}' "
                            "(torch.nn.Parameter or None required)")
        if param is not None and param.grad_fn is not None:
            raise ValueError(f"Cannot assign non-leaf Tensor to parameter '{name}'. Model "
                             f"parameters must be created explicitly. To express '{name}' as a "
                             "function of another Tensor, compute the value in the forward() "
                             "method.")
        self._parameters[name] = param
        object.__setattr__(self, name, param)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a child module (`torch.nn.Module.add_module`)."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        _check_name("module", name)
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute '{name}' already exists")
        self._modules[name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    def _get_name(self) -> str:
        return type(self).__name__

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path `target` ("" is self); AttributeError as PyTorch."""
        if target == "":
            return self
        mod = self
        for item in target.split("."):
            if not hasattr(mod, item):
                raise AttributeError(mod._get_name() + " has no attribute `" + item + "`")
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                raise AttributeError("`" + item + "` is not an nn.Module")  # noqa: TRY004
        return mod

    def _owner_of(self, target: str):
        """(module, attribute name) of dotted path `target`; AttributeError as PyTorch."""
        mod_path, _, name = target.rpartition(".")
        mod = self.get_submodule(mod_path)
        if not hasattr(mod, name):
            raise AttributeError(mod._get_name() + " has no attribute `" + name + "`")
        return mod, name

    def get_parameter(self, target: str) -> Parameter:
        """The parameter at dotted path `target` ("fc1.weight")."""
        mod, name = self._owner_of(target)
        param = getattr(mod, name)
        if not isinstance(param, Parameter):
            raise AttributeError("`" + name + "` is not an nn.Parameter")  # noqa: TRY004
        return param

    def get_buffer(self, target: str) -> Tensor:
        """The buffer at dotted path `target`."""
        mod, name = self._owner_of(target)
        if name not in mod._buffers:
            raise AttributeError("`" + name + "` is not a buffer")
        return getattr(mod, name)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    def __call__(self, *args, **kwargs):
        if self._wick_has_hooks:  # the one test of the fast path (module_hooks.py)
            return self._call_with_hooks(args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- traversal

    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """(dotted name, module) pairs, self first, each module once."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self):
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        for _, m in self.named_children():
            yield m

    def _named_members(self, table, prefix, recurse, remove_duplicate):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) \
            if recurse else [(prefix, self)]
        for mp, m in mods:
            for name, v in getattr(m, table).items():
                if v is None or (remove_duplicate and id(v) in seen):
                    continue
                seen.add(id(v))
                yield (f"{mp}.{name}" if mp else name), v

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn):
        """Call `fn` on every submodule (children first) and on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- state dicts

    def state_dict(self, *args, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of parameters and persistent buffers by dotted name, module by module
        (each module's parameters, then its buffers, then its children), values detached
        unless `keep_vars` (`torch.nn.Module.state_dict`)."""
        if destination is None:
            destination = OrderedDict()
        for hook in tuple(self._state_dict_pre_hooks.values()):
            hook(self, prefix, keep_vars)
        for name, p in self._parameters.items():
            if p is not None:
                destination[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(destination=destination, prefix=prefix + name + ".",
                             keep_vars=keep_vars)
        for hook in tuple(self._state_dict_hooks.values()):
            res = hook(self, destination, prefix, {})
            if res is not None:
                destination = res
        return destination

    def _load_from_state_dict(self, state_dict, prefix, local_metadata, strict, missing_keys,
                              unexpected_keys, error_msgs):
        """Copy this module's own entries of `state_dict` (keys `prefix + name`) into its
        parameters and persistent buffers, appending to the lists what does not fit."""
        assign = local_metadata.get("assign_to_params_buffers", False)
        local = {k: v for k, v in self._parameters.items() if v is not None}
        local.update((k, v) for k, v in self._buffers.items()
                     if v is not None and k not in self._non_persistent_buffers_set)
        for name, param in local.items():
            key = prefix + name
            if key not in state_dict:
                if strict:
                    missing_keys.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                error_msgs.append(f'While copying the parameter named "{key}", expected '
                                  "torch.Tensor or Tensor-like object from checkpoint but "
                                  f"received {type(value)}")
                continue
            if tuple(value.shape) != tuple(param.shape):
                error_msgs.append(f"size mismatch for {key}: copying a param with shape "
                                  f"{value.shape} from checkpoint, the shape in current model "
                                  f"is {param.shape}.")
                continue
            try:
                with no_grad():
                    if not assign:
                        param.copy_(value)
                    elif isinstance(param, Parameter) and not isinstance(value, Parameter):
                        setattr(self, name, Parameter(value, param.requires_grad))
                    else:
                        setattr(self, name, value)
            except Exception as ex:  # noqa: BLE001  (reported like PyTorch, with the key)
                error_msgs.append(f'While copying the parameter named "{key}", whose '
                                  f"dimensions in the model are {param.shape} and whose "
                                  f"dimensions in the checkpoint are {value.shape}, an "
                                  f"exception occurred : {ex.args}.")
        if strict:
            for key in state_dict:
                if not key.startswith(prefix):
                    continue
                head, dot, _ = key[len(prefix):].partition(".")
                if (dot and head not in self._modules) or (not dot and head not in local):
                    unexpected_keys.append(key)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy `state_dict`'s tensors into the parameters and buffers (under no_grad; with
        `assign=True` the tensors themselves are set, as Parameters where parameters were).
        Returns `_IncompatibleKeys(missing_keys, unexpected_keys)`; RuntimeError "Error(s) in
        loading state_dict for Net: ..." on a size mismatch, or on missing / unexpected keys
        when `strict` (`torch.nn.Module.load_state_dict`)."""
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []
        meta = {"assign_to_params_buffers": assign}

        def load(module, prefix):
            local = {k: v for k, v in state_dict.items() if k.startswith(prefix)}
            for hook in tuple(module._load_state_dict_pre_hooks.values()):
                hook(module, local, prefix, meta, True, missing, unexpected, errors)
            module._load_from_state_dict(local, prefix, meta, True, missing, unexpected,
                                         errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, prefix + name + ".")

        load(self, "")
        keys = _IncompatibleKeys(missing, unexpected)
        for module in self.modules():
            for hook in tuple(module._load_state_dict_post_hooks.values()):
                hook(module, keys)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in unexpected) + ". ")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: "
                              + ", ".join(f'"{k}"' for k in missing) + ". ")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {self._get_name()}:\n\t"
                               + "\n\t".join(errors))
        return _IncompatibleKeys(missing, unexpected)

    # ---- conversions (parameters keep their identity: `param.data = fn(param)`)

    def _apply(self, fn, recurse: bool = True):
        if recurse:
            for m in self.children():
                m._apply(fn)
        for p in self._parameters.values():
            if p is None:
                continue
            with no_grad():
                p.data = fn(p)
                if p.grad is not None:
                    p.grad.data = fn(p.grad)
        for name, b in self._buffers.items():
            if b is not None:
                with no_grad():
                    b = fn(b)
                self._buffers[name] = b
                object.__setattr__(self, name, b)
        return self

    def to(self, *args, **kwargs):
        """`to(device)`, `to(dtype)`, `to(device, dtype)`, `to(tensor)`: moves parameters and
        buffers; a dtype applies to floating-point and complex ones only (TypeError for an
        integer dtype). In place; returns self (`torch.nn.Module.to`)."""
        device, dtype = _parse_to(args, kwargs)

        def convert(t):
            keep = dtype if (t.is_floating_point() or t.is_complex()) else None
            return t.to(device=device, dtype=keep)

        return self._apply(convert)

    def to_empty(self, *, device, recurse: bool = True):
        """Parameters and buffers replaced by uninitialised tensors of their shapes and dtypes
        on `device` (here zeros), their values not copied: how a module built on the meta
        device gets memory (`torch.nn.Module.to_empty`). In place; returns self."""
        return self._apply(lambda t: empty_like(t, device=device), recurse)

    def _float_cast(self, dtype):
        return self._apply(lambda t: t.to(dtype) if t.is_floating_point() else t)

    def float(self):
        return self._float_cast(D.float32)

    def double(self):
        return self._float_cast(D.float64)

    def half(self):
        return self._float_cast(D.float16)

    def bfloat16(self):
        return self._float_cast(D.bfloat16)

    def type(self, dst_type):
        """Cast every parameter and buffer to `dst_type` (integer ones too)."""
        return self._apply(lambda t: t.type(dst_type))

    def cpu(self):
        return self._apply(lambda t: t.cpu())

    def cuda(self, device=None):
        return self._apply(lambda t: t.cuda(device))

    # ---- modes and gradients

    def train(self, mode: bool = True):
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")  # noqa: TRY004
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self):
        return self.train(False)

    def compile(self, *args, **kwargs) -> None:
        """`torch.nn.Module.compile`: compile this module's call in place, with
        `torch.compile`'s arguments. Calling the module then runs the compiled forward; the
        module, its parameters and state_dict keys stay as they are (no `_orig_mod.` prefix,
        unlike `torch.compile(module)`). The compiled forward is `_compiled_call_impl`."""
        from .. import compile as compile_fn  # lazy: eager.compile imports capture on use

        self._compiled_call_impl = compile_fn(self.forward, *args, **kwargs)
        self.forward = self._compiled_call_impl

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                p.grad = p.grad.detach()
                p.grad.zero_()

    def requires_grad_(self, requires_grad: bool = True):
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        """PyTorch's layout: a one-line `Name(extra)` without children, else the extra_repr
        lines then "(name): child" lines, indented by two."""
        extra = self.extra_repr()
        lines = (extra.split("\n") if extra else []) + [
            f"({name}): " + repr(m).replace("\n", "\n  ") for name, m in self._modules.items()]
        if len(lines) == 1 and not self._modules:  # one extra line, no children
            return f"{self._get_name()}({lines[0]})"
        return f"{self._get_name()}(" + ("\n  " + "\n  ".join(lines) + "\n" if lines else "") + ")"


class Linear(Module):
    """y = x @ weight.T + bias (`torch.nn.Linear`): x (*, in_features) -> (*, out_features);
    `weight` (out_features, in_features), `bias` (out_features) on `device` in `dtype`."""

    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.weight = Parameter(self._uniform((out_features, in_features), device, dtype))
        self.bias = Parameter(self._uniform((out_features,), device, dtype)) if bias else None

    def _uniform(self, shape, device, dtype):
        """U(-1/sqrt(in_features), 1/sqrt(in_features)) samples (0 when in_features is 0): the
        distribution of PyTorch's kaiming_uniform_(a=sqrt(5)) on the weight, and of the bias."""
        bound = 1.0 / math.sqrt(self.in_features) if self.in_features else 0.0
        return rand(*shape, dtype=dtype, device=device) * (2 * bound) - bound

    def reset_parameters(self) -> None:
        """Draw weight and bias again, in place (none drawn on meta)."""
        with no_grad():
            for p in (self.weight, self.bias):
                if p is not None:
                    p.copy_(self._uniform(tuple(p.shape), p.device, p.dtype))

    def forward(self, input):
        return FUNCTIONS["linear"](input, self.weight, self.bias)  # (F.linear, as PyTorch's)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, " \
               f"bias={self.bias is not None}"
