"""eager.nn: neural-network building blocks: `functional`, and a small `Module` system
(`Parameter`, `Module`, `Linear`, `ReLU`, `GELU`, `ModuleList`, `Sequential`)."""

from . import functional
from .module import GELU, Linear, Module, ModuleList, Parameter, ReLU, Sequential
