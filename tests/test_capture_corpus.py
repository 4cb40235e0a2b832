"""capture: the corpus of `tests/capture_corpus.py` compiled vs eager, with graph/break counts.

Each program runs eagerly, then compiled twice (a capture, then a cache hit) on the IR
interpreter backend, and must give eager's values; `capture.explain` must report the expected
number of graphs and graph breaks. The same file runs under every CPython that
`tests/run_capture_all_pythons.sh` finds (3.11, 3.12, 3.13).
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest
from capture_corpus import CORPUS

import capture
import eager

capture.config.debug = True  # assert every instruction's symbolic stack effect


def same(got, want):
    if isinstance(want, eager.Tensor):
        assert isinstance(got, eager.Tensor)
        assert got.dtype is want.dtype and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for g, w in zip(got, want):
            same(g, w)
    elif isinstance(want, dict):
        assert got.keys() == want.keys()
        for k in want:
            same(got[k], want[k])
    else:
        assert type(got) is type(want) and got == want


@pytest.fixture(autouse=True)
def _reset(monkeypatch):
    monkeypatch.setenv("PYTHONBREAKPOINT", "0")
    capture.reset()
    yield
    capture.reset()


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 80
    assert sum(nb > 0 for _, _, _, nb in CORPUS) >= 20


@pytest.mark.parametrize("fn,make,graphs,breaks", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_corpus(fn, make, graphs, breaks):
    args = make()
    with contextlib.redirect_stdout(io.StringIO()):
        want = fn(*args)
        compiled = capture.compile(fn, backend="eager")
        same(compiled(*args), want)
        same(compiled(*args), want)  # the cache hit
        report = capture.explain(fn)(*args)
    assert len(compiled.__wick_compiled__.entries) == 1
    # counts as torch._dynamo.explain's: graph_break_count is graph_count - 1; `breaks` is
    # the number of break records (a break that compiles nothing after it still has one)
    assert (report.graph_count, report.graph_break_count) == (graphs, max(graphs - 1, 0)), \
        str(report)
    assert len(report.break_reasons) == breaks, str(report)
    for r in report.break_reasons:
        assert r.id.startswith("B") and r.lineno > 0 and r.hint
