"""Generated code objects for graph breaks, assembled with the `bytecode` library.

- `make_resume(fn, target, layout, local_names, name)`: a *resume function*: the original code
  with a prologue that pushes the saved stack (`LOAD_FAST ___stackN`, or `PUSH_NULL` for the
  3.11+ NULL slots) and jumps to instruction `target`; its parameters are the stack slots then
  the live locals. Prefix instructions (`MAKE_CELL`, `COPY_FREE_VARS`, `RESUME`) stay first,
  so cells and free variables work; varargs flags are cleared. (TorchDynamo's
  `resume_execution.py`.)
- `make_break_fn(...)`: a tiny function that runs *one* instruction eagerly on the stack slots
  it consumes and returns what it pushes (`print(...)`, `x.item()`, a call into numpy).
- `make_loop_fn(...)`: the code of a loop (from its head to its last backward jump) as a
  function: a graph break inside a loop body runs the loop eagerly and keeps the code before
  and after it compiled. Every exit returns `(LOOP_EXIT, exit index, locals())`.

Exception tables: a resume function keeps the original code, handlers and exception table
whole, and every table entry keeps the original's depth (`_assemble`: the prologue rebuilds
the original stack at the target, so those depths are exact; the library's own estimate was
wrong for code entered in the middle, and a handler that unwound to a wrong depth installed a
wrong object as the thread's current exception: SIGSEGV, issue 13). The prologue's jump may
land inside a try region; the region is split at the target (`_split_try_at`: closed before
it, reopened after it with the same handler and depth). A target inside an except/finally
handler is refused (its stack holds what PUSH_EXC_INFO saved, which a new frame lacks).
Every assembled code object is checked by `verify.py` (stack depths with exception edges,
table entries, prefix, operands, every copied instruction covered by the original's handler
at the original's depth, and no load of a local the original always had bound); a rejected
one raises CannotResume, and capture falls back to running the rest of the frame, or the
whole frame, eagerly (`transform.py` states the policy for breaks inside `try`).

Readable names: `__resume_in_f_at_12` (12 = the source line). Touches `bytecode` and `types`.
"""

from __future__ import annotations

import dis
import inspect
import sys
import types

from bytecode import Bytecode, Instr, Label, TryBegin, TryEnd
from bytecode.instr import CellVar, FreeVar

from . import verify

PY = sys.version_info[:2]
PREFIX = ("MAKE_CELL", "COPY_FREE_VARS", "RESUME")
LOOP_EXIT = type("LoopExit", (), {"__repr__": lambda self: "LOOP_EXIT"})()


class CannotResume(Exception):
    """This break point cannot be turned into resume code (the frame runs eagerly instead)."""


def instrs_by_index(code) -> tuple:
    """(Bytecode, list of the Instr objects in `dis.get_instructions` order, EXTENDED_ARG
    excluded), checked opname by opname."""
    bc = Bytecode.from_code(code, conserve_exception_block_stackdepth=True)
    instrs = [e for e in bc if isinstance(e, Instr)]
    ref = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    if len(ref) != len(instrs) or any(a.opname != b.name for a, b in zip(ref, instrs)):
        raise CannotResume("bytecode and dis disagree on this code object")
    return bc, instrs


