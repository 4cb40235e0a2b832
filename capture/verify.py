"""Checks on every code object capture generates, before it may run.

A resume, break or loop function (`resume.py`) is the user's bytecode cut and re-assembled: a
mistake there does not raise, it crashes CPython (a handler that pops to a stack depth that is
not there, a `LOAD_FAST` of a NULL local on 3.12+, a prologue out of place). So every generated
code object passes `verify_code` (and, where the original is known, `check_table` and
`check_bindings`) before it is wrapped into a function; a failure raises `BadCode` and capture
runs the frame eagerly instead, with the reason logged under `WICK_LOGS=breaks`.

`verify_code(code, closure_size)` checks the assembled code object itself, as CPython will run
it (independently of the `bytecode` library that assembled it, whose own stack-size pass,
`compute_stacksize(check_pre_and_post=True)`, has already run in `resume.assemble`):
- the prefix instructions (`MAKE_CELL`, `COPY_FREE_VARS`, `RESUME 0`) come first, and
  `COPY_FREE_VARS n` matches `co_freevars` and the closure given to the function;
- every jump and exception-table target is the start of an instruction; every local, cell and
  free-variable index is in range;
- an abstract run over the control-flow graph, exception edges included (a handler is entered
  at its entry's depth + lasti + 1), finds one stack depth per instruction: never below what an
  instruction pops, never above `co_stacksize`, and, inside every exception-table range, never
  below the depth the entry pops the stack to (entries covering only dead code, which a
  resume function jumps over, are never used and not checked).

`check_table(original, code, origin)`: every instruction copied from the original is covered
by the same handler, at the same depth and lasti flag, as in the original (a depth too high
left a handler's saved exception buried, and its POP_EXCEPT made an object nobody owned the
thread's current exception: issue 13's SIGSEGV). `entered_normally(original, index)`: a
continuation may start only where the original arrives without an exception edge, never
inside an except/finally handler. `max_depth(code)` is the exact stack size.

`check_bindings(original, generated, params)` is a definite-assignment pass over the abstract
instructions (`bytecode.Instr` objects, shared between the original and the generated list):
a load that the original code reaches with its local (or cell) certainly bound must reach it
bound in the generated code too (else a 3.12+ `LOAD_FAST` reads NULL, or 3.11 raises an
`UnboundLocalError` the plain function never raises). Touches `dis` and `bytecode` only.
"""

from __future__ import annotations

import dis
import inspect
import sys

from bytecode import Instr, Label, TryBegin, TryEnd
from bytecode.instr import DYNAMIC_STACK_EFFECTS, STATIC_STACK_EFFECTS, CellVar, FreeVar

PY = sys.version_info[:2]
PREFIX = ("MAKE_CELL", "COPY_FREE_VARS", "RESUME")
TERMINAL = {"RETURN_VALUE", "RETURN_CONST", "RERAISE", "RAISE_VARARGS", "JUMP_FORWARD",
            "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT", "JUMP", "JUMP_NO_INTERRUPT"}
JUMPS = set(dis.hasjrel) | set(getattr(dis, "hasjabs", ()))
LOCAL_OPS = {"LOAD_FAST", "LOAD_FAST_CHECK", "STORE_FAST", "DELETE_FAST",
             "LOAD_FAST_AND_CLEAR", "STORE_FAST_MAYBE_NULL"}
DEREF_OPS = {"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE", "MAKE_CELL"}


class BadCode(Exception):
    """A generated code object failed verification: it must not run."""


# ---------------------------------------------------------------- the assembled code object


def _pops_pushes(inst, jump: bool) -> tuple[int, int]:
    arg = inst.arg if inst.opcode >= dis.HAVE_ARGUMENT else None
    effect = dis.stack_effect(inst.opcode, arg, jump=jump)
    op = inst.opcode
    if op in STATIC_STACK_EFFECTS:
        pre, post = STATIC_STACK_EFFECTS[op]
    elif op in DYNAMIC_STACK_EFFECTS:
        pre, post = DYNAMIC_STACK_EFFECTS[op](effect, arg, jump)
    else:
        pre, post = effect, 0
    if pre + post != effect:  # the tables disagree with dis: trust dis's net effect
        pre, post = min(effect, 0), max(effect, 0)
    return -pre, pre + post


