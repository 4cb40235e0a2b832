"""Graphs as JSON: save a captured graph with a bug report, load it back and replay it.

`to_json(graph_or_module)` writes every node (ops by registry name, dtypes by name, Nodes as
`{"node": name}`, tuples as `{"tuple": [...]}`, non-finite floats as `{"float": "inf"}`) and the
JSON-simple meta (`val`, `source`, `grad_enabled`...); a GraphModule also writes its attribute
arrays. `Graph.from_json` / `GraphModule.from_json` read it back, raising `GraphFormatError`
(a ValueError) that names the node for unknown ops, unknown dtypes or a corrupt file.
Imports only `ir`.
"""

from __future__ import annotations

import json
import math

import numpy as np

from . import dtypes as D
from .graph import OPS, Graph, Node
from .opdef import REGISTRY, OpDef, TensorMeta

FORMAT, VERSION = "wick.graph", 1


class GraphFormatError(ValueError):
    """A graph file that cannot be read (corrupt JSON, unknown op or dtype, bad reference)."""


# ---------------------------------------------------------------- writing


def _enc(v, where: str):
    if isinstance(v, Node):
        return {"node": v.name}
    if isinstance(v, np.generic):
        v = v.item()
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else {"float": repr(v)}
    if isinstance(v, complex):
        return {"complex": [_enc(v.real, where), _enc(v.imag, where)]}
    if isinstance(v, tuple):
        return {"tuple": [_enc(x, where) for x in v]}
    if isinstance(v, list):
        return [_enc(x, where) for x in v]
    if isinstance(v, dict):
        return {"dict": {str(k): _enc(x, where) for k, x in v.items()}}
    if isinstance(v, D.DType):
        return {"dtype": v.name}
    if isinstance(v, slice):
        return {"slice": [_enc(v.start, where), _enc(v.stop, where), _enc(v.step, where)]}
    if v is Ellipsis:
        return {"ellipsis": True}
    raise TypeError(f"to_json: {where} holds {v!r} of type {type(v).__name__}, which has no "
                    "JSON form")


def _enc_meta(meta: dict) -> dict:
    out = {}
    for k, v in meta.items():
        if k == "val":
            out[k] = None if v is None else {"shape": list(v.shape), "dtype": v.dtype.name,
                                             "device": v.device}
        elif v is None or isinstance(v, (bool, int, float, str)):
            out[k] = v
    return out


def _enc_array(value, name: str) -> dict:
    a = np.asarray(value)
    D.from_numpy(a.dtype)  # raises TypeError for dtypes wick does not have
    return {"dtype": D.from_numpy(a.dtype).name, "shape": list(a.shape),
            "data": a.reshape(-1).tolist()}


def to_json(obj, indent: int | None = 1) -> str:
    """JSON text of a Graph, or of a GraphModule with its attribute arrays. Raises TypeError
    naming the node for a constant without a JSON form."""
    graph = obj if isinstance(obj, Graph) else obj.graph
    nodes = []
    for n in graph.nodes:
        where = f"node %{n.name}"
        target = n.target.name if isinstance(n.target, OpDef) else str(n.target)
        nodes.append({"name": n.name, "op": n.op, "target": target,
                      "args": [_enc(a, where) for a in n.args],
                      "kwargs": {k: _enc(v, where) for k, v in n.kwargs.items()},
                      "meta": _enc_meta(n.meta)})
    doc = {"format": FORMAT, "version": VERSION, "name": graph.name, "nodes": nodes}
    if not isinstance(obj, Graph):
        doc["attrs"] = {k: _enc_array(v, k) for k, v in obj.attrs.items()}
    return json.dumps(doc, indent=indent)


# ---------------------------------------------------------------- reading


def _dtype(name, where: str) -> D.DType:
    try:
        return D.from_name(name)
    except (TypeError, KeyError):
        raise GraphFormatError(f"{where}: unknown dtype {name!r}") from None


