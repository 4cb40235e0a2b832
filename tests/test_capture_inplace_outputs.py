"""Mutated inputs' new values stored straight into the input's own array (codegen/inplace.py,
capture/hits.py's write-back): compiled results equal eager's bit for bit, and the cases
where an in-place store would be wrong fall back to the copy.

Hand-built graphs check the safety conditions one by one (a later kernel reads the old value;
the writer reads the input at another index; a library call after the write; a view of the
input read later): each must refuse the pair and still compute the right values, so each
fails if its check is removed. Compiled SGD/Adam/AdamW steps, a whole train step, BatchNorm
running statistics and `x.add_()` on arguments are compared with eager (values, version
counters, the arrays' identity, later gradients); views, non-contiguous inputs and inputs
aliasing another input run exactly as eager.
"""

from __future__ import annotations

import numpy as np
import pytest
from opinfo import record_op as call

import capture
import codegen
import eager as torch
import eager.nn.functional as F
import ir
from codegen import inplace
from eager import nn

RNG = np.random.default_rng(7)
F32 = ir.dtypes.float32


@pytest.fixture(autouse=True)
def _sync_compile(monkeypatch):
    """In-place kernels compiled before the first call (they compile in the background
    otherwise, and a short test would only see the copying path)."""
    monkeypatch.setenv("WICK_COMPILE_THREADS", "1")


def _graph(shape, build, n_in=1):
    g = ir.Graph("inplace")
    xs = [g.placeholder(f"x{i}", ir.TensorMeta(shape, F32)) for i in range(n_in)]
    g.output(tuple(build(g, *xs)))
    return g


def _arrays(shape, n):
    return [RNG.standard_normal(shape).astype(np.float32) for _ in range(n)]


# ---------------------------------------------------------------- codegen: the safety checks


def test_pointwise_output_is_written_into_the_input():
    g = _graph((64, 48), lambda g, x, y: [call(g, "add", call(g, "mul", x, 2.0), y)], 2)
    cg = codegen.compile_graph(g)
    assert cg.alias_inputs([(0, 0)]) == [(0, 0)]
    inplace.wait(cg)
    x, y = _arrays((64, 48), 2)
    want = x * np.float32(2.0) + y
    a = x.copy()
    (out,) = cg(a, y)
    assert out is a
    np.testing.assert_array_equal(a, want)


def test_in_place_kernels_compiled_in_the_background(monkeypatch):
    monkeypatch.setenv("WICK_COMPILE_THREADS", "2")
    g = _graph((40, 24), lambda g, x, y: [call(g, "sub", x, call(g, "mul", y, 0.25))], 2)
    cg = codegen.compile_graph(g)
    assert cg.alias_inputs([(0, 0)]) == [(0, 0)]
    x, y = _arrays((40, 24), 2)
    a = x.copy()
    (out,) = cg(a, y)   # (in place or not: the caller copies when out is not a)
    np.testing.assert_array_equal(out, x - y * np.float32(0.25))
    inplace.wait(cg)
    b = x.copy()
    (out,) = cg(b, y)
    assert out is b
    np.testing.assert_array_equal(b, x - y * np.float32(0.25))


def test_a_kernel_split_across_threads_writes_in_place():
    from codegen import threads

    n = threads.MIN_PARALLEL // 512 + 8   # (rows: the kernel is split over them)
    g = _graph((n, 512), lambda g, x, y: [call(g, "sub", x, call(g, "mul", y, 0.5))], 2)
    cg = codegen.compile_graph(g)
    assert cg.alias_inputs([(0, 0)]) == [(0, 0)]
    inplace.wait(cg)
    x, y = _arrays((n, 512), 2)
    a = x.copy()
    (out,) = cg(a, y)
    assert out is a
    np.testing.assert_array_equal(a, x - y * np.float32(0.5))


def test_a_later_kernel_reading_the_old_value_keeps_the_copy():
    g = _graph((64, 32), lambda g, x: [call(g, "add", x, 1.0), call(g, "sum", x, dim=1)])
    cg = codegen.compile_graph(g)
    steps = [k.nodes[0].target.name for k in cg.steps]
    assert steps == ["add", "sum"], cg.dump("fusion")  # (the reader runs after the writer)
    assert cg.alias_inputs([(0, 0)]) == []
    (x,) = _arrays((64, 32), 1)
    a = x.copy()
    new, s = cg(a)
    assert new is not a
    np.testing.assert_array_equal(a, x)
    np.testing.assert_array_equal(new, x + np.float32(1.0))
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5, atol=1e-5)


