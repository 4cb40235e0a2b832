"""Linear algebra: matmul (numpy.matmul broadcasting semantics, as torch.matmul)."""

from __future__ import annotations


import numpy as np

from ..opdef import (
    OpDef, broadcast_shapes, register, sum_to_shape,
)
from .elementwise import FLOATS



def _matmul_shape(a, b):
    if len(a) == 0 or len(b) == 0:
        raise RuntimeError("both arguments to matmul need to be at least 1D, but they are "
                           f"{len(a)}D and {len(b)}D")
    a2 = (1,) + a if len(a) == 1 else a
    b2 = b + (1,) if len(b) == 1 else b
    if a2[-1] != b2[-2]:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({'x'.join(map(str, a))} and "
            f"{'x'.join(map(str, b))}): inner sizes {a2[-1]} and {b2[-2]} differ"
        )
    batch = broadcast_shapes(a2[:-2], b2[:-2])
    out = batch + (a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _matmul_backward(F, g, out, a, b):
    # view 1-D operands as matrices, take the 2-D rule, reduce broadcast batch dims back
    a2 = (1,) + tuple(a.shape) if a.ndim == 1 else tuple(a.shape)
    b2 = tuple(b.shape) + (1,) if b.ndim == 1 else tuple(b.shape)
    g2 = F.reshape(g, broadcast_shapes(a2[:-2], b2[:-2]) + (a2[-2], b2[-1]))
    ga = F.matmul(g2, F.transpose(F.reshape(b, b2), -1, -2))
    gb = F.matmul(F.transpose(F.reshape(a, a2), -1, -2), g2)
    return (F.reshape(sum_to_shape(F, ga, a2), tuple(a.shape)),
            F.reshape(sum_to_shape(F, gb, b2), tuple(b.shape)))


register(OpDef(
    "matmul", "matmul", "input, other", 2, "default", scalar_ok=False,
    shape=_matmul_shape, impl=lambda xp, a, b: xp.matmul(a, b), backward=_matmul_backward,
    ref=np.matmul, dunders=("__matmul__",), test_dtypes=FLOATS,
))
