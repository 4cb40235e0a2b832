"""Graph passes (torch.fx.passes / torch._inductor's pre-grad passes, in small).

Each pass takes a `Graph` or a `GraphModule`, edits the graph in place and returns what it
did: `dce` / `cse` / `fold_constants` / `decompose` / `drop_noop_views` return a node count,
`replace_pattern` the list of `Match`es. `ShapeProp` fills `meta["val"]` from example arrays
or TensorMeta specs.
Imports only `ir`.
"""

from .constant_folding import fold_constants
from .cse import cse
from .dce import dce
from .decompose import decompose
from .pattern import Match, replace_pattern
from .shape_prop import ShapeProp, meta_namespace, meta_of
from .views import drop_noop_views

__all__ = [
           "Match",
           "ShapeProp",
           "cse",
           "dce",
           "decompose",
           "drop_noop_views",
           "fold_constants",
           "meta_namespace",
           "meta_of",
           "replace_pattern",
]
