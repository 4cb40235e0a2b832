"""`eager.optim`: optimizers and learning-rate schedulers, as `torch.optim`.

`Optimizer` (parameter groups, state, `zero_grad`, `state_dict`), the algorithms `SGD`, `Adam`,
`AdamW`, `RMSprop`, `Adagrad`, and the `lr_scheduler` submodule. Each algorithm follows the
pseudo-code of its PyTorch doc page (https://pytorch.org/docs/stable/optim.html) and updates
the parameters in place under `no_grad`. Touches `eager` only.
"""

from __future__ import annotations

from . import lr_scheduler
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD

__all__ = ["SGD", "Adagrad", "Adam", "AdamW", "Optimizer", "RMSprop", "lr_scheduler"]
