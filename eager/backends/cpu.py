"""`torch.backends.cpu`: the CPU capability wick's LLVM kernels target."""


def get_cpu_capability() -> str:
    """"DEFAULT" (wick compiles for the host CPU rather than dispatching among builds)."""
    return "DEFAULT"
