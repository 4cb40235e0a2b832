"""Tutorial-style code that capture (or eager under it) got wrong or broke on (issue 14's bar,
held-out set Q: code written as the official PyTorch tutorials, pytorch/examples and
torch.compile's tutorial write it). Each case is built by `case(lib)` for `lib` = wick's `eager`
or the real torch; it runs eagerly and compiled from the same seed (capture, then the cache
hit), comparing outputs (values and dtypes) and the state it names; its graph and break counts
from `capture.explain` are checked, and when torch is installed torch._dynamo.explain's counts
on the same code are too. Results are also checked against numpy references.
"""

from __future__ import annotations

import numpy as np
import pytest
from capture_cases import check_like_eager, check_torch_counts
from capture_cases import same_structure as _same

import eager

# ---------------------------------------------------------------- one-hot by scatter_


def one_hot_target_transform(torch):
    """The data tutorial's target transform: `zeros(10).scatter_(0, torch.tensor(y), value=1)`
    with a 0-d index (eager wrote every element: a wrong result compiled and eager alike)."""
    def target_transform(y):
        return torch.zeros(10, dtype=torch.float).scatter_(0, torch.tensor(y), value=1)

    return target_transform, (3,), lambda: [], [(3,), (5,)]


def test_one_hot_scatter_zero_d_index_like_numpy():
    fn, *_ = one_hot_target_transform(eager)
    np.testing.assert_array_equal(fn(3).numpy(), np.eye(10, dtype=np.float32)[3])


def test_one_hot_scatter_compiled():
    check_like_eager(one_hot_target_transform, 1, 0, _same)
    check_torch_counts(one_hot_target_transform, 1, 0)


def test_gather_scatter_zero_d_index_shapes():
    """A 0-d index into a 1-d input is one element (gather: a 0-d result), also into a 0-d
    input, and for scatter_add/scatter_reduce; the gradients reach that element only."""
    x = eager.arange(10.0)
    i = eager.tensor(4)
    g = x.gather(0, i)
    assert g.shape == () and float(g) == 4.0
    want = np.zeros(10, np.float32)
    want[4] = 2.0
    np.testing.assert_array_equal(eager.zeros(10).scatter_add(0, i, eager.tensor(2.0)).numpy(),
                                  want)
    np.testing.assert_array_equal(
        eager.zeros(10).scatter_reduce(0, i, eager.tensor(2.0), "sum").numpy(), want)
    np.testing.assert_array_equal(eager.zeros(10).scatter(0, i, eager.tensor([2.0, 6.0])).numpy(),
                                  want)
    assert float(eager.zeros(()).scatter(0, eager.tensor(0), eager.tensor(2.0))) == 2.0
    w = eager.arange(5.0).requires_grad_()
    w.gather(0, eager.tensor(2)).backward()
    np.testing.assert_array_equal(w.grad.numpy(), [0, 0, 1, 0, 0])


# ---------------------------------------------------------------- out=


def tensor_tutorial_out(torch):
    """The tensor tutorial's `torch.matmul(t, t.T, out=y3)` into `rand_like`, `torch.mul(t, t,
    out=z3)`, and out= into an argument (each was a break: out= reached the op's attributes)."""
    def fn(tensor, buf):
        y1 = tensor @ tensor.T
        y3 = torch.zeros_like(y1)
        torch.matmul(tensor, tensor.T, out=y3)
        z3 = torch.empty(4, 4, dtype=torch.float64)
        torch.mul(tensor, tensor, out=z3)
        r = torch.add(tensor, 1.0, out=buf)
        return y1, y3, z3, r is buf, buf.sum()

    def make():
        return (torch.tensor(np.arange(16, dtype=np.float32).reshape(4, 4) / 7),
                torch.zeros(4, 4))
    args = make()
    return fn, args, lambda: [args[1]], [args, args]


def test_out_argument_in_graph():
    check_like_eager(tensor_tutorial_out, 1, 0, _same)
    check_torch_counts(tensor_tutorial_out, 1, 0)


def test_out_argument_values_and_version():
    import capture

    def g(a, b, c):
        return torch_matmul(a, b, out=c) is c

    torch_matmul = eager.matmul
    a = eager.tensor(np.arange(9, dtype=np.float32).reshape(3, 3))
    cg = capture.compile(g)
    for _ in range(2):
        c = eager.zeros(3, 3)
        v = c._version
        assert cg(a, a, c)
        np.testing.assert_allclose(c.numpy(), a.numpy() @ a.numpy())
        assert c._version - v == 1  # as eager's write_out
    ex = capture.explain(g)(a, a, eager.zeros(2, 2))  # eager resizes: a named break
    assert "another shape" in str(ex.unique_break_reasons[0].reason)
    with pytest.raises(RuntimeError, match="can't be cast"):
        cg(a, a, eager.zeros(3, 3, dtype=eager.int64))