def test_a_writer_reading_the_input_at_another_index_keeps_the_copy():
    g = _graph((32, 32), lambda g, x: [call(g, "add", x, call(g, "permute", x, (1, 0)))])
    cg = codegen.compile_graph(g)  # (the transpose: a numpy view the writer reads)
    assert cg.alias_inputs([(0, 0)]) == []
    (x,) = _arrays((32, 32), 1)
    (out,) = cg(x.copy())
    np.testing.assert_array_equal(out, x + x.T)


def test_a_library_call_after_the_writer_keeps_the_copy():
    def build(g, x, w):
        return [call(g, "mul", x, 3.0), call(g, "matmul", call(g, "exp", w), w)]

    cg = codegen.compile_graph(_graph((16, 16), build, 2))
    assert cg.alias_inputs([(0, 0)]) == []
    x, w = _arrays((16, 16), 2)
    a = x.copy()
    out, _ = cg(a, w)
    assert out is not a
    np.testing.assert_array_equal(a, x)


def test_a_returned_input_keeps_the_copy():
    cg = codegen.compile_graph(_graph((8, 8), lambda g, x: [call(g, "mul", x, 3.0), x]))
    assert cg.alias_inputs([(0, 0)]) == []
    (x,) = _arrays((8, 8), 1)
    _, old = cg(x.copy())
    np.testing.assert_array_equal(old, x)


def test_a_non_contiguous_input_array_runs_with_a_fresh_output():
    g = _graph((16, 8), lambda g, x: [call(g, "mul", x, 3.0)])
    cg = codegen.compile_graph(g)
    assert cg.alias_inputs([(0, 0)]) == [(0, 0)]
    inplace.wait(cg)
    base = RNG.standard_normal((16, 16)).astype(np.float32)
    view = base[:, ::2]
    (out,) = cg(view)
    assert out is not view
    np.testing.assert_array_equal(out, base[:, ::2] * np.float32(3.0))
    ro = np.ascontiguousarray(base[:, :8])
    ro.flags.writeable = False
    (out,) = cg(ro)
    assert out is not ro
    np.testing.assert_array_equal(out, base[:, :8] * np.float32(3.0))


# ---------------------------------------------------------------- capture: optimizer steps


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(12, 16), nn.ReLU(), nn.Linear(16, 4))


OPTIMIZERS = {
    "sgd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9),
    "sgd_nesterov_wd": lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True,
                                                  weight_decay=1e-2),
    "adam": lambda ps: torch.optim.Adam(ps, lr=1e-2),
    "adamw": lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
}


def _graphs(runner) -> list:
    """The compiled graphs an entry's runner calls: its own, or its AOT graph's forwards."""
    aot = runner.aot
    if aot is None:
        return [runner.compiled]
    return [aot.plain] + [p.fwd for p in aot.plans.values()]


def _inplace_taken(compiled) -> int:
    return sum(len(getattr(g, "inplace_pairs", None) or ())
               for cf in compiled.__wick_compiled__.all_functions() for e in cf.entries
               if e.runner is not None for g in _graphs(e.runner))


def _step_fn(opt):
    def step():
        opt.step()

    return step


def _train_fn(m, opt):
    def train(x, y):
        opt.zero_grad()
        loss = F.mse_loss(m(x), y)
        loss.backward()
        opt.step()
        return loss

    return train


def _loss_fn(m):
    return lambda x: m(x).square().mean()


def _state(opt):
    return [(k, v.numpy().copy() if isinstance(v, torch.Tensor) else v)
            for s in opt.state.values() for k, v in s.items()]


