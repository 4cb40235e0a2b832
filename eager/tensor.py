"""The eager `Tensor`: an n-dimensional array (numpy on the CPU) with autograd metadata.

Ops on tensors are generated from the registry by `eager/dispatch.py` (functions, methods,
dunders); this file holds what is not an op: construction, properties, conversion, printing,
`backward`, and the in-place update protocol. Semantics follow `torch.Tensor`.
"""

from __future__ import annotations

import numpy as np

from ir import dtypes as D
from ir.opdef import TensorMeta

from . import grad_mode


class Size(tuple):
    """`tensor.shape`: a tuple of ints that prints as `eager.Size([2, 3])`."""

    def __repr__(self) -> str:
        return f"eager.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class device:
    """`eager.device("cpu")`; only the CPU is available in this build."""

    __slots__ = ("type", "index")

    def __init__(self, spec="cpu"):
        if isinstance(spec, device):
            self.type, self.index = spec.type, spec.index
            return
        kind, _, idx = str(spec).partition(":")
        if kind not in ("cpu", "cuda"):
            raise RuntimeError(f"Expected one of cpu, cuda device type at start of device "
                               f"string: {spec}")
        self.type, self.index = kind, (int(idx) if idx else None)

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self) -> str:
        return f"device(type='{self.type}')" if self.index is None else \
            f"device(type='{self.type}', index={self.index})"

    def __eq__(self, other) -> bool:
        other = device(other) if isinstance(other, str) else other
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self) -> int:
        return hash((self.type, self.index))


CPU = device("cpu")


