"""`torch.backends.cuda`: matmul precision switches (`matmul.allow_tf32`...) and the
scaled-dot-product-attention kernel switches, kept as set (wick's attention is one math
kernel; its CUDA matmuls run in the tensors' precision)."""

from __future__ import annotations

import contextlib

from ..device import cuda_is_available


class _MatmulFlags:
    """`torch.backends.cuda.matmul`: allow_tf32, allow_fp16/bf16_reduced_precision_reduction."""

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True


matmul = _MatmulFlags()
_SDP = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def is_built() -> bool:
    """Whether wick can run CUDA tensors here (cupy with a GPU)."""
    return cuda_is_available()


def enable_flash_sdp(enabled: bool) -> None:
    _SDP["flash"] = bool(enabled)


def flash_sdp_enabled() -> bool:
    return _SDP["flash"]


def enable_mem_efficient_sdp(enabled: bool) -> None:
    _SDP["mem_efficient"] = bool(enabled)


def mem_efficient_sdp_enabled() -> bool:
    return _SDP["mem_efficient"]


def enable_math_sdp(enabled: bool) -> None:
    _SDP["math"] = bool(enabled)


def math_sdp_enabled() -> bool:
    return _SDP["math"]


def enable_cudnn_sdp(enabled: bool) -> None:
    _SDP["cudnn"] = bool(enabled)


def cudnn_sdp_enabled() -> bool:
    return _SDP["cudnn"]


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True,
               enable_cudnn=True):
    """Within the block, the given attention kernel switches (restored after)."""
    saved = dict(_SDP)
    _SDP.update(flash=enable_flash, math=enable_math, mem_efficient=enable_mem_efficient,
                cudnn=enable_cudnn)
    try:
        yield
    finally:
        _SDP.clear()
        _SDP.update(saved)


def preferred_linalg_library(backend=None):
    """The linear-algebra library choice (wick's is numpy/scipy's LAPACK): "default"."""
    return "default"
