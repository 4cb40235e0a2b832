"""Lazy modules of `torch.nn` (LazyLinear, LazyConv*, LazyConvTranspose*, LazyBatchNorm*,
LazyInstanceNorm*) whose input sizes are inferred on the first call, their placeholders
`UninitializedParameter` / `UninitializedBuffer`, and the small names `nn.Buffer`,
`nn.Container` and `nn.factory_kwargs`.

As in PyTorch (torch/nn/modules/lazy.py), a lazy module holds uninitialized tensors, a
forward pre-hook infers the sizes from the first input, materializes them, runs the
module's `reset_parameters` and turns the module into its non-lazy class (`cls_to_become`):
`LazyLinear(8)` becomes a `Linear(in_features, 8)` after its first call.
Touches `eager` only.
"""

from __future__ import annotations

import warnings

from ir import dtypes as D

from ..creation import empty, tensor, zeros
from ..dispatch import PLAIN_SUBCLASSES
from ..grad_mode import no_grad
from ..tensor import Tensor
from . import conv_layers as CL
from . import conv_pool_layers as CPL
from . import normalization as NL
from .conv_layers import _uniform
from .module import Linear, Module, Parameter

__all__ = ["Buffer", "Container", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d",
           "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d",
           "LazyConvTranspose2d", "LazyConvTranspose3d", "LazyInstanceNorm1d",
           "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LazyModuleMixin",
           "UninitializedBuffer", "UninitializedParameter", "factory_kwargs"]


# ---------------------------------------------------------------- placeholders


