"""`torch.nn.utils.prune`: pruning a module's parameter by a mask. Pruning `name` moves the
parameter to `name + "_orig"`, registers the buffer `name + "_mask"` and a forward pre-hook
(the pruning method itself) that sets the plain attribute `name = mask * name_orig` before
every call; pruning again combines the masks in a `PruningContainer`; `remove` makes the
pruned tensor the parameter again. Methods: Identity, RandomUnstructured, L1Unstructured,
RandomStructured, LnStructured, CustomFromMask, and `global_unstructured` over several
parameters. Semantics, names and errors: torch/nn/utils/prune.py (PyTorch 2.x). Random
methods draw from eager's generator (other streams than torch's).
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Iterable

from ...creation import ones_like, zeros_like
from ...dispatch import FUNCTIONS as F
from ...random import rand, rand_like
from .clip_grad import parameters_to_vector

__all__ = ["BasePruningMethod", "CustomFromMask", "Identity", "L1Unstructured", "LnStructured",
           "PruningContainer", "RandomStructured", "RandomUnstructured", "custom_from_mask",
           "global_unstructured", "identity", "is_pruned", "l1_unstructured", "ln_structured",
           "random_structured", "random_unstructured", "remove"]


def _drop(module, table: str, name: str):
    """Remove `name` from the module's parameter/buffer table and its attributes; returns it."""
    value = getattr(module, table).pop(name)
    module.__dict__.pop(name, None)
    return value


class BasePruningMethod(ABC):
    """A pruning method: `compute_mask(t, default_mask)` gives the new mask; as a forward
    pre-hook it recomputes the pruned attribute."""

    _tensor_name: str

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    @abstractmethod
    def compute_mask(self, t, default_mask):
        """The mask (shape of `t`) to apply on top of `default_mask`."""

    def apply_mask(self, module):
        """`mask * orig` of the module's pruned tensor."""
        assert self._tensor_name is not None, f"Module {module} has to be pruned"
        orig = getattr(module, self._tensor_name + "_orig")
        mask = getattr(module, self._tensor_name + "_mask")
        return mask.to(dtype=orig.dtype) * orig

    @classmethod
    def apply(cls, module, name, *args, importance_scores=None, **kwargs):
        """Prune `module.name` with a new `cls(*args, **kwargs)` (combined with an earlier
        pruning of the same tensor); returns the method registered as the pre-hook."""
        method = _composite_method(cls, module, name, *args, **kwargs)
        orig = getattr(module, name)
        if importance_scores is not None:
            assert importance_scores.shape == orig.shape, \
                f"importance_scores should have the same shape as parameter {name} of {module}"
        else:
            importance_scores = orig
        if not isinstance(method, PruningContainer):
            _drop(module, "_parameters", name)
            module.register_parameter(name + "_orig", orig)
            default_mask = ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores, default_mask=default_mask)
            if name + "_mask" in module._buffers:
                _drop(module, "_buffers", name + "_mask")
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if not isinstance(method, PruningContainer):
                orig = _drop(module, "_parameters", name + "_orig")
                module.__dict__.pop(name, None)
                module.register_parameter(name, orig)
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """`t` times its mask (nothing registered)."""
        if importance_scores is not None:
            assert importance_scores.shape == t.shape, \
                "importance_scores should have the same shape as tensor t"
        else:
            importance_scores = t
        default_mask = default_mask if default_mask is not None else ones_like(t)
        return t * self.compute_mask(importance_scores, default_mask=default_mask)

    def remove(self, module):
        """Make the pruned tensor the parameter `name` again (drops `_orig` and `_mask`)."""
        assert self._tensor_name is not None, \
            f"Module {module} has to be pruned before pruning can be removed"
        weight = self.apply_mask(module)
        module.__dict__.pop(self._tensor_name, None)
        orig = _drop(module, "_parameters", self._tensor_name + "_orig")
        orig.data = weight.data
        _drop(module, "_buffers", self._tensor_name + "_mask")
        setattr(module, self._tensor_name, orig)


