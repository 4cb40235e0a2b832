"""DLPack (issue 17, item 5): zero-copy exchange with numpy (always) and torch (when
installed), both directions, every dtype wick can export, strided views, writes seen on both
sides, the requires-grad refusal and the device tuple."""

from __future__ import annotations

import numpy as np
import pytest

import eager

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64",
          "complex64", "complex128"]


def _sample(dtype):
    return eager.tensor(np.arange(12).reshape(3, 4) % 3, dtype=getattr(eager, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip_shares_memory(dtype):
    t = _sample(dtype)
    a = np.from_dlpack(t)
    assert a.dtype == t.numpy().dtype and a.shape == (3, 4)
    assert np.shares_memory(a, t.numpy())
    back = eager.from_dlpack(a)
    assert back.dtype is t.dtype and np.shares_memory(back.numpy(), a)
    a[0, 0] = 1
    assert back[0, 0].item() == t[0, 0].item() == a[0, 0]


def test_strided_views_and_offsets():
    base = eager.arange(24.0).reshape(4, 6)
    for view in (base.t(), base[1:, ::2], base[:, 3], base.unsqueeze(0)[:, 2]):
        a = np.from_dlpack(view)
        np.testing.assert_array_equal(a, view.numpy())
        assert np.shares_memory(a, base.numpy())
    v = base[1:, ::2]
    np.from_dlpack(v)[0, 0] = -5.0
    assert base[1, 0].item() == -5.0


def test_refusals_and_device():
    with pytest.raises(RuntimeError, match="require gradient"):
        eager.ones(2, requires_grad=True).__dlpack__()
    assert eager.ones(2).__dlpack_device__() == (1, 0)
    x = eager.ones(3, requires_grad=True)
    y = eager.from_dlpack(x)
    assert not y.requires_grad and np.shares_memory(y.numpy(), x.detach().numpy())
    with pytest.raises(BufferError):
        eager.ones(2, dtype=eager.bfloat16).__dlpack__()
    c = eager.from_dlpack(np.arange(3.0), copy=True)
    assert not np.shares_memory(c.numpy(), np.arange(3.0))


@pytest.mark.parametrize("dtype", DTYPES)
def test_torch_both_ways(dtype):
    torch = pytest.importorskip("torch")
    t = _sample(dtype)
    tt = torch.from_dlpack(t)
    assert str(tt.dtype) == "torch." + dtype and tuple(tt.shape) == (3, 4)
    np.testing.assert_array_equal(tt.numpy(), t.numpy())
    tt[2, 3] = 1
    assert t[2, 3].item() == 1
    src = torch.zeros(2, 5, dtype=getattr(torch, dtype))[:, 1:4]
    e = eager.from_dlpack(src)
    assert e.dtype is getattr(eager, dtype) and tuple(e.shape) == (2, 3)
    e[1, 2] = 1
    assert src[1, 2].item() == 1
