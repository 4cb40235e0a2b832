"""eager.utils: the `torch.utils` namespace, so `from torch.utils.data import DataLoader` runs
under `import eager as torch`. Holds `data` (datasets, samplers, DataLoader), `checkpoint`
(activation checkpointing) and `hooks` (`RemovableHandle`, `BackwardHook`); imports only
`eager` modules."""

from . import checkpoint, data, hooks

__all__ = ["checkpoint", "data", "hooks"]
