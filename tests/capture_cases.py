"""The check the capture-gap test files share (test_capture_gaps6..10, test_capture_breaks).

A case is `case(lib) -> (fn, args, state[, calls])`, written once as PyTorch code and built by
`eager` or `torch`: `state()` reads what the case mutates (module buffers, a list, an object),
`calls` (optional) lists the argument tuples of successive calls (default: `args` twice).
`check_like_eager` asserts wick's graph/break counts and that the compiled function gives eager's
results and side effects call after call (under the same seed); `check_torch_counts` asserts
torch._dynamo.explain's counts for the same code. Each file passes its own `same(want, got)`
(usually `same` here with the file's flattening).
"""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def rand(lib, *shape, seed=1):
    """A float32 tensor of `lib` with reproducible normal values."""
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def same(a, b, flat) -> None:
    """`a` and `b` flattened by `flat` are equal: tensors in dtype, shape and values (rtol
    1e-5), numpy arrays in dtype and values, anything else by ==."""
    fa, fb = flat(a), flat(b)
    assert len(fa) == len(fb), (fa, fb)
    for x, y in zip(fa, fb):
        if isinstance(x, eager.Tensor):
            assert isinstance(y, eager.Tensor) and x.dtype is y.dtype and x.shape == y.shape
            np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=1e-5, atol=1e-6)
        elif isinstance(x, np.ndarray):
            assert isinstance(y, np.ndarray) and x.dtype == y.dtype
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
        else:
            assert x == y


def flat_structure(v) -> list:
    """`v` flattened for `same`: a list, tuple or dict as its type's name and then its items
    (a dict's keys and values in order), a tensor detached, anything else as itself."""
    if isinstance(v, (list, tuple)):
        return [type(v).__name__] + [x for item in v for x in flat_structure(item)]
    if isinstance(v, dict):
        return [type(v).__name__] + [x for k in v for x in [k] + flat_structure(v[k])]
    if isinstance(v, eager.Tensor):
        return [v.detach()]
    return [v]


def same_structure(a, b) -> None:
    """`same` under `flat_structure`."""
    same(a, b, flat_structure)


def _calls(case_out):
    fn, args, state, *rest = case_out
    return fn, (rest[0] if rest else [args, args]), state


def check_like_eager(case, graphs: int, breaks: int, same) -> None:
    """wick's counts are (graphs, breaks), with no break reason when there is no break, and
    each compiled call gives eager's results and state (`same(want, got)`)."""
    eager.manual_seed(0)
    fn, args, *_ = case(eager)
    capture.reset()
    ex = capture.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (graphs, breaks), str(ex)
    if breaks == 0:
        assert not ex.unique_break_reasons, str(ex)
    eager.manual_seed(0)
    fe, calls_e, se = _calls(case(eager))
    eager.manual_seed(0)
    fc, calls_c, sc = _calls(case(eager))
    capture.reset()
    compiled = capture.compile(fc)
    for ae, ac in zip(calls_e, calls_c):
        eager.manual_seed(1)
        want = (fe(*ae), se())
        eager.manual_seed(1)
        got = (compiled(*ac), sc())
        same(want, got)


def check_torch_counts(case, tg: int, tb: int, before=None) -> None:
    """torch._dynamo.explain gives (tg, tb) on the same code (skipped without torch);
    `before(torch)` runs after the reset, before explaining."""
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    fn, args, *_ = case(torch)
    torch._dynamo.reset()
    if before is not None:
        before(torch)
    ex = torch._dynamo.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (tg, tb)


def case_tests(cases: list, same):
    """The two tests of a table of capture cases `(case, graphs, breaks, torch_graphs,
    torch_breaks)`, parametrized by case name: `test_compiled_like_eager` (check_like_eager with
    the file's `same`) and `test_torch_compile_counts` (check_torch_counts). A test file binds
    them to those names at module level, where pytest collects them."""
    table = pytest.mark.parametrize("case,graphs,breaks,tg,tb", cases,
                                    ids=[c[0].__name__ for c in cases])

    @table
    def test_compiled_like_eager(case, graphs, breaks, tg, tb):
        check_like_eager(case, graphs, breaks, same)

    @table
    def test_torch_compile_counts(case, graphs, breaks, tg, tb):
        check_torch_counts(case, tg, tb)

    return test_compiled_like_eager, test_torch_compile_counts