@pytest.mark.parametrize("kind", sorted(OPTIMIZERS))
def test_optimizer_steps_equal_eager_bit_for_bit(kind):
    runs = []
    for compiled in (False, True):
        m = _mlp()
        opt = OPTIMIZERS[kind](m.parameters())
        arrays = [p._data for p in m.parameters()]

        step = _step_fn(opt)
        fn = capture.compile(step) if compiled else step
        for i in range(5):
            for j, p in enumerate(m.parameters()):
                p.grad = torch.tensor(np.full(p.shape, 0.01 * (i + 1) * (j + 1), np.float32))
            fn()
        assert all(p._data is a for p, a in zip(m.parameters(), arrays))
        runs.append(([p.detach().numpy().copy() for p in m.parameters()], _state(opt),
                     [p._version for p in m.parameters()]))
        if compiled:  # (one write-back per step, as before: AdamW's step is two ops eagerly)
            assert runs[1][2] == [v // (2 if kind == "adamw" else 1) for v in runs[0][2]]
        if compiled:
            assert _inplace_taken(fn) > 0
    (pe, se, _), (pc, sc, _) = runs
    for a, b in zip(pe, pc):
        np.testing.assert_array_equal(a, b)
    assert [k for k, _ in se] == [k for k, _ in sc]
    for (_, a), (_, b) in zip(se, sc):
        np.testing.assert_array_equal(a, b)


def _variants(reference: str, monkeypatch):
    """(compiled?, context) per run: the reference (eager, or compiled graphs that keep
    every write-back a copy: fused forwards may round sums differently from eager), then
    compiled with in-place stores."""
    copy = monkeypatch.context()
    if reference == "copy":
        mp = copy.__enter__()
        mp.setattr(codegen.compiled.CompiledGraph, "alias_inputs", lambda self, p: [])
    yield reference == "copy"
    if reference == "copy":
        copy.__exit__(None, None, None)
    yield True


def _assert_runs_equal(runs, exact: bool):
    (a, b) = runs
    for x, y in zip(a, b):
        if exact:
            np.testing.assert_array_equal(x, y)
        else:
            np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kind", ["sgd", "adam"])
@pytest.mark.parametrize("reference", ["eager", "copy"])
def test_train_steps_equal_and_later_grads_are_right(kind, reference, monkeypatch):
    xs = [torch.tensor(RNG.standard_normal((8, 12)).astype(np.float32)) for _ in range(4)]
    ys = [torch.tensor(RNG.standard_normal((8, 4)).astype(np.float32)) for _ in range(4)]
    runs = []
    for compiled in _variants(reference, monkeypatch):
        m = _mlp()
        opt = OPTIMIZERS[kind](m.parameters())

        train = _train_fn(m, opt)
        fn = capture.compile(train) if compiled else train
        losses = [fn(x, y).detach().numpy().copy() for x, y in zip(xs, ys)]
        # a backward after the compiled steps sees the updated parameters
        F.mse_loss(m(xs[0]), ys[0]).backward()
        runs.append(losses + [p.detach().numpy().copy() for p in m.parameters()] +
                    [p.grad.numpy().copy() for p in m.parameters()])
        if compiled and reference == "copy":
            assert (_inplace_taken(fn) > 0) == (len(runs) == 2)
    _assert_runs_equal(runs, exact=reference == "copy")


# ---------------------------------------------------------------- capture: buffers, arguments


@pytest.mark.parametrize("reference", ["eager", "copy"])
def test_batchnorm_training_with_grad_equals(reference, monkeypatch):
    """The forward runs through the AOT bridge (parameters require grad): the running
    statistics are stored in place by its forward graph; gradients unchanged."""
    xs = [torch.tensor(RNG.standard_normal((16, 6)).astype(np.float32)) for _ in range(3)]
    runs = []
    for compiled in _variants(reference, monkeypatch):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6), nn.Tanh()).train()
        bn = m[1]
        arrays = [bn.running_mean._data, bn.running_var._data]
        loss_fn = _loss_fn(m)
        fn = capture.compile(loss_fn) if compiled else loss_fn
        res = []
        for x in xs:
            m.zero_grad()
            loss = fn(x)
            loss.backward()
            res += [loss.detach().numpy().copy()] + [p.grad.numpy().copy()
                                                      for p in m.parameters()]
        assert bn.running_mean._data is arrays[0] and bn.running_var._data is arrays[1]
        runs.append(res + [b.numpy().copy() for b in m.buffers()])
        if compiled and reference == "copy":
            assert (_inplace_taken(fn) > 0) == (len(runs) == 2)
    _assert_runs_equal(runs, exact=reference == "copy")


@pytest.mark.parametrize("reference", ["eager", "copy"])
def test_batchnorm_running_stats_equal(reference, monkeypatch):
    xs = [torch.tensor(RNG.standard_normal((16, 6)).astype(np.float32)) for _ in range(4)]
    runs, versions = [], []
    for compiled in _variants(reference, monkeypatch):
        torch.manual_seed(0)
        m = nn.Sequential(nn.Linear(6, 6), nn.BatchNorm1d(6)).train()
        bn = m[1]
        arrays = [bn.running_mean._data, bn.running_var._data]
        fn = capture.compile(m) if compiled else m
        with torch.no_grad():
            outs = [fn(x).numpy().copy() for x in xs]
        assert bn.running_mean._data is arrays[0] and bn.running_var._data is arrays[1]
        runs.append(outs + [b.numpy().copy() for b in m.buffers()])
        versions.append([b._version for b in m.buffers()])
        if compiled and reference == "copy":
            assert (_inplace_taken(fn) > 0) == (len(runs) == 2)
    _assert_runs_equal(runs, exact=reference == "copy")
    if reference == "copy":
        assert versions[0] == versions[1]
    else:  # (one write-back per call: eager's update is two in-place ops, mul_ and add_)
        assert versions[1] == [len(xs)] * 3 and versions[0][2] == len(xs)


def _add_(x, y):
    x.add_(y)
    return y * 2


