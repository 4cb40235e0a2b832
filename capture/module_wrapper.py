"""`capture.compile(module)`: an `OptimizedModule` wrapping the module, as torch.compile's.

`OptimizedModule(mod, **compile_options)` is an `eager.nn.Module` whose only child is the
original, registered as `_orig_mod`: `parameters()`/`named_parameters()`/`buffers()` are the
original's (names prefixed `_orig_mod.`), `state_dict()` keys are `_orig_mod.<key>` and
`load_state_dict` takes them, exactly as torch's. `training` mirrors the original's, so `train()`
and `eval()` switch both; the compiled code guards on every `training` flag it read, so each mode
gets its own cache entry. Attribute reads the wrapper does not have go to the original
(`__getattr__`), attribute writes to names the wrapper does not own too (`__setattr__`).

Calling it runs `Module.__call__` of the wrapper, then `forward`, which calls the original's
`forward` compiled as a bound method (a break in it resumes in that frame). When the original's
class overrides `__call__` or the module has forward hooks (torch's `_forward_hooks` /
`_forward_pre_hooks` tables, where eager's Module has them), its bound `__call__` is compiled
instead, so the hooks run as they do eagerly. `__wick_compiled__` is the forward's
`CompiledFunction` (cache entries, graphs). Touches `eager.nn`, `capture`.
"""

from __future__ import annotations

from eager.nn import Module

_HOOK_TABLES = ("_forward_hooks", "_forward_pre_hooks", "_forward_hooks_with_kwargs",
                "_backward_hooks", "_backward_pre_hooks")


def _plain_call(mod) -> bool:
    """True when calling `mod` is exactly calling `mod.forward` (no hooks, no own __call__)."""
    if type(mod).__call__ is not Module.__call__:
        return False
    if not mod._wick_has_hooks:  # (eager's one flag: set by every hook registration)
        return True
    d = mod.__dict__
    return not any(d.get(name) for name in _HOOK_TABLES)


class OptimizedModule(Module):
    """A compiled module (torch's `torch._dynamo.eval_frame.OptimizedModule`)."""

    _opt_mod_attributes = frozenset({"_orig_mod", "_compile_options", "_compiled_forward",
                                     "_compiled_call", "forward", "__dict__",
                                     "_super_module_initialized"})

    def __init__(self, mod: Module, **compile_options):
        object.__setattr__(self, "_orig_mod", mod)
        object.__setattr__(self, "_super_module_initialized", False)
        super().__init__()
        object.__setattr__(self, "_super_module_initialized", True)
        self._modules["_orig_mod"] = mod
        object.__setattr__(self, "_compile_options", compile_options)
        self._initialize()

    def _initialize(self) -> None:
        from . import compile as capture_compile

        mod = self._orig_mod
        object.__setattr__(self, "_compiled_forward",
                           capture_compile(mod.forward, **self._compile_options))
        object.__setattr__(self, "_compiled_call", None)

    @property
    def __wick_compiled__(self):
        return self._compiled_forward.__wick_compiled__

    @property
    def __wrapped__(self):
        return self._orig_mod

    def forward(self, *args, **kwargs):
        mod = self._orig_mod
        if _plain_call(mod):
            return self._compiled_forward(*args, **kwargs)
        call = self._compiled_call
        if call is None:
            from . import compile as capture_compile

            call = capture_compile(mod.__call__, **self._compile_options)
            object.__setattr__(self, "_compiled_call", call)
        return call(*args, **kwargs)

    # ---- the original's state, as torch's wrapper mirrors it

    @property
    def training(self) -> bool:
        return self._orig_mod.training

    @training.setter
    def training(self, value: bool) -> None:
        if self.__dict__.get("_super_module_initialized"):
            self._orig_mod.training = value

    def __getattr__(self, name: str):
        d = self.__dict__
        if name == "_orig_mod" and "_orig_mod" in d:
            return d["_orig_mod"]
        if "_orig_mod" not in d:
            raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")
        return getattr(d["_orig_mod"], name)

    def __setattr__(self, name: str, value) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__setattr__(name, value)
        else:
            setattr(self._orig_mod, name, value)

    def __delattr__(self, name: str) -> None:
        if hasattr(type(self), name) or name in OptimizedModule._opt_mod_attributes:
            super().__delattr__(name)
        else:
            delattr(self._orig_mod, name)

    def __len__(self) -> int:
        if hasattr(type(self._orig_mod), "__len__"):
            return len(self._orig_mod)
        raise TypeError(f"{type(self._orig_mod).__name__} does not support len()")

    def __dir__(self) -> list:
        own = self._orig_mod.__dir__()
        return own + [a for a in super().__dir__() if a not in own]

    def __reduce__(self):
        return (_rebuild, (self._orig_mod, self._compile_options))


def _rebuild(mod, options):
    return OptimizedModule(mod, **options)
