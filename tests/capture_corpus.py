"""The capture corpus: small Python programs with the graph and break counts capture must give.

`CORPUS` lists (function, argument maker, expected graph_count, expected graph_break_count).
`tests/test_capture_corpus.py` runs each one eagerly and compiled (twice: capture, then cache
hit) and compares, and checks `capture.explain`'s counts. The functions cover the Python
constructs captured without a break (closures, comprehensions, generator expressions,
unpacking, dicts and sets, f-strings, while loops, assert, try, no_grad, dataclasses, bound
methods, modules) and every kind of graph break (print, .item(), .tolist(), .numpy(), numpy
calls, branches on tensor values, data-dependent shapes, graph_break(), disable, breaks in
callees and in loops, mutation of Python state, breakpoint()).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import operator

import numpy as np

import capture
import eager
from eager import nn

SCALE = 0.5
CONFIG = {"k": 3, "eps": 1e-5}
W = eager.randn(4, 3)


def T(*shape):
    return lambda: eager.randn(*shape)


def args(*makers):
    return lambda: tuple(m() if callable(m) else m for m in makers)


@dataclasses.dataclass
class Cfg:
    alpha: float = 2.0
    beta: int = 3
    name: str = "cfg"


class Plain:
    def __init__(self):
        self.w = eager.randn(4)
        self.k = 3

    def scale(self, x):
        return x * self.k + self.w


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) + x


class Net(nn.Module):
    def __init__(self, n=2):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(n)])
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


PLAIN, CFG = Plain(), Cfg()
NET, SEQ = Net(), nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))


def helper(a, b, k=2.0):
    return a * k - b


def kw_only(x, *, scale=3.0, shift=1):
    return x * scale + shift


def varargs(*xs, **kw):
    return sum(xs) * kw.get("k", 1)


def fact(n):
    return 1 if n <= 1 else n * fact(n - 1)


def noisy(x):
    print("noisy", x.shape)
    return x + 1


@capture.disable
def opaque(x):
    return x * 3


def loop_break(x):
    for i in range(3):
        x = x + i
        print("iteration", i)
    return x * 2


# ---------------------------------------------------------------- no break: straight line


def c_arith(x, y):
    return (x + y) * 2 - y / 3


def c_scalars(x, n):
    return x * (n ** 2 + 1) + math.sqrt(16) - operator.mul(2, 3)


def c_chained(x, n):
    return x * (2 if 0 < n < 10 else 3)


def c_globals(x):
    return x * SCALE + W.sum()


def c_closure_factory():
    w = eager.randn(4)
    k = 2.5

    def f(x):
        return x * w + k

    return f


c_closure = c_closure_factory()


def c_nested_closure(x):
    k = 3

    def inner(y):
        return y * k

    return inner(x) + inner(1.0)


def c_lambda(x):
    f = lambda t: t * 2 + 1
    return f(x) + f(x * 2)


def c_partial(x):
    f = functools.partial(helper, k=4.0)
    return f(x, 1.0)


def c_inline_defaults(x):
    return helper(x, x) + helper(x, 1.0, k=5)


def c_kwonly(x):
    return kw_only(x) + kw_only(x, scale=0.5)


def c_varargs(x):
    return varargs(x, x * 2, k=3)


def c_recursion(x):
    return x * fact(5)


def c_tuple_unpack(x):
    a, b = x, x * 2
    c, *rest = (a, b, 3, 4)
    return c + b + sum(rest)


def c_star_middle(x):
    first, *mid, last = [x, x + 1, x + 2, x + 3]
    return first + last + len(mid)


def c_list_build(x):
    xs = [x, x * 2]
    xs.append(x * 3)
    xs.extend([x, x])
    return xs[1] + xs[-1] + len(xs)


def c_listcomp(x):
    return [x * i for i in range(3)]


def c_listcomp_cond(x):
    return sum([x * i for i in range(5) if i % 2])


def c_dictcomp(x):
    d = {f"k{i}": x + i for i in range(3)}
    return d["k2"] - d["k0"]


def c_setcomp(x):
    s = {i % 3 for i in range(10)}
    return x * len(s)


def c_genexpr_sum(x):
    return sum(x * i for i in range(4))


def c_genexpr_tuple(x):
    return tuple(t + 1 for t in (x, x * 2))


def c_genexpr_any_all(x, ns):
    return x * (any(n > 2 for n in ns) + all(n > 0 for n in ns))


def c_dict_build(x):
    d = {"a": x, "b": 2}
    d["c"] = x * 3
    return d["a"] * d["b"] + d.get("c") + d.get("z", 1.0)


def c_dict_items(x):
    d = {"a": 1.0, "b": 2.0}
    out = x
    for v in d.values():
        out = out + v
    return out, sorted(d.keys())


def c_dict_arg(x, d):
    return x * d["k"] + d.get("eps", 0.0)


def c_set_build(x):
    s = {1, 2, 3}
    return x * len(s) + (2 in s)


def c_fstring(x, n):
    tag = f"n={n:>3}|{n!r}"
    return x * len(tag), tag


def c_str_format(x):
    return x + 1, "{}-{}".format(1, "a"), "abc".upper()


def c_while(x):
    i = 0
    while i < 3:
        x = x * 2
        i += 1
    return x


def c_for_enumerate_zip(x, y):
    out = x
    for i, (a, b) in enumerate(zip([x, y], [y, x])):
        out = out + a * b * i
    return out


def c_reversed_minmax(x):
    acc = x
    for k in reversed(range(3)):
        acc = acc * k + min(k, 1) + max(2, k)
    return acc


def c_assert(x):
    assert x.dim() == 2, "expected a matrix"
    assert x.shape[1] == 4
    return x * 2


def c_try(x):
    try:
        y = x + 1
    except ValueError:
        y = x - 1
    finally:
        z = 2
    return y * z


def c_no_grad(x):
    with eager.no_grad():
        y = x * 2
    return y + 1


def c_enable_grad(x):
    with eager.no_grad(), eager.enable_grad():
        y = x * 2
    return y


def c_dataclass(x):
    return x * CFG.alpha + CFG.beta, CFG.name


def c_plain_attrs(x):
    return x * PLAIN.k + PLAIN.w


def c_bound_method(x):
    return PLAIN.scale(x) - 1


def c_isinstance(x, n):
    a = x * 2 if isinstance(x, eager.Tensor) else x
    b = 3 if isinstance(n, (int, float)) else 4
    return a + b


def c_is_none(x, bias=None):
    if bias is None:
        return x + 1
    return x + bias


def c_is_none_given(x, bias):
    if bias is not None:
        x = x + bias
    return x


def c_shape_branch(x):
    if x.shape[0] > 2 and x.dtype == eager.float32:
        return x.sum(dim=0)
    return x.sum(dim=1)


def c_requires_grad_branch(x):
    return x * 2 if x.requires_grad else x * 3


def c_methods(x):
    return x.exp().sum(dim=1, keepdim=True), x.reshape(-1), x.t(), x.mean(dim=0), x.float()


def c_inplace(x):
    y = x * 2
    y += 1
    y.mul_(3)
    return y


def c_to_dtype(x):
    return x.to(eager.float64) * 2, x.to(dtype=eager.float32)


def c_size_queries(x):
    return x * x.size(0) + x.numel() + x.ndim + len(x)


def c_returns_structure(x):
    return {"out": x + 1, "n": 3}, [x * 2, (x, None)]


def c_functional(x, w):
    h = eager.nn.functional.gelu(x @ w)
    return eager.nn.functional.softmax(h, dim=-1)


def c_module_call(x):
    return NET(x)


def c_sequential(x):
    return SEQ(x)


def c_compile_model(x):
    return Block()(x) if False else NET.head(x)


def c_getattr_builtin(x):
    return PLAIN.k * x


def c_math_consts(x):
    return x * math.pi + math.floor(2.7) + abs(-2) + round(2.6)


def c_nested_functions(x):
    def outer(y):
        def inner(z):
            return z * 2

        return inner(y) + 1

    return outer(x)


def c_cell_update(x):
    acc = x

    def add(v):
        nonlocal acc
        acc = acc + v

    add(1.0)
    add(x)
    return acc


def c_slicing(x):
    xs = [x, x * 2, x * 3, x * 4]
    return sum(xs[1:3]) + xs[::2][1]


def c_conditional_expr(x, flag):
    return x * 2 if flag else x / 2


def c_bool_ops(x, a, b):
    return x * (1 if (a and not b) or (b and not a) else 0)


# ---------------------------------------------------------------- graph breaks


def b_print(x):
    y = x + 1
    print("value", 3)
    return y * 2


def b_item(x):
    s = x.sum()
    return x * s.item()


def b_tolist(x):
    y = x * 2
    vals = y.tolist()
    return y + len(vals)


def b_numpy_call(x):
    y = x * 2
    z = np.float64(np.sum(y.numpy()))
    return y + float(z)


def b_branch(x):
    y = x * 2
    if y.sum() > 0:
        return y + 1
    return y - 1


def b_branch_not(x):
    y = x * 2
    if not (y.sum() > 0):
        y = y - 5
    return y * 3


def b_graph_break(x):
    y = x + 1
    capture.graph_break()
    return y * 2


def b_disable(x):
    y = x + 1
    return opaque(y) + 1


def b_callee(x):
    y = x * 2
    z = noisy(y)
    return z * y


def b_loop(x):
    y = x * 2
    for i in range(3):
        y = y + i
        print("loop", i)
    return y * 3


def b_loop_callee(x):
    return loop_break(x * 2) + 1


def b_while_loop(x):
    y = x * 2
    i = 0
    while i < 2:
        print("w", i)
        i += 1
    return y + i


def b_two_breaks(x):
    y = x + 1
    print("one")
    y = y * 2
    print("two")
    return y - 1


def b_in_no_grad(x):
    with eager.no_grad():
        y = x * 2
        print("inside no_grad")
        z = y + 1
    return z * 2


def b_mutation(x):
    PLAIN.last = 1
    return x + 1


def b_breakpoint(x):
    y = x * 2
    breakpoint()  # noqa: T100
    return y + 1


def b_keep_locals(x, n):
    a = x * n
    b = [a, a + 1]
    d = {"k": a}
    print("locals kept")
    return b[1] + d["k"] + n


def b_closure_live(x):
    k = 2.0
    f = lambda t: t * k
    print("closure kept")
    return f(x)


def b_item_in_expression(x):
    return (x * 2).sum().item() + 1


def b_data_dependent(x):
    y = x * 2
    if y.max() > 100:
        return y
    return -y


def b_loop_return(x):
    for i in range(5):
        print("r", i)
        if i == 2:
            return x * i
    return x


def b_listcomp_break(x):
    return [t.sum().item() for t in (x, x * 2)]


# ---------------------------------------------------------------- the corpus

X = T(3, 4)
CORPUS = [
    (c_arith, args(X, X), 1, 0),
    (c_scalars, args(X, 3), 1, 0),
    (c_chained, args(X, 5), 1, 0),
    (c_globals, args(T(4, 3)), 1, 0),
    (c_closure, args(T(4)), 1, 0),
    (c_nested_closure, args(X), 1, 0),
    (c_lambda, args(X), 1, 0),
    (c_partial, args(X), 1, 0),
    (c_inline_defaults, args(X), 1, 0),
    (c_kwonly, args(X), 1, 0),
    (c_varargs, args(X), 1, 0),
    (c_recursion, args(X), 1, 0),
    (c_tuple_unpack, args(X), 1, 0),
    (c_star_middle, args(X), 1, 0),
    (c_list_build, args(X), 1, 0),
    (c_listcomp, args(X), 1, 0),
    (c_listcomp_cond, args(X), 1, 0),
    (c_dictcomp, args(X), 1, 0),
    (c_setcomp, args(X), 1, 0),
    (c_genexpr_sum, args(X), 1, 0),
    (c_genexpr_tuple, args(X), 1, 0),
    (c_genexpr_any_all, args(X, (1, 2, 3)), 1, 0),
    (c_dict_build, args(X), 1, 0),
    (c_dict_items, args(X), 1, 0),
    (c_dict_arg, args(X, {"k": 2.0, "eps": 0.5}), 1, 0),
    (c_set_build, args(X), 1, 0),
    (c_fstring, args(X, 7), 1, 0),
    (c_str_format, args(X), 1, 0),
    (c_while, args(X), 1, 0),
    (c_for_enumerate_zip, args(X, X), 1, 0),
    (c_reversed_minmax, args(X), 1, 0),
    (c_assert, args(X), 1, 0),
    (c_try, args(X), 1, 0),
    (c_no_grad, args(X), 1, 0),
    (c_enable_grad, args(X), 1, 0),
    (c_dataclass, args(X), 1, 0),
    (c_plain_attrs, args(T(3, 4)), 1, 0),
    (c_bound_method, args(T(3, 4)), 1, 0),
    (c_isinstance, args(X, 2), 1, 0),
    (c_is_none, args(X), 1, 0),
    (c_is_none_given, args(X, T(4)), 1, 0),
    (c_shape_branch, args(X), 1, 0),
    (c_requires_grad_branch, args(X), 1, 0),
    (c_methods, args(X), 1, 0),
    (c_inplace, args(X), 1, 0),
    (c_to_dtype, args(X), 1, 0),
    (c_size_queries, args(X), 1, 0),
    (c_returns_structure, args(X), 1, 0),
    (c_functional, args(T(2, 4), T(4, 3)), 1, 0),
    (c_module_call, args(T(5, 4)), 1, 0),
    (c_sequential, args(T(5, 4)), 1, 0),
    (c_compile_model, args(T(5, 4)), 1, 0),
    (c_getattr_builtin, args(X), 1, 0),
    (c_math_consts, args(X), 1, 0),
    (c_nested_functions, args(X), 1, 0),
    (c_cell_update, args(X), 1, 0),
    (c_slicing, args(X), 1, 0),
    (c_conditional_expr, args(X, True), 1, 0),
    (c_bool_ops, args(X, True, False), 1, 0),
    (b_print, args(X), 2, 1),
    (b_item, args(X), 2, 1),
    (b_tolist, args(X), 2, 1),
    (b_numpy_call, args(X), 2, 3),  # .numpy() itself is in the graph; np.sum breaks
    (b_branch, args(X), 2, 1),
    (b_branch_not, args(X), 2, 1),
    (b_graph_break, args(X), 2, 1),
    (b_disable, args(X), 2, 1),
    (b_callee, args(X), 3, 2),
    (b_loop, args(X), 2, 1),
    (b_loop_callee, args(X), 3, 2),
    (b_while_loop, args(X), 2, 1),
    (b_two_breaks, args(X), 3, 2),
    (b_in_no_grad, args(X), 2, 1),
    (b_mutation, args(X), 1, 0),  # a recorded store (capture/sideeffects.py)
    (b_breakpoint, args(X), 2, 1),
    (b_keep_locals, args(X, 2), 2, 1),
    (b_closure_live, args(X), 1, 1),
    (b_item_in_expression, args(X), 1, 1),
    (b_data_dependent, args(X), 2, 1),
    (b_loop_return, args(X), 0, 1),
    (b_listcomp_break, args(X), 1, 1),
]