def test_argument_add_is_in_place_and_bumps_the_version():
    f = capture.compile(_add_)
    x = torch.tensor(RNG.standard_normal((32, 8)).astype(np.float32))
    y = torch.tensor(RNG.standard_normal((32, 8)).astype(np.float32))
    want = x.numpy().copy()
    arr = x._data
    for i in range(3):
        v = x._version
        r = f(x, y)
        want = want + y.numpy()
        np.testing.assert_array_equal(x.numpy(), want)
        np.testing.assert_array_equal(r.numpy(), y.numpy() * 2)
        assert x._version == v + 1 and x._data is arr
    assert _inplace_taken(f) == 1


def test_old_value_read_in_the_same_graph():
    def fn(x):
        s = x.sum(0)
        t = x * x
        x.mul_(2)
        return s, t

    f = capture.compile(fn)
    base = RNG.standard_normal((16, 4)).astype(np.float32)
    for _ in range(3):
        xe, xc = torch.tensor(base.copy()), torch.tensor(base.copy())
        want, got = fn(xe), f(xc)
        np.testing.assert_allclose(want[0].numpy(), got[0].numpy(), rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(want[1].numpy(), got[1].numpy())
        np.testing.assert_array_equal(xe.numpy(), xc.numpy())


def test_final_value_also_returned_stays_apart():
    def fn(x):
        y = x * 2
        x.copy_(y)
        return y

    f = capture.compile(fn)
    for _ in range(3):
        x = torch.ones(4, 4)
        y = f(x)
        np.testing.assert_array_equal(x.numpy(), np.full((4, 4), 2, np.float32))
        x.add_(1)
        np.testing.assert_array_equal(y.numpy(), np.full((4, 4), 2, np.float32))


@pytest.mark.parametrize("layout", ["view_of_base", "transposed", "strided"])
def test_views_and_non_contiguous_inputs_equal_eager(layout):
    def make():
        base = torch.tensor(np.arange(64, dtype=np.float32).reshape(8, 8))
        if layout == "view_of_base":
            return base, base[2:6]
        if layout == "transposed":
            return base, base.t()
        return base, base[:, ::2]

    def fn(x, y):
        x.add_(y)
        return x.sum()

    f = capture.compile(fn)
    for _ in range(3):
        (be, xe), (bc, xc) = make(), make()
        y = torch.ones(*xe.shape)
        want, got = fn(xe, y), f(xc, y)
        np.testing.assert_array_equal(want.numpy(), got.numpy())
        np.testing.assert_array_equal(be.numpy(), bc.numpy())
        assert xe._version == xc._version


def test_input_aliasing_another_input_equals_eager():
    def fn(x, y):
        x.mul_(2)
        return y + 1

    f = capture.compile(fn)
    for same in (False, True, False, True):
        ae = torch.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        ac = torch.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
        other_e = ae if same else torch.ones(3, 4)
        other_c = ac if same else torch.ones(3, 4)
        want, got = fn(ae, other_e), f(ac, other_c)
        np.testing.assert_array_equal(want.numpy(), got.numpy())
        np.testing.assert_array_equal(ae.numpy(), ac.numpy())


def test_an_output_the_result_also_returns_is_not_aliased():
    from capture.hits import _inplace_pairs

    asked = []

    class Graph:
        def alias_inputs(self, pairs):
            asked.extend(pairs)
            return list(pairs)

    class Entry:
        writebacks = ((0, 1, False), (2, 3, False), (4, 5, False))
        template = ("tuple", [("graph", 1), ("input", 0), ("num", int, ("graph", 0))])
        effects = (("attr", ("source", 0), "cache", ("graph", 5)),)

    assert _inplace_pairs(Entry, Graph()) == [(2, 3)]
    assert asked == [(2, 3)]


class _SavedBuffer(nn.Module):
    """A buffer the backward needs (w's gradient is x * b), updated under no_grad."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.ones(4, 4))
        self.register_buffer("b", torch.full((4, 4), 2.0))

    def forward(self, x):
        y = (x * self.w * self.b).sum()
        with torch.no_grad():
            self.b.mul_(0.5)
        return y


def test_an_input_the_backward_saves_is_not_written_in_place():
    outcomes = []
    for compiled in (False, True):
        m = _SavedBuffer()
        f = capture.compile(m) if compiled else m
        got = []
        for _ in range(3):
            y = f(torch.ones(4, 4))
            with pytest.raises(RuntimeError, match="modified by an inplace operation"):
                y.backward()
            got.append((float(y), m.b.numpy().copy()))
        outcomes.append(got)
        if compiled:
            assert _inplace_taken(f) == 0
    for (ye, be), (yc, bc) in zip(*outcomes):
        assert ye == yc
        np.testing.assert_array_equal(be, bc)
