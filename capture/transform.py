"""From a captured frame state to Python values, and the continuation after a graph break.

`Templater` (in `templates.py`, re-exported here) turns trackers into *templates*: how to
rebuild each value on every call from the graph's outputs (`("graph", k)`), the fetched inputs,
objects read from the frame by their source, or constants. `rebuild` evaluates a template.

`build_continuation(cf, out, gb)` handles a `GraphBreak` raised in the top frame:
- "inst": the graph so far returns every tensor the stack and live locals hold; a generated
  break function runs the breaking instruction eagerly; a resume function (itself compiled on
  first call) continues after it. A call into user code that broke inside (a function, a bound
  method, `super().forward`, a module, a callable object) is run through its own compiled
  wrapper (`targets.compiled_callee`: its own graphs, guards and breaks).
- "branch": a jump on a tensor value; the graph also returns the condition and the
  continuation calls one of two resume functions.
- "loop": the break is inside a loop body: the graph stops before the loop, the loop runs
  eagerly as a generated function, and a resume function continues after it.
- "eager": the rest of the frame, from the break on, runs as plain (uncompiled) bytecode: a
  resume function that starts *at* the breaking instruction (or at the head of the loop the
  break is in), called directly instead of through `compile`.

Exceptions (the policy; issue 13): a break whose instruction (or enclosing loop head) lies
where an exception would be caught by a `try` of this frame (`except`/`finally`, reached
directly or through `with` exits and cleanup handlers: `handler_kind`) uses the "eager"
continuation. The breaking instruction, every later instruction and every handler then run in
CPython with the original exception table, so no exception escapes a handler that catches it,
no handler or `finally` is skipped, and handlers see the locals and stack of the plain
function; only the graph before the break (tensor ops, which raise at capture time when their
shapes are wrong, or make the whole frame run eagerly when they fail at run time) is compiled.
A break covered only by `with eager.no_grad()` blocks (and 3.12+ inlined-comprehension
cleanups) keeps the "inst"/"branch" continuations; when the eagerly run instruction raises, the
blocks' exits (`GradRestore`) run innermost first before the exception propagates, as
CPython's handlers would. An exception the capture itself meets (`1 / 0` folded, a `raise` of
a constant, a missing key) where a `try` of this frame or of an inlining caller would catch it
is a break at that instruction (`InstructionTranslator.caught_by_try`: the "eager"
continuation above); elsewhere it makes the whole frame run eagerly (and raise). Generated code that `verify.py` rejects, or a
continuation that cannot be built, falls back to "eager", then to the whole frame eagerly.
Touches `eager` (Tensor, grad mode), `capture`.
"""

from __future__ import annotations

import dis
import functools
import re

from eager import grad_mode

from . import autocast, nested_frames, resume
from .resume import LOOP_EXIT, CannotResume
from .variables import (
    CellVariable,
    FunctionVariable,
    NullVariable,
    SymBoolVariable,
    TensorVariable,
    UserObjectVariable,
)
from .targets import compiled_callee
from .templates import (  # noqa: F401  (re-exported: `transform.rebuild`, ...)
    GradRestore,
    ResumeIter,
    Templater,
    _restore_grad,
    rebuild,
)
from .vocabulary import is_internal

LOADS = {"LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF", "LOAD_CLOSURE", "DELETE_FAST",
         "LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST", "LOAD_FAST_AND_CLEAR"}


# ---------------------------------------------------------------- graph-break continuations