def _composite_method(cls, module, name, *args, **kwargs):
    """The method to register: a new `cls` instance, or a PruningContainer holding the
    module's earlier method for `name` and the new one (that earlier hook is unregistered)."""
    old, found = None, []
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            old = hook
            found.append(k)
    assert len(found) <= 1, f"Avoid adding multiple pruning hooks to the same tensor {name} " \
        f"of module {module}. Use a PruningContainer."
    for k in found:
        del module._forward_pre_hooks[k]
    method = cls(*args, **kwargs)
    method._tensor_name = name
    if old is not None:
        if isinstance(old, PruningContainer):
            old.add_pruning_method(method)
            method = old
        else:
            container = PruningContainer(old)
            container.add_pruning_method(method)
            method = container
    return method


class PruningContainer(BasePruningMethod):
    """A sequence of pruning methods of one tensor applied in turn (each on what the earlier
    ones left)."""

    def __init__(self, *args):
        self._pruning_methods = ()
        if len(args) == 1 and not isinstance(args[0], Iterable):
            self._tensor_name = args[0]._tensor_name
            self.add_pruning_method(args[0])
        else:
            for method in args:
                self.add_pruning_method(method)

    def add_pruning_method(self, method):
        if not isinstance(method, BasePruningMethod) and method is not None:
            raise TypeError(f"{type(method)} is not a BasePruningMethod subclass")
        if method is not None and getattr(self, "_tensor_name", None) is not None and \
                self._tensor_name != method._tensor_name:
            raise ValueError("Can only add pruning methods acting on the parameter named "
                             f"'{self._tensor_name}' to PruningContainer {self}. Found "
                             f"'{method._tensor_name}'")
        if getattr(self, "_tensor_name", None) is None and method is not None:
            self._tensor_name = method._tensor_name
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, idx):
        return self._pruning_methods[idx]

    def compute_mask(self, t, default_mask):
        """The last method's mask computed on the entries (unstructured) or channels
        (structured) the earlier masks kept, written into the old mask."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(dtype=t.dtype)
        kind = method.PRUNING_TYPE
        if kind == "unstructured":
            slc = mask == 1
        elif kind == "structured":
            if not hasattr(method, "dim"):
                raise AttributeError("Pruning methods of PRUNING_TYPE 'structured' need to "
                                     "have the attribute `dim` defined.")
            n_dims, dim = t.dim(), method.dim
            dim = dim + n_dims if dim < 0 else dim
            if dim < 0:
                raise IndexError(f"Index is out of bounds for tensor of size {t.shape}")
            keep = mask.sum(dim=[d for d in range(n_dims) if d != dim]) != 0
            slc = tuple([slice(None)] * dim + [keep])
        elif kind == "global":
            slc = tuple([slice(None)] * t.dim())
        else:
            raise ValueError(f"Unrecognized PRUNING_TYPE {kind}")
        partial = method.compute_mask(t[slc], default_mask=mask[slc])
        mask[slc] = partial.to(dtype=mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask of ones)."""

    PRUNING_TYPE = "unstructured"

    def compute_mask(self, t, default_mask):
        return default_mask

    @classmethod
    def apply(cls, module, name):
        return super().apply(module, name)


