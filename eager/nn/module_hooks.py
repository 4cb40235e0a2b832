"""Module hooks (`torch.nn.Module.register_forward_hook` and kin), mixed into `Module`.

Tables carry torch's names (`_forward_hooks`, `_forward_pre_hooks`, `_backward_hooks`,
`_backward_pre_hooks`, `_forward_hooks_with_kwargs`, `_forward_hooks_always_called`,
`_forward_pre_hooks_with_kwargs`): OrderedDicts keyed by the `RemovableHandle` id, so
capture's module wrapper sees them. Global hooks (`register_module_forward_hook`...) live in
this module's `_global_*` tables and run before a module's own, as torch's.

Fast path: `Module.__call__` tests one attribute, `_wick_has_hooks` - False on the class,
set True on an instance when it registers a hook and on the class when a global hook is
registered. The hooked path (`_call_with_hooks`, torch's `_call_impl`) drops the flags again
when it finds the tables empty (handles remove entries, not flags).
Touches `eager` only.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict

from ..tensor import Tensor
from ..utils.hooks import BackwardHook, RemovableHandle

__all__ = ["register_module_forward_pre_hook", "register_module_forward_hook",
           "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
           "register_module_backward_hook"]

_global_forward_pre_hooks: OrderedDict = OrderedDict()
_global_forward_hooks: OrderedDict = OrderedDict()
_global_forward_hooks_with_kwargs: OrderedDict = OrderedDict()
_global_forward_hooks_always_called: OrderedDict = OrderedDict()
_global_backward_pre_hooks: OrderedDict = OrderedDict()
_global_backward_hooks: OrderedDict = OrderedDict()
# capture (`capture/nested_frames.py`): while a compiled frame's eagerly run part runs, the
# top entry, `f(module, args, kwargs)`, runs each module call (NotImplemented: as usual)
# (it sets the class flag `_wick_has_hooks` meanwhile, so module calls take the hooked path)
NESTED_CALL: list = []

HOOK_TABLES = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called",
               "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_backward_hooks",
               "_backward_pre_hooks", "_state_dict_hooks", "_state_dict_pre_hooks",
               "_load_state_dict_pre_hooks", "_load_state_dict_post_hooks")


def _global_hooked() -> None:
    ModuleHooks._wick_has_hooks = True


def register_module_forward_pre_hook(hook) -> RemovableHandle:
    """A forward pre-hook `hook(module, args) -> None | new args` for every module."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    _global_hooked()
    return handle


def register_module_forward_hook(hook, *, with_kwargs: bool = False,
                                 always_call: bool = False) -> RemovableHandle:
    """A forward hook `hook(module, args, output) -> None | new output` for every module
    (`hook(module, args, kwargs, output)` with `with_kwargs`)."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=[
        _global_forward_hooks_with_kwargs, _global_forward_hooks_always_called])
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    _global_hooked()
    return handle


def register_module_full_backward_pre_hook(hook) -> RemovableHandle:
    """A backward pre-hook `hook(module, grad_output) -> None | new grad_output`, all modules."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    _global_hooked()
    return handle


def register_module_full_backward_hook(hook) -> RemovableHandle:
    """A backward hook `hook(module, grad_input, grad_output) -> None | new grad_input`."""
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    _global_hooked()
    return handle


register_module_backward_hook = register_module_full_backward_hook  # deprecated alias


def _add(module, table_name, hook, prepend=False, extras=()) -> RemovableHandle:
    d = module.__dict__
    table = d[table_name]
    handle = RemovableHandle(table, extra_dict=[d[name] for name, _ in extras])
    table[handle.id] = hook
    for name, flag in extras:
        if flag:
            d[name][handle.id] = True
    if prepend:
        table.move_to_end(handle.id, last=False)
    d["_wick_has_hooks"] = True
    return handle


