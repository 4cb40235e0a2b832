"""ir: the vocabulary shared by every layer of wick.

dtypes and type promotion (`ir.dtypes`), the op registry (`ir.REGISTRY`, `ir.OpDef`, declared
in `ir/ops/`), the scalar-builder protocol for elementwise formulas (`ir.scalar`), and an
FX-like `Graph` of `Node`s: `Interpreter`, `GraphModule` (graph + attributes, printed as Python
by `.code`), `symbolic_trace`, passes (`ir.passes`), JSON (`ir.serialize`) and drawings
(`ir.drawing`). Imports nothing of wick's outside `ir`.
"""

from . import drawing, dtypes, passes
from . import ops as _ops
from .dtypes import DType, bool_, float32, float64, int64
from .graph import DynamicShapeError, Graph, Node, map_arg
from .graph_module import GraphModule
from .interpreter import Interpreter
from .lint import GraphLintError
from .opdef import REGISTRY, OpDef, OpNamespace, TensorMeta, broadcast_shapes, is_number
from .passes import ShapeProp
from .serialize import GraphFormatError
from .tracer import Proxy, TraceError, symbolic_trace

__all__ = [
    "REGISTRY",
    "DType",
    "DynamicShapeError",
    "Graph",
    "GraphFormatError",
    "GraphLintError",
    "GraphModule",
    "Interpreter",
    "Node",
    "OpDef",
    "OpNamespace",
    "Proxy",
    "ShapeProp",
    "TensorMeta",
    "TraceError",
    "bool_",
    "broadcast_shapes",
    "drawing",
    "dtypes",
    "float32",
    "float64",
    "int64",
    "is_number",
    "map_arg",
    "passes",
    "symbolic_trace",
]
