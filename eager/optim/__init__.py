"""`eager.optim`: optimizers and learning-rate schedulers, as `torch.optim`.

`Optimizer` (parameter groups, state, `zero_grad`, `state_dict`), the algorithms `SGD`, `Adam`,
`AdamW`, `Adamax`, `NAdam`, `RAdam`, `RMSprop`, `Adagrad`, `Adadelta`, `Adafactor`, `ASGD`,
`Rprop`, `LBFGS`, `Muon`, the `lr_scheduler` and `swa_utils` submodules and
`swap_in_optimizer_params_and_state`. Each algorithm follows the pseudo-code of its PyTorch
doc page (https://pytorch.org/docs/stable/optim.html) and PyTorch's single-tensor update, and
updates the parameters in place under `no_grad`. Touches `eager` only.
"""

from __future__ import annotations

from . import lr_scheduler, swa_utils
from .adadelta import Adadelta, Adafactor
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adam_family import Adamax, NAdam, RAdam
from .asgd import ASGD, Rprop
from .lbfgs import LBFGS
from .muon import Muon
from .optimizer import Optimizer
from .rmsprop import RMSprop
from .sgd import SGD
from .stateless import swap_in_optimizer_params_and_state

__all__ = [
    "ASGD", "LBFGS", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax",
    "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler", "swa_utils",
    "swap_in_optimizer_params_and_state",
]
