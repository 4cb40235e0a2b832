"""`torch.backends.openmp`: wick's kernels do not use OpenMP."""


def is_available() -> bool:
    return False
