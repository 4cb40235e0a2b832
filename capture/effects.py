"""Side-effect soundness checks for graph breaks: when resuming after a break could run a
mutation twice, drop it, or split one Python object into two, the frame runs eagerly instead.

Resume functions receive the frame's live locals as values. A closure cell of the frame that a
live nested function also holds (`def bump(): nonlocal cnt ...`) would become two cells after
the break (the resume function's own, and the one rebuilt for the nested function), so a
`nonlocal` write through one would not be seen through the other. `shared_written_cell(gb)`
names such a cell (one that some code writes after it was created), else None; the caller
then runs the frame eagerly (`CannotResume`). Touches `capture` only.
"""

from __future__ import annotations

import types

from .variables import (
    CellVariable,
    DictVariable,
    NestedFunctionVariable,
    PartialVariable,
    SequenceVariable,
)

WRITES = ("STORE_DEREF", "DELETE_DEREF")


def _written_names(code, start: int = 0) -> set:
    """Cell/free names `code` (from instruction index `start`) or a nested code object
    writes."""
    import dis

    names = set()
    insts = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    for i in insts[start:]:
        if i.opname in WRITES:
            names.add(i.argval)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _written_names(c)
    return names


def _closures(v, seen: set):
    """The CellVariables held by nested functions reachable from tracker `v`."""
    if id(v) in seen:
        return
    seen.add(id(v))
    if isinstance(v, NestedFunctionVariable):
        for c in v.closure:
            if isinstance(c, CellVariable):
                yield c
        for d in list(v.defaults) + list(v.kwdefaults.values()):
            yield from _closures(d, seen)
    elif isinstance(v, PartialVariable):
        for a in [v.fn, *v.args, *v.kwargs.values()]:
            yield from _closures(a, seen)
    elif isinstance(v, SequenceVariable):
        for x in v.items:
            yield from _closures(x, seen)
    elif isinstance(v, DictVariable):
        for x in (v.items.known() if hasattr(v.items, "known") else v.items.values()):
            yield from _closures(x, seen)
    elif isinstance(v, CellVariable) and v.value is not CellVariable.EMPTY:
        yield from _closures(v.value, seen)


def shared_written_cell(gb) -> str | None:
    """The name of a cell of the breaking frame that a live nested function shares and that
    some code writes (so a resume could split it), or None. `gb` is a top-frame GraphBreak."""
    if gb.frame is None:
        return None
    from .transform import _outer_loop, needed_locals

    tx, index, snap = gb.frame
    if not tx.cells:
        return None
    loop = _outer_loop(tx, index)
    if loop is not None:
        snap, start = tx.loop_snaps[loop[0]], loop[0]
    else:
        start = index
    env = dict(snap.locals)
    env.update({n: v for n, v in snap.cells.items() if v is not CellVariable.EMPTY})
    live = [env[n] for n in needed_locals(tx, start, list(env))] + list(snap.stack)
    seen: set = set()
    held = {id(c) for v in live for c in _closures(v, seen)}
    if not held:
        return None
    mine = {id(c): n for n, c in tx.cells.items()}
    shared = [mine[k] for k in held if k in mine]
    if not shared:
        return None
    written = _written_names(tx.code, start)
    for n in shared:
        if n in written:
            return n
    return None
