"""Backward programs (eager/autograd/programs.py): a whole plain backward pass run as one
generated function must give the engine loop's results bit for bit, release what the loop
releases, raise what the loop raises, and step aside (the loop runs) for hooks and the like."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import eager
from eager.autograd import plans, programs


def _leaves(rng, shapes, dtype=np.float64):
    return [eager.tensor(rng.standard_normal(s).astype(dtype), requires_grad=True)
            for s in shapes]


def _chain(x, w, b):
    y = x
    for _ in range(3):
        y = eager.tanh(y * w + b) - 0.5
    return y.sum()


def _fan_in(x, w, b):
    d = x @ w + b
    return ((d * d).mean() + d.sum() * 0.1) / (1.0 + eager.exp(d).mean())


def _shared_leaf(x, w, b):
    return (x * x + x * w + eager.sin(x) * b + x).sum()


def _numbers_and_broadcast(x, w, b):
    return ((x - 2.0) * 3.0 / (w.abs() + 1.0) + b.unsqueeze(0) ** 2).sum()


GRAPHS = {
    "chain": (_chain, [(8,), (8,), (8,)]),
    "fan_in": (_fan_in, [(4, 5), (5, 3), (3,)]),
    "shared_leaf": (_shared_leaf, [(6,), (6,), (6,)]),
    "numbers_and_broadcast": (_numbers_and_broadcast, [(4, 3), (4, 3), (3,)]),
}


def _grads(fn, shapes, use_programs: bool, dtype=np.float64, steps=3):
    saved = programs.run, programs.run_known
    if not use_programs:
        programs.run = programs.run_known = lambda *a: False
    plans.clear()
    try:
        ts = _leaves(np.random.default_rng(0), shapes, dtype)
        for _ in range(steps):  # the first step builds, the next ones run the cached program
            for t in ts:
                t.grad = None
            fn(*ts).backward()
        return [t.grad.numpy().copy() for t in ts]
    finally:
        programs.run, programs.run_known = saved


@pytest.mark.parametrize("name", sorted(GRAPHS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_program_gradients_equal_the_loop_bit_for_bit(name, dtype):
    fn, shapes = GRAPHS[name]
    want = _grads(fn, shapes, False, dtype)
    got = _grads(fn, shapes, True, dtype)
    assert programs.PROGRAMS and all(p is not None for p in programs.PROGRAMS.values())
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (name, a, b)


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_program_gradients_match_finite_differences(name):
    fn, shapes = GRAPHS[name]
    rng = np.random.default_rng(3)
    ts = _leaves(rng, shapes)
    fn(*ts).backward()
    fn(*[t.detach().requires_grad_() for t in ts])  # (a second graph: no interference)
    for t in ts:
        t.grad = None
    fn(*ts).backward()
    for i, t in enumerate(ts):
        num = np.zeros(t.shape)
        base = t.detach().numpy()
        for j in np.ndindex(*t.shape):
            vals = []
            for h in (1e-6, -1e-6):
                a = base.copy()
                a[j] += h
                args = [eager.tensor(a) if k == i else s.detach() for k, s in enumerate(ts)]
                vals.append(fn(*args).item())
            num[j] = (vals[0] - vals[1]) / 2e-6
        np.testing.assert_allclose(t.grad.numpy(), num, rtol=1e-5, atol=1e-7)


def test_program_is_used_and_readable():
    plans.clear()
    x, w, b = _leaves(np.random.default_rng(1), [(8,), (8,), (8,)])
    _chain(x, w, b).backward()
    assert not programs.PROGRAMS  # seen once: the loop ran
    _chain(x, w, b).backward()
    src = programs.program_source(_chain(x, w, b))
    assert src is not None and src.startswith("def program(") and "leaf(N[" in src
    assert " = P" not in src  # every plan written in place: straight-line numpy calls
    assert len(programs.PROGRAMS) == 1


def test_accumulates_into_existing_grads_and_gives_fresh_arrays():
    x, w, b = _leaves(np.random.default_rng(2), [(6,), (6,), (6,)])
    _shared_leaf(x, w, b).backward()
    first = x.grad.numpy().copy()
    _shared_leaf(x, w, b).backward()  # accumulated, as PyTorch
    np.testing.assert_allclose(x.grad.numpy(), 2 * first)
    for t in (x, w, b):
        t.grad = None
    (x + w).sum().backward()  # one passthrough array for both leaves: each gets its own
    x.grad.numpy()[0] = 42.0
    assert w.grad.numpy()[0] == 1.0


def test_retain_graph_and_second_backward_error_as_the_loop():
    x, w, b = _leaves(np.random.default_rng(4), [(8,), (8,), (8,)])
    loss = _chain(x, w, b)
    loss.backward(retain_graph=True)
    g = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * g)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()


def test_saved_tensors_are_freed_after_the_pass():
    x, w, b = _leaves(np.random.default_rng(5), [(8,), (8,), (8,)])
    h = eager.tanh(x * w)
    ref = weakref.ref(h)
    loss = (h * b).sum()
    loss.backward()  # warm: the program exists now
    for t in (x, w, b):
        t.grad = None
    h = eager.tanh(x * w)
    ref = weakref.ref(h)
    loss = (h * b).sum()
    del h
    loss.backward()
    gc.collect()
    assert ref() is None  # only the graph held it: released by the program


def test_in_place_change_of_a_saved_tensor_raises_as_the_loop():
    x, w, _ = _leaves(np.random.default_rng(6), [(8,), (8,), (8,)])
    for _ in range(2):
        y = x * 2.0
        z = (eager.sin(y) * w).sum()
        z.backward()
    y = x * 2.0
    z = (eager.sin(y) * w).sum()
    with eager.no_grad():
        y.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_hooks_make_the_loop_run_them():
    x, w, b = _leaves(np.random.default_rng(7), [(8,), (8,), (8,)])
    _chain(x, w, b).backward()
    seen = []
    h = x.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
    x.grad = None
    _chain(x, w, b).backward()
    assert len(seen) == 1
    np.testing.assert_allclose(x.grad.numpy(), 2 * seen[0])
    h.remove()
    y = x * w
    y.retain_grad()
    y.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.ones(8))


def test_a_number_changing_every_step_leaves_the_pass_to_the_loop():
    plans.clear()
    x, w, b = _leaves(np.random.default_rng(8), [(8,), (8,), (8,)])
    for step in range(6):
        for t in (x, w, b):
            t.grad = None
        scale = 1.0 + 0.1 * step  # a new structure each step (numbers are in the plan keys)
        (eager.tanh(x * w + b) * scale).sum().backward()
        y = np.tanh(x.detach().numpy() * w.detach().numpy() + b.detach().numpy())
        np.testing.assert_allclose(b.grad.numpy(), scale * (1 - y * y), rtol=1e-12)
    assert not programs.PROGRAMS  # never built: each structure was seen once
