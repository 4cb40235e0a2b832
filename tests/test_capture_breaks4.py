"""Issue 14's capture items for session 9 (B3): each case is ordinary PyTorch code built by
`case(lib)` for `lib` = wick's `eager` or the real torch, run eagerly and compiled, comparing
values, dtypes, gradients (None stays None) and cache entries; torch's graph counts on the
same code when torch is installed.

1. a custom `autograd.Function` whose backward returns None for an input that requires grad:
   the leaf's `.grad` stays None under compile, as in eager (an optimizer skips it);
2. sizes read as Python ints of a dynamic dimension (`B, T, C = x.size()`, `x.size(0)`,
   `len(x)`) used as op sizes and returned: one dynamic entry for every batch size.
"""

from __future__ import annotations

import numpy as np
import pytest

import capture
import eager


def _rand(lib, *shape, seed=0, grad=False):
    t = lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))
    return t.requires_grad_() if grad else t


def _same(a, b) -> None:
    assert a.dtype is b.dtype and tuple(a.shape) == tuple(b.shape), (a, b)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------- 1. autograd.Function returning None grads


def fn_none_for_leaf(lib):
    """backward returns None for `w` (requires grad): w.grad stays None."""
    class Gate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(w)
            return x * w

        @staticmethod
        def backward(ctx, g):
            (w,) = ctx.saved_tensors
            return g * w, None

    def f(x, w):
        return Gate.apply(x, w).sum()

    return f, lambda: (_rand(lib, 4, 3, grad=True), _rand(lib, 4, 3, seed=1, grad=True))


def fn_none_and_other_path(lib):
    """backward gives None for `w`, but `w` also feeds another op: its grad is that path's;
    `v` reaches the Function only through `v * 2`: its grad stays None."""
    class Gate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, w, v):
            return x * w + v

        @staticmethod
        def backward(ctx, g):
            return g, None, None

    def f(x, w, v):
        return (Gate.apply(x, w, v * 2) + w.sin()).sum()

    return f, lambda: (_rand(lib, 3, grad=True), _rand(lib, 3, seed=1, grad=True),
                       _rand(lib, 3, seed=2, grad=True))


def fn_none_by_value(lib):
    """backward decides at run time (a Python flag stored on the class) whether to return
    None: compiled follows each call's choice."""
    flag = [True]

    class Maybe(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * 3 if flag[0] else None

    def f(x):
        return Maybe.apply(x).sum()

    return f, lambda: (_rand(lib, 5, grad=True),), flag


@pytest.mark.parametrize("case", [fn_none_for_leaf, fn_none_and_other_path])
def test_function_none_grad_stays_none(case):
    capture.reset()
    fe, make = case(eager)
    ex = capture.explain(fe)(*make())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0), str(ex)
    fc = capture.compile(case(eager)[0])
    for _ in range(3):
        got = []
        for f in (fe, fc):
            args = make()
            out = f(*args)
            out.backward()
            got.append((out, [a.grad for a in args]))
        (oe, ge), (oc, gc) = got
        _same(oe, oc)
        for a, b in zip(ge, gc):
            assert (a is None) == (b is None), (ge, gc)
            if a is not None:
                _same(a, b)


def test_function_none_grad_follows_each_call():
    capture.reset()
    fe, make, flag = fn_none_by_value(eager)
    fc = capture.compile(fe)
    for on in (True, False, True):
        flag[0] = on
        for f in (fe, fc):
            (x,) = make()
            f(x).backward()
            assert (x.grad is None) == (not on)
            if on:
                np.testing.assert_allclose(x.grad.numpy(), np.full(5, 3.0, np.float32))


def test_function_none_grad_optimizer_skips():
    """SGD with weight decay skips a parameter whose grad is None: compiled equals eager."""
    capture.reset()
    f, make = fn_none_for_leaf(eager)
    fc = capture.compile(f)
    res = []
    for fn in (f, fc):
        x, w = make()
        opt = eager.optim.SGD([x, w], lr=0.1, weight_decay=0.5)
        for _ in range(2):
            opt.zero_grad()
            fn(x, w).backward()
            opt.step()
        res.append((x.detach().numpy().copy(), w.detach().numpy().copy(), w.grad))
    np.testing.assert_allclose(res[0][0], res[1][0], rtol=1e-6)
    np.testing.assert_array_equal(res[0][1], res[1][1])
    assert res[0][2] is None and res[1][2] is None


