"""Tiered specialisation of dynamic entries (`capture.dynamic.Specializations`,
`config.dynamic_compile_after`): a new shape or KV-cache position runs the entry's op tape on
eager tensors on its first call and compiles on its second.

Why: a decode meets each position once per generation, and compiling a graph per position
cost about 50x the step it served (first decode ~130 ms/token against eager's ~2). The tape
run must give eager's values, record autograd as eager does, keep the entry's side effects
(cache write-backs), and never compile; repeated keys must still reach compiled graphs, once
each.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from test_capture_dynamic_pos import gpt, steps

import capture
import eager


def close(a, b) -> None:
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def _count_compiles(compiled, monkeypatch) -> list:
    """Calls of the dynamic entry's compile function, from now on."""
    specs = compiled.__wick_compiled__.entries[-1].runner.specs
    assert specs is not None
    calls = []
    real = specs.compile_fn

    def counting(g):
        calls.append(g)
        return real(g)

    monkeypatch.setattr(specs, "compile_fn", counting)
    return calls


def _decode(compiled, ref, model, positions) -> None:
    with eager.no_grad():
        for tok, pos in positions:
            close(compiled(tok, pos).numpy(), ref(tok, pos).numpy())
            for (_, want), (_, got) in zip(ref.named_buffers(), model.named_buffers()):
                close(got.numpy(), want.numpy())


def test_decode_compiles_a_position_on_its_second_call(monkeypatch):
    eager.manual_seed(0)
    ref, model = gpt(eager, "mask"), gpt(eager, "mask")
    model.load_state_dict(ref.state_dict())
    capture.reset()
    compiled = capture.compile(model)
    all_steps = list(steps(eager, 12))
    _decode(compiled, ref, model, all_steps[:2])  # the static entry, then the dynamic one
    compiles = _count_compiles(compiled, monkeypatch)
    _decode(compiled, ref, model, all_steps[2:])  # first calls: the tape, no compile
    assert compiles == []
    _decode(compiled, ref, model, all_steps)  # second calls: one graph per position
    assert len(compiles) == len(all_steps) - 2
    _decode(compiled, ref, model, all_steps)  # later calls: compiled graphs
    assert len(compiles) == len(all_steps) - 2
    cf = compiled.__wick_compiled__
    assert len(cf.entries) == 2 and cf.eager_runs == 0


def test_compile_after_one_compiles_on_first_call(monkeypatch):
    monkeypatch.setattr(capture.config, "dynamic_compile_after", 1)
    eager.manual_seed(0)
    ref, model = gpt(eager, "slice"), gpt(eager, "slice")
    model.load_state_dict(ref.state_dict())
    capture.reset()
    compiled = capture.compile(model)
    all_steps = list(steps(eager, 8))
    _decode(compiled, ref, model, all_steps[:2])
    compiles = _count_compiles(compiled, monkeypatch)
    _decode(compiled, ref, model, all_steps[2:])
    assert len(compiles) == len(all_steps) - 2


@pytest.mark.parametrize("sizes", [(4, 6, 5, 6, 5, 7)])
def test_dynamic_batch_forward_records_autograd_on_the_tape(sizes):
    """A compiled model over changing batch sizes, its loss's backward outside: gradients
    of the tape's first calls and of the compiled specialisations equal eager's."""
    nn = eager.nn
    eager.manual_seed(1)
    ref = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    model = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Linear(8, 3))
    model.load_state_dict(ref.state_dict())
    capture.reset()
    compiled = capture.compile(model, dynamic=True)
    rng = np.random.default_rng(0)
    for n in sizes:
        x = eager.tensor(rng.standard_normal((n, 5)).astype(np.float32))
        y = eager.tensor(rng.integers(0, 3, n))
        for m in (ref, model):
            m.zero_grad()
        want = eager.nn.functional.cross_entropy(ref(x), y)
        got = eager.nn.functional.cross_entropy(compiled(x), y)
        want.backward()
        got.backward()
        close(got.detach().numpy(), want.detach().numpy())
        for (name, p), (_, q) in zip(ref.named_parameters(), model.named_parameters()):
            assert q.grad is not None, name
            close(q.grad.numpy(), p.grad.numpy())
    cf = compiled.__wick_compiled__
    assert cf.eager_runs == 0
    (entry,) = cf.entries
    assert len(entry.runner.specs.by_shape) == 3  # 4 (captured), then 6 and 5 (called twice)


def test_past_the_shape_limit_new_shapes_run_the_tape(monkeypatch):
    monkeypatch.setattr(capture.config, "dynamic_shape_limit", 2)

    def f(x, w):
        return ((x @ w).relu() * 2).sum(0)

    c = capture.compile(f, dynamic=True)
    w = eager.randn(3, 4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in [2, 3, 4, 5, 6, 7] * 3:
            x = eager.randn(n, 3)
            close(c(x, w).numpy(), f(x, w).numpy())
    (entry,) = c.__wick_compiled__.entries
    assert len(entry.runner.specs.by_shape) == 2
    assert len([m for m in caught if "dynamic_shape_limit" in str(m.message)]) == 1
    assert c.__wick_compiled__.eager_runs == 0  # (the tape runs, not the frame)
