"""eager.utils.hooks: `torch.utils.hooks` - `RemovableHandle` (what every `register_*_hook`
returns) and `BackwardHook`, which makes a module's full backward hooks run.

`RemovableHandle(hooks_dict, extra_dict=...)` takes the next id of a class-wide counter;
`remove()` deletes that id from the (weakly referenced) table and the extra tables; it is a
context manager (`with m.register_forward_hook(f): ...` removes on exit).

`BackwardHook(module, user_hooks, user_pre_hooks)` follows torch's: `setup_input_hook(args)`
passes the module's tensor inputs through an identity autograd `Function`
(`BackwardHookFunction`) and `setup_output_hook(result)` its tensor outputs through another one.
In backward the output-side node runs first: it records `grad_output` (a tuple as long as the
output tuple, None at non-tensors), runs the backward pre-hooks (`hook(module, grad_output) ->
None or new grad_output`) and returns the (new) grads; the input-side node runs after the
module's own graph and calls `hook(module, grad_input, grad_output) -> None or new grad_input`,
grad_input as long as the input tuple, None at non-tensors (zeros for tensor inputs that do not
require grad, None in grad_output for unused outputs: torch 2.13 does the same). When
no input requires grad the full hooks run from the output side with all-None grad_input.
Touches `eager` only.
"""

from __future__ import annotations

import warnings
import weakref
from collections import OrderedDict

from .. import grad_mode
from ..autograd.function import Function
from ..tensor import Tensor

__all__ = ["RemovableHandle", "BackwardHook", "BackwardHookFunction", "unserializable_hook",
           "warn_if_has_hooks"]


class RemovableHandle:
    """A handle that removes one registered hook: `.remove()`, `.id`, `with handle: ...`
    (`torch.utils.hooks.RemovableHandle`). `extra_dict` (a dict or a list of dicts) holds
    side tables keyed by the same id (with_kwargs / always_call flags)."""

    id: int
    next_id: int = 0

    def __init__(self, hooks_dict, *, extra_dict=None):
        self.hooks_dict_ref = weakref.ref(hooks_dict)
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1
        self.extra_dict_ref = ()
        if isinstance(extra_dict, dict):
            self.extra_dict_ref = (weakref.ref(extra_dict),)
        elif isinstance(extra_dict, list):
            self.extra_dict_ref = tuple(weakref.ref(d) for d in extra_dict)

    def remove(self) -> None:
        """Delete the hook from its table(s); removing twice is harmless."""
        hooks_dict = self.hooks_dict_ref()
        if hooks_dict is not None and self.id in hooks_dict:
            del hooks_dict[self.id]
        for ref in self.extra_dict_ref:
            extra = ref()
            if extra is not None and self.id in extra:
                del extra[self.id]

    def __getstate__(self):
        if self.extra_dict_ref:
            return (self.hooks_dict_ref(), self.id,
                    tuple(ref() for ref in self.extra_dict_ref))
        return (self.hooks_dict_ref(), self.id)

    def __setstate__(self, state) -> None:
        if state[0] is None:
            self.hooks_dict_ref = weakref.ref(OrderedDict())
        else:
            self.hooks_dict_ref = weakref.ref(state[0])
        self.id = state[1]
        RemovableHandle.next_id = max(RemovableHandle.next_id, self.id + 1)
        self.extra_dict_ref = (() if len(state) < 3 else
                               tuple(weakref.ref(d) for d in state[2] if d is not None))

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, exc_type, exc_value, tb) -> None:
        self.remove()


def unserializable_hook(f):
    """Mark `f` as a hook that is not serialized (kept for torch's API; no effect)."""
    f.__torch_unserializable__ = True
    return f


def warn_if_has_hooks(tensor) -> None:
    """torch warns when a tensor with unserializable backward hooks is saved; nothing here."""