def verify_code(code, closure_size: int | None = None) -> int:
    """Check `code` as described in the module doc; returns the largest stack depth reached.
    Raises BadCode."""
    insts = list(dis.get_instructions(code))
    if not insts:
        raise BadCode("no instructions")
    starts = {i.offset: k for k, i in enumerate(insts)}
    _check_prefix(code, insts, closure_size)
    _check_operands(code, insts, starts)
    entries = list(dis.Bytecode(code).exception_entries)
    end = insts[-1].offset + 2
    for e in entries:
        if e.start == e.end:
            continue  # an empty range (a region split at a jump target) never matches
        if e.target not in starts or e.start not in starts or not e.start < e.end <= end:
            raise BadCode(f"exception-table entry {e} does not match the instructions")
        # its depth is checked where a reachable instruction uses it: an entry that covers
        # only dead code (the part of the original a resume function jumps over) never runs
    return _check_depths(code, insts, starts, entries)


def max_depth(code) -> int:
    """The largest stack depth `code` reaches (exception edges included), whatever its
    `co_stacksize` says; raises BadCode as `verify_code` does for inconsistent depths."""
    insts = list(dis.get_instructions(code))
    starts = {i.offset: k for k, i in enumerate(insts)}
    entries = [e for e in dis.Bytecode(code).exception_entries if e.start < e.end]
    return _check_depths(code, insts, starts, entries, limit=1 << 30)


def _check_prefix(code, insts, closure_size) -> None:
    body = False
    for i in insts:
        if i.opname in PREFIX and not (i.opname == "RESUME" and i.arg != 0) or \
                i.opname in ("RETURN_GENERATOR", "POP_TOP") and not body:  # a generator's
            if body:
                raise BadCode(f"{i.opname} at offset {i.offset} after the function body began")
            if i.opname == "COPY_FREE_VARS" and i.arg != len(code.co_freevars):
                raise BadCode(f"COPY_FREE_VARS {i.arg} with {len(code.co_freevars)} free "
                              "variables")
        elif i.opname not in ("EXTENDED_ARG", "NOP"):
            body = True
    if not any(i.opname == "RESUME" for i in insts):
        raise BadCode("no RESUME instruction")
    if code.co_freevars and not any(i.opname == "COPY_FREE_VARS" for i in insts):
        raise BadCode("free variables without COPY_FREE_VARS")
    if closure_size is not None and closure_size != len(code.co_freevars):
        raise BadCode(f"a closure of {closure_size} cells for {len(code.co_freevars)} free "
                      "variables")


def _check_operands(code, insts, starts) -> None:
    nlocals = len(code.co_varnames)
    localsplus = set(code.co_varnames) | set(code.co_cellvars) | set(code.co_freevars)
    derefs = set(code.co_cellvars) | set(code.co_freevars)
    for i in insts:
        if i.opcode in JUMPS and i.argval not in starts:
            raise BadCode(f"{i.opname} at {i.offset} jumps to {i.argval}, not an instruction")
        if i.opname in LOCAL_OPS and not (isinstance(i.argval, str) and
                                          i.argval in localsplus):  # 3.13: cells too
            raise BadCode(f"{i.opname} {i.argval!r}: not a local of {code.co_name}")
        if i.opname in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST",
                        "STORE_FAST_LOAD_FAST") and (i.arg > 255 or i.arg >> 4 >= nlocals or
                                                     i.arg & 15 >= nlocals):
            # two 4-bit local indices: an EXTENDED_ARG (an operand above 255) means other slots
            raise BadCode(f"{i.opname} {i.arg}: local index out of range")
        if i.opname in DEREF_OPS and i.argval not in derefs:
            raise BadCode(f"{i.opname} {i.argval!r}: not a cell or free variable")


def _covering(entries, offset):
    for e in entries:
        if e.start <= offset < e.end:
            return e
    return None


