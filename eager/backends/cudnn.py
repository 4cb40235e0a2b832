"""`torch.backends.cudnn`: wick does not use cuDNN; the flags are kept as set."""

enabled = True
benchmark = False
benchmark_limit = 10
deterministic = False
allow_tf32 = True


def is_available() -> bool:
    """False: wick has no cuDNN kernels."""
    return False


def version():
    """None: no cuDNN library is loaded."""
    return


def is_acceptable(tensor) -> bool:
    return False