# ---------------------------------------------------------------- model.compile()


def model_compile_method(torch):
    """torch.compile's tutorial: `model.compile()` compiles the module in place (eager had no
    Module.compile: AttributeError)."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(5, 10), nn.SiLU(), nn.Linear(10, 2))
    model.compile()

    def fn(x):
        return model(x).softmax(-1)

    return fn, (rand(torch, 3, 5),), lambda: []


def rand(lib, *shape, seed=1):
    return lib.tensor(np.random.default_rng(seed).standard_normal(shape).astype(np.float32))


def test_model_compile_in_a_compiled_function():
    check_like_eager(model_compile_method, 1, 0, _same)
    check_torch_counts(model_compile_method, 1, 0)


def test_model_compile_runs_compiled_and_keeps_the_module():
    eager.manual_seed(0)
    model = eager.nn.Sequential(eager.nn.Linear(4, 6), eager.nn.Tanh(), eager.nn.Linear(6, 1))
    x = rand(eager, 5, 4)
    want = model(x)
    keys = list(model.state_dict())
    assert model.compile(dynamic=False) is None
    got = model(x)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6)
    assert list(model.state_dict()) == keys  # no `_orig_mod.` prefix, unlike compile(model)
    assert len(model._compiled_call_impl.__wick_compiled__.entries) == 1
    got.sum().backward()
    want_grad = eager.autograd.grad(want.sum(), model[0].weight)[0]
    np.testing.assert_allclose(model[0].weight.grad.numpy(), want_grad.numpy(), rtol=1e-5)


# ---------------------------------------------------------------- numpy keyword aliases


def d2l_softmax_regression(torch):
    """d2l's softmax regression: `y_hat.argmax(axis=1)`, numpy's keyword, which PyTorch's
    argument parser takes for `dim` (eager raised TypeError), a range-index cross entropy."""
    W = rand(torch, 12, 5, seed=3) * 0.01
    b = torch.zeros(5)

    def fn(X, y):
        X_exp = torch.exp(torch.matmul(X.reshape((-1, W.shape[0])), W) + b)
        y_hat = X_exp / X_exp.sum(1, keepdim=True)
        loss = -torch.log(y_hat[range(len(y_hat)), y]).mean()
        cmp = y_hat.argmax(axis=1).type(y.dtype) == y
        return loss, cmp.type(y.dtype).sum(), y_hat.mean(axis=0, keepdims=True)

    return fn, (rand(torch, 6, 3, 4), torch.tensor([0, 4, 2, 1, 3, 0])), lambda: []


def test_numpy_keyword_aliases_compiled():
    check_like_eager(d2l_softmax_regression, 1, 0, _same)
    check_torch_counts(d2l_softmax_regression, 1, 0)


def test_numpy_keyword_aliases_like_numpy():
    a = np.arange(12, dtype=np.float32).reshape(3, 4) % 5
    x = eager.tensor(a)
    np.testing.assert_array_equal(x.argmax(axis=1).numpy(), a.argmax(axis=1))
    np.testing.assert_array_equal(x.sum(axis=0).numpy(), a.sum(axis=0))
    np.testing.assert_allclose(x.mean(axis=1, keepdims=True).numpy(),
                               a.mean(axis=1, keepdims=True))
    np.testing.assert_array_equal(eager.cat([x, x], axis=0).numpy(), np.concatenate([a, a]))
    with pytest.raises(TypeError):  # both names: as PyTorch, an error
        x.sum(axis=1, dim=0)


# ---------------------------------------------------------------- nonlocal stores


def makemore_running_stats(torch):
    """makemore's MLP with a hand-written batchnorm whose running statistics are rebound
    closure variables (`nonlocal`; as globals in the course's notebook) under no_grad: the
    store into the compiled function's cell was a break (torch.compile: 1/0)."""
    F = torch.nn.functional
    C = rand(torch, 27, 4, seed=3)
    W1 = rand(torch, 12, 16, seed=4) * 0.3
    W2 = rand(torch, 16, 27, seed=5) * 0.1
    bnmean_running = torch.zeros((1, 16))
    bnstd_running = torch.ones((1, 16))

    def step(Xb, Yb):
        nonlocal bnmean_running, bnstd_running
        emb = C[Xb]
        hpreact = emb.view(emb.shape[0], -1) @ W1
        bnmeani = hpreact.mean(0, keepdim=True)
        bnstdi = hpreact.std(0, keepdim=True)
        hpreact = (hpreact - bnmeani) / bnstdi
        with torch.no_grad():
            bnmean_running = 0.999 * bnmean_running + 0.001 * bnmeani
            bnstd_running = 0.999 * bnstd_running + 0.001 * bnstdi
        return F.cross_entropy(torch.tanh(hpreact) @ W2, Yb), bnmean_running.sum()

    def state():
        return [bnmean_running, bnstd_running]

    X = torch.tensor(np.random.default_rng(2).integers(0, 27, (6, 3)))
    return step, (X, torch.tensor([1, 5, 0, 26, 3, 3])), state


def test_nonlocal_tensor_store_compiled():
    check_like_eager(makemore_running_stats, 1, 0, _same)
    check_torch_counts(makemore_running_stats, 1, 0)


def counter_closure(torch):
    """`nonlocal count; count += 1` returned: an automatic-dynamic int after its second value
    (torch: 2 graphs over 4 calls), and a nonlocal store inside an inlined helper."""
    count = 0
    scale = 1.0

    def bump():
        nonlocal scale
        scale = scale * 0.5

    def step(x):
        nonlocal count
        count += 1
        bump()
        return x * scale, count

    x = rand(torch, 2, 3)
    return step, (x,), lambda: [count, scale], [(x,)] * 4


def test_nonlocal_counter_entries():
    import capture

    check_like_eager(counter_closure, 1, 0, _same)
    fn, args, state, calls = counter_closure(eager)
    capture.reset()
    compiled = capture.compile(fn)
    outs = [compiled(*a)[1] for a in calls]
    assert outs == [1, 2, 3, 4] and state() == [4, 0.0625]
    assert len(compiled.__wick_compiled__.entries) <= 3  # static, then count (and scale) dynamic
    check_torch_counts(counter_closure, 1, 0)


# ---------------------------------------------------------------- a dict read from the frame


def params_dict_isinstance(torch):
    """The per-sample-gradients tutorial passes `params = {k: v.detach() ...}` into the
    compiled code; `isinstance(params, dict)` on that dict crashed the capture
    (AttributeError 'LazyDictVariable' ... 'default_factory': 0 graphs)."""
    params = {"w": rand(torch, 3, seed=2), "b": rand(torch, 3, seed=3)}

    def fn(x):
        assert isinstance(params, dict)
        return {k: v * x for k, v in params.items()}, len(params)

    return fn, (rand(torch, 3),), lambda: []


def test_read_dict_type_queries():
    check_like_eager(params_dict_isinstance, 1, 0, _same)
    check_torch_counts(params_dict_isinstance, 1, 0)


# ---------------------------------------------------------------- type(m) == nn.Linear


def apply_init_weights(torch):
    """The nn tutorial's `net.apply(init_weights)` with `if type(m) == nn.Linear:` under
    @torch.no_grad(): `==` of two classes was a break (torch.compile: 1/0)."""
    nn = torch.nn
    net = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))

    @torch.no_grad()
    def init_weights(m):
        if type(m) == nn.Linear:
            m.weight.fill_(1.0)
            m.bias.zero_()

    def fn(x):
        net.apply(init_weights)
        return net(x), type(net[1]) != nn.ReLU

    return fn, (rand(torch, 3, 2),), lambda: list(net.parameters())