def _check_depths(code, insts, starts, entries, limit: int | None = None) -> int:
    generator = code.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE |
                                 inspect.CO_ASYNC_GENERATOR)
    depth: dict[int, int] = {0: 1 if generator and PY < (3, 13) else 0}
    work = [0]
    top = 0
    limit = code.co_stacksize if limit is None else limit

    def reach(k: int, d: int, why: str) -> None:
        if d < 0:
            raise BadCode(f"negative stack depth after {why}")
        if d > limit:
            raise BadCode(f"stack depth {d} exceeds co_stacksize {limit} ({why})")
        if k >= len(insts):
            raise BadCode(f"execution runs past the last instruction ({why})")
        old = depth.get(k)
        if old is None:
            depth[k] = d
            work.append(k)
        elif old != d:
            raise BadCode(f"offset {insts[k].offset} ({insts[k].opname}) reached with stack "
                          f"depths {old} and {d}")

    while work:
        k = work.pop()
        inst, d = insts[k], depth[k]
        top = max(top, d)
        where = f"{inst.opname} at offset {inst.offset}"
        entry = _covering(entries, inst.offset)
        if entry is not None:
            if d < entry.depth:
                raise BadCode(f"{where}: depth {d} below its handler's depth {entry.depth}")
            reach(starts[entry.target], entry.depth + 1 + entry.lasti, f"handler of {where}")
        if inst.opname in ("EXTENDED_ARG", "CACHE"):
            reach(k + 1, d, where)
            continue
        pops, net = _pops_pushes(inst, jump=False)
        if pops > d:
            raise BadCode(f"{where} pops {pops} values from a stack of {d}")
        if inst.opcode in JUMPS:
            jpops, jnet = _pops_pushes(inst, jump=True)
            if jpops > d:
                raise BadCode(f"{where} pops {jpops} values from a stack of {d}")
            reach(starts[inst.argval], d + jnet, where)
        if inst.opname not in TERMINAL:
            reach(k + 1, d + net, where)
    return top


# ---------------------------------------------------------------- against the original


def _real(code) -> tuple[list, dict]:
    """(instructions without EXTENDED_ARG, offset -> index; an EXTENDED_ARG's offset maps to
    the instruction it extends)."""
    insts, at, pending = [], {}, []
    for i in dis.get_instructions(code):
        pending.append(i.offset)
        if i.opname != "EXTENDED_ARG":
            for off in pending:
                at[off] = len(insts)
            insts.append(i)
            pending = []
    return insts, at


# instructions whose operand names a local or cell: a copy must name the same one
OPERAND_CHECKED = LOCAL_OPS | DEREF_OPS | {"LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST",
                                          "STORE_FAST_LOAD_FAST"}


# a 3.12+ inlined comprehension's handler (PEP 709): it restores the loop variable's outer
# value and re-raises, nothing else
_RESTORE = ["SWAP", "POP_TOP", "SWAP", "STORE_FAST", "RERAISE"]


def _is_restore_handler(insts, k: int) -> bool:
    return [i.opname for i in insts[k:k + len(_RESTORE)]] == _RESTORE


def check_table(original, code, origin: list, loop_fn: bool = False) -> None:
    """Raise BadCode unless every instruction of `code` copied from `original` is covered by
    the same handler, at the same depth and with the same lasti flag, as in `original`, and
    names the same local or cell when its operand is one (`OPERAND_CHECKED`).

    `origin[k]` is the index in `original` (EXTENDED_ARG excluded) of instruction k of `code`,
    or None for one capture added (prologue, loop exits). A resume prologue rebuilds the exact
    stack the original has at its target, so any other depth is wrong: too high, and the
    unwinding leaves values the handler does not know under its saved exception (its
    POP_EXCEPT then installs a wrong object as the thread's current exception: issue 13's
    SIGSEGV); too low, and it pops values code after the handler still uses.

    `loop_fn`: `code` runs a loop of `original` as a function of its own, outside every user
    try block (resume.make_loop_fn refuses those): an instruction there may lose the handler
    of a 3.12+ inlined comprehension (which only restores the comprehension variable in a
    frame the exception is leaving)."""
    g_insts, g_at = _real(code)
    o_insts, o_at = _real(original)
    if len(origin) != len(g_insts):
        raise BadCode(f"{len(origin)} origins for {len(g_insts)} instructions")
    g_entries = [e for e in dis.Bytecode(code).exception_entries if e.start < e.end]
    o_entries = [e for e in dis.Bytecode(original).exception_entries if e.start < e.end]

    def entry_of(entries, at, insts, k, mapped):
        e = _covering(entries, insts[k].offset)
        if e is None:
            return None
        return mapped(at[e.target]), e.depth, e.lasti

    for k, o in enumerate(origin):
        if o is None:
            continue
        g, w = g_insts[k], o_insts[o]
        if g.opname == w.opname and g.opname in OPERAND_CHECKED and g.argval != w.argval:
            # a local's index re-encoded wrong (3.13's 4-bit pairs): another slot is read
            raise BadCode(f"{g.opname} at offset {g.offset} names {g.argval!r}, the original "
                          f"{w.argval!r}")
        got = entry_of(g_entries, g_at, g_insts, k, lambda t: origin[t])
        want = entry_of(o_entries, o_at, o_insts, o, lambda t: t)
        if got is None and want is not None and loop_fn and \
                _is_restore_handler(o_insts, want[0]):
            continue
        if got != want:
            i = g_insts[k]
            raise BadCode(f"{i.opname} at offset {i.offset}: handler (original index, depth, "
                          f"lasti) {got}, the original has {want}")


