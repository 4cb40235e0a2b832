"""The op-graph fuzzer (tests/fuzz_opgraphs.py) in the suite: a fixed seed of a few hundred
random op graphs with gradients (gating), and one fresh seed with WICK_FUZZ_FRESH=1 (printed,
to replay with `python tests/fuzz_opgraphs.py --seed S --n N`; .ci/run's non-gating exploration
step), each compiled with backend "llvm" and "eager"
and compared with eager: no disagreement, no crash. Features excluded by default are listed
in `fuzz_opgraphs.EXCLUDED` with the reason."""

from __future__ import annotations

import os
import random

import pytest

import fuzz_opgraphs as fz

FIXED_SEED, FIXED_N = 13, 300
FRESH_N = 60


def _check(seed: int, n: int) -> None:
    fails = fz.run(seed, n)
    assert not fails, fz.report(fails, seed, n)


def test_fixed_seed():
    _check(FIXED_SEED, FIXED_N)


@pytest.mark.skipif(not os.environ.get("WICK_FUZZ_FRESH"),
                    reason="a fresh seed explores: .ci/run runs it (WICK_FUZZ_FRESH=1) as a "
                           "reported, non-gating step, so a new find never turns CI red at random")
def test_fresh_seed():
    seed = int(os.environ.get("WICK_FUZZ_SEED", random.SystemRandom().randrange(1 << 30)))
    print(f"op-graph fuzz fresh seed: {seed} (replay: python tests/fuzz_opgraphs.py "
          f"--seed {seed} --n {FRESH_N})")
    _check(seed, FRESH_N)


def test_a_crash_is_reported_not_fatal(monkeypatch):
    """A case that kills its worker (SIGSEGV) is a "crash" failure; the run goes on after it."""
    monkeypatch.setenv("WICK_FUZZ_CRASH_AT", "2")
    fails = fz.run(0, 4, batch=4)
    assert [(i, c) for i, c, *_ in fails] == [(2, "crash")]


def test_fuzzer_finds_a_planted_disagreement():
    """The comparison can fail: a compiled result that differs is reported."""
    case = fz.generate(0, 0)
    ref = fz.execute(case, None)
    bad = {**ref, "out": [dict(o, val=o["val"] + 1) if "val" in o else o for o in ref["out"]]}
    assert fz.compare(ref, bad) or not any("val" in o and o["val"].size for o in ref["out"])
