"""Structure ids (eager/autograd/record.py) and the guarded programs found by them
(programs.run_known): a training step whose graph has the structure of an earlier one runs
its backward program without walking the graph. These tests check that the id path is taken
when it may be, and that whatever the graph became since it was recorded (shared nodes, in-place
writes, hooks, `.data` swaps, releases, the default dtype) the results and errors are the
engine loop's, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eager
from eager.autograd import plans, programs, record
from eager.tensor import MUTATIONS


@pytest.fixture
def walks(monkeypatch):
    """A list that gets one entry per graph walk (`programs._walk`)."""
    calls = []
    real = programs._walk

    def counted(root):
        calls.append(root)
        return real(root)

    monkeypatch.setattr(programs, "_walk", counted)
    plans.clear()
    return calls


def _run(scenario, use_programs: bool):
    """What `scenario()` returns (arrays, copied) or raises, with the programs on or off."""
    saved = programs.run, programs.run_known
    if not use_programs:
        programs.run = programs.run_known = lambda *a: False
    plans.clear()
    try:
        out = scenario()
        return [None if a is None else np.array(a, copy=True) for a in out]
    except RuntimeError as e:
        return ("error", str(e))
    finally:
        programs.run, programs.run_known = saved


def _same_as_loop(scenario):
    want = _run(scenario, False)
    got = _run(scenario, True)
    if isinstance(want, tuple):
        assert got == want
        return
    assert len(got) == len(want)
    for a, b in zip(got, want):
        if b is None:
            assert a is None
            continue
        assert a.dtype == b.dtype and a.shape == b.shape
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), (a, b)


def _leaves(n, size=8, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    return [eager.tensor(rng.standard_normal(size).astype(dtype), requires_grad=True)
            for _ in range(n)]


def _tiny(x, w):
    y = x
    for _ in range(2):
        y = eager.exp(eager.tanh(y * w + 1.0) - w)
    return y.sum()


def _grads(*ts):
    return [None if t.grad is None else t.grad.numpy() for t in ts]


# ---------------------------------------------------------------- the id path is taken


def test_steps_after_the_second_do_not_walk_the_graph(walks):
    x, w = _leaves(2)
    for step in range(6):
        x.grad = w.grad = None
        _tiny(x, w).backward()
        if step == 1:
            assert len(walks) == 2  # seen twice: the program is built
    assert len(walks) == 2  # steps 3-6 found it by the root's structure id
    src = programs.guards_source(_tiny(x, w))
    assert src.startswith("def entry(n0, g0, retain):") and "program([n0, n1" in src
    assert programs.guards_source((x * 3.0).sum()) is None  # a structure not seen yet


def test_id_path_gradients_equal_the_loop_bit_for_bit():
    def scenario():
        x, w = _leaves(2)
        out = []
        for _ in range(5):
            x.grad = w.grad = None
            _tiny(x, w).backward()
            out += _grads(x, w)
        return out

    _same_as_loop(scenario)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_numbers_operand_orders_and_dtypes(dtype):
    def scenario():
        x, w = _leaves(2, dtype=dtype, seed=1)
        out = []
        for _ in range(4):
            x.grad = w.grad = None
            y = 2.0 - x * w          # reflected number, then a dunder
            y = eager.sub(y, w) / 3.0
            y = eager.mul(1.5, eager.sigmoid(y))
            y.mean().backward()
            out += _grads(x, w)
        return out

    _same_as_loop(scenario)


# ---------------------------------------------------------------- guards: which nodes are shared


def test_a_leaf_used_twice_after_two_distinct_leaves(walks):
    a, b = _leaves(2)
    for _ in range(3):
        a.grad = b.grad = None
        (a * b).sum().backward()
    walked = len(walks)
    a.grad = None
    (a * a).sum().backward()  # the same structure id, one leaf at both edges
    np.testing.assert_array_equal(a.grad.numpy(), 2 * a.detach().numpy())
    assert len(walks) == walked + 1  # the guard refused: the graph was walked


def test_two_distinct_leaves_after_a_leaf_used_twice():
    def scenario():
        a, b = _leaves(2, seed=2)
        out = []
        for _ in range(3):
            a.grad = None
            (a * a).sum().backward()
            out += _grads(a)
        a.grad = b.grad = None
        (a * b).sum().backward()
        return out + _grads(a, b)

    _same_as_loop(scenario)


def test_shared_and_distinct_inner_nodes_either_order():
    def shared(x):
        y = eager.exp(x * 0.5)
        return (y * y).sum()

    def distinct(x):
        return (eager.exp(x * 0.5) * eager.exp(x * 0.5)).sum()

    for first, then in ((shared, distinct), (distinct, shared)):
        def scenario(first=first, then=then):
            (x,) = _leaves(1, seed=3)
            out = []
            for fn in (first, first, first, then, then, then, first):
                x.grad = None
                fn(x).backward()
                out += _grads(x)
            return out

        _same_as_loop(scenario)
        # (both are 2 exp(x) * 0.5, reached by different sums)
        (x,) = _leaves(1, seed=3)
        then(x).backward()
        want = np.exp(x.detach().numpy().astype(np.float64))
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-5)


# ---------------------------------------------------------------- changes since recording


def _warm(x, w):
    for _ in range(3):
        x.grad = w.grad = None
        _tiny(x, w).backward()
    x.grad = w.grad = None


def test_in_place_write_to_a_saved_leaf_after_recording_raises():
    def scenario():
        x, w = _leaves(2, seed=4)
        _warm(x, w)
        loss = _tiny(x, w)
        with eager.no_grad():
            w.mul_(2.0)
        loss.backward()
        return _grads(x, w)

    assert _run(scenario, True)[0] == "error"
    _same_as_loop(scenario)


def test_in_place_write_to_a_saved_output_after_recording_raises():
    def scenario():
        x, w = _leaves(2, seed=5)
        _warm(x, w)
        y = eager.exp(x * w)
        loss = (y * 2.0).sum()
        with eager.no_grad():
            y[0] = 3.0
        loss.backward()
        return _grads(x, w)

    got = _run(scenario, True)
    assert got[0] == "error" and "modified by an inplace operation" in got[1]
    _same_as_loop(scenario)


def test_hooks_added_after_recording_run():
    def scenario():
        x, w = _leaves(2, seed=6)
        _warm(x, w)
        y = x * w
        loss = (eager.tanh(y) * 3.0).sum()
        seen = []
        y.register_hook(lambda g: seen.append(g.numpy().copy()) or g * 2)
        w.register_hook(lambda g: g + 1)
        loss.backward()
        assert len(seen) == 1
        return _grads(x, w) + seen

    _same_as_loop(scenario)


def test_retain_grad_and_post_accumulate_hooks_after_recording():
    def scenario():
        x, w = _leaves(2, seed=7)
        _warm(x, w)
        y = x * w
        loss = (eager.tanh(y) * 3.0).sum()
        y.retain_grad()
        hits = []
        x.register_post_accumulate_grad_hook(lambda t: hits.append(t.grad.numpy().copy()))
        loss.backward()
        assert len(hits) == 1
        return _grads(x, w, y) + hits

    _same_as_loop(scenario)


def test_data_swap_of_a_saved_tensor_after_recording():
    def scenario():
        x, w = _leaves(2, seed=8)
        _warm(x, w)
        loss = _tiny(x, w)
        w.data = eager.tensor(np.full(8, 0.5, np.float32))  # new values, no version change
        loss.backward()
        return _grads(x, w)

    _same_as_loop(scenario)


def test_second_backward_raises_and_retain_graph_accumulates():
    def scenario():
        x, w = _leaves(2, seed=9)
        _warm(x, w)
        loss = _tiny(x, w)
        loss.backward(retain_graph=True)
        loss.backward(retain_graph=True)
        out = _grads(x, w)
        loss.backward()
        loss.backward()  # freed: PyTorch's RuntimeError
        return out

    got = _run(scenario, True)
    assert got[0] == "error" and "second time" in got[1]
    _same_as_loop(scenario)

    x, w = _leaves(2, seed=9)
    _warm(x, w)
    loss = _tiny(x, w)
    loss.backward(retain_graph=True)
    once = x.grad.numpy().copy()
    loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * once, rtol=1e-6)


def test_two_graphs_backward_in_either_order():
    def scenario():
        x, w = _leaves(2, seed=10)
        _warm(x, w)
        first, second = _tiny(x, w), _tiny(x * 1.0, w)
        second.backward()
        out = _grads(x, w)
        first.backward()
        return out + _grads(x, w)

    _same_as_loop(scenario)


def test_default_dtype_change_between_steps():
    def scenario():
        out = []
        try:
            for dt in (eager.float32, eager.float32, eager.float32, eager.float64,
                       eager.float64, eager.float32):
                eager.set_default_dtype(dt)
                x, w = (eager.tensor(np.linspace(-1, 1, 8).astype(np.float32),
                                     requires_grad=True) for _ in range(2))
                (eager.exp(x * w) + 1).sum().backward()
                out += _grads(x, w)
        finally:
            eager.set_default_dtype(eager.float32)
        return out

    _same_as_loop(scenario)


def test_a_number_changing_every_step_keeps_the_id_tables_bounded():
    (x,) = _leaves(1, dtype=np.float64, seed=11)
    ids = set()
    for step in range(record.MAX_IDS + 200):
        x.grad = None
        s = 1.0 + step / 7
        y = x * s
        ids.add(y.grad_fn.struct_id)
        eager.tanh(y).sum().backward()
        want = s * (1 - np.tanh(x.detach().numpy() * s) ** 2)
        np.testing.assert_allclose(x.grad.numpy(), want, rtol=1e-12)
    assert None not in ids
    assert max(len(t) for t in record.TABLES) <= record.MAX_IDS  # full tables start over
    assert len(programs.BY_ID) <= programs.MAX_PROGRAMS


# ---------------------------------------------------------------- what counts as a change


def _mutations():
    return MUTATIONS[0]


@pytest.mark.parametrize("change", [
    lambda t: t.add_(1.0),
    lambda t: t.zero_(),
    lambda t: t.fill_(2.0),
    lambda t: t.copy_(eager.ones(8)),
    lambda t: t.__setitem__(0, 5.0),
    lambda t: t.normal_(),
    lambda t: eager.add(t, 1.0, out=t),
    lambda t: setattr(t, "data", eager.zeros(8)),
])
def test_every_in_place_write_counts_as_a_change(change):
    t = eager.ones(8)
    before = _mutations()
    change(t)
    assert _mutations() > before


def test_hooks_and_releases_count_as_changes():
    x, w = _leaves(2, seed=12)
    y = x * w
    before = _mutations()
    h = y.register_hook(lambda g: g)
    assert _mutations() > before
    h.remove()
    before = _mutations()
    y.sum().backward()
    assert _mutations() > before  # the saved tensors were released


def test_graphs_through_views_or_general_ops_get_no_id():
    x, w = _leaves(2, seed=13)
    assert (x * w).grad_fn.struct_id is not None
    v = x.unsqueeze(0)
    assert v._base is x and v.grad_fn.struct_id is not None
    assert (v * w).grad_fn.struct_id is not None  # a view operand, as recorded
    with eager.no_grad():
        x.detach().mul_(1.0)  # its base written since (the same version counter)
    assert (v * w).grad_fn.struct_id is None
    class Twice(eager.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t * 2.0

        @staticmethod
        def backward(ctx, g):
            return g * 2.0

    assert (Twice.apply(x) * 2.0).grad_fn.struct_id is None  # a node without an id
    assert (eager.where(x > 0, x, w) * 2.0).grad_fn.struct_id is not None  # three operands
    x.register_hook(lambda g: g)
    assert (x * w).grad_fn.struct_id is None  # a leaf with hooks
    y = x.detach().requires_grad_() * w
    y.retain_grad()  # (hooks on y's node: recorded before, so its graph is "changed")
    assert (y * 2.0).grad_fn._clock < MUTATIONS[0]


def test_retain_grad_before_the_next_op_every_step():
    def scenario():
        x, w = _leaves(2, seed=14)
        out = []
        for _ in range(4):
            x.grad = w.grad = None
            y = x * w
            y.retain_grad()
            (eager.exp(y) * 2.0).sum().backward()
            out += _grads(x, w, y)
        return out

    _same_as_loop(scenario)


# ---------------------------------------------------------------- Tensor.data (PyTorch's)


def test_data_reads_share_memory_with_their_own_version_counter():
    x = eager.ones(3, requires_grad=True)
    d = x.data
    assert not d.requires_grad and d.is_leaf and d._version == 0
    d.add_(1.0)
    np.testing.assert_array_equal(x.detach().numpy(), np.full(3, 2.0, np.float32))
    assert x._version == 0 and d._version == 1
    y = x * 2
    assert not y.data.requires_grad and y.grad_fn is not None


def test_data_assignment_takes_any_shape_and_dtype_and_rejects_non_tensors():
    x = eager.ones(3, requires_grad=True)
    x.data = eager.zeros(5, dtype=eager.float64)
    assert x.shape == (5,) and x.dtype == eager.float64 and x.requires_grad
    assert x._version == 0
    with pytest.raises(TypeError, match="has to be a tensor"):
        x.data = [1.0]


# ---------------------------------------------------------------- the general path and matmul


def _mlp_step(model, x, y):
    for p in model.parameters():
        p.grad = None
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    return [p.grad.numpy() for p in model.parameters()]


def _mlp(seed):
    eager.manual_seed(seed)
    nn = eager.nn
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 3))


def test_parameters_general_ops_and_matmul_get_ids():
    x, w = _leaves(2, seed=15)
    p = eager.nn.Parameter(eager.tensor(np.ones(8, np.float32)))
    assert (p * x).grad_fn.struct_id is not None  # a Parameter takes the fast path
    assert (x * w).mean().grad_fn.struct_id is not None  # a composite recorded whole
    a = eager.tensor(np.ones((3, 8), np.float32), requires_grad=True)
    assert (a @ eager.ones(8, 2)).grad_fn.struct_id is not None


def test_an_nn_mlp_step_does_not_walk_after_the_second(walks):
    model = _mlp(0)
    rng = np.random.default_rng(16)
    x = eager.tensor(rng.standard_normal((5, 12)).astype(np.float32))
    y = eager.tensor(rng.standard_normal((5, 3)).astype(np.float32))
    for _ in range(2):
        _mlp_step(model, x, y)
    walked = len(walks)
    for _ in range(3):
        _mlp_step(model, x, y)
    assert len(walks) == walked


def test_an_nn_mlp_step_equals_the_loop_bit_for_bit():
    def scenario():
        model = _mlp(1)
        rng = np.random.default_rng(17)
        x = eager.tensor(rng.standard_normal((5, 12)).astype(np.float32))
        y = eager.tensor(rng.standard_normal((5, 3)).astype(np.float32))
        out = []
        for _ in range(4):
            out += _mlp_step(model, x, y)
            with eager.no_grad():  # an SGD step between: in place, before the next graph
                for p in model.parameters():
                    p.add_(p.grad, alpha=-0.1)
        return out

    _same_as_loop(scenario)


# ---------------------------------------------------------------- random graphs


_OPS = {
    "add": (2, lambda a, b: a + b),
    "sub": (2, lambda a, b: eager.sub(a, b)),
    "mul": (2, lambda a, b: a * b),
    "tanh": (1, eager.tanh),
    "sin": (1, lambda a: a.sin()),
    "half": (1, lambda a: a * 0.5),
    "one_plus": (1, lambda a: 1.0 + a),
    "view": (1, lambda a: a.unsqueeze(0).squeeze(0)),
    "where": (3, lambda c, a, b: eager.where(c > 0, a, b)),
    "addcmul": (3, lambda a, b, c: eager.addcmul(a, b, c, value=0.5)),
}


@st.composite
def _recipes(draw):
    """Ops on a pool that starts with three leaves, two choices of operands for the same ops
    (the same structure ids, maybe other sharing), the order the steps use them in, and
    which leaves require grad."""
    ops = draw(st.lists(st.sampled_from(sorted(_OPS)), min_size=1, max_size=7))

    def operands():
        return [tuple(draw(st.integers(0, 2 + i)) for _ in range(_OPS[o][0]))
                for i, o in enumerate(ops)]

    order = draw(st.lists(st.sampled_from("AB"), min_size=3, max_size=7))
    requires = draw(st.lists(st.booleans(), min_size=3, max_size=3))
    return ops, operands(), operands(), order, requires


@settings(max_examples=80, deadline=None)
@given(_recipes())
def test_random_graphs_with_any_sharing_equal_the_loop(recipe):
    ops, a, b, order, requires = recipe

    def scenario():
        rng = np.random.default_rng(18)
        leaves = [eager.tensor(rng.standard_normal(4), requires_grad=r) for r in requires]
        out = []
        for which in order:
            pool = list(leaves)
            for op, picks in zip(ops, a if which == "A" else b):
                pool.append(_OPS[op][1](*[pool[k] for k in picks]))
            loss = pool[-1].sum()
            if not loss.requires_grad:
                continue
            for t in leaves:
                t.grad = None
            loss.backward()
            out += _grads(*leaves)
        return out

    _same_as_loop(scenario)


def test_parameters_on_the_fast_paths_equal_the_general_way():
    from eager import dispatch

    rng = np.random.default_rng(19)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    cases = [  # (op, the call, its operands for the general way)
        ("mul", lambda p, q: p * q, lambda p, q: (p, q)),
        ("add", lambda p, q: p + q, lambda p, q: (p, q)),
        ("sub", lambda p, q: 2.0 - p, lambda p, q: (2.0, p)),
        ("matmul", lambda p, q: p @ q.unsqueeze(1), lambda p, q: (p, q.unsqueeze(1))),
        ("sum", lambda p, q: p.sum(), lambda p, q: (p,)),
        ("tanh", lambda p, q: eager.tanh(p), lambda p, q: (p,)),
    ]
    for name, fn, operands in cases:
        p, q = eager.nn.Parameter(eager.tensor(a)), eager.nn.Parameter(eager.tensor(b))
        got = fn(p, q)
        want = dispatch.FUNCTIONS[name].__wick_general__(*operands(p, q))
        assert type(got) is eager.Tensor and got.grad_fn.name() == want.grad_fn.name()
        np.testing.assert_array_equal(got.detach().numpy(), want.detach().numpy())
        got.sum().backward()
        g_fast = p.grad.numpy().copy()
        p.grad = q.grad = None
        want.sum().backward()
        np.testing.assert_array_equal(g_fast, p.grad.numpy())
