"""The floors of a numpy-backed Python tensor: what the least a Python wrapper costs.

Two peers for the per-op and tiny-autograd benchmarks, written to do nothing but the work:

- `Bare`: a tensor that is a numpy array in a `__slots__` object, each op one ufunc call and
  one object. No dtype promotion rules, device, broadcasting errors, version counter or
  autograd check: the least any numpy-backed Python tensor can cost per op
  (`bench_eager.py`'s "bare Python wrapper" row).
- `Tape`: a micrograd-style define-by-run autograd on top of it: each op records its parents
  and a closure for its local gradient; `backward()` sorts the tape and runs the closures. No
  saved-tensor checks, hooks, retain_graph, dtype or shape finishing: the least a Python tape
  costs (`bench_autograd.py`'s "bare Python tape" row).

wick does all of what these leave out (PyTorch's semantics), so its ratio to them is its
overhead above the floor, and the floor's ratio to torch eager bounds what a Python tensor
can reach against torch's C++ dispatcher. Benchmark code only: wick never imports this.
"""

from __future__ import annotations

import numpy as np


class Bare:
    """A numpy array and nothing else; each op one ufunc and one new object."""

    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a

    def __add__(self, o):
        return Bare(np.add(self.a, o.a if type(o) is Bare else o))

    def __sub__(self, o):
        return Bare(np.subtract(self.a, o.a if type(o) is Bare else o))

    def __mul__(self, o):
        return Bare(np.multiply(self.a, o.a if type(o) is Bare else o))

    def __truediv__(self, o):
        return Bare(np.divide(self.a, o.a if type(o) is Bare else o))

    def __neg__(self):
        return Bare(np.negative(self.a))

    def __abs__(self):
        return Bare(np.abs(self.a))


def bare_exp(x):
    return Bare(np.exp(x.a))


def bare_tanh(x):
    return Bare(np.tanh(x.a))


def bare_sqrt(x):
    return Bare(np.sqrt(x.a))


def bare_sigmoid(x):
    return Bare(1.0 / (np.exp(-x.a) + 1.0))


class Tape:
    """A value on a define-by-run tape: `a` (array), `grad`, `parents` and `local` (a
    function of the output gradient giving one gradient per parent)."""

    __slots__ = ("a", "grad", "local", "parents")

    def __init__(self, a, parents=(), local=None):
        self.a, self.grad, self.parents, self.local = a, None, parents, local

    def __mul__(self, o):
        if type(o) is Tape:
            return Tape(self.a * o.a, (self, o), lambda g: (g * o.a, g * self.a))
        return Tape(self.a * o, (self,), lambda g: (g * o,))

    def __add__(self, o):
        if type(o) is Tape:
            return Tape(self.a + o.a, (self, o), lambda g: (g, g))
        return Tape(self.a + o, (self,), lambda g: (g,))

    def __sub__(self, o):
        if type(o) is Tape:
            return Tape(self.a - o.a, (self, o), lambda g: (g, -g))
        return Tape(self.a - o, (self,), lambda g: (g,))

    def sum(self):
        shape = self.a.shape
        return Tape(self.a.sum(), (self,), lambda g: (np.broadcast_to(g, shape),))

    def backward(self) -> None:
        order, seen, stack = [], set(), [(self, False)]
        while stack:  # (iterative post-order: the tape's topological order)
            v, done = stack.pop()
            if done:
                order.append(v)
            elif id(v) not in seen:
                seen.add(id(v))
                stack.append((v, True))
                stack.extend((p, False) for p in v.parents)
        self.grad = np.ones_like(self.a)
        for v in reversed(order):
            if v.local is None:
                continue
            for p, gp in zip(v.parents, v.local(v.grad)):
                p.grad = gp if p.grad is None else p.grad + gp


def tape_tanh(x):
    t = np.tanh(x.a)
    return Tape(t, (x,), lambda g: (g * (1 - t * t),))


def tape_exp(x):
    e = np.exp(x.a)
    return Tape(e, (x,), lambda g: (g * e,))
