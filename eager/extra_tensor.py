"""Tensor methods of PyTorch's surface that wick lacked (issue 16's sweep): `H`, the `new_*`
factories and the legacy `new`, `get_device`, `nonzero_static`, the element-callback methods
(`apply_`, `map_`, `map2_`), `as_subclass`, in-place samplers (`cauchy_`, `geometric_`,
`log_normal_`) and storage-level changes (`resize_`, `resize_as_`, `set_`). Installed by
`eager.extra_api.install`. Semantics: the PyTorch documentation of each method.
"""

from __future__ import annotations

import builtins
import math
import warnings

import numpy as np

from ir import dtypes as D
from ir.meta_array import MetaArray

from . import creation, extra
from . import random as R
from .dispatch import FUNCTIONS as _F
from .dispatch import F
from .grad_mode import no_grad
from .tensor import Tensor, bump_version


def empty_strided(size, stride, *, dtype=None, device=None, requires_grad=False, **_):
    """A zero-filled C-contiguous tensor of `size` (wick's strides are numpy's); on the meta
    device, of `size` and `stride` (no data, so any strides are kept, as PyTorch's)."""
    t = creation.zeros(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)
    if t.is_meta:
        a = t._data
        t._data = MetaArray(a.shape, a.dtype, tuple(s * a.itemsize for s in stride))
    return t


# ---------------------------------------------------------------- Tensor introspection, new_*


def _H(self):
    """`Tensor.H`: conjugate transpose of a matrix (0-d: itself)."""
    if self.ndim == 0:
        return self
    if self.ndim != 2:
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got "
                           f"{self.ndim}-D tensor.")
    return extra.adjoint(self)


def _factory_kw(self, dtype, device):
    return {"dtype": self.dtype if dtype is None else dtype,
            "device": self.device if device is None else device}


def _size(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else \
        tuple(size)


def new_empty(self, *size, dtype=None, device=None, requires_grad=False, **_):
    """`Tensor.new_empty(size)`: a new tensor of self's dtype and device (zero-filled)."""
    return creation.zeros(_size(size), requires_grad=requires_grad,
                          **_factory_kw(self, dtype, device))


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False, **_):
    """`Tensor.new_full(size, fill_value)`: self's dtype and device unless given."""
    return creation.full(tuple(size), fill_value, requires_grad=requires_grad,
                         **_factory_kw(self, dtype, device))


def new_ones(self, *size, dtype=None, device=None, requires_grad=False, **_):
    """`Tensor.new_ones(size)`: self's dtype and device unless given."""
    return creation.ones(_size(size), requires_grad=requires_grad,
                         **_factory_kw(self, dtype, device))


def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False, **_):
    """`Tensor.new_tensor(data)`: a copy of `data` with self's dtype and device unless given
    (a tensor `data` is detached and copied, with PyTorch's UserWarning)."""
    if isinstance(data, Tensor):
        warnings.warn("To copy construct from a tensor, it is recommended to use "
                      "sourceTensor.detach().clone() or sourceTensor.detach().clone()."
                      "requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
                      UserWarning, stacklevel=2)
        data = data.detach().numpy(force=True).copy()
    return creation.tensor(data, requires_grad=requires_grad, **_factory_kw(self, dtype, device))


def new_empty_strided(self, size, stride, *, dtype=None, device=None, requires_grad=False,
                      **_):
    """`Tensor.new_empty_strided(size, stride)`: see `torch.empty_strided`."""
    return empty_strided(size, stride, requires_grad=requires_grad,
                         **_factory_kw(self, dtype, device))


def new(self, *args, **kwargs):
    """`Tensor.new(...)` (legacy constructor): sizes -> an empty tensor of self's dtype, a
    sequence -> its data, nothing -> an empty 1-d tensor."""
    if not args:
        return creation.empty(0, dtype=self.dtype, device=self.device)
    if all(isinstance(a, int) for a in args):
        return new_empty(self, *args)
    if len(args) == 1 and isinstance(args[0], Tensor):
        return args[0].view(args[0].shape)
    return creation.tensor(args[0], dtype=self.dtype, device=self.device)


def get_device(self) -> int:
    """`Tensor.get_device()`: -1 on the CPU, else the CUDA device index."""
    return -1 if self.device.type == "cpu" else self.device.index or 0


def nonzero_static(self, *, size, fill_value=-1):
    """`Tensor.nonzero_static(size=, fill_value=-1)`: `nonzero` truncated or padded with
    `fill_value` to exactly `size` rows."""
    nz = self.nonzero()
    if nz.shape[0] >= size:
        return nz[:size]
    pad = creation.full((size - nz.shape[0], nz.shape[1]), fill_value, dtype=nz.dtype)
    return _F["cat"]([nz, pad], 0)


