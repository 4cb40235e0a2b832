"""`torch.backends.mkldnn`: wick does not use oneDNN (MKL-DNN); the flag is kept as set."""

enabled = True


def is_available() -> bool:
    return False
