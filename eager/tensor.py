"""The eager `Tensor`: an n-dimensional array (numpy on the CPU, cupy on CUDA) with autograd
metadata.

Ops on tensors are generated from the registry by `eager/dispatch.py` (functions, methods,
dunders, in-place variants); this file holds what is not an op: construction, properties, the
storage/view model (strides, storage offset, `_base`, the `_version` counter shared by a base
and its views), dtype and device conversion, `backward`, and the in-place update protocol
(pickling and deepcopy: `eager/tensor_copy.py`).
Semantics follow `torch.Tensor`. Imports only `ir` and eager's small helper modules.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D
from ir.meta_array import MetaArray
from ir.opdef import TensorMeta, normalize_dim

from . import grad_mode
from .device import CPU, device, device_of_array, resolve, to_device
from .printing import tensor_repr
from .storage import Size, UntypedStorage, _ptr, _root
from .tensor_copy import TensorCopyMixin
from .tensor_ctor import TENSOR_TYPE, constructor_data, to_array

__all__ = ["Size", "Tensor", "UntypedStorage", "device"]

# How many times something changed that a recorded autograd graph depends on: in-place writes
# (any version counter going up), `.data` swaps, hooks added, saved tensors released. A backward
# program found by the root's structure id (eager/autograd/programs.py) runs only when nothing
# changed since the graph's first node was recorded; otherwise the graph is walked and checked.
# op name -> eager's function (`eager.add`): filled by `dispatch.install`, read by methods below
FUNCTIONS: dict = {}
MUTATIONS = [0]


def bump_version(t) -> None:
    """After an in-place write to `t`: its version counter (shared with its views) goes up,
    and so does the count of mutations."""
    t._vc[0] += 1
    MUTATIONS[0] += 1


class Tensor(TensorCopyMixin):
    """A tensor. `_data` is its array; `grad_fn` the autograd node that produced it (None for a
    leaf); `_vc` the version counter cell shared with its views (`_version` reads it); `_base`
    the tensor a view was made from (None for a tensor owning its memory)."""

    __slots__ = ("_data", "requires_grad", "grad", "grad_fn", "_vc", "_base",  # noqa: RUF023
                 "__weakref__",
                 # autograd extras (eager/autograd): hooks, retain_grad, forward-mode tangent
                 "_backward_hooks", "_retains_grad", "_fw_grad")
    __hash__ = object.__hash__
    # as torch.Tensor: numpy defers binary operators to the Tensor's reflected ones, so
    # `np.log(2 * np.pi) + t` (a numpy scalar on the left) is a Tensor, not an ndarray
    __array_priority__ = 1000

    def __init__(self, *args, dtype=None, requires_grad=False):
        data, dtype = constructor_data(args, dtype)  # (or sizes: `Tensor(2, 3)`)
        self._init(to_array(data, dtype), requires_grad)

    def _init(self, arr, requires_grad=False):
        self._data = arr
        self._init_autograd()
        if requires_grad:
            if D.from_numpy(arr.dtype).category < D.FLOATING:
                raise RuntimeError("Only Tensors of floating point and complex dtype can "
                                   "require gradients")
            self.requires_grad = True

    def _init_autograd(self):
        """The autograd state of a new tensor: no grad, no grad_fn, no hooks, no tangent, a
        fresh version counter, not a view."""
        self.requires_grad = False
        self.grad = None
        self.grad_fn = None
        self._vc = [0]
        self._base = None
        self._backward_hooks = None
        self._retains_grad = False
        self._fw_grad = None

    @classmethod
    def _make(cls, arr, requires_grad=False) -> Tensor:
        t = cls.__new__(cls)
        t._init(arr, requires_grad)
        return t

    # ---------------------------------------------------------------- properties

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[normalize_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> D.DType:
        return D.from_numpy(self._data.dtype)

    @property
    def device(self) -> device:
        return CPU if isinstance(self._data, np.ndarray) else device_of_array(self._data)

    @property
    def is_cuda(self) -> bool:
        return not isinstance(self._data, np.ndarray)

    @property
    def is_cpu(self) -> bool:
        return isinstance(self._data, np.ndarray)

    @property
    def is_meta(self) -> bool:
        """On the meta device: a shape, a dtype and strides, no data (ir/meta_array.py)."""
        return type(self._data) is MetaArray

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        return self._data.itemsize

    @property
    def itemsize(self) -> int:
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        return int(self._data.nbytes)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self.dtype.is_complex

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def _version(self) -> int:
        return self._vc[0]

    @property
    def meta(self) -> TensorMeta:
        a = self._data
        dev = "cpu" if isinstance(a, np.ndarray) else str(device_of_array(a))
        return TensorMeta(a.shape, D.from_numpy(a.dtype), dev)

    @property
    def T(self) -> Tensor:
        return self.permute_all_reversed()

    @property
    def mT(self) -> Tensor:
        if self.ndim < 2:
            raise RuntimeError("tensor.mT is only supported on matrices or batches of "
                               f"matrices. Got {self.ndim}-D tensor.")
        return self.transpose(-2, -1)

    def permute_all_reversed(self) -> Tensor:
        t = self
        n = self.ndim
        for i in range(n // 2):
            t = t.transpose(i, n - 1 - i)
        return t

    def t(self) -> Tensor:
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    # ---------------------------------------------------------------- storage and views

    def stride(self, dim=None):
        """Strides in elements (`torch.Tensor.stride`); one int when `dim` is given."""
        item = self._data.itemsize
        st = tuple(s // item for s in self._data.strides)
        return st if dim is None else st[normalize_dim(dim, self._data.ndim)]

    def storage_offset(self) -> int:
        """Offset of the first element from the start of the storage, in elements."""
        a = self._data
        return (_ptr(a) - _ptr(_root(a))) // a.itemsize

    def data_ptr(self) -> int:
        """Address of the first element (equal for a tensor and views that start there)."""
        return _ptr(self._data)

    def untyped_storage(self) -> UntypedStorage:
        return UntypedStorage(_root(self._data))

    def is_contiguous(self, memory_format=None) -> bool:
        """Row-major without gaps (sizes-1 dimensions' strides do not matter, as PyTorch)."""
        return bool(self._data.flags.c_contiguous)

    def contiguous(self, memory_format=None) -> Tensor:
        """`self` when contiguous, else a row-major copy (differentiable)."""
        if self._data.flags.c_contiguous:
            return self
        return self.reshape(-1).view(tuple(self.shape))  # reshape copies in row-major order

    def is_set_to(self, other: Tensor) -> bool:
        a, b = self._data, other._data
        return (_ptr(a) == _ptr(b) and a.shape == b.shape and a.strides == b.strides
                and a.dtype == b.dtype)

    @property
    def real(self) -> Tensor:
        """The real part: a view of a complex tensor (self for a real one)."""
        return FUNCTIONS["real"](self)

    @real.setter
    def real(self, value) -> None:
        self.real.copy_(value)

    @property
    def imag(self) -> Tensor:
        """The imaginary part, a view; RuntimeError for a real tensor (as PyTorch)."""
        return FUNCTIONS["imag"](self)

    @imag.setter
    def imag(self, value) -> None:
        self.imag.copy_(value)

    def is_conj(self) -> bool:
        """Always False: `conj()` returns a materialised copy in wick."""
        return False

    def resolve_conj(self) -> Tensor:
        return self

    def resolve_neg(self) -> Tensor:
        return self

    def is_neg(self) -> bool:
        return False

    # ---------------------------------------------------------------- conversion

    def numpy(self, *, force=False) -> np.ndarray:
        """The data as a numpy array sharing memory; raises if the tensor requires grad or
        lives on a GPU (as PyTorch)."""
        if not force and self.requires_grad and grad_mode.is_grad_enabled():
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        if not isinstance(self._data, np.ndarray):
            if force:
                return self._data.get()
            raise TypeError(f"can't convert {self.device} device type tensor to numpy. Use "
                            "Tensor.cpu() to copy the tensor to host memory first.")
        return self._data

    def _host(self) -> np.ndarray:
        a = self._data
        return a if isinstance(a, np.ndarray) else a.get()

    def item(self):
        """The value of a one-element tensor as a Python number."""
        a = self._data
        if a.size != 1:
            raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
        if type(a) is MetaArray:
            raise RuntimeError("Tensor.item() cannot be called on meta tensors")
        a = self._host()
        if a.dtype in (D.bfloat16.np, D.float16.np):
            return float(a.reshape(()).astype(np.float32))
        return a.reshape(()).item()

    def tolist(self):
        a = self._host()
        if a.dtype == D.bfloat16.np:
            a = a.astype(np.float32)
        return a.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __complex__(self):
        return complex(self.item())

    def __index__(self):
        if self.dtype.category > D.INTEGER:
            raise TypeError("only integer tensors of a single element can be converted to an "
                            "index")
        return int(self.item())

    def __bool__(self):
        if self._data.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def __array__(self, dtype=None, copy=None):
        a = self.numpy(force=True)
        return a if dtype is None else a.astype(dtype)

    def detach(self) -> Tensor:
        """A new leaf sharing data (and version counter) with this tensor, outside autograd."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        t._base = self._base
        return t

    @property
    def data(self) -> Tensor:
        """A new leaf sharing this tensor's memory, outside autograd, with a version counter of
        its own: in-place changes through it are not seen by autograd (PyTorch's `.data`; the
        checked way is `detach()`)."""
        t = Tensor._make(self._data)
        t._base = self._base
        return t

    @data.setter
    def data(self, value) -> None:
        """`t.data = other`: `t` takes `other`'s memory (any shape, dtype or device; the
        version counter and autograd history stay). TypeError when `other` is not a Tensor."""
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        self._data = value._data
        MUTATIONS[0] += 1

    def detach_(self) -> Tensor:
        self.grad_fn = None
        self.requires_grad = False
        return self

    def requires_grad_(self, requires_grad=True) -> Tensor:
        if not self.is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if requires_grad and self.dtype.category < D.FLOATING:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = bool(requires_grad)
        return self

    def to(self, *args, dtype=None, device=None, non_blocking=False, copy=False) -> Tensor:
        """`to(dtype)`, `to(device)`, `to(device, dtype)`, `to(other)`; returns `self` when
        nothing changes (unless `copy=True`), as `torch.Tensor.to`."""
        for a in args:
            if isinstance(a, Tensor):
                dtype, device = a.dtype, a.device
            elif isinstance(a, (str, _Device, int)) and not isinstance(a, bool):
                device = a
            elif a is not None:
                dtype = a
        t = self
        if device is not None:
            dev = resolve(device)
            if dev != self.device:
                t = _move(self, dev)
            elif copy:
                t = self.clone()
                copy = False
        if dtype is not None:
            dtype = D.to_dtype(dtype)
            if dtype is not t.dtype:
                return FUNCTIONS["cast"](t, dtype)
        return t.clone() if copy and t is self else t

    def type(self, dtype=None, non_blocking=False, **kwargs):
        """The type name ("torch.FloatTensor"), or this tensor cast (replaced by
        `eager.legacy_tensors.cast_to_type`, which also takes legacy types and names)."""
        return self.dtype.name if dtype is None else self.to(dtype)

    def type_as(self, other) -> Tensor:
        """This tensor in `other`'s dtype (`self` when it already has it)."""
        return self.to(other.dtype)

    def view_as(self, other) -> Tensor:
        """`self.view(other.shape)`."""
        return self.view(tuple(other.shape))

    def reshape_as(self, other) -> Tensor:
        """`self.reshape(other.shape)`."""
        return self.reshape(tuple(other.shape))

    def cpu(self):
        return self.to("cpu")

    def cuda(self, device=None):
        return self.to("cuda" if device is None else
                       (f"cuda:{device}" if isinstance(device, int) else device))

    # ---------------------------------------------------------------- autograd

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (see `eager.autograd`)."""
        backward = AUTOGRAD_BACKWARD[0]
        backward(self, gradient, retain_graph, create_graph, inputs)

    def _check_inplace(self):
        if self.requires_grad and self.is_leaf and grad_mode.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")

    def _inplace_update(self, result: Tensor, check_cast: bool = True) -> Tensor:
        """Write `result` into this tensor's memory (an in-place op's last step).

        Checks first, so that a failed op leaves `self` unchanged: same device, the result's
        shape must be self's, and its dtype castable (`torch.can_cast`: no float into int, no
        complex into float, as PyTorch). Bumps the version counter shared with the views.
        """
        rd, sd = result.dtype, self.dtype
        if check_cast and rd is not sd and not D.can_cast(rd, sd):
            raise RuntimeError(f"result type {rd.title} can't be cast to the desired output "
                               f"type {sd.title}")
        if result._data.shape != self._data.shape:
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        if type(result._data) is not type(self._data):
            raise RuntimeError("Expected all tensors to be on the same device, but found at "
                               f"least two devices, {result.device} and {self.device}!")
        node = result.grad_fn
        if node is not None:
            node.keep_old_operand(self)  # before the write: backward may need the old value
        self._data[...] = result._data
        bump_version(self)
        if node is not None:
            self.grad_fn = node
            self.requires_grad = True
            node.rebind_output(self)
        return self

    def zero_(self) -> Tensor:
        self._data[...] = 0
        bump_version(self)
        return self

    def fill_(self, value) -> Tensor:
        """Fill with a number (or a one-element tensor); bumps the version counter."""
        if isinstance(value, Tensor):
            value = value.item()
        self._data[...] = value
        bump_version(self)
        return self

    def copy_(self, src, non_blocking=False) -> Tensor:
        """Copy `src` (broadcast to self's shape, any dtype, any device) into self."""
        if not isinstance(src, Tensor):
            src = Tensor(np.asarray(src))
        if src.device != self.device:
            src = _move(src, self.device)
        if src.dtype is not self.dtype:
            src = FUNCTIONS["cast"](src, self.dtype)
        if tuple(src.shape) != tuple(self.shape):
            src = FUNCTIONS["expand"](src, tuple(self.shape))
        if not src.requires_grad or not grad_mode.is_grad_enabled():
            self._data[...] = src._data
            bump_version(self)
            return self
        self._check_inplace()
        return self._inplace_update(FUNCTIONS["clone"](src), check_cast=False)

    # ---------------------------------------------------------------- printing

    def __format__(self, format_spec: str) -> str:
        """`f"{loss:.4f}"`: a 0-d tensor formats as its Python number (as PyTorch); other
        tensors only with an empty spec (their repr), else TypeError."""
        if self.ndim == 0:
            return self.item().__format__(format_spec)
        return object.__format__(self, format_spec)

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        if self.requires_grad and grad_mode.is_grad_enabled():
            if not hasattr(Tensor, "unbind"):
                raise NotImplementedError("iterating over a tensor that requires grad needs "
                                          "unbind; iterate inside eager.no_grad()")
            return iter(self.unbind(0))
        return self._rows()

    def _rows(self):
        """The rows of dim 0 as views (`a[i, ...]`: a 0-d array, not a numpy scalar, for a 1-D
        tensor, so iteration yields 0-d Tensors as PyTorch)."""
        for i in range(self._data.shape[0]):
            t = Tensor._make(self._data[i, ...])
            t._vc, t._base = self._vc, self._base if self._base is not None else self
            yield t


_Device = device
# [eager.autograd.backward], registered by eager.autograd.engine (which imports this module)
AUTOGRAD_BACKWARD: list = [None]


def _cast_method(name: str, dtype):
    def cast(self):
        return self.to(dtype)

    cast.__name__ = cast.__qualname__ = name
    cast.__doc__ = f"`self.to({dtype.name})` (PyTorch's `Tensor.{name}`)."
    return cast


for _name, _dt in (("float", D.float32), ("double", D.float64), ("half", D.float16),
                   ("bfloat16", D.bfloat16), ("long", D.int64), ("int", D.int32),
                   ("short", D.int16), ("char", D.int8), ("byte", D.uint8),
                   ("bool", D.bool_), ("cfloat", D.complex64), ("cdouble", D.complex128)):
    setattr(Tensor, _name, _cast_method(_name, _dt))


def _move(t: Tensor, dev: device) -> Tensor:
    """A copy of `t` on device `dev`; gradients flow back (to the original device)."""
    to_device(np.empty(0), dev)  # raises PyTorch's error early when the device is missing
    return FUNCTIONS["_to_copy"](t, str(dev))


# A new plain tensor's state, as statements on `t` over array `arr`: the text of `wrap_array`'s
# body, which the fast paths' generated code (`eager.fastpaths`) inlines to save the call.
NEW_TENSOR_STATE = """t = tnew(tensor)
t._data = arr
t.requires_grad = t._retains_grad = False
t.grad = t.grad_fn = t._base = t._backward_hooks = t._fw_grad = None
t._vc = [0]"""


def _define_wrap_array():
    src = "def wrap_array(arr):\n    " + NEW_TENSOR_STATE.replace("\n", "\n    ") + \
        "\n    return t\n"
    scope = {"tnew": Tensor.__new__, "tensor": Tensor}
    exec(compile(src, "<eager.tensor.wrap_array>", "exec"), scope)  # noqa: S102
    fn = scope["wrap_array"]
    fn.__doc__ = ("A plain Tensor over array `arr` (no copy, no checks, no history): the one "
                  "helper by which the engine, backward plans, programs, fast paths and lazy "
                  "results make Tensors of arrays they computed (the state of "
                  "`Tensor._init_autograd`, set in one go; `NEW_TENSOR_STATE` is its body).")
    fn.__module__ = __name__
    return fn


wrap_array = _define_wrap_array()
TENSOR_TYPE.append(Tensor)  # (tensor_ctor's isinstance checks)
