"""eager.nn: neural-network building blocks (`torch.nn`): `functional`, a small `Module` system
(`Parameter`, `Module`, `Linear`, `ReLU`, `GELU`, `ModuleList`, `Sequential`), and the losses,
dropout and common layers of `layers.py` (`CrossEntropyLoss`, `MSELoss`, `Dropout`, `LayerNorm`,
`Embedding`, ...)."""

from . import functional
from .layers import (
    BCELoss,
    BCEWithLogitsLoss,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    HuberLoss,
    Identity,
    KLDivLoss,
    L1Loss,
    LayerNorm,
    LogSoftmax,
    MSELoss,
    NLLLoss,
    Sigmoid,
    SmoothL1Loss,
    Softmax,
    Tanh,
)
from .module import GELU, Linear, Module, ModuleList, Parameter, ReLU, Sequential
