"""Graph export for algorithms and eyes: networkx, Graphviz DOT, SVG.

`to_networkx(graph)` gives codegen's partitioner (and users) a `networkx.DiGraph`; `to_dot`
writes DOT text with nodes coloured by fusion group (a mapping node name -> group id given by
the caller, e.g. codegen's plan); `render(graph, fmt)` runs the Graphviz `dot` program for SVG
when it is installed and returns the DOT text otherwise (`wick dump --stages graph --format
svg`). Imports only `ir` (networkx lazily).
"""

from __future__ import annotations

import shutil
import subprocess

from .graph import Graph, _fmt, non_default_kwargs

# Graphviz X11 colour names, light enough for black text; groups cycle through them.
PALETTE = ("lightblue", "palegreen", "lightsalmon", "plum", "khaki", "lightcyan",
           "peachpuff", "thistle", "lightpink", "wheat", "aquamarine", "lightgoldenrod")
SHAPES = {"placeholder": "invhouse", "get_attr": "cylinder", "call_function": "box",
          "output": "house"}


def to_networkx(graph: Graph):
    """A `networkx.DiGraph`: one vertex per node, keyed by node name, with attributes `op`,
    `target` (an op's registry name), `node` (the Node), `meta` (a copy), `shape`, `dtype`
    (name), `source`; one edge per (input -> user) pair, with `index` (the operand position,
    or None for a keyword/output use)."""
    import networkx as nx

    g = nx.DiGraph(name=graph.name)
    for n in graph.nodes:
        val = n.val
        g.add_node(n.name, op=n.op, target=getattr(n.target, "name", n.target), node=n,
                   meta=dict(n.meta), shape=None if val is None else val.shape,
                   dtype=None if val is None else val.dtype.name, source=n.meta.get("source"))
        for a in n.all_input_nodes:
            index = next((i for i, x in enumerate(n.args) if x is a), None)
            g.add_edge(a.name, n.name, index=index)
    return g


def _q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _label(n) -> str:
    if n.op == "output":
        return "output"
    if n.op == "call_function":
        attrs = ", ".join(f"{k}={_fmt(v)}" for k, v in non_default_kwargs(n).items())
        head = n.target.name + (f"({attrs})" if attrs else "")
    else:
        head = n.op if n.op == "placeholder" else f"get_attr {n.target}"
    val = "" if n.val is None else f"\n{n.val}"
    return f"%{n.name} = {head}{val}"


def to_dot(graph: Graph, groups: dict | None = None) -> str:
    """Graphviz DOT text of `graph`. `groups`: node name -> fusion group id (any hashable);
    grouped nodes are filled with one colour per group (palette cycling) and named in their
    tooltip; ungrouped call_function nodes stay white."""
    groups = groups or {}
    colour: dict = {}
    for gid in groups.values():
        colour.setdefault(gid, PALETTE[len(colour) % len(PALETTE)])
    lines = [f"digraph {_q(graph.name)} {{", "  rankdir=TB;",
             '  node [fontname="monospace", fontsize=10, style=filled, fillcolor=white];']
    for n in graph.nodes:
        attrs = [f"label={_q(_label(n))}", f"shape={SHAPES.get(n.op, 'box')}"]
        if n.name in groups:
            gid = groups[n.name]
            attrs += [f"fillcolor={_q(colour[gid])}", f"tooltip={_q(f'fusion group {gid}')}"]
        elif n.op != "call_function":
            attrs.append('fillcolor="gray90"')
        lines.append(f"  {_q(n.name)} [{', '.join(attrs)}];")
    for n in graph.nodes:
        for a in n.all_input_nodes:
            lines.append(f"  {_q(a.name)} -> {_q(n.name)};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(graph: Graph, fmt: str = "svg", groups: dict | None = None) -> str:
    """The drawing of `graph` as text: "svg" through Graphviz's `dot -Tsvg` when the `dot`
    program is on PATH (the DOT text otherwise), or "dot". Raises ValueError for another
    `fmt` and RuntimeError when `dot` fails."""
    if fmt not in ("svg", "dot"):
        raise ValueError(f"unknown drawing format {fmt!r}; expected 'svg' or 'dot'")
    text = to_dot(graph, groups)
    exe = shutil.which("dot") if fmt == "svg" else None
    if exe is None:
        return text
    proc = subprocess.run([exe, "-Tsvg"], input=text, capture_output=True, text=True,
                          timeout=60, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"dot -Tsvg failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout
