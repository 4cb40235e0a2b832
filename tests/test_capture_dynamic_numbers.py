"""capture: automatic dynamic Python numbers (issue 14 item 8).

An int or float argument whose value guard fails becomes a 0-d graph input when it is used only
in arithmetic with tensors (and in `+ - * /` with constants or other such numbers): the
function keeps 2 cache entries however many values it sees (torch.compile: 2 too), instead of
one entry per value up to the recompile limit. Where the value decides a shape, an index, a
branch, a Python division by it or an op attribute, it stays specialised and guarded: every
value still gives the plain call's result. Compared bit for bit with the plain call.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import capture
import eager

capture.config.debug = True
BACKENDS = ["eager", "auto"]


@pytest.fixture(autouse=True)
def _reset():
    capture.reset()
    yield
    capture.reset()


def same(got, want):
    if isinstance(want, tuple):
        assert type(got) is tuple and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
        return
    if not isinstance(want, eager.Tensor):
        assert type(got) is type(want) and got == want
        return
    assert isinstance(got, eager.Tensor) and got.dtype is want.dtype
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())


def run(fn, calls, backend="eager", **options):
    """Compile `fn`, run every argument tuple of `calls` against the plain call; the cache."""
    c = capture.compile(fn, backend=backend, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for args in calls:
            same(c(*args), fn(*args))
    return c.__wick_compiled__


def arith(x, pos, scale):
    return x * pos + scale - x / (pos + 1) + (x > pos).float()


def derived(x, pos, scale):
    return x * (pos + 1) + (2 - pos) * scale - x / (scale * 2.0 + 1) + pos / 4


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn", [arith, derived])
def test_int_and_float_arguments_become_inputs(fn, backend):
    x = eager.randn(4, 3)
    cf = run(fn, [(x, p, 0.37 * p - 1.0) for p in range(20)], backend)
    assert len(cf.entries) == 2 and cf.dynamic_numbers == {"pos", "scale"}
    assert cf.graph_runs == 20 and cf.eager_runs == 0
    guard = cf.entries[1].guards_text
    assert "type(pos) is int" in guard and "pos ==" not in guard and "scale ==" not in guard


def test_dtypes_follow_eager_scalar_promotion():
    xi = eager.arange(6).reshape(2, 3).to(eager.int32)
    xh = eager.randn(2, 3).to(eager.float16)
    xd = eager.randn(2, 3).double()

    def f(xi, xh, xd, n, s):
        return xi + n, xi * 3 - n, xh * s + n, xd / s, xd - n

    cf = run(f, [(xi, xh, xd, n, 0.5 + n) for n in range(1, 10)])
    assert len(cf.entries) == 2 and cf.dynamic_numbers == {"n", "s"}


def test_float_with_an_int_tensor_stays_static():
    xi = eager.arange(6).reshape(2, 3)

    def f(x, s):
        return x * s  # promotes to the default float dtype: specialised, not an input

    cf = run(f, [(xi, 0.5 * k) for k in range(5)])
    assert cf.dynamic_numbers == set() and "s" in cf.static_numbers
    assert len(cf.entries) == 5


@pytest.mark.parametrize("name,fn", [
    ("slice_length_read", lambda x, n: x[:n] * x[:n].shape[0]),  # (a slice alone: dynamic)
    ("reshape", lambda x, n: x.reshape(n, -1).sum(0)),
    ("range", lambda x, n: sum(x * i for i in range(n))),
    ("attribute", lambda x, n: x.reshape(2, 4).sum(dim=n % 2)),
    ("python_division", lambda x, n: x * (1 / (n - 3) if n != 3 else 0.0)),
])
def test_values_that_decide_shapes_or_branches_stay_specialised(name, fn):
    x = eager.randn(8)
    cf = run(fn, [(x, n) for n in (1, 2, 4, 8, 4, 2, 1)])
    assert cf.dynamic_numbers == set() and "n" in cf.static_numbers
    assert len(cf.entries) == 4  # one per distinct value, each guarded by value


def test_a_number_computed_and_returned_stays_dynamic():
    """`(x * n, n * n)`: n * n is computed in the graph and returned as a Python int (as
    torch returns the SymInt's value): one dynamic entry, the int's type and value eager's."""
    x = eager.randn(8)
    cf = run(lambda x, n: (x * n, n * n), [(x, n) for n in (1, 2, 4, 8, 4, 2, 1)])
    assert cf.dynamic_numbers == {"n"} and len(cf.entries) == 2


def test_branch_on_a_dynamic_number_is_guarded_by_the_comparison():
    """`x * 2 if n > 3 else x - 1`: the branch guards `n > 3` (as Dynamo guards a SymInt
    branch), not n's value: one dynamic entry per side, besides the first static one."""
    x = eager.randn(8)
    cf = run(lambda x, n: x * 2 if n > 3 else x - 1, [(x, n) for n in (1, 2, 4, 8, 4, 2, 1)])
    assert cf.dynamic_numbers == {"n"}
    assert len(cf.entries) == 3


def test_zero_division_still_raises():
    def f(x, n):
        return x + 1 / n

    c = capture.compile(f, backend="eager")
    x = eager.randn(3)
    for n in (1, 2, 3):
        same(c(x, n), f(x, n))
    with pytest.raises(ZeroDivisionError):
        c(x, 0)


def test_tensor_division_by_zero_number_is_eager_inf():
    def f(x, n):
        return x / n

    x = eager.ones(3)
    cf = run(f, [(x, n) for n in (1, 2, 0, 3)])
    assert len(cf.entries) == 2


def test_bools_and_huge_ints_stay_static():
    x = eager.randn(3)

    def f(x, flag, n):
        return x * flag + n

    cf = run(f, [(x, True, 1), (x, False, 1), (x, True, 2 ** 40), (x, True, 2 ** 40 + 1),
                 (x, True, 3), (x, False, 5)])
    assert "flag" not in cf.dynamic_numbers
    for e in cf.entries:  # the bool is guarded by value, big ints by a range guard
        assert "flag is True" in e.guards_text or "flag is False" in e.guards_text


def test_dynamic_false_never_marks_numbers():
    x = eager.randn(3)
    cf = run(lambda x, n: x + n, [(x, n) for n in range(5)], dynamic=False)
    assert cf.dynamic_numbers == set() and len(cf.entries) == 5


def test_number_across_a_graph_break(capsys):
    def f(x, n):
        y = x * n
        print("step")
        return y + n

    cf = run(f, [(eager.randn(3), n) for n in range(6)])
    assert cf.dynamic_numbers == {"n"} and len(cf.entries) == 2
    assert capsys.readouterr().out.count("step") == 12


def test_torch_marks_the_same_ints_dynamic():
    torch = pytest.importorskip("torch")
    testing = pytest.importorskip("torch._dynamo.testing")
    cnt = testing.CompileCounter()
    f = torch.compile(lambda x, pos: x * pos + 1, backend=cnt)
    for p in range(2, 8):
        f(torch.randn(3), p)
    assert cnt.frame_count == 2  # torch: static, then dynamic; wick: the same two entries
    cf = run(lambda x, pos: x * pos + 1, [(eager.randn(3), p) for p in range(2, 8)])
    assert len(cf.entries) == cnt.frame_count


def test_returning_the_number_returns_this_calls_value():
    cf = run(lambda x, n, s: (x * n, n, s), [(eager.randn(2), n, n / 3) for n in range(6)])
    assert cf.dynamic_numbers == {"n", "s"} and len(cf.entries) == 2