@pytest.mark.parametrize("case", [fn_none_for_leaf, fn_none_and_other_path])
def test_function_none_grad_torch(case):
    torch = pytest.importorskip("torch")
    f, make = case(torch)
    torch._dynamo.reset()
    ex = torch._dynamo.explain(f)(*make())
    assert (ex.graph_count, ex.graph_break_count) == (1, 0)
    args = make()
    torch.compile(f, backend="eager")(*args).backward()
    ref = make()
    f(*ref).backward()
    assert [a.grad is None for a in args] == [a.grad is None for a in ref]


# ------------------------------------------- 2. dynamic sizes read as Python ints, as op sizes

BATCHES = (2, 3, 5, 7)


def sz_attention(lib):
    """A transformer block's attention: `B, T, C = x.size()`, `q.view(B, T, nh, C // nh)`."""
    lib.manual_seed(0)
    attn, proj = lib.nn.Linear(16, 48), lib.nn.Linear(16, 16)

    def f(x):
        B, T, C = x.size()
        nh = 4
        q, k, v = attn(x).split(C, dim=2)
        q = q.view(B, T, nh, C // nh).transpose(1, 2)
        k = k.view(B, T, nh, C // nh).transpose(1, 2)
        v = v.view(B, T, nh, C // nh).transpose(1, 2)
        a = (q @ k.transpose(-2, -1) * (1.0 / 2.0)).softmax(dim=-1)
        return proj((a @ v).transpose(1, 2).contiguous().view(B, T, C))

    return f, lambda b: (_rand(lib, b, 6, 16, seed=b),)


def sz_cnn_head(lib):
    """A CNN head: `x.view(x.size(0), -1)` before the classifier."""
    lib.manual_seed(0)
    conv, fc = lib.nn.Conv2d(3, 4, 3), lib.nn.Linear(64, 5)

    def f(x):
        h = conv(x).relu()
        return fc(h.view(h.size(0), -1))

    return f, lambda b: (_rand(lib, b, 3, 6, 6, seed=b),)


def sz_lstm_state(lib):
    """An LSTM-style initial state: `n = len(x)`, `x.new_zeros(n, hidden)`, `b * t` sizes."""
    lib.manual_seed(0)
    cell = lib.nn.Linear(7 + 5, 5)

    def f(x):
        n, t = len(x), x.shape[1]
        h = x.new_zeros(n, 5)
        for i in range(t):
            h = cell(lib.cat([x[:, i], h], dim=1)).tanh()
        return h.reshape(n * 5) + x.reshape(n * t, 7).sum()

    return f, lambda b: (_rand(lib, b, 3, 7, seed=b),)


def sz_returned(lib):
    """A size returned with the tensor: rebuilt from each call's shape, not the capture's."""
    def f(x):
        b, t, c = x.shape
        out = x.reshape(b * t, c)
        return out * 2, out.shape[0], b - 1

    return f, lambda b: (_rand(lib, b, 3, 4, seed=b),)


def sz_factories(lib):
    """Factories of input sizes: `zeros(B, d)` state, `arange(T)` positions."""
    def f(x):
        B, T = x.size(0), x.size(1)
        h = lib.zeros(B, 4)
        pos = lib.arange(T)
        return x + pos[None, :, None] * 0.5 + h[:, None, :] + lib.ones((B, 1, 1))

    return f, lambda b: (_rand(lib, b, 3 + b, 4, seed=b),)


SIZE_CASES = [sz_attention, sz_cnn_head, sz_lstm_state, sz_returned, sz_factories]


def _flat(v) -> list:
    return [x for i in v for x in _flat(i)] if isinstance(v, tuple) else [v]


@pytest.mark.parametrize("dynamic,entries", [(True, 1), (None, 2)])
@pytest.mark.parametrize("case", SIZE_CASES)
def test_dynamic_sizes_one_entry(case, dynamic, entries):
    capture.reset()
    f, make = case(eager)
    cf = capture.compile(f, dynamic=dynamic)
    for b in BATCHES:
        args = make(b)
        for e, c in zip(_flat(f(*args)), _flat(cf(*args))):
            if isinstance(e, eager.Tensor):
                _same(e, c)
            else:
                assert type(c) is type(e) and c == e, (b, e, c)
    cc = cf.__wick_compiled__
    assert len(cc.entries) == entries and cc.eager_runs == 0, [e.guards_text for e in cc.entries]


def test_dynamic_size_slice_bounds():
    """Sizes as slice bounds: on the same dynamic dim (`x[:n - 1]`), and on a static dim where
    Python's clamping changes regime past its end (`x[1:n, :n]` of 4 columns: n = 5, 7 clamp):
    values equal eager's at every size, each regime guarded (<= 3 entries, was 4)."""
    capture.reset()

    def f(x):
        n = x.shape[0]
        return x[: n - 1] * 2, x[1:n, :n] + 1, x[-n + 1:]

    cf = capture.compile(f)
    for b in (*BATCHES, 3, 6):
        x = _rand(eager, b, 4, seed=b)
        for e, c in zip(f(x), cf(x)):
            _same(e, c)
    cc = cf.__wick_compiled__
    assert len(cc.entries) <= 3 and cc.eager_runs == 0, [e.guards_text for e in cc.entries]


def test_dynamic_sizes_small_batches_stay_static():
    """Sizes 0 and 1 stay specialised (broadcasting, empty tensors): their own entries."""
    capture.reset()
    f, make = sz_cnn_head(eager)
    cf = capture.compile(f)
    for b in (2, 3, 1, 5, 1):
        _same(f(*make(b)), cf(*make(b)))
    assert len(cf.__wick_compiled__.entries) == 3


def test_dynamic_size_returned_view_keeps_aliasing():
    """A returned `x.view(b * t, c)` of an input is rebuilt as a view of this call's `x`."""
    capture.reset()

    def f(x):
        b, t, c = x.shape
        return x.view(b * t, c), t * b

    cf = capture.compile(f, dynamic=True)
    for b in BATCHES:
        x = _rand(eager, b, 3, 4, seed=b)
        view, n = cf(x)
        assert n == 3 * b and view._base is x and tuple(view.shape) == (3 * b, 4)
        view[0, 0] = 5.0
        assert float(x[0, 0, 0]) == 5.0
    assert len(cf.__wick_compiled__.entries) == 1


def test_dynamic_size_branch_still_specialises():
    """A size that decides control flow keeps guarding its value (soundness first)."""
    capture.reset()

    def f(x):
        n = x.shape[0]
        if n > 3:
            return x.view(n, -1) * 2
        return x.view(n, -1) - 1

    cf = capture.compile(f, dynamic=True)
    for b in BATCHES:
        x = _rand(eager, b, 2, 2, seed=b)
        _same(f(x), cf(x))


@pytest.mark.parametrize("dynamic,frames", [(True, 1), (None, 2)])
@pytest.mark.parametrize("case", SIZE_CASES)
def test_dynamic_sizes_torch_compiles(case, dynamic, frames):
    torch = pytest.importorskip("torch")
    f, make = case(torch)
    torch._dynamo.reset()
    count = [0]

    def backend(gm, example_inputs):
        count[0] += 1
        return gm.forward

    cf = torch.compile(f, backend=backend, dynamic=dynamic)
    for b in BATCHES:
        cf(*make(b))
    assert count[0] == frames


# ------------------------------------- 3. the break after a deferred step names the user's line


def test_read_after_deferred_step_breaks_at_the_read():
    """`sched.get_last_lr()` after `sched.step()` in the same frame: a break reported at the
    line of the read (the translator reading it raises: no frame walking), values as eager."""
    import inspect

    def case():
        eager.manual_seed(0)
        model = eager.nn.Linear(4, 3)
        opt = eager.optim.SGD(model.parameters(), lr=0.1)
        sched = eager.optim.lr_scheduler.StepLR(opt, 1, gamma=0.5)

        def g():
            opt.step()
            sched.step()
            return sched.get_last_lr()[0] * 1.0

        return g

    ge, gc = case(), case()
    capture.reset()
    ex = capture.explain(case())()
    lines, start = inspect.getsourcelines(test_read_after_deferred_step_breaks_at_the_read)
    read = start + next(i for i, s in enumerate(lines) if "sched.get_last_lr()[0]" in s)
    assert f"test_capture_breaks4.py:{read}" in str(ex) and "deferred" in str(ex), str(ex)
    compiled = capture.compile(gc)
    for _ in range(3):
        assert float(ge()) == pytest.approx(float(compiled()), rel=1e-12)