def _new_code(bc: Bytecode, elements: list, args: list, name: str, template,
              entry: Label | None = None, closure=None,
              alias: dict | None = None, loop_fn: bool = False) -> types.CodeType:
    """Assemble `elements` (the `bytecode` library; exception-table depths are the original's,
    `_assemble`) and verify the result (`verify.py`) against the original `bc` when there is
    one; CannotResume when either refuses, or when `entry` lies inside an except/finally
    handler (`verify.entered_normally`). `alias`: id(new Instr) -> the original Instr it
    replaces (a jump retargeted to a loop exit)."""
    if entry is not None:
        elements = _split_try_at(elements, entry)
    elements, pairs = _split_super_instructions(elements)
    origin = None
    if bc is not None:
        index = {id(e): k for k, e in enumerate(e for e in bc if isinstance(e, Instr))}
        index.update({new: index[id(old)] for new, old in (alias or {}).items()})
        index.update({new: index[old] for new, old in pairs.items() if old in index})
        if entry is not None:
            first = next(e for e in elements[elements.index(entry):] if isinstance(e, Instr))
            if not verify.entered_normally(template, index[id(first)]):
                raise CannotResume(f"generated {name} fails verification: it starts inside "
                                   "an except or finally handler")
        origin = [index.get(id(e)) for e in elements if isinstance(e, Instr)]
    out = Bytecode(elements)
    out.name = name
    out.filename = template.co_filename
    out.first_lineno = template.co_firstlineno
    out.cellvars = list(bc.cellvars) if bc is not None else []
    out.freevars = list(bc.freevars) if bc is not None else []
    out.argnames = list(args)
    out.argcount = len(args)
    out.posonlyargcount = 0
    out.kwonlyargcount = 0
    flags = template.co_flags if bc is not None else inspect.CO_OPTIMIZED | inspect.CO_NEWLOCALS
    flags &= ~(inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
    out.flags = flags
    if PY >= (3, 11):
        out.qualname = name
    try:
        # the exception table keeps the original's depths (`_assemble`)
        code = _assemble(out, bc is not None)
        verify.verify_code(code, len(closure or ()) if bc is not None else 0)
        if bc is not None:
            verify.check_table(template, code, origin, loop_fn)
            verify.check_bindings(list(bc), _params(template), elements, args, pairs)
    except verify.BadCode as e:
        raise CannotResume(f"generated {name} fails verification: {e}") from None
    except Exception as e:  # noqa: BLE001 - the assembler's own checks (stack size, jumps)
        raise CannotResume(f"cannot assemble {name}: {type(e).__name__}: {e}") from None
    return _identifier_names(code)


def _identifier_names(code: types.CodeType) -> types.CodeType:
    """`code` with its locals that are not Python identifiers renamed (pytest's rewritten
    asserts bind `@py_assert2`): a generated function's parameters become the parameters of
    its guards and hit functions, which are Python source. Locals are indexed by position, so
    only the names change; the same mapping on every generated function keeps `locals()` (a
    loop function's exit) and keyword calls of the next one consistent."""
    names = code.co_varnames
    if all(n.isidentifier() for n in names):
        return code
    taken = set(names) | set(code.co_cellvars) | set(code.co_freevars)
    new = []
    for n in names:
        if n.isidentifier():
            new.append(n)
            continue
        base = "___" + "".join(c if c.isalnum() or c == "_" else "_" for c in n)
        m, i = base, 0
        while m in taken:
            i += 1
            m = f"{base}{i}"
        taken.add(m)
        new.append(m)
    return code.replace(co_varnames=tuple(new))


SUPER_INSTRUCTIONS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
                      "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST"),
                      "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST")}


def _split_super_instructions(elements: list) -> tuple[list, dict]:
    """3.13's two-local instructions (`LOAD_FAST_LOAD_FAST a, b`...) as two plain ones.

    Their operand packs two local indices in 4 bits each; a generated function puts its
    `___stack` arguments first, so the original's locals move up and an index can reach 16.
    The `bytecode` library then encodes the pair with an EXTENDED_ARG that CPython reads as
    other slots (a store into the wrong local, a later read of an unset one: SIGSEGV, issue
    13). Returns the new elements and id(new Instr) -> id(the Instr it came from)."""
    out, pairs = [], {}
    for e in elements:
        ops = SUPER_INSTRUCTIONS.get(e.name) if isinstance(e, Instr) else None
        if ops is None:
            out.append(e)
            continue
        for op, arg in zip(ops, e.arg):
            new = Instr(op, arg, location=e.location)
            pairs[id(new)] = id(e)
            out.append(new)
    return out, pairs


def _assemble(out: Bytecode, keep_depths: bool) -> types.CodeType:
    """The code object of `out`. With `keep_depths`, every exception-table entry keeps the
    depth of the original entry it comes from (`TryBegin.stack_depth`, kept by `instrs_by_index`):
    the prologue rebuilds the original stack at the target, so the original depths are exact
    at every instruction reachable from it. The library's own estimate (the lowest depth seen
    between a TryBegin and its TryEnd on the paths it walks) went wrong for code entered in
    the middle: it gave a handler of a `try` nested in an `except` block a depth 2 too high,
    unwinding left the handler's saved exception buried under values it does not know, and
    its POP_EXCEPT set the thread's current exception to an object it did not own (SIGSEGV
    later, issue 13). `co_stacksize` is the verifier's exact maximum when that is larger."""
    code = out.to_code(compute_exception_stack_depths=not keep_depths)
    top = verify.max_depth(code)
    return code.replace(co_stacksize=top) if top > code.co_stacksize else code


def _params(code) -> tuple:
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & inspect.CO_VARARGS) + bool(code.co_flags & inspect.CO_VARKEYWORDS)
    return code.co_varnames[:n]


