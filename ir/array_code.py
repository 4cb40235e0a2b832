"""A graph as straight-line Python over numpy arrays: one line per node, calling its kernel.

`array_function(graph, params)` prints a graph recorded by `ir.autodiff.Recorder` (registry
ops with their metas, composites kept whole where eager runs them whole) as a Python function
and compiles it. Each line runs what `ir.execute.run_kernel` would for its node, without the
per-call checks: operands cast to the op's compute dtype (`opmath`), then the op's ufunc
(`OpDef.ufunc_kernel`) where its attributes are the defaults, its scalar formula through
`ArrayBuilder`, its `impl`, or a composite's `eager_impl`; the result fixed to the node's dtype
(numpy may give a scalar or promote) unless the call surely gives that array. Constants are
globals named `c<N>`, steps `t<N>`: eager's backward programs (`eager/autograd/programs.py`)
inline these functions by renaming those names. As torch.fx's Python codegen, one level down:
arrays instead of tensors. Used by eager's backward plans; imports only `ir`.
"""

from __future__ import annotations

from keyword import iskeyword

import numpy as np

from .execute import opmath
from .graph import Graph, Node
from .opdef import OpDef, TensorMeta
from .scalar import ArrayBuilder

B = ArrayBuilder(np)
_NUMBERS = (bool, int, float, complex)
_DEFAULTS: dict = {}  # op name -> its attributes' defaults


class Unprintable(Exception):
    """A node the array form cannot run exactly (a Python int beside a narrow integer compute
    dtype, which `run_kernel` wraps; an operand that is neither a node nor a number)."""


def fix(t, dtype):
    """A step's result as an ndarray of `dtype` (numpy may return a scalar, or promote)."""
    if type(t) is not np.ndarray:
        t = np.asarray(t)
    if t.dtype != dtype:
        t = t.astype(dtype)
    return t


def _direct(op: OpDef, compute, attrs: dict):
    """The numpy ufunc of `op` on `compute` dtype (`OpDef.ufunc_kernel`) when `attrs` are the
    defaults, or None."""
    fn = op.ufunc_kernel(np, compute)
    if fn is None:
        return None
    defaults = _DEFAULTS.get(op.name)
    if defaults is None:
        defaults = _DEFAULTS[op.name] = {n: p.default for n, p in
                                         list(op.signature.parameters.items())[op.nin:]}
    if attrs.keys() != defaults.keys() or any(
            type(v) is not type(defaults[k]) or v != defaults[k] for k, v in attrs.items()):
        return None
    return fn


def _sure_array(op: OpDef, meta: TensorMeta, cd, out_dtype, args: tuple) -> bool:
    """Whether numpy's ufunc on `args` (nodes cast to `cd` where promoted, Python numbers)
    surely gives an ndarray of `out_dtype`: a result with dims (not a numpy scalar) of a
    float/complex compute dtype kept as the out dtype (numbers are weak, NEP 50), or a
    comparison's bool. Then the step needs no `fix`."""
    if not meta.shape:
        return False
    for i, x in enumerate(args):
        if isinstance(x, Node):
            if i < op.promote_from and x.meta["val"].dtype.np != cd.np:  # (not cast to cd)
                return False
        elif type(x) not in (bool, int, float):
            return False
    onp = out_dtype.np
    return onp == np.bool_ or (onp == cd.np and cd.np.kind in "fc")


