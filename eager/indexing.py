"""Tensor indexing: `__getitem__` / `__setitem__` (basic and advanced), installed on Tensor."""

from __future__ import annotations


def install(tensor_cls) -> None:
    """Define the indexing methods on `tensor_cls` (called once by `eager/__init__.py`)."""