def _split_try_at(elements: list, entry: Label) -> list:
    """When label `entry` (the prologue's jump target) lies inside a try region, close the
    region before it and open a copy after it, so that the path from the prologue enters the
    region through a TryBegin (the library's stack-size pass and the assembled table then
    cover the target; a jump into the middle of a region would leave its depth unset)."""
    out, current, copy = [], None, None
    for e in elements:
        if isinstance(e, TryBegin):
            current, copy = e, None
        elif isinstance(e, TryEnd):
            if copy is not None and e.entry is current:
                e = TryEnd(copy)
            current = copy = None
        if e is entry and current is not None:
            copy = TryBegin(current.target, current.push_lasti, current.stack_depth)
            out += [TryEnd(current), e, copy]
            continue
        out.append(e)
    return out


def _push_slots(layout: list) -> tuple[list, list]:
    """Instructions pushing a stack layout ("v" = argument, "null"), and the argument names."""
    code, args = [], []
    for slot in layout:
        if slot == "null":
            code.append(Instr("PUSH_NULL"))
        else:
            args.append(f"___stack{len(args)}")
            code.append(Instr("LOAD_FAST", args[-1]))
    return code, args


def make_resume(fn, target: int, layout: list, local_names: list, name: str):
    """The resume function of `fn` at instruction index `target` (see the module doc)."""
    code = fn.__code__
    bc, instrs = instrs_by_index(code)
    target_instr = instrs[target]
    prefix = instrs[:_first_body(instrs)]
    skip = {id(e) for e in prefix}
    push, args = _push_slots(layout)
    args += [n for n in local_names if n not in code.co_freevars]
    label = Label()
    body = []
    for e in bc:
        if id(e) in skip:
            continue
        if e is target_instr:
            # enter through the TryBegins just before the target, not past them
            k = len(body)
            while k and isinstance(body[k - 1], TryBegin):
                k -= 1
            body.insert(k, label)
        body.append(e)
    elements = prefix + push + [Instr("JUMP_FORWARD", label)] + body
    new = _new_code(bc, elements, args, name, code, label, fn.__closure__)
    return types.FunctionType(new, fn.__globals__, name, None, fn.__closure__), args


def _first_body(instrs) -> int:
    for i, e in enumerate(instrs):
        if e.name not in PREFIX:
            return i
    return len(instrs)


def make_break_fn(fn, index: int, region: list, pushes: int, kw_names: tuple, name: str):
    """A function running instruction `index` of `fn` on the `region` slots ("v"/"null") it
    consumes; returns (function, layout of what it leaves on the stack)."""
    code = fn.__code__
    _, instrs = instrs_by_index(code)
    inst = instrs[index]
    if isinstance(inst.arg, (Label, CellVar, FreeVar)) or inst.name in (
            "STORE_FAST", "LOAD_FAST", "DELETE_FAST", "STORE_DEREF", "LOAD_DEREF",
            "RETURN_VALUE", "FOR_ITER", "YIELD_VALUE", "LOAD_CLOSURE", "MAKE_CELL"):
        raise CannotResume(f"{inst.name} cannot run on its own")
    push, args = _push_slots(region)
    body = []
    after = ["v"] * pushes
    if inst.name in ("LOAD_METHOD", "LOAD_ATTR") and (
            inst.name == "LOAD_METHOD" or PY >= (3, 12) and inst.arg[0]):
        attr = inst.arg if inst.name == "LOAD_METHOD" else inst.arg[1]
        body.append(Instr("LOAD_ATTR", (False, attr) if PY >= (3, 12) else attr))
        after = ["v", "null"] if PY >= (3, 13) else ["null", "v"]
        pushes = 1
    else:
        if inst.name == "CALL" and PY <= (3, 12) and kw_names:
            body.append(Instr("KW_NAMES", tuple(kw_names)))
        if inst.name == "CALL" and PY == (3, 11):
            body.append(Instr("PRECALL", inst.arg))
        body.append(Instr(inst.name, inst.arg) if inst.require_arg() else Instr(inst.name))
    body += [Instr("BUILD_TUPLE", pushes), Instr("RETURN_VALUE")]
    start = [Instr("RESUME", 0)]
    new = _new_code(None, start + push + body, args, name, code)
    return types.FunctionType(new, fn.__globals__, name), after


