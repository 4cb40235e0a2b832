"""In-place elementwise ops written straight into the tensor (`dispatch._INPLACE`: the ufunc
with `out=`) must leave exactly what the general way leaves (the op out of place, then
`_inplace_update`): values bit for bit, dtype, version, errors, and nothing written on error.
Derived from the registry: every op that has the route, over dtypes, broadcasting, Python
numbers, non-contiguous and aliased operands."""

from __future__ import annotations

import numpy as np
import pytest

import eager
from eager import dispatch

OPS = sorted(n for n in dispatch._INPLACE if hasattr(eager.Tensor, n + "_"))
DTYPES = [np.float32, np.float64, np.int64, np.int32, np.bool_, np.complex64, np.float16]


def _general(name, x, args):
    x._check_inplace()
    return x._inplace_update(dispatch.FUNCTIONS[name](x, *args))


def _outcome(fn, x, args):
    v = x._version
    try:
        r = fn(x, args)
    except Exception as e:  # noqa: BLE001  (compared with the general way's)
        return ("raised", type(e), str(e), x.numpy().copy(), x._version - v)
    assert r is x
    return (x.numpy().copy(), x.dtype, x._version - v)


def _method(name):
    return lambda x, args: getattr(x, name + "_")(*args)


def _operands(rng, name, dt):
    """(x array, args) cases for op `name` on dtype `dt`."""
    nin = dispatch.FUNCTIONS[name].__wick_op__.nin

    def arr(shape, d=dt):
        a = rng.standard_normal(shape) * 2 + 0.5
        return a.astype(d) if np.dtype(d).kind != "b" else a > 0.5

    if nin == 1:
        yield arr((3, 4)), ()
        yield arr(()), ()
        return
    for x_shape, y_shape in (((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), ()), ((4,), (3, 4))):
        yield arr(x_shape), (eager.tensor(arr(y_shape)),)
    yield arr((3, 4)), (eager.tensor(arr((3, 4), np.float64)),)  # another dtype
    yield arr((3, 4)), (eager.tensor(arr((), np.float64)),)  # a 0-d of another dtype
    for number in (2, 0.5, True, -3):
        yield arr((3, 4)), (number,)


@pytest.mark.parametrize("name", OPS)
def test_direct_in_place_equals_the_general_way(name):
    rng = np.random.default_rng(0)
    for dt in DTYPES:
        for a, args in _operands(rng, name, dt):
            for layout in ("contiguous", "transposed", "aliased"):
                if layout != "contiguous" and a.ndim != 2:
                    continue
                got_x, want_x = eager.tensor(a.copy()), eager.tensor(a.copy())
                got_args, want_args = args, args
                if layout == "transposed":
                    got_x, want_x = got_x.t(), want_x.t()
                    got_args = want_args = tuple(
                        y.t() if isinstance(y, eager.Tensor) and y.ndim == 2 else y
                        for y in args)
                elif layout == "aliased" and args:  # the other operand is x itself
                    got_args, want_args = (got_x,), (want_x,)
                with np.errstate(all="ignore"):
                    got = _outcome(_method(name), got_x, got_args)
                    want = _outcome(lambda x, r: _general(name, x, r), want_x, want_args)
                assert len(got) == len(want), (name, dt, layout, got, want)
                if isinstance(got[0], str):
                    assert got[1:3] == want[1:3] and got[4] == want[4] == 0
                    np.testing.assert_array_equal(got[3], a if layout != "transposed" else a.T)
                    continue
                assert got[1] == want[1] and got[2] == want[2] == 1
                assert got[0].dtype == want[0].dtype
                def raw(a):
                    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)

                np.testing.assert_array_equal(raw(got[0]), raw(want[0]))


def test_the_route_is_taken_and_steps_aside_for_autograd():
    x = eager.ones(4)
    buf = x._data
    assert dispatch._INPLACE["mul"](x, (2.0,)) and x._data is buf
    np.testing.assert_array_equal(x.numpy(), np.full(4, 2.0, np.float32))
    w = eager.ones(4, requires_grad=True)
    assert not dispatch._INPLACE["mul"](w, (2.0,))  # grad mode on: the general way records
    with eager.no_grad():
        assert dispatch._INPLACE["mul"](w, (2.0,))
    y = w * 1.0
    y.mul_(3.0)  # a non-leaf in grad mode: recorded, differentiable
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full(4, 3.0, np.float32))


def test_parameters_and_views_are_written_in_place():
    p = eager.nn.Parameter(eager.zeros(2, 3))
    v = p.detach()[0]
    with eager.no_grad():
        p.add_(eager.ones(3))
        v.mul_(4.0)
    np.testing.assert_array_equal(p.detach().numpy(), [[4, 4, 4], [1, 1, 1]])
    assert p._version == 2


def test_keywords_restating_defaults_keep_the_route(monkeypatch):
    def general(*a, **k):
        raise AssertionError("the general way ran")

    x, y = eager.ones(3), eager.arange(3.0)
    monkeypatch.setattr(eager.Tensor, "_inplace_update", general)
    x.add_(y, alpha=1)
    x.add_(y, alpha=1.0)
    np.testing.assert_array_equal(x.numpy(), 1 + 2 * np.arange(3.0, dtype=np.float32))
    with pytest.raises(AssertionError, match="general way"):
        x.add_(y, alpha=2)  # another value: the general way (which computes y * alpha first)
    monkeypatch.undo()
    x.add_(y, alpha=2)
    np.testing.assert_array_equal(x.numpy(), 1 + 4 * np.arange(3.0, dtype=np.float32))