class ModuleHooks:
    """The hook half of `Module` (registration and the hooked call)."""

    _wick_has_hooks = False  # see the module doc: the one test of the fast path

    def _init_hooks(self) -> None:
        d = self.__dict__
        for name in HOOK_TABLES:
            if name not in d:
                d[name] = OrderedDict()
        d.setdefault("_is_full_backward_hook", None)

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        ModuleHooks._init_hooks(self)

    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False) -> RemovableHandle:
        """`hook(module, args) -> None | new args` (a non-tuple is wrapped in a tuple) before
        `forward`; with `with_kwargs`: `hook(module, args, kwargs) -> None | (args, kwargs)`.
        `prepend` puts it before the module's other pre-hooks (global ones still run first)."""
        return _add(self, "_forward_pre_hooks", hook, prepend,
                    (("_forward_pre_hooks_with_kwargs", with_kwargs),))

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False) -> RemovableHandle:
        """`hook(module, args, output) -> None | new output` after `forward` (with
        `with_kwargs`: `hook(module, args, kwargs, output)`); `always_call` runs it even when
        `forward` raises (its exception then silenced with a warning)."""
        return _add(self, "_forward_hooks", hook, prepend,
                    (("_forward_hooks_with_kwargs", with_kwargs),
                     ("_forward_hooks_always_called", always_call)))

    def register_full_backward_pre_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_output) -> None | new grad_output` when the grads w.r.t. the
        module's outputs are computed (a tuple, None at non-tensor outputs)."""
        return _add(self, "_backward_pre_hooks", hook, prepend)

    def register_full_backward_hook(self, hook, prepend: bool = False) -> RemovableHandle:
        """`hook(module, grad_input, grad_output) -> None | new grad_input` when the grads
        w.r.t. the module's inputs are computed (None for inputs not requiring grad)."""
        self.__dict__["_is_full_backward_hook"] = True
        return _add(self, "_backward_hooks", hook, prepend)

    def register_backward_hook(self, hook) -> RemovableHandle:
        """Deprecated in torch; here the same as `register_full_backward_hook` (torch's
        non-full form reports the grads of the last op instead of the module's inputs)."""
        return self.register_full_backward_hook(hook)

    # ---- state-dict hooks

    def register_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """`hook(module, prefix, keep_vars)` before `state_dict` collects this module."""
        return _add(self, "_state_dict_pre_hooks", hook)

    def _register_state_dict_hook(self, hook) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata) -> None | new state_dict` after
        this module's entries are collected."""
        return _add(self, "_state_dict_hooks", hook)

    def register_state_dict_post_hook(self, hook) -> RemovableHandle:
        """As `_register_state_dict_hook`; the hook must return None (changes in place)."""
        def post(module, state_dict, prefix, local_metadata):
            if hook(module, state_dict, prefix, local_metadata) is not None:
                raise RuntimeError("state_dict post-hook must return None")
        return _add(self, "_state_dict_hooks", post)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """`hook(module, state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)` before this module's entries are loaded."""
        return _add(self, "_load_state_dict_pre_hooks", hook)

    _register_load_state_dict_pre_hook = register_load_state_dict_pre_hook

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """`hook(module, incompatible_keys)` after `load_state_dict` (it may edit the key
        lists in place; what is left in them counts for `strict`)."""
        return _add(self, "_load_state_dict_post_hooks", hook)

    # ---- the hooked call (torch's Module._call_impl)

    def _call_with_hooks(self, args, kwargs):
        if NESTED_CALL:  # (a module called from the eager part of a compiled frame)
            out = NESTED_CALL[-1](self, args, kwargs)
            if out is not NotImplemented:
                return out
        d = self.__dict__
        fw_pre, fw = d["_forward_pre_hooks"], d["_forward_hooks"]
        bw, bw_pre = d["_backward_hooks"], d["_backward_pre_hooks"]
        g_any = (_global_forward_pre_hooks or _global_forward_hooks
                 or _global_backward_hooks or _global_backward_pre_hooks)
        if not g_any and ModuleHooks._wick_has_hooks and not NESTED_CALL:
            ModuleHooks._wick_has_hooks = False
        if not (fw_pre or fw or bw or bw_pre):
            d.pop("_wick_has_hooks", None)
            if not g_any:
                return self.forward(*args, **kwargs)
        result = None
        called_always = set()
        try:
            if _global_forward_pre_hooks or fw_pre:
                with_kw = d["_forward_pre_hooks_with_kwargs"]
                for hook_id, hook in (*_global_forward_pre_hooks.items(), *fw_pre.items()):
                    if hook_id in with_kw:
                        res = hook(self, args, kwargs)
                        if res is not None:
                            if isinstance(res, tuple) and len(res) == 2:
                                args, kwargs = res
                            else:
                                raise RuntimeError("forward pre-hook must return None or a "
                                                   "tuple of (new_args, new_kwargs), but got "
                                                   f"{res}.")
                    else:
                        res = hook(self, args)
                        if res is not None:
                            args = res if isinstance(res, tuple) else (res,)
            bw_hook = None
            if bw or bw_pre or _global_backward_hooks or _global_backward_pre_hooks:
                bw_hook = BackwardHook(self, [*_global_backward_hooks.values(), *bw.values()],
                                       [*_global_backward_pre_hooks.values(),
                                        *bw_pre.values()])
                args = bw_hook.setup_input_hook(args)
            result = self.forward(*args, **kwargs)
            if _global_forward_hooks or fw:
                with_kw, always = d["_forward_hooks_with_kwargs"], d["_forward_hooks_always_called"]
                for hook_id, hook in (*_global_forward_hooks.items(), *fw.items()):
                    if hook_id in always or hook_id in _global_forward_hooks_always_called:
                        called_always.add(hook_id)
                    if hook_id in with_kw or hook_id in _global_forward_hooks_with_kwargs:
                        res = hook(self, args, kwargs, result)
                    else:
                        res = hook(self, args, result)
                    if res is not None:
                        result = res
            if bw_hook is not None:
                if not isinstance(result, (Tensor, tuple)):
                    warnings.warn("For backward hooks to be called, module output should be a "
                                  f"Tensor or a tuple of Tensors but received {type(result)}",
                                  stacklevel=2)
                result = bw_hook.setup_output_hook(result)
            return result
        except Exception:
            result = _run_always_called(self, args, kwargs, result, called_always)
            raise


def _run_always_called(module, args, kwargs, result, called):
    d = module.__dict__
    tables = ((_global_forward_hooks, _global_forward_hooks_always_called,
               _global_forward_hooks_with_kwargs, "global module"),
              (d["_forward_hooks"], d["_forward_hooks_always_called"],
               d["_forward_hooks_with_kwargs"], "module"))
    for hooks, always, with_kw, what in tables:
        for hook_id, hook in tuple(hooks.items()):
            if hook_id not in always or hook_id in called:
                continue
            try:
                res = (hook(module, args, kwargs, result) if hook_id in with_kw
                       else hook(module, args, result))
                if res is not None:
                    result = res
            except Exception as e:  # noqa: BLE001  (silenced with a warning, as torch)
                warnings.warn(f"{what} forward hook with ``always_call=True`` raised an "
                              "exception that was silenced as another error was raised in "
                              f"forward: {e}", stacklevel=3)
    return result