def apply_(self, callable):
    """`Tensor.apply_(callable)`: each element replaced by callable(element) (CPU only, no
    autograd, as PyTorch)."""
    if self.device.type != "cpu":
        raise TypeError("apply_ is only implemented on CPU tensors")
    flat = self._data.reshape(-1)
    for i in builtins.range(flat.shape[0]):
        flat[i] = callable(flat[i].item())
    if not np.shares_memory(flat, self._data):
        self._data[...] = flat.reshape(self._data.shape)
    return self


def map_(self, tensor, callable):
    """`Tensor.map_(tensor, callable)`: self[i] = callable(self[i], tensor[i]) (broadcast)."""
    other = np.broadcast_to(tensor.numpy(), self.shape)
    out = np.vectorize(lambda a, b: callable(a.item() if hasattr(a, "item") else a,
                                             b.item() if hasattr(b, "item") else b),
                       otypes=[self._data.dtype])(self._data, other)
    self._data[...] = out
    return self


def map2_(self, x, y, callable):
    """`Tensor.map2_(x, y, callable)`: self[i] = callable(self[i], x[i], y[i])."""
    xs, ys = np.broadcast_to(x.numpy(), self.shape), np.broadcast_to(y.numpy(), self.shape)
    out = np.vectorize(lambda a, b, c: callable(a, b, c),
                       otypes=[self._data.dtype])(self._data, xs, ys)
    self._data[...] = out
    return self


def as_subclass(self, cls):
    """`Tensor.as_subclass(cls)`: a `cls` instance sharing self's data and autograd history."""
    if not (isinstance(cls, type) and issubclass(cls, Tensor)):
        raise TypeError("as_subclass: expected a subclass of Tensor")
    out = self.view(self.shape)
    out.__class__ = cls
    return out


def _cauchy(ops, u, median=0.0, sigma=1.0):
    return ops.add(ops.mul(ops.tan(ops.mul(ops.sub(u, 0.5), math.pi)), sigma), median)


def _geometric(ops, u, p):
    return ops.ceil(ops.div(ops.log1p(ops.neg(u)), math.log1p(-p)))


def _log_normal(ops, u, mean=1.0, std=2.0):
    v = ops.clamp(ops.sub(ops.mul(u, 2), 1), min=-1 + 1e-16, max=1 - 1e-16)
    return ops.exp(ops.add(ops.mul(ops.erfinv(v), std * math.sqrt(2.0)), mean))


# name -> the samples as registry ops on float64 uniforms `u` (an `ir.OpNamespace` `ops`: eager
# runs it, capture records it as graph nodes after its draw of `u`)
INVERSE_CDF = {"cauchy_": _cauchy, "geometric_": _geometric, "log_normal_": _log_normal}


def _random_inplace(name):
    sample = INVERSE_CDF[name]

    def method(self, *args, generator=None, **kwargs):
        if not self.dtype.is_floating_point:
            raise RuntimeError(f"{name} expects a floating point tensor, got {self.dtype.name}")
        u = R.rand(*self.shape, dtype=D.float64, generator=generator)
        with _no_grad():
            self._data[...] = sample(F, u, *args, **kwargs)._data.astype(self._data.dtype)
        bump_version(self)
        return self
    method.__name__ = name
    method.__doc__ = f"`Tensor.{name}`: fill self with samples (inverse CDF of uniforms)."
    return method


def _no_grad():
    return no_grad()


cauchy_ = _random_inplace("cauchy_")
geometric_ = _random_inplace("geometric_")
log_normal_ = _random_inplace("log_normal_")


def resize_(self, *sizes, memory_format=None):
    """`Tensor.resize_(*sizes)`: self gets the new shape; the first elements are kept (in
    C order), new ones are zero (PyTorch leaves them uninitialised)."""
    size = _size(sizes)
    if self.requires_grad:
        raise RuntimeError("cannot resize variables that require grad")
    n = math.prod(size)
    flat = self._data.reshape(-1)
    if n == flat.shape[0]:
        self._data = flat.reshape(size)
    else:
        new = np.zeros(n, dtype=self._data.dtype) if isinstance(self._data, np.ndarray) else \
            type(self._data)(n, dtype=self._data.dtype)
        k = builtins.min(n, flat.shape[0])
        new[:k] = flat[:k]
        self._data = new.reshape(size)
        self._base = None
    bump_version(self)
    return self


def resize_as_(self, other, memory_format=None):
    """`Tensor.resize_as_(other)`: `resize_(other.shape)`."""
    return resize_(self, tuple(other.shape))


def set_(self, source=None, storage_offset=0, size=None, stride=None):
    """`Tensor.set_(source)`: self shares `source`'s memory, shape and version counter
    (no argument: an empty tensor)."""
    if source is None:
        self._data = self._data[:0].reshape(0) if self._data.size else self._data.reshape(0)
        return self
    if not isinstance(source, Tensor):
        raise TypeError("set_(): expected a Tensor source (storages are not supported)")
    data = source._data
    if size is not None:
        data = source.as_strided(size, stride or creation.empty(size).stride(),
                                 storage_offset)._data
    self._data, self._vc = data, source._vc
    self._base = source._base if source._base is not None else source
    return self