class _Printer:
    def __init__(self, names: dict):
        self.names: dict = dict(names)  # Node -> name in the source
        self.env: dict = {"np": np, "asarray": np.asarray, "ndarray": np.ndarray, "fix": fix,
                          "B": B, "__name__": __name__}  # (numpy's warnings: see ir.execute)
        self.n = 0
        self.lines: list = []

    def const(self, value) -> str:
        name = f"c{self.n}"
        self.n += 1
        self.env[name] = value
        return name

    def kw(self, attrs: dict) -> str:
        """Attributes as keyword arguments (each a constant: no dict built per call)."""
        if not attrs:
            return ""
        if all(k.isidentifier() and not iskeyword(k) for k in attrs):
            return "".join(f", {k}={self.const(v)}" for k, v in attrs.items())
        return ", **" + self.const(dict(attrs))

    def step(self, node: Node) -> None:
        op: OpDef = node.target
        attrs = dict(node.kwargs)
        meta = node.meta["val"]
        if op.decomp is not None:  # a composite eager runs whole: its kernel, one step
            args = [self.operand(x) for x in node.args]
            self.emit(node, f"{self.const(op.eager_impl)}(np, {', '.join(args)}"
                            f"{self.kw(attrs)})", self.const(meta.dtype.np))
            return
        metas = tuple(a.meta["val"] if isinstance(a, Node) else a for a in node.args)
        compute, out_dtype = op.dtypes(metas, attrs)
        cd = opmath(op, compute)
        args = []
        for i, x in enumerate(node.args):
            if isinstance(x, Node):
                ref = self.names[x]
                if i >= op.promote_from and x.meta["val"].dtype.np != cd.np:
                    ref = f"{ref}.astype({self.const(cd.np)})"
                args.append(ref)
            elif isinstance(x, _NUMBERS):
                if cd.category == 1 and cd.name != "int64" and type(x) is int:
                    raise Unprintable(f"{op.name}: a Python int on {cd.name}")
                args.append(self.const(x))
            else:
                raise Unprintable(f"{op.name}: operand {type(x).__name__}")
        direct = _direct(op, cd, attrs) if op.kind == "elementwise" else None
        if direct is not None:  # one ufunc (np.multiply, np.exp): no Python frame
            call = f"{self.const(direct)}({', '.join(args)})"
        elif op.kind == "elementwise" and op.impl_is_scalar():
            call = f"{self.const(op.scalar)}(B, {', '.join(args)}{self.kw(attrs)})"
        else:
            call = f"{self.const(op.impl)}(np, {', '.join(args)}{self.kw(attrs)})"
        sure = direct is not None and _sure_array(op, meta, cd, out_dtype, node.args)
        self.emit(node, call, None if sure else self.const(out_dtype.np))

    def operand(self, x) -> str:
        if isinstance(x, Node):
            return self.names[x]
        if isinstance(x, _NUMBERS):
            return self.const(x)
        raise Unprintable(f"operand {type(x).__name__}")

    def emit(self, node: Node, call: str, onp) -> None:
        target = f"t{self.n}"
        self.n += 1
        self.names[node] = target
        self.lines.append(f"    {target} = {call}")
        if onp is not None:  # (None: the call gives an ndarray of the right dtype)
            self.lines.append(f"    if type({target}) is not ndarray or {target}.dtype is not "
                              f"{onp}: {target} = fix({target}, {onp})")


def array_function(graph: Graph, names: dict, signature: list, name: str = "plan",
                   filename: str = "<graph>"):
    """`graph` as a compiled Python function over arrays.

    `names` maps each placeholder Node to its parameter name; `signature` lists the
    function's parameter names in order (it may have parameters the graph never reads). The
    graph's output (a tuple of Nodes and None) is returned as a list. The function's `source`
    attribute is its text. Raises Unprintable for a node with no exact array form.
    """
    p = _Printer(names)
    for node in graph.nodes:
        if node.op == "call_function":
            p.step(node)
        elif node.op not in ("placeholder", "output"):
            raise Unprintable(f"{node.op} node %{node.name}")
    results = [p.names[r] if isinstance(r, Node) else "None" for r in graph.output_node.args[0]]
    src = "\n".join([f"def {name}({', '.join(signature)}):", *p.lines,
                     f"    return [{', '.join(results)}]"])
    exec(compile(src, filename, "exec"), p.env)  # noqa: S102  (the graph as source, as torch.fx)
    fn = p.env[name]
    fn.source = src
    return fn