def _pops(inst) -> tuple[int, bool] | None:
    """(stack slots instruction `inst` reads, whether it reaches below them: LIST_APPEND...)."""
    name, a = inst.opname, inst.arg
    fixed = {"BINARY_OP": 2, "COMPARE_OP": 2, "CONTAINS_OP": 2, "IS_OP": 2,
             "BINARY_SUBSCR": 2, "STORE_ATTR": 2, "DELETE_SUBSCR": 2, "STORE_SUBSCR": 3,
             "BINARY_SLICE": 3, "STORE_SLICE": 4, "UNARY_NEGATIVE": 1, "UNARY_NOT": 1,
             "UNARY_INVERT": 1, "UNARY_POSITIVE": 1, "TO_BOOL": 1, "GET_ITER": 1,
             "LOAD_ATTR": 1, "LOAD_METHOD": 1, "FORMAT_SIMPLE": 1, "CONVERT_VALUE": 1,
             "DELETE_ATTR": 1, "UNPACK_SEQUENCE": 1, "UNPACK_EX": 1, "STORE_GLOBAL": 1,
             "CALL_INTRINSIC_1": 1, "FORMAT_WITH_SPEC": 2, "BEFORE_WITH": 1, "GET_LEN": 1}
    if name in fixed:
        return fixed[name], False
    if name == "CALL":
        return a + 2, False
    if name == "CALL_KW":
        return a + 3, False
    if name == "CALL_FUNCTION_EX":
        return (4 if a & 1 else 3), False
    if name == "FORMAT_VALUE":
        return (2 if a & 4 else 1), False
    if name in ("BUILD_TUPLE", "BUILD_LIST", "BUILD_SET", "BUILD_STRING", "BUILD_SLICE",
                "RAISE_VARARGS"):
        return a, False
    if name == "BUILD_MAP":
        return 2 * a, False
    if name == "BUILD_CONST_KEY_MAP":
        return a + 1, False
    if name in ("LIST_APPEND", "SET_ADD", "LIST_EXTEND", "SET_UPDATE", "DICT_UPDATE",
                "DICT_MERGE"):
        return a + 1, True
    if name == "MAP_ADD":
        return a + 2, True
    return None


def needed_locals(tx, start: int, names) -> list:
    """The names among `names` that some instruction at index >= start reads."""
    read = set()
    for inst in tx.instructions[start:]:
        if inst.opname in LOADS:
            val = inst.argval
            if isinstance(val, tuple):
                read.update(val)
            else:
                read.add(val)
    return [n for n in names if n in read]


def _layout(stack) -> list:
    return ["null" if isinstance(v, NullVariable) else "v" for v in stack]


def _name(kind: str, tx, index: int) -> str:
    inst = tx.instructions[index]
    line = inst.positions.lineno if inst.positions and inst.positions.lineno else \
        tx.code.co_firstlineno
    base = tx.code.co_name.strip("<>")
    m = re.fullmatch(r"__(?:resume|loop|break)_in_(.+)_at_\d+", base)
    return f"__{kind}_in_{m.group(1) if m else base}_at_{line}"


def _outer_loop(tx, index: int):
    best = None
    for head, end in tx.loops:
        if head <= index <= end and head in tx.loop_snaps and (best is None or
                                                                head < best[0]):
            best = (head, end)
    return best


class Continuation:
    """What a resume entry does after its graph: see the module doc. `run(outs, inputs, objs)`
    returns the function's result."""

    def __init__(self, cf, tx, kind, snap, templater, stack_t, local_names, locals_t):
        self.cf, self.tx, self.kind = cf, tx, kind
        self.fn = tx.fn
        self.grad_enabled = snap.grad_enabled
        self.autocast_regions = getattr(snap, "autocast", ())
        self.stack_t, self.local_names, self.locals_t = stack_t, local_names, locals_t
        self.templater = templater
        self.layout = _layout(snap.stack)
        self.generated: list = []  # (name, code) of every generated function, for dumps
        self.resumes: dict = {}

    def resume_fn(self, target: int, layout: list, names: list, key=None):
        key = key or (target, tuple(layout), tuple(names))
        hit = self.resumes.get(key)
        if hit is None:
            name = _name("resume", self.tx, target)
            fn, _ = resume.make_resume(self.fn, target, layout, names, name)
            self.generated.append((name, fn.__code__))
            hit = self.resumes[key] = self.cf.child(fn)
            if getattr(self.cf, "mid_loop", False) and self.kind != "loop":
                hit.mid_loop = True  # still inside the loop a callee broke in
        return hit

    def values(self, outs, inputs, objs, cells=None):
        cells = {} if cells is None else cells
        stack = [rebuild(t, outs, inputs, objs, cells) for t in self.stack_t]
        locs = [rebuild(t, outs, inputs, objs, cells) for t in self.locals_t]
        if grad_mode.is_grad_enabled() != self.grad_enabled:
            grad_mode._set(self.grad_enabled)
        autocast.enter_pending(self.autocast_regions)  # the regions the graph entered
        return stack, locs


