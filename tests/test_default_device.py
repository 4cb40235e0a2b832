"""`eager.set_default_device` / `get_default_device` and `with eager.device(...)` (torch's
default-device semantics: factory calls without `device=` use it, `*_like` follow their input,
blocks nest, per thread). Without a GPU, a CUDA default raises PyTorch's "Found no NVIDIA
driver" RuntimeError where a tensor is created; compared with torch where it is installed."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import eager

FACTORIES = {
    "zeros": lambda lib: lib.zeros(2, 3),
    "ones": lambda lib: lib.ones(2),
    "full": lambda lib: lib.full((2,), 1.5),
    "empty": lambda lib: lib.empty(3),
    "tensor": lambda lib: lib.tensor([1.0, 2.0]),
    "arange": lambda lib: lib.arange(4),
    "linspace": lambda lib: lib.linspace(0, 1, 5),
    "eye": lambda lib: lib.eye(3),
    "randn": lambda lib: lib.randn(2, 2),
    "rand": lambda lib: lib.rand(3),
    "randint": lambda lib: lib.randint(0, 5, (3,)),
}


@pytest.fixture(autouse=True)
def _reset():
    yield
    eager.set_default_device(None)


def _no_gpu():
    if eager.cuda.is_available():
        pytest.skip("a GPU is present: the error path is not reachable")


def test_default_is_the_cpu_and_cpu_can_be_set():
    assert eager.get_default_device() == eager.device("cpu")
    assert repr(eager.get_default_device()) == "device(type='cpu')"
    eager.set_default_device("cpu")
    assert eager.get_default_device() == eager.device("cpu")
    for name, make in FACTORIES.items():
        assert make(eager).device == eager.device("cpu"), name
    eager.set_default_device(eager.device("cpu"))
    assert eager.zeros(1).device.type == "cpu"
    eager.set_default_device(None)
    assert eager.get_default_device() == eager.device("cpu")


def test_cuda_default_without_a_gpu_raises_at_tensor_creation():
    _no_gpu()
    eager.set_default_device("cuda")  # setting it raises nothing, as in PyTorch
    for name, make in FACTORIES.items():
        with pytest.raises(RuntimeError, match="NVIDIA driver"):
            make(eager)
        assert name
    with pytest.raises(RuntimeError, match="NVIDIA driver"):
        eager.get_default_device()  # "cuda" names the current CUDA device
    # an explicit device= wins; *_like follow their input
    x = eager.zeros(2, device="cpu")
    assert x.device.type == "cpu"
    assert eager.zeros_like(x).device.type == "cpu" and eager.randn_like(x).device.type == "cpu"
    assert eager.from_numpy(np.ones(2)).device.type == "cpu"
    eager.set_default_device("cuda:1")
    assert eager.get_default_device() == eager.device("cuda:1")
    eager.set_default_device(None)
    assert eager.zeros(1).device.type == "cpu"


def test_device_as_a_context_manager_nests_and_restores():
    _no_gpu()
    with eager.device("cuda") as d:
        assert d == eager.device("cuda")
        with pytest.raises(RuntimeError, match="NVIDIA driver"):
            eager.ones(2)
        with eager.device("cpu"):
            assert eager.ones(2).device.type == "cpu"
            assert eager.get_default_device() == eager.device("cpu")
        with pytest.raises(RuntimeError, match="NVIDIA driver"):
            eager.arange(3)
    assert eager.ones(2).device.type == "cpu"
    eager.set_default_device("cuda")
    with eager.device("cpu"):  # the innermost block wins over the global default
        assert eager.randn(2).device.type == "cpu"
    with pytest.raises(RuntimeError, match="NVIDIA driver"):
        eager.randn(2)


def test_default_device_is_per_thread_and_checked():
    _no_gpu()
    eager.set_default_device("cuda")
    seen = []
    t = threading.Thread(target=lambda: seen.append(eager.zeros(1).device.type))
    t.start()
    t.join()
    assert seen == ["cpu"]
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        eager.set_default_device("tpu")


def test_matches_torch():
    torch = pytest.importorskip("torch")
    for lib in (torch, eager):
        try:
            assert repr(lib.get_default_device()) == "device(type='cpu')"
            lib.set_default_device("cpu")
            with lib.device("cpu"):
                got = [str(make(lib).device) for make in FACTORIES.values()]
            assert got == ["cpu"] * len(FACTORIES)
            lib.set_default_device("cuda:1")
            assert repr(lib.get_default_device()) == "device(type='cuda', index=1)"
        finally:
            lib.set_default_device(None)