class Tensor:
    """A tensor. `_data` is its array; `grad_fn` the autograd node that produced it (None for a
    leaf); `_vc` the version counter shared with its views (`_version` reads it)."""

    __slots__ = ("_data", "requires_grad", "grad", "grad_fn", "_vc", "_base", "__weakref__",
                 # autograd extras (eager/autograd): hooks, retain_grad, forward-mode tangent
                 "_backward_hooks", "_retains_grad", "_fw_grad")
    __hash__ = object.__hash__

    def __init__(self, data=None, *, dtype=None, requires_grad=False):
        arr = _to_array(data if data is not None else [], dtype)
        self._init(arr, requires_grad)

    def _init(self, arr, requires_grad=False):
        self._data = arr
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self.grad_fn = None
        self._vc = [0]
        self._base = None
        self._backward_hooks = None
        self._retains_grad = False
        self._fw_grad = None
        if requires_grad and not D.from_numpy(arr.dtype).is_floating_point:
            raise RuntimeError("Only Tensors of floating point and complex dtype can require "
                               "gradients")

    @classmethod
    def _make(cls, arr, requires_grad=False) -> "Tensor":
        t = cls.__new__(cls)
        t._init(arr, requires_grad)
        return t

    # ---------------------------------------------------------------- properties

    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim=None):
        if dim is None:
            return self.shape
        from ir.opdef import normalize_dim

        return self._data.shape[normalize_dim(dim, self._data.ndim)]

    @property
    def dtype(self) -> D.DType:
        return D.from_numpy(self._data.dtype)

    @property
    def device(self) -> device:
        return CPU

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        return self._data.ndim

    def numel(self) -> int:
        return int(self._data.size)

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
        return TensorMeta(self._data.shape, self.dtype, "cpu")

    @property
    def T(self) -> "Tensor":
        return self.permute_all_reversed()

    def permute_all_reversed(self) -> "Tensor":
        t = self
        n = self.ndim
        for i in range(n // 2):
            t = t.transpose(i, n - 1 - i)
        return t

    def t(self) -> "Tensor":
        if self.ndim > 2:
            raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is "
                               f"{self.ndim}D")
        return self.transpose(0, 1) if self.ndim == 2 else self

    def stride(self, dim=None):
        st = tuple(s // self._data.itemsize for s in self._data.strides)
        return st if dim is None else st[dim]

    def is_contiguous(self) -> bool:
        return bool(self._data.flags.c_contiguous)

    # ---------------------------------------------------------------- conversion

    def numpy(self) -> np.ndarray:
        """The data as a numpy array sharing memory; raises if the tensor requires grad."""
        if self.requires_grad and grad_mode.is_grad_enabled():
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. Use "
                               "tensor.detach().numpy() instead.")
        return self._data

    def item(self):
        if self._data.size != 1:
            raise RuntimeError(f"a Tensor with {self._data.size} elements cannot be converted "
                               "to Scalar")
        return self._data.reshape(()).item()

    def tolist(self):
        return self._data.tolist()

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

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
        return self._data if dtype is None else self._data.astype(dtype)

    def detach(self) -> "Tensor":
        """A new leaf sharing data (and version counter) with this tensor, outside autograd."""
        t = Tensor._make(self._data)
        t._vc = self._vc
        return t

    def requires_grad_(self, requires_grad=True) -> "Tensor":
        if not self.is_leaf:
            raise RuntimeError("you can only change requires_grad flags of leaf variables.")
        if requires_grad and not self.dtype.is_floating_point:
            raise RuntimeError("only Tensors of floating point dtype can require gradients")
        self.requires_grad = bool(requires_grad)
        return self

    def to(self, *args, dtype=None, **kwargs) -> "Tensor":
        """`to(dtype)`, `to(device)`, `to(other)`; a no-op returns `self` as in PyTorch."""
        for a in args:
            if isinstance(a, Tensor):
                dtype = a.dtype
            elif isinstance(a, (str, device)):
                if device(a).type != "cpu":
                    raise RuntimeError(f"device {a} is not available in this build")
            else:
                dtype = a
        if dtype is None:
            return self
        dtype = D.to_dtype(dtype)
        if dtype is self.dtype:
            return self
        from .dispatch import FUNCTIONS

        return FUNCTIONS["cast"](self, dtype)

    def type(self, dtype=None):
        return f"eager.{self.dtype.name}" if dtype is None else self.to(dtype)

    def float(self):
        return self.to(D.float32)

    def double(self):
        return self.to(D.float64)

    def long(self):
        return self.to(D.int64)

    def bool(self):
        return self.to(D.bool_)

    def cpu(self):
        return self

    # ---------------------------------------------------------------- autograd

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulate d(self)/d(leaf) into every leaf's `.grad` (see `eager.autograd`)."""
        from .autograd import backward

        backward(self, gradient, retain_graph=retain_graph, create_graph=create_graph,
                 inputs=inputs)

    def _check_inplace(self):
        if self.requires_grad and self.is_leaf and grad_mode.is_grad_enabled():
            raise RuntimeError("a leaf Variable that requires grad is being used in an in-place "
                               "operation.")

    def _inplace_update(self, result: "Tensor") -> "Tensor":
        """Write `result` into this tensor's memory (an in-place op's last step).

        Checks first, so that a failed op leaves `self` unchanged: the result must broadcast to
        self's shape and its dtype must be castable (no float into int, as in PyTorch).
        """
        if result.dtype.category > self.dtype.category:
            raise RuntimeError(f"result type {result.dtype.name.capitalize()} can't be cast to "
                               f"the desired output type {self.dtype.name.capitalize()}")
        if tuple(result.shape) != tuple(self.shape):
            raise RuntimeError(f"output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        node = result.grad_fn
        if node is not None:
            node.keep_old_operand(self)  # before the write: backward may need the old value
        self._data[...] = result._data
        self._vc[0] += 1
        if node is not None:
            self.grad_fn = node
            self.requires_grad = True
            node.rebind_output(self)
        return self

    def zero_(self) -> "Tensor":
        self._data[...] = 0
        self._vc[0] += 1
        return self

    # ---------------------------------------------------------------- printing

    def __repr__(self) -> str:
        from .printing import tensor_repr

        return tensor_repr(self)

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        if self.requires_grad and grad_mode.is_grad_enabled():
            raise NotImplementedError("iterating over a tensor that requires grad is not "
                                      "supported yet; iterate inside eager.no_grad()")
        return (Tensor._make(self._data[i]) for i in range(self.shape[0]))


def _to_array(data, dtype=None):
    """Convert nested lists / numbers / numpy arrays / Tensors to a supported numpy array."""
    if isinstance(data, Tensor):
        data = data._data
    dt = D.to_dtype(dtype) if dtype is not None else None
    if dt is None:
        arr = np.asarray(data)
        if arr.dtype.kind == "f":
            # Python floats become the default dtype; numpy float arrays keep theirs
            if not isinstance(data, np.ndarray):
                arr = arr.astype(D.get_default_dtype().np)
        elif arr.dtype.kind in "iu":
            arr = arr.astype(np.int64) if not isinstance(data, np.ndarray) or \
                arr.dtype != np.int64 else arr
        elif arr.dtype.kind == "b":
            pass
        elif arr.dtype == object or arr.dtype.kind in "USO":
            raise TypeError(f"can't convert {type(data).__name__} of {arr.dtype} to a tensor")
        dt = D.from_numpy(arr.dtype)
    return np.array(data, dtype=dt.np, copy=True) if not isinstance(data, np.ndarray) or \
        data.dtype != dt.np else data.copy()