class InstContinuation(Continuation):
    def setup(self, index, snap, callee_slot):
        tx = self.tx
        pops, deep = _pops(tx.instructions[index]) or (None, None)
        if pops is None or pops > len(self.layout):
            raise CannotResume(f"{tx.instructions[index].opname} cannot run on its own")
        inst = tx.instructions[index]
        effect = dis.stack_effect(inst.opcode, inst.arg if inst.opcode >= dis.HAVE_ARGUMENT
                                  else None, jump=False)
        if inst.opname == "CALL" and resume.PY == (3, 11):
            effect += dis.stack_effect(dis.opmap["PRECALL"], inst.arg)
        pushes = pops + effect
        region = self.layout[len(self.layout) - pops:]
        if deep and "null" in region:
            raise CannotResume("a NULL below a container being built")
        self.pops = pops
        name = _name("break", tx, index)
        self.break_fn, after = resume.make_break_fn(self.fn, index, region, pushes,
                                                    snap.kw_names, name)
        self.generated.append((name, self.break_fn.__code__))
        self.after_layout = self.layout[:len(self.layout) - pops] + after
        self.resume = self.resume_fn(index + 1, self.after_layout, self.local_names)
        if callee_slot is not None:
            k = len(self.stack_t) - pops + callee_slot
            self.stack_t[k] = ("callee", self.stack_t[k])

    def run(self, outs, inputs, objs, cells=None):
        stack_t = self.stack_t
        stack, locs = self.values(outs, inputs, objs, cells)
        for k, t in enumerate(stack_t):
            if t[0] == "callee":
                stack[k] = compiled_callee(self.cf, rebuild(t[1], outs, inputs, objs))
        base = len(stack) - self.pops
        top = [v for v, slot in zip(stack[base:], self.layout[base:]) if slot != "null"]
        try:
            pushed = list(self.break_fn(*top))
        except BaseException as e:
            _unwind(stack, e)
            raise
        below = [v for v, slot in zip(stack[:base], self.layout[:base]) if slot != "null"]
        return self.resume(*below, *pushed, *locs)


class BranchContinuation(Continuation):
    def setup(self, index, gb):
        tx = self.tx
        inst = tx.instructions[index]
        self.cond_t = self.templater.t(gb.cond)
        self.negate = gb.negate
        self.jump_when = "TRUE" in inst.opname
        layout = self.layout[:-1]
        self.stack_t = self.stack_t[:-1]
        self.on_jump = self.resume_fn(tx.index_of[inst.argval], layout, self.local_names)
        self.on_next = self.resume_fn(index + 1, layout, self.local_names)
        self.layout = layout

    def run(self, outs, inputs, objs, cells=None):
        stack, locs = self.values(outs, inputs, objs, cells)
        try:
            truth = bool(rebuild(self.cond_t, outs, inputs, objs)) != self.negate
        except BaseException as e:
            _unwind(stack, e)
            raise
        args = [v for v, slot in zip(stack, self.layout) if slot != "null"]
        fn = self.on_jump if truth == self.jump_when else self.on_next
        return fn(*args, *locs)


class LoopContinuation(Continuation):
    def setup(self, head, end):
        tx = self.tx
        self.exit_depth = len(self.layout) - (tx.instructions[head].opname == "FOR_ITER")
        name = _name("loop", tx, head)
        self.loop_fn, self.exits, _ = resume.make_loop_fn(
            self.fn, head, end, self.layout, self.exit_depth, self.local_names, name)
        self.generated.append((name, self.loop_fn.__code__))
        # the exits' resume functions are built on the call, after the loop ran: check now
        # that each can be built (and verified) with every local bound
        code = self.fn.__code__
        names = [n for n in dict.fromkeys(code.co_varnames + code.co_cellvars)  # an argument
                 if n not in code.co_freevars]  # a closure reads is in both: once
        for k in self.exits:
            resume.make_resume(self.fn, k, self.layout[:self.exit_depth], names, name)

    def run(self, outs, inputs, objs, cells=None):
        stack, locs = self.values(outs, inputs, objs, cells)
        args = [v for v, slot in zip(stack, self.layout) if slot != "null"]
        with nested_frames.region(self.cf):  # (modules called in the loop: compiled)
            r = self.loop_fn(*args, *locs)
        if not (type(r) is tuple and len(r) == 3 and r[0] is LOOP_EXIT):
            return r  # a `return` inside the loop
        _, k, env = r
        freevars = self.fn.__code__.co_freevars
        names = [n for n in env if n not in freevars and not n.startswith("___stack")]
        layout = self.layout[:self.exit_depth]
        fn = self.resume_fn(self.exits[k], layout, names)
        below = [v for v, slot in zip(stack[:self.exit_depth], layout) if slot != "null"]
        return fn(*below, *[env[n] for n in names])


