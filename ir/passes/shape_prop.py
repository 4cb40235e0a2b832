"""Meta propagation (torch.fx.passes.shape_prop.ShapeProp): fills every node's `meta["val"]`.

From example arrays, by running the graph (each value's TensorMeta is recorded), or from
TensorMeta specs without any data, through the registry's shape and dtype rules (composites
without a shape rule through their decomposition run on metas). Imports only `ir`.
"""

from __future__ import annotations

from ..execute import array_meta
from ..graph import Node, op_meta
from ..interpreter import Interpreter
from ..opdef import OpDef, OpNamespace, TensorMeta, is_number


def meta_of(op: OpDef, inputs: tuple, attrs: dict):
    """The output TensorMeta of `op` on operand metas (TensorMeta or numbers) and attributes
    (canonicalised here); raises as eager would for shapes or dtypes that do not fit."""
    return op_meta(op, inputs, op.canonical_attrs(inputs, attrs))


def meta_namespace() -> OpNamespace:
    """An OpNamespace computing output TensorMetas (no data) from operand metas."""
    return OpNamespace(meta_of)


class ShapeProp(Interpreter):
    """`ShapeProp(gm_or_graph).propagate(*inputs)`: inputs are arrays (the graph runs) or
    TensorMeta specs (no data; arrays mixed with specs count as specs). Placeholders take the
    given meta (a graph can be re-specialised to new shapes); attributes are canonicalised. Returns the outputs (arrays or
    metas). An error names the node whose rule failed, keeping the exception type."""

    meta_mode = False

    def propagate(self, *args):
        self.meta_mode = any(isinstance(a, TensorMeta) for a in args)
        if self.meta_mode:
            args = tuple(a if isinstance(a, TensorMeta) or is_number(a) else array_meta(a)
                         for a in args)
        return self.run(*args)

    def run_node(self, n):
        try:
            result = super().run_node(n)
        except Exception as e:
            if n.op != "call_function":
                raise
            msg = f"shape propagation failed at %{n.name} ({n.target.name}): {e}"
            try:
                err = type(e)(msg)
            except TypeError:  # an exception type with another constructor
                err = RuntimeError(msg)
            raise err from e
        if n.op != "output" and not is_number(result):
            n.meta["val"] = result if isinstance(result, TensorMeta) else array_meta(result)
        if n.op == "call_function":  # attributes of an untyped trace become canonical
            metas = tuple(a.val if isinstance(a, Node) else a for a in n.args)
            n.kwargs = n.target.canonical_attrs(metas, dict(n.kwargs))
        return result

    def placeholder(self, target, args, kwargs):
        return next(self.args_iter)

    def get_attr(self, target, args, kwargs):
        value = super().get_attr(target, args, kwargs)
        return array_meta(value) if self.meta_mode else value

    def call_function(self, target, args, kwargs):
        if self.meta_mode:
            return meta_of(target, args, kwargs)
        return super().call_function(target, args, kwargs)