class UninitializedTensorMixin:
    """A tensor without data yet: `materialize(shape)` gives it an (uninitialized) array of
    that shape and turns it into `cls_to_become`; reading its shape before raises
    RuntimeError, as PyTorch."""

    __slots__ = ()
    cls_to_become = Tensor

    def materialize(self, shape, device=None, dtype=None) -> None:
        """Allocate the data (zeros) of `shape` (int or tuple) and become `cls_to_become`."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        old = Tensor.__getattribute__(self, "_data")
        like = Tensor._make(old)
        dtype = like.dtype if dtype is None else dtype
        device = like.device if device is None else device
        self._data = zeros(shape, dtype=dtype, device=device)._data
        self.__class__ = self.cls_to_become

    @property
    def shape(self):
        raise RuntimeError("Can't access the shape of an uninitialized parameter or buffer. "
                           "This error usually happens in `load_state_dict` when trying to "
                           "load an uninitialized parameter into an initialized one. Call "
                           "`forward` to initialize the parameters before accessing their "
                           "attributes.")

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


def _empty_like_spec(device, dtype):
    return empty(0, dtype=dtype, device=device)


class UninitializedParameter(UninitializedTensorMixin, Parameter):
    """A Parameter whose shape is not known yet (`torch.nn.UninitializedParameter`)."""

    __slots__ = ()
    cls_to_become = Parameter

    def __new__(cls, requires_grad=True, device=None, dtype=None):
        t = Tensor.__new__(cls)
        t._init(_empty_like_spec(device, dtype)._data, requires_grad)
        return t

    def __init__(self, requires_grad=True, device=None, dtype=None):
        pass


class UninitializedBuffer(UninitializedTensorMixin, Tensor):
    """A buffer whose shape is not known yet (`torch.nn.UninitializedBuffer`)."""

    __slots__ = ()
    cls_to_become = Tensor

    def __new__(cls, requires_grad=False, device=None, dtype=None):
        t = Tensor.__new__(cls)
        t._init(_empty_like_spec(device, dtype)._data, requires_grad)
        return t

    def __init__(self, requires_grad=False, device=None, dtype=None):
        pass


class Buffer(Tensor):
    """A Tensor marked as module state (`torch.nn.Buffer`): assigned as a module attribute
    it is registered with `register_buffer(name, value, persistent)`."""

    _is_buffer = True

    def __new__(cls, data=None, *, persistent=True):
        data = empty(0) if data is None else data
        t = Tensor.__new__(cls)
        t._init(data._data, data.requires_grad)
        t.persistent = persistent
        return t

    def __init__(self, data=None, *, persistent=True):
        pass


PLAIN_SUBCLASSES.update({UninitializedParameter, UninitializedBuffer, Buffer})


# ---------------------------------------------------------------- lazy modules


class LazyModuleMixin:
    """Infer parameter shapes from the first input (`torch.nn.modules.lazy.LazyModuleMixin`):
    a forward pre-hook calls `initialize_parameters(*args, **kwargs)`, then the module becomes
    `cls_to_become`."""

    cls_to_become = None

    def _lazy_setup(self) -> None:
        self._initialize_hook = self.register_forward_pre_hook(self._infer_parameters,
                                                               with_kwargs=True)

    def _apply(self, fn, recurse: bool = True):
        """Module._apply (`.double()`, `.to(...)`), keeping uninitialized buffers as
        placeholders of the new dtype/device (parameters keep their class already)."""
        lazy = [n for n, b in self._buffers.items() if isinstance(b, UninitializedTensorMixin)]
        out = super()._apply(fn, recurse)
        for name in lazy:
            new = self._buffers[name]
            placeholder = UninitializedBuffer(new.requires_grad, new.device, new.dtype)
            self._buffers[name] = placeholder
            object.__setattr__(self, name, placeholder)
        return out

    def _load_from_state_dict(self, state_dict, prefix, *args):
        """Placeholders with an entry in `state_dict` are materialized to its shape first,
        so a checkpoint loads into a lazy module before any call (torch's `_lazy_load_hook`).
        """
        tensors = list(self._parameters.items()) + list(self._buffers.items())
        for name, t in tensors:
            value = state_dict.get(prefix + name)
            if isinstance(t, UninitializedTensorMixin) and value is not None and \
                    not isinstance(value, UninitializedTensorMixin):
                with no_grad():
                    t.materialize(tuple(value.shape))
        return super()._load_from_state_dict(state_dict, prefix, *args)

    def has_uninitialized_params(self) -> bool:
        tensors = list(self._parameters.values()) + list(self._buffers.values())
        return any(isinstance(t, UninitializedTensorMixin) for t in tensors)

    def initialize_parameters(self, *args, **kwargs) -> None:
        raise NotImplementedError(f"initialize_parameters is not implemented for "
                                  f"{type(self).__name__}")

    @staticmethod
    def _infer_parameters(module, args, kwargs=None):
        module.initialize_parameters(*args, **(kwargs or {}))
        if module.has_uninitialized_params():
            raise RuntimeError(f"module {module._get_name()} has not been fully initialized")
        module._initialize_hook.remove()
        del module.__dict__["_initialize_hook"]
        if module.cls_to_become is not None:
            module.__class__ = module.cls_to_become


class LazyLinear(LazyModuleMixin, Linear):
    """A Linear whose in_features is inferred from the first input's last dim
    (`torch.nn.LazyLinear`); becomes `Linear` after the first call."""

    cls_to_become = Linear

    def __init__(self, out_features: int, bias: bool = True, device=None, dtype=None):
        Linear.__init__(self, 0, 0, False, dtype=dtype)
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_features = out_features
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._lazy_setup()

    def reset_parameters(self) -> None:
        """U(-1/sqrt(in_features), 1/sqrt(in_features)) for weight and bias (Linear's)."""
        bound = 1.0 / self.in_features ** 0.5 if self.in_features else 0.0
        with no_grad():
            for p in (self.weight, self.bias):
                if p is not None:
                    p.copy_(_uniform(tuple(p.shape), bound, p.dtype, p.device))

    def initialize_parameters(self, input) -> None:
        if self.has_uninitialized_params():
            with no_grad():
                self.in_features = input.shape[-1]
                self.weight.materialize((self.out_features, self.in_features))
                if self.bias is not None:
                    self.bias.materialize((self.out_features,))
                self.reset_parameters()


class _LazyConvXdMixin(LazyModuleMixin):
    _transposed = False

    def _lazy_params(self, out_channels, bias, device, dtype) -> None:
        self.weight = UninitializedParameter(device=device, dtype=dtype)
        self.out_channels = out_channels
        if bias:
            self.bias = UninitializedParameter(device=device, dtype=dtype)
        self._lazy_setup()

    def initialize_parameters(self, input, *args, **kwargs) -> None:
        if not self.has_uninitialized_params():
            return
        nd = self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise RuntimeError(f"Expected {nd + 1}D (unbatched) or {nd + 2}D (batched) input "
                               f"to {type(self).__name__}, but got input of size: "
                               f"{list(input.shape)}")
        self.in_channels = input.shape[1] if input.ndim == nd + 2 else input.shape[0]
        if self.in_channels % self.groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if self._transposed:
            shape = (self.in_channels, self.out_channels // self.groups)
        else:
            shape = (self.out_channels, self.in_channels // self.groups)
        with no_grad():
            self.weight.materialize(shape + tuple(self.kernel_size))
            if self.bias is not None:
                self.bias.materialize((self.out_channels,))
            self.reset_parameters()


def _lazy_conv(name, base, nd):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, padding_mode="zeros", device=None, dtype=None):
        base.__init__(self, 0, 0, kernel_size, stride, padding, dilation, groups, False,
                      padding_mode, device, dtype)
        self._lazy_params(out_channels, bias, device, dtype)

    doc = (f"A {base.__name__} whose in_channels is inferred from the first input "
           f"(`torch.nn.{name}`); becomes `{base.__name__}` after the first call.")
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "__doc__": doc,
                                                  "cls_to_become": base, "_nd": nd,
                                                  "__module__": __name__})


def _lazy_conv_transpose(name, base, nd):
    def __init__(self, out_channels, kernel_size, stride=1, padding=0, output_padding=0,
                 groups=1, bias=True, dilation=1, padding_mode="zeros", device=None,
                 dtype=None):
        base.__init__(self, 0, 0, kernel_size, stride, padding, output_padding, groups, False,
                      dilation, padding_mode, device, dtype)
        self._lazy_params(out_channels, bias, device, dtype)

    doc = (f"A {base.__name__} whose in_channels is inferred from the first input "
           f"(`torch.nn.{name}`); becomes `{base.__name__}` after the first call.")
    return type(name, (_LazyConvXdMixin, base), {"__init__": __init__, "__doc__": doc,
                                                  "cls_to_become": base, "_nd": nd,
                                                  "_transposed": True, "__module__": __name__})


LazyConv1d = _lazy_conv("LazyConv1d", CL.Conv1d, 1)
LazyConv2d = _lazy_conv("LazyConv2d", CL.Conv2d, 2)
LazyConv3d = _lazy_conv("LazyConv3d", CPL.Conv3d, 3)
LazyConvTranspose1d = _lazy_conv_transpose("LazyConvTranspose1d", CPL.ConvTranspose1d, 1)
LazyConvTranspose2d = _lazy_conv_transpose("LazyConvTranspose2d", CPL.ConvTranspose2d, 2)
LazyConvTranspose3d = _lazy_conv_transpose("LazyConvTranspose3d", CPL.ConvTranspose3d, 3)


class _LazyNormBase(LazyModuleMixin):
    def _lazy_norm(self, affine, track_running_stats, bias, device, dtype) -> None:
        self.affine, self.track_running_stats = affine, track_running_stats
        if affine:
            self.weight = UninitializedParameter(device=device, dtype=dtype)
            if bias:
                self.bias = UninitializedParameter(device=device, dtype=dtype)
        if track_running_stats:
            self.running_mean = UninitializedBuffer(device=device, dtype=dtype)
            self.running_var = UninitializedBuffer(device=device, dtype=dtype)
            self.num_batches_tracked = tensor(0, dtype=D.int64, device=device)
        self._lazy_setup()

    def initialize_parameters(self, input) -> None:
        if not self.has_uninitialized_params():
            return
        self.num_features = input.shape[1]
        with no_grad():
            for t in (self.weight, self.bias, self.running_mean, self.running_var):
                if isinstance(t, UninitializedTensorMixin):
                    t.materialize((self.num_features,))
            self.reset_parameters()


def _lazy_norm(name, base):
    def __init__(self, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 device=None, dtype=None, bias=True):
        base.__init__(self, 0, eps, momentum, False, False, device=device, dtype=dtype)
        self._lazy_norm(affine, track_running_stats, bias, device, dtype)

    doc = (f"A {base.__name__} whose num_features is inferred from the first input "
           f"(`torch.nn.{name}`); becomes `{base.__name__}` after the first call.")
    return type(name, (_LazyNormBase, base), {"__init__": __init__, "__doc__": doc,
                                               "cls_to_become": base, "__module__": __name__})


LazyBatchNorm1d = _lazy_norm("LazyBatchNorm1d", CL.BatchNorm1d)
LazyBatchNorm2d = _lazy_norm("LazyBatchNorm2d", CL.BatchNorm2d)
LazyBatchNorm3d = _lazy_norm("LazyBatchNorm3d", NL.BatchNorm3d)
LazyInstanceNorm1d = _lazy_norm("LazyInstanceNorm1d", NL.InstanceNorm1d)
LazyInstanceNorm2d = _lazy_norm("LazyInstanceNorm2d", NL.InstanceNorm2d)
LazyInstanceNorm3d = _lazy_norm("LazyInstanceNorm3d", NL.InstanceNorm3d)


# ---------------------------------------------------------------- small names


class Container(Module):
    """Deprecated (`torch.nn.Container`): a Module registering its keyword arguments as
    children, with PyTorch's deprecation warning."""

    def __init__(self, **kwargs):
        super().__init__()
        warnings.warn("nn.Container is deprecated. All of it's functionality is now "
                      "implemented in nn.Module. Subclass that instead.", stacklevel=2)
        for key, value in kwargs.items():
            self.add_module(key, value)


def factory_kwargs(kwargs):
    """`torch.nn.factory_kwargs`: the device/dtype/memory_format entries of `kwargs` (merged
    with a nested "factory_kwargs" dict) as one dict. TypeError for other keys or a key given
    twice."""
    if kwargs is None:
        return {}
    simple_keys = {"device", "dtype", "memory_format"}
    expected_keys = simple_keys | {"factory_kwargs"}
    if not kwargs.keys() <= expected_keys:
        raise TypeError(f"unexpected kwargs {kwargs.keys() - expected_keys}")
    r = dict(kwargs.get("factory_kwargs", {}))
    for k in simple_keys:
        if k in kwargs:
            if k in r:
                raise TypeError(f"{k} specified twice, in **kwargs and in factory_kwargs")
            r[k] = kwargs[k]
    return r