def _unwind(stack, exc) -> None:
    """Run the `with eager.no_grad()` exits on `stack` innermost first, as CPython's handlers
    do for an exception raised inside the blocks (none of them suppresses it)."""
    for v in reversed(stack):
        if isinstance(v, (GradRestore, autocast.AutocastRestore)):
            v(type(exc), exc, exc.__traceback__)


class EagerContinuation(Continuation):
    def setup(self, start, snap, index, callee_slot):
        """Resume at `start`: the break's `index`, or the KW_NAMES/PRECALL that open its call,
        or the head of the loop around it."""
        tx = self.tx
        for v in snap.stack:  # a tensor's truth value is taken in the resumed code
            if isinstance(v, SymBoolVariable) and not _one_element(v.tensor):
                raise CannotResume("the truth value of a tensor that is not one element")
        name = _name("resume", tx, start)
        self.resume, _ = resume.make_resume(self.fn, start, self.layout, self.local_names,
                                            name)
        self.generated.append((name, self.resume.__code__))
        self.callee_k = None
        if callee_slot is not None:
            self.callee_k = len(self.stack_t) - _pops(tx.instructions[index])[0] + callee_slot

    def run(self, outs, inputs, objs, cells=None):
        stack, locs = self.values(outs, inputs, objs, cells)
        if self.callee_k is not None:  # a user function that broke while inlined
            stack[self.callee_k] = compiled_callee(self.cf, stack[self.callee_k])
        args = [v for v, slot in zip(stack, self.layout) if slot != "null"]
        with nested_frames.region(self.cf):
            return self.resume(*args, *locs)


def _one_element(t) -> bool:
    shape = getattr(getattr(t, "meta", None), "shape", None)
    return shape is not None and all(type(d) is int for d in shape) and \
        functools.reduce(lambda a, b: a * b, shape, 1) == 1


def handler_kind(code, offset: int) -> str | None:
    """What of `code` handles an exception raised at `offset`: "try" when an `except` or
    `finally` of this frame does (possibly after `with` exits and cleanup handlers), "with"
    when only `with` exits (and cleanups such as 3.12's inlined-comprehension restores) run
    before it leaves the frame, None when nothing does."""
    entries = list(dis.Bytecode(code).exception_entries)
    first = {}
    insts = [i for i in dis.get_instructions(code) if i.opname != "EXTENDED_ARG"]
    for k, i in enumerate(insts):
        first[i.offset] = [j.opname for j in insts[k:k + 2]]
    kind, seen = None, set()
    while True:
        entry = next((e for e in entries if e.start <= offset < e.end), None)
        if entry is None:
            return kind
        if entry.target in seen:
            return "try"  # a cycle: assume the worst
        seen.add(entry.target)
        ops = first.get(entry.target, [])
        if ops[:1] == ["PUSH_EXC_INFO"]:
            if ops[1:2] != ["WITH_EXCEPT_START"]:
                return "try"
            kind = "with"
        offset = entry.target


