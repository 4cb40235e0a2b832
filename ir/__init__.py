"""ir: the vocabulary shared by every layer of wick.

dtypes and type promotion (`ir.dtypes`), the op registry (`ir.REGISTRY`, `ir.OpDef`, declared
in `ir/ops.py`), the scalar-builder protocol for elementwise formulas (`ir.scalar`), and an
FX-like `Graph` of `Node`s with an `Interpreter`. Imports nothing of wick's outside `ir`.
"""

from . import dtypes
from .dtypes import DType, bool_, float32, float64, int64
from .opdef import REGISTRY, OpDef, OpNamespace, TensorMeta, broadcast_shapes, is_number
from . import ops as _ops  # noqa: F401  (registers every op)
from .graph import Graph, Node
from .interpreter import Interpreter

__all__ = [
    "dtypes", "DType", "bool_", "float32", "float64", "int64", "REGISTRY", "OpDef",
    "OpNamespace", "TensorMeta", "broadcast_shapes", "is_number", "Graph", "Node", "Interpreter",
]
