"""The pickling and deepcopy protocol of the eager `Tensor` (`__reduce_ex__`, `__deepcopy__`),
mixed into `Tensor` by `eager/tensor.py`: tensors sharing memory in one pickle or one
`deepcopy` call share it afterwards; CUDA data goes through the host; `.grad`, `grad_fn` and
hooks are not pickled. The array-level work (view geometry, the memo of copied arrays) is here;
the unpickling function is `eager.serialization._rebuild_tensor` (its name in pickle files),
registered in `REBUILD_TENSOR` by that module, which imports `eager.tensor` and so cannot be
imported by this one. Semantics: `torch.Tensor.__reduce_ex__` / `__deepcopy__`.
"""

from __future__ import annotations

import copy

import numpy as np

from ir.meta_array import MetaArray

from .storage import _ptr, _root

# [eager.serialization._rebuild_tensor]: filled when eager/serialization.py is imported (by eager)
REBUILD_TENSOR: list = [None]


def _memory_bytes(root: np.ndarray):
    """The bytes of a C- or Fortran-contiguous array in memory order (a 1-d uint8 view)."""
    flat = root.reshape(-1) if root.flags.c_contiguous else root.T.reshape(-1)
    return flat.view(np.uint8)


def _view_geometry(arr: np.ndarray, root: np.ndarray):
    """(byte offset, shape, strides, dtype) of `arr` inside `root`'s memory."""
    return (_ptr(arr) - _ptr(root), arr.shape, arr.strides, arr.dtype)


def _view_of(root: np.ndarray, geometry) -> np.ndarray:
    off, shape, strides, dtype = geometry
    return np.ndarray(shape, dtype, buffer=_memory_bytes(root), offset=off, strides=strides)


def _shares_root(arr: np.ndarray):
    """The contiguous array owning `arr`'s memory, or None when it cannot be rebuilt from it."""
    root = _root(arr)
    if root is arr or not (root.flags.c_contiguous or root.flags.f_contiguous):
        return None
    return root


def _host_and_geometry(arr):
    """What a tensor pickles: (array, None) or (owning array, geometry of the view); a meta
    array pickles itself (shape, dtype, strides: no data)."""
    if type(arr) is MetaArray:
        return arr, None
    if not isinstance(arr, np.ndarray):
        return arr.get(), None
    root = _shares_root(arr)
    return (arr, None) if root is None else (root, _view_geometry(arr, root))


def _deepcopy_array(arr, memo):
    """A copy of `arr`; views of one array copied in one deepcopy call share the copy."""
    if not isinstance(arr, np.ndarray):
        return arr.copy()
    root = _shares_root(arr)
    if root is None:
        root = arr
        if not (arr.flags.c_contiguous or arr.flags.f_contiguous):
            return arr.copy()
    new_root = memo.get(id(root))
    if new_root is None:
        new_root = root.copy(order="K")
        memo[id(root)] = new_root
        copy._keep_alive(root, memo)
    return new_root if root is arr else _view_of(new_root, _view_geometry(arr, root))


class TensorCopyMixin:
    """`Tensor`'s pickle and deepcopy methods (see the module docstring)."""

    __slots__ = ()  # (Tensor's slots stay its only per-instance storage)

    def __reduce_ex__(self, protocol):
        """Pickle as (class, host data, view geometry, requires_grad, version cell, device).

        A view pickles the array owning its memory plus its byte offset, shape and strides,
        so tensors sharing memory in one pickle share it after loading; CUDA data is copied to
        the host and back. `.grad`, `grad_fn` and hooks are not kept: the loaded tensor is a
        leaf (as `torch.Tensor.__reduce_ex__`)."""
        data, geometry = _host_and_geometry(self._data)
        return REBUILD_TENSOR[0], (type(self), data, geometry, self.requires_grad, self._vc,
                                 str(self.device))

    def __deepcopy__(self, memo):
        """A copy with its own memory (tensors sharing memory in one `deepcopy` call share the
        copy), the same `requires_grad`, and a deep-copied `.grad`. RuntimeError for a tensor
        made by autograd-recorded ops (as `torch.Tensor.__deepcopy__`)."""
        return self._deepcopy_tensor(memo, with_grad=True)

    def _deepcopy_tensor(self, memo, with_grad: bool) -> TensorCopyMixin:
        if self.grad_fn is not None:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment.  If you were "
                               "attempting to deepcopy a module, this may be because of a "
                               "torch.nn.utils.weight_norm usage, see "
                               "https://github.com/pytorch/pytorch/pull/103001")
        found = memo.get(id(self))
        if found is not None:
            return found
        t = object.__new__(type(self))  # (Tensor.__new__: no subclass's)
        t._init(_deepcopy_array(self._data, memo))
        t.requires_grad = self.requires_grad
        t._vc = copy.deepcopy(self._vc, memo)
        memo[id(self)] = t
        if with_grad and self.grad is not None:
            t.grad = self.grad._deepcopy_tensor(memo, True)
        return t
