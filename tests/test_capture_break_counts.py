"""Graph and break counts of `capture.explain` beside `torch._dynamo.explain`'s (issue 14 item 9).

Counts follow torch's rule (torch/_dynamo/eval_frame.py `explain`): `graph_count` is the number
of graphs compiled during the call in every frame, `graph_break_count` is `graph_count - 1`.
Each case is realistic model code (`benchmarks/models_corpus.py`, and a submodule that prints,
called straight and from a loop over a ModuleList) with wick's counts and torch's written beside
them; the wick side runs on every Python (3.11, 3.12, 3.13: the counts must not depend on the
bytecode version), the torch side where torch is installed. Where the two differ the reason is
named: torch skips a frame whose break sits inside a loop over modules (the whole stack runs
eagerly, its children uncompiled), wick compiles around the broken layer. Every break record
names the user's file:line, the source line, the construct and a hint.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys

import numpy as np
import pytest

import capture
import eager

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import models_corpus  # noqa: E402


def noisy_models(lib):
    """(straight, looped): a submodule printing between two Linears, called from a forward
    written out (torch 4/3, as wick) and from a loop over a ModuleList (torch skips the
    looping frame: 2/1; wick keeps it compiled around the call: 4/3)."""
    nn = lib.nn

    class Noisy(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            h = self.lin(x).relu()
            print("noisy")  # the break: line NOISY_LINE
            return h * 2

    class Straight(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.n, self.c = nn.Linear(8, 8), Noisy(), nn.Linear(8, 4)

        def forward(self, x):
            x = self.a(x).tanh()
            x = self.n(x)
            return self.c(x)

    class Looped(nn.Module):
        def __init__(self):
            super().__init__()
            self.ms = nn.ModuleList([nn.Linear(8, 8), Noisy(), nn.Linear(8, 4)])

        def forward(self, x):
            for m in self.ms:
                x = m(x)
            return x

    return Straight, Looped


def _straight(lib):
    lib.manual_seed(0)
    return noisy_models(lib)[0](), (lib.tensor(np.ones((3, 8), np.float32)),), None


def _looped(lib):
    lib.manual_seed(0)
    return noisy_models(lib)[1](), (lib.tensor(np.ones((3, 8), np.float32)),), None


C = models_corpus.CASES
# name: (build(lib) -> (fn, args, state), wick's (graphs, breaks), torch's (graphs, breaks))
CASES = {
    "prenorm_block": (C["pre-norm block, masked attention"], (1, 0), (1, 0)),
    "gpt_kv_decode": (C["GPT ModuleList + KV-cache decode"], (1, 0), (1, 0)),
    "cnn_bn_train": (C["CNN + BatchNorm (train)"], (1, 0), (1, 0)),
    "moe_moduledict": (C["MoE routing, ModuleDict"], (1, 0), (1, 0)),
    "print_in_sequential": (C["print in a submodule"], (4, 3), (2, 1)),  # torch: loop skip
    "print_in_submodule_straight": (_straight, (4, 3), (4, 3)),
    "print_in_submodule_looped": (_looped, (4, 3), (2, 1)),  # torch: loop skip
}


def _explain(explain, build, lib):
    with contextlib.redirect_stdout(io.StringIO()):
        fn, args, _ = build(lib)
        return explain(fn)(*args)


@pytest.mark.parametrize("name", list(CASES))
def test_wick_counts(name):
    build, want, _ = CASES[name]
    e = _explain(capture.explain, build, eager)
    assert (e.graph_count, e.graph_break_count) == want, str(e)
    assert e.graph_break_count == max(e.graph_count - 1, 0)
    for r in e.break_reasons:  # each at the user's line, with the construct and a hint
        assert os.path.basename(r.filename) in ("models_corpus.py", __file__.rsplit("/", 1)[-1])
        assert r.source_line.startswith("print(") and "print" in r.reason
        assert "print()" in r.hint and r.id.startswith("B")


@pytest.mark.parametrize("name", list(CASES))
def test_torch_counts(name):
    torch = pytest.importorskip("torch")
    import torch._dynamo as dynamo

    build, _, want = CASES[name]
    dynamo.reset()
    e = _explain(dynamo.explain, build, torch)
    assert (e.graph_count, e.graph_break_count) == want


def test_a_callee_break_is_one_site():
    """The printing child's break is recorded in its own frame and at the caller's call (as in
    torch's `break_reasons`); `unique_break_reasons` and the report name the site once."""
    e = _explain(capture.explain, _straight, eager)
    assert len(e.break_reasons) == 2 and len(e.unique_break_reasons) == 1, str(e)
    assert str(e).count("graph break [") == 1
    r = e.unique_break_reasons[0]
    assert r.location.endswith(f":{r.lineno}") and "print" in r.source_line


def test_no_graph_counts_no_break():
    def f(x):
        print("", end="")
        return x

    with contextlib.redirect_stdout(io.StringIO()):
        e = capture.explain(f)(eager.ones(2))
    assert (e.graph_count, e.graph_break_count) == (0, 0)  # torch: (0, -1)
    assert len(e.break_reasons) == 1
