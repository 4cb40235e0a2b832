"""`torch.testing`: `assert_close` (PyTorch's default tolerances per dtype, its checks of
shape, dtype and device, its mismatch report), `make_tensor`, and the deprecated
`assert_allclose`. Semantics: the PyTorch documentation of torch.testing."""

from __future__ import annotations

import numpy as np

from ir import dtypes as D

from . import creation
from .tensor import Tensor

# (rtol, atol) by dtype, PyTorch's table (torch.testing._comparison)
_TOL = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
        "float64": (1e-7, 1e-7), "complex64": (1.3e-6, 1e-5), "complex128": (1e-7, 1e-7)}


def _as_tensor(x):
    return x if isinstance(x, Tensor) else creation.tensor(x)


def assert_close(actual, expected, *, allow_subclasses=True, rtol=None, atol=None,
                 equal_nan=False, check_device=True, check_dtype=True, check_layout=True,
                 check_stride=False, msg=None):
    """Raise AssertionError unless `actual` and `expected` (tensors, numbers or nested
    sequences/mappings of them) are close: |a - e| <= atol + rtol |e| elementwise, with the
    dtype's default tolerances (both or neither of rtol/atol must be given)."""
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    if isinstance(expected, dict):
        if not isinstance(actual, dict) or set(actual) != set(expected):
            raise AssertionError(msg or "The mappings' keys do not match.")
        for k in expected:
            assert_close(actual[k], expected[k], rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_device=check_device, check_dtype=check_dtype, msg=msg)
        return
    if isinstance(expected, (list, tuple)) and not isinstance(actual, Tensor):
        if len(actual) != len(expected):
            raise AssertionError(msg or f"The length of the sequences mismatch: {len(actual)} "
                                 f"!= {len(expected)}")
        for a, e in zip(actual, expected):
            assert_close(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan,
                         check_device=check_device, check_dtype=check_dtype, msg=msg)
        return
    a, e = _as_tensor(actual), _as_tensor(expected)
    if tuple(a.shape) != tuple(e.shape):
        raise AssertionError(msg or f"The values for attribute 'shape' do not match: "
                             f"{tuple(a.shape)} != {tuple(e.shape)}.")
    if check_dtype and a.dtype is not e.dtype:
        raise AssertionError(msg or f"The values for attribute 'dtype' do not match: "
                             f"{a.dtype} != {e.dtype}.")
    if check_device and a.device != e.device:
        raise AssertionError(msg or f"The values for attribute 'device' do not match: "
                             f"{a.device} != {e.device}.")
    if a.is_meta and e.is_meta:  # no values: the metadata is all there is to compare
        return
    if rtol is None:
        rtol, atol = _TOL.get(D.promote_types(a.dtype, e.dtype).name, (0.0, 0.0))
    an, en = a.detach().numpy(force=True), e.detach().numpy(force=True)
    if an.dtype == np.bool_ or en.dtype == np.bool_:
        an, en = an.astype(np.int64), en.astype(np.int64)
    ok = np.isclose(an, en, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not ok.all():
        bad = int((~ok).sum())
        diff = np.abs(an.astype(np.complex128) - en.astype(np.complex128))
        i = np.unravel_index(int(np.argmax(np.where(ok, -1, diff))), an.shape) if an.ndim \
            else ()
        raise AssertionError(msg or (
            f"Tensor-likes are not close!\n\nMismatched elements: {bad} / {an.size} "
            f"({100.0 * bad / max(an.size, 1):.1f}%)\nGreatest absolute difference: "
            f"{diff[i]} at index {tuple(int(k) for k in i)} (up to {atol} allowed)\n"
            f"Greatest relative difference: {diff[i] / max(abs(en[i]), 1e-300)} (up to "
            f"{rtol} allowed)"))


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg=""):
    """Deprecated in PyTorch: `assert_close` without the dtype check."""
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_dtype=False, msg=msg or None)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad=False,
                noncontiguous=False, exclude_zero=False, memory_format=None):
    """`torch.testing.make_tensor`: uniform values in [low, high) (defaults by dtype: floats
    [-9, 9), integers [-9, 10), uint8 [0, 10), bool {False, True})."""
    shape = tuple(shape[0]) if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    dt = D.to_dtype(dtype)
    rng = np.random.default_rng()
    if dt is D.bool_:
        arr = rng.random(shape) < 0.5
    elif dt.category == D.INTEGER:
        lo = 0 if dt is D.uint8 else -9 if low is None else int(low)
        arr = rng.integers(lo if low is None else int(low), 10 if high is None else int(high),
                           size=shape)
    else:
        lo, hi = (-9.0 if low is None else low), (9.0 if high is None else high)
        arr = rng.uniform(lo, hi, size=shape)
        if dt.is_complex:
            arr = arr + 1j * rng.uniform(lo, hi, size=shape)
    if exclude_zero:
        arr = np.where(arr == 0, 1 if dt.category <= D.INTEGER else np.finfo(np.float32).eps,
                       arr)
    return creation.tensor(arr, dtype=dt, device=device, requires_grad=requires_grad)
