"""The op declarations: every op wick knows, each defined once (see `ir/opdef.py`).

One module per family; importing this package registers them all, in this order.
"""

from . import elementwise, reductions, linalg, shape, indexing  # noqa: F401
