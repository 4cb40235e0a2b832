"""Graph-break records: why capture stopped (`BreakReason`, with a stable id, the user's
file:line and source line, a reason and a hint), the exception that carries it through the
interpreter (`GraphBreak`), the user-facing error of `fullgraph=True` (`Unsupported`), and the
top frame's `Snapshot` before each instruction, from which a break resumes. Touches the
trackers of `variables.py` only.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

from .variables import DictVariable, IteratorVariable, SequenceVariable, TensorVariable

HINTS = {
    "builtin print": "print() writes to stdout: move it out of the compiled function, or accept the "
             "break (the rest stays compiled)",
    "item()": "`.item()` reads a tensor value into Python; keep the value as a 0-d tensor",
    "tolist()": "`.tolist()` reads tensor values into Python; keep them as tensors",
    "numpy()": "`.numpy()` leaves the graph; use eager ops instead of numpy",
    "tensor value": "control flow on a tensor's value: use eager.where(cond, a, b) to keep "
                    "one graph",
    "graph_break": "capture.graph_break() was called on purpose",
    "disable": "the callee is marked capture.disable",
    "C function": "a call into C or an unknown module runs eagerly; use eager ops",
    "mutation": "mutating Python objects is run eagerly; return new values instead",
    "boolean mask": "x[mask] has a data-dependent shape: eager.where(mask, x, 0) or x * mask "
                    "keep one graph",
    "instruction": "this bytecode instruction is not modelled by capture",
    "backward()": "autograd runs eagerly: compile the model's forward (or the loss) and call "
                  "backward() outside, or accept the break (the graphs around it stay)",
    "has no graph form": "this eager API runs eagerly at this call; the code before and after "
                         "it stays compiled (move it out of the compiled function to keep one "
                         "graph)",
    "logging": "logging writes output: log outside the compiled function, or accept the break",
    "breakpoint": "breakpoint() runs the frame eagerly on purpose",
    "data-dependent output shape": "the result's shape depends on tensor values: use a "
                                   "fixed-shape form (where, masked_fill) to keep one graph",
    "branch on a tensor": "control flow on a tensor's value: use eager.where(cond, a, b) to "
                          "keep one graph",
    "in-place op": "in-place ops on aliased or grad-requiring tensors run eagerly: use the "
                   "out-of-place op (x = x + y) to keep one graph",
    "mutation of Python state": "mutating this Python object is run eagerly; return new "
                                "values instead, or keep the state on a module attribute",
    "mutation of a closure": "writing a closure variable runs eagerly: return the value instead",
    "raise statement": "the exception is raised eagerly, as without compile",
    "too many instructions": "a long unrolled loop: use tensor ops over the loop dimension, or "
                             "raise capture.config.instruction_limit",
    "inlining deeper": "calls nested deeper than capture.config.inline_depth_limit run as their "
                       "own frames",
    "not supported by capture": "an API capture does not model yet: it runs eagerly at this "
                                "call (please report it)",
    "call to": "a call into C or an unknown module runs eagerly; use eager ops",
    "iterating over": "iterate over a Python container or range; a tensor's rows can be "
                      "reached by indexing (x[i]) or unbind()",
    "returning": "return tensors, numbers or containers of them from a compiled function",
}


@dataclass
class BreakReason:
    """Why capture stopped: what, at which instruction, where in the user's source."""

    reason: str
    instruction: str
    filename: str
    lineno: int
    source_line: str
    hint: str = ""
    id: str = field(default="")

    def __post_init__(self):
        if not self.hint:
            keys = [k for k in HINTS if k in self.reason]  # the most specific one
            self.hint = (HINTS[max(keys, key=len)] if keys else
                         "see `wick explain` for the capture trace")
        if not self.id:
            key = f"{os.path.basename(self.filename)}:{self.lineno}:{self.instruction}:" \
                  f"{self.reason}"
            self.id = "B" + hashlib.sha1(key.encode()).hexdigest()[:8]

    @property
    def location(self) -> str:
        return f"{self.filename}:{self.lineno}"

    def __str__(self) -> str:
        return (f"[{self.id}] {self.filename}:{self.lineno}: {self.reason} "
                f"(at {self.instruction})\n    {self.source_line}\n    hint: {self.hint}")


class GraphBreak(Exception):
    """Raised inside the interpreter when an instruction or call cannot be captured.

    `kind` is "inst" (run the instruction eagerly) or "branch" (a jump on `cond`, a tensor);
    `frame` is filled by the top frame: (translator, instruction index, snapshot).
    """

    def __init__(self, reason: BreakReason, kind: str = "inst", cond=None, negate=False):
        super().__init__(str(reason))
        self.reason = reason
        self.kind = kind
        self.cond = cond
        self.negate = negate
        self.frame = None


class Unsupported(RuntimeError):
    """`fullgraph=True` and the function cannot be captured as one graph (names the break)."""


class Snapshot:
    """The top frame's state before one instruction: stack, locals, cells, grad mode, and the
    contents of the mutable trackers they hold (lists grow, iterators advance, in-place ops
    rebind tensors). Tensors rebound where no local reaches them (an attribute, a global) are
    restored by the side-effect log (`SideEffects.rebind`), checkpointed beside it."""

    def __init__(self, tx):
        self.stack = list(tx.stack)
        self.locals = dict(tx.locals)
        self.cells = {n: c.value for n, c in tx.cells.items()}
        self.kw_names = tx.kw_names
        self.grad_enabled = tx.out.grad_enabled
        self.states: dict[int, tuple] = {}
        for v in self.stack:
            self._save(v)
        for v in self.locals.values():
            self._save(v)
        for v in self.cells.values():  # a local some closure reads lives in a cell
            self._save(v)

    def _save(self, v) -> None:
        if id(v) in self.states:
            return
        if isinstance(v, TensorVariable):
            self.states[id(v)] = (v, (v.node, v.meta, v.requires_grad, v.shadow))
        elif isinstance(v, (SequenceVariable, IteratorVariable)):
            self.states[id(v)] = (v, (list(v.items), getattr(v, "index", 0)))
            for x in v.items:
                self._save(x)
        elif isinstance(v, DictVariable) and hasattr(v.items, "known"):
            for x in v.items.known():  # a dict read lazily: never mutated, nothing more read
                self._save(x)
        elif isinstance(v, DictVariable):
            self.states[id(v)] = (v, (dict(v.items), 0))
            for x in v.items.values():
                self._save(x)

    def restore(self) -> None:
        for v, state in self.states.values():
            if isinstance(v, TensorVariable):
                v.node, v.meta, v.requires_grad, v.shadow = state
            elif isinstance(v, DictVariable):
                v.items = dict(state[0])
            else:
                v.items = list(state[0])
                if isinstance(v, IteratorVariable):
                    v.index = state[1]