def test_class_equality_folds():
    check_like_eager(apply_init_weights, 1, 0, _same)
    check_torch_counts(apply_init_weights, 1, 0)


# ---------------------------------------------------------------- torch._dynamo


def dynamo_reset_graph_break(torch):
    """torch.compile's tutorial calls `torch._dynamo.reset()` before compiling and
    `torch._dynamo.graph_break()` to show a break (eager had no `_dynamo`: AttributeError)."""
    torch._dynamo.reset()

    def fn(x):
        y = torch.sin(x) + torch.cos(x)
        torch._dynamo.graph_break()
        return y * 2

    return fn, (rand(torch, 4),), lambda: []


def test_dynamo_module_helpers():
    check_like_eager(dynamo_reset_graph_break, 2, 1, _same)
    fn, args, _ = dynamo_reset_graph_break(eager)
    ex = eager._dynamo.explain(fn)(*args)
    assert (ex.graph_count, ex.graph_break_count) == (2, 1)
    check_torch_counts(dynamo_reset_graph_break, 2, 1)


# ---------------------------------------------------------------- model.eval() in the step


def eval_inside_step(torch):
    """`model.eval()` then `with torch.inference_mode():` inside the compiled evaluation (the
    "learn PyTorch" course): the model starts in train mode, the first call leaves it in eval
    mode; the current flags were guarded, so the second call recompiled (2 entries, torch: 1)."""
    nn = torch.nn
    model = nn.Sequential(nn.Linear(4, 6), nn.BatchNorm1d(6), nn.Dropout(0.5), nn.Linear(6, 2))

    def fn(x):
        model.eval()
        with torch.inference_mode():
            y = model(x)
        return y, model.training, model[1].training

    x = rand(torch, 5, 4)
    return fn, (x,), lambda: [model.training, model[2].training] + list(model.buffers()), \
        [(x,)] * 3


