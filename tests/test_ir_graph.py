"""ir.Graph: building, linked order, editing, printing (golden text read back), lint, tables,
and the Interpreter's per-node-kind overrides and bad-input errors."""

from __future__ import annotations

import io
import re

import numpy as np
import pytest

import ir
from ir import REGISTRY as R
from ir import TensorMeta

F32 = ir.float32


def small_graph():
    g = ir.Graph("f")
    x = g.placeholder("x", TensorMeta((4, 3), F32))
    w = g.placeholder("w", TensorMeta((3, 2), F32))
    mm = g.call_op(R["matmul"], (x, w), source="model.py:7")
    a = g.call_op(R["add"], (mm, 1.0), source="model.py:7")
    t = g.call_op(R["tanh"], (a,), source="model.py:8")
    y = g.call_op(R["sub"], (t, mm), {"alpha": 0.5}, source="model.py:8")
    s = g.call_op(R["sum"], (y,), {"dim": 1}, source="model.py:9")
    g.output((y, s))
    return g


GOLDEN = """\
f(x: f32[4, 3], w: f32[3, 2]):
    %matmul : f32[4, 2] = matmul(%x, %w)                          # model.py:7
    %add : f32[4, 2] = add(%matmul, 1.0)                          # model.py:7
    %tanh : f32[4, 2] = tanh(%add)                                # model.py:8
    %sub : f32[4, 2] = sub(%tanh, %matmul, alpha=0.5)             # model.py:8
    %sum : f32[4] = sum(%sub, dim=(1,))                           # model.py:9
    return (%sub, %sum)"""

LINE = re.compile(r"^    %(\w+) : (\w+\[[\d, ]*\]) = (\w+)\((.*)\)(?:\s+# (.*))?$")


def split_top(s: str) -> list:
    """Split at commas outside brackets and quotes."""
    out, depth, cur, quote = [], 0, "", None
    for c in s:
        if quote:
            quote = None if c == quote else quote
        elif c in "'\"":
            quote = c
        elif c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += c
    return out + ([cur.strip()] if cur.strip() else [])


def parse(text: str):
    """A tiny reader of the text form: (inputs, [(name, meta, op, args, kwargs, source)],
    returned names)."""
    lines = text.splitlines()
    head = re.match(r"^(\w+)\((.*)\):$", lines[0])
    inputs = [tuple(p.split(": ")) for p in split_top(head.group(2))]
    nodes = []
    for line in lines[1:-1]:
        m = LINE.match(line)
        assert m, line
        parts = split_top(m.group(4))
        args = [p for p in parts if not re.match(r"^\w+=", p)]
        kwargs = dict(p.split("=", 1) for p in parts if re.match(r"^\w+=", p))
        nodes.append((m.group(1), m.group(2), m.group(3), args, kwargs, m.group(5)))
    ret = re.match(r"^    return \((.*)\)$", lines[-1]).group(1)
    return head.group(1), inputs, nodes, [r.strip() for r in ret.split(",") if r.strip()]


def test_golden_text_and_read_back():
    g = small_graph()
    text = str(g)
    assert text == GOLDEN
    name, inputs, nodes, returned = parse(text)
    assert name == g.name
    assert inputs == [(p.name, str(p.val)) for p in g.placeholders]
    calls = [n for n in g.nodes if n.op == "call_function"]
    assert [n[0] for n in nodes] == [n.name for n in calls]
    for (nm, meta, op, args, kwargs, src), node in zip(nodes, calls):
        assert meta == str(node.val) and op == node.target.name
        assert src == node.meta["source"]
        want = [f"%{a.name}" if isinstance(a, ir.Node) else repr(a) for a in node.args]
        assert args == want
        for k, v in kwargs.items():
            assert eval(v) == node.kwargs[k]
    assert returned == [f"%{n.name}" for n in g.output_node.args[0]]


def test_names_are_unique_and_readable():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((2,), F32))
    a = g.call_op(R["exp"], (x,))
    b = g.call_op(R["exp"], (a,))
    c = g.create_node("call_function", R["exp"], (b,), name="exp_1", meta={"val": b.val})
    d = g.create_node("placeholder", "class", name="class", meta={"val": x.val})
    assert [a.name, b.name, c.name, d.name] == ["exp", "exp_1", "exp_1_1", "class_"]
    with pytest.raises(ValueError, match="unknown node op 'call_method'"):
        g.create_node("call_method", "foo")


def test_linked_order_inserting_and_erasing():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((2,), F32))
    e = g.call_op(R["exp"], (x,))
    out = g.output((e,))
    with g.inserting_before(e):
        t = g.call_op(R["tanh"], (x,))
    with g.inserting_after(e):
        n1 = g.call_op(R["neg"], (e,))
        n2 = g.call_op(R["neg"], (n1,))
    assert [n.name for n in g.nodes] == ["x", "tanh", "exp", "neg", "neg_1", "output"]
    assert g.nodes[-1] is out and g.nodes[1] is t and len(g.nodes) == len(g) == 6
    assert [n.name for n in reversed(g.nodes)][:2] == ["output", "neg_1"]
    assert e.next is n1 and n1.prev is e
    e.replace_all_uses_with(n2)  # n1 reads e; after this n1 would read n2: fix that by hand
    assert n1.args == (n2,) and list(e.users) == [] and n1 in n2.users
    n1.args = (e,)
    assert list(e.users) == [n1] and n1 not in n2.users
    out.args = ((n2,),)
    for node in g.nodes:  # erasing while iterating is allowed
        if node.op == "call_function" and not node.users:
            g.erase_node(node)
    assert [n.name for n in g.nodes] == ["x", "exp", "neg", "neg_1", "output"]
    with pytest.raises(RuntimeError, match="cannot erase %exp: it still has users"):
        g.erase_node(e)
    assert t not in g.nodes and e in g.nodes
    g.lint()


