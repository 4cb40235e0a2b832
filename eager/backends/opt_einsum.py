"""`torch.backends.opt_einsum`: whether the opt_einsum package (contraction order of einsum
with three or more operands) is importable; `enabled` and `strategy` are kept as set."""

enabled = True
strategy = "auto"


def is_available() -> bool:
    try:
        import opt_einsum  # noqa: F401
    except ImportError:
        return False
    return True


def get_opt_einsum():
    """The opt_einsum module, or None."""
    try:
        import opt_einsum
    except ImportError:
        return None
    return opt_einsum