def entered_normally(original, index: int) -> bool:
    """Whether instruction `index` of `original` (EXTENDED_ARG excluded) is reached from the
    function's entry without an exception edge. One that is not lies inside an except or
    finally handler: its stack holds the saved previous exception (and lasti) that
    PUSH_EXC_INFO put there, and the thread's current exception is the one being handled;
    a continuation started there in a new frame would have neither."""
    insts, at = _real(original)
    seen, work = {0}, [0]
    while work:
        k = work.pop()
        inst = insts[k]
        nxt = []
        if inst.opcode in JUMPS:
            nxt.append(at[inst.argval])
        if inst.opname not in TERMINAL:
            nxt.append(k + 1)
        for n in nxt:
            if n < len(insts) and n not in seen:
                seen.add(n)
                work.append(n)
    return index in seen


# ---------------------------------------------------------------- definite assignment


def _names(e: Instr) -> tuple[list, list, list]:
    """(names read, names bound, names unbound) by one abstract instruction."""
    name, arg = e.name, e.arg
    if isinstance(arg, (CellVar, FreeVar)):
        arg = arg.name if isinstance(arg, CellVar) else None
    if name in ("LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF"):
        return [arg], [], []
    if name in ("STORE_FAST", "STORE_DEREF"):
        return [], [arg], []
    if name in ("DELETE_FAST", "DELETE_DEREF"):
        return [arg], [], [arg]
    if name == "LOAD_FAST_LOAD_FAST":
        return list(arg), [], []
    if name == "STORE_FAST_STORE_FAST":
        return [], list(arg), []
    if name == "STORE_FAST_LOAD_FAST":
        return [arg[1]], [arg[0]], []  # the store happens first
    return [], [], []


def _bound_before(elements: list, params) -> dict:
    """id(Instr) -> frozenset of names certainly bound before it (reachable instructions only;
    a free variable or a name bound by the prologue counts as bound)."""
    instrs, label_at, try_of = [], {}, []
    current = None
    for e in elements:
        if isinstance(e, Label):
            label_at[id(e)] = len(instrs)
        elif isinstance(e, TryBegin):
            current = e
        elif isinstance(e, TryEnd):
            current = None
        elif isinstance(e, Instr):
            instrs.append(e)
            try_of.append(current)
    state: dict[int, frozenset] = {}
    work = []

    def flow(k: int, s: frozenset) -> None:
        if k >= len(instrs):
            return
        old = state.get(k)
        new = s if old is None else old & s
        if new != old:
            state[k] = new
            work.append(k)

    flow(0, frozenset(params))
    while work:
        k = work.pop()
        e, s = instrs[k], state[k]
        if try_of[k] is not None:
            flow(label_at[id(try_of[k].target)], s)
        reads, binds, unbinds = _names(e)
        after = (s | set(binds)) - set(unbinds)
        if e.name == "STORE_FAST_LOAD_FAST":
            after = s | set(binds)
        if isinstance(e.arg, Label):
            flow(label_at[id(e.arg)], after)
        if not (e.is_final() or e.is_uncond_jump()):
            flow(k + 1, after)
    return {id(instrs[k]): s for k, s in state.items()}


def check_bindings(original: list, params, generated: list, args, copies=None) -> None:
    """Raise BadCode when a load in `generated` (abstract elements) may find its name unbound
    while the same instruction in `original` always finds it bound. `copies`: id(Instr of
    `generated`) -> id(the Instr of `original` it was made from), for instructions that are
    not the original's own objects (a split two-local instruction)."""
    before = _bound_before(original, params)
    after = _bound_before(generated, args)
    copies = copies or {}
    for e in generated:
        key = copies.get(id(e), id(e))
        if not isinstance(e, Instr) or id(e) not in after or key not in before:
            continue
        reads, b, a = _names(e)[0], before[key], after[id(e)]
        if e.name == "STORE_FAST_LOAD_FAST":  # its load follows its own store
            b, a = b | {e.arg[0]}, a | {e.arg[0]}
        for name in reads:
            if name is not None and name in b and name not in a:
                raise BadCode(f"{e.name} {name!r} may read an unbound local that the "
                              "original always has bound")