class BackwardHookFunction(Function):
    """Identity on the tensors after `callback` and `materialize` (the first two arguments);
    backward passes the grads through `callback(ctx, grads) -> grads` (torch's
    BackwardHookFunction, plus the callback wick uses instead of grad_fn hooks). Grads of
    unused outputs are zeros when `materialize`, else None."""

    @staticmethod
    def forward(ctx, callback, materialize, *args):
        ctx.callback = callback
        ctx.set_materialize_grads(materialize)
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return (None, None, *ctx.callback(ctx, grads))


def _pack_with_none(indices, values, size) -> tuple:
    res = [None] * size
    for idx, val in zip(indices, values):
        res[idx] = val
    return tuple(res)


class BackwardHook:
    """Runs a module's full backward (pre-)hooks for one forward call (see module doc)."""

    def __init__(self, module, user_hooks, user_pre_hooks):
        self.user_hooks = user_hooks
        self.user_pre_hooks = user_pre_hooks
        self.module = module
        self.grad_outputs = None
        self.n_outputs = -1
        self.output_tensors_index = None
        self.n_inputs = -1
        self.input_tensors_index = None

    def _apply_on_tensors(self, callback, args, materialize):
        idx = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        tensors = [args[i] for i in idx]
        if not (any(t.requires_grad for t in tensors) and grad_mode.is_grad_enabled()):
            return args, None
        new = BackwardHookFunction.apply(callback, materialize, *tensors)
        out = list(args)
        for i, t in zip(idx, new):
            out[i] = t
        return (tuple(out) if type(args) is tuple else type(args)(*out)), idx

    def _input_backward(self, ctx, grads):
        if self.grad_outputs is None:  # grads reached the inputs without passing the outputs
            return grads
        res = _pack_with_none(self.input_tensors_index, grads, self.n_inputs)
        for hook in self.user_hooks:
            out = hook(self.module, res, self.grad_outputs)
            if out is None:
                continue
            if len(out) != len(res):
                raise RuntimeError("Backward hook returned an invalid number of grad_input, "
                                   f"got {len(out)}, but expected {len(res)}")
            res = out
        self.grad_outputs = None
        return tuple(res[i] for i in self.input_tensors_index)

    def setup_input_hook(self, args):
        """`args` with its tensors passed through the input-side identity node."""
        res, idx = self._apply_on_tensors(self._input_backward, args, True)
        self.n_inputs = len(args)
        self.input_tensors_index = idx
        return res

    def _output_backward(self, ctx, grads):
        self.grad_outputs = _pack_with_none(self.output_tensors_index, grads, self.n_outputs)
        expected = len(self.grad_outputs)
        for hook in self.user_pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != expected:
                raise RuntimeError("Backward pre hook returned an invalid number of "
                                   f"grad_output, got {len(new)}, but expected {expected}")
            self.grad_outputs = new
        local = self.grad_outputs
        if self.input_tensors_index is None:  # no input requires grad: call the hooks now
            if self.user_hooks:
                warnings.warn("Full backward hook is firing when gradients are computed with "
                              "respect to module outputs since no inputs require gradients. "
                              "See the documentation of "
                              "torch.nn.Module.register_full_backward_hook for more details.",
                              stacklevel=5)
            grad_inputs = (None,) * self.n_inputs
            for hook in self.user_hooks:
                res = hook(self.module, grad_inputs, self.grad_outputs)
                if res is not None and not (isinstance(res, tuple)
                                            and all(r is None for r in res)):
                    raise RuntimeError("Backward hook for Modules where no input requires "
                                       "gradient should always return None or None for all "
                                       "gradients.")
            self.grad_outputs = None
        return tuple(local[i] for i in self.output_tensors_index)

    def setup_output_hook(self, result):
        """`result` (a tensor or a tuple) with its tensors passed through the output-side
        identity node."""
        is_tuple = isinstance(result, tuple)
        args = result if is_tuple else (result,)
        res, idx = self._apply_on_tensors(self._output_backward, args, False)
        self.n_outputs = len(args)
        self.output_tensors_index = idx
        return res if is_tuple else res[0]
