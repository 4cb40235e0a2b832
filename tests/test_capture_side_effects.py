"""Side effects under `capture.compile` are exact: each case is a function the Python-function
fuzzer (tests/fuzz_pyfuncs.py) found compiled differently from plain (issue 13, item 2), run
plainly and compiled three times (same shapes, then another shape and other inputs), comparing
the result, the exception, `log`, `obj`'s attributes, `d`, the globals, the input tensors,
the identity of returned inputs, grad mode and stdout."""

import pytest

import fuzz_pyfuncs as F

HEAD = "def f(x, y, log, obj, d):\n    n = 0\n    k = x.shape[0]\n    t0 = x + y\n"

CASES = {
    # a dict argument's item store after a break went into a rebuilt copy
    "dict_item_store": "    d[f'key{n % 2}'] = len(log)\n    return None\n",
    # a helper that breaks while inlined appended to a copy of the caller's list
    "helper_appends_to_argument": (
        "    t0 = helper(x, log)\n    log.append(n)\n    return t0\n"),
    "append_after_break": "    print('p')\n    log.append(k)\n    return t0\n",
    "extend_insert_pop": ("    log.extend([n, 'e'])\n    log.insert(0, k)\n"
                          "    if log:\n        log.pop()\n    return len(log)\n"),
    # `xs += ys` on an argument was folded on the symbolic list only
    "iadd_on_argument": "    log += [k]\n    obj.items += [n]\n    return log\n",
    # max(key=) folded ignoring `key`
    "max_with_key": "    n = max([n, k, 1], key=lambda v: -v)\n    return (t0, n)\n",
    # a nonlocal write inside a nested function that breaks ran twice
    "nonlocal_in_breaking_closure": (
        "    cnt = 0\n    def bump():\n        nonlocal cnt\n        cnt += 1\n"
        "        log.append(cnt)\n        return cnt\n    n = n + bump()\n"
        "    n = n + bump()\n    return (t0, n, cnt)\n"),
    # a list the code built, stored into the caller's list, then mutated
    "fresh_list_aliased_into_argument": (
        "    mine = [n]\n    log.append(mine)\n    mine.append(k)\n    return mine\n"),
    "alias_of_argument": "    alias = log\n    alias.append('a')\n    print(len(log))\n"
                         "    alias.append('b')\n    return log\n",
    "returned_twice": "    print(k)\n    return [log, log]\n",
    "fresh_list_returned_twice": "    a = [k]\n    print(n)\n    a.append(1)\n"
                                 "    return [a, a]\n",
    "obj_attribute_updates": (
        "    obj.count += 1\n    obj.items.append(k)\n    obj.last = t0 * 1.0\n"
        "    lst = obj.items\n    lst.append(-1)\n    obj.tags.add(n % 3)\n    return obj\n"),
    "obj_method_mutates": "    obj.bump(2)\n    n = n + obj.count\n    return n\n",
    # a property's getter ran while tracing and again in the guards of every call
    "property_read_once": "    n = n + obj.prop\n    return (t0, n)\n",
    "getattr_property": "    n = n + getattr(obj, 'prop', 0)\n    return n\n",
    # an iterator in the locals and on the stack became two iterators after a break
    "iterator_identity": ("    it = iter(log[:])\n    log.append(next(it, None))\n"
                          "    print(len(log))\n    log.append(list(it))\n    return x\n"),
    "iterator_break_in_loop": ("    it = iter([1, 2, 3])\n    for v in it:\n        print(v)\n"
                               "        break\n    log.append(list(it))\n    return x\n"),
    "generator_with_effects": (
        "    def gen(c):\n        for i in range(c):\n            log.append(('g', i))\n"
        "            yield i\n    n = n + sum(gen(2))\n    return n\n"),
    "closure_list_append": ("    acc = []\n    def add(v):\n        acc.append(v)\n"
                            "        return v\n    add(n)\n    add(k)\n    log.append(acc)\n"
                            "    return t0\n"),
    "global_updates": ("    global GCOUNT\n    GCOUNT += 1\n    GLIST.append(n)\n"
                       "    print(GCOUNT)\n    GLIST.extend(log[:2])\n    return GCOUNT\n"),
    "print_order": ("    print('a', n)\n    log.append(1)\n    print(k, sep='-', end='|')\n"
                    "    s = t0.sum().item()\n    print(s > 100)\n    return t0 * s\n"),
    "dict_methods": ("    d.setdefault('lst', []).append(n)\n    d.update(a=n, b=k)\n"
                     "    if 'z' in d:\n        del d['z']\n    print(len(d))\n"
                     "    d.pop('a', None)\n    return d\n"),
    "input_tensor_inplace": "    y.mul_(2.0)\n    print(n)\n    y += 1.0\n    return y\n",
    "no_grad_result": ("    with eager.no_grad():\n        t0 = x * 2.0\n        print(n)\n"
                       "        t1 = t0 + 1.0\n    return (t0, t1, x * 1.0)\n"),
    "tensor_branch_effects": ("    if t0.sum() > 0:\n        log.append('pos')\n    else:\n"
                              "        obj.count += 1\n    log.append(k)\n    return t0\n"),
    # a Size (a tuple subclass) became a plain tuple when a resume function received it
    "size_across_break": "    sz = t0.shape\n    print(n)\n    return (sz, t0.dtype, sz[0])\n",
    "loop_with_break_effects": (
        "    for i in range(3):\n        if i == 1:\n            continue\n"
        "        log.append(i)\n        if t0.sum() > 100:\n            break\n"
        "    w = 0\n    while w < 2:\n        w += 1\n        obj.count += w\n"
        "    return obj.count\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])  # seed 0: x requires grad
def test_compiled_equals_plain(name, seed):
    src = HEAD + CASES[name]
    assert F.check(src, seed * 3 + (seed == 1), False) is None


def test_tuple_subclasses_keep_their_type_across_a_break():
    import collections

    import capture
    import eager

    P = collections.namedtuple("P", "a b")

    def g(p, s):
        print(end="")
        return p, s, p.a + 1

    cg = capture.compile(g)
    for _ in range(2):
        r = cg(P(eager.ones(2), 3), eager.ones(2, 3).shape)
        assert type(r[0]) is P and type(r[1]) is type(eager.ones(2, 3).shape)


def test_varargs_kwargs_effects():
    src = ("def f(x, *args, log, obj, d=None, **kwargs):\n    y = args[0]\n"
           "    log.append(sorted(kwargs))\n    print(len(args))\n"
           "    log.append(kwargs['scale'])\n    return x + y\n")
    assert F.check(src, 1, True) is None


def test_property_not_run_while_tracing():
    import capture
    import eager

    def f(x, obj):
        return x + obj.prop

    o = F.Obj(count=3)
    cf = capture.compile(f)
    for _ in range(3):
        cf(eager.ones(2), o)
    assert o.reads == 3
