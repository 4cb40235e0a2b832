"""Graph export: networkx, DOT (fusion-group colours), SVG rendering, JSON round trip and the
errors for corrupt or unknown input."""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np
import pytest

import ir
from ir import REGISTRY as R
from ir import TensorMeta
from ir.drawing import PALETTE, render, to_dot

F32 = ir.float32


def graph():
    g = ir.Graph("f")
    x = g.placeholder("x", TensorMeta((4, 3), F32))
    w = g.placeholder("w", TensorMeta((3, 2), F32))
    mm = g.call_op(R["matmul"], (x, w), source="m.py:3")
    e = g.call_op(R["exp"], (g.call_op(R["add"], (mm, 1.0), {"alpha": 2}),), source="m.py:4")
    s = g.call_op(R["sum"], (e,), {"dim": -1, "keepdim": True})
    c = g.call_op(R["cast"], (g.call_op(R["div"], (e, s)),), {"dtype": ir.float64})
    g.output((c, mm, float("inf")))
    return g


def test_networkx_nodes_edges_and_meta():
    import networkx as nx

    g = graph()
    d = g.to_networkx()
    assert list(d.nodes) == [n.name for n in g.nodes]
    assert d.number_of_edges() == sum(len(n.all_input_nodes) for n in g.nodes)
    assert nx.is_directed_acyclic_graph(d)
    assert list(nx.topological_sort(d))[:2] == ["x", "w"]
    attrs = d.nodes["exp"]
    assert attrs["op"] == "call_function" and attrs["target"] == "exp"
    assert attrs["shape"] == (4, 2) and attrs["dtype"] == "float32" and attrs["source"] == "m.py:4"
    assert attrs["node"] is next(n for n in g.nodes if n.name == "exp")
    assert d.edges["e" + "xp", "div"]["index"] == 0 and d.edges["sum", "div"]["index"] == 1
    assert set(d.predecessors("output")) == {"cast", "matmul"}


def test_dot_text_and_group_colours():
    g = graph()
    text = to_dot(g, groups={"add": 0, "exp": 0, "div": "k1", "cast": "k1"})
    assert text.startswith('digraph "f" {') and text.rstrip().endswith("}")
    decl = {m.group(1): m.group(2) for m in re.finditer(r'^  "(\w+)" \[(.*)\];$', text, re.MULTILINE)}
    assert set(decl) == {n.name for n in g.nodes}
    edges = re.findall(r'^  "(\w+)" -> "(\w+)";$', text, re.MULTILINE)
    assert sorted(edges) == sorted((a.name, n.name) for n in g.nodes for a in n.all_input_nodes)
    fill = {k: re.search(r'fillcolor="([^"]+)"', v) for k, v in decl.items()}
    assert fill["add"].group(1) == fill["exp"].group(1) == PALETTE[0]
    assert fill["div"].group(1) == fill["cast"].group(1) == PALETTE[1]
    assert fill["matmul"] is None and fill["x"].group(1) == "gray90"
    assert "fusion group k1" in decl["div"]
    assert r'label="%add = add(alpha=2)\nf32[4, 2]"' in decl["add"]
    assert g.to_dot() == to_dot(g)


def test_render_without_and_with_graphviz(tmp_path, monkeypatch):
    g = graph()
    monkeypatch.setenv("PATH", str(tmp_path))  # no `dot` here: the DOT text comes back
    assert render(g, "svg") == to_dot(g)
    assert render(g, "dot", groups={"exp": 1}) == to_dot(g, {"exp": 1})
    fake = tmp_path / "dot"  # a stand-in for Graphviz that checks its input and arguments
    fake.write_text("#!/bin/sh\n[ \"$1\" = \"-Tsvg\" ] || exit 3\nread -r line\n"
                    "case \"$line\" in digraph*) echo '<svg>ok</svg>';; esac\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    assert render(g, "svg").strip() == "<svg>ok</svg>"
    fake.write_text("#!/bin/sh\necho 'syntax error' >&2\nexit 1\n")
    with pytest.raises(RuntimeError, match="dot -Tsvg failed.*syntax error"):
        render(g, "svg")
    with pytest.raises(ValueError, match="unknown drawing format 'png'"):
        render(g, "png")
    assert os.environ["PATH"] == str(tmp_path)


def test_json_round_trip_runs_the_same():
    g = graph()
    with g.inserting_before(g.output_node):  # a dead node is kept in the file too
        g.call_op(R["neg"], (g.placeholders[0],)).meta["grad_enabled"] = False
    text = g.to_json()
    g2 = ir.Graph.from_json(text)
    assert str(g2) == str(g)
    for a, b in zip(g.nodes, g2.nodes):
        assert (a.name, a.op, a.meta) == (b.name, b.op, b.meta)
        assert a.kwargs == b.kwargs and type(a.target) is type(b.target)
    g2.lint()
    x, w = np.random.default_rng(0).standard_normal((4, 3), np.float32), np.ones((3, 2),
                                                                                 np.float32)
    for u, v in zip(ir.Interpreter(g).run(x, w), ir.Interpreter(g2).run(x, w)):
        np.testing.assert_array_equal(u, v)
    assert g2.to_json() == text


def test_json_round_trip_of_a_module_with_constants():
    def f(x):
        return x * c + 1.0

    c = np.arange(6, dtype=np.float64).reshape(2, 3)
    gm = ir.symbolic_trace(f, TensorMeta((2, 3), ir.float64))
    gm2 = ir.GraphModule.from_json(gm.to_json())
    (name,) = gm2.attrs
    np.testing.assert_array_equal(gm2.get_attr(name), c)
    x = np.ones((2, 3))
    np.testing.assert_array_equal(ir.Interpreter(gm2).run(x)[0], c + 1.0)


def _doc():
    return json.loads(graph().to_json())


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d["nodes"][2].update(target="frobnicate"),
     r"node 2 \(%matmul\): unknown op 'frobnicate' \(not in ir.REGISTRY\)"),
    (lambda d: d["nodes"][0]["meta"]["val"].update(dtype="float128"),
     r"node 0 \(%x\): unknown dtype 'float128'"),
    (lambda d: d["nodes"][2].update(args=[{"node": "zz"}, {"node": "w"}]),
     r"node 2 \(%matmul\): reads %zz, which is not defined before it"),
    (lambda d: d["nodes"][3].pop("op"), r"node 3 \(%add\): missing or malformed field 'op'"),
    (lambda d: d["nodes"].pop(), "expected one output node"),
    (lambda d: d.update(format="other"), "not a wick graph file"),
    (lambda d: d.update(version=99), "version 99 is not supported"),
    (lambda d: d["nodes"][3]["args"].append({"set": [1]}), r"node 3 \(%add\): cannot read"),
    (lambda d: d["nodes"][1].update(name="x"), r"node 1 \(%x\): name 'x' is used twice"),
])
def test_from_json_errors_name_the_problem(mutate, message):
    d = _doc()
    mutate(d)
    with pytest.raises(ir.GraphFormatError, match=message):
        ir.Graph.from_json(json.dumps(d))


def test_from_json_corrupt_text():
    text = graph().to_json()
    with pytest.raises(ir.GraphFormatError, match="corrupt graph file"):
        ir.Graph.from_json(text[: len(text) // 2])
    with pytest.raises(ValueError, match="corrupt graph file"):
        ir.Graph.from_json(b"\xff\xfe\x00")
    with pytest.raises(TypeError, match="node %add holds .* of type object"):
        g = graph()
        next(n for n in g.nodes if n.name == "add").kwargs = {"alpha": object()}
        g.to_json()