def _dec(v, env: dict, where: str):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, list):
        return [_dec(x, env, where) for x in v]
    if not isinstance(v, dict) or len(v) != 1:
        raise GraphFormatError(f"{where}: cannot read value {v!r}")
    (tag, x), = v.items()
    if tag == "node":
        if x not in env:
            raise GraphFormatError(f"{where}: reads %{x}, which is not defined before it")
        return env[x]
    if tag == "tuple" and isinstance(x, list):
        return tuple(_dec(e, env, where) for e in x)
    if tag == "dict" and isinstance(x, dict):
        return {k: _dec(e, env, where) for k, e in x.items()}
    if tag == "float" and x in ("inf", "-inf", "nan"):
        return float(x)
    if tag == "complex" and isinstance(x, list) and len(x) == 2:
        return complex(_dec(x[0], env, where), _dec(x[1], env, where))
    if tag == "dtype":
        return _dtype(x, where)
    if tag == "slice" and isinstance(x, list) and len(x) == 3:
        return slice(*(_dec(e, env, where) for e in x))
    if tag == "ellipsis":
        return Ellipsis
    raise GraphFormatError(f"{where}: cannot read value {v!r}")


def _dec_meta(meta, where: str) -> dict:
    if not isinstance(meta, dict):
        raise GraphFormatError(f"{where}: 'meta' must be an object")
    out = dict(meta)
    val = meta.get("val")
    if val is not None:
        try:
            out["val"] = TensorMeta(tuple(int(s) for s in val["shape"]),
                                    _dtype(val["dtype"], where), str(val.get("device", "cpu")))
        except (KeyError, TypeError, ValueError) as e:
            if isinstance(e, GraphFormatError):
                raise
            raise GraphFormatError(f"{where}: bad meta['val'] {val!r}") from None
    return out


def _load(text) -> dict:
    try:
        doc = json.loads(text)
    except (json.JSONDecodeError, TypeError, UnicodeDecodeError) as e:
        raise GraphFormatError(f"corrupt graph file: {e}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise GraphFormatError(f"not a wick graph file (expected \"format\": \"{FORMAT}\")")
    if doc.get("version") != VERSION:
        raise GraphFormatError(f"graph file version {doc.get('version')!r} is not supported "
                               f"(this wick reads version {VERSION})")
    if not isinstance(doc.get("nodes"), list):
        raise GraphFormatError("corrupt graph file: 'nodes' must be a list")
    return doc


def graph_from_json(text) -> Graph:
    """The Graph written by `to_json` (see the module docstring for the errors)."""
    doc = _load(text)
    graph = Graph(str(doc.get("name", "graph")))
    env: dict[str, Node] = {}
    for i, e in enumerate(doc["nodes"]):
        where = f"node {i}"
        if not isinstance(e, dict):
            raise GraphFormatError(f"{where}: expected an object, got {type(e).__name__}")
        if isinstance(e.get("name"), str):
            where += f" (%{e['name']})"
        for key, typ in (("name", str), ("op", str), ("args", list), ("kwargs", dict)):
            if not isinstance(e.get(key), typ):
                raise GraphFormatError(f"{where}: missing or malformed field {key!r}")
        op, target = e["op"], e.get("target")
        if op not in OPS:
            raise GraphFormatError(f"{where}: unknown node op {op!r}")
        if op == "call_function":
            target = REGISTRY.get(target)
            if target is None:
                raise GraphFormatError(f"{where}: unknown op {e.get('target')!r} (not in "
                                       "ir.REGISTRY)")
        elif not isinstance(target, str):
            raise GraphFormatError(f"{where}: target must be a string")
        args = tuple(_dec(a, env, where) for a in e["args"])
        kwargs = {k: _dec(v, env, where) for k, v in e["kwargs"].items()}
        node = graph.create_node(op, target, args, kwargs, name=e["name"],
                                 meta=_dec_meta(e.get("meta", {}), where))
        if node.name != e["name"]:
            raise GraphFormatError(f"{where}: name {e['name']!r} is used twice or is not an "
                                   "identifier")
        env[node.name] = node
    outs = graph.find_nodes("output")
    if len(outs) != 1 or graph._root._prev is not outs[0]:
        raise GraphFormatError("corrupt graph file: expected one output node, at the end")
    return graph


def module_from_json(text):
    """The GraphModule (graph and attribute arrays) written by `to_json`."""
    from .graph_module import GraphModule

    graph = graph_from_json(text)
    doc = _load(text)
    attrs = {}
    for name, a in (doc.get("attrs") or {}).items():
        where = f"attribute {name!r}"
        try:
            dt = _dtype(a["dtype"], where)
            attrs[name] = np.asarray(a["data"], dtype=dt.np).reshape(a["shape"])
        except GraphFormatError:
            raise
        except (KeyError, TypeError, ValueError) as e:
            raise GraphFormatError(f"{where}: corrupt array ({e})") from None
    try:
        return GraphModule(attrs, graph)
    except AttributeError as e:
        raise GraphFormatError(f"corrupt graph file: {e}") from None