def make_loop_fn(fn, head: int, end: int, layout: list, exit_depth: int, local_names: list,
                 name: str):
    """A function running instructions head..end of `fn` (a loop) from the given stack layout;
    returns (function, exit indices): each exit returns `(LOOP_EXIT, k, locals())`."""
    code = fn.__code__
    bc, instrs = instrs_by_index(code)
    if instrs[head].name == "FOR_ITER":  # the loop's code runs up to FOR_ITER's target
        target = instrs[head].arg
        pos = next(i for i, e in enumerate(bc) if e is target)
        end = max(end, _next_instr_index(instrs, list(bc)[pos:]) - 1)
    # 3.12+: FOR_ITER's exhaustion skips END_FOR (and 3.13's POP_TOP): keep them in range
    while end + 1 < len(instrs) and instrs[end + 1].name in ("END_FOR", "POP_TOP") and \
            PY >= (3, 12) and (instrs[end + 1].name == "END_FOR" or
                               instrs[end].name == "END_FOR"):
        end += 1
    lo, hi = instrs[head], instrs[end]
    elements = list(bc)
    i0 = next(i for i, e in enumerate(elements) if e is lo)
    i1 = next(i for i, e in enumerate(elements) if e is hi)
    # labels just before the head belong to the range
    while i0 > 0 and isinstance(elements[i0 - 1], Label):
        i0 -= 1
    inside = elements[i0:i1 + 1]
    defined = {id(e) for e in inside if isinstance(e, Label)}
    begins = {id(e) for e in inside if isinstance(e, TryBegin)}
    for e in inside:
        if isinstance(e, TryBegin) and id(e.target) not in defined:
            raise CannotResume("a loop inside a try block that handles its exceptions")
        if isinstance(e, TryEnd) and id(e.entry) not in begins:
            raise CannotResume("a loop that starts inside a try block")
    # the instruction after the range, and every jump target outside it, is an exit
    after = elements[i1 + 1:]
    label_pos = {id(e): k for k, e in enumerate(elements) if isinstance(e, Label)}
    exits: dict[int, Label] = {}
    exit_index: list[int] = []

    def exit_label(label_or_next) -> Label:
        key = id(label_or_next)
        if key not in exits:
            exits[key] = Label()
            if label_or_next is None:
                tgt = _next_instr_index(instrs, after)
            else:
                tgt = _next_instr_index(instrs, elements[label_pos[key]:])
            exit_index.append(tgt)
        return exits[key]

    body, alias = [], {}
    for e in inside:
        if isinstance(e, Instr) and isinstance(e.arg, Label) and id(e.arg) not in defined:
            old, e = e, Instr(e.name, exit_label(e.arg), location=e.location)
            alias[id(e)] = old
        body.append(e)
    if not (isinstance(hi, Instr) and hi.name in ("JUMP_BACKWARD", "JUMP_FORWARD",
                                                   "RETURN_VALUE", "RETURN_CONST")):
        body.append(Instr("JUMP_FORWARD", exit_label(None)))
    tail = []
    for k, (key, label) in enumerate(exits.items()):
        tail.append(label)
        # the stack below is left as it is: RETURN_VALUE's frame clearing releases it
        # (XDECREF), which is also safe for the NULL slots of pending calls
        tail += [Instr("LOAD_CONST", LOOP_EXIT), Instr("LOAD_CONST", k),
                 Instr("LOAD_CONST", locals)] + _call_prefix_after() + \
            [Instr("BUILD_TUPLE", 3), Instr("RETURN_VALUE")]
    prefix = instrs[:_first_body(instrs)]
    push, args = _push_slots(layout)
    args += [n for n in local_names if n not in code.co_freevars]
    start = Label()
    elements = prefix + push + [Instr("JUMP_FORWARD", start), start] + body + tail
    new = _new_code(bc, elements, args, name, code, start, fn.__closure__, alias, True)
    return types.FunctionType(new, fn.__globals__, name, None, fn.__closure__), exit_index, \
        args


def _call_prefix_after():
    """Call the callable on top of the stack with no arguments (it was pushed last)."""
    if PY >= (3, 13):
        return [Instr("PUSH_NULL"), Instr("CALL", 0)]
    # 3.11/3.12: CALL expects [NULL, callable]; push NULL then swap it under the callable
    seq = [Instr("PUSH_NULL"), Instr("SWAP", 2)]
    return seq + ([Instr("PRECALL", 0)] if PY == (3, 11) else []) + [Instr("CALL", 0)]


def _next_instr_index(instrs, elements) -> int:
    for e in elements:
        if isinstance(e, Instr):
            return next(i for i, x in enumerate(instrs) if x is e)
    raise CannotResume("a loop exit with no instruction after it")