def build_continuation(cf, out, gb):
    """(Continuation, Templater) for a GraphBreak raised in the top frame (CannotResume when
    this break point cannot be resumed: the caller runs the frame eagerly)."""
    if gb.frame is None:
        raise CannotResume("the break happened outside the top frame")
    tx, index, snap = gb.frame
    loop = _outer_loop(tx, index)
    if loop is not None and gb.kind != "branch" and not getattr(cf, "mid_loop", False) and \
            _callee_slot(tx, index, snap) is not None and \
            handler_kind(tx.code, tx.instructions[index].offset) is None:
        # a callee that broke inside, called in a loop body (a layer of a ModuleList stack):
        # the loop's graph ends at the call, the callee runs compiled, and the resume function
        # goes on with the loop unrolled (the iterator's items are known: `ResumeIter`). Its
        # own breaks inside this loop run the loop eagerly (`mid_loop`): no chain of resume
        # frames one per iteration.
        try:
            cont, templater = _continuation(cf, out, gb, tx, index, snap, index,
                                            InstContinuation, None)
            for hit in cont.resumes.values():
                hit.mid_loop = True
            return cont, templater
        except CannotResume:
            pass
    if loop is not None:
        snap = tx.loop_snaps[loop[0]]
        start, cls = loop[0], LoopContinuation
    elif gb.kind == "branch" and tx.instructions[index].opname.startswith("POP_JUMP"):
        start, cls = index, BranchContinuation
    else:
        start, cls = index, InstContinuation
    if handler_kind(tx.code, tx.instructions[start].offset) == "try":
        cls = EagerContinuation
    try:
        return _continuation(cf, out, gb, tx, index, snap, start, cls, loop)
    except CannotResume as e:
        if cls is EagerContinuation:
            raise
        from . import logs

        logs.log("breaks", f"{tx.code.co_name}: {cls.__name__} unavailable ({e}); the rest "
                           "of the frame runs eagerly")
        return _continuation(cf, out, gb, tx, index, snap, start, EagerContinuation, loop)


def _continuation(cf, out, gb, tx, index, snap, start, cls, loop):
    if cls is EagerContinuation and start == index:
        # a call's KW_NAMES (3.11, 3.12) and PRECALL (3.11) have run: resume before them
        while start and tx.instructions[start - 1].opname in ("PRECALL", "KW_NAMES"):
            start -= 1
    snap.restore()
    out.side_effects.restore(getattr(snap, "effects", 0))  # what the break recorded: eager
    out.grad_enabled = snap.grad_enabled
    templater = Templater(out)
    templater.alias_intermediates = True  # eager code runs on: views must alias their bases
    env = dict(snap.locals)
    env.update({n: v for n, v in snap.cells.items() if v is not CellVariable.EMPTY})
    names = needed_locals(tx, start, list(env))
    stack_t = [templater.t(v) for v in snap.stack]
    locals_t = [templater.t(env[n]) for n in names if n not in tx.code.co_freevars]
    names = [n for n in names if n not in tx.code.co_freevars]
    cont = cls(cf, tx, cls.__name__[:-12].lower(), snap, templater, stack_t, names, locals_t)
    if cls is LoopContinuation:
        cont.setup(*loop)
    elif cls is BranchContinuation:
        cont.setup(index, gb)
    elif cls is EagerContinuation:
        slot = _callee_slot(tx, index, snap) if loop is None else None
        cont.setup(start, snap, index, slot)
    else:
        cont.setup(index, snap, _callee_slot(tx, index, snap))
    return cont, templater


def _callee_slot(tx, index, snap):
    """Offset (in the consumed region) of the user code being called, if any: a Python
    function, a method bound to an object that is not a tensor, a module or a callable object
    (`targets.callee_target` decides at run time what is compiled; anything else runs as is)."""
    inst = tx.instructions[index]
    if inst.opname not in ("CALL", "CALL_KW"):
        return None
    n = inst.arg + 2 + (inst.opname == "CALL_KW")
    region = snap.stack[len(snap.stack) - n:]
    for k in (0, 1):
        v = region[k]
        if isinstance(v, FunctionVariable) and not (
                isinstance(v.self_var, TensorVariable) or
                is_internal(v.value) or  # eager's API: a named break, run as one call
                getattr(v.value, "__wick_graph_break__", False) or
                getattr(v.value, "__wick_disable__", False)):
            return k
        if type(v) is UserObjectVariable and not isinstance(v.value, type):
            return k
    return None
