"""The array API namespace (issue 17, item 6), checked against numpy (itself an array API
namespace since 2.0) on the same inputs: names present, signatures' keywords, results and
dtypes of each family, and array-agnostic code written once for both. The public
array-api-tests suite is run by tests/run_array_api_tests.sh when a checkout is present."""

from __future__ import annotations

import numpy as np
import pytest

import eager
import eager.array_api as xp

A = np.array([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])


def _np(x):
    return x.numpy() if hasattr(x, "numpy") else np.asarray(x)


def test_namespace_entry_points():
    x = xp.asarray(A)
    assert x.__array_namespace__() is xp
    assert eager.__array_namespace__() is xp
    assert xp.__array_api_version__ == "2024.12"
    info = xp.__array_namespace_info__()
    assert info.default_dtypes()["indexing"] is xp.int64
    assert set(info.dtypes(kind="real floating").values()) == {xp.float32, xp.float64}
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="1999.01")


@pytest.mark.parametrize("name,args,kwargs", [
    ("sum", (), {"axis": 0}), ("sum", (), {"axis": (0, 1), "keepdims": True}),
    ("prod", (), {"axis": 1}), ("max", (), {}), ("min", (), {"axis": 1, "keepdims": True}),
    ("mean", (), {"axis": 0}), ("var", (), {"correction": 1}), ("std", (), {"axis": 1}),
    ("cumulative_sum", (), {"axis": 1, "include_initial": True}),
    ("cumulative_prod", (), {"axis": 0}), ("argmax", (), {"axis": 1}),
    ("argmin", (), {"keepdims": True}), ("count_nonzero", (), {"axis": 0}),
    ("sort", (), {"axis": 1, "descending": True}), ("argsort", (), {"axis": 0}),
    ("flip", (), {"axis": 1}), ("roll", (2,), {"axis": 1}), ("roll", (1,), {}),
    ("expand_dims", (), {"axis": 1}), ("permute_dims", ((1, 0),), {}),
    ("moveaxis", (0, 1), {}), ("repeat", (2,), {"axis": 0}), ("tile", ((2, 1),), {}),
    ("reshape", ((3, 2),), {}), ("matrix_transpose", (), {}), ("diff", (), {"axis": 1}),
    ("clip", (), {"min": -1.0, "max": 2.0}), ("sign", (), {}), ("signbit", (), {}),
    ("round", (), {}), ("trunc", (), {}), ("square", (), {}), ("positive", (), {}),
    ("tril", (), {"k": 1}), ("triu", (), {"k": -1}), ("all", (), {"axis": 0}),
    ("any", (), {"axis": 1}), ("unique_values", (), {}),
])
def test_functions_match_numpy(name, args, kwargs):
    got = getattr(xp, name)(xp.asarray(A), *args, **kwargs)
    if name == "sort" and kwargs.get("descending"):
        want = -np.sort(-A, axis=kwargs["axis"])
    else:
        want = getattr(np, name)(A, *args, **kwargs)
    np.testing.assert_allclose(_np(got), want, rtol=1e-12)
    assert _np(got).dtype == np.asarray(want).dtype


def test_binary_and_scalars():
    x = xp.asarray(A)
    for name in ("add", "subtract", "multiply", "divide", "pow", "maximum", "minimum",
                 "atan2", "hypot", "logaddexp", "copysign", "nextafter", "remainder",
                 "floor_divide", "equal", "less", "greater_equal"):
        got = getattr(xp, name)(x, xp.asarray(A[::-1].copy()))
        np.testing.assert_allclose(_np(got), getattr(np, name)(A, A[::-1]), rtol=1e-12)
    y = xp.asarray(np.array([1, 2, 3], dtype=np.int32))
    assert xp.add(y, 2).dtype is xp.int32  # a Python scalar takes the array's dtype
    assert xp.multiply(xp.asarray(np.float32([1.5])), 2.0).dtype is xp.float32
    assert xp.where(y > 1, y, 0).dtype is xp.int32