def test_node_move_and_copy():
    g = small_graph()
    add = next(n for n in g.nodes if n.name == "add")
    mm = add.prev
    tanh = add.next
    tanh.append(g.call_op(R["exp"], (tanh,)))
    assert tanh.next.name == "exp"
    mm.prepend(add)  # now add is before its input: lint must say so
    with pytest.raises(ir.GraphLintError, match="%add: reads %matmul before it is defined"):
        g.lint()
    mm.append(add)
    g.lint()
    g2, env = g.copy()
    assert str(g2) == str(g) and env[add] is not add and env[add].args[0] is env[mm]


def test_lint_reports_node_and_problem():
    g = small_graph()
    g.lint()
    tanh = next(n for n in g.nodes if n.name == "tanh")
    tanh.meta["val"] = None
    other = ir.Graph("other")
    stray = other.placeholder("stray", TensorMeta((4, 2), F32))
    s = next(n for n in g.nodes if n.name == "sum")
    s.args = (stray,)
    with pytest.raises(ir.GraphLintError) as info:
        g.lint()
    problems = info.value.problems
    assert ("tanh", "meta['val'] is None, expected a TensorMeta") in problems
    assert ("sum", "reads %stray, which is not a node of this graph") in problems
    assert "%tanh: meta['val'] is None" in str(info.value)


def test_lint_users_target_and_output():
    g = small_graph()
    add = next(n for n in g.nodes if n.name == "add")
    add.users.clear()  # break the use-def link by hand
    tanh = g.create_node("call_function", "tanh", (add,), meta={"val": add.val})
    with pytest.raises(ir.GraphLintError) as info:
        g.lint()
    msgs = dict(info.value.problems)
    assert msgs["tanh"] == "reads %add but is missing from %add.users"
    assert msgs[tanh.name] == "call_function target 'tanh' is not an OpDef"
    assert msgs["output"] == "the output node is not the last node"


def test_get_attr_lint_needs_the_module_attribute():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((3,), F32))
    c = g.get_attr("consts.bias", TensorMeta((3,), F32))
    g.output((g.call_op(R["add"], (x, c)),))
    gm = ir.GraphModule({"consts.bias": np.ones(3, np.float32)}, g)
    g.lint()
    gm.del_attr("consts.bias")
    with pytest.raises(ir.GraphLintError, match="'consts.bias' is not an attribute"):
        g.lint()
    with pytest.raises(AttributeError, match="no attribute 'consts.bias'"):
        ir.GraphModule({}, g)


def test_print_tabular():
    g = small_graph()
    buf = io.StringIO()
    g.print_tabular(file=buf)
    lines = buf.getvalue().splitlines()
    assert lines[0].split() == ["opcode", "name", "target", "args", "kwargs", "val", "source"]
    rows = lines[2:]
    assert len(rows) == len(g)
    for row, node in zip(rows, g.nodes):
        cells = row.split()
        assert cells[0] == node.op and cells[1] == node.name
    assert "sub" in rows[5] and "alpha: 0.5" in rows[5] and "model.py:8" in rows[5]


# ---------------------------------------------------------------- Interpreter


def test_interpreter_matches_numpy_and_overrides():
    g = small_graph()
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 3), np.float32), rng.standard_normal((3, 2), np.float32)
    z = x @ w + 1
    want = np.tanh(z) - 0.5 * (x @ w)
    y, s = ir.Interpreter(g).run(x, w)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, want.sum(1), rtol=1e-5, atol=1e-5)

    seen = []

    class Counting(ir.Interpreter):
        def call_function(self, target, args, kwargs):
            seen.append((self.current_node.name, target.name))
            if target.name == "tanh":  # swap tanh for relu
                return np.maximum(args[0], 0)
            return super().call_function(target, args, kwargs)

    y2, _ = Counting(g).run(x, w)
    np.testing.assert_allclose(y2, np.maximum(z, 0) - 0.5 * (x @ w), rtol=1e-5, atol=1e-6)
    assert [t for _, t in seen] == ["matmul", "add", "tanh", "sub", "sum"]


def test_interpreter_names_the_bad_placeholder():
    g = small_graph()
    ok = np.ones((4, 3), np.float32)
    with pytest.raises(TypeError, match=r"'w' expects f32\[3, 2\], got f32\[2, 2\]"):
        ir.Interpreter(g).run(ok, np.ones((2, 2), np.float32))
    with pytest.raises(TypeError, match=r"'w' expects f32\[3, 2\], got f64\[3, 2\]"):
        ir.Interpreter(g).run(ok, np.ones((3, 2)))
    with pytest.raises(TypeError, match=r"'x' expects an array f32\[4, 3\], got list"):
        ir.Interpreter(g).run([[1.0]], np.ones((3, 2), np.float32))
    with pytest.raises(TypeError, match=r"expects 2 inputs \(x, w\), got 1"):
        ir.Interpreter(g).run(ok)


def test_dead_code_keeps_side_effects():
    g = ir.Graph()
    x = g.placeholder("x", TensorMeta((2,), F32))
    used = g.call_op(R["exp"], (x,))
    g.call_op(R["log"], (g.call_op(R["neg"], (x,)),))  # a dead chain of two
    marked = g.call_op(R["tanh"], (x,))
    marked.meta["side_effect"] = True
    g.output((used,))
    assert g.eliminate_dead_code() == 2
    assert [n.name for n in g.nodes] == ["x", "exp", "tanh", "output"]
    assert list(x.users) == [used, marked]
