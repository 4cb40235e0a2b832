"""`torch.onnx` as ordinary model code meets it: export-friendly branches
(`if torch.onnx.is_in_onnx_export(): return y`, YOLO-style detection heads) ask whether an ONNX
export is tracing them. wick has no ONNX exporter, so no code ever runs under one:
`is_in_onnx_export()` is False (PyTorch's answer outside `torch.onnx.export`, and under
torch.compile); `export` raises RuntimeError in the user's terms. Semantics: torch/onnx/__init__.py.
"""

from __future__ import annotations

__all__ = ["export", "is_in_onnx_export"]


def is_in_onnx_export() -> bool:
    """`torch.onnx.is_in_onnx_export()`: False (wick never runs code under an ONNX export)."""
    return False


def export(model, args=(), f=None, *pargs, **kwargs):
    """`torch.onnx.export`: not available; RuntimeError (wick has no ONNX exporter)."""
    raise RuntimeError("torch.onnx.export is not available in wick: it has no ONNX exporter "
                       "(export with PyTorch itself)")
