"""Indexing ops: gather/scatter, index_select, masked ops, sort/topk and friends."""

from __future__ import annotations
