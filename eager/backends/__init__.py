"""`eager.backends` (`torch.backends`): the backend switches PyTorch programs set or query
(`torch.backends.cudnn.benchmark = True`, `torch.backends.cuda.matmul.allow_tf32`,
`torch.backends.mps.is_available()`...). Wick's kernels are its own (numpy, LLVM, CUDA C via
cupy): it uses none of cuDNN, MKL, MKL-DNN, OpenMP or MPS, so those report unavailable, and
the switches are kept as set without changing results (wick's CPU kernels are deterministic
and run in the requested precision). Semantics: the torch.backends documentation.
"""

from . import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