def test_creation_and_dtypes():
    assert xp.arange(5).dtype is xp.int64 and xp.arange(0.0, 1.0, 0.25).shape == (4,)
    np.testing.assert_array_equal(_np(xp.eye(3, 4, k=1)), np.eye(3, 4, k=1))
    np.testing.assert_allclose(_np(xp.linspace(0, 1, 5, endpoint=False)),
                               np.linspace(0, 1, 5, endpoint=False))
    assert xp.full((2,), True).dtype is xp.bool and xp.full((2,), 3).dtype is xp.int64
    assert xp.asarray([1, 2]).dtype is xp.int64 and xp.asarray([1.0]).dtype is xp.float32
    g = xp.meshgrid(xp.arange(2), xp.arange(3))
    np.testing.assert_array_equal(_np(g[0]), np.meshgrid(np.arange(2), np.arange(3))[0])
    assert xp.astype(xp.asarray([1.7]), xp.int32).dtype is xp.int32
    assert xp.isdtype(xp.float32, "real floating") and not xp.isdtype(xp.int8, "bool")
    assert xp.isdtype(xp.complex64, ("complex floating", "bool"))
    assert xp.result_type(xp.int8, xp.float32) is xp.float32
    assert xp.can_cast(xp.int8, xp.int64) and not xp.can_cast(xp.float64, xp.int64)
    assert xp.finfo(xp.float32).eps == np.finfo(np.float32).eps
    assert xp.iinfo(xp.int16).max == 32767
    with pytest.raises(ValueError):
        xp.asarray(xp.asarray([1.0]), dtype=xp.float64, copy=False)


def test_sets_search_linalg_fft():
    v = np.array([3, 1, 3, 2, 1, 3])
    r = xp.unique_all(xp.asarray(v))
    vals, idx, inv, cnt = np.unique(v, return_index=True, return_inverse=True,
                                    return_counts=True)
    for got, want in zip(r, (vals, idx, inv, cnt)):
        np.testing.assert_array_equal(_np(got), want)
    np.testing.assert_array_equal(_np(xp.searchsorted(xp.asarray([1, 3, 5]),
                                                      xp.asarray([2, 5]), side="right")),
                                  np.searchsorted([1, 3, 5], [2, 5], side="right"))
    nz = xp.nonzero(xp.asarray(A > 1))
    for got, want in zip(nz, np.nonzero(A > 1)):
        np.testing.assert_array_equal(_np(got), want)
    M = np.array([[4.0, 1.0], [1.0, 3.0]])
    np.testing.assert_allclose(_np(xp.linalg.inv(xp.asarray(M))), np.linalg.inv(M))
    np.testing.assert_allclose(_np(xp.linalg.vector_norm(xp.asarray(A), axis=1, ord=1)),
                               np.linalg.norm(A, ord=1, axis=1))
    np.testing.assert_allclose(_np(xp.linalg.matrix_norm(xp.asarray(M), ord="nuc")),
                               np.linalg.norm(M, "nuc"))
    np.testing.assert_allclose(_np(xp.vecdot(xp.asarray(A), xp.asarray(A))),
                               (A * A).sum(-1))
    np.testing.assert_allclose(_np(xp.linalg.trace(xp.asarray(M))), np.trace(M))
    np.testing.assert_allclose(_np(xp.fft.rfft(xp.asarray(A), axis=0)),
                               np.fft.rfft(A, axis=0), rtol=1e-12)
    np.testing.assert_allclose(_np(xp.fft.fftn(xp.asarray(A), axes=(0, 1))),
                               np.fft.fftn(A), rtol=1e-12)
    np.testing.assert_allclose(_np(xp.take(xp.asarray(A), xp.asarray([2, 0]), axis=1)),
                               np.take(A, [2, 0], axis=1))


def _softmax_agnostic(x):
    """Array-agnostic code, written once against the standard."""
    ns = x.__array_namespace__()
    z = x - ns.max(x, axis=-1, keepdims=True)
    e = ns.exp(z)
    return e / ns.sum(e, axis=-1, keepdims=True)


def test_array_agnostic_code_runs_on_both():
    np.testing.assert_allclose(_np(_softmax_agnostic(xp.asarray(A))), _softmax_agnostic(A),
                               rtol=1e-12)


def test_sign_of_zero_dim_nan():
    """eager.sign keeps torch's sign(nan) = 0 on 0-d tensors too (it raised TypeError); the
    standard's sign(nan) is nan."""
    assert eager.sign(eager.tensor(float("nan"))).item() == 0.0
    assert eager.sign(eager.tensor(-3.0)).item() == -1.0
    assert np.isnan(_np(xp.sign(xp.asarray(float("nan")))))
