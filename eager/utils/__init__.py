"""eager.utils: the `torch.utils` namespace, so `from torch.utils.data import DataLoader` runs
under `import eager as torch`. Holds `data` (datasets, samplers, DataLoader) and `hooks`
(`RemovableHandle`, `BackwardHook`); imports only `eager` modules."""

from . import data, hooks

__all__ = ["data", "hooks"]