def test_eval_inside_step_one_entry():
    import capture

    check_like_eager(eval_inside_step, 1, 0, _same)
    fn, args, state, calls = eval_inside_step(eager)
    capture.reset()
    compiled = capture.compile(fn)
    for a in calls:
        compiled(*a)
    assert len(compiled.__wick_compiled__.entries) == 1 and state()[:2] == [False, False]
    model = next(c.cell_contents for c in fn.__closure__
                 if isinstance(c.cell_contents, eager.nn.Module))
    model.train()  # back in train mode before a call: still the same entry
    compiled(*args)
    assert len(compiled.__wick_compiled__.entries) == 1 and state()[:2] == [False, False]
    check_torch_counts(eval_inside_step, 1, 0)


# ---------------------------------------------------------------- lr set before the step


def lr_finder_step(torch):
    """An lr finder / manual schedule: `for g in opt.param_groups: g['lr'] = lr` then
    `opt.step()` in the compiled step: the step broke ('param_groups ... changed earlier'),
    0 graphs (torch.compile: 1/0). The lr the frame set is the step's lr input."""
    nn, F = torch.nn, torch.nn.functional
    model = nn.Linear(4, 3)
    with torch.no_grad():
        model.weight.copy_(rand(torch, 3, 4, seed=5))
        model.bias.copy_(rand(torch, 3, seed=6))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    F.cross_entropy(model(rand(torch, 6, 4)), torch.tensor([0, 1, 2, 0, 1, 2])).backward()

    def set_lr_and_step(lr: float):
        for g in optimizer.param_groups:
            g['lr'] = lr
        optimizer.step()
        return optimizer.param_groups[0]['lr']

    return set_lr_and_step, (0.01,), lambda: list(model.parameters()), \
        [(0.01,), (0.02,), (0.04,)]


def test_lr_set_in_frame_then_step():
    import capture

    check_like_eager(lr_finder_step, 1, 0, _same)
    fn, _, _, calls = lr_finder_step(eager)
    capture.reset()
    compiled = capture.compile(fn)
    assert [compiled(*a) for a in calls] == [0.01, 0.02, 0.04]
    assert len(compiled.__wick_compiled__.entries) <= 2  # the lr an automatic-dynamic input
    check_torch_counts(lr_finder_step, 1, 0)


def test_one_hot_label_is_a_dynamic_int():
    """torch.tensor(y) of a label that changes every call: an automatic-dynamic int after its
    second value (torch: 2 graphs over 4 labels), was one entry per label."""
    import capture

    fn, *_ = one_hot_target_transform(eager)
    capture.reset()
    compiled = capture.compile(fn)
    for y in (3, 5, 7, 1):
        np.testing.assert_array_equal(compiled(y).numpy(), np.eye(10, dtype=np.float32)[y])
    assert len(compiled.__wick_compiled__.entries) == 2
    g = capture.compile(lambda y: eager.tensor(y, dtype=eager.float64) / 4)
    assert [float(g(k)) for k in (1, 2, 3)] == [0.25, 0.5, 0.75] and g(5).dtype is eager.float64


# ---------------------------------------------------------------- setattr(obj, name, v)


def pruning_tutorial(torch):
    """The pruning tutorial: prune.l1_unstructured installs a forward pre-hook that calls
    `setattr(module, 'weight', weight_orig * weight_mask)`: the builtin setattr on a module
    was a break site (torch.compile: 1/0); `setattr(self, name, v)` in user code too."""
    import importlib

    nn, F = torch.nn, torch.nn.functional
    prune = importlib.import_module(torch.__name__ + ".nn.utils.prune")
    conv = nn.Conv2d(1, 3, 3)
    with torch.no_grad():
        conv.weight.copy_(rand(torch, 3, 1, 3, 3, seed=4))
    prune.l1_unstructured(conv, name="weight", amount=0.3)

    class Meter:
        def __init__(self):
            self.last = None

    meter = Meter()

    def fn(x):
        y = F.relu(conv(x)).mean((2, 3))
        setattr(meter, "last", y.sum())
        return y

    return fn, (rand(torch, 2, 1, 6, 6),), lambda: [meter.last]


def test_builtin_setattr_is_a_store():
    check_like_eager(pruning_tutorial, 1, 0, _same)
    check_torch_counts(pruning_tutorial, 1, 0)
