"""eager.utils: the `torch.utils` namespace, so `from torch.utils.data import DataLoader` runs
under `import eager as torch`. Holds only `data` (datasets, samplers, DataLoader); imports only
`eager` modules."""

from . import data

__all__ = ["data"]
