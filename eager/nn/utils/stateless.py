"""`torch.nn.utils.stateless.functional_call`: call a module with some of its parameters and
buffers replaced by given tensors, for that call only (the tensors may require grad, so
gradients flow to them rather than to the module's own).

The swap writes the given tensors into the owning modules' tables and attributes and restores
the originals afterwards, also when the call raises. With `tie_weights`, a tensor given for
one name of a tied parameter (one tensor registered under several names) replaces all of
them, as PyTorch's. Semantics of PyTorch's `torch/nn/utils/stateless.py`. Touches
`eager.nn.module` only.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager

__all__ = ["functional_call"]


def _owner(module, name: str):
    prefix, _, attr = name.rpartition(".")
    return (module.get_submodule(prefix) if prefix else module), attr


def _table(owner, attr: str):
    for table in (owner._parameters, owner._buffers):
        if attr in table:
            return table
    return None


def _merge(parameters_and_buffers) -> dict:
    if isinstance(parameters_and_buffers, dict):
        return dict(parameters_and_buffers)
    merged: dict = {}
    for d in parameters_and_buffers:
        repeated = set(merged) & set(d)
        if repeated:
            raise ValueError(f"{sorted(repeated)} appeared in multiple dictionaries; behavior "
                             "of functional call is ambiguous")
        merged.update(d)
    return merged


def _with_ties(module, values: dict) -> dict:
    """Extend `values` to every other name of a tied tensor given under one of its names."""
    names_of: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + \
            list(module.named_buffers(remove_duplicate=False)):
        names_of.setdefault(id(t), []).append(name)
    out = dict(values)
    for names in names_of.values():
        given = [n for n in names if n in values]
        if len(given) > 1 and any(values[n] is not values[given[0]] for n in given[1:]):
            raise ValueError(f"functional_call got multiple values for keys {given}, which are "
                             "tied. Consider using tie_weights=False")
        if given:
            for n in names:
                out.setdefault(n, values[given[0]])
    return out


@contextmanager
def _reparametrize(module, values: dict, strict: bool):
    known = {n for n, _ in module.named_parameters(remove_duplicate=False)} | \
        {n for n, _ in module.named_buffers(remove_duplicate=False)}
    unexpected = [k for k in values if k not in known]
    if strict:
        missing = sorted(known - set(values))
        if unexpected or missing:
            msg = []
            if unexpected:
                msg.append("Unexpected key(s): " + ", ".join(map(repr, unexpected)) + ".")
            if missing:
                msg.append("Missing key(s): " + ", ".join(map(repr, missing)) + ".")
            raise RuntimeError(f"Error(s) in reparametrizing for {module._get_name()}:\n\t"
                               + "\n\t".join(msg))
    saved = []
    try:
        for name, value in values.items():
            owner, attr = _owner(module, name)
            table = _table(owner, attr)
            saved.append((owner, attr, table, table.get(attr) if table is not None
                          else owner.__dict__.get(attr, _MISSING)))
            if table is not None:
                table[attr] = value
            owner.__dict__[attr] = value
        yield
    finally:
        for owner, attr, table, old in reversed(saved):
            if table is not None:
                table[attr] = old
            if old is _MISSING:
                owner.__dict__.pop(attr, None)
            else:
                owner.__dict__[attr] = old


_MISSING = object()


def functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """`module(*args, **kwargs)` with the parameters and buffers named in
    `parameters_and_buffers` (a dict of dotted names to tensors, or a sequence of such
    dicts, as torch.func's) swapped in for the call. `args` that is not a tuple is one
    positional argument. Deprecated in torch (FutureWarning) for `torch.func.functional_call`.

    Raises:
        ValueError: a name in several of the dicts; different values for tied names.
        RuntimeError: with `strict`, names missing from or unknown to the module.
    """
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


def _functional_call(module, parameters_and_buffers, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    """`functional_call` without the deprecation warning (torch.func's form)."""
    values = _merge(parameters_and_buffers)
    if tie_weights:
        values = _with_ties(module, values)
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrize(module, values, strict):
        return module(*args, **(kwargs or {}))
