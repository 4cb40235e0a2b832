"""Graph passes run before fusion: composites replaced by their decompositions.

A composite node (softmax, mean, log_softmax...) recorded as one node by a hand-built graph
is expanded into the primitive ops of its registry `decomp` (`ir.autodiff.decompose`), so
that the partition can fuse them (softmax becomes one row kernel). Imports only `ir`.
"""

from __future__ import annotations

from ir.autodiff import decompose

__all__ = ["decompose"]
