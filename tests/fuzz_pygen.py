"""The generator half of the Python-function fuzzer (tests/fuzz_pyfuncs.py): `Gen(seed,
constructs).function()` writes one random function `f(x, y, log, obj, d)` (or its
`*args/**kwargs` form) as a header, top-level statements and a return line. Every construct of
`ALL_CONSTRUCTS` can be switched off. Deterministic for a seed on every CPython version."""

from __future__ import annotations

import random

ALL_CONSTRUCTS = (
    "if_py", "if_tensor", "for", "while", "break_continue", "try", "no_grad", "comprehension",
    "closure", "nonlocal", "varargs", "fstring", "walrus", "match", "assert", "global",
    "helper", "print", "item", "numpy", "generator", "lambda", "early_return", "log", "obj",
    "dict", "requires_grad", "inplace", "misc",
)


class Gen:
    """Writes one random function; `blocks` are its top-level statements (shrinkable)."""

    def __init__(self, seed: int, constructs=ALL_CONSTRUCTS):
        self.rng = random.Random(seed)
        self.on = set(constructs)
        self.tensors = ["x", "y"]
        self.tmp = 0
        self.loop_var = 0

    def has(self, c: str) -> bool:
        return c in self.on

    def pick(self, seq):
        return self.rng.choice(list(seq))

    # expressions

    def tensor(self) -> str:
        return self.pick(self.tensors)

    def texpr(self) -> str:
        a, b = self.tensor(), self.tensor()
        c = self.pick(["0.5", "1.5", "2.0", "n", "k"])
        forms = [f"{a} + {b}", f"{a} * {b}", f"{a} - {c}", f"eager.relu({a})", f"{a}.tanh()",
                 f"eager.sigmoid({a}) * {b}", f"({a} * 2.0).abs()",
                 f"{a} + {b}.sum(0, keepdim=True)", f"eager.where({a} > {b}, {a}, {b})",
                 f"{a} / ({b}.abs() + 1.0)", f"{a} * {c}", f"{a}.clamp(min=-1.0, max=1.0)",
                 f"{a} - {b}.mean()", f"eager.maximum({a}, {b}) * GSCALE"]
        return self.pick(forms)

    def iexpr(self) -> str:
        return self.pick(["n", "k", "n + 1", "k * 2", "len(log)", "n % 3", "obj.count",
                          "k - n", "3"])

    def tvar(self) -> str:
        """A tensor variable to assign to (one that is bound at every point)."""
        return self.pick([t for t in self.tensors if t not in ("x", "y")] or ["t0"])

    # statements: each returns a list of lines (no indentation)

    def simple(self, depth: int) -> list:
        kinds = ["tensor", "tensor", "int"]
        for c in ("log", "obj", "dict", "global", "print", "item", "numpy", "helper", "fstring",
                  "walrus", "assert", "lambda", "comprehension", "closure", "nonlocal",
                  "generator", "no_grad", "inplace", "misc", "varargs"):
            if self.has(c):
                kinds.append(c)
        return getattr(self, "s_" + self.pick(kinds))()

    def s_tensor(self):
        return [f"{self.tvar()} = {self.texpr()}"]

    def s_int(self):
        return [self.pick([f"n = {self.iexpr()}", "n += 1", f"k = k + {self.pick('12')}"])]

    def s_log(self):
        v = self.pick(["n", "k", "'s'", "(n, k)", "len(log)", f"{self.tensor()}.shape[0]"])
        return [self.pick([f"log.append({v})", f"log.extend([{v}, 'e'])", f"log += [{v}]",
                           f"log.insert(0, {v})", "if log:\n    log.pop()",
                           f"log.append({self.tensor()} * 1.0)", "log.reverse()",
                           "if log:\n    log[0] = n", "log.extend(str(v) for v in range(2))",
                           "if 'pre' in log:\n    log.remove('pre')", "n = n + log.count(1)",
                           "log[:] = log[-3:]", "log.append(list(log))", "alias = log\n"
                           "alias.append('alias')", "mine = [n]\nlog.append(mine)\n"
                           "mine.append(k)", "n > 0 and log.append('and')",
                           "log.append('t' if n > 1 else 'f')"])]

    def s_obj(self):
        return [self.pick(["obj.count += 1", "obj.total = obj.total + n",
                           "obj.items.append(k)", "setattr(obj, 'name', 'n' + str(n))",
                           "obj.bump(2)", f"obj.last = {self.tensor()} * 1.0",
                           "n = n + obj.count", "obj.tags.add(n % 3)",
                           "if hasattr(obj, 'last'):\n    del obj.last",
                           "obj.items += [n]", "obj.total += 0.5",
                           "obj.count, n = n, obj.count", "lst = obj.items\nlst.append(-1)",
                           "n = n + getattr(obj, 'count', 0)", "n = n + obj.prop",
                           "n = n + getattr(obj, 'prop', 0)"])]

    def s_dict(self):
        return [self.pick(["d['n'] = n", "d.setdefault('k', k)", "d.update(a=n, b=k)",
                           "d['t'] = " + self.tensor(), "n += len(d)",
                           "d.pop('n', None)", "d[f'key{n % 2}'] = len(log)",
                           "for key, v in list(d.items()):\n    log.append(key)",
                           "if 'z' in d:\n    del d['z']", "d.clear()",
                           "n = n + d.get('z', 0)", "d.setdefault('lst', []).append(n)"])]

    def s_global(self):
        return [self.pick(["GCOUNT += 1", "GLIST.append(n)", "GCOUNT = GCOUNT + k",
                           "n = n + GCOUNT", "GLIST.extend(log[:2])",
                           f"GLIST.append({self.tensor()}.sum())"])]

    def s_print(self):
        return [self.pick(["print('p', n)", "print(f'k={k}', len(log))", "print(obj.count)",
                           f"print({self.tensor()}.shape)", "print(n, k, sep='-', end='|')",
                           "print(*log[:2])", f"print({self.tensor()}.sum() > 100)"])]

    def s_item(self):
        t = self.tensor()
        return [f"s = {t}.sum().item()", self.pick(["n = n + int(s > 0)", "log.append(s > 0)",
                                                     f"{self.tvar()} = {t} * s"])]

    def s_numpy(self):
        return [self.pick(["n = n + int(np.sum(np.arange(k)) % 5)",
                           f"{self.tvar()} = {self.tensor()} * float(np.float32(1.5))",
                           f"n = n + int(np.asarray({self.tensor()}.detach().numpy())"
                           ".shape[0])"])]

    def s_helper(self):
        return [self.pick([f"{self.tvar()} = helper({self.tensor()}, log)",
                           f"{self.tvar()} = pure_helper({self.tensor()}, n)"])]

    def s_fstring(self):
        return [self.pick(["log.append(f'n={n} k={k:03d}')", "msg = f'{n!r}-{obj.name}'\n"
                           "log.append(msg)", "log.append(f'{len(log)}:{k}')"])]

    def s_walrus(self):
        return [f"if (m := {self.iexpr()}) > 2:\n    log.append(m)\n    n = m"]

    def s_assert(self):
        return [self.pick(["assert n >= -100, 'n too small'", "assert k > 0",
                           f"assert n < {self.rng.randint(1, 12)}, f'n={{n}}'"])]

    def s_lambda(self):
        return [self.pick([f"g = lambda z: z * 2.0 + n\n{self.tvar()} = g({self.tensor()})",
                           "n = max([n, k, 1], key=lambda v: -v)",
                           "n = sorted([k, n, 2], key=lambda v: v % 3)[0]"])]

    def s_comprehension(self):
        t = self.tensor()
        return [self.pick([f"vals = [{t} * i for i in range(3)]\n"
                           f"{self.tvar()} = vals[-1] + vals[0]",
                           "log.extend([i * 2 for i in range(n % 3)])",
                           "sq = {f'k{i}': i * i for i in range(3)}\nn = n + sq['k2']",
                           f"{self.tvar()} = sum([{t} * j for j in range(2)])",
                           "n = n + len({i % 2 for i in range(k)})"])]

    def s_closure(self):
        return [f"def inner(z):\n    return z * k + {self.tensor()}\n"
                f"{self.tvar()} = inner({self.tensor()})"]

    def s_nonlocal(self):
        return ["def bump():\n    nonlocal cnt\n    cnt += 1\n    log.append(cnt)\n    return cnt\n"
                "n = n + bump()"]

    def s_generator(self):
        return [self.pick(["def gen(c):\n    for i in range(c):\n        log.append(('g', i))\n"
                           "        yield i\nn = n + sum(gen(2))",
                           "n = n + sum(i * i for i in range(k % 4))",
                           f"parts = list({self.tensor()} * j for j in range(2))\n"
                           f"{self.tvar()} = parts[1]"])]

    def s_inplace(self):
        return [self.pick([f"t0.add_({self.tensor()})", "t0 += 1.0", "t0.mul_(0.5)",
                           "y.mul_(2.0)", "y += 1.0", f"t0[0] = {self.tensor()}[1]",
                           "z = t0\nz.sub_(1.0)"])]

    def s_misc(self):
        return [self.pick(["a, b = x.shape\nn = n + a - b", "first, *rest = [n, k, 3]\n"
                           "n = first + len(rest)", "n = n + (1 if 0 < n < 3 else 2)",
                           "n = n + isinstance(obj, Obj)", "n = n + len('-'.join(map(str, "
                           "log[:2])))", "it = iter([1, 2, 3])\nn = n + next(it)\n"
                           "log.append(list(it))", "acc = []\ndef add(v):\n    acc.append(v)"
                           "\n    return v\nadd(n)\nadd(k)\nlog.append(acc)",
                           "gen2 = (v * 2 for v in range(3))\nn = n + next(gen2)\n"
                           "log.append(list(gen2))", "n = n + int(bool(log) or bool(d))",
                           f"n = n + {self.tensor()}.ndim", "q = (n, k)\nn, k = q[1], q[0]",
                           "it2 = iter([1, 2, 3])\nfor v in it2:\n    print(v)\n    break\n"
                           "log.append(list(it2))", "it3 = iter(log[:])\nlog.append(next(it3, "
                           "None))\nprint(len(log))\nlog.append(list(it3))"])]

    def s_varargs(self):
        return [self.pick(["def va(*a, **kw):\n    log.append((len(a), sorted(kw)))\n"
                           "    return a[0]\nn = va(n, k, z=1)",
                           "def kwo(a, *, b=2):\n    return a * b\nn = kwo(n, b=k)",
                           f"parts2 = [{self.tensor()}, {self.tensor()}]\n"
                           f"{self.tvar()} = eager.stack(parts2).sum(0)"])]

    def s_no_grad(self):
        return [f"with eager.no_grad():\n    {self.tvar()} = {self.texpr()}\n    n += 1"]

    def compound(self, depth: int) -> list:
        kinds = []
        for c in ("if_py", "if_tensor", "for", "while", "try", "match", "early_return"):
            if self.has(c):
                kinds.append(c)
        if not kinds or depth >= 2:
            return self.simple(depth)
        return getattr(self, "c_" + self.pick(kinds))(depth)

    def body(self, depth: int, n: int | None = None) -> list:
        n = n if n is not None else self.rng.randint(1, 3)
        lines = []
        for _ in range(n):
            stmt = self.compound(depth) if self.rng.random() < 0.3 else self.simple(depth)
            lines += stmt
        return lines

    def indent(self, lines) -> list:
        return ["    " + ln for s in lines for ln in s.split("\n")]

    def c_if_py(self, depth):
        out = [f"if {self.iexpr()} > {self.rng.randint(0, 4)}:"] + self.indent(self.body(depth + 1))
        if self.rng.random() < 0.5:
            out += [f"elif {self.iexpr()} == {self.rng.randint(0, 3)}:"]
            out += self.indent(self.body(depth + 1))
        if self.rng.random() < 0.5:
            out += ["else:"] + self.indent(self.body(depth + 1))
        return ["\n".join(out)]

    def c_if_tensor(self, depth):
        t = self.tensor()
        cond = self.pick([f"{t}.sum() > 0", f"{t}.mean() < 0", f"{t}.max() > 1.0"])
        out = [f"if {cond}:"] + self.indent(self.body(depth + 1))
        if self.rng.random() < 0.6:
            out += ["else:"] + self.indent(self.body(depth + 1))
        return ["\n".join(out)]

    def c_for(self, depth):
        self.loop_var += 1
        i = f"i{self.loop_var}"
        it = self.pick([f"range({self.rng.randint(0, 3)})", "range(k % 4)", "[1, 2]",
                        "(0, 1, 2)"])
        body = self.body(depth + 1)
        if self.has("break_continue") and self.rng.random() < 0.5:
            body = [f"if {i} == {self.rng.randint(0, 2)}:\n    "
                    + self.pick(["break", "continue"])] + body
        body.append(f"log.append({i})" if self.has("log") and self.rng.random() < 0.5
                    else f"n = n + {i}")
        return ["\n".join([f"for {i} in {it}:"] + self.indent(body))]

    def c_while(self, depth):
        self.loop_var += 1
        w = f"w{self.loop_var}"
        body = [f"{w} += 1"] + self.body(depth + 1)
        if self.has("break_continue") and self.rng.random() < 0.5:
            body.insert(1, f"if {w} == {self.rng.randint(1, 3)}:\n    "
                        + self.pick(["break", "continue"]))
        return ["\n".join([f"{w} = 0", f"while {w} < {self.rng.randint(1, 3)}:"]
                           + self.indent(body))]

    def c_try(self, depth):
        body = self.body(depth + 1)
        if self.rng.random() < 0.5:
            body.append(self.pick(["raise ValueError('v' + str(n))", "n = 1 // (n - n)",
                                   "n = d['missing']" if self.has("dict") else "n = [][1]"]))
        out = ["try:"] + self.indent(body)
        out += ["except (ValueError, ZeroDivisionError, KeyError, IndexError) as e:"]
        out += self.indent(["log.append(type(e).__name__)"] + self.body(depth + 1, 1))
        if self.rng.random() < 0.6:
            out += ["finally:"] + self.indent(["log.append('fin')" if self.has("log")
                                               else "n = n + 1"])
        return ["\n".join(out)]

    def c_match(self, depth):
        out = [f"match {self.iexpr()} % 3:", "    case 0:"]
        out += ["    " + ln for ln in self.indent(self.body(depth + 1))]
        out += ["    case 1:"] + ["    " + ln for ln in self.indent(self.body(depth + 1))]
        out += ["    case _:"] + ["    " + ln for ln in self.indent(self.body(depth + 1, 1))]
        return ["\n".join(out)]

    def c_early_return(self, depth):
        return ["\n".join([f"if {self.iexpr()} > {self.rng.randint(1, 6)}:",
                           "    return " + self.ret()])]

    def ret(self) -> str:
        t, u = self.tensor(), self.tensor()
        return self.pick([t, f"({t}, n)", f"[{t}, {u}, k]", f"{{'a': {t}, 'n': n}}", "None",
                          f"({t}, [n, {u}])", "n", "'r' + str(n)", "log", "(obj, n)",
                          f"(d, {t})", "[log, log]", f"{t}.sum()", f"({t}.shape, {t}.dtype)",
                          f"{t}.requires_grad", f"(n, k, {t}[0])"])

    def function(self) -> tuple[list, list, str]:
        """(header lines, top-level blocks, return line)."""
        varargs = self.has("varargs") and self.rng.random() < 0.4
        if varargs:
            head = ["def f(x, *args, log, obj, d=None, **kwargs):", "    y = args[0]",
                    "    n = kwargs.get('scale', 1)"]
        else:
            head = ["def f(x, y, log, obj, d):", "    n = 0"]
        if self.has("global"):
            head.append("    global GCOUNT")
        head += ["    k = x.shape[0]", "    t0 = x + y", "    cnt = 0", "    s = 0.0"]
        if self.has("varargs") and varargs and self.rng.random() < 0.5:
            head.append("    log.append(sorted(kwargs))")
        self.tensors.append("t0")
        if self.rng.random() < 0.5:
            head.append("    t1 = x * 0.5")
            self.tensors.append("t1")
        blocks = []
        for _ in range(self.rng.randint(2, 6)):
            stmt = self.compound(0) if self.rng.random() < 0.5 else self.simple(0)
            blocks.append("\n".join(self.indent(stmt)))
        return head, blocks, "    return " + self.ret()


def generate(seed: int, constructs=ALL_CONSTRUCTS) -> tuple[str, bool]:
    """(source of `def f`, whether it takes *args/**kwargs) for one seed."""
    g = Gen(seed, constructs)
    head, blocks, ret = g.function()
    return assemble(head, blocks, ret), "*args" in head[0]


def assemble(head, blocks, ret) -> str:
    return "\n".join(head + blocks + [ret]) + "\n"


def generate_parts(seed: int, constructs=ALL_CONSTRUCTS):
    return Gen(seed, constructs).function()


