"""The pickling and deepcopy protocol of the eager `Tensor` (`__reduce_ex__`, `__deepcopy__`),
mixed into `Tensor` by `eager/tensor.py`: tensors sharing memory in one pickle or one
`deepcopy` call share it afterwards; CUDA data goes through the host; `.grad`, `grad_fn` and
hooks are not pickled. The array-level work (view geometry, the memo of copied arrays) is
`eager/serialization.py`'s, imported when a tensor is pickled or copied (serialization imports
`eager.tensor`). Semantics: `torch.Tensor.__reduce_ex__` / `__deepcopy__`.
"""

from __future__ import annotations

import copy


class TensorCopyMixin:
    """`Tensor`'s pickle and deepcopy methods (see the module docstring)."""

    __slots__ = ()  # (Tensor's slots stay its only per-instance storage)

    def __reduce_ex__(self, protocol):
        """Pickle as (class, host data, view geometry, requires_grad, version cell, device).

        A view pickles the array owning its memory plus its byte offset, shape and strides,
        so tensors sharing memory in one pickle share it after loading; CUDA data is copied to
        the host and back. `.grad`, `grad_fn` and hooks are not kept: the loaded tensor is a
        leaf (as `torch.Tensor.__reduce_ex__`)."""
        from .serialization import _host_and_geometry, _rebuild_tensor

        data, geometry = _host_and_geometry(self._data)
        return _rebuild_tensor, (type(self), data, geometry, self.requires_grad, self._vc,
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
        from .serialization import _deepcopy_array

        t._init(_deepcopy_array(self._data, memo))
        t.requires_grad = self.requires_grad
        t._vc = copy.deepcopy(self._vc, memo)
        memo[id(self)] = t
        if with_grad and self.grad is not None:
            t.grad = self.grad._deepcopy_tensor(memo, True)
        return t