class RandomUnstructured(BasePruningMethod):
    """Prunes `amount` (a fraction, or a count) of the entries chosen at random."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.numel()
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        mask = default_mask.clone()
        if k != 0:
            top = F["topk"](rand_like(t).reshape(-1), k)
            mask.view(-1)[top.indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount):
        return super().apply(module, name, amount=amount)


class L1Unstructured(BasePruningMethod):
    """Prunes `amount` of the entries of smallest absolute value."""

    PRUNING_TYPE = "unstructured"

    def __init__(self, amount):
        _validate_amount_init(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        size = t.numel()
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        mask = default_mask.clone()
        if k != 0:
            top = F["topk"](t.abs().reshape(-1), k, largest=False)
            mask.view(-1)[top.indices] = 0
        return mask

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


def _channel_mask(t, dim, keep):
    """Ones on the channels `keep` (indices or a bool vector) along `dim`, zeros elsewhere."""
    mask = zeros_like(t)
    mask[tuple([slice(None)] * (dim % t.dim()) + [keep])] = 1
    return mask


class RandomStructured(BasePruningMethod):
    """Prunes `amount` of the channels along `dim`, chosen at random."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.dim = amount, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        if k == 0:
            return default_mask
        prob = rand(size)
        threshold = F["kthvalue"](prob, k).values
        mask = _channel_mask(t, self.dim, prob > threshold)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, dim=-1):
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(BasePruningMethod):
    """Prunes `amount` of the channels along `dim` of smallest L`n` norm."""

    PRUNING_TYPE = "structured"

    def __init__(self, amount, n, dim=-1):
        _validate_amount_init(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def compute_mask(self, t, default_mask):
        _validate_structured(t)
        _validate_dim(t, self.dim)
        size = t.shape[self.dim]
        k = _nparams_toprune(self.amount, size)
        _validate_amount(k, size)
        if k == 0:
            return default_mask
        dims = list(range(t.dim()))
        dims.remove(dims[self.dim])
        norm = F["norm"](t, p=self.n, dim=dims)
        top = F["topk"](norm, size - k, largest=True)
        mask = _channel_mask(t, self.dim, top.indices)
        return mask * default_mask.to(dtype=mask.dtype)

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):
        return super().apply(module, name, amount=amount, n=n, dim=dim,
                             importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes where the given `mask` is 0."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        assert default_mask.shape == self.mask.shape
        return default_mask * self.mask.to(dtype=default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):
        return super().apply(module, name, mask=mask)


def identity(module, name):
    """Register pruning of `module.name` with a mask of ones; returns `module`."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name, amount):
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name, amount, importance_scores=None):
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name, amount, dim):
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name, amount, n, dim, importance_scores=None):
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name, mask):
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs):
    """Prune the (module, name) pairs of `parameters` together: `pruning_method` (an
    unstructured method class) picks over all their entries at once; each gets a
    CustomFromMask of its part. TypeError for a non-iterable or a structured method."""
    if not isinstance(parameters, Iterable):
        raise TypeError("global_unstructured(): parameters is not an Iterable")
    parameters = list(parameters)
    importance_scores = importance_scores if importance_scores is not None else {}
    if not isinstance(importance_scores, dict):
        raise TypeError("global_unstructured(): importance_scores must be of type dict")
    scores = parameters_to_vector([importance_scores.get((m, n), getattr(m, n))
                                   for m, n in parameters])
    default_mask = parameters_to_vector([getattr(m, n + "_mask", ones_like(getattr(m, n)))
                                         for m, n in parameters])
    container = PruningContainer()
    container._tensor_name = "temp"
    method = pruning_method(**kwargs)
    method._tensor_name = "temp"
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError('Only "unstructured" PRUNING_TYPE supported for the `pruning_method`. '
                        f"Found method {pruning_method} of type {method.PRUNING_TYPE}")
    container.add_pruning_method(method)
    final = container.compute_mask(scores, default_mask)
    at = 0
    for m, n in parameters:
        p = getattr(m, n)
        custom_from_mask(m, n, mask=final[at:at + p.numel()].view_as(p))
        at += p.numel()


def remove(module, name):
    """Make the pruning of `module.name` permanent; ValueError when it is not pruned."""
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"Parameter '{name}' of module {module} has to be pruned before pruning "
                     "can be removed")


def is_pruned(module) -> bool:
    """Whether `module` or a submodule has a pruning pre-hook."""
    return any(isinstance(h, BasePruningMethod)
               for _, sub in module.named_modules() for h in sub._forward_pre_hooks.values())


def _validate_amount_init(amount):
    if not isinstance(amount, numbers.Real):
        raise TypeError(f"Invalid type for amount: {amount}. Must be int or float.")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral)
            and (float(amount) > 1.0 or float(amount) < 0.0)):
        raise ValueError(f"amount={amount} should either be a float in the range [0, 1] or a "
                         "non-negative integer")


def _validate_amount(amount, size):
    if isinstance(amount, numbers.Integral) and amount > size:
        raise ValueError(f"amount={amount} should be smaller than the number of parameters to "
                         f"prune={size}")


def _validate_structured(t):
    if t.dim() <= 1:
        raise ValueError("Structured pruning can only be applied to multidimensional tensors. "
                         f"Found tensor of shape {t.shape} with {t.dim()} dims")


def _nparams_toprune(amount, size):
    return amount if isinstance(amount, numbers.Integral) else round(amount * size)


def _validate_dim(t, dim):
    if dim >= t.dim():
        raise IndexError(f"Invalid index {dim} for tensor of size {t.shape}")

